"""Typing tests in psycopg's style (its tests/test_typing.py): mypy runs over ``reveal_type``
snippets and the revealed types are checked, so a sync or async twin that loses its types
fails here (issue 24 item 5; architecture review §4 "tests that cannot fail").

Why mypy and not ``inspect.signature``: ``sync_method`` uses ``functools.wraps``, so at run
time the sync twin's signature *is* the async one's (``__wrapped__``), and comparing them
compared a signature with itself. What users' type checkers see is the static type: with
``sync_method`` returning ``Callable[..., Any]``, ``reveal_type(km.write)`` became
``def (*Any, **Any) -> Any`` and no runtime test noticed. Here each twin pair is compared as
mypy sees it (same parameters; the async result is ``Coroutine[Any, Any, R]`` of the sync
result ``R``), a few results are pinned, and the comparison is shown to catch exactly that
regression (``test_the_check_sees_a_twin_that_lost_its_types``).

One mypy run (module fixture) with the project's configuration (pyproject ``[tool.mypy]``)
and its cache (``.mypy_cache``, shared with the ``mypy`` gate). Tens of seconds on a cold cache.
"""
from __future__ import annotations

import inspect
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from oramem.engine import Engine
from oramem.knowledge import KnowledgeMemory
from oramem.store import IMemoryStore

mypy_api = pytest.importorskip("mypy.api")

REPO = Path(__file__).resolve().parents[2]

#: Engine operations that have both colours (sync name; the twin is name + "_async")
ENGINE_OPS = sorted(n[: -len("_async")] for n in dir(Engine) if n.endswith("_async") and not n.startswith("_"))


def _twins(cls: type) -> list[str]:
    """Public ``x`` names of ``cls`` with an ``x_async`` twin."""
    return sorted(
        n[: -len("_async")] for n in dir(cls)
        if n.endswith("_async") and not n.startswith("_") and callable(getattr(cls, n))
        and callable(getattr(cls, n[: -len("_async")], None))
    )


#: snippet variable -> the twin names checked on it
SUBJECTS: dict[str, list[str]] = {
    "km": _twins(KnowledgeMemory),
    "sq": _twins(IMemoryStore),
    "ora": _twins(IMemoryStore),
    # the Oracle colour classes: SyncOracleEngine.x against AsyncOracleEngine.x_async
    # (forget_async is refused on the async colour by design: CapabilityError)
    "engine": [n for n in ENGINE_OPS if n != "forget"],
    # the negative checks: twins that lost their types, as the review's probe did
    "drifted": ["op", "other", "third"],
}

HEADER = '''from typing import Any, Awaitable, Callable
from oramem import OracleDBMemoryStore, SQLiteMemoryStore
from oramem.knowledge import KnowledgeMemory
from oramem.oracle import AsyncOracleEngine, SyncOracleEngine
from oramem.requests import AddRequest, SearchRequest


def loose(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    return fn


class Drifted:
    async def op_async(self, a: int, *, b: str = "x") -> int: return a
    op = loose(op_async)

    async def other_async(self, a: int) -> int: return a
    def other(self, a: int) -> str: return str(a)

    async def third_async(self, a: int) -> int: return a
    def third(self, a: int, c: int = 0) -> int: return a


async def check(km: KnowledgeMemory, sq: SQLiteMemoryStore, ora: OracleDBMemoryStore,
                se: SyncOracleEngine, ae: AsyncOracleEngine, dr: Drifted,
                req: AddRequest, sreq: SearchRequest) -> None:
'''

#: psycopg-style pins: expression -> revealed type (each in a function of its own, with the
#: parameters of ``check``: after a ``Never`` result the rest of a function is unreachable)
PINNED = {
    "sq.add(['x'], 'memory')": "list[str]",
    "await sq.add_async(['x'], 'memory')": "list[str]",
    "sq.search('x')": "list[tuple[oramem.types.Record, float]]",
    "await ora.search_async('x')": "list[tuple[oramem.types.Record, float]]",
    "km.write('a', 'm', 'u')": "oramem.knowledge.types.WriteResult",
    "await km.write_async('a', 'm', 'u')": "oramem.knowledge.types.WriteResult",
    "se.add(req)": "list[str]",
    "await ae.add_async(req)": "list[str]",
    "se.search(sreq)": "list[tuple[oramem.types.Record, float]]",
    "await ae.search_async(sreq)": "list[tuple[oramem.types.Record, float]]",
    # the other colour never returns (it raises the TypeError naming the right method)
    "ae.add(req)": "Never",
    "await se.add_async(req)": "Never",
}


def _snippet() -> tuple[str, dict[int, tuple[str, str, str]]]:
    """The snippet, and per reveal line: (subject, name, "sync" | "async" | "pin")."""
    lines = HEADER.splitlines()
    where: dict[int, tuple[str, str, str]] = {}

    def reveal(expr: str, key: tuple[str, str, str]) -> None:
        lines.append(f"    reveal_type({expr})")
        where[len(lines)] = key

    owners = {"engine": ("se", "ae"), "drifted": ("dr", "dr")}
    for subject, names in SUBJECTS.items():
        sync_var, async_var = owners.get(subject, (subject, subject))
        for name in names:
            reveal(f"{sync_var}.{name}", (subject, name, "sync"))
            reveal(f"{async_var}.{name}_async", (subject, name, "async"))
    header = HEADER.splitlines()
    for n, expr in enumerate(PINNED):
        lines.extend(["", ""] + header[-3:])
        lines[-3] = lines[-3].replace("async def check(", f"async def pin_{n}(")
        reveal(expr, ("pin", expr, "pin"))
    return "\n".join(lines) + "\n", where


@pytest.fixture(scope="module")
def revealed(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], str]:
    text, where = _snippet()
    # a module name of its own each run: mypy does not replay the notes of a module it finds
    # fresh in its cache, and the cache is shared with the mypy gate for oramem's modules
    path = tmp_path_factory.mktemp("typecheck") / f"twins_snippet_{uuid.uuid4().hex}.py"
    path.write_text(text)
    out, err, _status = mypy_api.run([
        "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(REPO / ".mypy_cache"),
        "--no-error-summary", "--hide-error-context", "--show-error-codes", str(path),
    ])
    found: dict[tuple[str, str, str], str] = {}
    errors = []
    for line in out.splitlines():
        m = re.match(rf"{re.escape(str(path))}:(\d+): note: Revealed type is \"(.*)\"$", line)
        if m and int(m.group(1)) in where:
            found[where[int(m.group(1))]] = m.group(2)
        elif ": error:" in line:
            errors.append(line)
    assert not errors, "the snippet does not type-check:\n" + "\n".join(errors) + f"\n{err}"
    assert set(found) == set(where.values()), f"mypy revealed {len(found)} of {len(where)}:\n{out}\n{err}"
    return found


def _unwrap_coroutine(text: str) -> str:
    """``... -> typing.Coroutine[Any, Any, R]`` -> ``... -> R`` (every occurrence)."""
    marker = "typing.Coroutine[Any, Any, "
    while (start := text.find(marker)) >= 0:
        depth, i = 1, start + len(marker)
        while depth:
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            i += 1
        text = text[:start] + text[start + len(marker): i - 1] + text[i:]
    return text


#: a sync block and its async twin are "a context manager of X"
_CM = [
    (re.compile(r"contextlib\._AsyncGeneratorContextManager\[(.*), None\]"), r"CM[\1]"),
    (re.compile(r"contextlib\._GeneratorContextManager\[(.*), None, None\]"), r"CM[\1]"),
]


def _normal(text: str) -> str:
    text = _unwrap_coroutine(text)
    text = re.sub(r" -> None(?=$|\)|, def )", "", text)  # mypy prints a None result as nothing
    for pattern, repl in _CM:
        text = pattern.sub(repl, text)
    return text


def twin_problems(found: dict[tuple[str, str, str], str], subject: str) -> list[str]:
    problems = []
    for name in SUBJECTS[subject]:
        sync, asyn = found[(subject, name, "sync")], found[(subject, name, "async")]
        if "*Any, **Any" in sync or "*Any, **Any" in asyn:
            problems.append(f"{subject}.{name} lost its types: {sync} / {asyn}")
        elif _normal(sync) != _normal(asyn):
            problems.append(f"{subject}.{name}: {sync}\n  != {name}_async: {asyn}")
    return problems


@pytest.mark.parametrize("subject", ["km", "sq", "ora", "engine"])
def test_sync_twins_have_the_async_twins_types(revealed, subject):
    assert len(SUBJECTS[subject]) >= {"km": 15, "sq": 12, "ora": 12, "engine": 12}[subject]
    assert twin_problems(revealed, subject) == []


def test_pinned_results(revealed):
    assert {expr: revealed[("pin", expr, "pin")] for expr in PINNED} == PINNED


def test_the_check_sees_a_twin_that_lost_its_types(revealed):
    """The negative check: a sync twin made by a decorator typed ``Callable[..., Any]`` (the
    review's probe of ``sync_method``), another result and an extra parameter are each
    reported; the runtime signature comparison this replaces sees none of the first kind."""
    problems = twin_problems(revealed, "drifted")
    assert len(problems) == 3, problems
    assert "lost its types" in problems[0]
    assert "-> str" in problems[1]
    assert "c: int =" in problems[2]

    from oramem._sync import sync_method

    class Owner:
        async def op_async(self, a: int) -> int: ...
        op: Any = sync_method(op_async)

    # through functools.wraps the runtime sees the async signature on both sides
    assert inspect.signature(Owner.op) == inspect.signature(Owner.op_async)
