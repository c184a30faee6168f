"""Red team round 8 (KC-3.7, KC-3.8, KC-3.10, KC-5.12, KC-6.0): what the knowledge layer
computes from several users' rows and then shows one user, or keeps after one user's erasure.
Alice and Bob use one agent (SQLite, scripted model); the agent's shared knowledge is what
both read."""

from __future__ import annotations

import pytest

from .helpers import scope_rows, write_keeper
from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"


def _shared_clinic(km) -> str:
    """A shared fact and a shared edge that Alice's and Bob's retrieves both reach."""
    fid = km.add_fact(AGENT, "Clinic", "The clinic treats HIV on Tuesdays", subject_type="place").facts_added[0]["fact_id"]
    km.add_fact(AGENT, "Clinic", "The clinic is on Main street", subject_type="place")
    km.add_relation(AGENT, "Clinic", "Main Street", "located_on")
    return fid


@pytest.mark.parametrize("reader", ["retrieve", "retrieve_async"])
def test_a_users_retrieve_counts_in_the_shared_rows_usage_and_names_nobody(env, reader):  # noqa: F811
    """KC-5.12 as decided (2026-12-07): a user's retrieve records usage on every row it
    returned that she sees, the shared ones included, so shared knowledge that only users read
    stays fresh in memify. The shared rows' usage is an aggregate over the agent's readers: it
    names no reader and outlives none of them in a way that points at her. (Red team round 8
    proposed own-rows-only; it lets such shared facts go stale and was not adopted: this test
    fails on that rule.)"""
    _, store, km, llm, clock = env
    shared_fact = _shared_clinic(km)
    write_keeper(km, llm, clock, "alice", "Alice", "the clinic card", "Alice keeps the clinic card in the drawer")
    clock.advance(minutes=5)

    if reader == "retrieve":
        r = km.retrieve(AGENT, "clinic HIV treatment card", user_id="alice")
    else:
        import asyncio
        r = asyncio.run(km.retrieve_async(AGENT, "clinic HIV treatment card", user_id="alice"))
    assert "The clinic treats HIV on Tuesdays" in r.context and "located_on" in r.context
    assert "Alice keeps the clinic card in the drawer" in r.context

    seen = km.get(AGENT, shared_fact, user_id="bob")
    assert seen.times_retrieved == 1 and seen.last_retrieved_at is not None
    assert [e.last_used_at is not None for e in km.relationships(AGENT, user_id="bob")] == [True]
    (mine,) = [f for f in km.get_all(AGENT, user_id="alice") if f.fact_text == "Alice keeps the clinic card in the drawer"]
    assert mine.times_retrieved == 1 and mine.last_retrieved_at is not None

    km.forget(user_id="alice")
    shared = scope_rows(km, store, None)
    assert "alice" not in repr(shared).lower() and "drawer" not in repr(shared)
    assert km.get(AGENT, shared_fact, user_id="bob").times_retrieved == 1  # the aggregate names nobody


def test_a_shared_scope_retrieve_still_records_the_shared_rows_usage(env):  # noqa: F811
    """The other half of the rule: a read of the shared scope (``user_id=None``) records usage
    on the shared rows it returns (KC-5.12), so the shared knowledge's vitality and importance
    still learn from the agent's own reads."""
    _, _, km, _, clock = env
    shared_fact = _shared_clinic(km)
    clock.advance(minutes=5)
    r = km.retrieve(AGENT, "clinic HIV treatment")
    assert "The clinic treats HIV on Tuesdays" in r.context
    seen = km.get(AGENT, shared_fact)
    assert seen.times_retrieved == 1 and seen.last_retrieved_at is not None
    assert [e.last_used_at is not None for e in km.relationships(AGENT)] == [True]


def _preference(km, clock, user, title: str) -> None:
    """An active, reinforced behavioral_preference of ``user`` (what consolidation writes)."""
    import numpy as np
    import sqlalchemy as sa

    from oramem.knowledge.model import new_id

    t = km.runtime.tables
    vec = np.asarray(km.runtime.embedder.embed([title]), dtype=np.float32)[0]
    with km.runtime.backend.write("test", AGENT) as c:
        c.execute(sa.insert(t.meta_observation).values(
            id=new_id(), agent_id=AGENT, user_id=user, observation_type="behavioral_preference", title=title,
            text=title.lower(), supporting_event_ids=[], supporting_fact_ids=[], times_reinforced=1, is_active=True,
            embedding_vec=vec, first_detected_at=clock.now, last_reinforced_at=clock.now, created_at=clock.now))


@pytest.mark.parametrize("how", ["forget", "store_forget", "profile_cascade", "forget_without_python_hook"])
def test_erasing_alice_drops_her_cached_directive_block(env, how, monkeypatch):  # noqa: F811
    """KC-5.10 caches each scope's directives block (the model's text over her behavioural
    preferences, plus the shared ones) in the instance for ``directive_cache_ttl_minutes``.
    Erasing her (KC-3.10) left her block in the cache: nothing served it again (the key hashes
    her observations, which are gone), but the process kept her preferences' words until a
    later directives call of the same scope or an expired entry's sweep, i.e. as long as the
    instance lived when no one called. Her erasure (``forget`` through the knowledge layer or
    the store, her profile's cascade) now drops her scope's entries; Bob's and the shared
    scope's stay cached. ``forget_without_python_hook``: on Oracle the PL/SQL twin erases the
    rows and no Python deletion hook runs, so ``KnowledgeMemory.forget`` drops them itself
    (here the store's erasure is stood in for by a stub that runs no hook)."""
    _, store, km, llm, clock = env
    _preference(km, clock, "alice", "Wants answers about her HIV medication first")
    _preference(km, clock, "bob", "Prefers long answers")
    _preference(km, clock, None, "Greets by name")
    llm.route("directives", lambda p: {"directives_block": "\n".join(f"- {d['title']}" for d in p["directives"]),
                                       "directives_used": len(p["directives"])})
    assert "HIV" in km.directives(AGENT, user_id="alice").text
    km.directives(AGENT, user_id="bob")
    km.directives(AGENT)
    cached = km.runtime.directive_cache
    assert any("HIV" in block.text for _, block in cached.values())
    # a plain delete of a record of hers is no erasure: the cache stays
    (record,) = store.add(["a note"], "memory", user_ids="alice")
    store.delete("memory", record)
    assert km.directives(AGENT, user_id="alice").cache_hit is True

    if how == "forget":
        km.forget(user_id="alice")
    elif how == "forget_without_python_hook":
        monkeypatch.setattr(km.runtime.store, "forget", lambda **kw: {})
        km.forget(user_id="alice")
    elif how == "store_forget":
        store.forget(user_id="alice")
    else:
        store.add_user("alice", "Alice")
        store.delete("user_profile", "alice", cascade=True)

    assert not any("HIV" in block.text for _, block in cached.values()), cached
    assert sorted(k[1] or "" for k in cached) == ["", "bob"]
    assert km.directives(AGENT, user_id="bob").cache_hit is True
    assert km.directives(AGENT).cache_hit is True


# ----------------------------------------------------------------------------- differential
SUBJECTS = [("Hotel Aurora", "place"), ("Ana Souza", "person"), ("Paris", "place")]
ALICES_FACTS = [5, 0, 1]


def _open(tmp_path, name: str, clock):
    from oramem import SQLiteMemoryStore
    from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
    from oramem.testing import HashEmbedder, ScriptedLLM

    store = SQLiteMemoryStore(str(tmp_path / f"{name}.db"), embedder=HashEmbedder(384), clock=clock,
                              search_strategy="vector")
    llm = ScriptedLLM({
        "event_emotion": {"emotion": "neutral", "intensity": 0.2, "energy": "medium"},
        # a model that writes from what it is shown and agrees to every merge
        "entity_summary": lambda p: {"summary": " / ".join(p["facts"]) or "nothing"},
        "cluster_summary": lambda p: {"summary": " / ".join(str(x) for x in p.get("facts", p.get("lines", [])))[:400] or "c"},
        "community": lambda p: {"title": "Theme", "summary": str(p)[:300]},
        "entity_merge": {"should_merge": True},
        "consolidate": {"observations": []},
    })
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, cluster_min_facts=2,
                                                            memify_merge_similarity_threshold=0.5), clock=clock)
    return store, km


def _bobs_view(km) -> tuple:
    """Everything Bob (and the shared scope) reads after the jobs, ids and row ids aside."""
    out = []
    for user in ("bob", None):
        facts = sorted([(f.fact_text, f.entity_key, f.user_id, f.times_retrieved, str(f.last_retrieved_at),
                         f.vitality_score, f.is_stale, f.cluster_id is not None)
                        for f in km.get_all(AGENT, user_id=user)], key=repr)
        ents = sorted([(e.canonical_key, e.user_id, e.summary_text, e.fact_count, e.importance_score, e.is_active,
                        sorted(e.aliases)) for e in km.entities(AGENT, user_id=user, include_inactive=True)], key=repr)
        rels = sorted([(r.source_entity_key, r.target_entity_key, r.rel_type, r.user_id, r.strength, str(r.last_used_at))
                       for r in km.relationships(AGENT, user_id=user, include_inactive=True)], key=repr)
        r = km.retrieve(AGENT, "Hotel Aurora Paris Ana Souza", user_id=user, config_overrides={"track_usage": False})
        ranked = sorted([(round(f.score, 9), f.fact_text, tuple(sorted((k, round(v, 9)) for k, v in f.scores.items())))
                         for f in r.facts], key=repr)
        out.append((facts, ents, rels, ranked, r.context, _derived_rows(km, user)))
    return tuple(out)


def _derived_rows(km, user) -> list:
    """The scope's clusters and observations (read by retrieve's context and ``directives``;
    no listing API), their ids and row ids aside."""
    import sqlalchemy as sa

    t = km.runtime.tables
    out = []
    with km.runtime.backend.read() as conn:
        for table, cols in ((t.cluster, ("label", "summary_text", "fact_count", "importance", "is_active")),
                            (t.meta_observation, ("observation_type", "title", "text", "confidence", "is_active"))):
            cond = table.c.user_id.is_(None) if user is None else table.c.user_id == user
            rows = conn.execute(sa.select(*(table.c[c] for c in cols)).where(cond)).all()
            out.append(sorted((tuple(row) for row in rows), key=repr))
    return out


def test_alices_writes_reads_and_jobs_never_shape_what_bob_and_the_shared_scope_read(tmp_path):
    """The aggregates across users, as one differential: two stores get the same shared and
    Bob facts and edges, and Bob's and the shared scope's reads, at the same clock readings;
    one also gets Alice's facts and edges about the same subjects (Paris, the hotel, Ana) and
    her retrieves. Every background job then runs in every scope of both stores, with a model
    that writes its summaries from what it is shown and agrees to every merge. Bob's and the
    shared scope's rows as read (fact usage, vitality, staleness and clustering; entity
    summaries, counts, importance, aliases and merges; edge strength and use) and retrieves
    (facts, per-signal scores, context) are the same in both stores: nothing is computed from
    her rows or her reads. Alice's counts differ per subject, so a job that counted her links,
    edges or facts (density, degree, clusters: each checked by dropping its scope condition)
    moves Bob's normalised scores or texts. No entity pair of this world reaches the merge
    threshold (merges across scopes: ``test_tenant_redteam``). Her retrieves run without usage
    tracking here: their usage on the shared rows is an aggregate by design (KC-5.12)."""
    from .helpers import Clock

    clocks = [Clock(), Clock()]
    with_a, without_a = _open(tmp_path, "with_a", clocks[0]), _open(tmp_path, "without_a", clocks[1])
    try:
        def step(owner, fn):
            for clock in clocks:
                clock.advance(minutes=7)
            for _, km in ([with_a] if owner == "alice" else [with_a, without_a]):
                fn(km)

        for i, (subject, kind) in enumerate(SUBJECTS):
            for owner in (None, "bob", "alice"):
                tag = {None: "shared", "bob": "Bob's", "alice": "Alice's private"}[owner]
                # Alice's counts differ per subject, so min-max normalised scores would move
                for n in range(ALICES_FACTS[i] if owner == "alice" else 2):
                    step(owner, lambda km, s=subject, k=kind, o=owner, t=tag, n=n: km.add_fact(
                        AGENT, s, f"{s} note {n} ({t})", subject_type=k, user_id=o))
        step("alice", lambda km: km.add_relation(AGENT, "Paris", "Paris Metro", "near", source_type="place",
                                                 target_type="place", user_id="alice"))
        step("alice", lambda km: km.add_relation(AGENT, "Paris", "Hotel Aurora", "near", source_type="place",
                                                 target_type="place", user_id="alice"))
        step(None, lambda km: km.add_relation(AGENT, "Hotel Aurora", "Paris", "located_in", source_type="place",
                                              target_type="place"))
        step("bob", lambda km: km.add_relation(AGENT, "Ana Souza", "Paris", "lives_in", source_type="person",
                                               target_type="place", user_id="bob"))
        for query in ("Hotel Aurora", "Paris", "Ana Souza"):
            # her reads count in the shared rows' usage by design (KC-5.12: an aggregate over the
            # agent's readers, tests above); this probe is about what her rows and jobs compute
            step("alice", lambda km, q=query: km.retrieve(AGENT, q, user_id="alice", config_overrides={"track_usage": False}))
            step("bob", lambda km, q=query: km.retrieve(AGENT, q, user_id="bob"))
            step(None, lambda km, q=query: km.retrieve(AGENT, q))
        for clock in clocks:
            clock.advance(days=40)
        for store, km in (with_a, without_a):
            for user in km.scopes(AGENT):
                result = km.run_background(AGENT, user_id=user)
                assert not result.errors, (user, result.errors)
        assert with_a[1].scopes(AGENT) == [None, "alice", "bob"] and without_a[1].scopes(AGENT) == [None, "bob"]
        got, want = _bobs_view(with_a[1]), _bobs_view(without_a[1])
        assert "private" not in repr(got)
        assert got == want
        # the probe is not vacuous: the jobs wrote summaries and scores Bob reads
        (bob_facts, bob_ents, *_), _ = got
        assert any(e[2] for e in bob_ents) and any(e[4] is not None for e in bob_ents)
        assert any(f[3] for f in bob_facts) and all(f[5] is not None for f in bob_facts)
        clusters, _ = got[0][5]
        assert clusters and all(c[1] for c in clusters)
    finally:
        for store, km in (with_a, without_a):
            km.close()
            store.close()
