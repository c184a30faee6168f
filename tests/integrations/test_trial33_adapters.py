"""trial33 (new-user trial of the framework adapters, round 6): what a user met by following the
README and taking the next obvious steps.

- An adapter given something other than an oramem store (a file path, ``None``, another
  adapter: ``OramemRetriever(store=vector_store)``) was built, and failed only at the first read
  or write with an ``AttributeError`` (``'str' object has no attribute 'search'``) or LangChain's
  own ``VectorStore.search() missing 1 required positional argument: 'search_type'``. Now every
  adapter refuses it when it is built, with a ``TypeError`` saying what to pass.
- ``OramemRetriever`` checked nothing when built: a blank ``user_id`` or ``k=0`` was accepted
  and failed at every ``invoke``; the other adapters refuse a blank scope when built (left34).
- ``OramemVectorStore.from_texts(texts, HashEmbedder(256))`` (an oramem embedder, what an oramem
  user has at hand) failed with ``'HashEmbedder' object has no attribute 'embed_query'``; it is
  now used as the store's embedder, and an object that is no embedder is a ``TypeError`` saying
  what ``embedding`` may be, before any file is opened.
- ``LangChainEmbedder`` given an embed function with the langchain extra only (no langgraph)
  raised a bare ``ModuleNotFoundError: No module named 'langgraph'``; now the install hint.
"""

from __future__ import annotations

import sys

import pytest
from integrations.extras import adapter_or_skip

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder

NOT_STORES = ["memory.db", None, 42]


@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


def _builders():
    """(name, module, build(store_argument)) for every adapter that takes a store."""
    return [
        ("OramemStore", "oramem.integrations.langgraph", lambda m, s: m.OramemStore(s)),
        ("OramemSession", "oramem.integrations.openai_agents", lambda m, s: m.OramemSession("s1", s, user_id="alice")),
        ("build_server", "oramem.integrations.mcp", lambda m, s: m.build_server(s, user_id="alice")),
        ("OramemVectorStore", "oramem.integrations.langchain", lambda m, s: m.OramemVectorStore(s, user_id="alice")),
        ("OramemRetriever", "oramem.integrations.langchain", lambda m, s: m.OramemRetriever(store=s, user_id="alice")),
        ("OramemChatMessageHistory", "oramem.integrations.langchain",
         lambda m, s: m.OramemChatMessageHistory(s, "t1", user_id="alice")),
    ]


@pytest.mark.parametrize("name,module,build", _builders(), ids=[b[0] for b in _builders()])
@pytest.mark.parametrize("not_a_store", NOT_STORES, ids=repr)
def test_every_adapter_refuses_what_is_not_an_oramem_store_when_built(name, module, build, not_a_store):
    adapter = adapter_or_skip(module)
    with pytest.raises(TypeError, match=rf"^{name} needs an oramem store \(SQLiteMemoryStore or OracleDBMemoryStore\), got "):
        build(adapter, not_a_store)


@pytest.mark.parametrize("name,module,build", _builders(), ids=[b[0] for b in _builders()])
def test_every_adapter_still_takes_an_oramem_store(store, name, module, build):
    adapter = adapter_or_skip(module)
    build(adapter, store)


def test_a_path_gets_the_advice_to_open_it_first():
    langchain = adapter_or_skip("oramem.integrations.langchain")
    with pytest.raises(TypeError, match=r"got str 'memory\.db': open the file first and pass the store, "
                                        r"SQLiteMemoryStore\('memory\.db'\)"):
        langchain.OramemVectorStore("memory.db")


def test_a_retriever_over_a_vector_store_is_refused_with_the_way_to_get_its_retriever(store):
    langchain = adapter_or_skip("oramem.integrations.langchain")
    vectors = langchain.OramemVectorStore(store, user_id="alice")
    with pytest.raises(TypeError, match=r"got OramemVectorStore: an adapter takes the oramem store itself.*"
                                        r"vector_store\.as_retriever\(\)"):
        langchain.OramemRetriever(store=vectors, user_id="alice")
    # what the message advises works
    vectors.add_texts(["Alice drinks tea"])
    assert [d.page_content for d in vectors.as_retriever().invoke("tea")] == ["Alice drinks tea"]


@pytest.mark.parametrize("name", ["user_id", "agent_id", "thread_id"])
@pytest.mark.parametrize("blank", ["", " ", "\t\n"], ids=repr)
def test_retriever_refuses_a_blank_scope_when_built(store, name, blank):
    langchain = adapter_or_skip("oramem.integrations.langchain")
    with pytest.raises(ValueError, match=f"{name} must be a non-empty str \\(not only white space\\) or None"):
        langchain.OramemRetriever(store=store, **{name: blank})


@pytest.mark.parametrize("k", [0, -1])
def test_retriever_refuses_k_below_one_when_built(store, k):
    langchain = adapter_or_skip("oramem.integrations.langchain")
    with pytest.raises(ValueError, match=r"k must be an int >= 1"):
        langchain.OramemRetriever(store=store, k=k)
    store.add(["Alice drinks tea"], "memory")
    assert len(langchain.OramemRetriever(store=store, k=1).invoke("tea")) == 1


@pytest.mark.parametrize(("options", "message"), [
    ({"strategy": "semantic"}, r"strategy='semantic' is not valid"),
    ({"record_types": ["memories"]}, r"unknown record_type 'memories'"),
    ({"record_types": ["thread"]}, r"unknown record_type 'thread'"),
    ({"record_types": []}, r"record_types is empty"),
])
def test_retriever_refuses_unknown_search_options_when_built(store, options, message):
    """A misspelt strategy or record type was accepted when built and failed at every invoke."""
    langchain = adapter_or_skip("oramem.integrations.langchain")
    with pytest.raises(ValueError, match=message):
        langchain.OramemRetriever(store=store, user_id="alice", **options)
    store.add(["Alice drinks tea"], "memory", user_ids="alice")
    kept = langchain.OramemRetriever(store=store, user_id="alice", strategy="keyword", record_types=["memory"])
    assert [d.page_content for d in kept.invoke("tea")] == ["Alice drinks tea"]


def test_from_texts_takes_an_oramem_embedder(tmp_path):
    langchain = adapter_or_skip("oramem.integrations.langchain")
    path = tmp_path / "lc.db"
    vectors = langchain.OramemVectorStore.from_texts(
        ["Alice drinks dark roast coffee", "Alice works on databases"], HashEmbedder(64), path=str(path), user_id="alice")
    try:
        assert vectors.similarity_search("coffee", k=1)[0].page_content == "Alice drinks dark roast coffee"
    finally:
        vectors._store.close()
    with SQLiteMemoryStore(str(path), embedder=HashEmbedder(64)) as reopened:
        assert {r.user_id for r in reopened.list("memory")} == {"alice"}


@pytest.mark.parametrize("embedding", [object(), "all-MiniLM-L6-v2", lambda texts: [[1.0] for _ in texts]],
                         ids=["object", "str", "function"])
def test_from_texts_refuses_what_is_no_embedder_before_opening_a_file(tmp_path, embedding):
    langchain = adapter_or_skip("oramem.integrations.langchain")
    path = tmp_path / "lc.db"
    with pytest.raises(TypeError, match=r"embedding must be a LangChain Embeddings \(with embed_documents and "
                                        r"embed_query\) or an oramem embedder"):
        langchain.OramemVectorStore.from_texts(["x"], embedding, path=str(path))
    assert not path.exists()


def test_langchain_embedder_without_langgraph_says_what_to_install(monkeypatch):
    from oramem.integrations.lc_embeddings import LangChainEmbedder

    # the langchain extra alone: langgraph is not importable
    monkeypatch.setitem(sys.modules, "langgraph.store.base.embed", None)
    with pytest.raises(ImportError, match=r"needs 'langgraph\.store\.base\.embed'; install it with: pip install 'oramem\[langgraph\]'"):
        LangChainEmbedder(lambda texts: [[1.0, 0.0] for _ in texts], 2)


def test_scope_from_namespace_is_the_namespace_label_as_the_readme_says(store):
    """README "LangGraph long-term memory store": with ``scope_from_namespace`` a read above the
    user's label spans every user's items, and an item put without the label belongs to no user
    (erasing a user leaves it). A user of the trial took the mapping for a per-user fence."""
    langgraph = adapter_or_skip("oramem.integrations.langgraph")
    lg = langgraph.OramemStore(store, scope_from_namespace={"user_id": 1})
    lg.put(("memories", "alice"), "k", {"text": "Alice drinks tea"})
    lg.put(("memories", "bob"), "k", {"text": "Bob drinks tea"})
    lg.put(("memories",), "shared", {"text": "everyone drinks tea"})
    assert sorted(i.value["text"] for i in lg.search(("memories",), query="tea")) == [
        "Alice drinks tea", "Bob drinks tea", "everyone drinks tea"]
    assert lg.list_namespaces(prefix=("memories",)) == [("memories",), ("memories", "alice"), ("memories", "bob")]
    assert [i.value["text"] for i in lg.search(("memories", "alice"), query="tea")] == ["Alice drinks tea"]
    store.forget(user_id="alice")
    assert lg.get(("memories", "alice"), "k") is None
    assert lg.get(("memories",), "shared").value == {"text": "everyone drinks tea"}
    assert {r.user_id for r in store.list("memory")} == {"bob", None}


async def test_session_items_teach_the_knowledge_layer_only_through_write():
    """README "OpenAI Agents SDK session" said the knowledge layer sees the conversation; it
    reads no session item by itself: the application passes the turn to KnowledgeMemory.write,
    with the session id and the user, as the README now says (and the items stay the items)."""
    agents = adapter_or_skip("oramem.integrations.openai_agents")
    from oramem.knowledge import KnowledgeMemory
    from oramem.testing import ScriptedLLM

    llm = ScriptedLLM({
        "event_emotion": {"emotion": "neutral", "intensity": 0.1, "energy": "low"},
        "extract": {"entities": [{"name": "Alice", "type": "person"}, {"name": "Lyon", "type": "place"}],
                    "facts": [{"subject": "Alice", "fact": "Alice lives in Lyon", "attribute_key": "residence",
                               "confidence": "explicit_statement"}],
                    "relations": [], "intentions": [], "observations": []},
    })
    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(64), search_strategy="hybrid") as store:
        km = KnowledgeMemory(store, llm)
        try:
            session = agents.OramemSession("conversation-1", store, user_id="alice")
            await session.add_items([{"role": "user", "content": "I live in Lyon."},
                                     {"role": "assistant", "content": "Noted."}])
            assert await km.get_all_async("agent-1", user_id="alice") == []
            written = await km.write_async("agent-1", "I live in Lyon.", "Alice", user_id="alice",
                                           session_id="conversation-1")
            assert [f["fact_text"] for f in written.facts_added] == ["Alice lives in Lyon"]
            assert [i["content"] for i in await session.get_items()] == ["I live in Lyon.", "Noted."]
        finally:
            await km.close_async()


async def test_similarity_search_by_vector_in_scope_sync_and_async():
    """trial33: LangChain's similarity_search_by_vector (and its async twin) raised a bare
    NotImplementedError, while max_marginal_relevance_search_by_vector worked; now it is the
    store's vector search with the adapter's scope and an oramem metadata filter."""
    langchain = adapter_or_skip("oramem.integrations.langchain")
    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(64), search_strategy="hybrid") as store:
        alice = langchain.OramemVectorStore(store, user_id="alice")
        alice.add_texts(["alice likes tea", "alice hates rain"], metadatas=[{"t": 1}, {"t": 2}])
        langchain.OramemVectorStore(store, user_id="bob").add_texts(["bob likes tea"])
        vector = store.embedder.embed(["likes tea"], is_query=True)[0].tolist()
        expected = [d.page_content for d in alice.similarity_search("likes tea", k=5, strategy="vector")]
        assert [d.page_content for d in alice.similarity_search_by_vector(vector, k=5)] == expected
        assert sorted(expected) == ["alice hates rain", "alice likes tea"]
        assert [d.page_content for d in await alice.asimilarity_search_by_vector(vector, k=5)] == expected
        assert [d.metadata for d in alice.similarity_search_by_vector(vector, k=5, filter={"t": 2})] == [{"t": 2}]
        with pytest.raises(TypeError, match="similarity_search_by_vector has no argument 'user_id'; it accepts k, filter"):
            alice.similarity_search_by_vector(vector, user_id="bob")
        with pytest.raises(TypeError, match="asimilarity_search_by_vector has no argument 'strategy'"):
            await alice.asimilarity_search_by_vector(vector, strategy="keyword")
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            alice.similarity_search_by_vector(vector, k=0)
        with pytest.raises(TypeError, match="takes an embedding"):
            alice.similarity_search_by_vector("likes tea")


async def test_langgraph_reads_a_read_only_store_without_refreshing_ttls(tmp_path):
    """trial33: over a store opened read-only, every get or search of an item with a TTL failed
    ("update needs to write ... opened read-only"): LangGraph's default refresh_on_read writes.
    Now such reads leave the TTL as it is; a refresh asked for is refused, saying how to read."""
    langgraph = adapter_or_skip("oramem.integrations.langgraph")
    path = str(tmp_path / "lg.db")
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32), search_strategy="hybrid") as writable:
        lg = langgraph.OramemStore(writable, scope_from_namespace={"user_id": 1})
        lg.put(("m", "alice"), "tea", {"text": "Alice drinks tea"}, ttl=60)
        lg.put(("m", "alice"), "plain", {"text": "Alice drinks water"})
        before = {r.id: (r.expires_at, r.metadata["langgraph"]["expires_at"] if "expires_at" in r.metadata["langgraph"]
                         else None) for r in writable.list("memory")}
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32), read_only=True) as store:
        lg = langgraph.OramemStore(store, scope_from_namespace={"user_id": 1})
        assert lg.get(("m", "alice"), "tea").value == {"text": "Alice drinks tea"}
        assert (await lg.aget(("m", "alice"), "tea")).value == {"text": "Alice drinks tea"}
        assert sorted(i.key for i in lg.search(("m", "alice"), query="drinks")) == ["plain", "tea"]
        assert sorted(i.key for i in await lg.asearch(("m", "alice"))) == ["plain", "tea"]
        assert lg.get(("m", "alice"), "tea", refresh_ttl=False).value == {"text": "Alice drinks tea"}
        message = "refresh_ttl=True extends the TTL of the items read, which writes, and this oramem store is read-only"
        with pytest.raises(ValueError, match=message):
            lg.get(("m", "alice"), "tea", refresh_ttl=True)
        with pytest.raises(ValueError, match=message):
            await lg.aget(("m", "alice"), "tea", refresh_ttl=True)
        with pytest.raises(ValueError, match=message):
            lg.search(("m", "alice"), query="tea", refresh_ttl=True)
        with pytest.raises(ValueError, match=message):
            await lg.asearch(("m", "alice"), refresh_ttl=True)
        with pytest.raises(ValueError, match=r'ttl=\{"refresh_on_read": True\} extends the TTL'):
            langgraph.OramemStore(store, scope_from_namespace={"user_id": 1}, ttl={"refresh_on_read": True})
        after = {r.id: (r.expires_at, r.metadata["langgraph"]["expires_at"] if "expires_at" in r.metadata["langgraph"]
                        else None) for r in store.list("memory")}
    assert after == before
    # a writable store still refreshes on read (LangGraph's default)
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32)) as writable:
        lg = langgraph.OramemStore(writable, scope_from_namespace={"user_id": 1})
        assert lg.get(("m", "alice"), "tea").value == {"text": "Alice drinks tea"}
        refreshed = {r.id: r.metadata["langgraph"].get("expires_at") for r in writable.list("memory")}
    assert [refreshed[i] > before[i][1] for i in before if before[i][1] is not None] == [True]
