"""Issue 7.6 — deletion completeness (SC-8.1 to SC-8.5).

Random scoped data (users, agents, threads, profiles; long texts with several retrieval
rows), then random ``delete`` / cascading profile deletes / ``delete_thread``. After each
one: exactly the reference victims are gone (no more, no less), and no row anywhere —
records, retrieval rows, FTS, pending (MANUAL sync), the engine's vector cache — still
refers to them; deletion hooks saw every removed record. The raw-table part is
SQLite-only; ``test_deletes_through_the_api`` runs on every engine."""

from __future__ import annotations

import random

import pytest

from oramem import SearchStrategy, SQLiteMemoryStore
from oramem.embedders import HashEmbedder

from ._support import assert_no_orphans, cache_seqs, raw_connect, table_names

USERS = ["u1", "u2", "u'3"]
AGENTS = ["a1", "a2"]
THREADS = ["t1", "t2", "t3", "t4"]


class World:
    """Reference model: records with scope, and who opened each thread (first writer)."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], dict] = {}
        self.thread_owner: dict[str, tuple] = {}

    def add(self, rtype, rid, user, agent, thread) -> None:
        self.records[(rtype, rid)] = dict(user=user, agent=agent, thread=thread)
        if thread is not None and thread not in self.thread_owner:
            self.thread_owner[thread] = (user, agent)
            self.records[("thread", thread)] = dict(user=user, agent=agent, thread=thread)

    def victims_delete(self, rtype, rid, cascade) -> set:
        """SC-13: a cascade removes the actor's own records and the threads that are its
        alone (a user's: no other user in them; an agent's: nothing but its records); a
        thread row naming the actor in a thread that stays loses the actor's id (applied
        to the model here)."""
        out = {(rtype, rid)} & set(self.records)
        if cascade and rtype in ("user_profile", "agent_profile"):
            col = "user" if rtype == "user_profile" else "agent"

            def other(r) -> bool:
                return r[col] != rid and (col == "agent" or r[col] is not None)

            scoped = {k: r for k, r in self.records.items() if k[0] not in ("user_profile", "agent_profile")}
            mine = {r["thread"] for r in scoped.values() if r[col] == rid and r["thread"] is not None}
            # the thread row names who opened the thread, which decides nothing (SC-13.2)
            private = {t for t in mine if not any(other(r) for k, r in scoped.items() if r["thread"] == t and k[0] != "thread")}
            for key, r in scoped.items():
                if r["thread"] in private or (r[col] == rid and key[0] != "thread"):
                    out.add(key)
                elif key[0] == "thread" and r[col] == rid:
                    r[col] = None  # SC-13.2: the row stays, without the erased actor
        return out

    def victims_thread(self, thread) -> set:
        return {key for key, r in self.records.items() if r["thread"] == thread} | (
            {("thread", thread)} & set(self.records))

    def remove(self, keys) -> None:
        for key in keys:
            self.records.pop(key, None)
            if key[0] == "thread":
                self.thread_owner.pop(key[1], None)


def _populate(store, world, rng, n) -> None:
    for u in USERS:
        store.add_user(u, f"profile {u} " + "zebra " * 5)
        world.add("user_profile", u, None, None, None)
    for a in AGENTS:
        store.add_agent(a, f"agent {a} yak")
        world.add("agent_profile", a, None, None, None)
    for i in range(n):
        rtype = rng.choice(["memory", "fact", "message", "preference"])
        user, agent, thread = rng.choice(USERS + [None]), rng.choice(AGENTS + [None]), rng.choice(THREADS + [None])
        long = rng.random() < 0.3
        text = f"uniq{i} common " + ("filler sentence here. " * 200 if long else "short")
        store.add([text], rtype, record_ids=f"r{i}", user_ids=user, agent_ids=agent, thread_ids=thread,
                  roles="user" if rtype == "message" else None)
        world.add(rtype, f"r{i}", user, agent, thread)


def _raw_state(path):
    t = table_names()
    conn = raw_connect(path)
    try:
        recs = {(rt, rid): seq for seq, rt, rid in conn.execute(f"SELECT seq, record_type, id FROM {t.records}")}
        chunks = dict(conn.execute(f"SELECT chunk_id, record_seq FROM {t.chunks}").fetchall())
        fts = {r for (r,) in conn.execute(f"SELECT rowid FROM {t.fts}")}
        pending = {r for (r,) in conn.execute(f"SELECT chunk_id FROM {t.pending}")}
    finally:
        conn.close()
    return recs, chunks, fts, pending


def _fts_hits(path, word):
    t = table_names()
    conn = raw_connect(path)
    try:
        return conn.execute(f"SELECT rowid FROM {t.fts} WHERE {t.fts} MATCH ?", (f'"{word}"',)).fetchall()
    finally:
        conn.close()


def _run(tmp_path, seed, n_records, n_deletes, sync) -> dict:
    rng = random.Random(seed)
    path = str(tmp_path / f"del{seed}{sync}.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(dim=16), search_strategy=SearchStrategy.HYBRID,
                              search_index_sync=sync)
    events = []
    store.register_deletion_hook(lambda conn, event: events.append(event))
    world = World()
    _populate(store, world, rng, n_records)
    if sync == "manual" and rng.random() < 0.5:
        store.sync_search_index()
    store.search("common", k=3, strategy="vector")  # load the vector cache
    stats = {"deletes": 0, "removed": 0}
    for _ in range(n_deletes):
        before_recs, before_chunks, _, _ = _raw_state(path)
        roll = rng.random()
        if roll < 0.4:
            keys = [k for k in world.records if k[0] not in ("thread",)] or [("memory", "nope")]
            rtype, rid = rng.choice(keys)
            victims = world.victims_delete(rtype, rid, False)
            assert store.delete(rtype, rid) == len(victims)
        elif roll < 0.7:
            rtype = rng.choice(["user_profile", "agent_profile"])
            rid = rng.choice(USERS if rtype == "user_profile" else AGENTS)
            victims = world.victims_delete(rtype, rid, True)
            assert store.delete(rtype, rid, cascade=True) == int((rtype, rid) in world.records)
        else:
            thread = rng.choice(THREADS)
            victims = world.victims_thread(thread)
            assert store.delete_thread(thread) == int(("thread", thread) in world.records)
        world.remove(victims)
        stats["deletes"] += 1
        stats["removed"] += len(victims)
        # hooks were told about every removed record
        told = {pair for ev in events for pair in ev.records}
        assert victims <= told, f"deletion hook missed {victims - told}"
        events.clear()
        # raw tables: exactly the survivors, nothing referring to the victims
        recs, chunks, fts, pending = _raw_state(path)
        assert set(recs) == set(world.records), f"extra={set(recs) - set(world.records)} missing={set(world.records) - set(recs)}"
        dead_seqs = {before_recs[k] for k in victims if k in before_recs}
        dead_chunks = {c for c, s in before_chunks.items() if s in dead_seqs}
        assert not (set(chunks.values()) & dead_seqs), "retrieval rows of deleted records remain"
        assert not (fts & dead_chunks), "FTS rows of deleted records remain"
        assert not (pending & dead_chunks), "pending index rows of deleted records remain"
        assert not (cache_seqs(store) & dead_seqs), "the vector cache still holds deleted records"
        assert_no_orphans(path)
        for rtype, rid in victims:
            if rid.startswith("r"):
                assert not _fts_hits(path, f"uniq{rid[1:]}"), f"{rid} still matches in FTS"
        hits = store.search("common", k=500, strategy="hybrid") if sync != "manual" else []
        assert not ({(r.record_type, r.id) for r, _ in hits} & victims)
        store.search("common", k=500, strategy="vector")
        assert not (cache_seqs(store) & dead_seqs), "the reloaded vector cache holds deleted records"
    if sync == "manual":
        store.sync_search_index()
        assert_no_orphans(path)
    store.close()
    return stats


@pytest.mark.parametrize("sync", ["on_commit", "manual"])
def test_deletion_leaves_nothing(sqlite_only, tmp_path, sync):
    totals = {"deletes": 0, "removed": 0}
    for seed in range(3):
        for k, v in _run(tmp_path, seed, 60, 15, sync).items():
            totals[k] += v
    print(f"deletion ({sync}): {totals}")
    assert totals["removed"] > totals["deletes"]


@pytest.mark.slow
@pytest.mark.parametrize("sync", ["on_commit", "manual"])
def test_deletion_leaves_nothing_slow(sqlite_only, tmp_path, sync):
    totals = {"deletes": 0, "removed": 0}
    for seed in range(30):
        for k, v in _run(tmp_path, seed, 150, 40, sync).items():
            totals[k] += v
    print(f"deletion slow ({sync}): {totals}")


def test_deletes_through_the_api(make_store, engine):
    """Engine-neutral: after delete / cascade / delete_thread nothing deleted is readable."""
    store = make_store()
    rng = random.Random(5)
    world = World()
    _populate(store, world, rng, 40)
    for rtype, rid, cascade in [("memory", "r1", False), ("user_profile", "u1", True), ("agent_profile", "a2", True)]:
        victims = world.victims_delete(rtype, rid, cascade)
        store.delete(rtype, rid, cascade=cascade)
        world.remove(victims)
    victims = world.victims_thread("t2")
    store.delete_thread("t2")
    world.remove(victims)
    for rtype in ("message", "memory", "fact", "preference", "user_profile", "agent_profile"):
        listed = {(rtype, r.id) for r in store.list(rtype, limit=None)}
        assert listed == {k for k in world.records if k[0] == rtype}, rtype
    hits = {(r.record_type, r.id) for r, _ in store.search("common zebra yak", k=500)}
    assert hits <= set(world.records)
