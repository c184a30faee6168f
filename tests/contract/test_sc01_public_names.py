"""§1: public names, enums, defaults, embedder interface, NOT_SET."""

from __future__ import annotations

import asyncio
import inspect

import numpy as np
import pytest

import oramem
from oramem import NOT_SET, SchemaPolicy, SearchIndexSyncMode, SearchStrategy, TimeToLiveAnchor

from ._support import CountingEmbedder, hit_ids, ids, vec

NAMES = ["IMemoryStore", "OracleMemoryStore", "OracleDBMemoryStore", "SQLiteMemoryStore", "Record", "MessageRecord",
         "PendingRecordBatch", "SchemaPolicy", "SearchStrategy", "SearchIndexSyncMode", "MemoryRetentionConfig",
         "TimeToLiveAnchor", "IEmbedder", "OracleDBEmbedder", "NOT_SET", "StoreError", "SchemaError",
         "StoreNotFound", "StoreSettingsMismatch"]


@pytest.mark.parametrize("name", NAMES)
def test_sc_1_public_name_importable(name):
    assert getattr(oramem, name) is not None


def test_sc_1_class_hierarchy():
    assert issubclass(oramem.OracleMemoryStore, oramem.IMemoryStore)
    assert issubclass(oramem.SQLiteMemoryStore, oramem.OracleMemoryStore)
    assert issubclass(oramem.OracleDBMemoryStore, oramem.OracleMemoryStore)


@pytest.mark.parametrize(
    "enum, values",
    [
        (SchemaPolicy, {"REQUIRE_EXISTING": "require_existing", "CREATE_IF_EMPTY": "create_if_empty",
                        "CREATE_IF_NECESSARY": "create_if_necessary", "RECREATE": "recreate"}),
        (SearchStrategy, {"VECTOR": "vector", "HYBRID": "hybrid", "KEYWORD": "keyword"}),
        (SearchIndexSyncMode, {"ON_COMMIT": "on_commit", "MANUAL": "manual", "AUTO": "auto"}),
        (TimeToLiveAnchor, {"CREATED_AT": "created_at", "TIMESTAMP": "timestamp"}),
    ],
)
def test_sc_1_enum_members_and_string_values(enum, values):
    assert {m.name: m.value for m in enum} == values
    for name, value in values.items():
        assert enum(value) is enum[name]


def test_sc_1_constructor_defaults():
    sq = inspect.signature(oramem.SQLiteMemoryStore).parameters
    assert sq["path"].default == ":memory:"
    assert sq["schema_policy"].default == SchemaPolicy.CREATE_IF_NECESSARY
    assert sq["search_strategy"].default is NOT_SET  # an existing store's own strategy, else VECTOR
    assert sq["memory_store_id"].default is NOT_SET
    assert sq["memory_retention_config"].default is NOT_SET
    od = inspect.signature(oramem.OracleDBMemoryStore).parameters
    assert list(od)[:2] == ["embedder", "pool"]
    assert od["schema_policy"].default == SchemaPolicy.REQUIRE_EXISTING
    assert od["table_name_prefix"].default is NOT_SET
    assert od["memory_store_id"].default is NOT_SET


def test_sc_1_not_set_is_falsy_singleton_distinct_from_none():
    assert NOT_SET is not None
    assert not NOT_SET
    assert repr(NOT_SET) == "NOT_SET"
    assert type(NOT_SET)() is NOT_SET


def test_sc_1_explicit_not_set_equals_omitted(store):
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"], thread_ids=[None, "t"], metadata=[None, {"k": 1}])
    assert ids(store.list("memory", thread_id=NOT_SET, metadata_filter=NOT_SET, limit=NOT_SET)) == ["a", "b"]
    store.update("memory", "a", text="changed", metadata=NOT_SET, timestamp=NOT_SET)
    assert store.get("memory", "a").content == "changed"
    with pytest.raises(ValueError):
        store.update("memory", "a", text=NOT_SET)  # still "all omitted"


def test_sc_1_add_embeddings_none_is_omitted(store):
    """Vendor doc: in add(), embeddings=None behaves like omitting embeddings."""
    store.add(["zebra crossing"], record_type="memory", record_ids="z", embeddings=None, index_texts=None)
    res = store.search("zebra crossing", k=1)
    assert hit_ids(res) == ["z"] and res[0][1] == pytest.approx(0.0, abs=1e-4)


def test_sc_1_iembedder_default_embed_async():
    class E(oramem.IEmbedder):
        @property
        def embedding_dimension(self):
            return 3

        def embed(self, texts, *, is_query=False):
            return np.ones((len(texts), 3), dtype=np.float32) * (2 if is_query else 1)

    out = asyncio.run(E().embed_async(["a", "b"], is_query=True))
    assert out.shape == (2, 3) and float(out[0, 0]) == 2.0


def test_sc_1_duck_typed_embedder_and_vector_dim_from_embedder(make_store):
    from oramem.embedders import HashEmbedder

    emb = CountingEmbedder(HashEmbedder(dim=64))  # not an IEmbedder subclass
    s = make_store(embedder=emb)
    s.add(["hello world"], record_type="memory", record_ids="h")
    assert emb.texts == ["hello world"]
    assert hit_ids(s.search("hello world", k=1)) == ["h"]
    # the store's vector_dim came from the embedder
    with pytest.raises(ValueError):
        s.add(["x"], record_type="memory", embeddings=[vec(1, dim=63)])


def test_sc_1_hash_embedder_shape_and_dtype():
    from oramem.embedders import HashEmbedder

    e = HashEmbedder(dim=64)
    out = e.embed(["a b", "c"])
    assert out.shape == (2, 64) and out.dtype == np.float32
    assert e.embedding_dimension == 64
