"""A stateful, model-based test of tenant isolation through the framework adapters and the MCP
tools (the store-level machine is tests/contract/test_tenant_model.py).

Users ``alice`` and ``bob`` and the no-user scope (``None``, the agent's shared records) each
hold, for their own scope on agent ``desk``, one adapter of every kind over ONE SQLite file
(each actor opens its own ``SQLiteMemoryStore`` on that file, as separate processes would):
two LangGraph ``OramemStore`` (of no thread, and bound to ``t2``), two LangChain
``OramemVectorStore`` (of no thread, and bound to ``t1``) and an ``OramemRetriever``, a LangChain
``OramemChatMessageHistory`` and an OpenAI Agents ``OramemSession`` per thread (``t1``, ``t2``:
the same conversation names for everyone), and an MCP server (``build_server``) called
in-process through the SDK's ``Client``, as tests/integrations/test_tenant_mcp.py calls it.
Hypothesis runs random sequences of their public operations, with ids drawn from every id any
actor ever wrote (Bob naming Alice's ids) and the same namespaces, keys, document ids and
thread names for everyone; a reference model predicts every answer and the whole store.

Checked at every step:

- every read (LangGraph get/search/list_namespaces, similarity_search, get_by_ids, the
  retriever, chat messages, session items, MCP search/get) answers exactly what the model says
  the caller's scope holds, and every text it returns carries a marker word of the caller's
  own records; every count (``delete``'s bool, MCP ``deleted``/``updated``) is the caller's;
- no call of one actor changes another user's rows: all rows of every other user are compared
  field by field (content, metadata, scope, role, times) through the store API before and after
  the call. The no-user scope's rows change only as documented: a user's ``forget`` takes her
  private threads whole, the no-user records in them included (SC-13.3);
- refusals never name the other users; the record count ``forget`` tells the client is hers;
- the store as a whole (every message and memory row: id, content, scope, insertion order,
  and the thread rows with their openers) equals the model after every step.

Documented behaviour modelled, not called a bug (README "Several users", oramem/threads.py,
oramem/integrations/_threads.py): the session adapters and LangGraph/LangChain writes let Bob
write into a thread where Alice has records (a shared conversation); a user may not start
writing in a thread that holds only no-user records unless she opened it (``write_refusal``);
the MCP server is stricter (a client never writes where another user has records; a client of
one user never where only no-user records are, unless she opened it); and, as the engines erase
(``release_actor``, modelled so by tests/contract/test_tenant_model.py), a user's erasure takes
whole a thread she opened whose records of hers are gone. Writes of no user into such a thread
(a user opened it, no user has records there) are refused by the adapters and the MCP server
(thr45, after this machine found the agent's shared records erased with her: the test at the
end of this module).

``ORAMEM_MODEL_EXAMPLES=N`` (and ``ORAMEM_MODEL_STEPS=M``) runs a longer, randomised
exploration; the default run is derandomized (reproducible in CI), as the other model tests.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from integrations.extras import adapter_or_skip
from oramem import SQLiteMemoryStore

#: oramem.threads.write_refusal's two messages: a user starting in a thread of no-user records
#: only, and a write of no user into a thread a user opened and left (thr45)
REFUSED = "holds only records of no user|opened by a user who has no records in it"


def _why(actor: Optional[str]) -> str:
    return "a thread of no-user records only" if actor is not None else "a thread a user opened and left"

ACTORS = ("alice", "bob", None)
USERS = ("alice", "bob")
AGENT = "desk"
THREADS = ("t1", "t2")
VOCAB = ("apple", "river", "piano", "garden")
NAMESPACES = (("notes",), ("notes", "work"), ("prefs",))
PREFIXES = ((), ("notes",), ("notes", "work"), ("prefs",))
KEYS = ("k1", "k2")
DOC_IDS = ("d1", "d2")  # caller-chosen document ids, the same names for everyone
SEARCHED = ("memory", "fact", "preference", "guideline")  # search_memories' default types
TYPES = ("message", "memory")  # what these adapters write
BOUND = "t1"  # the thread of the thread-bound vector stores
LG_BOUND = "t2"  # the thread of the thread-bound LangGraph stores
BIG = 200  # more than any run stores: a search returns every match in scope

ADAPTERS = {
    "langgraph": "oramem.integrations.langgraph",
    "langchain": "oramem.integrations.langchain",
    "openai_agents": "oramem.integrations.openai_agents",
    "mcp": "oramem.integrations.mcp",
}

_EXAMPLES = int(os.environ.get("ORAMEM_MODEL_EXAMPLES", "0") or 0)
_STEPS = int(os.environ.get("ORAMEM_MODEL_STEPS", "0") or 0)
#: how often each rule and each interesting case ran (read by exploratory runs)
STATS: collections.Counter = collections.Counter()


def _settings(examples: int, steps: int) -> settings:
    exploring = _EXAMPLES > 0
    return settings(
        max_examples=_EXAMPLES if exploring else examples,
        stateful_step_count=_STEPS or (30 if exploring else steps),
        deadline=None,
        derandomize=not exploring,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        print_blob=True,
    )


def _marker(n: int) -> str:
    """A letters-only word unique to record number ``n`` (tests/contract/_support.marker_word)."""
    letters = ""
    for _ in range(3):
        n, r = divmod(n, 26)
        letters = chr(ord("a") + r) + letters
    return "mk" + letters + "x"


def _words(text: Optional[str]) -> list[str]:
    return re.findall(r"[a-z]+", (text or "").lower())


@dataclass(frozen=True)
class Row:
    """The model of one stored record."""

    record_type: str
    id: str
    content: str
    user_id: Optional[str]
    thread_id: Optional[str]
    order: int
    item: Optional[tuple] = None  # LangGraph (namespace, key, value) when a LangGraph put wrote it

    def scope(self) -> tuple:
        return (self.user_id, AGENT, self.thread_id)


def _snapshot(store: Any, user: Optional[str]) -> list[tuple]:
    """Every field of every record of ``user`` (None: of no user), as the store API gives it."""
    out = []
    for record_type in TYPES:
        for r in store.list(record_type, limit=None, user_id=user):
            out.append((r.record_type, r.id, r.content, json.dumps(r.metadata, sort_keys=True), r.thread_id, r.user_id,
                        r.agent_id, getattr(r, "role", None), r.created_at, r.expires_at, r.timestamp))
    return out


class AdapterModel(RuleBasedStateMachine):
    """The machine; ``enabled`` (adapter names) is set by the test."""

    enabled: frozenset = frozenset()

    def __init__(self) -> None:
        super().__init__()
        STATS["examples"] += 1
        self.counter = itertools.count()
        self.rows: dict[tuple[str, str], Row] = {}
        self.owner: dict[str, Optional[str]] = {}  # marker -> actor who wrote it
        self.ever: list[str] = []  # every record id ever written, oldest first
        # thread id -> the user of the record that first named it (its ``thread`` row, SC-2.3 /
        # SC-13.2); the row outlives its records until the thread is removed whole
        self.opener: dict[str, Optional[str]] = {}
        self.dir = tempfile.mkdtemp(prefix="iso42-")
        path = os.path.join(self.dir, "memory.db")
        self.audit = SQLiteMemoryStore(path, search_strategy="keyword")
        self.stores = {a: SQLiteMemoryStore(path, search_strategy="keyword") for a in ACTORS}
        self.lg: dict[Any, Any] = {}
        self.vs: dict[Any, Any] = {}
        self.retriever: dict[Any, Any] = {}
        self.history: dict[Any, Any] = {}
        self.session: dict[Any, Any] = {}
        self.mcp: dict[Any, Any] = {}
        for a in ACTORS:
            s = self.stores[a]
            if "langgraph" in self.enabled:
                from oramem.integrations.langgraph import OramemStore

                for bound in (None, LG_BOUND):
                    self.lg[a, bound] = OramemStore(s, user_id=a, agent_id=AGENT, thread_id=bound)
            if "langchain" in self.enabled:
                from oramem.integrations.langchain import OramemChatMessageHistory, OramemRetriever, OramemVectorStore

                for bound in (None, BOUND):  # documents of no thread, and bound to a conversation
                    self.vs[a, bound] = OramemVectorStore(s, user_id=a, agent_id=AGENT, thread_id=bound)
                self.retriever[a] = OramemRetriever(store=s, user_id=a, agent_id=AGENT, strategy="keyword", k=BIG)
                for t in THREADS:
                    self.history[a, t] = OramemChatMessageHistory(s, t, user_id=a, agent_id=AGENT)
            if "openai_agents" in self.enabled:
                from oramem.integrations.openai_agents import OramemSession

                for t in THREADS:
                    self.session[a, t] = OramemSession(t, s, user_id=a, agent_id=AGENT)
            if "mcp" in self.enabled:
                from oramem.integrations.mcp import build_server

                self.mcp[a] = build_server(s, user_id=a, agent_id=AGENT)

    def teardown(self) -> None:
        for s in self.stores.values():
            s.close()
        self.audit.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- model helpers -------------------------------------------------------------------
    def _text(self, actor: Optional[str], words: list[str]) -> str:
        m = _marker(next(self.counter))
        self.owner[m] = actor
        return " ".join([*words, m])

    def _add_row(self, record_type: str, rid: str, content: str, actor: Optional[str], thread: Optional[str],
                 item: Optional[tuple] = None) -> None:
        assert (record_type, rid) not in self.rows, rid
        self.rows[(record_type, rid)] = Row(record_type, rid, content, actor, thread, next(self.counter), item)
        if thread is not None:
            self.opener.setdefault(thread, actor)
        if rid not in self.ever:
            self.ever.append(rid)

    def _mine(self, actor: Optional[str], record_type: Optional[str] = None, thread: Any = ...) -> list[Row]:
        """The actor's rows (exact scope, agent desk), insertion order; ``thread`` ... = any."""
        return sorted((r for r in self.rows.values() if r.user_id == actor
                       and (record_type is None or r.record_type == record_type)
                       and (thread is ... or r.thread_id == thread)), key=lambda r: r.order)

    def _assert_own(self, actor: Optional[str], texts: list[str], where: str) -> None:
        """Every text an actor reads carries a marker word of a record the actor wrote."""
        for text in texts:
            owners = {self.owner[w] for w in _words(text) if w in self.owner}
            assert owners == {actor}, (where, actor, text, owners)

    def _pick_ids(self, data: Any, label: str) -> list[str]:
        pool = list(DOC_IDS) + ["nosuch"] + self.ever[-6:] + self.ever
        return data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3), label=label)

    def _adapter_refuses(self, actor: Optional[str], thread: str) -> bool:
        """oramem.threads.write_refusal: a user may not start writing in a thread whose only
        records are of no user unless she opened it; no user may not write into a thread a
        user opened in which no user has records (thr45: her erasure would take it whole)."""
        rows = [r for r in self.rows.values() if r.thread_id == thread]
        opener = self.opener.get(thread)
        if actor is None:
            return opener is not None and not any(r.user_id is not None for r in rows)
        if any(r.user_id == actor for r in rows) or opener == actor:
            return False
        return any(r.user_id is None for r in rows) and not any(r.user_id is not None for r in rows)

    def _mcp_refuses(self, actor: Optional[str], thread: str) -> bool:
        """build_server's thread_refusal: never where another user has records; a client of one
        user never where only records of no user are, unless she opened the thread; a client of
        no user never into a thread a user opened (thr45)."""
        rows = [r for r in self.rows.values() if r.thread_id == thread]
        if any(r.user_id is not None and r.user_id != actor for r in rows):
            return True
        opener = self.opener.get(thread)
        if actor is None:
            return opener is not None
        mine = any(r.user_id == actor for r in rows)
        nobodys = any(r.user_id is None for r in rows)
        return nobodys and not mine and opener != actor

    def _refusal_says_nothing_of_others(self, actor: Optional[str], text: str) -> None:
        """A refused write does not name the users whose records made it refuse."""
        for u in USERS:
            if u != actor:
                assert u not in text, (actor, text)

    def _learn_messages(self, actor: Optional[str], thread: str, texts: list[str]) -> None:
        """The ids the store gave the messages an adapter just wrote (the newest of the scope)."""
        listed = self.audit.list("message", limit=None, thread_id=thread, user_id=actor, agent_id=AGENT)
        new = [r for r in listed if ("message", r.id) not in self.rows]
        assert [r.content for r in new] == texts, (actor, thread)
        for r in new:
            self._add_row("message", r.id, r.content, actor, thread)

    def _others_unchanged(self, actor: Optional[str], call: Any, nobodys_lost: Optional[set] = None) -> Any:
        """Run ``call``; every other user's rows are unchanged, field by field, and the no-user
        rows too unless this is ``forget`` (then exactly ``nobodys_lost`` of them go)."""
        before = {u: _snapshot(self.audit, u) for u in ACTORS if u != actor}
        try:
            return call()
        finally:
            for u, rows in before.items():
                after = _snapshot(self.audit, u)
                if u is None and nobodys_lost:
                    rows = [r for r in rows if r[1] not in nobodys_lost]
                assert after == rows, (f"{actor!r}'s call changed the rows of {u!r}", rows, after)

    def _mcp(self, actor: Optional[str], tool: str, **arguments: Any) -> tuple[bool, Any]:
        from mcp import Client

        async def go() -> Any:
            async with Client(self.mcp[actor]) as client:
                return await client.call_tool(tool, arguments)

        result = asyncio.run(go())
        if result.is_error:
            return True, result.content[0].text
        data = result.structured_content
        return False, data["result"] if set(data) == {"result"} else data

    # -- LangGraph -------------------------------------------------------------------------
    @precondition(lambda self: "langgraph" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, LG_BOUND)), ns=st.sampled_from(NAMESPACES),
          key=st.sampled_from(KEYS), words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2),
          colour=st.booleans())
    def lg_put(self, actor, bound, ns, key, words, colour):
        STATS["lg_put"] += 1
        value = {"text": self._text(actor, words)}
        lg = self.lg[actor, bound]
        rid = lg._record_id(ns, key)
        old = self.rows.get(("memory", rid))

        def call():
            return lg.put(ns, key, value) if colour else asyncio.run(lg.aput(ns, key, value))

        if old is None and bound is not None and self._adapter_refuses(actor, bound):
            STATS["lg_put refused: " + _why(actor)] += 1
            with pytest.raises(ValueError, match=REFUSED):
                self._others_unchanged(actor, call)
            return
        self._others_unchanged(actor, call)
        content = json.dumps(value, ensure_ascii=False)
        if old is not None:
            assert old.scope() == (actor, AGENT, bound)  # ids derive from the fixed scope
            self.rows[("memory", rid)] = replace(old, content=content, item=(ns, key, value))
        else:
            self._add_row("memory", rid, content, actor, bound, (ns, key, value))

    @precondition(lambda self: "langgraph" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, LG_BOUND)), ns=st.sampled_from(NAMESPACES),
          key=st.sampled_from(KEYS))
    def lg_delete(self, actor, bound, ns, key):
        STATS["lg_delete"] += 1
        lg = self.lg[actor, bound]
        self._others_unchanged(actor, lambda: lg.delete(ns, key))
        self.rows.pop(("memory", lg._record_id(ns, key)), None)

    def _items(self, actor: Optional[str], bound: Optional[str]) -> list[Row]:
        return [r for r in self._mine(actor, "memory", bound) if r.item is not None]

    @precondition(lambda self: "langgraph" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, LG_BOUND)), ns=st.sampled_from(NAMESPACES),
          key=st.sampled_from(KEYS))
    def lg_get(self, actor, bound, ns, key):
        STATS["lg_get"] += 1
        item = self._others_unchanged(actor, lambda: self.lg[actor, bound].get(ns, key))
        want = [r.item[2] for r in self._items(actor, bound) if r.item[:2] == (ns, key)]
        assert (None if item is None else item.value) == (want[0] if want else None), (actor, ns, key)
        if item is not None:
            self._assert_own(actor, [item.value["text"]], "lg.get")

    @precondition(lambda self: "langgraph" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, LG_BOUND)), prefix=st.sampled_from(PREFIXES),
          query=st.one_of(st.none(), st.sampled_from(VOCAB)))
    def lg_search(self, actor, bound, prefix, query):
        STATS["lg_search"] += 1
        found = self._others_unchanged(actor, lambda: self.lg[actor, bound].search(prefix, query=query, limit=BIG))
        got = sorted((i.namespace, i.key, json.dumps(i.value)) for i in found)
        want = sorted((r.item[0], r.item[1], json.dumps(r.item[2])) for r in self._items(actor, bound)
                      if r.item[0][: len(prefix)] == prefix)
        assert got == want, (actor, prefix, query)
        self._assert_own(actor, [i.value["text"] for i in found], "lg.search")

    @precondition(lambda self: "langgraph" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, LG_BOUND)))
    def lg_list_namespaces(self, actor, bound):
        STATS["lg_list_namespaces"] += 1
        got = self._others_unchanged(actor, lambda: self.lg[actor, bound].list_namespaces())
        assert got == sorted({r.item[0] for r in self._items(actor, bound)}), actor

    # -- LangChain vector store and retriever ------------------------------------------------
    @precondition(lambda self: "langchain" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, BOUND)), data=st.data(), colour=st.booleans())
    def vs_add(self, actor, bound, data, colour):
        STATS["vs_add"] += 1
        n = data.draw(st.integers(1, 2), label="n")
        ids = data.draw(st.lists(st.sampled_from((None,) + DOC_IDS), min_size=n, max_size=n).filter(
            lambda xs: len([x for x in xs if x]) == len({x for x in xs if x})), label="ids")
        texts = [self._text(actor, data.draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2), label="words"))
                 for _ in range(n)]
        vs = self.vs[actor, bound]
        taken = [i for i in ids if i is not None and ("memory", i) in self.rows
                 and self.rows[("memory", i)].scope() != (actor, AGENT, bound)]
        new = [i for i in ids if i is None or ("memory", i) not in self.rows]

        def call():
            return vs.add_texts(texts, ids=ids) if colour else asyncio.run(vs.aadd_texts(texts, ids=ids))

        if taken:  # another scope's id: refused whole, nothing written (one transaction)
            STATS["vs_add refused: another scope's id"] += 1
            with pytest.raises(ValueError, match="another scope") as refused:
                self._others_unchanged(actor, call)
            self._refusal_says_nothing_of_others(actor, str(refused.value))
            return
        if bound is not None and new and self._adapter_refuses(actor, bound):
            STATS["vs_add refused: " + _why(actor)] += 1
            with pytest.raises(ValueError, match=REFUSED):
                self._others_unchanged(actor, call)
            return
        got = self._others_unchanged(actor, call)
        assert len(got) == n and all(g == i for g, i in zip(got, ids) if i is not None), (ids, got)
        for rid, text in zip(got, texts):
            old = self.rows.get(("memory", rid))
            if old is not None:
                self.rows[("memory", rid)] = replace(old, content=text, item=None)
            else:
                self._add_row("memory", rid, text, actor, bound)

    @precondition(lambda self: "langchain" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, BOUND)), data=st.data())
    def vs_get_by_ids(self, actor, bound, data):
        STATS["vs_get_by_ids"] += 1
        ids = self._pick_ids(data, "ids")
        docs = self._others_unchanged(actor, lambda: self.vs[actor, bound].get_by_ids(ids))
        want = [(i, self.rows[("memory", i)].content) for i in ids
                if ("memory", i) in self.rows and self.rows[("memory", i)].scope() == (actor, AGENT, bound)]
        assert [(d.id, d.page_content) for d in docs] == want, (actor, ids)
        self._assert_own(actor, [d.page_content for d in docs], "vs.get_by_ids")

    @precondition(lambda self: "langchain" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), bound=st.sampled_from((None, BOUND)), data=st.data(), colour=st.booleans())
    def vs_delete(self, actor, bound, data, colour):
        STATS["vs_delete"] += 1
        ids = self._pick_ids(data, "ids")
        vs = self.vs[actor, bound]
        mine = {i for i in ids if ("memory", i) in self.rows and self.rows[("memory", i)].scope() == (actor, AGENT, bound)}
        got = self._others_unchanged(actor, lambda: vs.delete(ids) if colour else asyncio.run(vs.adelete(ids)))
        assert got is (mine == set(ids)), (actor, ids, got)
        for i in mine:
            del self.rows[("memory", i)]

    @precondition(lambda self: "langchain" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), word=st.sampled_from(VOCAB), retriever=st.booleans(),
          bound=st.sampled_from((None, BOUND)))
    def vs_search(self, actor, word, retriever, bound):
        """similarity_search: the scope's memories; the retriever (record_types None): every
        type of the scope (thread None: records bound to no thread)."""
        STATS["vs_search"] += 1
        if retriever:
            docs = self._others_unchanged(actor, lambda: self.retriever[actor].invoke(word))
            rows = self._mine(actor, None, None)
        else:
            docs = self._others_unchanged(actor, lambda: self.vs[actor, bound].similarity_search(word, k=BIG,
                                                                                                  strategy="keyword"))
            rows = self._mine(actor, "memory", bound)
        assert sorted(d.id for d in docs) == sorted(r.id for r in rows if word in _words(r.content)), (actor, word)
        self._assert_own(actor, [d.page_content for d in docs], "similarity_search")

    # -- LangChain chat history and OpenAI Agents session ----------------------------------
    def _thread_write(self, actor, thread, texts, call, where) -> None:
        if self._adapter_refuses(actor, thread):
            STATS[f"{where} refused: " + _why(actor)] += 1
            with pytest.raises(ValueError, match=REFUSED) as refused:
                self._others_unchanged(actor, call)
            self._refusal_says_nothing_of_others(actor, str(refused.value))
            return
        if any(r.user_id not in (actor, None) for r in self.rows.values() if r.thread_id == thread):
            STATS[f"{where} into a thread another user writes in (documented)"] += 1
        self._others_unchanged(actor, call)
        self._learn_messages(actor, thread, texts)

    def _conversation(self, actor, thread) -> list[str]:
        return [r.content for r in self._mine(actor, "message", thread)]

    @precondition(lambda self: "langchain" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), thread=st.sampled_from(THREADS),
          words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2), n=st.integers(1, 2), colour=st.booleans())
    def history_add(self, actor, thread, words, n, colour):
        from langchain_core.messages import AIMessage, HumanMessage

        STATS["history_add"] += 1
        texts = [self._text(actor, words) for _ in range(n)]
        messages = [(HumanMessage if i % 2 == 0 else AIMessage)(t) for i, t in enumerate(texts)]
        h = self.history[actor, thread]
        self._thread_write(actor, thread, texts,
                           lambda: h.add_messages(messages) if colour else asyncio.run(h.aadd_messages(messages)),
                           "history_add")

    @precondition(lambda self: "langchain" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), thread=st.sampled_from(THREADS), colour=st.booleans())
    def history_read(self, actor, thread, colour):
        STATS["history_read"] += 1
        h = self.history[actor, thread]
        got = self._others_unchanged(actor, lambda: h.messages if colour else asyncio.run(h.aget_messages()))
        assert [m.content for m in got] == self._conversation(actor, thread), (actor, thread)
        self._assert_own(actor, [m.content for m in got], "history.messages")

    def _clear_scope(self, actor, thread) -> None:
        for key, r in list(self.rows.items()):
            if r.user_id == actor and r.thread_id == thread:
                del self.rows[key]

    @precondition(lambda self: "langchain" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), thread=st.sampled_from(THREADS), colour=st.booleans())
    def history_clear(self, actor, thread, colour):
        STATS["history_clear"] += 1
        h = self.history[actor, thread]
        self._others_unchanged(actor, lambda: h.clear() if colour else asyncio.run(h.aclear()))
        self._clear_scope(actor, thread)

    @precondition(lambda self: "openai_agents" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), thread=st.sampled_from(THREADS),
          words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2), n=st.integers(1, 2))
    def session_add(self, actor, thread, words, n):
        STATS["session_add"] += 1
        texts = [self._text(actor, words) for _ in range(n)]
        items = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]
        s = self.session[actor, thread]
        self._thread_write(actor, thread, texts, lambda: asyncio.run(s.add_items(items)), "session_add")

    @precondition(lambda self: "openai_agents" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), thread=st.sampled_from(THREADS), limit=st.sampled_from([None, 0, 1, 2]))
    def session_get(self, actor, thread, limit):
        STATS["session_get"] += 1
        s = self.session[actor, thread]
        got = self._others_unchanged(actor, lambda: asyncio.run(s.get_items(limit)))
        want = self._conversation(actor, thread)
        want = want if limit is None else (want[len(want) - limit:] if limit else [])
        assert [i["content"] for i in got] == want, (actor, thread, limit)
        self._assert_own(actor, [i["content"] for i in got], "session.get_items")

    @precondition(lambda self: "openai_agents" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), thread=st.sampled_from(THREADS))
    def session_pop(self, actor, thread):
        STATS["session_pop"] += 1
        s = self.session[actor, thread]
        got = self._others_unchanged(actor, lambda: asyncio.run(s.pop_item()))
        mine = self._mine(actor, "message", thread)
        if not mine:
            assert got is None, (actor, thread, got)
            return
        assert got is not None and got["content"] == mine[-1].content, (actor, thread, got)
        del self.rows[("message", mine[-1].id)]

    @precondition(lambda self: "openai_agents" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), thread=st.sampled_from(THREADS))
    def session_clear(self, actor, thread):
        STATS["session_clear"] += 1
        s = self.session[actor, thread]
        self._others_unchanged(actor, lambda: asyncio.run(s.clear_session()))
        self._clear_scope(actor, thread)

    # -- MCP tools -------------------------------------------------------------------------
    @precondition(lambda self: "mcp" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), record_type=st.sampled_from(TYPES), thread=st.sampled_from((None,) + THREADS),
          words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2))
    def mcp_add(self, actor, record_type, thread, words):
        STATS["mcp_add"] += 1
        if record_type == "message" and thread is None:
            thread = THREADS[0]  # a message belongs to a conversation
        text = self._text(actor, words)
        args: dict[str, Any] = {"text": text, "record_type": record_type}
        if thread is not None:
            args["thread_id"] = thread
        refused = thread is not None and self._mcp_refuses(actor, thread)
        err, out = self._others_unchanged(actor, lambda: self._mcp(actor, "add_memory", **args))
        if refused:
            STATS["mcp_add refused: thread not open"] += 1
            assert err and "is not open to this client" in out, (actor, thread, out)
            self._refusal_says_nothing_of_others(actor, out)
            return
        assert not err, out
        self._add_row(record_type, out["id"], text, actor, thread)

    @precondition(lambda self: "mcp" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS), word=st.sampled_from(VOCAB), thread=st.sampled_from((None,) + THREADS))
    def mcp_search(self, actor, word, thread):
        STATS["mcp_search"] += 1
        args: dict[str, Any] = {"query": word, "k": BIG}
        if thread is not None:
            args["thread_id"] = thread
        err, hits = self._others_unchanged(actor, lambda: self._mcp(actor, "search_memories", **args))
        assert not err, hits
        want = sorted(r.id for r in self._mine(actor) if r.record_type in SEARCHED and word in _words(r.content)
                      and (thread is None or r.thread_id == thread))
        assert sorted(h["id"] for h in hits) == want, (actor, word, thread)
        assert all((h["user_id"], h["agent_id"]) == (actor, AGENT) for h in hits)
        self._assert_own(actor, [h["content"] for h in hits], "search_memories")

    def _mcp_visible(self, actor, record_type, rid) -> Optional[Row]:
        r = self.rows.get((record_type, rid))
        return r if r is not None and r.user_id == actor else None

    @precondition(lambda self: "mcp" in self.enabled and self.ever)
    @rule(actor=st.sampled_from(ACTORS), record_type=st.sampled_from(TYPES), data=st.data())
    def mcp_get(self, actor, record_type, data):
        STATS["mcp_get"] += 1
        rid = self._pick_ids(data, "id")[0]
        err, out = self._others_unchanged(actor, lambda: self._mcp(actor, "get_memory", record_id=rid,
                                                                     record_type=record_type))
        assert not err, out
        row = self._mcp_visible(actor, record_type, rid)
        assert out["found"] is (row is not None), (actor, rid, out)
        if row is not None:
            assert out["content"] == row.content and out["thread_id"] == row.thread_id
            self._assert_own(actor, [out["content"]], "get_memory")
        else:
            assert set(out) == {"found"}, out

    @precondition(lambda self: "mcp" in self.enabled and self.ever)
    @rule(actor=st.sampled_from(ACTORS), data=st.data(), words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2))
    def mcp_update(self, actor, data, words):
        STATS["mcp_update"] += 1
        rid = self._pick_ids(data, "id")[0]
        row = self._mcp_visible(actor, "memory", rid)
        text = self._text(actor, words)
        err, out = self._others_unchanged(actor, lambda: self._mcp(actor, "update_memory", record_id=rid, text=text))
        assert not err, out
        assert out == {"updated": 1 if row is not None else 0}, (actor, rid, out)
        if row is not None:
            self.rows[("memory", rid)] = replace(row, content=text)

    @precondition(lambda self: "mcp" in self.enabled and self.ever)
    @rule(actor=st.sampled_from(ACTORS), record_type=st.sampled_from(TYPES), data=st.data())
    def mcp_delete(self, actor, record_type, data):
        STATS["mcp_delete"] += 1
        rid = self._pick_ids(data, "id")[0]
        row = self._mcp_visible(actor, record_type, rid)
        err, out = self._others_unchanged(actor, lambda: self._mcp(actor, "delete_memory", record_id=rid,
                                                                     record_type=record_type))
        assert not err, out
        assert out == {"deleted": 1 if row is not None else 0}, (actor, rid, out)
        if row is not None:
            del self.rows[(record_type, rid)]

    @precondition(lambda self: "mcp" in self.enabled)
    @rule(actor=st.sampled_from(ACTORS))
    def mcp_forget(self, actor):
        """The server's user only; SC-13.3: her private threads (no other user's record in
        them) go whole, the no-user records in them included (documented)."""
        STATS["mcp_forget"] += 1
        if actor is None:
            err, out = self._others_unchanged(actor, lambda: self._mcp(actor, "forget"))
            assert err and "this server has none" in out, out
            return
        # the engines' release_actor (and tests/contract/test_tenant_model.py's model): a thread
        # goes whole when a row of hers is in it - a record of hers, or its thread row, which
        # names her when she opened it - and no live record of another user
        threads = {r.thread_id for r in self.rows.values() if r.user_id == actor and r.thread_id is not None}
        opened = {t for t, u in self.opener.items() if u == actor}
        private = {t for t in threads | opened
                   if not any(r.user_id not in (actor, None) for r in self.rows.values() if r.thread_id == t)}
        gone = {k for k, r in self.rows.items() if r.user_id == actor or r.thread_id in private}
        nobodys = {k[1] for k in gone if self.rows[k].user_id is None}
        if nobodys:
            STATS["forget took no-user records of a private thread (documented)"] += 1
        if any(self.rows[k].user_id is None and self.rows[k].thread_id not in threads for k in gone):
            # she opened the thread and her records there are gone (cleared, popped, deleted):
            # the no-user records written while she was in it (replies in her conversation) go
            # with her; none written after she left (refused since thr45)
            STATS["forget took no-user records of a thread she only opened"] += 1
        err, out = self._others_unchanged(actor, lambda: self._mcp(actor, "forget"), nobodys_lost=nobodys)
        assert not err and out["forgotten"] == actor, out
        # the count the client is told is her erasure's: her records, the private threads' records
        # and their thread rows (the records table; the others are their index rows)
        assert out["erased"].get("om_DEFAULT_records", 0) == len(gone) + len(private & set(self.opener)), out
        for k in gone:
            del self.rows[k]
        for t in list(self.opener):
            if t in private:
                del self.opener[t]
            elif self.opener[t] == actor:
                self.opener[t] = None  # SC-13.2: the row stays, without her id

    # -- invariant -------------------------------------------------------------------------
    @invariant()
    def the_store_is_the_model(self):
        for record_type in TYPES:
            got = [(r.id, r.content, r.user_id, r.agent_id, r.thread_id)
                   for r in self.audit.list(record_type, limit=None)]
            want = [(r.id, r.content, r.user_id, AGENT, r.thread_id)
                    for r in sorted(self.rows.values(), key=lambda r: r.order) if r.record_type == record_type]
            assert got == want, record_type
        got_threads = sorted((r.id, r.user_id) for r in self.audit.list("thread", limit=None))
        assert got_threads == sorted(self.opener.items(), key=lambda kv: kv[0]), "thread rows"


def _run(enabled: set[str], examples: int, steps: int) -> None:
    for name in sorted(enabled):
        adapter_or_skip(ADAPTERS[name])
    if "mcp" in enabled:
        adapter_or_skip("mcp")
    machine = type("AdapterModelRun", (AdapterModel,), {"enabled": frozenset(enabled)})
    run_state_machine_as_test(machine, settings=_settings(examples, steps))


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_each_adapter_alone(adapter):
    """One adapter family at a time (runs wherever its extra is installed)."""
    _run({adapter}, examples=8, steps=30)


def test_all_adapters_on_one_store():
    """Every adapter on the same file at once: a session, a chat history and MCP clients in
    the same conversation names, LangGraph items and documents in the same memory table."""
    _run(set(ADAPTERS), examples=25, steps=40)


# ---------------------------------------------------------------------------- found by the machine
@pytest.mark.parametrize("colour", ["sync", "async"])
def test_add_texts_returns_each_id_at_its_texts_position(colour):
    """Found by the machine above (iso42): ``add_texts`` returned the ids of the texts that
    updated a record first and the new records' ids after them, so with ids ``[None, "d1"]``
    (a new text, then an update of Alice's own "d1") it answered ``["d1", <new id>]`` and the
    caller paired each text with the other's id (LangChain: the ids of the texts added, one
    per text, in order)."""
    lc = adapter_or_skip("oramem.integrations.langchain")
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        alice = lc.OramemVectorStore(s, user_id="alice")
        alice.add_texts(["alice first d1"], ids=["d1"])

        def add(texts, ids):
            return alice.add_texts(texts, ids=ids) if colour == "sync" else asyncio.run(alice.aadd_texts(texts, ids=ids))

        got = add(["alice new note", "alice d1 again", "alice other"], [None, "d1", "d2"])
        assert got[1:] == ["d1", "d2"] and got[0] not in ("d1", "d2")
        assert [d.page_content for d in alice.get_by_ids(got)] == ["alice new note", "alice d1 again", "alice other"]


def test_bobs_erasure_never_takes_the_agents_records_of_a_thread_he_only_opened():
    """Found by the machine above (iso42), decided in thr45: Bob opens "lobby" first and leaves
    it (clear_session); the agent's shared conversation then went there (no user had records in
    it), and his erasure took it whole: the engines count the thread he opened as his while no
    other user writes in it (SC-13.2, SC-13.3). A write of no user into a thread a user opened
    and left is now refused (oramem.threads.write_refusal, the MCP server's thread rule), naming
    no user; Bob himself may write into his own thread again."""
    ag = adapter_or_skip("oramem.integrations.openai_agents")
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        bob = ag.OramemSession("lobby", s, user_id="bob", agent_id="desk")
        asyncio.run(bob.add_items([{"role": "user", "content": "hi"}]))
        asyncio.run(bob.clear_session())
        agent = ag.OramemSession("lobby", s, agent_id="desk")
        with pytest.raises(ValueError, match="opened by a user who has no records in it") as refused:
            asyncio.run(agent.add_items([{"role": "assistant", "content": "The hotel opens at 7"}]))
        assert "bob" not in str(refused.value)
        asyncio.run(ag.OramemSession("hall", s, agent_id="desk").add_items(
            [{"role": "assistant", "content": "Breakfast is served until 10"}]))
        asyncio.run(bob.add_items([{"role": "user", "content": "back"}]))   # his own thread
        s.forget(user_id="bob")
        assert sorted(r.content for t in TYPES for r in s.list(t, limit=None)) == ["Breakfast is served until 10"]
