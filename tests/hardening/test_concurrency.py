"""Issue 7.3 — concurrency: 8 threads, asyncio tasks (gather), and two spawned processes
on one file doing mixed add/update/delete/search. Afterwards every acknowledged write is
present exactly once with its last content, acknowledged deletes are absent, retrieval
rows/FTS/vector cache agree, and no error other than the documented ``StoreBusy``
occurred. SQLite-only by nature for the process part (one local file, spawned children);
the thread/async part runs on every engine whose raw tables it can inspect (SQLite)."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import threading

import pytest

from ._workers import Ledger, open_store, process_main, step, step_async, verify


def _threads(path: str, n_threads: int, n_ops: int) -> int:
    store = open_store(path)
    ledgers = [Ledger(f"T{i}") for i in range(n_threads)]
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
    store.close()
    ops = sum(led.ops for led in ledgers)
    print(f"threads: {n_threads} x {n_ops} = {ops} operations, {live} live records verified")
    return ops


async def _tasks(path: str, n_tasks: int, n_ops: int) -> int:
    store = open_store(path)
    ledgers = [Ledger(f"A{i}") for i in range(n_tasks)]

    async def run(i: int) -> None:
        rng = random.Random(2000 + i)
        for n in range(n_ops):
            await step_async(store, ledgers[i], rng, n)

    await asyncio.gather(*(run(i) for i in range(n_tasks)))
    live = verify(store, path, [led.export() for led in ledgers])
    await store.aclose()
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


def test_threads(sqlite_only, db_path):
    _threads(db_path, 8, 60)


async def test_asyncio_gather(sqlite_only, db_path):
    await _tasks(db_path, 8, 40)


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
    ops = _threads(str(tmp_path / "t.db"), 8, 600)
    ops += asyncio.run(_tasks(str(tmp_path / "a.db"), 16, 200))
    open_store(str(tmp_path / "p.db")).close()
    ops += _processes(str(tmp_path / "p.db"), 2, 1500)
    print(f"concurrency total: {ops} operations")
