"""Issue 7.3 — concurrency: 8 threads, asyncio tasks (gather), and two spawned processes
on one file doing mixed add/update/delete/search. Afterwards every acknowledged write is
present exactly once with its last content, acknowledged deletes are absent, retrieval
rows/FTS/vector cache agree, and no error other than the documented ``StoreBusy``
occurred. Threads and asyncio run on every engine (raw-table checks on SQLite only); the
process part is SQLite-only by nature (one local file, spawned children)."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import threading

import pytest

from ._workers import DIM, Ledger, open_store, process_main, step, step_async, verify


def _engine_store(make_store, engine):
    """(store, raw path or None, keyword-capable) for the engine under test."""
    from oramem import SearchStrategy
    from oramem.embedders import HashEmbedder

    if engine == "sqlite":
        store = make_store(embedder=HashEmbedder(dim=DIM), search_strategy=SearchStrategy.HYBRID)
        return store, store._engine.connection_path, True
    return make_store(embedder=HashEmbedder(dim=DIM)), None, False


def _threads(store, path, keyword: bool, n_threads: int, n_ops: int) -> int:
    ledgers = [Ledger(f"T{i}", keyword) for i in range(n_threads)]
    failures: list[BaseException] = []
    barrier = threading.Barrier(n_threads)

    def run(i: int) -> None:
        rng = random.Random(1000 + i)
        try:
            barrier.wait(timeout=30)
            for n in range(n_ops):
                step(store, ledgers[i], rng, n)
        except BaseException as exc:
            failures.append(exc)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=600)
    assert not any(w.is_alive() for w in workers), "a worker thread hung"
    if failures:
        raise failures[0]
    assert all(not led.errors for led in ledgers), [led.errors for led in ledgers]
    live = verify(store, path, [led.export() for led in ledgers])
    ops = sum(led.ops for led in ledgers)
    print(f"threads: {n_threads} x {n_ops} = {ops} operations, {live} live records verified")
    return ops


async def _tasks(store, path, n_tasks: int, n_ops: int) -> int:
    ledgers = [Ledger(f"A{i}") for i in range(n_tasks)]

    async def run(i: int) -> None:
        rng = random.Random(2000 + i)
        for n in range(n_ops):
            await step_async(store, ledgers[i], rng, n)

    await asyncio.gather(*(run(i) for i in range(n_tasks)))
    live = verify(store, path, [led.export() for led in ledgers])
    ops = sum(led.ops for led in ledgers)
    print(f"asyncio: {n_tasks} tasks x {n_ops} = {ops} operations, {live} live records verified")
    return ops


def _processes(path: str, n_procs: int, n_ops: int) -> int:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=process_main, args=(path, f"P{i}", n_ops, 3000 + i, queue)) for i in range(n_procs)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0, f"child exited with {p.exitcode}"
    fatal = [e for r in results for e in r["errors"] if not e.startswith("StoreBusy")]
    assert not fatal, fatal
    store = open_store(path)
    live = verify(store, path, results)
    store.close()
    ops = sum(r["ops"] for r in results)
    busy = sum(len(r["errors"]) for r in results)
    print(f"processes: {n_procs} x {n_ops} = {ops} operations ({busy} StoreBusy), {live} live records verified")
    return ops


def test_threads(make_store, engine):
    _threads(*_engine_store(make_store, engine), 8, 60)


async def test_asyncio_gather(make_store, engine):
    store, path, _ = _engine_store(make_store, engine)
    await _tasks(store, path, 8, 40)


def test_two_processes_one_file(sqlite_only, db_path):
    open_store(db_path).close()  # create first: both children open an existing store
    _processes(db_path, 2, 150)


def test_threads_and_processes_together(sqlite_only, db_path):
    """Threads in this process while two spawned processes write the same file."""
    open_store(db_path).close()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=process_main, args=(db_path, f"Q{i}", 80, 4000 + i, queue)) for i in range(2)]
    for p in procs:
        p.start()
    store = open_store(db_path)
    ledgers = [Ledger(f"M{i}") for i in range(4)]
    failures: list[BaseException] = []

    def run(i: int) -> None:
        rng = random.Random(5000 + i)
        try:
            for n in range(40):
                step(store, ledgers[i], rng, n)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    results = [queue.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    if failures:
        raise failures[0]
    fatal = [e for r in results for e in r["errors"] if not e.startswith("StoreBusy")]
    assert not fatal, fatal
    verify(store, db_path, results + [led.export() for led in ledgers])
    store.close()


@pytest.mark.slow
def test_concurrency_slow(sqlite_only, tmp_path):
    with open_store(str(tmp_path / "t.db")) as store:
        ops = _threads(store, str(tmp_path / "t.db"), True, 8, 600)
    with open_store(str(tmp_path / "a.db")) as store:
        ops += asyncio.run(_tasks(store, str(tmp_path / "a.db"), 16, 200))
    open_store(str(tmp_path / "p.db")).close()
    ops += _processes(str(tmp_path / "p.db"), 2, 1500)
    print(f"concurrency total: {ops} operations")
