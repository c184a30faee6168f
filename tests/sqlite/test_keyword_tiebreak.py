"""The keyword query's ranked output is the one of the query before issue 26 (SC-6.1 order:
best bm25 per record, then record type, then id), on a store where most scores tie, under
scopes, metadata filters, record types, TTL and records with several retrieval rows; and
user B never gets user A's records."""

from __future__ import annotations

import random

import pytest

from oramem.requests import ScopeMatch
from oramem.sqlite import engine as engine_module
from oramem.sqlite.engine import SQLiteEngine
from oramem.sqlite.keyword import LEGACY_LANGUAGE, keyword_distance, match_expression

WORDS = ["otter", "river", "stone"]
TYPES = ["memory", "fact", "preference", "guideline"]
USERS = ["alice", "bob", None]
THREADS = ["t1", "t2", None]
AGENTS = ["a1", None]


def _old_keyword(self, conn, t, where, metadata, request, needed, catalog):
    """The keyword query of main before this change (cd97b2c), verbatim: the reference order.
    (The engine now passes the metadata filter's predicate apart; here it joins the others.)"""
    if metadata is not None:
        where = where.copy()
        where.parts += metadata.parts
        where.params.update(metadata.params)
    language = catalog.keyword_language or LEGACY_LANGUAGE
    scopes = [
        (name, scope.value if scope.match == ScopeMatch.EQUALS else None)
        for name, scope in (("thread", request.thread), ("user", request.user), ("agent", request.agent))
        if scope.match != ScopeMatch.ANY
    ]
    match = match_expression(request.query_text or "", language, scopes, catalog.scoped_fts)
    if match is None:
        return []
    rank = f"bm25({t.fts}, 1.0, 0.0)" if catalog.scoped_fts else f"bm25({t.fts})"
    window = min(max(self._KEYWORD_WINDOW * needed, self._KEYWORD_WINDOW_MIN), engine_module._SQL_MAX_LIMIT // 16)
    sql = (
        f"WITH s AS MATERIALIZED (SELECT rowid AS chunk_id, {rank} AS score FROM {t.fts} "
        f"WHERE {t.fts} MATCH :oramem_match), "
        "e AS (SELECT score FROM s ORDER BY score LIMIT 1 OFFSET :oramem_window - 1), "
        "m AS MATERIALIZED (SELECT * FROM s WHERE NOT EXISTS (SELECT 1 FROM e) OR score <= (SELECT score FROM e)) "
        "SELECT NULL, count(*), (SELECT count(*) FROM e), NULL, NULL FROM m UNION ALL "
        "SELECT * FROM (SELECT c.record_seq, min(m.score) AS best, NULL, r.record_type, r.id FROM m "
        f"CROSS JOIN {t.chunks} c ON c.chunk_id = m.chunk_id CROSS JOIN {t.records} r ON r.seq = c.record_seq "
        f"WHERE {where.sql()} GROUP BY c.record_seq ORDER BY best, r.record_type, r.id LIMIT :oramem_limit)"
    )
    params = {**where.params, "oramem_match": match, "oramem_limit": min(needed, engine_module._SQL_MAX_LIMIT)}
    for size in (window, 16 * window, engine_module._SQL_MAX_LIMIT):
        params["oramem_window"] = size
        rows = conn.execute(sql, params).fetchall()
        edge_found = next(row[2] for row in rows if row[0] is None)
        hits = [row for row in rows if row[0] is not None]
        if not edge_found or len(hits) >= needed:
            break
    hits.sort(key=lambda row: (row[1], row[3], row[4]))
    return [(seq, keyword_distance(score)) for seq, score, *_ in hits[:needed]]


def _fill(store, rng: random.Random, n: int = 400) -> dict:
    """Few distinct texts (most bm25 scores tie), ids in an order unrelated to insertion,
    several types, some records with two or three retrieval rows, every scope combination."""
    owners = {}
    ids = [f"{rng.randrange(10**6):06d}-{i}" for i in range(n)]
    rng.shuffle(ids)
    texts = ["otter river", "otter", "river stone", "stone otter river", "otter otter"]
    for i, rid in enumerate(ids):
        rows = [rng.choice(texts)] if i % 4 else [rng.choice(texts) for _ in range(rng.randint(2, 3))]
        user = rng.choice(USERS)
        rtype = TYPES[i % len(TYPES)]
        store.add([f"record {rid}"], record_type=rtype, record_ids=[rid], index_texts=[rows],
                  thread_ids=[rng.choice(THREADS)], user_ids=[user], agent_ids=[rng.choice(AGENTS)],
                  metadata=[{"topic": rng.choice("ab")}], ttl_days=[1 if i % 9 == 0 else None])
        owners[(rtype, rid)] = user
    return owners


def _kwargs(thread, user, agent, topic):
    kwargs = {}
    for name, value in (("thread", thread), ("user", user), ("agent", agent)):
        if value != "any":
            kwargs[f"{name}_id"] = value
            if value is None:
                kwargs[f"exact_{name}_match"] = True
    if topic is not None:
        kwargs["metadata_filter"] = {"topic": topic}
    return kwargs


@pytest.mark.parametrize("rows_factor", [1, 2, 8], ids=["rows-1x", "rows-2x", "rows-8x"])
@pytest.mark.parametrize("window", [(2, 16), (1, 1)], ids=["default-window", "tiny-window"])
def test_keyword_order_equals_the_old_query(make, clock, monkeypatch, rows_factor, window):
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_WINDOW", window[0])
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_WINDOW_MIN", window[1])
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_ROWS", rows_factor)
    store = make(memory_store_id="KT", search_strategy="keyword", vector_dim=None)
    rng = random.Random(26)
    _fill(store, rng)
    clock.advance(days=2)  # records with a 1-day TTL are expired, not purged
    new_keyword = SQLiteEngine._keyword
    compared = ties = 0
    for trial in range(80):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 2)))
        kwargs = _kwargs(rng.choice(THREADS + ["any"] * 2), rng.choice(USERS + ["any"] * 2),
                         rng.choice(AGENTS + ["any"]), rng.choice(["a", "b", None]))
        types = set(rng.sample(TYPES, rng.randint(1, len(TYPES))))
        for k in (1, 2, 5, 10, 33, 1000):
            monkeypatch.setattr(SQLiteEngine, "_keyword", new_keyword)
            got = store.search(query, k=k, strategy="keyword", record_types=types, **kwargs)
            monkeypatch.setattr(SQLiteEngine, "_keyword", _old_keyword)
            want = store.search(query, k=k, strategy="keyword", record_types=types, **kwargs)
            assert [(r.record_type, r.id, d) for r, d in got] == [(r.record_type, r.id, d) for r, d in want], \
                (trial, query, kwargs, types, k)
            compared += 1
            distances = [d for _, d in want]
            ties += len(distances) != len(set(distances))
    assert compared == 480 and ties > 300  # the comparison ran where ties decide the order


def test_user_b_never_gets_user_a_records(make):
    store = make(memory_store_id="KT", search_strategy="keyword", vector_dim=None)
    owners = _fill(store, random.Random(5))
    store.add(["alice's secret otter"], record_type="memory", record_ids=["alice-only"], user_ids="alice",
              thread_ids="shared", agent_ids="a1")
    store.add(["bob's otter"], record_type="memory", record_ids=["bob-only"], user_ids="bob",
              thread_ids="shared", agent_ids="a1")
    owners[("memory", "alice-only")], owners[("memory", "bob-only")] = "alice", "bob"
    for query in ("otter", "secret", "river stone otter"):
        for extra in ({}, {"thread_id": "shared"}, {"agent_id": "a1"}, {"metadata_filter": {"topic": "a"}}):
            hits = store.search(query, k=1000, strategy="keyword", user_id="bob", **extra)
            assert all(owners[(r.record_type, r.id)] == "bob" for r, _ in hits), (query, extra)
            assert ("memory", "alice-only") not in {(r.record_type, r.id) for r, _ in hits}
    # a shared thread or agent does not widen the user scope
    assert [r.id for r, _ in store.search("secret", k=10, strategy="keyword", user_id="bob", thread_id="shared")] == []
    assert [r.id for r, _ in store.search("secret", k=10, strategy="keyword", user_id="alice")] == ["alice-only"]


@pytest.mark.parametrize("rows_factor", [1, 2], ids=["rows-1x", "rows-2x"])
def test_a_metadata_filter_that_rejects_the_first_tied_records(make, monkeypatch, rows_factor):
    """The metadata filter is asked about the records of the rows read, in order. When the
    records that come first in a large tie group fail it (here the first 300 by id), the
    search reads on until it has k records that pass: the same answer as the query that
    filtered every row in SQL, and as the order SC-6.1 gives (all tie, so by id)."""
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_ROWS", rows_factor)
    store = make(memory_store_id="KT", search_strategy="keyword", vector_dim=None)
    ids = [f"r{i:04d}" for i in range(600)]
    store.add(["otter river"] * 600, record_type="memory", record_ids=ids, user_ids=["alice"] * 300 + ["bob"] * 300,
              thread_ids="shared", agent_ids="a1", metadata=[{"topic": "hidden" if i < 300 else "kept"} for i in range(600)])
    new_keyword = SQLiteEngine._keyword
    for k in (1, 5, 50, 400):
        for kwargs in ({"metadata_filter": {"topic": "kept"}}, {"metadata_filter": {"topic": {"$ne": "hidden"}}},
                       {"metadata_filter": {"topic": "kept"}, "thread_id": "shared"}):
            monkeypatch.setattr(SQLiteEngine, "_keyword", new_keyword)
            got = store.search("otter", k=k, strategy="keyword", **kwargs)
            monkeypatch.setattr(SQLiteEngine, "_keyword", _old_keyword)
            want = store.search("otter", k=k, strategy="keyword", **kwargs)
            assert [(r.id, d) for r, d in got] == [(r.id, d) for r, d in want]
            assert [r.id for r, _ in got] == ids[300 : 300 + min(k, 300)]
    monkeypatch.setattr(SQLiteEngine, "_keyword", new_keyword)
    # user B in the shared thread and agent, with a filter every record of A passes: only B's
    hits = store.search("otter", k=50, strategy="keyword", user_id="bob", metadata_filter={"topic": {"$exists": True}})
    assert [r.id for r, _ in hits] == ids[300:350]
    # user A with a filter only B's records pass: nothing, not B's records
    assert store.search("otter", k=50, strategy="keyword", user_id="alice", metadata_filter={"topic": "kept"}) == []
