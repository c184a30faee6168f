"""``require_extra``: import a framework or skip the calling test module with the install command;
``adapter_or_skip``: import one oramem adapter or skip the calling test."""

from __future__ import annotations

import importlib

import pytest

#: extra -> skip reason, printed by conftest in an ``integrations`` summary section
MISSING: dict[str, str] = {}


def require_extra(module: str, extra: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        reason = f"oramem[{extra}] not installed ({module} missing): pip install '.[{extra}]' to run these tests"
        MISSING[extra] = reason
        pytest.skip(reason, allow_module_level=True)


def adapter_or_skip(module: str):
    """The oramem adapter ``module``, or a skip of the calling test when its framework extra is
    not installed (for test files that cover several adapters, so cannot skip whole)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"{module}: {exc}")
