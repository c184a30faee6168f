"""The graph signal reads a hop's facts newest first, per key, from the fact table's
(agent_id, entity_key, valid_from DESC, id) index and the key's mention links, and stops at
its limit: an entity with 5,000 facts cost ~15 ms per retrieve when every linked fact was read
and sorted. The answers are those of the single query before (its statement kept here as the
reference, from main at 3b2d1dc, in place of the new hop read) for every user of a shared agent, with entities past the
limit, facts that mention another entity (non-primary links), hop-1 and hop-2 neighbours,
ties on valid_from, a time range and an entity filter; and a fact's primary link is the one
to its own entity, which the new read relies on."""

from __future__ import annotations

from typing import Any, Optional

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.read import signals
from oramem.knowledge.read.signals import p_sql_visible, reads
from oramem.knowledge.read.state import RetrieveState
from oramem.testing import HashEmbedder

from .helpers import Clock, adding_llm, extract

USERS = ("alice", "bob", None)


def _old_hop_facts(st: RetrieveState, conn: sa.Connection, keys: list[str], limit: int,
                   filter_keys: Optional[list[str]]) -> list[dict[str, Any]]:
    """The hop read before (main at 3b2d1dc, the statement verbatim): every fact linked to the
    hop's keys, in one ORDER BY, the first ``limit``. The reference the new read must equal."""
    f, lk = st.t.fact, st.t.link
    shared_only, has_trange, hide_stale, _ = st.shape()
    stmt = (
        sa.select(*st.fact_cols(), lk.c.entity_key.label("_via"))
        .select_from(f.join(lk, lk.c.fact_id == f.c.id))
        .where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(keys),
               reads.p_user_visible(f, shared_only),
               f.c.confidence >= sa.bindparam("p_min_conf", type_=sa.Float), *p_sql_visible(f, has_trange, hide_stale))
        .order_by(sa.desc(f.c.valid_from), f.c.id, lk.c.entity_key)
        .limit(limit)
    )
    if filter_keys is not None:
        lf = lk.alias("kg_lf")
        stmt = stmt.where(f.c.id.in_(sa.select(lf.c.fact_id).where(reads.p_visible(lf, shared_only), lf.c.entity_key.in_(filter_keys))))
    return reads.rows_of(conn.execute(stmt, st.params(p_min_conf=st.cfg.graph_min_confidence)))


@pytest.fixture
def graph_km(tmp_path):
    """Ana (60 facts per user scope, in writes of 6 that share a valid_from), Bruno, Cyril and
    Delia in a chain of friends (Ana-Bruno-Cyril-Delia), facts of Ana that mention Bruno and
    Cyril, for alice, bob and the shared scope of one agent, their writes interleaved a day
    apart; graph_max_facts 12, so a hop reads 36 rows. And a sparse chain Ezra-Fiona-Gus, where a
    retrieve reaches hop 2."""
    clock = Clock()
    store = SQLiteMemoryStore(str(tmp_path / "g.db"), embedder=HashEmbedder(64), clock=clock, search_strategy="hybrid")
    llm = adding_llm()
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, dedup_similarity=1.01, graph_max_facts=12),
                         clock=clock)
    people = [("Ana", "person"), ("Bruno", "person"), ("Cyril", "person"), ("Delia", "person")]
    chain = [("Ana", "Bruno", "friend"), ("Bruno", "Cyril", "friend"), ("Cyril", "Delia", "friend")]
    for w in range(10):
        for user in USERS:
            tag = user or "shared"
            facts = [("Ana", f"Ana note {tag} {w}-{j} item{j}") for j in range(4)]
            facts += [("Ana", f"Ana met Bruno at market {tag} {w}"), ("Ana", f"Ana called Cyril about plan {tag} {w}")]
            if w % 3 == 0:
                facts += [("Bruno", f"Bruno likes tea {tag} {w}"), ("Cyril", f"Cyril rides bikes {tag} {w}"),
                          ("Delia", f"Delia sings {tag} {w}")]
            llm.route("extract", extract(entities=people, facts=facts, relations=chain))
            km.write("desk", f"notes {tag} {w}", "Ana", user_id=user)
            clock.advance(hours=2)
        clock.advance(days=1)
    # a sparse chain, so a retrieve about Ezra reaches hop 2 (Gus) before its limit
    for user in USERS:
        tag = user or "shared"
        llm.route("extract", extract(entities=[("Ezra", "person"), ("Fiona", "person"), ("Gus", "person")],
                                     facts=[("Ezra", f"Ezra paints {tag}"), ("Fiona", f"Fiona rows {tag}"), ("Gus", f"Gus cooks {tag}")],
                                     relations=[("Ezra", "Fiona", "friend"), ("Fiona", "Gus", "friend")]))
        km.write("desk", f"chain {tag}", "Ezra", user_id=user)
        clock.advance(hours=1)
    try:
        yield km
    finally:
        km.close()
        store.close()


def _answers(km, query: str, user: Optional[str], **kw: Any) -> tuple[Any, ...]:
    # no usage tracking: a retrieve would change what the next one scores
    r = km.retrieve("desk", query, user_id=user, config_overrides={"track_usage": False}, **kw)
    return ([(g["fact_id"], g["entity_key"], g["hop"], round(g["score"], 12), g["edge_id"]) for g in r.graph.facts],
            [(f.fact_id, round(f.score, 12)) for f in r.facts], r.graph.neighbor_keys)


MENTIONED = ("person:bruno", "person:cyril")  # by Ana's facts
QUERIES = ["what about Ana?", "what did Ana do last week?", "tell me about Bruno and Cyril", "Delia", "what does Ezra do?"]


@pytest.mark.parametrize("keys_per_statement", [16, 1], ids=["one-statement", "merged-in-python"])
def test_the_graph_signal_answers_as_the_single_query_did(graph_km, monkeypatch, keys_per_statement):
    """With one key per statement, a hop of several keys is merged from several statements."""
    km = graph_km
    monkeypatch.setattr(signals, "GRAPH_KEYS_PER_STATEMENT", keys_per_statement)
    new = signals.hop_facts
    compared = limited = 0
    hops: set[int] = set()
    mentions = 0
    for query in QUERIES:
        for user in USERS:
            for kw in ({}, {"entity_keys": ["person:ana"]}):
                monkeypatch.setattr(signals, "hop_facts", new)
                got = _answers(km, query, user, **kw)
                monkeypatch.setattr(signals, "hop_facts", _old_hop_facts)
                want = _answers(km, query, user, **kw)
                assert got == want, (query, user, kw)
                compared += 1
                limited += len(got[0]) >= 12
                hops |= {hop for _, _, hop, _, _ in got[0]}
                mentions += sum(1 for _, via, _, _, _ in got[0] if via != "person:ana" and via in MENTIONED)
    assert compared == len(QUERIES) * len(USERS) * 2 and limited >= 6  # the limit was reached, where order decides
    assert hops == {0, 1, 2} and mentions  # every hop, and facts reached through a mention link


def test_user_b_never_reads_user_a_facts_through_the_graph(graph_km):
    km = graph_km
    texts = {}
    for user in USERS:
        for f in km.get_all("desk", user_id=user, limit=10_000):
            texts[f.fact_id] = f.fact_text
    seen = []
    for query in QUERIES:
        r = km.retrieve("desk", query, user_id="bob")
        graph_texts = [texts[g["fact_id"]] for g in r.graph.facts]
        assert not [t for t in graph_texts if "alice" in t], graph_texts
        assert not [f.fact_text for f in r.facts if "alice" in f.fact_text or f.user_id == "alice"]
        seen += graph_texts
    # bob's own and the shared facts came through the graph, of both kinds of link
    assert any(" bob " in t for t in seen) and any(" shared " in t for t in seen)
    assert any("met Bruno" in t or "called Cyril" in t for t in seen), seen


def test_a_facts_primary_link_is_the_link_to_its_own_entity(graph_km):
    km = graph_km
    t = km.runtime.tables
    f, lk = t.fact, t.link
    with km.runtime.backend.read() as conn:
        rows = conn.execute(sa.select(lk.c.entity_key, lk.c.is_primary, f.c.entity_key).select_from(
            lk.join(f, f.c.id == lk.c.fact_id))).all()
    assert rows and any(not primary for _, primary, _ in rows)  # mention links exist
    assert all(primary == (key == own) for key, primary, own in rows)
