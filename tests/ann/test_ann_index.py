"""oramem.ann: the optional HNSW index (extra ``ann``). Skipped when no backend is installed."""

from __future__ import annotations

import numpy as np
import pytest

from oramem.ann import AnnConfig, AnnIndex, AnnUnavailable, available_backends

BACKENDS = available_backends()
pytestmark = pytest.mark.skipif(not BACKENDS, reason="no ANN backend installed (pip install 'oramem[ann]')")
DIM = 16


def clustered(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, DIM))
    v = centres[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def exact(vectors: np.ndarray, keys: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    d = 1.0 - vectors @ (q / np.linalg.norm(q))
    return keys[np.argsort(d, kind="stable")[:k]]


@pytest.fixture(params=BACKENDS or ["none"])
def backend(request):
    return request.param


def test_query_recall_and_distances(backend):
    vectors = clustered(2000)
    keys = np.arange(1000, 3000)
    index = AnnIndex(DIM, backend=backend)
    index.build(keys, vectors)
    assert len(index) == 2000 and 1000 in index and 5 not in index
    queries = clustered(50, seed=1)
    hits = 0
    for q in queries:
        got_keys, got_d = index.query(q, 10)
        assert got_keys.dtype == np.int64 and got_d.dtype == np.float64
        assert list(got_d) == sorted(got_d)
        # distances are cosine distances of the stored vectors
        rows = got_keys - 1000
        np.testing.assert_allclose(got_d, 1.0 - vectors[rows] @ q, atol=1e-4)
        hits += len(set(got_keys) & set(exact(vectors, keys, q, 10)))
    assert hits / (10 * len(queries)) >= 0.9


def test_add_replaces_and_remove(backend):
    vectors = clustered(300)
    index = AnnIndex(DIM, backend=backend)
    index.add(np.arange(300), vectors)
    target = vectors[7]
    # key 3 takes key 7's vector: both are now at distance ~0 from it
    index.add([3], target)
    keys, d = index.query(target, 2)
    assert set(keys) == {3, 7} and d.max() < 1e-4
    assert index.remove([7, 7000]) == 1
    assert 7 not in index and len(index) == 299
    keys, _ = index.query(target, 5)
    assert 7 not in keys and keys[0] == 3
    # a removed key can come back
    index.add([7], target)
    assert 7 in index and len(index) == 300


def test_filtered_query_returns_only_accepted_or_none(backend):
    vectors = clustered(3000)
    keys = np.arange(3000)
    index = AnnIndex(DIM, AnnConfig(max_fetch=256), backend=backend)
    index.build(keys, vectors)
    q = clustered(1, seed=2)[0]
    even = lambda ks: ks % 2 == 0  # noqa: E731
    got, _ = index.query(q, 10, accept=even, selectivity=0.5)
    assert len(got) == 10 and all(k % 2 == 0 for k in got)
    assert len(set(got) & set(exact(vectors[::2], keys[::2], q, 10))) >= 8
    # a predicate that accepts almost nothing cannot be served within max_fetch
    assert index.query(q, 10, accept=lambda ks: ks == 2999, selectivity=1.0) is None
    # ... unless the whole index fits in the fetch: then what exists is returned, if the
    # graph search reached every key (usearch may stop short: then None, the caller goes
    # exact; both branches are pinned down with a short-answering backend below)
    small = AnnIndex(DIM, backend=backend)
    small.build(np.arange(100), vectors[:100])
    found = small.query(q, 10, accept=lambda ks: ks == 42)
    assert found is None or list(found[0]) == [42]


def _answers(index: AnnIndex, vectors: np.ndarray, missing: set[int]) -> None:
    """Replace the index's graph search by an exact one over ``vectors`` (keys = rows)
    that leaves the ``missing`` keys out of every answer, as a graph search that does not
    reach them does; with nothing missing it reaches every key (a real graph search may
    not, which is why these cases are not left to the backend)."""

    def search(q, count, ef):
        d = 1.0 - vectors.astype(np.float64) @ (q / np.linalg.norm(q))
        order = [int(i) for i in np.argsort(d, kind="stable") if int(i) not in missing][:count]
        return np.asarray(order, dtype=np.int64), d[order]

    index._impl.search = search


def test_a_search_that_stops_short_is_never_taken_for_the_whole_index(backend):
    vectors = clustered(100)
    q = clustered(1, seed=2)[0]
    whole = AnnIndex(DIM, backend=backend)
    whole.build(np.arange(100), vectors)
    _answers(whole, vectors, set())
    # every key reached: the accepted key, and the unfiltered top k, are what exists
    assert list(whole.query(q, 10, accept=lambda ks: ks == 42)[0]) == [42]
    assert len(whole.query(q, 100)[0]) == 100
    short = AnnIndex(DIM, backend=backend)
    short.build(np.arange(100), vectors)
    _answers(short, vectors, {42, 43})
    # key 42 was never reached: "nothing accepted" would be a wrong answer, so None
    assert short.query(q, 10, accept=lambda ks: ks == 42) is None
    # unfiltered, fewer than min(k, n) keys back: None, not a short top k
    assert short.query(q, 100) is None
    # an answer with k accepted keys stands, whatever the search missed
    got, _ = short.query(q, 5)
    assert len(got) == 5 and not {42, 43} & set(got.tolist())


def test_use_for_policy():
    config = AnnConfig(min_rows=1000, min_selectivity=0.05)
    index = AnnIndex(DIM, config, backend=BACKENDS[0])
    assert not index.use_for(999)
    assert index.use_for(1000)
    assert not index.use_for(10_000, selectivity=0.01)
    assert index.use_for(10_000, selectivity=0.1)


def test_save_and_load(backend, tmp_path):
    vectors = clustered(500)
    index = AnnIndex(DIM, backend=backend)
    index.build(np.arange(500), vectors)
    index.remove([0])
    path = str(tmp_path / "idx.bin")
    index.save(path)
    loaded = AnnIndex.load(path, DIM, backend=backend)
    assert len(loaded) == 499 and 0 not in loaded and 1 in loaded
    q = vectors[1]
    assert loaded.query(q, 1)[0][0] == 1


def test_empty_and_invalid_arguments(backend):
    index = AnnIndex(DIM, backend=backend)
    keys, d = index.query(np.ones(DIM), 5)
    assert keys.size == 0 and d.size == 0
    with pytest.raises(ValueError, match="one vector per key"):
        index.add([1, 2], np.ones((3, DIM)))
    with pytest.raises(ValueError, match="dimension"):
        index.add([1], np.ones((1, DIM + 1)))
    with pytest.raises(ValueError, match="non-negative"):
        index.add([-1], np.ones((1, DIM)))
    with pytest.raises(ValueError, match="distinct"):
        index.add([1, 1], np.ones((2, DIM)))
    with pytest.raises(ValueError, match="finite"):
        index.add([1], np.full((1, DIM), np.nan))
    with pytest.raises(ValueError, match="k must be"):
        index.query(np.ones(DIM), 0)
    with pytest.raises(ValueError):
        AnnConfig(connectivity=0)
    with pytest.raises(ValueError, match="unknown ANN backend"):
        AnnIndex(DIM, backend="faiss")
    with pytest.raises(ValueError, match="dim"):
        AnnIndex(0)


def test_unavailable_backend_is_explained(monkeypatch):
    import oramem.ann as ann

    monkeypatch.setattr(ann, "available_backends", lambda: [])
    with pytest.raises(AnnUnavailable, match=r"oramem\[ann\]"):
        AnnIndex(DIM)


def test_calibrate_raises_ef_until_recall_is_met(backend):
    vectors = clustered(3000, seed=3)
    keys = np.arange(3000)
    # a deliberately poor graph and ef so that the first measurement misses the target
    index = AnnIndex(DIM, AnnConfig(connectivity=4, expansion_add=8, expansion_search=1), backend=backend)
    index.build(keys, vectors)
    queries = clustered(30, seed=4)
    truth = [exact(vectors, keys, q, 10) for q in queries]
    ef, recall = index.calibrate(queries, truth, k=10, target_recall=0.97, max_expansion=512)
    assert index.expansion_search == ef
    assert recall >= 0.97 or ef == 512
    assert ef > 1
    # the recall it reports is the recall queries now get
    hits = sum(len(set(index.query(q, 10)[0].tolist()) & set(t.tolist())) for q, t in zip(queries, truth))
    assert abs(hits / 300 - recall) < 1e-9
    with pytest.raises(ValueError, match="truth"):
        index.calibrate(queries, truth[:-1])


def test_hnswlib_readding_and_removing_keys_many_times_stays_consistent():
    """Re-adding present and removed keys updates them in place; a later remove never
    fails with hnswlib's "Label not found" and queries see the latest vectors."""
    pytest.importorskip("hnswlib")
    from oramem.ann import AnnConfig, AnnIndex

    rng = np.random.default_rng(4)
    dim = 8
    index = AnnIndex(dim, AnnConfig(min_rows=0), backend="hnswlib")
    keys = np.arange(200)
    index.build(keys, rng.normal(size=(200, dim)).astype(np.float32))
    for _ in range(15):
        chosen = rng.choice(200, size=40, replace=False)
        index.remove(chosen[:20])
        index.add(chosen, rng.normal(size=(40, dim)).astype(np.float32))  # removed and live keys
    target = rng.normal(size=dim).astype(np.float32)
    index.add([7], target.reshape(1, -1))
    found, dist = index.query(target, 1)
    assert int(found[0]) == 7 and dist[0] < 1e-4
    assert index.remove(keys) == 200
