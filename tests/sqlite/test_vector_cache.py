"""The in-process vector cache under churn: appends into spare capacity, dead rows of
updated/deleted records, compaction. Searches must equal a brute-force answer over the
store's current contents at every step."""

from __future__ import annotations

import numpy as np

from oramem import SQLiteMemoryStore


def brute(store_vectors: dict[str, np.ndarray], query: np.ndarray, k: int) -> list[str]:
    ids = sorted(store_vectors)
    mat = np.stack([store_vectors[i] for i in ids]).astype(np.float64)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    q = query.astype(np.float64) / np.linalg.norm(query)
    dist = 1.0 - mat @ q
    order = sorted(range(len(ids)), key=lambda i: (round(dist[i], 9), ids[i]))
    return [ids[i] for i in order[:k]]


def test_churn_keeps_search_exact_and_compacts(tmp_path):
    rng = np.random.default_rng(1)
    dim = 8
    store = SQLiteMemoryStore(str(tmp_path / "c.db"), vector_dim=dim)
    current: dict[str, np.ndarray] = {}
    next_id = 0
    for step in range(60):
        batch = {f"m{next_id + j:05d}": rng.normal(size=dim).astype(np.float32) for j in range(50)}
        next_id += 50
        store.add(list(batch), "memory", record_ids=list(batch), embeddings=[v.tolist() for v in batch.values()])
        current.update(batch)
        victims = rng.choice(sorted(current), size=30, replace=False)
        for rid in victims[:20]:
            assert store.delete("memory", str(rid)) == 1
            del current[str(rid)]
        for rid in victims[20:]:
            vec = rng.normal(size=dim).astype(np.float32)
            assert store.update("memory", str(rid), embedding=vec.tolist()) == 1
            current[str(rid)] = vec
        if step % 10 == 9:
            query = rng.normal(size=dim).astype(np.float32)
            got = [r.id for r, _ in store.search(query_vector=query.tolist(), k=15)]
            assert got == brute(current, query, 15)
    cache = store.engine._cache
    live = cache.seqs
    assert len(live) == len(current) == len(set(int(s) for s in live))
    # 1,200 rows were deleted or replaced: compaction must have run at least once
    assert cache.size < len(current) + 1200
    store.close()


def test_large_magnitude_vectors_keep_their_direction(tmp_path):
    """Cosine is scale-invariant: finite float32 vectors whose squared norm overflows
    float32 (components ~1e30) must still be normalised, not turned into zero vectors."""
    import warnings

    store = SQLiteMemoryStore(str(tmp_path / "big.db"), vector_dim=4)
    store.add(["big", "other"], "memory", record_ids=["big", "other"],
              embeddings=[[1e30, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow RuntimeWarning either
        hits = store.search(query_vector=[3e37, 1e37, 0.0, 0.0], k=2)
    assert [r.id for r, _ in hits] == ["big", "other"]
    assert abs(hits[0][1] - (1 - 3 / 10**0.5)) < 1e-6
    store.close()
