"""``SQLiteMemoryStore(approximate_search=AnnConfig(...))``: top-k vector search takes its
candidates from the in-process HNSW index of the vector cache, then rescoring, filters and
ties are the exact path's. Checked against an exact store over the same file."""

from __future__ import annotations

import numpy as np
import pytest

from oramem import SQLiteMemoryStore
from oramem.ann import AnnConfig, available_backends
from oramem.embedders.base import IEmbedder

if not available_backends():  # hnswlib ships as an sdist only (needs a compiler)
    pytest.skip("no ANN backend installed (pip install 'oramem[ann]')", allow_module_level=True)

DIM = 32
N = 3000
USERS = [f"u{i}" for i in range(5)]


def clustered(rng: np.random.Generator, n: int, clusters: int = 40) -> np.ndarray:
    centers = rng.normal(size=(clusters, DIM))
    return (centers[rng.integers(clusters, size=n)] + 0.35 * rng.normal(size=(n, DIM))).astype(np.float32)


def fill(store: SQLiteMemoryStore, vectors: np.ndarray, start: int = 0, **kw) -> list[str]:
    n = len(vectors)
    ids = [f"m{start + i:05d}" for i in range(n)]
    return store.add(
        [f"text {i}" for i in ids], "memory", record_ids=ids, embeddings=vectors,
        user_ids=[USERS[(start + i) % len(USERS)] for i in range(n)],
        metadata=[{"g": (start + i) % 7, "rare": (start + i) % 500 == 0} for i in range(n)], **kw,
    )


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a.astype(np.float32) / np.linalg.norm(a.astype(np.float32))
    b = b.astype(np.float64) / np.linalg.norm(b.astype(np.float64))
    return float(1.0 - (a.astype(np.float64) * b).sum())


class Spy:
    """Counts queries that reached the ANN index."""

    def __init__(self, store: SQLiteMemoryStore) -> None:
        self.calls = 0
        self.store = store

    def install(self) -> None:
        ann = self.store.engine._cache.ann
        assert ann is not None, "the approximate store built no index"
        original = ann.query

        def query(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        ann.query = query


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    rng = np.random.default_rng(7)
    path = str(tmp_path_factory.mktemp("ann") / "ann.db")
    vectors = clustered(rng, N)
    exact = SQLiteMemoryStore(path, vector_dim=DIM)
    fill(exact, vectors)
    approx = SQLiteMemoryStore(path, vector_dim=DIM, approximate_search=AnnConfig(min_rows=0))
    queries = clustered(rng, 40) + 0.1 * rng.normal(size=(40, DIM)).astype(np.float32)
    approx.search(query_vector=queries[0], k=1)  # loads the cache and builds the index
    yield exact, approx, vectors, queries
    exact.close()
    approx.close()


def ids(results) -> list[str]:
    return [r.id for r, _ in results]


def test_recall_at_10_and_exact_distances(pair):
    exact, approx, vectors, queries = pair
    spy = Spy(approx)
    spy.install()
    hits = 0
    for q in queries:
        got = approx.search(query_vector=q, k=10)
        want = exact.search(query_vector=q, k=10)
        assert len(got) == 10
        hits += len(set(ids(got)) & set(ids(want)))
        for record, distance in got:
            # distances are exact cosine distances, whatever produced the candidate
            assert distance == pytest.approx(cosine(q, vectors[int(record.id[1:])]), abs=1e-6)
        assert [d for _, d in got] == sorted(d for _, d in got)
    assert spy.calls == len(queries), "searches did not go through the ANN index"
    assert hits / (10 * len(queries)) >= 0.9


def test_an_index_search_that_stops_short_falls_back_to_exact(pair, monkeypatch):
    exact, approx, _, queries = pair
    ann = approx.engine._cache.ann
    assert ann is not None

    def short(q, count, ef):  # a graph search that reaches 3 nodes, whatever it was asked
        keys, dists = original(q, count, ef)
        return keys[:3], dists[:3]

    original = ann._impl.search
    monkeypatch.setattr(ann._impl, "search", short)
    for q in queries[:5]:
        for kw in ({}, {"user_id": USERS[1]}, {"metadata_filter": {"g": 2}}):
            got = approx.search(query_vector=q, k=10, **kw)
            assert ids(got) == ids(exact.search(query_vector=q, k=10, **kw)), kw
        # user B's search on the exact fallback finds ten of B's records and none of A's
        a, b = USERS[0], USERS[1]
        theirs = approx.search(query_vector=q, k=10, user_id=b)
        assert len(theirs) == 10 and {r.user_id for r, _ in theirs} == {b}
        assert not set(ids(theirs)) & set(ids(approx.search(query_vector=q, k=10, user_id=a)))


def test_scope_and_metadata_filters_are_never_violated(pair):
    exact, approx, _, queries = pair
    spy = Spy(approx)
    spy.install()
    hits = total = 0
    for i, q in enumerate(queries[:15]):
        user = USERS[i % len(USERS)]
        kw = dict(query_vector=q, k=10, user_id=user, metadata_filter={"g": {"$in": [1, 2, 3]}})
        got = approx.search(**kw)
        assert len(got) == 10
        for record, _ in got:
            assert record.user_id == user and record.metadata["g"] in (1, 2, 3)
        hits += len(set(ids(got)) & set(ids(exact.search(**kw))))
        total += 10
    assert spy.calls >= 15
    assert hits / total >= 0.9


def test_scope_mask_applies_to_ann_candidates(pair):
    exact, approx, _, queries = pair
    spy = Spy(approx)
    spy.install()
    for i, q in enumerate(queries[:10]):
        user = USERS[i % len(USERS)]
        got = approx.search(query_vector=q, k=10, user_id=user)
        assert len(got) == 10 and {r.user_id for r, _ in got} == {user}
        assert len(set(ids(got)) & set(ids(exact.search(query_vector=q, k=10, user_id=user)))) >= 8
    assert spy.calls == 10


def test_selective_filters_fall_back_to_exact_and_return_k(pair, monkeypatch):
    exact, approx, _, queries = pair
    q = queries[3]
    ann = approx.engine._cache.ann
    monkeypatch.setattr(ann, "config", AnnConfig(min_rows=0, max_fetch=64))
    answers = []
    original = ann.query
    monkeypatch.setattr(ann, "query", lambda *a, **kw: answers.append(original(*a, **kw)) or answers[-1])
    # 6 records of 3000 pass: 64 ANN candidates cannot hold 5 of them, the exact path does
    rare = approx.search(query_vector=q, k=5, metadata_filter={"rare": True})
    assert answers and answers[-1] is None
    assert ids(rare) == ids(exact.search(query_vector=q, k=5, metadata_filter={"rare": True}))
    assert len(rare) == 5 and all(r.metadata["rare"] is True for r, _ in rare)
    # a narrow mask (one user's few records of one group) is below min_selectivity: exact
    kw = dict(query_vector=q, k=10, user_id="u1", metadata_filter={"g": 1})
    assert ids(approx.search(**kw)) == ids(exact.search(**kw))


def test_writes_are_visible_to_the_next_approximate_search(tmp_path):
    rng = np.random.default_rng(3)
    store = SQLiteMemoryStore(str(tmp_path / "w.db"), vector_dim=DIM, approximate_search=AnnConfig(min_rows=0))
    vectors = clustered(rng, 1500)
    fill(store, vectors)
    probe = rng.normal(size=DIM).astype(np.float32) * 10
    store.search(query_vector=probe, k=1)
    cache = store.engine._cache
    spy = Spy(store)
    spy.install()

    store.add(["probe"], "memory", record_ids=["new"], embeddings=[probe])
    assert ids(store.search(query_vector=probe, k=3))[0] == "new"
    # re-embedding keeps the record's chunk ids; the index must follow every time
    for _ in range(5):
        store.update("memory", "new", embedding=(-probe).tolist())
        assert "new" not in ids(store.search(query_vector=probe, k=10))
        store.update("memory", "new", embedding=probe.tolist())
        assert ids(store.search(query_vector=probe, k=3))[0] == "new"
    store.update("memory", "new", metadata={"g": 99})  # metadata-only: same chunk, new row
    top = store.search(query_vector=probe, k=1, metadata_filter={"g": 99})
    assert ids(top) == ["new"] and top[0][1] == pytest.approx(0.0, abs=1e-6)
    store.delete("memory", "new")
    assert "new" not in ids(store.search(query_vector=probe, k=10))

    # a bulk delete forces a compaction; row keys must still map to the right rows
    near = np.tile(probe, (1200, 1)) + 0.01 * rng.normal(size=(1200, DIM)).astype(np.float32)
    store.add(["x"] * 1200, "memory", record_ids=[f"t{i}" for i in range(1200)], embeddings=near, thread_ids="tmp")
    assert all(i.startswith("t") for i in ids(store.search(query_vector=probe, k=10)))
    later = clustered(rng, 50)
    fill(store, later, start=5000)  # rows after the block that is about to go
    size_before = cache.size
    store.delete_thread("tmp")
    assert cache.size < size_before, "no compaction happened"
    assert len(cache.ann) == cache.live_count == 1550
    for j in (0, 17, 49):
        got = store.search(query_vector=later[j], k=1)
        assert ids(got) == [f"m{5000 + j:05d}"] and got[0][1] == pytest.approx(0.0, abs=1e-6)
    assert spy.calls > 0
    store.close()


def test_index_is_built_once_min_rows_is_reached(tmp_path):
    rng = np.random.default_rng(5)
    store = SQLiteMemoryStore(":memory:", vector_dim=DIM, approximate_search=AnnConfig(min_rows=400))
    fill(store, clustered(rng, 300))
    store.search(query_vector=rng.normal(size=DIM), k=3)
    assert store.engine._cache.ann is None
    fill(store, clustered(rng, 200), start=300)
    assert len(store.engine._cache.ann) == 500
    assert not list(tmp_path.iterdir())
    store.close()


def test_exact_is_the_default(tmp_path):
    store = SQLiteMemoryStore(str(tmp_path / "d.db"), vector_dim=DIM)
    fill(store, clustered(np.random.default_rng(1), 500))
    store.search(query_vector=np.ones(DIM), k=5)
    assert store.engine._cache.ann is None and store.engine._cache.ann_config is None
    store.close()


def test_constructor_checks(monkeypatch):
    with pytest.raises(TypeError, match="AnnConfig"):
        SQLiteMemoryStore(":memory:", vector_dim=DIM, approximate_search={"min_rows": 0})
    import oramem.sqlite.engine as engine

    monkeypatch.setattr(engine, "available_backends", lambda: [])
    with pytest.raises(ImportError, match=r"pip install 'oramem\[ann\]'"):
        SQLiteMemoryStore(":memory:", vector_dim=DIM, approximate_search=AnnConfig())


class TableEmbedder(IEmbedder):
    """Looks texts up in a table of vectors."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    @property
    def embedding_dimension(self) -> int:
        return DIM

    def embed(self, texts, *, is_query: bool = False) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def test_records_with_several_rows_still_give_k_records(tmp_path):
    rng = np.random.default_rng(11)
    probe = rng.normal(size=DIM).astype(np.float32)
    table = {}
    chunks = []
    for r in range(40):  # 40 records of 5 chunks, every chunk close to the probe
        mine = [f"r{r}c{c}" for c in range(5)]
        centre = probe + 0.05 * rng.normal(size=DIM).astype(np.float32)
        for name in mine:  # a record's chunks are closer to each other than to other records
            table[name] = centre + 0.001 * rng.normal(size=DIM).astype(np.float32)
        chunks.append(mine)
    far = clustered(rng, 1000) + 5 * rng.normal(size=DIM).astype(np.float32)
    for i, v in enumerate(far):
        table[f"far{i}"] = v
    table["probe"] = probe
    path = str(tmp_path / "m.db")
    approx = SQLiteMemoryStore(path, embedder=TableEmbedder(table), approximate_search=AnnConfig(min_rows=0))
    approx.add([f"rec {r}" for r in range(40)], "memory", record_ids=[f"r{r}" for r in range(40)], index_texts=chunks)
    approx.add([f"far {i}" for i in range(1000)], "memory", index_texts=[[f"far{i}"] for i in range(1000)])
    exact = SQLiteMemoryStore(path, embedder=TableEmbedder(table))
    got = approx.search("probe", k=10)
    assert approx.engine._cache.ann is not None
    assert ids(got) == ids(exact.search("probe", k=10))
    assert len({i for i in ids(got)}) == 10
    approx.close()
    exact.close()
