"""A stateful, model-based test of the record store's tenant boundary (SC-2, SC-3, SC-5,
SC-6.2, SC-7, SC-8, SC-13).

One agent platform, several users writing in shared and private threads: Hypothesis'
``RuleBasedStateMachine`` runs random sequences of ``add`` (every record type), profile
adds, ``update``, ``delete`` (with and without cascade), ``delete_thread``, ``forget``,
``purge_expired`` and clock moves by users ``alice``, ``bob``, ``carol`` (and none),
agents ``desk``, ``bank`` (and none) in threads ``t1`` (alice's and bob's), ``t2``, ``t3``,
and after every step compares what the store answers with a reference model written from
the contract's text: ``list`` of every type (whole records, insertion order), ``list`` per
scope, ``list_thread_messages``, ``get`` of every id ever written, and ``search`` per scope
(VECTOR on a VECTOR store: every visible in-scope record is returned when k exceeds the
store's size; KEYWORD on a KEYWORD store: exactly the in-scope records holding the word,
for a shared vocabulary word and for the per-record marker word).

Every record's text holds a marker word of its own, so a result that is not the record the
model expects (another user's text under this id) shows. Where the contract leaves a
choice, the comment at the model's code cites the rule or the implementation that decided
it.

Runs on SQLite always and on Oracle when a database is reachable (``make_store``); the
variants with an injected clock are SQLite-only (the fixture skips them on Oracle, which
uses the database time); the others exercise TTL with records expired at insert and
revived by ``update``. ``ORAMEM_MODEL_EXAMPLES=N`` (and ``ORAMEM_MODEL_STEPS=M``) runs a
longer, randomised exploration; the default run is derandomized (reproducible in CI).
"""

from __future__ import annotations

import collections
import itertools
import os
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from oramem import NOT_SET, MemoryRetentionConfig, PendingRecordBatch, SearchStrategy

from ._support import UTC, FakeClock, marker_word, parse_ts

USERS = ("alice", "bob", "carol")
AGENTS = ("desk", "bank")
THREADS = ("t1", "t2", "t3")
HOME = {"alice": ("t1", "t2"), "bob": ("t1", "t3"), "carol": ("t3", "t2")}  # converse's threads
SCOPED_TYPES = ("message", "memory", "guideline", "fact", "preference")
PROFILE_TYPES = ("user_profile", "agent_profile")
ALL_TYPES = SCOPED_TYPES + PROFILE_TYPES
# distinct stems and no stop words (Oracle Text's default stop list, FTS5 porter)
VOCAB = ("apple", "river", "piano", "garden", "rocket", "violet")
K = 500  # more than any store of a run holds: a search returns every match in scope

_EXAMPLES = int(os.environ.get("ORAMEM_MODEL_EXAMPLES", "0") or 0)
_STEPS = int(os.environ.get("ORAMEM_MODEL_STEPS", "0") or 0)
START = datetime(2026, 1, 1, tzinfo=UTC)
#: how often each rule and each interesting case ran (read by exploratory runs)
STATS: collections.Counter = collections.Counter()


def _settings(examples: int, steps: int) -> settings:
    exploring = _EXAMPLES > 0
    return settings(
        max_examples=_EXAMPLES if exploring else examples,
        stateful_step_count=_STEPS or (40 if exploring else steps),
        deadline=None,
        derandomize=not exploring,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        print_blob=True,
    )


_marker = marker_word


@dataclass(frozen=True)
class Row:
    """The model of one stored row (records, profiles and thread rows alike)."""

    record_type: str
    id: str
    marker: Optional[str]
    content: Optional[str]
    metadata: Optional[dict]
    thread_id: Optional[str]
    user_id: Optional[str]
    agent_id: Optional[str]
    role: Optional[str]
    created: float  # model days since START
    expires: Optional[float]  # None: never
    order: int  # insertion order (SC-3.3)

    def visible(self, now: float) -> bool:
        # SC-5.4: invisible the moment the clock reaches the expiry (engines: expires_at > now)
        return self.expires is None or self.expires > now

    def effective(self) -> tuple[Optional[str], Optional[str], Optional[str]]:
        """(thread, user, agent) as search sees them: SC-6.2, a profile is in its own
        actor's scope (and in no thread, and not in the other dimension's scope)."""
        if self.record_type == "user_profile":
            return None, self.id, None
        if self.record_type == "agent_profile":
            return None, None, self.id
        return self.thread_id, self.user_id, self.agent_id


class TenantModel(RuleBasedStateMachine):
    """The machine; ``make_store``, ``strategy`` and ``clocked`` are set by the test."""

    make_store: Any = None
    strategy: SearchStrategy = SearchStrategy.VECTOR
    clocked: bool = False
    _stores = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        STATS["examples"] += 1
        self.counter = itertools.count()
        self.rows: dict[tuple[str, str], Row] = {}  # physically stored, expired included
        self.ever: dict[tuple[str, str], str] = {}  # every (type, id) ever written -> marker
        self.owner: dict[str, tuple[str, Optional[str], Optional[str]]] = {}  # marker -> (type, user, agent)
        self.now = 0.0
        self.step = 0
        kwargs: dict[str, Any] = {"path": ":memory:", "memory_store_id": f"tm{next(self._stores)}"}
        if self.strategy == SearchStrategy.KEYWORD:
            kwargs.update(embedder=None, search_strategy=SearchStrategy.KEYWORD)
        if self.clocked:
            self.clock = FakeClock(START)
            # omitted ttl_days -> 2 days (SC-5.2), so the default retention is exercised too
            kwargs.update(clock=self.clock, memory_retention_config=MemoryRetentionConfig(default_ttl_days=2))
        self.default_ttl: Optional[int] = 2 if self.clocked else None
        self.store = type(self).make_store(**kwargs)

    def teardown(self) -> None:
        self.store.close()

    # -- helpers -----------------------------------------------------------------------
    def _text(self, words: list[str], marker: str) -> str:
        return " ".join([*words, marker])

    def _expiry(self, created: float, ttl: Any) -> Optional[float]:
        """SC-5.2 (ttl omitted -> default_ttl_days; None -> never, no max set) and SC-5.3
        (CREATED_AT anchor: counted from the insert time, also by an update, SC-7.6)."""
        if ttl is NOT_SET:
            ttl = self.default_ttl
        return None if ttl is None else created + ttl

    def _visible(self) -> list[Row]:
        return sorted((r for r in self.rows.values() if r.record_type != "thread" and r.visible(self.now)),
                      key=lambda r: r.order)

    def _threads(self) -> list[Row]:
        return sorted((r for r in self.rows.values() if r.record_type == "thread"), key=lambda r: r.order)

    def _new_marker(self, record_type: str, user: Optional[str], agent: Optional[str]) -> tuple[int, str]:
        n = next(self.counter)
        m = _marker(n)
        self.owner[m] = (record_type, user, agent)
        return n, m

    # -- rules: writes -----------------------------------------------------------------
    ttl_choices = st.sampled_from([NOT_SET, None, 0, 1, 3])

    @rule(
        record_type=st.sampled_from(SCOPED_TYPES),
        scopes=st.lists(
            st.tuples(st.sampled_from(USERS + (None,)), st.sampled_from(AGENTS + (None,)), st.sampled_from(THREADS + (None,))),
            min_size=1, max_size=3,
        ),
        words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
        meta=st.one_of(st.none(), st.fixed_dictionaries({"topic": st.sampled_from(VOCAB[:3])})),
        ttl=ttl_choices,
        role=st.sampled_from(["user", "assistant"]),
    )
    def add(self, record_type, scopes, words, meta, ttl, role):
        """SC-4.2: per-record scope lists, scalar metadata/TTL/role broadcast."""
        STATS["add"] += 1
        if not self.clocked and ttl not in (NOT_SET, None, 0):
            ttl = 30  # database time: an expiry the run never reaches
        ids, texts = [], []
        for user, agent, thread in scopes:
            n, m = self._new_marker(record_type, user, agent)
            ids.append(f"r{n}")
            texts.append(self._text(words, m))
        kwargs: dict[str, Any] = dict(
            record_ids=ids, user_ids=[s[0] for s in scopes], agent_ids=[s[1] for s in scopes],
            thread_ids=[s[2] for s in scopes], metadata=meta,
        )
        if ttl is not NOT_SET:
            kwargs["ttl_days"] = ttl
        if record_type == "message":
            kwargs["roles"] = role
        assert self.store.add(texts, record_type, **kwargs) == ids
        for rid, text, (user, agent, thread) in zip(ids, texts, scopes):
            self._added(record_type, rid, text, meta, thread, user, agent, role, ttl)

    def _added(self, record_type, rid, text, meta, thread, user, agent, role, ttl) -> None:
        self.rows[(record_type, rid)] = Row(
            record_type, rid, _marker_of_text(text), text, meta, thread, user, agent,
            role if record_type == "message" else None, self.now, self._expiry(self.now, ttl), next(self.counter),
        )
        self.ever[(record_type, rid)] = _marker_of_text(text)
        # SC-2.3 / SC-13.2: the first scoped write naming a thread opens it; the thread row
        # keeps that write's user and agent (a later write changes nothing)
        if thread is not None and ("thread", thread) not in self.rows:
            self.rows[("thread", thread)] = Row("thread", thread, None, None, None, thread, user, agent, None,
                                                self.now, None, next(self.counter))

    @rule(user=st.sampled_from(USERS), data=st.data(), agent=st.sampled_from(AGENTS + (None,)),
          words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2), reply=st.booleans(), remember=st.booleans(),
          ttl=ttl_choices)
    def converse(self, user, data, agent, words, reply, remember, ttl):
        """A turn of a conversation in one ``add_batches`` call (SC-4.10): the user's
        message in one of her threads (t1 is alice's and bob's), the agent's reply stored
        with no user (as a session adapter stores it, SC-13.3), and a memory of hers."""
        STATS["converse"] += 1
        thread = data.draw(st.sampled_from(HOME[user]), label="thread")
        if not self.clocked and ttl not in (NOT_SET, None, 0):
            ttl = 30
        parts = [("message", user, agent, thread, "user")]
        if reply:
            parts.append(("message", None, agent or "desk", thread, "assistant"))
        if remember:
            parts.append(("memory", user, agent, None, None))
        batches, made = [], []
        for record_type, u, a, t, role in parts:
            n, m = self._new_marker(record_type, u, a)
            text = self._text(words, m)
            extra: dict[str, Any] = {"roles": [role]} if role else {}
            if ttl is not NOT_SET:
                extra["ttl_days"] = ttl
            batches.append(PendingRecordBatch(texts=[text], record_type=record_type, record_ids=[f"r{n}"], thread_ids=[t],
                                              user_ids=[u], agent_ids=[a], **extra))
            made.append((record_type, f"r{n}", text, None, t, u, a, role, ttl))
        assert self.store.add_batches(batches) == [m[1] for m in made]
        for args in made:
            self._added(*args)

    @rule(kind=st.sampled_from(PROFILE_TYPES), data=st.data(), words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2),
          meta=st.one_of(st.none(), st.fixed_dictionaries({"topic": st.sampled_from(VOCAB[:3])})))
    def add_profile(self, kind, data, words, meta):
        STATS["add_profile"] += 1
        actor = data.draw(st.sampled_from(USERS if kind == "user_profile" else AGENTS), label="actor")
        _, m = self._new_marker(kind, actor if kind == "user_profile" else None, actor if kind == "agent_profile" else None)
        text = self._text(words, m)
        add = self.store.add_user if kind == "user_profile" else self.store.add_agent
        if (kind, actor) in self.rows:  # SC-2.4: adding an existing profile is a ValueError
            with pytest.raises(ValueError):
                add(actor, text, meta)
            return
        assert add(actor, text, meta) == actor  # SC-2.4: the record id IS the actor id
        self.rows[(kind, actor)] = Row(kind, actor, m, text, meta, None, None, None, None, self.now, None, next(self.counter))
        self.ever[(kind, actor)] = m

    def _pick_key(self, data) -> tuple[str, str]:
        keys = list(self.ever)  # insertion order: the recent ones are drawn more often
        return data.draw(st.one_of(st.sampled_from(keys[-4:]), st.sampled_from(keys)), label="record")

    @precondition(lambda self: self.ever)
    @rule(data=st.data(), new_text=st.one_of(st.none(), st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3)),
          meta=st.sampled_from([NOT_SET, None, {"topic": "apple"}, {"topic": "piano", "n": 1}]),
          ttl=ttl_choices)
    def update(self, data, new_text, meta, ttl):
        """SC-7: content (retrieval rows follow, SC-7.2), metadata (replaced whole, SC-7.5)
        and expiry (SC-7.6) of any record ever written, by id - whoever's it is."""
        STATS["update"] += 1
        key = self._pick_key(data)
        record_type = key[0]
        if record_type in PROFILE_TYPES:
            ttl = NOT_SET  # SC-2.4: profiles take no TTL
        elif not self.clocked and ttl not in (NOT_SET, None, 0):
            ttl = 30
        kwargs: dict[str, Any] = {}
        if new_text is not None:
            kwargs["text"] = self._text(new_text, self.ever[key])  # the record keeps its marker
        if meta is not NOT_SET:
            kwargs["metadata"] = meta
        if ttl is not NOT_SET:
            kwargs["ttl_days"] = ttl
        if not kwargs:
            kwargs["metadata"] = None
        row = self.rows.get(key)
        # SC-7.1: 0 when no such unexpired record exists; SC-5.6: a new expiry revives an
        # expired, not yet purged record (so an update naming ttl_days finds it)
        expected = 1 if row is not None and (row.visible(self.now) or "ttl_days" in kwargs) else 0
        if row is not None and not row.visible(self.now):
            STATS["update of an expired row" + (" with ttl" if "ttl_days" in kwargs else "")] += 1
        assert self.store.update(record_type, key[1], **kwargs) == expected, (key, kwargs)
        if expected:
            changes: dict[str, Any] = {}
            if "text" in kwargs:
                changes["content"] = kwargs["text"]
            if "metadata" in kwargs:
                changes["metadata"] = kwargs["metadata"]
            if "ttl_days" in kwargs:
                changes["expires"] = self._expiry(row.created, kwargs["ttl_days"])
            self.rows[key] = replace(row, **changes)

    @precondition(lambda self: self.ever)
    @rule(data=st.data(), cascade=st.booleans())
    def delete(self, data, cascade):
        STATS["delete"] += 1
        key = self._pick_key(data)
        record_type, rid = key
        if record_type in PROFILE_TYPES and cascade:
            self._erase(record_type, rid, lambda: self.store.delete(record_type, rid, cascade=True), profile_count=True)
            return
        if cascade:  # SC-8.2: cascade applies to profiles (and threads) only
            with pytest.raises(ValueError):
                self.store.delete(record_type, rid, cascade=True)
            return
        row = self.rows.get(key)
        # SC-8.1 / SC-13.5: exactly that record; 1 only for a visible one. A stored but
        # expired row goes too (mutations.delete_record: it is no longer there to revive)
        expected = 1 if row is not None and row.visible(self.now) else 0
        assert self.store.delete(record_type, rid) == expected, key
        self.rows.pop(key, None)

    @rule(data=st.data(), kind=st.sampled_from(["user", "agent"]), via_forget=st.booleans())
    def erase(self, data, kind, via_forget):
        """``forget`` (SC-8.6) or the profile's cascade delete (SC-8.2), same erasure."""
        actor = data.draw(st.sampled_from(USERS if kind == "user" else AGENTS), label="actor")
        profile = "user_profile" if kind == "user" else "agent_profile"
        STATS["forget" if via_forget else "cascade"] += 1
        if via_forget:
            self._erase(profile, actor, lambda: self.store.forget(**{f"{kind}_id": actor}), profile_count=False)
        else:
            self._erase(profile, actor, lambda: self.store.delete(profile, actor, cascade=True), profile_count=True)

    def _erase(self, profile: str, actor: str, call, profile_count: bool) -> None:
        """SC-8.2 / SC-8.6 / SC-13.3 / SC-13.4: erasing an actor.

        Which threads go whole ("private"): for a user, a thread with a row of hers and no
        row of another user (rows without a user do not count against her, SC-13.3); for
        an agent, a thread with a row of its own and no row with another agent or without
        one (SC-13.4: "nothing but A's records"). Only live rows of the thread count:
        - not another actor's expired row not yet purged (SC-5.4: invisible to every read;
          2026-12-06 i, before which it kept her private thread "shared", so the agent's
          reply quoting her survived her erasure). That row is not removed with the thread
          either (SC-13.1; her erasure would otherwise erase the knowledge learned from his
          message as hers, deletes._erase_user): it stays for the purge (or a revival, SC-5.6);
        - nor the thread row: it names who opened the thread, which "decides nothing
          about erasure" (SC-13.2; the engines counted it as a row of its opener until this
          machine found it, 2026-12-06 h, pinned by the test at the end of this module). The
          thread row counts for the actor only as the thread she opened (her thread row
          and no other user's record: the thread goes whole)."""
        column = "user_id" if profile == "user_profile" else "agent_id"
        before_visible = {k: r for k, r in self.rows.items() if r.record_type != "thread" and r.visible(self.now)}
        prof = self.rows.get((profile, actor))
        by_thread: dict[str, list[Row]] = {}
        for r in self.rows.values():
            if r.record_type not in PROFILE_TYPES and r.thread_id is not None:
                by_thread.setdefault(r.thread_id, []).append(r)

        def other(r: Row) -> bool:
            v = getattr(r, column)
            return (v is not None and v != actor) if column == "user_id" else (v is None or v != actor)

        def others_expired(r: Row) -> bool:  # stays where it is, for the purge
            return r.record_type != "thread" and not r.visible(self.now) and other(r)

        private = {t for t, rs in by_thread.items() if any(getattr(r, column) == actor for r in rs)
                   and not any(other(r) and r.visible(self.now) for r in rs if r.record_type != "thread")}
        STATS[f"erase {column}: {len(private)} private threads"] += 1
        got = call()
        if profile_count:
            # SC-8.2: 1 when the profile row was there (profiles never expire), else 0
            assert got == (1 if prof is not None else 0)
        for key, r in list(self.rows.items()):
            if key == (profile, actor):
                del self.rows[key]
            elif r.record_type in PROFILE_TYPES:
                continue
            elif (r.thread_id in private and not others_expired(r)
                  or getattr(r, column) == actor and r.record_type != "thread"):
                del self.rows[key]
            elif r.record_type == "thread" and getattr(r, column) == actor:
                # SC-13.2: a thread that stays keeps its row, without the erased actor's id
                self.rows[key] = replace(r, **{column: None})
        # nothing of the actor's is left to anyone, and nobody else's visible record changed
        for key, r in self.rows.items():
            assert r.record_type == "thread" or getattr(r, column) != actor
        for key, r in before_visible.items():
            if key in self.rows:
                continue
            owner = actor if r.record_type == profile else getattr(r, column)
            assert owner in (actor, None) or r.thread_id in private, (key, r)
            if column == "user_id":  # SC-13.1: erasing a user never removes another user's record
                assert r.user_id in (actor, None), (key, r)
        self._check_forgotten(profile, actor)

    def _check_forgotten(self, profile: str, actor: str) -> None:
        """After an erasure ``get`` finds nothing the actor ever wrote, and (KEYWORD) no
        search in any scope finds one of its marker words."""
        column_of = 1 if profile == "user_profile" else 2  # Row owner tuple: (type, user, agent)
        for key, m in self.ever.items():
            if self.owner[m][column_of] == actor:
                assert key not in self.rows and self.store.get(*key) is None, key
        if self.strategy == SearchStrategy.KEYWORD:
            markers = [m for m, o in self.owner.items() if o[column_of] == actor]
            for m in markers[-8:]:
                assert self.store.search(m, k=K) == [], m

    @rule(op=st.sampled_from(["advance", "purge", "advance", "delete_thread"]), data=st.data())
    def maintain(self, op, data):
        """The clock moves (clocked runs), the purge runs, or a thread is deleted."""
        if op == "advance" and self.clocked:
            self._advance(data.draw(st.sampled_from([0.5, 1, 2, 3]), label="days"))
        elif op == "delete_thread":
            self._delete_thread(data.draw(st.sampled_from(THREADS), label="thread"), data.draw(st.booleans(), label="via delete"))
        else:
            self._purge()

    def _delete_thread(self, thread: str, via_delete: bool) -> None:
        """SC-8.3 / SC-13.5: the thread row and every record of the thread, whoever wrote
        it; ``delete("thread", id)`` is the same operation."""
        STATS["delete_thread"] += 1
        expected = 1 if ("thread", thread) in self.rows else 0
        got = self.store.delete("thread", thread) if via_delete else self.store.delete_thread(thread)
        assert got == expected
        for key, row in list(self.rows.items()):
            if row.thread_id == thread:
                del self.rows[key]

    def _purge(self) -> None:
        """SC-5.5 / SC-13.5: exactly the expired rows, and the count of them."""
        STATS["purge"] += 1
        expired = [k for k, r in self.rows.items() if not r.visible(self.now)]
        assert self.store.purge_expired() == len(expired)
        for k in expired:
            del self.rows[k]

    def _advance(self, days: float) -> None:
        STATS["advance_clock"] += 1
        self.now += days
        self.clock.now = _at(self.now)

    # -- probes (drawn scopes) ---------------------------------------------------------
    @rule(
        user=st.sampled_from(USERS + (None,)), agent=st.sampled_from(AGENTS + (None,)),
        thread=st.sampled_from(THREADS + (None,)), exact=st.tuples(st.booleans(), st.booleans(), st.booleans()),
        types=st.one_of(st.none(), st.sets(st.sampled_from(ALL_TYPES), min_size=1, max_size=3)),
        word=st.sampled_from(VOCAB), data=st.data(),
    )
    def probe_search(self, user, agent, thread, exact, types, word, data):
        """A search in a drawn scope (SC-6.2 exact matches too) and type set (SC-6.3)."""
        STATS["probe_search"] += 1
        ex_user, ex_agent, ex_thread = exact
        query = word
        if self.strategy == SearchStrategy.KEYWORD and self.ever and data.draw(st.booleans(), label="marker query"):
            query = self.ever[self._pick_key(data)]
        self._check_search(query, thread, user, agent, ex_thread, ex_user, ex_agent, types)

    @rule(record_type=st.sampled_from(SCOPED_TYPES + PROFILE_TYPES),
          filters=st.fixed_dictionaries({}, optional={
              "user_id": st.sampled_from(USERS + (None,)), "agent_id": st.sampled_from(AGENTS + (None,)),
              "thread_id": st.sampled_from(THREADS + (None,)),
              "metadata_filter": st.sampled_from([None, {"topic": "apple"}, {"topic": "river"}])}))
    def probe_list(self, record_type, filters):
        """SC-3.3: omitted filter = none, explicit None = NULL only; unscoped types
        (profiles) ignore scope filters; a metadata filter of None = no metadata."""
        STATS["probe_list"] += 1
        want = []
        for r in self._visible():
            if r.record_type != record_type:
                continue
            if record_type in SCOPED_TYPES and any(getattr(r, f) != v for f, v in filters.items() if f != "metadata_filter"):
                continue
            if "metadata_filter" in filters:
                mf = filters["metadata_filter"]
                if (mf is None and r.metadata is not None) or (mf is not None and (r.metadata or {}).get("topic") != mf["topic"]):
                    continue
            want.append(r.id)
        got = [r.id for r in self.store.list(record_type, limit=None, **filters)]
        assert got == want, (record_type, filters)

    # -- invariants --------------------------------------------------------------------
    def _expected_search(self, query, thread, user, agent, ex_thread, ex_user, ex_agent, types) -> set[tuple[str, str]]:
        want = set()
        for r in self._visible():
            if types is not None and r.record_type not in types:
                continue
            et, eu, ea = r.effective()
            ok = True
            for value, exact, actual in ((thread, ex_thread, et), (user, ex_user, eu), (agent, ex_agent, ea)):
                if value is not None and actual != value:
                    ok = False
                elif value is None and exact and actual is not None:
                    ok = False
            if not ok:
                continue
            if self.strategy == SearchStrategy.KEYWORD and query not in (r.content or "").split():
                continue
            want.add((r.record_type, r.id))
        return want

    def _check_search(self, query, thread=None, user=None, agent=None, ex_thread=False, ex_user=False, ex_agent=False, types=None):
        hits = self.store.search(query, k=K, thread_id=thread, user_id=user, agent_id=agent, exact_thread_match=ex_thread,
                                 exact_user_match=ex_user, exact_agent_match=ex_agent,
                                 record_types=None if types is None else sorted(types))
        got = {(r.record_type, r.id) for r, _ in hits}
        want = self._expected_search(query, thread, user, agent, ex_thread, ex_user, ex_agent, types)
        scope = dict(query=query, thread=thread, user=user, agent=agent, exact=(ex_thread, ex_user, ex_agent), types=types)
        assert got == want, (scope, sorted(got - want), sorted(want - got))
        for r, _ in hits:  # the text under the id is that record's own (its marker)
            assert _marker_of(r) == self.rows[(r.record_type, r.id)].marker
            assert r.content == self.rows[(r.record_type, r.id)].content

    @invariant()
    def every_record_matches(self):
        """``list`` of every type (whole records, insertion order, SC-3.3) and of threads
        (SC-2.3, SC-13.2: opener, cleared when erased), ``get`` of every id ever written
        (SC-3.2: None once deleted or expired; ``get`` is not scoped)."""
        visible = self._visible()
        for record_type in ALL_TYPES:
            want = [_fields_of_row(r) for r in visible if r.record_type == record_type]
            listed = self.store.list(record_type, limit=None)
            assert [_fields(r) for r in listed] == want, record_type
            if self.clocked:  # the times themselves (SC-5.2/5.3/7.6: expiry counted from created_at)
                rows = [r for r in visible if r.record_type == record_type]
                assert [(parse_ts(r.created_at), parse_ts(r.expires_at)) for r in listed] == [
                    (_at(r.created), None if r.expires is None else _at(r.expires)) for r in rows], record_type
        got_threads = [(r.id, r.user_id, r.agent_id) for r in self.store.list("thread", limit=None)]
        assert got_threads == [(r.id, r.user_id, r.agent_id) for r in self._threads()]
        live = {(r.record_type, r.id): r for r in visible}
        for key in self.ever:
            rec = self.store.get(*key)
            if key in live:
                assert rec is not None and _fields(rec) == _fields_of_row(live[key]), key
            else:
                assert rec is None, key

    @invariant()
    def every_scope_matches(self):
        """Per user, agent and thread: ``list`` of each scoped type, the thread's messages
        (SC-3.4), and ``search`` (SC-6.2 effective scope: a profile is in its actor's scope)."""
        self.step += 1
        visible = self._visible()
        word = VOCAB[self.step % len(VOCAB)]
        scopes: list[dict[str, Any]] = (
            [{"user_id": u} for u in USERS] + [{"agent_id": a} for a in AGENTS] + [{"thread_id": t} for t in THREADS]
        )
        for scope in scopes:
            (field, value), = scope.items()
            for record_type in SCOPED_TYPES:
                want = [r.id for r in visible if r.record_type == record_type and getattr(r, field) == value]
                assert [r.id for r in self.store.list(record_type, limit=None, **scope)] == want, (record_type, scope)
            self._check_search(word, **{field.removesuffix("_id"): value})
        for t in THREADS:
            want = [r.id for r in visible if r.record_type == "message" and r.thread_id == t]
            assert [r.id for r in self.store.list_thread_messages(t)] == want, t
        # rows without a user / an agent (SC-3.3 explicit None; SC-6.2 exact match)
        self._check_search(word, ex_user=True)
        self._check_search(word, ex_agent=True)
        if self.strategy == SearchStrategy.KEYWORD:
            recent = [r.marker for r in visible[-3:]]
            for m in recent:
                for u in USERS:
                    self._check_search(m, user=u)


def _at(days: float) -> datetime:
    return START + timedelta(days=days)


def _marker_of(record) -> str:
    return _marker_of_text(record.content or "")


def _marker_of_text(text: str) -> str:
    return text.rsplit(" ", 1)[-1]


def _fields(rec) -> tuple:
    return (rec.record_type, rec.id, rec.content, rec.metadata, rec.thread_id, rec.user_id, rec.agent_id,
            getattr(rec, "role", None), rec.expires_at is None)


def _fields_of_row(r: Row) -> tuple:
    return (r.record_type, r.id, r.content, r.metadata, r.thread_id, r.user_id, r.agent_id, r.role, r.expires is None)


def _run(make_store, strategy: SearchStrategy, clocked: bool, examples: int, steps: int) -> None:
    machine = type("TenantModelRun", (TenantModel,), {"make_store": staticmethod(make_store), "strategy": strategy, "clocked": clocked})
    run_state_machine_as_test(machine, settings=_settings(examples, steps))


@pytest.mark.parametrize("strategy", [SearchStrategy.VECTOR, SearchStrategy.KEYWORD], ids=["vector", "keyword"])
def test_tenant_model_clocked(make_store, strategy):
    """With an injected clock (SQLite; skipped on Oracle by the fixture): TTLs of days run
    out as the clock moves (SC-5.2-5.6)."""
    _run(make_store, strategy, clocked=True, examples=40, steps=40)


@pytest.mark.parametrize("strategy", [SearchStrategy.VECTOR, SearchStrategy.KEYWORD], ids=["vector", "keyword"])
def test_tenant_model_database_time(make_store, strategy):
    """Both engines, the database's own time: TTL 0 (expired at insert) and revival by update."""
    _run(make_store, strategy, clocked=False, examples=15, steps=40)


def test_sc_13_2_the_opener_of_a_thread_decides_nothing_about_erasure(make_store):
    """Found by the machine above (2026-12-06 h), fixed in both engines: the thread row
    counted as a record of its opener, so erasing Alice kept the reply quoting her in a
    thread Bob opened and no longer wrote in."""
    s = make_store()
    s.add(["hello from bob"], "message", record_ids="b1", thread_ids="t1", user_ids="bob", roles="user")
    s.add(["my passport is in the drawer"], "message", record_ids="a1", thread_ids="t1", user_ids="alice", roles="user")
    s.add(["noted, your passport is in the drawer"], "message", record_ids="r1", thread_ids="t1", agent_ids="desk",
          roles="assistant")
    s.delete("message", "b1")
    # t1 now holds Alice's message and the reply to her, nothing of another user's
    # (SC-13.3: her private thread, which goes whole, the reply included)
    s.forget(user_id="alice")
    assert s.list("message", limit=None) == []
    assert s.list("thread", limit=None) == []
