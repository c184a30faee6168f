"""Issue 7.2 — tenant isolation (SC-2.2, SC-3.3, SC-6.2).

Random records spread over users, threads and agents (``None`` included), plus user and
agent profiles; random scoped searches in every strategy the store has and scoped lists.
No returned record may lie outside the requested scope; ``list`` (and a vector search with
``k`` above the record count, where every record has a vector) must return every
in-scope record. The reference scope predicate is written here from SC-6.2/SC-3.3.
"""

from __future__ import annotations

import random

import pytest

from oramem import NOT_SET, SearchStrategy

USERS = ["alice", "bob", "o'hara", 'x"y', None]
THREADS = ["t1", "t2", "t%", "t_", None]
AGENTS = ["ag1", "ag2", None]
TYPES = ["memory", "fact", "message", "preference"]
WORDS = ["apple", "banana", "cherry"]



def _in_search_scope(rec, user, thread, agent, exact) -> bool:
    rtype, u, t, a = rec["type"], rec["user"], rec["thread"], rec["agent"]
    if rtype == "user_profile":
        u, t, a = rec["id"], None, None
    if rtype == "agent_profile":
        u, t, a = None, None, rec["id"]
    for want, have, is_exact in ((user, u, exact[0]), (thread, t, exact[1]), (agent, a, exact[2])):
        if want is None:
            if is_exact and have is not None:
                return False
        elif have != want:
            return False
    return True


def _in_list_scope(rec, rtype, user, thread, agent) -> bool:
    if rec["type"] != rtype:
        return False
    if rtype in ("user_profile", "agent_profile"):
        return True  # unscoped types ignore scope filters (SC-3.3)
    for want, have in ((user, rec["user"]), (thread, rec["thread"]), (agent, rec["agent"])):
        if want is not NOT_SET and want != have:
            return False
    return True


class World:
    def __init__(self, store, strategies):
        self.store, self.strategies = store, strategies
        self.records: list[dict] = []
        self.batches = 0
        self.queries = 0

    def add(self, rows) -> None:
        n = self.batches
        self.batches += 1
        for i, (rtype, user, thread, agent, word) in enumerate(rows):
            rid = f"b{n}_{i}"
            self.store.add([f"{word} text"], rtype, record_ids=rid, user_ids=user, thread_ids=thread, agent_ids=agent,
                           roles="user" if rtype == "message" else None)
            self.records.append(dict(id=rid, type=rtype, user=user, thread=thread, agent=agent, word=word))
        if n == 0:
            for u in USERS[:-1]:
                self.store.add_user(u, f"profile of {u} apple text")
                self.records.append(dict(id=u, type="user_profile", user=None, thread=None, agent=None, word="apple"))
            for a in AGENTS[:-1]:
                self.store.add_agent(a, f"agent {a} banana text")
                self.records.append(dict(id=a, type="agent_profile", user=None, thread=None, agent=None, word="banana"))

    def search(self, word, user, thread, agent, exact, strategy) -> None:
        self.queries += 1
        k = len(self.records) + 5
        hits = self.store.search(
            f"{word} text", k=k, user_id=user, thread_id=thread, agent_id=agent, exact_user_match=exact[0],
            exact_thread_match=exact[1], exact_agent_match=exact[2], strategy=strategy,
        )
        by_id = {(r["type"], r["id"]): r for r in self.records}
        got = {(r.record_type, r.id) for r, _ in hits}
        assert len(got) == len(hits), "a record was returned twice"
        in_scope = {key for key, r in by_id.items() if _in_search_scope(r, user, thread, agent, exact)}
        leaked = got - in_scope
        assert not leaked, f"{strategy.value} search user={user!r} thread={thread!r} agent={agent!r} leaked {leaked}"
        for r, _ in hits:  # the returned record carries the scope it is stored with
            stored = by_id[(r.record_type, r.id)]
            if r.record_type not in ("user_profile", "agent_profile"):
                assert (r.user_id, r.thread_id, r.agent_id) == (stored["user"], stored["thread"], stored["agent"])
        # every record's retrieval text holds the word "text", and k exceeds the record count
        assert got == in_scope, f"{strategy.value} search lost in-scope records: {in_scope - got}"

    def list(self, rtype, user, thread, agent) -> None:
        self.queries += 1
        got = {r.id for r in self.store.list(rtype, limit=None, user_id=user, thread_id=thread, agent_id=agent)}
        expected = {r["id"] for r in self.records if _in_list_scope(r, rtype, user, thread, agent)}
        assert got == expected, f"list {rtype} user={user!r} thread={thread!r} agent={agent!r}: " \
                                f"extra={got - expected} missing={expected - got}"


def _run(make_store, engine, rounds, seed):
    rng = random.Random(seed)
    if engine == "sqlite":
        store = make_store(search_strategy=SearchStrategy.HYBRID)
        strategies = [SearchStrategy.VECTOR, SearchStrategy.KEYWORD, SearchStrategy.HYBRID]
    else:
        store = make_store()
        strategies = [SearchStrategy.VECTOR]
    world = World(store, strategies)
    for n in range(rounds):
        if n % 4 == 0:
            rows = [(rng.choice(TYPES), rng.choice(USERS), rng.choice(THREADS), rng.choice(AGENTS), rng.choice(WORDS))
                    for _ in range(rng.randint(1, 10))]
            world.add(rows)
        exact = (rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.5)
        world.search(rng.choice(WORDS), rng.choice(USERS + ["nobody"]), rng.choice(THREADS), rng.choice(AGENTS),
                     exact, rng.choice(strategies))
        world.list(rng.choice(TYPES + ["user_profile", "agent_profile"]), rng.choice([NOT_SET] + USERS),
                   rng.choice([NOT_SET] + THREADS), rng.choice([NOT_SET] + AGENTS))
    print(f"tenant isolation ({engine}): {len(world.records)} records, {world.queries} scoped queries")
    return world


def test_scopes_never_leak(make_store, engine):
    _run(make_store, engine, 120, seed=7)


@pytest.mark.slow
def test_scopes_never_leak_slow(make_store, engine):
    _run(make_store, engine, 3000, seed=8)
