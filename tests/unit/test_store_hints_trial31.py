"""mem0-style calls of get/update/delete and a model name as ``embedder=`` (new-user trial
31): the errors name this API's spelling, as search/list/add already did (F-6)."""

from __future__ import annotations

import asyncio

import pytest

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder


@pytest.fixture
def store():
    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(32)) as s:
        yield s


def test_update_with_mem0_names_hints_text_and_record_id(store):
    rid = store.add(["I like tea"], "memory")[0]
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'data' \(did you mean text=\?\)$"):
        store.update("memory", rid, data="I like green tea")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'memory_id' \(did you mean record_id=\?\)$"):
        store.update("memory", memory_id=rid, text="x")
    with pytest.raises(TypeError, match=r"takes 3 positional arguments but 4 were given "
                                        r"\(update takes the record's type and id, then keyword arguments: "
                                        r"update\('memory', record_id, text=\.\.\.\)\)$"):
        store.update("memory", rid, "I like green tea")
    with pytest.raises(TypeError, match=r"'data' \(did you mean text=\?\)$"):
        asyncio.run(store.update_async("memory", rid, data="x"))
    assert store.get("memory", rid).content == "I like tea"


def test_get_and_delete_by_id_alone_hint_the_address(store):
    rid = store.add(["I like tea"], "memory")[0]
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'record_id' "
                                        r"\(get takes the record's type and id: get\('memory', record_id\)\)$"):
        store.get(rid)
    with pytest.raises(TypeError, match=r"\(delete takes the record's type and id: delete\('memory', record_id\)\)$"):
        store.delete(rid)
    with pytest.raises(TypeError, match=r"'memory_id' \(did you mean record_id=\?\)$"):
        store.get("memory", memory_id=rid)
    assert store.get("memory", rid) is not None


def test_a_model_name_as_embedder_points_at_onnx_embedder():
    with pytest.raises(TypeError) as info:
        SQLiteMemoryStore(":memory:", embedder="sentence-transformers/all-MiniLM-L6-v2")
    text = str(info.value)
    assert "ONNXEmbedder('sentence-transformers/all-MiniLM-L6-v2')" in text
    assert "leave embedder out for the default model" in text
