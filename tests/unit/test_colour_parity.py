"""Sync/async parity (issue 12, item 4): each sync operation and its ``*_async`` twin take the
same parameters (names, kinds, defaults) and declare the same result, on the ``Engine`` seam,
and on the Oracle driver's two colour classes (``KnowledgeMemory``'s sync twins are made by
``sync_method`` and checked statically: tests/typecheck/test_twin_types.py)."""
from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

from oramem.engine import Engine
from oramem.oracle.driver import AsyncOracleEngine, OracleEngine, SyncOracleEngine

#: Engine operations that have both colours (sync name; the twin is name + "_async")
ENGINE_OPS = sorted(
    n[: -len("_async")] for n, _ in inspect.getmembers(Engine, callable)
    if n.endswith("_async") and not n.startswith("_")
)


def _shape(fn: Any) -> tuple[list[tuple[str, str, str]], str]:
    sig = inspect.signature(fn)
    params = [(p.name, p.kind.name, repr(p.default)) for p in sig.parameters.values()]
    ret = sig.return_annotation
    text = ret if isinstance(ret, str) else getattr(ret, "__name__", repr(ret))
    # builtins.list[...] (spelled so inside classes with a list() method) is list[...]
    text = re.sub(r"\bbuiltins\.", "", text).replace("List[", "list[")
    return params, text


def drift(sync_owner: type, async_owner: type, names: list[str]) -> list[str]:
    """Every difference between ``sync_owner.name`` and ``async_owner.name_async``."""
    problems = []
    for name in names:
        sync_fn = getattr(sync_owner, name, None)
        async_fn = getattr(async_owner, f"{name}_async", None)
        if sync_fn is None or async_fn is None:
            problems.append(f"{name}: missing on {sync_owner.__name__ if sync_fn is None else async_owner.__name__}")
            continue
        (sp, sr), (ap, ar) = _shape(sync_fn), _shape(async_fn)
        if sp != ap:
            problems.append(f"{name}: parameters {sp} != {name}_async {ap}")
        if name not in ("transaction",) and sr != ar:
            problems.append(f"{name}: returns {sr} != {name}_async returns {ar}")
    return problems


def test_engine_ops_are_listed():
    assert {"open", "add", "search", "transaction", "forget"} <= set(ENGINE_OPS)


def test_engine_seam_twins_agree():
    assert drift(Engine, Engine, ENGINE_OPS) == []


def test_oracle_colour_classes_agree():
    assert drift(SyncOracleEngine, AsyncOracleEngine, ENGINE_OPS) == []


@pytest.mark.parametrize("owner", [OracleEngine, SyncOracleEngine, AsyncOracleEngine])
def test_oracle_classes_keep_the_engine_signatures(owner):
    problems = []
    for name in ENGINE_OPS:
        for n in (name, f"{name}_async"):
            theirs, ours = _shape(getattr(Engine, n))[0], _shape(getattr(owner, n))[0]
            if [p[0] for p in theirs] != [p[0] for p in ours]:
                problems.append(f"{owner.__name__}.{n}: {ours} != Engine's {theirs}")
    assert problems == []


def test_each_colour_implements_its_own_operations():
    """The split of issue 24: the colour-free base carries no operation of either colour (no
    wrong-colour stubs), and each colour class defines its own operations itself."""
    shared = {"close", "register_deletion_hook"}  # no I/O: written once in the base
    for name in ENGINE_OPS:
        if name in shared:
            continue
        assert name not in vars(OracleEngine) and f"{name}_async" not in vars(OracleEngine), name
        assert name in vars(SyncOracleEngine), name
        assert f"{name}_async" in vars(AsyncOracleEngine), name


# KnowledgeMemory's twins are checked by mypy in tests/typecheck/test_twin_types.py: its sync
# twins come from sync_method (functools.wraps), so inspect.signature saw the async signature
# on both sides and a comparison here could not fail (architecture review §4).


def test_the_checker_sees_drift():
    class Sync:
        def op(self, a: int, *, b: str = "x") -> int: ...
        def other(self) -> None: ...

    class Async:
        async def op_async(self, a: int, *, b: str = "y", c: int = 0) -> int: ...
        async def other_async(self) -> str: ...

    problems = drift(Sync, Async, ["op", "other", "gone"])
    assert len(problems) == 3
    assert problems[0].startswith("op: parameters") and "'c'" in problems[0]
    assert problems[1].startswith("other: returns")
    assert problems[2] == "gone: missing on Sync"
