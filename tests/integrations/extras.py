"""``require_extra``: import a framework or skip the calling test module with the install command."""

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
