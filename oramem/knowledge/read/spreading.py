"""KC-5.6: spreading activation from the best candidates over the relationship graph (one or
two hops), and the meta-observations it reaches."""

from __future__ import annotations

from typing import Any, Optional

import sqlalchemy as sa

from ..db import queries as reads
from ..types import RetrievalCandidate, SpreadingActivationResult
from .scoring import days, dynamic_importance, score_cand
from .state import Cand, RetrieveState, detail_of
from .visibility import fact_visible, p_edge_visible, p_sql_visible

__all__ = ["neighbours", "facts_of", "spread"]


def neighbours(st: RetrieveState, conn: sa.Connection, keys: list[str], limit: int) -> dict[str, list[tuple[str, float, str]]]:
    r = st.t.relationship
    out: dict[str, list[tuple[str, float, str]]] = {}
    if not keys:
        return out
    shared_only, _, _, current = st.shape()
    stmt = reads.cached_stmt(r, ("neighbours", shared_only, current), lambda: (
        sa.select(r.c.id, r.c.source_entity_key, r.c.target_entity_key, r.c.strength)
        .where(reads.p_visible(r, shared_only), sa.or_(r.c.source_entity_key.in_(reads.expanding("p_keys")), r.c.target_entity_key.in_(reads.expanding("p_keys"))),
               *p_edge_visible(r, current))
        .order_by(sa.desc(r.c.strength), r.c.id)))
    for batch in reads.chunked(sorted(set(keys))):
        rows = conn.execute(stmt, st.params(p_keys=batch)).all()
        for rid, s_, t_, strength in rows:
            for a, b in ((s_, t_), (t_, s_)):
                if a in batch and a != b:
                    lst = out.setdefault(a, [])
                    if len(lst) < limit and all(x[0] != b for x in lst):
                        lst.append((b, float(strength), rid))
    return out


def facts_of(st: RetrieveState, conn: sa.Connection, col: sa.Column[Any], values: list[str], per: int, filter_keys: Optional[list[str]]) -> dict[str, list[dict[str, Any]]]:
    f, lk = st.t.fact, st.t.link
    out: dict[str, list[dict[str, Any]]] = {}
    shared_only, has_trange, hide_stale, _ = st.shape()

    def build() -> sa.Select[Any]:
        # the first few per group, cut in SQL with ROW_NUMBER() (SQLite ≥ 3.25 and Oracle),
        # ranked over ids only (a group holds ~1,000 facts at 100k), the kept rows read by id
        rn = sa.func.row_number().over(partition_by=col, order_by=(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id))
        inner = sa.select(f.c.id.label("fid"), col.label("grp"), rn.label("rank_in_group")).where(
            reads.p_visible(f, shared_only), col.in_(reads.expanding("p_values")), *p_sql_visible(f, has_trange, hide_stale))
        if filter_keys is not None:
            inner = inner.where(f.c.id.in_(sa.select(lk.c.fact_id).where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(reads.expanding("p_fk")))))
        sub = inner.subquery("kg_ranked")
        return (sa.select(*st.fact_cols()).select_from(sub.join(f, f.c.id == sub.c.fid))
                .where(sub.c.rank_in_group <= sa.bindparam("p_cut")).order_by(sub.c.grp, sub.c.rank_in_group))

    def build_by_key(n_arms: int) -> sa.Select[Any]:
        # an entity's facts: per key, its first per·4 from the rank index (the same rows in
        # the same order as the ranked query above, read without the key's other facts)
        conds = [reads.p_visible(f, shared_only), *p_sql_visible(f, has_trange, hide_stale)]
        if filter_keys is not None:
            conds.append(f.c.id.in_(sa.select(lk.c.fact_id).where(reads.p_visible(lk, shared_only), lk.c.entity_key.in_(reads.expanding("p_fk")))))
        cols = st.fact_cols()
        sub = reads.ranked_facts(f, n_arms, conds, sa.bindparam("p_cut", type_=sa.Integer, literal_execute=True))
        return (sa.select(*cols).select_from(sub.join(f, f.c.id == sub.c.id))
                .order_by(sub.c.entity_key, sa.desc(sub.c.importance), sa.desc(sub.c.valid_from), sub.c.id))

    by_key = col.name == "entity_key"
    for batch in reads.chunked(sorted(set(values)), reads.RANK_ARMS[-1] if by_key else reads.IN_BATCH):
        if by_key:
            n_arms = reads.rank_arms(len(batch))
            stmt = reads.cached_stmt(f, ("facts_of_by_key", n_arms, shared_only, has_trange, hide_stale, filter_keys is not None),
                                     lambda: build_by_key(n_arms))
            params = st.params(p_cut=per * 4, **reads.rank_keys(batch, n_arms))
        else:
            stmt = reads.cached_stmt(f, ("facts_of_ranked", col.name, shared_only, has_trange, hide_stale, filter_keys is not None), build)
            params = st.params(p_values=batch, p_cut=per * 4)
        if filter_keys is not None:
            params["p_fk"] = list(filter_keys)
        for row in reads.rows_of(conn.execute(stmt, params)):
            if not fact_visible(row, st.view):
                continue
            key = row[col.name]
            lst = out.setdefault(key, [])
            if len(lst) < per * 4:
                lst.append(row)
    return out


def spread(st: RetrieveState, conn: sa.Connection, seeds: list[Cand], filter_keys: Optional[list[str]]) -> SpreadingActivationResult:
    """KC-5.6: hop 1 from each seed's entity, cluster and neighbours; hop 2 from the
    entities first reached in hop 1."""
    cfg = st.cfg
    res = SpreadingActivationResult()
    seed_ids = {c.row["id"] for c in seeds}
    mean_final = sum(c.final for c in seeds) / len(seeds)
    decay = float(cfg.spreading_decay_factor)
    per = int(cfg.spreading_facts_per_entity)
    mo = st.t.meta_observation
    shared_only = st.user_id is None
    obs_stmt = reads.cached_stmt(mo, ("spread_observations", shared_only), lambda: (
        sa.select(mo.c.id, mo.c.title, mo.c.text, mo.c.observation_type, mo.c.supporting_fact_ids, mo.c.last_reinforced_at)
        .where(reads.p_visible(mo, shared_only), mo.c.is_active == True)  # noqa: E712
        .order_by(sa.desc(mo.c.last_reinforced_at), mo.c.id)))
    obs = reads.rows_of(conn.execute(obs_stmt, {"p_agent": st.agent_id, "p_user": st.user_id}))
    # KC-6.3 / KC-6.4 [ext] (obs47): not an observation written from a fact that has expired
    # since (its next job run retires it); nor does it count as citing its other facts
    outlived = reads.observations_quoting_expired(conn, st.t, obs, st.now)
    obs = [o for o in obs if o["id"] not in outlived]
    cited: set[str] = set()
    for o in obs:
        cited.update(o["supporting_fact_ids"] or [])
    res.meta_observations = [o for o in obs if seed_ids.intersection(o["supporting_fact_ids"] or [])][:3]

    def dyn(row: dict[str, Any]) -> float:
        d = days(row["last_retrieved_at"], st.now) if row.get("last_retrieved_at") else None
        return dynamic_importance(float(row["importance"]), int(row["times_retrieved"] or 0), d,
                                  int(row["user_correction_count"] or 0), row["id"] in cited)

    def offer(row: dict[str, Any], hop: int, strength: float, rid: Optional[str]) -> bool:
        if row["id"] in st.cands:
            return False
        score = decay ** hop * mean_final * min(1.0, dyn(row)) * strength
        st.add(row, "spreading", score, (rid,) if rid else ())
        score_cand(st, st.cands[row["id"]])
        res.candidates.append(RetrievalCandidate(fact=detail_of(row, st.now), scores={"spreading": score}, final_score=st.cands[row["id"]].final))
        return True

    f = st.t.fact
    entities = sorted({c.row["entity_key"] for c in seeds})
    clusters = sorted({c.row["cluster_id"] for c in seeds if c.row.get("cluster_id")})
    res.entities_explored = list(entities)
    res.clusters_explored = list(clusters)
    by_cluster = facts_of(st, conn, f.c.cluster_id, clusters, per, filter_keys) if clusters else {}
    nbrs = neighbours(st, conn, entities, int(cfg.spreading_max_related_entities))
    res.kg_relationships_explored = sum(len(v) for v in nbrs.values())
    first_reached = []
    for e_key in entities:
        for b, _, _ in nbrs.get(e_key, []):
            if b not in entities and b not in first_reached:
                first_reached.append(b)
    # hop 2's entities before any fact is read, so the facts of the seeds' entities, of hop
    # 1's and of hop 2's are one query (the three key lists are disjoint; a key's facts do
    # not depend on the other keys asked for)
    second: list[str] = []
    nbrs2: dict[str, list[tuple[str, float, str]]] = {}
    if cfg.spreading_activation_hops >= 2 and first_reached:
        nbrs2 = neighbours(st, conn, first_reached, int(cfg.spreading_max_related_entities))
        explored = set(entities) | set(first_reached)
        for a in first_reached:
            for b, _, _ in nbrs2.get(a, []):
                if b not in explored and b not in second:
                    second.append(b)
    by_key = facts_of(st, conn, f.c.entity_key, entities + first_reached + second, per, filter_keys)
    by_entity = {k: by_key[k] for k in entities if k in by_key}
    by_nbr = {k: by_key[k] for k in first_reached if k in by_key}
    for c in seeds:
        k = c.row["entity_key"]
        n = 0
        for row in by_entity.get(k, []):
            if n >= per:
                break
            if row["id"] not in seed_ids and offer(row, 1, 1.0, None):
                res.hop1_count += 1
                n += 1
        cl = c.row.get("cluster_id")
        n = 0
        for row in by_cluster.get(cl, []) if cl else []:
            if n >= per:
                break
            if row["id"] not in seed_ids and offer(row, 1, 1.0, None):
                res.hop1_count += 1
                n += 1
        for b, strength, rid in nbrs.get(k, []):
            n = 0
            for row in by_nbr.get(b, []):
                if n >= per:
                    break
                if offer(row, 1, strength, rid):
                    res.hop1_count += 1
                    n += 1
    if cfg.spreading_activation_hops >= 2 and first_reached:
        res.kg_relationships_explored += sum(len(v) for v in nbrs2.values())
        by2 = {k: by_key[k] for k in second if k in by_key}
        for a in first_reached:
            for b, strength, rid in nbrs2.get(a, []):
                if b not in second:
                    continue
                n = 0
                for row in by2.get(b, []):
                    if n >= per:
                        break
                    if offer(row, 2, strength, rid):
                        res.hop2_count += 1
                        n += 1
        res.entities_explored += [k for k in first_reached + second if k not in res.entities_explored]
    else:
        res.entities_explored += [k for k in first_reached if k not in res.entities_explored]
    return res
