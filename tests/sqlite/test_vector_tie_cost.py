"""Vector searches whose k-th record ties with many others (SC-6.1: ties are broken by
record type, then id, exactly): the answer is the first k of the full ordering, for every
user of a shared agent and thread, while the search reads only the k records it returns
and rescores the tied rows without temporaries proportional to the tie group
(bench/results/knowledge_speed.md, round f)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from oramem import SQLiteMemoryStore

DIM = 8


def _unit(i: int) -> list[float]:
    vec = [0.0] * DIM
    vec[i] = 1.0
    return vec


def _shared_store(path: str) -> SQLiteMemoryStore:
    """Agent ``ag``, thread ``t1``: 300 facts (the majority type) and 90 messages, of alice,
    bob or shared (no ``who`` key), many messages with one same vector (exact ties) and many
    orthogonal to the query (distance exactly 1.0)."""
    store = SQLiteMemoryStore(path, vector_dim=DIM)
    rng = np.random.default_rng(7)
    owners = ["alice", "bob", None]
    fact_vectors = rng.normal(size=(300, DIM)).astype(np.float32)
    store.add([f"fact {i}" for i in range(300)], "fact", record_ids=[f"f{i:03d}" for i in range(300)],
              embeddings=[v.tolist() for v in fact_vectors], agent_ids="ag",
              user_ids=[owners[i % 3] for i in range(300)],
              metadata=[{"who": owners[i % 3]} if owners[i % 3] else {"kind": "shared"} for i in range(300)])
    vectors = []
    for i in range(90):
        if i % 3 == 0:
            vectors.append([0.6, 0.8] + [0.0] * (DIM - 2))  # one vector: exact ties
        elif i % 3 == 1:
            vectors.append(_unit(5))  # orthogonal to the query: distance 1.0
        else:
            vectors.append(rng.normal(size=DIM).astype(np.float32).tolist())
    # ids not in insertion order, so the tie-break by id is not the seq order
    ids = [f"m{(i * 37) % 90:02d}" for i in range(90)]
    store.add([f"message {i}" for i in range(90)], "message", record_ids=ids, embeddings=vectors,
              thread_ids="t1", agent_ids="ag", user_ids=[owners[(i // 3) % 3] for i in range(90)], roles="user",
              metadata=[{"who": owners[(i // 3) % 3]} if owners[(i // 3) % 3] else {"kind": "shared"} for i in range(90)])
    return store


def _scoped(user: str) -> dict:
    return {"$or": [{"who": {"$exists": False}}, {"who": user}]}


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_typed_search_with_ties_is_the_prefix_of_the_full_ordering(tmp_path, user):
    store = _shared_store(str(tmp_path / "s.db"))
    query = [1.0, 0.0] + [0.0] * (DIM - 2)
    other = "bob" if user == "alice" else "alice"
    for _ in range(2):  # the filter in SQL first, then (its key asked before) as a cached mask
        for record_types, metadata_filter, scope in (
            (["message"], _scoped(user), {"agent_id": "ag"}),
            (["message"], None, {"agent_id": "ag", "thread_id": "t1", "user_id": user}),
            (["message", "fact"], _scoped(user), {"agent_id": "ag"}),
        ):
            full = store.search(query_vector=query, k=1000, record_types=record_types,
                                metadata_filter=metadata_filter, **scope)
            keys = [(d, r.record_type, r.id) for r, d in full]
            assert keys == sorted(keys)
            assert all((r.metadata or {}).get("who") in (None, user) for r, _ in full)
            assert not [r for r, _ in full if r.user_id == other]
            distances = [d for _, d in full]
            # k inside each of the two tie groups (distance ~0.4 and 1.0), and a few others
            near = min(d for d in distances if distances.count(d) > 1)
            inside = [distances.index(near) + 2, distances.index(1.0) + 1, distances.index(1.0) + 3]
            assert all(distances[k - 1] == distances[k] for k in inside)
            for k in sorted({1, 5, 10, 30, len(full), *inside}):
                got = store.search(query_vector=query, k=k, record_types=record_types,
                                   metadata_filter=metadata_filter, **scope)
                assert [(r.record_type, r.id, d) for r, d in got] == [(r.record_type, r.id, d) for r, d in full[:k]]
    store.close()


def test_a_tie_group_larger_than_k_reads_only_k_records(tmp_path, decoded_ids):
    """60 messages at the same distance, k=5: the 5 by (type, id) are read and decoded, not
    all 60 (main decoded every tied record)."""
    store = SQLiteMemoryStore(str(tmp_path / "t.db"), vector_dim=DIM)
    store.add([f"m {i}" for i in range(60)], "message", record_ids=[f"m{(i * 7) % 60:02d}" for i in range(60)],
              embeddings=[_unit(3)] * 60, thread_ids="t1", roles="user")
    store.add(["near"], "message", record_ids=["near"], embeddings=[_unit(0)], thread_ids="t1", roles="user")
    decoded = decoded_ids
    got = store.search(query_vector=_unit(0), k=5, record_types=["message"])
    assert [(r.id, d) for r, d in got] == [("near", 0.0), ("m00", 1.0), ("m01", 1.0), ("m02", 1.0), ("m03", 1.0)]
    assert sorted(decoded) == ["m00", "m01", "m02", "m03", "near"]
    store.close()


def test_rescoring_a_large_tie_group_allocates_no_tie_sized_temporaries(tmp_path):
    """3,000 rows x 384 tied at the cut are rescored in float64: main built two 9 MB
    temporaries (the rows widened to float64, then their products) per search."""
    dim = 384
    store = SQLiteMemoryStore(str(tmp_path / "m.db"), vector_dim=dim)
    same = [1.0] + [0.0] * (dim - 1)
    store.add([f"m {i}" for i in range(3000)], "memory", record_ids=[f"r{i:04d}" for i in range(3000)],
              embeddings=[same] * 3000)
    query = [1.0, 1.0] + [0.0] * (dim - 2)
    first = store.search(query_vector=query, k=3)  # loads the cache
    tracemalloc.start()
    try:
        got = store.search(query_vector=query, k=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(r.id, d) for r, d in got] == [(r.id, d) for r, d in first]
    assert [r.id for r, _ in got] == ["r0000", "r0001", "r0002"]
    assert peak < 4 * 2**20, f"peak {peak} bytes"  # ~1.1 MB here; main: 18.6 MB
    store.close()
