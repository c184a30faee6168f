"""Issue 7.5 — time to live with an injected clock, no sleeps (SC-5, SC-7.6).

Random records with random ``ttl_days`` / anchors / event timestamps under random
retention configs, a clock moved forward in random steps; at every step each read path
(get, list, list_thread_messages, search in every strategy) shows exactly the records a
reference expiry model says are alive, ``expires_at`` equals the model, clamping warns,
``purge_expired`` removes records and their retrieval rows (raw tables), and ``update``
revives or refuses per SC-5.6/SC-7.1. SQLite-only by nature (the injected clock)."""

from __future__ import annotations

import random
import warnings
from datetime import datetime, timedelta, timezone

import pytest

from oramem import MemoryRetentionConfig, SearchStrategy, SQLiteMemoryStore, TimeToLiveAnchor
from oramem.embedders import HashEmbedder

from ._support import assert_no_orphans, raw_connect, table_names

UTC = timezone.utc
OMIT = object()
CONFIGS = [(None, None), (2, None), (None, 5), (1, 3), (0, 4)]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2031, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _parse(text):
    return None if text is None else datetime.fromisoformat(text)


class Model:
    def __init__(self, default, maximum):
        self.default, self.maximum = default, maximum
        self.records: dict[str, dict] = {}
        self.purged: set[str] = set()

    def days(self, ttl):
        """SC-5.2: omitted -> default; None (given, or as the default) -> max or never
        (docs/store-decisions.md: a maximum caps "never expires" too); above max -> max (warns)."""
        if ttl is OMIT:
            ttl = self.default
        if ttl is None:
            return self.maximum, False
        if self.maximum is not None and ttl > self.maximum:
            return self.maximum, True
        return ttl, False

    def alive(self, now):
        return {rid for rid, r in self.records.items()
                if rid not in self.purged and (r["expires"] is None or r["expires"] > now)}


def _scenario(tmp_path, seed: int, steps: int) -> dict:
    rng = random.Random(seed)
    default, maximum = CONFIGS[seed % len(CONFIGS)]
    clock = Clock()
    path = str(tmp_path / f"ttl{seed}.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(dim=16), search_strategy=SearchStrategy.HYBRID,
                              memory_retention_config=MemoryRetentionConfig(default, maximum), clock=clock)
    model = Model(default, maximum)
    stats = {"checks": 0, "purged": 0, "revived": 0, "refused": 0, "clamped": 0}
    n = 0
    for step in range(steps):
        # -- writes
        for _ in range(rng.randint(1, 4)):
            n += 1
            rid = f"r{n}"
            rtype = rng.choice(["message", "memory", "fact"])
            ttl = rng.choice([OMIT, None, 0, 1, 2, 3, 10])
            anchor = rng.choice([OMIT, TimeToLiveAnchor.CREATED_AT, TimeToLiveAnchor.TIMESTAMP])
            ts = clock.now + timedelta(hours=rng.randint(-96, 96))
            days, clamps = model.days(ttl)
            kwargs = {}
            if ttl is not OMIT:
                kwargs["ttl_days"] = ttl
            if anchor is not OMIT:
                kwargs["ttl_anchor"] = anchor
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                store.add([f"word{n} common"], rtype, record_ids=rid, thread_ids=f"t{n % 3}", timestamps=ts.isoformat(),
                          roles="user" if rtype == "message" else None, **kwargs)
            warned = any(issubclass(w.category, UserWarning) and "max_ttl_days" in str(w.message) for w in caught)
            assert warned == clamps, f"clamp warning for ttl_days={ttl} max={maximum}: {warned}"
            stats["clamped"] += clamps
            start = ts if anchor is TimeToLiveAnchor.TIMESTAMP else clock.now
            expires = None if days is None else start + timedelta(days=days)
            model.records[rid] = dict(type=rtype, thread=f"t{n % 3}", expires=expires, created=clock.now, ts=ts)
        # -- time passes
        clock.now += timedelta(hours=rng.choice([0, 1, 7, 23, 24, 30, 49]))
        # -- revive or refuse an expired, unpurged record (SC-5.6 / SC-7.1)
        expired = sorted(rid for rid, r in model.records.items()
                         if rid not in model.purged and r["expires"] is not None and r["expires"] <= clock.now)
        if expired and rng.random() < 0.5:
            rid = rng.choice(expired)
            assert store.update(model.records[rid]["type"], rid, text=f"word{rid[1:]} common again") == 0
            stats["refused"] += 1
            new_days = rng.choice([1, 2, 5, None])
            days, _ = model.days(new_days)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert store.update(model.records[rid]["type"], rid, ttl_days=new_days) == 1
            r = model.records[rid]
            r["expires"] = None if days is None else r["created"] + timedelta(days=days)
            stats["revived"] += r["expires"] is None or r["expires"] > clock.now
        # -- every read path agrees with the model
        _check_reads(store, model, clock.now)
        stats["checks"] += 1
        if rng.random() < 0.3:
            gone = model.alive(clock.now) ^ (set(model.records) - model.purged)
            assert store.purge_expired() == len(gone)
            model.purged |= gone
            stats["purged"] += len(gone)
            _check_purged(path, model)
    store.close()
    return stats


def _check_reads(store, model, now) -> None:
    alive = model.alive(now)
    for rid, r in model.records.items():
        got = store.get(r["type"], rid)
        if rid in alive:
            assert got is not None, f"{rid} alive (expires {r['expires']}, now {now}) but get() returned None"
            assert _parse(got.expires_at) == r["expires"], (rid, got.expires_at, r["expires"])
        else:
            assert got is None, f"{rid} expired at {r['expires']} (now {now}) but get() returned it"
    for rtype in ("message", "memory", "fact"):
        listed = {x.id for x in store.list(rtype, limit=None)}
        assert listed == {rid for rid in alive if model.records[rid]["type"] == rtype}, rtype
    for thread in ("t0", "t1", "t2"):
        msgs = [x.id for x in store.list_thread_messages(thread)]
        want = [rid for rid in sorted(alive, key=lambda x: int(x[1:]))
                if model.records[rid]["type"] == "message" and model.records[rid]["thread"] == thread]
        assert msgs == want, thread
    for strategy in (SearchStrategy.VECTOR, SearchStrategy.KEYWORD, SearchStrategy.HYBRID):
        hits = {x.id for x, _ in store.search("common", k=len(model.records) + 5, strategy=strategy)}
        assert hits == alive, f"{strategy.value}: expired returned {hits - alive}, alive missing {alive - hits}"


def _check_purged(path, model) -> None:
    ids = assert_no_orphans(path)
    present = {rid for (_, rid) in ids["records"] if not rid.startswith("t")}
    assert not (present & model.purged), f"purged records still stored: {present & model.purged}"
    t = table_names()
    conn = raw_connect(path)
    try:
        chunk_owners = {rid for (rid,) in conn.execute(
            f"SELECT r.id FROM {t.chunks} c JOIN {t.records} r ON r.seq = c.record_seq")}
    finally:
        conn.close()
    assert chunk_owners == present, "retrieval rows do not match the stored records after purge"
    assert ids["fts"] == set(ids["chunks"])


def test_ttl_model(sqlite_only, tmp_path):
    totals = {}
    for seed in range(len(CONFIGS)):
        for k, v in _scenario(tmp_path, seed, 12).items():
            totals[k] = totals.get(k, 0) + v
    print(f"ttl: {totals}")
    assert totals["purged"] > 0 and totals["revived"] > 0 and totals["clamped"] > 0


@pytest.mark.slow
def test_ttl_model_slow(sqlite_only, tmp_path):
    totals = {}
    for seed in range(40):
        for k, v in _scenario(tmp_path, seed, 40).items():
            totals[k] = totals.get(k, 0) + v
    print(f"ttl (slow): {totals}")


def test_open_purges_expired_rows(sqlite_only, tmp_path):
    """SC-5.5: opening the store runs the purge; raw rows and retrieval rows go."""
    clock = Clock()
    path = str(tmp_path / "open.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(dim=16), search_strategy="hybrid", clock=clock)
    store.add(["short lived words"] * 3, "memory", record_ids=["a", "b", "c"], ttl_days=[1, 2, None])
    store.close()
    clock.now += timedelta(days=1, seconds=1)
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(dim=16), search_strategy="hybrid", clock=clock)
    ids = assert_no_orphans(path)
    assert {rid for (_, rid) in ids["records"]} == {"b", "c"}
    assert len(ids["chunks"]) == 2 and ids["fts"] == set(ids["chunks"])
    assert store.purge_expired() == 0
    store.close()


def test_timestamp_anchor_in_the_past_is_expired_at_once(sqlite_only, tmp_path):
    clock = Clock()
    store = SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashEmbedder(dim=16), clock=clock)
    store.add(["old news"], "memory", record_ids="old", timestamps="2000-01-01T00:00:00Z", ttl_days=1,
              ttl_anchor="timestamp")
    assert store.get("memory", "old") is None
    assert store.search("old news", k=5) == []
    assert store.purge_expired() == 1
    # ttl_days=0 expires at its anchor: invisible immediately
    store.add(["zero"], "memory", record_ids="zero", ttl_days=0)
    assert store.get("memory", "zero") is None and store.list("memory", limit=None) == []
    store.close()
