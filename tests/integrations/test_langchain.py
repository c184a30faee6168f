"""LangChain adapters on SQLite: langchain-tests' standard VectorStore and retriever suites
(unmodified, subclassed as they are meant to be), plus our own tests."""

from __future__ import annotations

import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")
require_extra("langchain_tests", "langchain")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests, VectorStoreIntegrationTests  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langchain import OramemChatMessageHistory, OramemRetriever, OramemVectorStore  # noqa: E402
from oramem.integrations.lc_embeddings import LangChainEmbedder  # noqa: E402


class TestOramemVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self):
        embeddings = self.get_embeddings()
        with SQLiteMemoryStore(embedder=LangChainEmbedder(embeddings, 6), search_strategy="hybrid") as store:
            yield OramemVectorStore(store)


@pytest.fixture(scope="module")
def retrieval_store():
    with SQLiteMemoryStore(search_strategy="keyword") as store:
        store.add([f"oracle memory note {i}" for i in range(5)], "memory")
        yield store


class TestOramemRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _store(self, retrieval_store):
        self._backing = retrieval_store

    @property
    def retriever_constructor(self):
        return OramemRetriever

    @property
    def retriever_constructor_params(self):
        return {"store": self._backing}

    @property
    def retriever_query_example(self):
        return "oracle memory"


def test_vectorstore_scope_filter_and_strategy():
    with SQLiteMemoryStore(embedder=LangChainEmbedder(VectorStoreIntegrationTests.get_embeddings(), 6), search_strategy="hybrid") as store:
        alice = OramemVectorStore(store, user_id="alice")
        bob = OramemVectorStore(store, user_id="bob")
        [aid] = alice.add_texts(["alice likes coffee"], [{"topic": "food"}], ids=["a1"])
        bob.add_texts(["bob likes coffee"], [{"topic": "food"}])
        assert [d.page_content for d in alice.similarity_search("coffee", k=5, strategy="keyword")] == ["alice likes coffee"]
        assert alice.similarity_search("coffee", k=5, filter={"topic": "work"}) == []
        assert bob.get_by_ids([aid]) == []
        with pytest.raises(ValueError, match="another scope"):
            bob.add_texts(["hijack"], ids=["a1"])
        bob.delete([aid])
        assert store.get("memory", aid).content == "alice likes coffee"
        retriever = OramemRetriever(store=store, user_id="alice", strategy="keyword", filter={"topic": "food"})
        assert [d.id for d in retriever.invoke("coffee")] == [aid]


async def test_chat_message_history_over_thread_messages():
    with SQLiteMemoryStore(search_strategy="keyword") as store:
        history = OramemChatMessageHistory(store, "t1", user_id="alice")
        history.add_messages([HumanMessage("hi"), AIMessage("hello")])
        await history.aadd_messages([HumanMessage("bye")])
        assert [type(m) for m in history.messages] == [HumanMessage, AIMessage, HumanMessage]
        assert [m.content for m in await history.aget_messages()] == ["hi", "hello", "bye"]
        assert [(m.role, m.user_id) for m in store.list_thread_messages("t1")][:2] == [("human", "alice"), ("ai", "alice")]
        history.clear()
        assert history.messages == []
