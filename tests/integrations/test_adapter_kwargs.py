"""No keyword argument is silently dropped by the LangChain / LangGraph adapters (red32).

``bob.similarity_search(q, user_id="alice")`` used to search Bob's scope and say nothing: a
caller who believed she had changed the scope (or passed an option under a name the method
does not read) got results she had not asked for. Every public method that takes ``**kwargs``
now reads each one or refuses it (TypeError naming the argument, what the method accepts and,
for a scope name, that scope is fixed at construction), sync and async twins alike, before
anything is read or written. What LangChain itself passes keeps working: ``ids`` (add_texts /
add_documents / from_documents), ``search_kwargs`` through ``as_retriever`` (k, filter,
strategy, fetch_k, lambda_mult; ``score_threshold`` is taken by LangChain), ``verbose`` which
``BaseRetriever.invoke`` reads for its callbacks and then hands on, ``run_id`` (taken by invoke).
"""

from __future__ import annotations

import asyncio
import os

import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")
require_extra("langchain_tests", "langchain")

from langchain_core.documents import Document  # noqa: E402
from langchain_tests.integration_tests import VectorStoreIntegrationTests  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langchain import OramemRetriever, OramemVectorStore  # noqa: E402
from oramem.integrations.lc_embeddings import LangChainEmbedder  # noqa: E402

SCOPE_WORDS = "fixed when the OramemVectorStore is constructed"


@pytest.fixture
def two_users():
    """Alice's and Bob's records in one store; the vector stores of each."""
    embeddings = VectorStoreIntegrationTests.get_embeddings()
    with SQLiteMemoryStore(embedder=LangChainEmbedder(embeddings, 6), search_strategy="hybrid") as store:
        alice = OramemVectorStore(store, user_id="alice")
        bob = OramemVectorStore(store, user_id="bob")
        alice.add_texts(["alice plan for coffee"], ids=["a1"])
        bob.add_texts(["bob plan for coffee"], ids=["b1"])
        yield store, alice, bob


def _contents(docs):
    return sorted(d.page_content for d in docs)


# -- scope names: Bob cannot move himself into Alice's scope per call, and is told so ----------
@pytest.mark.parametrize("name", ["user_id", "agent_id", "thread_id"])
@pytest.mark.parametrize(
    "method",
    ["similarity_search", "similarity_search_with_score", "asimilarity_search", "asimilarity_search_with_score",
     "similarity_search_with_relevance_scores", "asimilarity_search_with_relevance_scores"],
)
def test_search_refuses_a_scope_name(two_users, method, name):
    _, _, bob = two_users
    call = getattr(bob, method)
    with pytest.raises(TypeError) as refused:
        out = call("plan coffee", k=5, strategy="keyword", **{name: "alice"})
        if asyncio.iscoroutine(out):
            asyncio.run(out)
    text = str(refused.value)
    assert repr(name) in text and "k, filter, strategy" in text and SCOPE_WORDS in text


def test_bob_search_with_alice_user_id_never_returns_bob_results_silently(two_users):
    """The red32 finding itself: before, this returned Bob's record as if it were the answer."""
    _, alice, bob = two_users
    assert _contents(bob.similarity_search("plan coffee", k=5, strategy="keyword")) == ["bob plan for coffee"]
    with pytest.raises(TypeError, match="user_id"):
        bob.similarity_search("plan coffee", k=5, strategy="keyword", user_id="alice")
    with pytest.raises(TypeError, match="user_id"):
        asyncio.run(bob.asimilarity_search("plan coffee", k=5, strategy="keyword", user_id="alice"))
    # the way to Alice's scope is her own vector store
    assert _contents(alice.similarity_search("plan coffee", k=5, strategy="keyword")) == ["alice plan for coffee"]


@pytest.mark.parametrize("method", ["max_marginal_relevance_search", "amax_marginal_relevance_search"])
def test_mmr_refuses_a_scope_name_with_the_scope_hint(two_users, method):
    _, _, bob = two_users
    with pytest.raises(TypeError) as refused:
        out = getattr(bob, method)("plan coffee", k=1, user_id="alice")
        if asyncio.iscoroutine(out):
            asyncio.run(out)
    assert "'user_id'" in str(refused.value) and "k, fetch_k, lambda_mult, filter" in str(refused.value)
    assert SCOPE_WORDS in str(refused.value)


@pytest.mark.parametrize("method", ["add_texts", "aadd_texts"])
def test_add_texts_refuses_a_scope_name_before_writing(two_users, method):
    store, _, bob = two_users
    before = len(store.list("memory", limit=None))
    with pytest.raises(TypeError) as refused:
        out = getattr(bob, method)(["written for alice?"], user_id="alice")
        if asyncio.iscoroutine(out):
            asyncio.run(out)
    assert "'user_id'" in str(refused.value) and SCOPE_WORDS in str(refused.value)
    assert len(store.list("memory", limit=None)) == before


@pytest.mark.parametrize("method", ["add_documents", "aadd_documents"])
def test_add_documents_refuses_an_unknown_argument_and_keeps_ids(two_users, method):
    store, _, bob = two_users
    before = len(store.list("memory", limit=None))

    def run(*args, **kwargs):
        out = getattr(bob, method)(*args, **kwargs)
        return asyncio.run(out) if asyncio.iscoroutine(out) else out

    with pytest.raises(TypeError, match="'user_id'.*accepts ids"):
        run([Document(page_content="for alice?")], user_id="alice")
    with pytest.raises(TypeError, match="'batch_size'"):
        run([Document(page_content="x")], batch_size=10)
    assert len(store.list("memory", limit=None)) == before
    # ids= (what LangChain's add_texts / from_documents pass) is honoured and wins over Document.id
    assert run([Document(page_content="bob two", id="doc-id")], ids=["given"]) == ["given"]
    assert [d.page_content for d in bob.get_by_ids(["given"])] == ["bob two"]


@pytest.mark.parametrize("method", ["delete", "adelete"])
def test_delete_refuses_an_unknown_argument_before_deleting(two_users, method):
    store, _, bob = two_users
    with pytest.raises(TypeError) as refused:
        out = getattr(bob, method)(["b1"], user_id="alice")
        if asyncio.iscoroutine(out):
            asyncio.run(out)
    assert "'user_id'" in str(refused.value) and "accepts ids" in str(refused.value)
    assert [d.id for d in bob.get_by_ids(["b1"])] == ["b1"]


def test_search_refuses_options_it_does_not_read(two_users):
    """score_threshold given straight to similarity_search (not through LangChain's relevance
    search, which takes it) and options of other stores were dropped; now each is named."""
    _, _, bob = two_users
    for name, value in (("score_threshold", 0.9), ("fetch_k", 3), ("where", {"a": 1}), ("filters", {"a": 1})):
        with pytest.raises(TypeError, match=f"similarity_search has no argument '{name}'; it accepts k, filter, strategy"):
            bob.similarity_search("plan", **{name: value})
        with pytest.raises(TypeError, match=f"asimilarity_search has no argument '{name}'"):
            asyncio.run(bob.asimilarity_search("plan", **{name: value}))


# -- what LangChain itself passes keeps working, and is honoured ------------------------------
def test_as_retriever_search_kwargs_are_honoured_and_unknown_ones_refused(two_users):
    _, _, bob = two_users
    retriever = bob.as_retriever(search_kwargs={"k": 1, "strategy": "keyword", "filter": None})
    assert _contents(retriever.invoke("plan coffee")) == ["bob plan for coffee"]
    assert _contents(asyncio.run(retriever.ainvoke("plan coffee"))) == ["bob plan for coffee"]
    # invoke(verbose=True): LangChain reads it for its callbacks, then hands it on to the search
    assert _contents(retriever.invoke("plan coffee", verbose=True)) == ["bob plan for coffee"]
    assert _contents(asyncio.run(retriever.ainvoke("plan coffee", verbose=True))) == ["bob plan for coffee"]
    threshold = bob.as_retriever(search_type="similarity_score_threshold",
                                 search_kwargs={"score_threshold": 0.0, "k": 2, "strategy": "keyword"})
    assert _contents(threshold.invoke("plan coffee")) == ["bob plan for coffee"]
    mmr = bob.as_retriever(search_type="mmr", search_kwargs={"k": 1, "fetch_k": 2, "lambda_mult": 0.5})
    assert _contents(mmr.invoke("plan coffee", verbose=True)) == ["bob plan for coffee"]
    assert _contents(asyncio.run(mmr.ainvoke("plan coffee"))) == ["bob plan for coffee"]
    leaky = bob.as_retriever(search_kwargs={"user_id": "alice"})
    with pytest.raises(TypeError, match=SCOPE_WORDS):
        leaky.invoke("plan coffee")
    with pytest.raises(TypeError, match=SCOPE_WORDS):
        asyncio.run(leaky.ainvoke("plan coffee"))


def test_verbose_must_be_a_bool(two_users):
    _, _, bob = two_users
    with pytest.raises(TypeError, match="verbose must be a bool"):
        bob.similarity_search("plan", verbose="yes")


def test_from_texts_refuses_an_unknown_argument_before_opening_a_store(tmp_path):
    embeddings = VectorStoreIntegrationTests.get_embeddings()
    path = tmp_path / "made.db"
    with pytest.raises(TypeError, match="from_texts has no argument 'collection_name'"):
        OramemVectorStore.from_texts(["a"], embeddings, path=str(path), collection_name="docs")
    assert not os.path.exists(path)
    # LangChain's from_documents passes ids= and the constructor's keywords through: honoured
    made = OramemVectorStore.from_documents([Document(page_content="one", id="d1")], embeddings, user_id="carol")
    [doc] = made.get_by_ids(["d1"])
    assert doc.page_content == "one"
    assert made._store.get("memory", "d1").user_id == "carol"
    made_async = asyncio.run(OramemVectorStore.afrom_texts(["two"], embeddings, ids=["d2"], thread_id="t"))
    assert made_async._store.get("memory", "d2").thread_id == "t"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"record_type": "message"}, "record_type must be memory, fact, preference or guideline"),
        ({"user_id": "  "}, r"user_id must be a non-empty str \(not only white space\) or None, got '  '"),
        ({"thread_id": ""}, r"thread_id must be a non-empty str \(not only white space\) or None, got ''"),
        ({"agent_id": 7}, r"agent_id must be a non-empty str \(not only white space\) or None, got 7"),
    ],
)
def test_from_texts_refuses_a_bad_constructor_value_before_opening_a_store(tmp_path, kwargs, message):
    """A value the constructor refuses was refused only after the SQLite file had been created
    and the embedder probed (kw37 noticed): the file stayed behind, the store left open. Now the
    constructor's checks run first; the same values are refused by the constructor itself."""
    embeddings = VectorStoreIntegrationTests.get_embeddings()
    path = tmp_path / "made.db"
    with pytest.raises((ValueError, TypeError), match=message):
        OramemVectorStore.from_texts(["a"], embeddings, path=str(path), **kwargs)
    assert not os.path.exists(path)
    with SQLiteMemoryStore(embedder=LangChainEmbedder(embeddings, 6)) as store:
        with pytest.raises((ValueError, TypeError), match=message):
            OramemVectorStore(store, **kwargs)


# -- the retriever ------------------------------------------------------------------------------
@pytest.fixture
def retrieval_store():
    with SQLiteMemoryStore(search_strategy="keyword") as store:
        store.add(["alice note on coffee"], "memory", user_ids="alice")
        store.add(["bob note on coffee"], "memory", user_ids="bob")
        yield store


@pytest.mark.parametrize("asynchronous", [False, True])
def test_retriever_refuses_a_scope_name_with_the_scope_hint(retrieval_store, asynchronous):
    bob = OramemRetriever(store=retrieval_store, user_id="bob")
    with pytest.raises(TypeError) as refused:
        if asynchronous:
            asyncio.run(bob.ainvoke("coffee", user_id="alice"))
        else:
            bob.invoke("coffee", user_id="alice")
    assert "OramemRetriever.invoke has no argument 'user_id'; it accepts k" in str(refused.value)
    assert "fixed when the OramemRetriever is constructed" in str(refused.value)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_retriever_refuses_a_field_per_call_and_names_the_field(retrieval_store, asynchronous):
    bob = OramemRetriever(store=retrieval_store, user_id="bob")
    with pytest.raises(TypeError, match="filter is a field of the retriever"):
        if asynchronous:
            asyncio.run(bob.ainvoke("coffee", filter={"topic": "x"}))
        else:
            bob.invoke("coffee", filter={"topic": "x"})


@pytest.mark.parametrize("asynchronous", [False, True])
def test_retriever_takes_k_and_langchains_verbose(retrieval_store, asynchronous):
    """BaseRetriever.invoke reads verbose for its callback manager and hands it on: it was a
    TypeError from Python ('unexpected keyword argument'); k per call is honoured."""
    bob = OramemRetriever(store=retrieval_store, user_id="bob")
    if asynchronous:
        docs = asyncio.run(bob.ainvoke("coffee", verbose=True, k=1))
    else:
        docs = bob.invoke("coffee", verbose=True, k=1)
    assert _contents(docs) == ["bob note on coffee"]
