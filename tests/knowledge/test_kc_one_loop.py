"""One way to be async in the knowledge layer (issue 25 item 5; architecture review §3).

Async is the source of truth and every sync twin runs on the instance's own background loop;
the in-process worker runs there too (no ``asyncio.run`` and no third loop inside library
code), and ``close_async`` does not block the caller's event loop. The twin checks here can
fail: each has a negative test."""

from __future__ import annotations

import ast
import asyncio
import threading
import time
from pathlib import Path

import pytest

import oramem
from oramem.knowledge import KnowledgeMemory
from oramem.testing import Delay

from .helpers import extract

PACKAGE = Path(oramem.__file__).parent


def asyncio_runs(source: str) -> list[int]:
    """Lines that call ``asyncio.run(...)`` (or a bare ``run`` imported from asyncio)."""
    tree = ast.parse(source)
    bare = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "asyncio"
            for a in n.names if a.name == "run"}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "run" and isinstance(f.value, ast.Name) and f.value.id == "asyncio") or (
            isinstance(f, ast.Name) and f.id in bare
        ):
            lines.append(node.lineno)
    return lines


def test_the_asyncio_run_finder_finds_one():
    assert asyncio_runs("import asyncio\nasyncio.run(main())\n") == [2]
    assert asyncio_runs("from asyncio import run as go\ngo(main())\n") == [2]
    assert asyncio_runs('"""asyncio.run(x) in a docstring"""\nloop.run(x)\n') == []


def test_no_library_code_calls_asyncio_run():
    offenders = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := asyncio_runs(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def _thread_recorder(seen: list[str], reply: dict):
    def route(payload: dict) -> dict:
        seen.append(threading.current_thread().name)
        return reply

    return route


def test_the_worker_runs_on_the_instances_loop(km, llm):
    seen: list[str] = []
    llm.route("extract", _thread_recorder(seen, extract([("Ana", "person")], [("Ana", "Ana likes tea")])))
    assert km.write("a1", "tea", "Pedro").success  # a sync twin: runs on the instance's loop
    km.start_worker(poll_interval=0.05)
    try:
        assert km.write("a1", "more tea", "Pedro", background=True).job_id
        deadline = time.monotonic() + 20
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "oramem-kg-worker" not in {t.name for t in threading.enumerate()}
    finally:
        report = km.stop_worker(timeout=20)
    assert report is not None and report.done == 1
    assert len(seen) == 2 and seen[0] == seen[1], seen  # the same loop thread for both


async def test_close_async_does_not_block_the_callers_loop(km, llm):
    llm.route("extract", Delay(0.6, extract([("Ana", "person")], [("Ana", "Ana likes tea")])))
    await km.write_async("a1", "tea", "Pedro", background=True)
    km.start_worker(poll_interval=0.05)
    await asyncio.sleep(0.2)  # the worker is now inside its job, waiting on the LLM
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.ensure_future(ticker())
    started = time.monotonic()
    await km.close_async()  # stops the worker after its current job (about 0.4 s more)
    waited = time.monotonic() - started
    task.cancel()
    assert waited >= 0.2, waited
    assert ticks >= 10, (ticks, waited)  # the caller's loop ran while close waited
    await km.close_async()  # idempotent


def missing_twins(cls: type, exempt: frozenset[str] = frozenset()) -> list[str]:
    """Public methods of ``cls`` whose other colour is missing."""
    names = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
    out = []
    for n in sorted(names - exempt):
        other = n[: -len("_async")] if n.endswith("_async") else f"{n}_async"
        if other not in names and other not in exempt:
            out.append(f"{n} has no {other}")
    return out


#: sync-only by design: they control a worker on the instance's loop, they do no I/O themselves
SYNC_ONLY = frozenset({"start_worker", "stop_worker"})


def test_every_knowledge_operation_has_both_colours():
    # tests/typecheck/test_twin_types.py compares the types of the pairs it finds; a method whose
    # twin is missing altogether forms no pair there, so completeness is checked here
    assert missing_twins(KnowledgeMemory, SYNC_ONLY) == []


def test_the_twin_completeness_check_sees_a_missing_twin():
    class Lopsided:
        async def write_async(self) -> None: ...
        def write(self) -> None: ...
        async def only_async(self) -> None: ...
        def only_sync(self) -> None: ...

    assert missing_twins(Lopsided) == ["only_async has no only", "only_sync has no only_sync_async"]


@pytest.mark.parametrize("name", sorted(SYNC_ONLY))
def test_the_sync_only_methods_exist(name):
    assert callable(getattr(KnowledgeMemory, name))


def test_the_cli_worker_runs_on_the_instances_loop_and_stops_on_sigterm(tmp_path):
    """``oramem kg worker`` without --once: the jobs run through the sync twin (the instance's
    loop, no asyncio.run of the command's own), and SIGTERM still stops it cleanly."""
    import json
    import os
    import signal
    import subprocess
    import sys

    root = PACKAGE.parent
    path = str(tmp_path / "kg.db")
    env = {**os.environ, "PYTHONPATH": str(root)}
    made = subprocess.run([sys.executable, "-m", "oramem.cli", "--db", path, "--embed-dim", "64", "knowledge", "write", "a1",
                           "hello", "--speaker", "Pedro", "--background"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    proc = subprocess.Popen([sys.executable, "-m", "oramem.cli", "kg", "worker", "--sqlite", path, "--store-id", "DEFAULT",
                             "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--poll-interval", "0.1",
                             "--backoff-base", "100", "--backoff-max", "100"],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4.0)  # the one job fails against the closed port and waits its backoff; the worker idles
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["retried"] == 1 and report["failed"] == 0, report
