"""Issue 7.4 — crash safety (SC-4.4, SC-4.10, SC-8.3: one transaction per call).

A child process runs large ``add`` / ``add_batches`` / ``delete_thread`` calls (explicit
vectors, caller-owned chunks, small ``batch_size`` so every call is many statements) and
is killed with SIGKILL at a random moment inside one of them. After each kill the store
must open, the file must pass ``integrity_check``, and every batch must be fully present
(records, retrieval rows, FTS rows, its thread row) or fully absent; calls the child
reported finished must be durable. SQLite-only by nature (SIGKILL of a local process)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict

import numpy as np
import pytest

from oramem import SearchStrategy, SQLiteMemoryStore

from . import _crash_child as child
from ._support import assert_no_orphans, raw_connect, table_names

CHILD = os.path.join(os.path.dirname(__file__), "_crash_child.py")


class CrashLedger:
    def __init__(self) -> None:
        self.next_batch = 0
        self.added: set[int] = set()  # finished adds
        self.deleted: set[int] = set()  # finished delete_thread
        #: delete_thread calls killed in flight: they may have committed before the kill (the
        #: END line was never printed), so their batch may be present or gone; the next check
        #: settles which (a committed delete joins ``deleted``)
        self.uncertain: set[int] = set()
        self.durations: dict[str, list[float]] = defaultdict(list)
        self.kills = 0
        self.mid_call = Counter()  # op in flight when killed


def _run_child_once(path: str, ledger: CrashLedger, rng: random.Random) -> None:
    proc = subprocess.Popen(
        [sys.executable, CHILD, path, str(ledger.next_batch), str(rng.randrange(2**31))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read() if proc.poll() is not None else "no READY"
        target = rng.randint(1, 4)  # kill inside the target-th call
        begun = 0
        in_flight = None
        while True:
            line = proc.stdout.readline().split()
            assert line, f"child died on its own: {proc.stderr.read()[-2000:]}"
            if line[0] == "BEGIN":
                op, batch = line[1], int(line[2])
                in_flight = (op, batch)
                if op != "delete_thread":
                    ledger.next_batch = max(ledger.next_batch, batch + 1)
                begun += 1
                if begun == target:
                    typical = ledger.durations[op][-5:] or [0.05]
                    time.sleep(rng.uniform(0.0, 1.1 * (sum(typical) / len(typical))))
                    proc.send_signal(signal.SIGKILL)
                    break
            elif line[0] == "END":
                op, batch, seconds = line[1], int(line[2]), float(line[3])
                ledger.durations[op].append(seconds)
                (ledger.deleted if op == "delete_thread" else ledger.added).add(batch)
                in_flight = None
        # drain: END lines written before the kill landed still count as finished calls, and a
        # BEGIN of an add there may have committed too: the next child must not reuse its batch
        # number (a kill aimed at a slow delete_thread can land after the child finished the
        # delete and a whole add behind it; reusing the number wrote that batch twice, 800 of 400)
        rest, _ = proc.communicate(timeout=60)
        for raw in rest.splitlines():
            parts = raw.split()
            if parts and parts[0] == "BEGIN":
                in_flight = (parts[1], int(parts[2]))
                if parts[1] != "delete_thread":
                    ledger.next_batch = max(ledger.next_batch, int(parts[2]) + 1)
            elif parts and parts[0] == "END":
                (ledger.deleted if parts[1] == "delete_thread" else ledger.added).add(int(parts[2]))
                in_flight = None
        assert proc.returncode == -signal.SIGKILL
        ledger.kills += 1
        if in_flight is not None:
            ledger.mid_call[in_flight[0]] += 1
            if in_flight[0] == "delete_thread":
                ledger.uncertain.add(in_flight[1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _check(path: str, ledger: CrashLedger) -> None:
    store = SQLiteMemoryStore(path, vector_dim=child.DIM, search_strategy=SearchStrategy.HYBRID)
    try:
        ids = assert_no_orphans(path)
        t = table_names()
        conn = raw_connect(path)
        try:
            rows = conn.execute(f"SELECT seq, record_type, id FROM {t.records} WHERE id LIKE 'B%'").fetchall()
            threads = {rid for (rid,) in conn.execute(f"SELECT id FROM {t.records} WHERE record_type = 'thread'")}
        finally:
            conn.close()
        per_batch = Counter(int(rid[1:].split("-")[0]) for _, _, rid in rows)
        chunks_per_seq = Counter(ids["chunks"].values())
        for batch, count in per_batch.items():
            assert count == child.RECORDS, f"batch {batch} is partial: {count} of {child.RECORDS} records"
            assert f"th{batch}" in threads, f"batch {batch} has records but no thread row"
        for seq, _, rid in rows:
            assert chunks_per_seq[seq] == child.CHUNKS, f"{rid} has {chunks_per_seq[seq]} retrieval rows"
        assert ids["fts"] == set(ids["chunks"]), "FTS rows differ from retrieval rows"
        present = set(per_batch)
        for th in threads:
            if th.startswith("th"):
                assert int(th[2:]) in present, f"thread row {th} survived without its records"
        # a delete killed in flight may have committed: its batch is gone (all of it, checked
        # above) or whole; either settles it
        ledger.deleted |= {b for b in ledger.uncertain if b not in present}
        ledger.uncertain.clear()
        lost = (ledger.added - ledger.deleted) - present
        assert not lost, f"acknowledged adds lost: {sorted(lost)}"
        resurrected = ledger.deleted & present
        assert not resurrected, f"acknowledged delete_thread undone: {sorted(resurrected)}"
        # the store answers reads after recovery
        q = list(map(float, np.random.default_rng(0).standard_normal(child.DIM)))
        store.search(query_vector=q, k=5, strategy="vector")
        store.search("words", k=5, strategy="keyword")
    finally:
        store.close()


def _crash_loop(path: str, kills: int, seed: int) -> CrashLedger:
    rng = random.Random(seed)
    ledger = CrashLedger()
    for _ in range(kills):
        _run_child_once(path, ledger, rng)
        _check(path, ledger)
    print(f"crash safety: {ledger.kills} SIGKILLs survived, killed mid-call: {dict(ledger.mid_call)}, "
          f"{len(ledger.added)} adds and {len(ledger.deleted)} thread deletes acknowledged")
    return ledger


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_write(sqlite_only, db_path):
    ledger = _crash_loop(db_path, 4, seed=11)
    assert ledger.kills == 4
    assert sum(ledger.mid_call.values()) >= 1, "no kill landed inside a call"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_write_slow(sqlite_only, db_path):
    ledger = _crash_loop(db_path, 60, seed=12)
    assert ledger.kills >= 50
    assert sum(ledger.mid_call.values()) >= 25, dict(ledger.mid_call)


_UPGRADE_CHILD = """
import sys, time
from oramem import SQLiteMemoryStore
print("BEGIN", flush=True)
start = time.perf_counter()
SQLiteMemoryStore(sys.argv[1], vector_dim=8, search_strategy="hybrid").close()
print("END", time.perf_counter() - start, flush=True)
"""


def _vector_store(path: str, n: int) -> None:
    rng = np.random.default_rng(1)
    store = SQLiteMemoryStore(path, vector_dim=8)
    texts = [f"record {i} with some words to index " * 3 for i in range(n)]
    store.add(texts, "memory", record_ids=[f"v{i}" for i in range(n)], embeddings=list(rng.standard_normal((n, 8))))
    store.close()


def _check_upgrade_state(path: str, n: int) -> str:
    t = table_names()
    conn = raw_connect(path)
    try:
        capability = conn.execute("SELECT capability FROM oramem_stores WHERE store_id = 'DEFAULT'").fetchone()[0]
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        chunks = conn.execute(f"SELECT count(*) FROM {t.chunks}").fetchone()[0]
        fts = conn.execute(f"SELECT count(*) FROM {t.fts}").fetchone()[0] if t.names["fts"] in tables else None
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    assert chunks == n
    if capability == "vector":
        assert t.names["fts"] not in tables, "a half-done upgrade left an FTS table behind"
    else:
        assert capability == "hybrid" and fts == chunks, (capability, fts, chunks)
    return capability


def _upgrade_kills(tmp_path, kills: int, seed: int) -> Counter:
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    duration = 0.3
    for i in range(kills):
        path = str(tmp_path / f"up{i}.db")
        _vector_store(path, 3000)
        proc = subprocess.Popen([sys.executable, "-c", _UPGRADE_CHILD, path], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "BEGIN"
            time.sleep(rng.uniform(0.0, duration))
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate(timeout=60)
            if out.startswith("END"):
                duration = float(out.split()[1]) * 1.2
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        outcomes[_check_upgrade_state(path, 3000)] += 1
        store = SQLiteMemoryStore(path, vector_dim=8, search_strategy="hybrid")  # completes the upgrade
        assert [r.id for r, _ in store.search("record 7 with", k=1, strategy="keyword")]
        store.close()
        assert _check_upgrade_state(path, 3000) == "hybrid"
    print(f"upgrade crash: {kills} SIGKILLs during a vector->hybrid upgrade, states found: {dict(outcomes)}")
    return outcomes


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_capability_upgrade(sqlite_only, tmp_path):
    _upgrade_kills(tmp_path, 3, seed=21)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_capability_upgrade_slow(sqlite_only, tmp_path):
    outcomes = _upgrade_kills(tmp_path, 20, seed=22)
    assert outcomes["vector"] >= 1
