"""``search(max_distance=...)``: a vector search leaves out records farther than the bound,
so its answer is the search's answer without it, cut where the distance exceeds the bound
(nearest first, the records within it are a prefix), ties at the bound kept; the engine cuts
before it reads the records; a keyword or hybrid search refuses it, from Python and the CLI;
user B's bounded search never returns user A's records in a shared thread and agent."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.errors import ArgumentError, ArgumentTypeError

DIM = 8


def _vec(angle: float) -> list[float]:
    v = [0.0] * DIM
    v[0], v[1] = math.cos(angle), math.sin(angle)
    return v


@pytest.fixture
def store(tmp_path):
    """40 records at 10 angles from the query (4 per angle: exact ties), alice's and bob's in
    one thread and agent, ids not in distance order."""
    st = SQLiteMemoryStore(str(tmp_path / "m.db"), vector_dim=DIM, search_strategy="hybrid")
    n = 40
    st.add([f"note {i}" for i in range(n)], "memory", record_ids=[f"r{(i * 17) % n:02d}" for i in range(n)],
           embeddings=[_vec(0.15 * (i % 10)) for i in range(n)], user_ids=["alice" if i % 2 else "bob" for i in range(n)],
           thread_ids="shared", agent_ids="ag")
    yield st
    st.close()


QUERY = _vec(0.0)


def test_the_bounded_answer_is_the_unbounded_one_cut_at_the_bound(store):
    full = store.search(query_vector=QUERY, k=40, strategy="vector")
    distances = sorted({d for _, d in full})
    assert len(distances) == 10 and len(full) == 40
    for bound in [0.0, distances[2], (distances[2] + distances[3]) / 2, distances[-1], 2.0]:
        for k in (1, 3, 6, 40):
            got = store.search(query_vector=QUERY, k=k, strategy="vector", max_distance=bound)
            want = [(r.id, d) for r, d in store.search(query_vector=QUERY, k=k, strategy="vector") if d <= bound]
            assert [(r.id, d) for r, d in got] == want, (bound, k)
            assert all(d <= bound for _, d in got)
    # a bound equal to a distance keeps the whole tie group at it (k allowing)
    at = store.search(query_vector=QUERY, k=40, strategy="vector", max_distance=distances[2])
    assert [d for _, d in at].count(distances[2]) == 4 and len(at) == 12


def test_the_engine_reads_no_record_beyond_the_bound(store, decoded_ids):
    near = store.search(query_vector=QUERY, k=40, strategy="vector", max_distance=0.02)
    assert len(near) == 8 and sorted(decoded_ids) == sorted(r.id for r, _ in near)  # the two nearest angles, 4 each


def test_keyword_and_hybrid_refuse_it_and_bad_values_are_refused(store):
    for strategy in ("keyword", "hybrid", None):
        with pytest.raises(ArgumentError, match="strategy='vector'"):
            store.search("note", k=3, strategy=strategy, max_distance=0.5)
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ArgumentError, match="max_distance"):
            store.search(query_vector=QUERY, k=3, strategy="vector", max_distance=bad)
    for bad in (True, "0.5", [0.5]):
        with pytest.raises(ArgumentTypeError, match="max_distance"):
            store.search(query_vector=QUERY, k=3, strategy="vector", max_distance=bad)
    assert len(store.search(query_vector=QUERY, k=3, strategy="vector", max_distance=np.float32(0.5))) == 3


def test_user_b_never_gets_user_a_records(store):
    for bound in (0.0, 0.3, 2.0):
        for extra in ({}, {"thread_id": "shared"}, {"agent_id": "ag"}):
            hits = store.search(query_vector=QUERY, k=40, strategy="vector", user_id="bob", max_distance=bound, **extra)
            assert hits and all(r.user_id == "bob" for r, _ in hits), (bound, extra)
    alice = store.search(query_vector=QUERY, k=40, strategy="vector", user_id="alice", max_distance=2.0)
    assert len(alice) == 20 and all(r.user_id == "alice" for r, _ in alice)


def test_the_async_twin_and_the_cli(store, tmp_path):
    sync = store.search(query_vector=QUERY, k=40, strategy="vector", max_distance=0.1)
    got = asyncio.run(store.search_async(query_vector=QUERY, k=40, strategy="vector", max_distance=0.1))
    assert [(r.id, d) for r, d in got] == [(r.id, d) for r, d in sync]
    path = str(tmp_path / "cli.db")
    with SQLiteMemoryStore(path, vector_dim=DIM, search_strategy="hybrid") as st:
        st.add(["alpha"], "memory", record_ids=["a"], embeddings=[_vec(0.0)])
    runner = CliRunner()
    refused = runner.invoke(cli, ["--db", path, "search", "alpha", "--max-distance", "0.5"])
    assert refused.exit_code == 2 and "add --strategy vector or drop --max-distance" in refused.output
    negative = runner.invoke(cli, ["--db", path, "search", "alpha", "--strategy", "vector", "--max-distance", "-1"])
    assert negative.exit_code == 2 and "--max-distance" in negative.output


def test_rows_beyond_the_bound_are_dropped_before_rescoring_and_the_answer_is_exact(tmp_path, monkeypatch):
    """The cache drops rows whose float32 distance exceeds the bound by more than the
    product's error bound before its exact rescoring; the answer is still the unbounded one
    cut at the bound, at bounds equal to a record's exact distance too, with every filter path
    (none, an in-memory mask, the lazy SQL check), for alice and bob in one thread."""
    from oramem.sqlite.vectors import VectorCache

    dim, n = 384, 600
    rng = np.random.default_rng(11)
    base = rng.normal(size=dim)
    vectors = [(base * rng.uniform(0.0, 3.0) + rng.normal(size=dim)).tolist() for _ in range(n)]
    st = SQLiteMemoryStore(str(tmp_path / "b.db"), vector_dim=dim)
    st.add([f"t{i}" for i in range(n)], "memory", record_ids=[f"r{i:03d}" for i in range(n)], embeddings=vectors,
           user_ids=["alice" if i % 2 else "bob" for i in range(n)], thread_ids="shared", agent_ids="ag",
           metadata=[{"topic": "ab"[i % 3 == 0], "n": i % 7} for i in range(n)])
    rescored: list = []
    real = VectorCache._exact
    monkeypatch.setattr(VectorCache, "_exact", lambda self, q, rows: rescored.append(rows.size) or real(self, q, rows))
    query = base.tolist()
    try:
        for scope in ({}, {"user_id": "bob"}):
            for flt in (None, {"topic": "a"}, {"n": {"$gte": 5}}):
                full = st.search(query_vector=query, k=n, strategy="vector", metadata_filter=flt, **scope)
                exact = sorted({d for _, d in full})
                for bound in (exact[0], exact[3], exact[len(exact) // 2], exact[len(exact) // 2] - 1e-9, exact[-1], 0.0):
                    for k in (1, 10, n):
                        for _ in range(2):  # the first ask of a filter's keys goes through SQL, then a kept mask
                            got = st.search(query_vector=query, k=k, strategy="vector", metadata_filter=flt,
                                            max_distance=bound, **scope)
                            want = [(r.id, d) for r, d in st.search(query_vector=query, k=k, strategy="vector",
                                                                      metadata_filter=flt, **scope) if d <= bound]
                            assert [(r.id, d) for r, d in got] == want, (scope, flt, bound, k)
                            if scope:
                                assert all(r.user_id == "bob" for r, _ in got)
        # far from everything: nothing is rescored at all
        rescored.clear()
        assert st.search(query_vector=(-base).tolist(), k=10, strategy="vector", max_distance=0.05) == []
        assert sum(rescored) == 0
        # a bound that keeps a few records rescores about those, not the k nearest
        rescored.clear()
        few = st.search(query_vector=query, k=200, strategy="vector", max_distance=exact[4])
        assert 5 <= len(few) <= sum(rescored) < 200
    finally:
        st.close()
