"""The graph signal reads a hop's facts newest first, per key, from the fact table's
(agent_id, entity_key, valid_from DESC, id) index and the key's mention links, and stops at
its limit: an entity with 5,000 facts cost ~15 ms per retrieve when every linked fact was read
and sorted. The answers are those of the single query before (kept here verbatim as the
reference, from main at 3b2d1dc) for every user of a shared agent, with entities past the
limit, facts that mention another entity (non-primary links), hop-1 and hop-2 neighbours,
ties on valid_from, a time range and an entity filter; and a fact's primary link is the one
to its own entity, which the new read relies on."""

from __future__ import annotations

import re
from typing import Any, Optional

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.knowledge.read import run as run_module
from oramem.knowledge.read import signals
from oramem.knowledge.read.signals import (MAX_NEIGHBOURS_PER_HOP, GraphRetrievalResult, clip01, days, fact_visible,
                                           norm, p_edge_visible, p_sql_visible, reads)
from oramem.knowledge.read.state import RetrieveState
from oramem.testing import HashEmbedder

from .helpers import Clock, adding_llm, extract

USERS = ("alice", "bob", None)


def _old_graph_signal(st: RetrieveState, conn: sa.Connection, seeds: list[str], filter_keys: Optional[list[str]]) -> GraphRetrievalResult:
    """KC-5.4 graph signal: BFS from the primed entities over active edges, both directions,
    as one recursive CTE (SQLite and Oracle through SQLAlchemy)."""
    cfg = st.cfg
    res = GraphRetrievalResult()
    if not seeds:
        return res
    t = st.t
    r, e = t.relationship, t.entity
    shared_only, has_trange, hide_stale, current = st.shape()
    max_hop = min(2, len(cfg.graph_hop_factors) - 1)

    def build_walk() -> sa.Select[Any]:
        vis = p_edge_visible(r, current)
        fwd = sa.select(r.c.id.label("rid"), r.c.source_entity_key.label("a"), r.c.target_entity_key.label("b"),
                        r.c.strength.label("s")).where(reads.p_visible(r, shared_only), *vis)
        bwd = sa.select(r.c.id.label("rid"), r.c.target_entity_key.label("a"), r.c.source_entity_key.label("b"),
                        r.c.strength.label("s")).where(reads.p_visible(r, shared_only), *vis)
        und = sa.union_all(fwd, bwd).cte("kg_und")
        walk = (
            sa.select(e.c.canonical_key.label("k"), sa.literal(0, sa.Integer).label("hop"),
                      sa.literal(1.0, sa.Float).label("s"), sa.cast(sa.null(), sa.String(36)).label("rid"))
            .where(reads.p_visible(e, shared_only), e.c.canonical_key.in_(reads.expanding("p_seeds")))
            .cte("kg_walk", recursive=True)
        )
        step = (
            sa.select(und.c.b, (walk.c.hop + 1).label("hop"), und.c.s, und.c.rid)
            .select_from(walk.join(und, und.c.a == walk.c.k))
            .where(walk.c.hop < sa.bindparam("p_max_hop", type_=sa.Integer),
                   sa.or_(walk.c.hop == 0, und.c.s >= sa.bindparam("p_min_strength", type_=sa.Float)))
        )
        walk = walk.union_all(step)
        return sa.select(walk.c.k, walk.c.hop, walk.c.s, walk.c.rid)

    walk_stmt = reads.cached_stmt(r, ("graph_walk", shared_only, current), build_walk)
    rows = conn.execute(walk_stmt, st.params(p_seeds=list(seeds), p_max_hop=max_hop,
                                                p_min_strength=cfg.graph_hop2_min_strength)).all()
    best: dict[str, tuple[int, float, Optional[str]]] = {}
    for k, hop, s, rid in rows:
        cur = best.get(k)
        if cur is None or hop < cur[0] or (hop == cur[0] and float(s) > cur[1]):
            best[k] = (int(hop), float(s), rid)
    rids = sorted({rid for _, _, _, rid in rows if rid})
    edge_rows: dict[str, dict[str, Any]] = {}
    edges_stmt = reads.cached_stmt(r, ("edges_by_ids",), lambda: sa.select(r).where(r.c.id.in_(reads.expanding("p_ids"))))
    for batch in reads.chunked(rids):
        for row in conn.execute(edges_stmt, {"p_ids": batch}).mappings():
            edge_rows[row["id"]] = dict(row)
    ents = reads.load_entities(conn, t, st.agent_id, list(best), st.user_id, read=True)
    best = {k: v for k, v in best.items() if k in ents and ents[k]["is_active"]}
    # neighbour cut per hop: importance, then strength
    kept: dict[str, tuple[int, float, Optional[str]]] = {k: v for k, v in best.items() if v[0] == 0}
    for hop in range(1, max_hop + 1):
        layer = [k for k, v in best.items() if v[0] == hop]
        layer.sort(key=lambda k: (-(ents[k]["importance_score"] or 0.0), -best[k][1], k))
        for k in layer[:MAX_NEIGHBOURS_PER_HOP]:
            kept[k] = best[k]
    res.neighbor_keys = sorted(k for k, v in kept.items() if v[0] > 0)
    names = {k: ents[k]["display_name"] for k in ents}
    seen_edges = set()
    hop_of_edge: dict[str, int] = {}  # an edge's lowest hop among the kept keys it reached
    for v in kept.values():
        if v[2] is not None and (v[2] not in hop_of_edge or v[0] < hop_of_edge[v[2]]):
            hop_of_edge[v[2]] = v[0]
    for rid in rids:
        er = edge_rows.get(rid)
        if er is None:
            continue
        hop = hop_of_edge.get(rid)
        if hop is None:
            continue
        seen_edges.add(rid)
        res.edges.append({
            "source_key": er["source_entity_key"], "source_name": names.get(er["source_entity_key"]),
            "target_key": er["target_entity_key"], "target_name": names.get(er["target_entity_key"]),
            "rel_type": er["rel_type"], "strength": float(er["strength"]), "hop": hop,
        })
    res.edges.sort(key=lambda x: (x["hop"], -x["strength"], x["source_key"], x["rel_type"], x["target_key"]))
    res.edges_traversed = len(seen_edges)
    # facts of the seeds and the neighbours, by hop then recency
    f, lk = t.fact, t.link
    def build_facts() -> sa.Select[Any]:
        # the facts linked to one hop's keys, newest first (kept's keys are unique, so the
        # hops' key lists are disjoint); the entity key breaks a tie of two links of a fact
        stmt = (
            sa.select(*st.fact_cols(), lk.c.entity_key.label("_via"))
            .select_from(f.join(lk, lk.c.fact_id == f.c.id))
            # the scope on the links only: a link has its fact's agent and user (the write
            # path writes both in the fact's scope), and with the fact's agent_id here too
            # SQLite (no statistics) walks the agent's facts instead of the keys' links; the
            # fact's user is checked too, and its agent on the rows read (a defence)
            .where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(reads.expanding("p_keys")),
                   reads.p_user_visible(f, shared_only),
                   f.c.confidence >= sa.bindparam("p_min_conf", type_=sa.Float), *p_sql_visible(f, has_trange, hide_stale))
            .order_by(sa.desc(f.c.valid_from), f.c.id, lk.c.entity_key)
            .limit(sa.bindparam("p_limit", type_=sa.Integer, literal_execute=True))
        )
        if filter_keys is not None:
            stmt = stmt.where(f.c.id.in_(sa.select(lk.c.fact_id).where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(reads.expanding("p_fk")))))
        return stmt

    # Hop by hop, the next hop only while the limit is not reached: the rows are ordered by
    # hop first, so this reads the rows one query over every kept key ordered by (hop, ...)
    # would, without sorting the neighbours' facts when the seeds' facts fill the limit
    # (at 100k facts the seeds and ~20 neighbours hold ~1,000 facts each).
    stmt = reads.cached_stmt(f, ("graph_hop_facts", shared_only, has_trange, hide_stale, filter_keys is not None), build_facts)
    gparams = st.params(p_min_conf=cfg.graph_min_confidence)
    if filter_keys is not None:
        gparams["p_fk"] = list(filter_keys)
    qwords = " " + " ".join(norm(re.sub(r"[^\w\s]", " ", st.query)).split()) + " "
    taken: dict[str, dict[str, Any]] = {}
    left = cfg.graph_max_facts * 3
    for hop in range(max_hop + 1):
        keys = [k for k, v in kept.items() if v[0] == hop]
        if left <= 0 or not keys:
            continue
        frows = reads.rows_of(conn.execute(stmt, {**gparams, "p_keys": keys, "p_limit": left}))
        left -= len(frows)
        for frow in frows:
            via = frow.pop("_via")
            if not reads.row_visible(frow, st.agent_id, st.user_id) or not fact_visible(frow, st.view):
                continue
            if frow["id"] not in taken and len(taken) >= cfg.graph_max_facts:
                continue
            _, s, rid = kept[via]
            fact_age = days(frow["valid_from"], st.now)
            edge_factor = 1.0
            if hop > 0 and rid in edge_rows:
                edge_factor = max(0.2, 1.0 / (1.0 + days(edge_rows[rid]["updated_at"], st.now) / 90.0))
            name = norm(names.get(via) or "")
            boost = 1.5 if name and f" {name} " in qwords else 1.0
            score = clip01(s * max(0.1, 1.0 / (1.0 + fact_age / 30.0)) * edge_factor * boost * cfg.graph_hop_factors[hop])
            prev = taken.get(frow["id"])
            if prev is None or score > prev["score"]:
                taken[frow["id"]] = {"fact_id": frow["id"], "entity_key": via, "hop": hop, "score": score, "edge_id": rid}
            st.add(frow, "graph", score, (rid,) if rid else ())
    res.facts = sorted(taken.values(), key=lambda x: (x["hop"], -x["score"], x["fact_id"]))
    return res


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
    new = run_module.graph_signal
    compared = limited = 0
    hops: set[int] = set()
    mentions = 0
    for query in QUERIES:
        for user in USERS:
            for kw in ({}, {"entity_keys": ["person:ana"]}):
                monkeypatch.setattr(run_module, "graph_signal", new)
                got = _answers(km, query, user, **kw)
                monkeypatch.setattr(run_module, "graph_signal", _old_graph_signal)
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
