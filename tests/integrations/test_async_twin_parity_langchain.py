"""Sync/async parity of the LangChain adapters, one user against another (red32; SC-13 tenant
scopes, the adapters' scope rules in oramem/integrations/langchain.py and _threads.py).

Each LangChain method has its async twin (``add_texts`` / ``aadd_texts``, ``messages`` /
``aget_messages``, ``invoke`` / ``ainvoke``, ...). Both are one plan of store calls driven on
the sync or the async store API (oramem._plans), so every scope check, refusal and thread rule
should be the same; this test holds them to it from outside. Bob's adapters (scoped to him, in
the thread he shares with Alice) run the same script once through the sync methods and once
through the async twins, on two stores seeded alike: Alice's record ids taken, read and
deleted by Bob, his search and max marginal relevance search over her records, his chat history
added, read and cleared in the shared thread and in a thread holding only records of no user
(refused, SC-13.3). Results, errors (class and message) and every record afterwards must be
identical; ``test_every_public_langchain_method_has_a_scenario`` fails when a method is added
without one.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from integrations.colours import assert_colours_agree
from integrations.extras import require_extra

require_extra("langchain_core", "langchain")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langchain import OramemChatMessageHistory, OramemRetriever, OramemVectorStore  # noqa: E402
from oramem.testing import HashEmbedder  # noqa: E402

ALICE, BOB, THREAD, SHARED_ONLY = "alice", "bob", "shared-thread", "agent-shared"


def _open(path: Any) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(str(path), embedder=HashEmbedder(32))
    store.add(["Alice drinks green tea", "Alice's passport X1234567"], "memory", record_ids=["a1", "a2"],
              user_ids=ALICE, thread_ids=THREAD)
    store.add(["Bob drinks black tea"], "memory", record_ids=["b1"], user_ids=BOB, thread_ids=THREAD)
    store.add(["Alice: hi", "assistant to Alice"], "message", record_ids=["am1", "am2"], user_ids=ALICE,
              thread_ids=THREAD, roles=["user", "assistant"])
    store.add(["the agent's shared note"], "memory", record_ids=["s1"], thread_ids=SHARED_ONLY)
    return store


def _norm(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, Document):
        return ("doc", value.id, value.page_content, sorted((value.metadata or {}).items()))
    if hasattr(value, "type") and hasattr(value, "content"):  # a LangChain message
        return ("msg", value.type, value.content)
    if isinstance(value, float):
        return round(value, 6)
    return value


# (object, sync method, async method, args, kwargs): the objects are built per store by _adapters
SCRIPT: list[tuple[str, str, str, tuple, dict]] = [
    ("vs", "add_texts", "aadd_texts", (["Bob likes rye"],), {"ids": ["b2"]}),
    ("vs", "add_texts", "aadd_texts", (["Bob takes Alice's id"],), {"ids": ["a1"]}),
    ("vs", "add_documents", "aadd_documents", ([Document("Bob again", id="b1", metadata={"k": 1})],), {}),
    ("vs", "add_documents", "aadd_documents", ([Document("over hers", id="a2")],), {}),
    ("vs", "get_by_ids", "aget_by_ids", (["a1", "a2", "b1", "b2"],), {}),
    ("vs", "get_by_ids", "aget_by_ids", ("a1",), {}),
    ("vs", "similarity_search", "asimilarity_search", ("tea passport",), {"k": 10}),
    ("vs", "similarity_search_with_score", "asimilarity_search_with_score", ("tea",), {"k": 10, "filter": {"k": 1}}),
    ("vs", "similarity_search_with_relevance_scores", "asimilarity_search_with_relevance_scores", ("tea",), {"k": 10}),
    ("vs", "similarity_search", "asimilarity_search", ("tea",), {"k": 0}),
    ("vs", "max_marginal_relevance_search", "amax_marginal_relevance_search", ("tea",), {"k": 2, "fetch_k": 10}),
    ("vs", "max_marginal_relevance_search_by_vector", "amax_marginal_relevance_search_by_vector",
     ([0.1] * 32,), {"k": 2, "fetch_k": 10}),
    ("vs", "max_marginal_relevance_search", "amax_marginal_relevance_search", ("tea",), {"k": 2, "fetch_k": 1}),
    ("vs", "similarity_search_by_vector", "asimilarity_search_by_vector", ([0.1] * 32,), {"k": 10}),
    ("vs", "similarity_search_by_vector", "asimilarity_search_by_vector", ([0.1] * 32,), {"k": 10, "filter": {"k": 1}}),
    ("vs", "similarity_search_by_vector", "asimilarity_search_by_vector", ([0.1] * 32,), {"user_id": ALICE}),
    ("vs", "delete", "adelete", (["a1", "a2"],), {}),
    ("vs", "delete", "adelete", (["a1", "b2"],), {}),
    ("vs", "delete", "adelete", ("b1",), {}),
    ("vs", "delete", "adelete", (None,), {}),
    ("retriever", "invoke", "ainvoke", ("passport tea",), {}),
    ("retriever", "invoke", "ainvoke", ("tea",), {"k": 0}),
    ("history", "add_messages", "aadd_messages", ([HumanMessage("Bob: hi"), AIMessage("hello Bob")],), {}),
    ("history", "add_messages", "aadd_messages", (["not a message"],), {}),
    ("history", "messages", "aget_messages", (), {}),
    ("history", "clear", "aclear", (), {}),
    ("history", "messages", "aget_messages", (), {}),
    ("shared_history", "add_messages", "aadd_messages", ([HumanMessage("Bob into the agent's thread")],), {}),
    ("shared_vs", "add_texts", "aadd_texts", (["Bob into the agent's thread"],), {"ids": ["b9"]}),
    ("shared_history", "messages", "aget_messages", (), {}),
]


def _adapters(store: SQLiteMemoryStore) -> dict[str, Any]:
    return {
        "vs": OramemVectorStore(store, user_id=BOB, thread_id=THREAD),
        "shared_vs": OramemVectorStore(store, user_id=BOB, thread_id=SHARED_ONLY),
        "retriever": OramemRetriever(store=store, k=10, user_id=BOB, thread_id=THREAD),
        "history": OramemChatMessageHistory(store, THREAD, user_id=BOB),
        "shared_history": OramemChatMessageHistory(store, SHARED_ONLY, user_id=BOB),
    }


def _outcome(value: Any) -> tuple:
    return ("ok", _norm(value))


def _error(exc: Exception) -> tuple:
    # Python's own binding error names the method called: aadd_texts() against add_texts(); so
    # does the adapter's refusal of an argument of (a)similarity_search_by_vector
    return ("error", type(exc).__name__, str(exc).replace("aadd_", "add_").replace("aget_", "get_")
            .replace("asimilarity_search_by_vector", "similarity_search_by_vector"))


def _run_sync(store: SQLiteMemoryStore) -> list:
    objs, out = _adapters(store), []
    for obj, name, _, args, kwargs in SCRIPT:
        try:
            attr = getattr(objs[obj], name)
            out.append(_outcome(attr if name == "messages" else attr(*args, **kwargs)))
        except Exception as exc:  # noqa: BLE001 - the class and message are what is compared
            out.append(_error(exc))
    return out


def _run_async(store: SQLiteMemoryStore) -> list:
    async def main() -> list:
        objs, out = _adapters(store), []
        for obj, _, name, args, kwargs in SCRIPT:
            try:
                out.append(_outcome(await getattr(objs[obj], name)(*args, **kwargs)))
            except Exception as exc:  # noqa: BLE001
                out.append(_error(exc))
        return out
    return asyncio.run(main())


def _records(store: SQLiteMemoryStore) -> list:
    return sorted((r.record_type, r.id, r.content, r.user_id, r.thread_id, repr(r.metadata))
                  for t in ("memory", "message") for r in store.list(t, limit=None))


def test_bob_against_alice_gets_the_same_answers_from_both_colours(tmp_path):
    sync_store, async_store = _open(tmp_path / "sync.db"), _open(tmp_path / "async.db")
    try:
        sync_out, async_out = _run_sync(sync_store), _run_async(async_store)
        assert_colours_agree(sync_out, async_out, SCRIPT, _records(sync_store), _records(async_store))
        seen = repr(sync_out)
        assert "passport" not in seen and "green tea" not in seen and "Alice: hi" not in seen
        hers = [r for r in _records(sync_store) if r[3] == ALICE]
        assert [r[1] for r in hers] == ["a1", "a2", "am1", "am2"]
        assert {r[2] for r in hers} == {"Alice drinks green tea", "Alice's passport X1234567", "Alice: hi",
                                        "assistant to Alice"}
    finally:
        sync_store.close()
        async_store.close()


def _public(cls: type) -> set[str]:
    return {n for n, v in inspect.getmembers(cls) if not n.startswith("_") and n in cls.__dict__}


def test_every_public_langchain_method_has_a_scenario():
    """A method the adapter defines (not inherited unchanged) without a step above fails here."""
    scripted = {name for _, s, a, _, _ in SCRIPT for name in (s, a)}
    not_calls = {"embeddings", "from_texts", "model_config", "store", "k", "strategy", "filter", "record_types",
                 "user_id", "agent_id", "thread_id", "model_fields", "model_computed_fields", "model_post_init"}
    for cls in (OramemVectorStore, OramemRetriever, OramemChatMessageHistory):
        missing = _public(cls) - scripted - not_calls
        assert not missing, f"{cls.__name__}: add a Bob-vs-Alice step for {sorted(missing)}"
