"""LangChain OramemVectorStore ids given as one string (red27)."""

from __future__ import annotations

import asyncio

import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")

from langchain_core.documents import Document  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.embedders import HashEmbedder  # noqa: E402
from oramem.integrations.langchain import OramemVectorStore  # noqa: E402


def test_delete_or_get_by_ids_with_one_string_is_refused_before_anything_is_read():
    """red27: delete("ab") took the string as its characters' ids and deleted the records 'a'
    and 'b' (a careless caller's one id read as several, deleting what it never named);
    get_by_ids("ab") returned them. A str (or bytes) for ids is a TypeError saying to pass a
    list, sync and async, before any read or delete."""
    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(64), search_strategy="hybrid") as store:
        bob = OramemVectorStore(store, user_id="bob")
        bob.add_documents([Document("first", id="a"), Document("second", id="b"), Document("both", id="ab")])
        for ids in ("ab", b"ab"):
            with pytest.raises(TypeError, match=r"a list of ids.*\[b?'ab'\] for that one record"):
                bob.delete(ids)
            with pytest.raises(TypeError, match=r"a list of ids"):
                asyncio.run(bob.adelete(ids))
            with pytest.raises(TypeError, match=r"a list of ids"):
                bob.get_by_ids(ids)
            with pytest.raises(TypeError, match=r"a list of ids"):
                asyncio.run(bob.aget_by_ids(ids))
        assert sorted(d.id for d in bob.get_by_ids(["a", "b", "ab"])) == ["a", "ab", "b"]
        assert bob.delete(["ab"]) is True
        assert sorted(d.id for d in bob.get_by_ids(["a", "b", "ab"])) == ["a", "b"]
