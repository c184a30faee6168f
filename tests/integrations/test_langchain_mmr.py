"""LangChain max marginal relevance on OramemVectorStore (round-3 F-20, still open in trial
31): ``max_marginal_relevance_search`` and ``as_retriever(search_type="mmr")`` raised
``NotImplementedError('')``."""

from __future__ import annotations

import asyncio

import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")

from langchain_core.documents import Document  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.embedders import HashEmbedder  # noqa: E402
from oramem.integrations.langchain import OramemVectorStore  # noqa: E402

TWINS = ["dark roast coffee beans from Lyon", "dark roast coffee beans from Lyon!", "dark roast coffee beans from Lyon."]
OTHER = "coffee with oat milk in the morning"


@pytest.fixture
def stores():
    with SQLiteMemoryStore(":memory:", embedder=HashEmbedder(256), search_strategy="hybrid") as store:
        alice = OramemVectorStore(store, user_id="alice")
        alice.add_documents([Document(t, metadata={"n": i}) for i, t in enumerate(TWINS + [OTHER])])
        OramemVectorStore(store, user_id="bob").add_documents([Document("dark roast coffee beans from Lyon, Bob's")])
        yield store, alice


def test_mmr_prefers_a_different_document_over_a_near_twin(stores):
    _, alice = stores
    plain = [d.page_content for d in alice.similarity_search("dark roast coffee beans", k=2, strategy="vector")]
    assert set(plain) <= set(TWINS)  # the two nearest are twins
    picked = [d.page_content for d in alice.max_marginal_relevance_search("dark roast coffee beans", k=2, fetch_k=10)]
    assert picked[0] in TWINS and picked[1] == OTHER
    # lambda_mult=1: relevance only, the plain order
    only = alice.max_marginal_relevance_search("dark roast coffee beans", k=2, fetch_k=10, lambda_mult=1.0)
    assert set(d.page_content for d in only) <= set(TWINS)


def test_mmr_keeps_the_scope_and_the_filter(stores):
    _, alice = stores
    got = alice.max_marginal_relevance_search("dark roast coffee beans", k=5, fetch_k=10)
    assert "Bob's" not in " ".join(d.page_content for d in got) and len(got) == 4
    filtered = alice.max_marginal_relevance_search("coffee", k=4, fetch_k=10, filter={"n": {"$gte": 2}})
    assert {d.metadata["n"] for d in filtered} == {2, 3}


def test_mmr_retriever_and_async(stores):
    _, alice = stores
    retriever = alice.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 10})
    assert [d.page_content for d in retriever.invoke("dark roast coffee beans")][1] == OTHER
    got = asyncio.run(alice.amax_marginal_relevance_search("dark roast coffee beans", k=2, fetch_k=10))
    assert got[1].page_content == OTHER
    assert asyncio.run(alice.amax_marginal_relevance_search("nothing stored like this", k=2, fetch_k=2, filter={"n": 99})) == []


def test_mmr_arguments_are_checked(stores):
    store, alice = stores
    with pytest.raises(ValueError, match=r"fetch_k must be an int >= k \(4\)"):
        alice.max_marginal_relevance_search("coffee", k=4, fetch_k=2)
    with pytest.raises(ValueError, match=r"lambda_mult must be a number in \[0, 1\]"):
        alice.max_marginal_relevance_search("coffee", lambda_mult=2)
    with pytest.raises(TypeError, match="max_marginal_relevance_search has no argument 'fetchk'; it accepts k, fetch_k, "
                                        "lambda_mult, filter"):
        alice.max_marginal_relevance_search("coffee", fetchk=10)
    with SQLiteMemoryStore(":memory:", vector_dim=8, search_strategy="vector") as bare:
        with pytest.raises(ValueError, match="opened without one"):
            OramemVectorStore(bare).max_marginal_relevance_search("coffee")


def test_mmr_by_text_is_audited_with_its_query_hash(stores):
    """red27: the text variants searched the store by vector, so the retrieval audit entry had
    no query hash and `oramem audit list --query Q` (find(query=Q), SC-16.4) missed every MMR
    search, which similarity_search's entries never do (SC-16.1: the adapters' searches go
    through the audit)."""
    from oramem.trust import set_audit
    from oramem.trust.audit import find

    store, alice = stores
    set_audit(store, True)
    alice.max_marginal_relevance_search("dark roast coffee beans", k=2, fetch_k=10)
    asyncio.run(alice.amax_marginal_relevance_search("oat milk", k=2, fetch_k=10))
    assert [e.user_id for e in find(store, query="dark roast coffee beans")] == ["alice"]
    assert [e.user_id for e in find(store, query="oat milk")] == ["alice"]


@pytest.mark.parametrize("query", ["", "   "])
def test_mmr_blank_query_is_refused_before_any_read(stores, query):
    """red27: a blank query was embedded and its nearest records returned (similarity_search
    refuses it: 'query is blank'); now refused by the store before its read (no audit entry)."""
    from oramem.errors import ArgumentError
    from oramem.trust import set_audit
    from oramem.trust.audit import find

    store, alice = stores
    set_audit(store, True)
    with pytest.raises(ArgumentError, match="query is blank"):
        alice.max_marginal_relevance_search(query, k=2, fetch_k=10)
    with pytest.raises(ArgumentError, match="query is blank"):
        asyncio.run(alice.amax_marginal_relevance_search(query, k=2, fetch_k=10))
    assert find(store) == []


def test_bob_mmr_never_sees_alice_whatever_the_filter(stores):
    """red27: MMR keeps the vector store's exact scope like similarity_search; a filter naming
    her metadata or her user id as a metadata key finds nothing of hers."""
    store, _ = stores
    bob = OramemVectorStore(store, user_id="bob")
    for flt in (None, {"n": {"$gte": 0}}, {"$or": [{"n": 0}, {"n": {"$exists": False}}]}, {"user_id": "alice"}):
        got = bob.max_marginal_relevance_search("dark roast coffee beans", k=10, fetch_k=10**6, lambda_mult=0, filter=flt)
        assert all("Bob's" in d.page_content for d in got), flt
        vec = store.embedder.embed(["dark roast coffee beans"], is_query=True)[0]
        got = asyncio.run(bob.amax_marginal_relevance_search_by_vector(vec, k=10, fetch_k=10, filter=flt))
        assert all("Bob's" in d.page_content for d in got), flt
    nobody = OramemVectorStore(store)  # no user: records without one, never hers
    assert nobody.max_marginal_relevance_search("dark roast coffee beans", k=4, fetch_k=10) == []



def test_mmr_over_the_oracle_fake_sends_the_scope_and_the_query_text():
    """Over the recording fake (static-checked, not run against Oracle): Bob's MMR searches go
    out as one search_json each with his exact scope, his record type and strategy vector; the
    text variant carries the query text (audited by its hash, SC-16.4) with the vector the
    driver embedded, the vector variant the vector only."""
    import json as _json

    from oracle.plsql_standin import standin_store

    store, rec = standin_store()
    try:
        bob = OramemVectorStore(store, user_id="bob", agent_id="desk")
        start = len(rec.calls)
        assert bob.max_marginal_relevance_search("coffee", k=2, fetch_k=7, filter={"n": 1}) == []
        vec = HashEmbedder(8).embed(["coffee"], is_query=True)[0]
        assert bob.max_marginal_relevance_search_by_vector(vec, k=2, fetch_k=7) == []
        sent = [_json.loads(c.binds["in_request"]) for c in rec.calls[start:] if c.name == "oramem_search.search_json"]
        assert [(r["strategy"], r["k"], r["record_types"], r["query_text"] is not None, r["query_vector"] is not None)
                for r in sent] == [("vector", 7, ["memory"], True, True), ("vector", 7, ["memory"], False, True)]
        for r in sent:
            assert r["user"] == sent[0]["user"] and "bob" in _json.dumps(r["user"]) and "alice" not in _json.dumps(r)
            assert "desk" in _json.dumps(r["agent"])
        assert sent[0]["query_text"] == "coffee" and sent[0]["metadata_filter"] == {"n": 1}
    finally:
        store.close()
