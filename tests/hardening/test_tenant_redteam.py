"""Red team of the boundaries between users, store side (SC-2.2, SC-3.3, SC-6.2, SC-9).

``test_tenant_isolation`` draws scoped searches and lists without metadata filters. Here
the same scopes are combined with metadata filters that try to widen them: a metadata
field named ``user_id`` / ``thread_id`` / ``agent_id`` holding *another* user's id, ``$or``
over those fields, ``$ne`` / ``$nin`` (which match a missing field) and negations, while
records are added, their metadata rewritten and records deleted between queries, so the
filter masks an engine keeps between calls are reused across writes. A metadata filter
narrows a scope and never widens it: every returned record lies in the requested scope,
and a ``list`` returns exactly the in-scope records the filter matches.
"""

from __future__ import annotations

import random

import pytest

from oramem import NOT_SET, SearchStrategy

from .test_tenant_isolation import AGENTS, THREADS, USERS, _in_list_scope, _in_search_scope, store_and_strategies

WORDS = ["apple", "banana", "cherry"]
TYPES = ["memory", "fact", "message", "preference"]


def _meta(rng: random.Random, n: int) -> dict:
    """Metadata whose scope-named fields hold random (usually other) scope values."""
    return {
        "user_id": rng.choice(USERS[:-1]),
        "thread_id": rng.choice(THREADS[:-1]),
        "agent_id": rng.choice(AGENTS[:-1]),
        "n": n,
        "tag": rng.choice(WORDS),
    }


def _filters(rng: random.Random) -> dict:
    u1, u2 = rng.sample(USERS[:-1], 2)
    choices = [
        {"user_id": u1},
        {"$or": [{"user_id": u1}, {"user_id": u2}]},
        {"$or": [{"user_id": {"$ne": u1}}, {"user_id": {"$exists": False}}]},
        {"user_id": {"$nin": [u1]}},
        {"user_id": {"$not": {"$eq": u1}}},
        {"$or": [{"thread_id": rng.choice(THREADS[:-1])}, {"agent_id": rng.choice(AGENTS[:-1])}]},
        {"tag": {"$in": rng.sample(WORDS, 2)}},
        {"n": {"$gte": rng.randint(0, 30)}},
        {"$and": [{"n": {"$lt": rng.randint(0, 60)}}, {"$or": [{"user_id": u1}, {"tag": rng.choice(WORDS)}]}]},
    ]
    return rng.choice(choices)


def _matches(meta: dict, flt: dict) -> bool:
    """The reference of the operators drawn by :func:`_filters` (STORE_CONTRACT §9)."""
    for key, want in flt.items():
        if key == "$or":
            if not any(_matches(meta, f) for f in want):
                return False
        elif key == "$and":
            if not all(_matches(meta, f) for f in want):
                return False
        elif isinstance(want, dict):
            for op, arg in want.items():
                have, present = meta.get(key), key in meta
                ok = {
                    "$ne": lambda: not present or have != arg,
                    "$nin": lambda: not present or have not in arg,
                    "$in": lambda: present and have in arg,
                    "$exists": lambda: present == arg,
                    "$gte": lambda: present and have >= arg,
                    "$lt": lambda: present and have < arg,
                    "$not": lambda: not _matches(meta, {key: arg}),
                    "$eq": lambda: present and have == arg,
                }[op]()
                if not ok:
                    return False
        elif meta.get(key, object()) != want:
            return False
    return True


def _run(store, strategies, rounds: int, seed: int) -> int:
    rng = random.Random(seed)
    records: dict[tuple[str, str], dict] = {}
    queries = 0
    n = 0
    for round_no in range(rounds):
        action = rng.random()
        if action < 0.35 or not records:
            for _ in range(rng.randint(1, 6)):
                rtype = rng.choice(TYPES)
                user, thread, agent = rng.choice(USERS), rng.choice(THREADS), rng.choice(AGENTS)
                meta, rid = _meta(rng, n), f"s{seed}r{n}"
                n += 1
                store.add([f"{meta['tag']} text"], rtype, record_ids=rid, user_ids=user, thread_ids=thread,
                          agent_ids=agent, metadata=meta, roles="user" if rtype == "message" else None)
                records[(rtype, rid)] = dict(id=rid, type=rtype, user=user, thread=thread, agent=agent, meta=meta)
        elif action < 0.5:
            key = rng.choice(sorted(records))
            meta = _meta(rng, records[key]["meta"]["n"])
            assert store.update(key[0], key[1], metadata=meta) == 1
            records[key]["meta"] = meta
        elif action < 0.6:
            key = rng.choice(sorted(records))
            assert store.delete(key[0], key[1]) == 1
            del records[key]
        flt = _filters(rng)
        user, thread, agent = rng.choice(USERS + ["nobody"]), rng.choice(THREADS), rng.choice(AGENTS)
        exact = (rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.5)
        strategy = rng.choice(strategies)
        hits = store.search(
            f"{rng.choice(WORDS)} text", k=len(records) + 5, user_id=user, thread_id=thread, agent_id=agent,
            exact_user_match=exact[0], exact_thread_match=exact[1], exact_agent_match=exact[2],
            metadata_filter=flt, strategy=strategy,
        )
        queries += 1
        got = {(r.record_type, r.id) for r, _ in hits}
        in_scope = {k for k, r in records.items() if _in_search_scope(r, user, thread, agent, exact)}
        leaked = got - in_scope
        assert not leaked, (f"round {round_no}: {strategy.value} search user={user!r} thread={thread!r} "
                            f"agent={agent!r} exact={exact} filter={flt} leaked {leaked}")
        assert all(_matches(records[k]["meta"], flt) for k in got), f"round {round_no}: filter {flt} not applied"
        rtype = rng.choice(TYPES)
        l_user, l_thread, l_agent = (rng.choice([NOT_SET] + USERS), rng.choice([NOT_SET] + THREADS),
                                     rng.choice([NOT_SET] + AGENTS))
        listed = {r.id for r in store.list(rtype, limit=None, user_id=l_user, thread_id=l_thread, agent_id=l_agent,
                                           metadata_filter=flt)}
        queries += 1
        expected = {r["id"] for r in records.values()
                    if _in_list_scope(r, rtype, l_user, l_thread, l_agent) and _matches(r["meta"], flt)}
        assert listed == expected, (f"round {round_no}: list {rtype} user={l_user!r} thread={l_thread!r} "
                                    f"agent={l_agent!r} filter={flt}: extra={listed - expected} "
                                    f"missing={expected - listed}")
    return queries


def test_metadata_filters_naming_scope_fields_never_widen_a_scope(make_store, engine):
    store, strategies = store_and_strategies(make_store, engine)
    queries = _run(store, strategies, 150, seed=11)
    print(f"filtered tenant isolation ({engine}): {queries} scoped, filtered queries")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 105))
def test_metadata_filters_naming_scope_fields_never_widen_a_scope_slow(make_store, engine, seed):
    store, strategies = store_and_strategies(make_store, engine)
    _run(store, strategies, 300, seed=seed)


def test_approximate_search_with_filters_never_widens_a_scope(tmp_path):
    """The same draws on an ANN index (built at once: ``min_rows=0``; every selectivity takes
    the approximate path), where candidates come from the index before the scope test."""
    pytest.importorskip("hnswlib")
    from oramem import SQLiteMemoryStore
    from oramem.ann import AnnConfig
    from oramem.testing import HashEmbedder

    with SQLiteMemoryStore(str(tmp_path / "ann.db"), embedder=HashEmbedder(32), search_strategy=SearchStrategy.HYBRID,
                           approximate_search=AnnConfig(min_rows=0, min_selectivity=0.0)) as store:
        _run(store, [SearchStrategy.VECTOR, SearchStrategy.HYBRID], 150, seed=23)
