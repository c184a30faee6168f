"""Store API ergonomics for users coming from mem0 or Chroma (new-user trial F-6, issue 23
item 5): the right hint for a mem0-style ``add(..., user_id=)``, errors that name the class
the user constructed, and argument docs on every public method."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from oramem import OracleDBMemoryStore, SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.store import IMemoryStore


@pytest.fixture
def store():
    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(32)) as s:
        yield s


def test_add_with_user_id_hints_user_ids(store):
    with pytest.raises(TypeError, match=r"unknown store option\(s\) user_id \(did you mean user_ids=\?.*user_ids='alice'\)"):
        store.add(["I like tea"], "memory", user_id="alice")
    with pytest.raises(TypeError, match=r"did you mean roles=, thread_ids=\?"):
        store.add(["hi"], "message", role="user", thread_id="t1")
    with pytest.raises(TypeError, match=r"unknown store option\(s\) colour; supported: batch_size"):
        store.add(["x"], "memory", colour="red")
    assert store.list("memory") == []  # nothing was written


def test_errors_name_the_class_constructed(store):
    with pytest.raises(TypeError, match=r"^SQLiteMemoryStore\.add\(\) missing 1 required positional argument: 'record_type'"):
        store.add(["I like tea"])
    with pytest.raises(TypeError, match=r"^SQLiteMemoryStore\.search\(\) got an unexpected keyword argument 'nope'$"):
        store.search("tea", nope=3)
    with pytest.raises(TypeError, match=r"^SQLiteMemoryStore\.search_async\(\) got an unexpected keyword argument 'nope'$"):
        asyncio.run(store.search_async("tea", nope=1))
    assert OracleDBMemoryStore.update.__qualname__ == "OracleDBMemoryStore.update"

    class Mine(SQLiteMemoryStore):
        def get(self, record_type, record_id):  # an override stays the override
            return "mine"

    assert Mine.search.__qualname__ == "Mine.search" and Mine.get(None, "memory", "x") == "mine"
    assert SQLiteMemoryStore.search.__qualname__ == "SQLiteMemoryStore.search"


def test_search_and_list_hint_the_names_other_libraries_use(store):
    store.add(["I like tea"], "memory", user_ids="alice")
    with pytest.raises(TypeError, match=r"^SQLiteMemoryStore\.search\(\) got an unexpected keyword argument 'limit' \(did you mean k=\?\)$"):
        store.search("tea", limit=3)
    with pytest.raises(TypeError, match=r"'user_ids' \(did you mean user_id=\?\)$"):
        store.search("tea", user_ids="alice")
    with pytest.raises(TypeError, match=r"^SQLiteMemoryStore\.list\(\) got an unexpected keyword argument 'user_ids' \(did you mean user_id=\?\)$"):
        store.list("memory", user_ids="alice")
    with pytest.raises(TypeError, match=r"'user' \(did you mean user_id=\?\)$"):
        store.search("tea", user="alice")
    with pytest.raises(TypeError, match=r"'thread' \(did you mean thread_id=\?\)$"):
        store.list("memory", thread="t1")
    with pytest.raises(TypeError, match=r"search_async\(\) got an unexpected keyword argument 'limit' \(did you mean k=\?\)$"):
        asyncio.run(store.search_async("tea", limit=3))
    # a TypeError from inside the call is not rewritten
    with pytest.raises(TypeError) as info:
        store.search("tea", metadata_filter="not a mapping")
    assert "did you mean" not in str(info.value)
    assert store.search("tea", k=1, user_id="alice")[0][0].content == "I like tea"


def test_public_methods_document_their_arguments():
    for name, method in inspect.getmembers(SQLiteMemoryStore, inspect.isfunction):
        if name.startswith("_") or not hasattr(IMemoryStore, name):
            continue
        doc = inspect.getdoc(method) or ""
        params = [p for p in inspect.signature(method).parameters if p not in ("self", "store_kwargs")]
        if name.endswith("_async"):
            continue  # the same arguments as its twin (documented there)
        for param in params:
            assert param in doc, f"{name}: argument {param!r} is not documented"
    assert "mem0's ``limit``" in inspect.getdoc(SQLiteMemoryStore.search)
