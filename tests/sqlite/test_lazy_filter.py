"""Metadata-filtered vector search asks SQL about growing windows of nearest candidates
instead of filtering every record first; the answer must equal "filter, then top-k"
(SC-6.5) for every selectivity, including the fallback to one full SQL filter."""

from __future__ import annotations

import numpy as np
import pytest

from oramem import SQLiteMemoryStore


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(11)
    n, dim = 3000, 16
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    buckets = [int(x) for x in rng.integers(0, 1000, size=n)]
    store = SQLiteMemoryStore(str(tmp_path_factory.mktemp("lazy") / "s.db"), vector_dim=dim)
    store.add(
        [f"r{i}" for i in range(n)],
        "memory",
        record_ids=[f"r{i:04d}" for i in range(n)],
        embeddings=[v.tolist() for v in vectors],
        metadata=[{"bucket": b, "even": b % 2 == 0, "odd": b % 2 == 1, "b2": b} for b in buckets],
    )
    yield store, vectors, buckets
    store.close()


def brute_force(vectors, keep, query, k):
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = query / np.linalg.norm(query)
    dist = 1.0 - unit.astype(np.float64) @ q.astype(np.float64)
    idx = [i for i in np.argsort(dist, kind="stable") if keep[i]][:k]
    return [f"r{i:04d}" for i in idx], [float(dist[i]) for i in idx]


@pytest.mark.parametrize(
    "flt, pred",
    [
        ({"even": True}, lambda b: b % 2 == 0),  # ~50 %: answered from the first windows
        ({"bucket": {"$lt": 100}}, lambda b: b < 100),  # ~10 %
        ({"bucket": {"$in": [1, 2, 3]}}, lambda b: b in (1, 2, 3)),  # ~0.3 %: falls back to one SQL filter
        ({"bucket": -1}, lambda b: False),  # nothing matches
    ],
)
def test_filtered_search_equals_filter_then_top_k(corpus, flt, pred):
    store, vectors, buckets = corpus
    keep = [pred(b) for b in buckets]
    rng = np.random.default_rng(5)
    for _ in range(5):
        query = rng.normal(size=vectors.shape[1]).astype(np.float32)
        for k in (1, 10, 40):
            got = store.search(query_vector=query.tolist(), k=k, metadata_filter=flt)
            ids, dists = brute_force(vectors, keep, query, k)
            assert [r.id for r, _ in got] == ids
            assert np.allclose([d for _, d in got], dists, atol=1e-6)


def test_permissive_filter_checks_only_a_window(corpus):
    """The first search on a key ("odd" is used by no other test of this module) asks SQL
    about windows of candidates only."""
    store, vectors, _ = corpus
    conn = store._engine._db.conn  # the engine's connection: count the window queries
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        store.search(query_vector=vectors[0].tolist(), k=5, metadata_filter={"odd": True})
    finally:
        conn.set_trace_callback(None)
    marker = "r.seq IN (SELECT value FROM json_each("
    window_queries = [s for s in statements if s.lstrip().startswith("SELECT r.seq FROM") and marker in s]
    full_scans = [s for s in statements if s.lstrip().startswith("SELECT r.seq FROM") and marker not in s]
    assert window_queries, "the lazy window path was not used"
    assert not full_scans


def test_repeated_key_is_filtered_in_memory(corpus):
    """From the second search on a key ("b2": no other test uses it) the filter is a mask
    over cached typed columns: one column read per key, then no per-record SQL at all, and
    the answer is still "filter, then top-k"."""
    store, vectors, buckets = corpus
    conn = store._engine._db.conn
    flt = {"$or": [{"b2": {"$gte": 990}}, {"b2": {"$in": [5, 6]}}], "b2": {"$ne": 999}}
    keep = [(b >= 990 or b in (5, 6)) and b != 999 for b in buckets]
    store.search(query_vector=vectors[1].tolist(), k=3, metadata_filter=flt)  # first ask: SQL windows
    rng = np.random.default_rng(9)
    for round_ in range(3):
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            query = rng.normal(size=vectors.shape[1]).astype(np.float32)
            got = store.search(query_vector=query.tolist(), k=7, metadata_filter=flt)
        finally:
            conn.set_trace_callback(None)
        ids, dists = brute_force(vectors, keep, query, 7)
        assert [r.id for r, _ in got] == ids
        assert np.allclose([d for _, d in got], dists, atol=1e-6)
        per_record = [s for s in statements if s.lstrip().startswith("SELECT r.seq FROM") and "json_each" in s]
        columns = [s for s in statements if "json_extract(r.metadata" in s]
        assert not per_record
        assert len(columns) == (1 if round_ == 0 else 0)


@pytest.fixture(scope="module")
def text_corpus(tmp_path_factory):
    rng = np.random.default_rng(7)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    n = 2500
    texts = [" ".join(["common"] + list(rng.choice(words, size=int(rng.integers(1, 6))))) for _ in range(n)]
    buckets = [int(x) for x in rng.integers(0, 100, size=n)]
    store = SQLiteMemoryStore(str(tmp_path_factory.mktemp("kw") / "s.db"), search_strategy="keyword")
    store.add(texts, "memory", record_ids=[f"k{i:04d}" for i in range(n)], metadata=[{"b": b} for b in buckets])
    yield store, buckets
    store.close()


@pytest.mark.parametrize("pred_filter", [{"b": {"$lt": 50}}, {"b": {"$lt": 3}}, {"b": 7}, {"b": -1}])
@pytest.mark.parametrize("query", ["common", "alpha omega", "kappa"])
def test_filtered_keyword_search_equals_filter_then_top_k(text_corpus, pred_filter, query):
    """The keyword window grows until the k best passing records are certain; the answer
    equals the full unfiltered ranking filtered afterwards (bm25 does not depend on the
    filter), for permissive and very selective filters alike."""
    store, buckets = text_corpus
    full = store.search(query, k=len(buckets))
    allowed = {r.id for r in store.list("memory", limit=None, metadata_filter=pred_filter)}
    for k in (1, 10, 60):
        expected = [(r.id, d) for r, d in full if r.id in allowed][:k]
        got = [(r.id, d) for r, d in store.search(query, k=k, metadata_filter=pred_filter)]
        assert [i for i, _ in got] == [i for i, _ in expected]
        assert np.allclose([d for _, d in got], [d for _, d in expected])


def test_selective_filter_inside_a_scope_is_evaluated_on_the_scope_only(tmp_path):
    """A selective filter in a narrow scope falls back to one SQL filter over the records
    the scope left (by primary key), not over the whole store: same answer as brute force,
    and the SQL names only the scope's records."""
    rng = np.random.default_rng(3)
    n, dim = 2000, 8
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    users = [f"u{i % 10}" for i in range(n)]
    buckets = [int(x) for x in rng.integers(0, 200, size=n)]
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), vector_dim=dim)
    store.add([f"r{i}" for i in range(n)], "memory", record_ids=[f"r{i:04d}" for i in range(n)],
              embeddings=[v.tolist() for v in vectors], user_ids=users, metadata=[{"b": b} for b in buckets])
    keep = [u == "u3" and b < 4 for u, b in zip(users, buckets)]
    statements: list[str] = []
    conn = store.engine.database.conn
    conn.set_trace_callback(statements.append)
    try:
        query = rng.normal(size=dim).astype(np.float32)
        got = store.search(query_vector=query.tolist(), k=5, user_id="u3", metadata_filter={"b": {"$lt": 4}})
    finally:
        conn.set_trace_callback(None)
    ids, dists = brute_force(vectors, keep, query, 5)
    assert [r.id for r, _ in got] == ids
    assert np.allclose([d for _, d in got], dists, atol=1e-6)
    by_key = "r.seq IN (SELECT value FROM json_each("
    full_scans = [s for s in statements if s.lstrip().startswith("SELECT r.seq FROM") and by_key not in s]
    assert not full_scans
    store.close()


def test_columns_follow_this_process_writes_without_a_full_rescan(tmp_path):
    """After a write the cached columns read only the records the write touched (added,
    updated, deleted), and masks still equal "filter, then top-k": new texts take their
    place in the sorted order, changed values replace old ones, deleted records drop out."""
    rng = np.random.default_rng(21)
    dim, n = 8, 400
    store = SQLiteMemoryStore(str(tmp_path / "grow.db"), vector_dim=dim)
    try:
        vecs = {f"g{i:04d}": rng.normal(size=dim).astype(np.float32) for i in range(n)}
        meta = {rid: {"day": f"2025-01-{1 + i % 28:02d}", "n": i % 7} for i, rid in enumerate(vecs)}
        store.add([rid for rid in vecs], "memory", record_ids=list(vecs), embeddings=[v.tolist() for v in vecs.values()],
                  metadata=[meta[rid] for rid in vecs])
        flt = {"day": {"$gte": "2025-01-15"}, "n": {"$ne": 3}}

        conn = store._engine._db.conn
        for round_ in range(4):
            if round_:
                # add records with texts before, between and after the known ones; update one; delete one
                new = {f"h{round_}{j}": rng.normal(size=dim).astype(np.float32) for j in range(3)}
                days = ["2024-12-31", f"2025-01-15T{round_:02d}", "2025-02-01"]
                store.add(list(new), "memory", record_ids=list(new), embeddings=[v.tolist() for v in new.values()],
                          metadata=[{"day": d, "n": round_} for d in days])
                vecs.update(new)
                meta.update({rid: {"day": d, "n": round_} for rid, d in zip(new, days)})
                victim = sorted(vecs)[round_ * 5]
                store.update("memory", victim, metadata={"day": "2025-03-01", "n": 1})
                meta[victim] = {"day": "2025-03-01", "n": 1}
                gone = sorted(vecs)[round_ * 7 + 1]
                store.delete("memory", gone)
                del vecs[gone], meta[gone]
            statements: list[str] = []
            conn.set_trace_callback(statements.append)
            try:
                for _ in range(2):
                    query = rng.normal(size=dim).astype(np.float32)
                    got = store.search(query_vector=query.tolist(), k=15, metadata_filter=flt)
                    ids = sorted(vecs)
                    keep = [meta[r]["day"] >= "2025-01-15" and meta[r]["n"] != 3 for r in ids]
                    unit = np.stack([vecs[r] for r in ids])
                    unit = unit / np.linalg.norm(unit, axis=1, keepdims=True)
                    dist = 1.0 - unit.astype(np.float64) @ (query / np.linalg.norm(query)).astype(np.float64)
                    want = [ids[i] for i in np.argsort(dist, kind="stable") if keep[i]][:15]
                    assert [r.id for r, _ in got] == want
            finally:
                conn.set_trace_callback(None)
            full = [s for s in statements if "json_extract(r.metadata" in s and "json_each" not in s]
            some = [s for s in statements if "json_extract(r.metadata" in s and "json_each" in s]
            if round_ >= 2:  # the columns exist (built in rounds 0-1): only the touched records are read
                assert not full
                assert len(some) == 1  # one read of both keys after the write
                assert '$."day"' in some[0] and '$."n"' in some[0]
    finally:
        store.close()
