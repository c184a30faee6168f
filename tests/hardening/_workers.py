"""Workloads run by threads, asyncio tasks and spawned processes (importable without
pytest, so ``multiprocessing`` spawn children can load it)."""

from __future__ import annotations

import random
from typing import Any, Optional

import numpy as np

DIM = 32


def unit(rng: random.Random) -> list[float]:
    v = np.array([rng.gauss(0.0, 1.0) for _ in range(DIM)])
    return [float(x) for x in v / np.linalg.norm(v)]


def open_store(path: str):
    from oramem import SearchStrategy, SQLiteMemoryStore
    from oramem.embedders import HashEmbedder

    return SQLiteMemoryStore(path, embedder=HashEmbedder(dim=DIM), search_strategy=SearchStrategy.HYBRID)


class Ledger:
    """What one worker was told succeeded: live id -> (content, vector); deleted ids."""

    def __init__(self, prefix: str, keyword: bool = True) -> None:
        self.prefix = prefix
        self.keyword = keyword  # the store can answer keyword searches
        self.live: dict[str, tuple[str, list[float]]] = {}
        self.deleted: set[str] = set()
        self.ops = 0
        self.errors: list[str] = []

    def export(self) -> dict:
        return {"prefix": self.prefix, "live": {k: v[0] for k, v in self.live.items()},
                "deleted": sorted(self.deleted), "ops": self.ops, "errors": self.errors}


def step(store: Any, ledger: Ledger, rng: random.Random, n: int) -> None:
    """One random operation; asserts what the caller can check alone (read-your-writes)."""
    from oramem import StoreBusy

    ledger.ops += 1
    live = sorted(ledger.live)
    roll = rng.random()
    try:
        if roll < 0.4 or not live:
            rid = f"{ledger.prefix}-{n}"
            vec = unit(rng)
            text = f"{ledger.prefix} item {n} v0"
            out = store.add([text], "memory", record_ids=rid, user_ids=ledger.prefix, embeddings=[vec],
                            metadata={"owner": ledger.prefix, "v": 0}, thread_ids=f"{ledger.prefix}-t{n % 3}")
            assert out == [rid]
            ledger.live[rid] = (text, vec)
        elif roll < 0.6:
            rid = rng.choice(live)
            vec = unit(rng)
            text = f"{ledger.prefix} item {rid} v{n}"
            assert store.update("memory", rid, text=text, embedding=vec, metadata={"owner": ledger.prefix, "v": n}) == 1
            ledger.live[rid] = (text, vec)
        elif roll < 0.75:
            rid = rng.choice(live)
            assert store.delete("memory", rid) == 1
            del ledger.live[rid]
            ledger.deleted.add(rid)
        else:
            rid = rng.choice(live)
            text, vec = ledger.live[rid]
            got = store.get("memory", rid)
            assert got is not None and got.content == text, (rid, got)
            hits = store.search(query_vector=vec, k=1, user_id=ledger.prefix, strategy="vector")
            assert hits and hits[0][0].id == rid and hits[0][1] < 1e-4, (rid, hits)
            if ledger.keyword:
                kw = store.search(f"item {rid}", k=3, user_id=ledger.prefix, strategy="keyword")
                assert all(r.user_id == ledger.prefix for r, _ in kw)
    except StoreBusy as exc:  # documented: a lock held longer than the busy timeout
        ledger.errors.append(f"StoreBusy: {exc}")


async def step_async(store: Any, ledger: Ledger, rng: random.Random, n: int) -> None:
    ledger.ops += 1
    live = sorted(ledger.live)
    roll = rng.random()
    if roll < 0.4 or not live:
        rid = f"{ledger.prefix}-{n}"
        vec = unit(rng)
        text = f"{ledger.prefix} item {n} v0"
        ledger.live[rid] = (text, vec)  # reserved before the await: no other task picks it
        try:
            out = await store.add_async([text], "memory", record_ids=rid, user_ids=ledger.prefix, embeddings=[vec])
        except BaseException:
            del ledger.live[rid]
            raise
        assert out == [rid]
    elif roll < 0.6:
        rid = rng.choice(live)
        vec = unit(rng)
        text = f"{ledger.prefix} item {rid} v{n}"
        old = ledger.live.pop(rid)  # owned by this task until the update returns
        assert await store.update_async("memory", rid, text=text, embedding=vec) == 1, (rid, old)
        ledger.live[rid] = (text, vec)
    elif roll < 0.75:
        rid = rng.choice(live)
        del ledger.live[rid]
        assert await store.delete_async("memory", rid) == 1
        ledger.deleted.add(rid)
    else:
        rid = rng.choice(live)
        text, vec = ledger.live[rid]
        hits = await store.search_async(query_vector=vec, k=1, user_id=ledger.prefix, strategy="vector")
        assert hits and hits[0][0].id == rid, (rid, hits)


def process_main(path: str, prefix: str, n_ops: int, seed: int, queue: Any) -> None:
    """Entry point of a spawned process: run ``n_ops`` operations, report the ledger."""
    ledger = Ledger(prefix)
    try:
        store = open_store(path)
        rng = random.Random(seed)
        for n in range(n_ops):
            step(store, ledger, rng, n)
        store.close()
    except BaseException as exc:  # report instead of dying silently
        ledger.errors.append(f"FATAL {type(exc).__name__}: {exc}")
    queue.put(ledger.export())


def verify(store: Any, path: Optional[str], ledgers: list[dict], store_id: str = "DEFAULT") -> int:
    """Every acknowledged write present exactly once with its last content; acknowledged
    deletes absent; chunks/FTS/cache consistent. Returns the live record count."""
    from collections import Counter

    from ._support import assert_no_orphans, cache_seqs

    expected: dict[str, str] = {}
    deleted: set[str] = set()
    for led in ledgers:
        expected.update(led["live"])
        deleted.update(led["deleted"])
    records = store.list("memory", limit=None)
    counts = Counter(r.id for r in records)
    dupes = [rid for rid, c in counts.items() if c > 1]
    assert not dupes, f"records listed twice: {dupes[:5]}"
    got = {r.id: r.content for r in records}
    assert set(got) == set(expected), f"missing={set(expected) - set(got)} unexpected={set(got) - set(expected)}"
    assert got == expected, "a record does not hold its last acknowledged content"
    assert not (deleted & set(got)), f"acknowledged deletes still present: {deleted & set(got)}"
    for rid in list(expected)[:50]:
        assert store.get("memory", rid).content == expected[rid]
    if path is None:  # no raw tables to inspect (Oracle)
        return len(expected)
    ids = assert_no_orphans(path, store_id)
    live_seqs = {ids["records"][("memory", rid)] for rid in expected}
    per_record = Counter(ids["chunks"].values())
    assert {seq for seq in per_record} == live_seqs, "retrieval rows of deleted records remain, or live ones lack them"
    assert all(per_record[s] == 1 for s in live_seqs)
    assert ids["fts"] == set(ids["chunks"]), "FTS rows differ from retrieval rows"
    # the vector cache, refreshed by a read, holds exactly the live rows
    store.search(query_vector=[1.0] + [0.0] * (DIM - 1), k=1, strategy="vector")
    assert cache_seqs(store) == live_seqs
    return len(expected)
