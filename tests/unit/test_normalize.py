"""The shared layer hands engines normalised requests: these tests look at exactly what an
engine receives, with a recording engine that stores nothing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from oramem.embedders.identity import identity_of

from oramem import NOT_SET, MemoryRetentionConfig, OracleMemoryStore, SearchStrategy, TimeToLiveAnchor
from oramem.engine import Engine
from oramem.requests import RetrievalChange, ScopeMatch, StoreSettings
from oramem.types import SchemaPolicy


class RecordingEngine(Engine):
    """Records every request; answers with fixed, request-derived values."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def open(self, settings, policy):
        self.calls.append(("open", (settings, policy)))
        from dataclasses import replace

        from oramem.requests import SearchIndexSyncMode

        return replace(
            settings,
            search_index_sync=settings.search_index_sync or SearchIndexSyncMode.ON_COMMIT,
            retention=settings.retention or MemoryRetentionConfig(),
        )

    def close(self):
        self.calls.append(("close", None))

    def add(self, request):
        self.calls.append(("add", request))
        return [r.id for r in request.records]

    def update(self, request):
        self.calls.append(("update", request))
        return 1

    def delete(self, record_type, record_id, cascade):
        self.calls.append(("delete", (record_type, record_id, cascade)))
        return 1

    def delete_thread(self, thread_id):
        self.calls.append(("delete_thread", thread_id))
        return 1

    def purge_expired(self):
        return 0

    def sync_search_index(self):
        self.calls.append(("sync", None))

    def get(self, record_type, record_id):
        return None

    def list(self, request):
        self.calls.append(("list", request))
        return []

    def list_thread_messages(self, thread_id, last_n):
        return []

    def search(self, request):
        self.calls.append(("search", request))
        return []

    def register_deletion_hook(self, hook):
        self.calls.append(("hook", hook))


class CountingEmbedder:
    embedding_dimension = 4

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed(self, texts, *, is_query=False):
        self.batches.append(list(texts))
        return np.array([[len(t), 1.0, 0.0, float(is_query)] for t in texts], dtype=np.float32)


def make(strategy="vector", retention=NOT_SET, embedder=True, **kw):
    engine = RecordingEngine()
    emb = CountingEmbedder() if embedder else None
    store = OracleMemoryStore(
        engine,
        embedder=emb,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        vector_dim=None if embedder else kw.pop("vector_dim", None),
        search_strategy=strategy,
        memory_retention_config=retention,
        **kw,
    )
    return store, engine, emb


def last(engine, kind):
    return [c for k, c in engine.calls if k == kind][-1]


def test_open_passes_requested_settings_with_none_for_omitted():
    store, engine, emb = make()
    settings, policy = engine.calls[0][1]
    # the embedder's identity goes with the request (checked against the store's record)
    assert settings == StoreSettings("DEFAULT", 4, SearchStrategy.VECTOR, None, None, identity_of(emb))
    assert settings.embedder["kind"] == "python" and settings.embedder["dimension"] == 4
    assert policy is SchemaPolicy.CREATE_IF_NECESSARY


def test_add_broadcasts_scalars_and_embeds_once_per_call():
    store, engine, emb = make()
    ids = store.add(["a b", "c"], "memory", record_ids=["x", "y"], user_ids="u1", metadata={"k": 1})
    assert ids == ["x", "y"]
    req = last(engine, "add")
    assert [r.user_id for r in req.records] == ["u1", "u1"]
    assert [r.metadata for r in req.records] == [{"k": 1}, {"k": 1}]
    assert req.records[0].metadata is not req.records[1].metadata  # independent copies
    assert emb.batches == [["a b", "c"]]
    assert [c.text for c in req.records[0].chunks] == ["a b"]
    assert req.records[0].chunks[0].vector.tolist() == [3.0, 1.0, 0.0, 0.0]
    assert req.batch_size == 256


def test_content_none_falls_back_to_metadata_content_and_empty_string_has_no_rows():
    store, engine, emb = make()
    store.add([None, ""], "memory", metadata=[{"content": "from meta"}, None])
    req = last(engine, "add")
    assert req.records[0].content == "from meta"
    assert [c.text for c in req.records[0].chunks] == ["from meta"]
    assert req.records[1].content == "" and req.records[1].chunks == ()


def test_index_texts_string_list_and_empty_forms():
    store, engine, emb = make()
    store.add(["s1", "s2", "s3", "s4"], "fact", index_texts=["alt", ["c1", "", "c2"], "", None])
    recs = last(engine, "add").records
    assert [c.text for c in recs[0].chunks] == ["alt"]
    assert [c.text for c in recs[1].chunks] == ["c1", "c2"]  # empty caller chunks dropped
    assert recs[2].chunks == ()
    assert [c.text for c in recs[3].chunks] == ["s4"]
    assert emb.batches == [["alt", "c1", "c2", "s4"]]


def test_explicit_vectors_bypass_the_embedder_and_keep_long_text_whole():
    store, engine, emb = make()
    long_text = "word " * 2000
    store.add([long_text], "memory", embeddings=[[1, 2, 3, 4]])
    rec = last(engine, "add").records[0]
    assert len(rec.chunks) == 1 and rec.chunks[0].text == long_text
    assert rec.chunks[0].vector.dtype == np.float32
    assert emb.batches == []


def test_long_text_is_chunked_by_the_store_when_embedded():
    store, engine, emb = make()
    long_text = ("sentence number %d. " * 400) % tuple(range(400))
    store.add([long_text], "memory")
    rec = last(engine, "add").records[0]
    assert len(rec.chunks) > 1
    assert all(len(c.text) <= 2000 for c in rec.chunks)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"embeddings": [[[1, 2, 3, 4], [1, 2, 3, 4]]]}, "list index_texts"),
        ({"embeddings": [[1, 2, 3]]}, "vector_dim is 4"),
        ({"embeddings": [[]]}, "empty"),
        ({"index_texts": [["a", "b"]], "embeddings": [[[1, 2, 3, 4]]]}, "1 vectors but index_texts[0] has 2"),
        ({"embeddings": [[1, 2, float("nan"), 4]]}, "NaN"),
    ],
)
def test_vector_rules_rejected_before_the_engine(kwargs, message):
    store, engine, _ = make()
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        store.add(["text"], "memory", **kwargs)
    assert not [c for c in engine.calls if c[0] == "add"]


def test_ttl_resolution_default_none_and_clamp():
    store, engine, _ = make(retention=MemoryRetentionConfig(default_ttl_days=7, max_ttl_days=30))
    with pytest.warns(UserWarning, match="clamped to 30"):
        store.add(["a", "b", "c"], "memory", ttl_days=[5, None, 99])
    ttls = [r.ttl for r in last(engine, "add").records]
    assert [t.days for t in ttls] == [5, 30, 30]
    store.add(["d"], "memory")
    assert last(engine, "add").records[0].ttl.days == 7
    assert last(engine, "add").records[0].ttl.anchor is TimeToLiveAnchor.CREATED_AT


def test_timestamp_anchor_requires_timestamps():
    store, engine, _ = make(retention=MemoryRetentionConfig(default_ttl_days=1))
    with pytest.raises(ValueError, match="TIMESTAMP"):
        store.add(["a"], "memory", ttl_anchor="timestamp")
    store.add(["a"], "memory", ttl_anchor="timestamp", timestamps="2026-01-01T10:00:00Z")
    rec = last(engine, "add").records[0]
    assert rec.timestamp == "2026-01-01T10:00:00.000000+00:00"


def test_search_scope_tristate_and_query_embedding():
    store, engine, emb = make()
    store.search("hello", k=3, user_id="u", thread_id=None, exact_thread_match=True, agent_id=None)
    req = last(engine, "search")
    assert req.user.match is ScopeMatch.EQUALS and req.user.value == "u"
    assert req.thread.match is ScopeMatch.IS_NULL
    assert req.agent.match is ScopeMatch.ANY
    assert req.query_vector.tolist() == [5.0, 1.0, 0.0, 1.0]  # is_query=True reached the embedder
    assert "thread" not in req.record_types


def test_keyword_store_search_needs_no_embedder_and_rejects_vector_strategy():
    store, engine, _ = make(strategy="keyword", embedder=False)
    store.search("plain words", k=2)
    assert last(engine, "search").query_vector is None
    with pytest.raises(ValueError, match="cannot answer strategy='vector'"):
        store.search("x", strategy="vector")


def test_list_not_set_vs_none():
    store, engine, _ = make()
    store.list("memory", thread_id=None, metadata_filter=None)
    req = last(engine, "list")
    assert req.thread.match is ScopeMatch.IS_NULL and req.user.match is ScopeMatch.ANY
    assert req.metadata_filter is None and req.limit == 10_000
    store.list("user_profile", user_id="u", limit=None)
    req = last(engine, "list")
    assert req.user.match is ScopeMatch.ANY and req.limit is None and req.metadata_filter is NOT_SET


@pytest.mark.parametrize(
    "kwargs, change",
    [
        ({"text": "new"}, RetrievalChange.REPLACE),
        ({"text": None}, RetrievalChange.CLEAR),
        ({"index_text": None}, RetrievalChange.CLEAR),
        ({"embedding": None}, RetrievalChange.STRIP_VECTORS),
        ({"embedding": [[1, 2, 3, 4], [4, 3, 2, 1]]}, RetrievalChange.REVECTOR),
        ({"metadata": {"a": 1}}, RetrievalChange.KEEP),
        ({"text": "t", "embedding": None}, RetrievalChange.REPLACE),
    ],
)
def test_update_retrieval_matrix(kwargs, change):
    store, engine, _ = make()
    assert store.update("memory", "r1", **kwargs) == 1
    req = last(engine, "update")
    assert req.retrieval is change
    if kwargs == {"text": "t", "embedding": None}:
        assert [(c.text, c.vector) for c in req.chunks] == [("t", None)]
    if change is RetrievalChange.REVECTOR:
        assert len(req.vectors) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"text": None, "index_text": "x"},
        {"text": None, "embedding": [1, 2, 3, 4]},
        {"index_text": None, "embedding": [1, 2, 3, 4]},
        {"embedding": [1, 2]},
    ],
)
def test_update_rejections(kwargs):
    store, engine, _ = make()
    with pytest.raises(ValueError):
        store.update("memory", "r1", **kwargs)
    assert not [c for c in engine.calls if c[0] == "update"]


def test_profiles_reject_scope_ttl_and_text_none():
    store, engine, _ = make()
    with pytest.raises(ValueError, match="unscoped"):
        store.add(["info"], "user_profile", record_ids="u", user_ids="u")
    with pytest.raises(ValueError, match="SC-5.1"):
        store.add(["info"], "user_profile", record_ids="u", ttl_days=3)
    with pytest.raises(ValueError, match="text=None"):
        store.update("user_profile", "u", text=None)
    assert store.add_user("u1", "likes tea") == "u1"


def test_unknown_store_kwarg_and_bad_batch_size():
    store, engine, _ = make()
    with pytest.raises(TypeError, match="batch_sizee"):
        store.add(["a"], "memory", batch_sizee=3)
    with pytest.raises(ValueError, match="batch_size"):
        store.add(["a"], "memory", batch_size=0)
    store.add(["a"], "memory", batch_size=7)
    assert last(engine, "add").batch_size == 7


def test_no_warning_without_clamp():
    store, engine, _ = make(retention=MemoryRetentionConfig(max_ttl_days=30))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.add(["a"], "memory", ttl_days=30)


def test_two_dimensional_embeddings_block():
    store, engine, emb = make()
    block = np.arange(8, dtype=np.float64).reshape(2, 4) + 1
    store.add(["a", "b"], "memory", embeddings=block)
    recs = last(engine, "add").records
    assert [r.chunks[0].vector.tolist() for r in recs] == block.astype(np.float32).tolist()
    assert recs[0].chunks[0].vector.dtype == np.float32 and emb.batches == []
    block[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"embeddings\[1\] contains NaN"):
        store.add(["a", "b"], "memory", embeddings=block)
    with pytest.raises(ValueError, match="3 rows but contents has 2"):
        store.add(["a", "b"], "memory", embeddings=np.ones((3, 4)))


def test_metadata_is_serialised_once_and_stored_as_checked():
    """The JSON text made while checking metadata is what the engine stores (not a second
    serialisation), and it reads back as the same document."""
    import json

    from oramem import SQLiteMemoryStore
    from oramem.normalize import draft_records

    md = {"b": 1, "a": [1.5, "x", None, True], "é": {"n": 10**15}}
    draft = draft_records(["t"], "memory", metadata=[md])[0]
    assert draft.metadata == md and draft.metadata is not md
    assert draft.metadata_json == json.dumps(md, ensure_ascii=False, allow_nan=False)
    assert draft_records(["t"], "memory")[0].metadata_json is None
    store = SQLiteMemoryStore(":memory:", search_strategy="keyword")
    store.add(["t", "u"], "memory", record_ids=["r1", "r2"], metadata=[md, None])
    conn = store._engine._db.conn
    stored = dict(conn.execute('SELECT id, metadata FROM "om_DEFAULT_records" WHERE record_type = \'memory\''))
    assert stored == {"r1": draft.metadata_json, "r2": None}
    assert store.get("memory", "r1").metadata == md
    store.close()
