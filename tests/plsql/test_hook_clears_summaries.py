"""red35 (KC-6.2, KC-6.7): the PL/SQL deletion hook ``oramem_kg_jobs.on_store_delete``, run
for a store-side delete of a fact record on Oracle (a ``delete`` of the record, a TTL purge),
clears the summaries written from the fact before its links and row go, as the SQLite hook's
``deletes.purge_facts`` does: the summary of each entity linked to it (in the link's own scope)
and its cluster's summary with the vector embedded from it. Before, the purge left both naming
the deleted fact (the next clustering run saw equal memberships and never rewrote the cluster's).
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .plsql_gate import REPO
from .test_review_search_admin import _code

KG_BODY = (REPO / "plsql" / "oramem_kg_jobs.pkb").read_text()


def _template(name: str) -> str:
    m = re.search(rf"\b{name}\s+CONSTANT\s+VARCHAR2\((\d+) CHAR\)\s*:=\s*q'\[(.*?)\]';", KG_BODY, re.S)
    assert m, name
    assert len(m.group(2)) <= int(m.group(1)), name
    return m.group(2)


def test_the_hook_clears_the_entity_and_cluster_summaries_of_a_deleted_fact_first():
    summary = _template("gc_tpl_hk_clear_summary")
    assert summary == ("UPDATE #ENT# e SET summary_text = NULL, summary_refreshed_at = NULL WHERE EXISTS "
                       "(SELECT 1 FROM #LINK# l WHERE l.fact_id = :1 AND l.agent_id = e.agent_id "
                       "AND DECODE(l.user_id, e.user_id, 1, 0) = 1 AND l.entity_key = e.canonical_key)")
    cluster = _template("gc_tpl_hk_clear_cluster")
    assert cluster == ("UPDATE #TAB# SET summary_text = NULL, embedding_vec = NULL "
                       "WHERE id IN (SELECT cluster_id FROM #FACT# WHERE id = :1)")
    body = _code(re.search(r"PROCEDURE\s+on_store_delete\b.*?END\s+on_store_delete\s*;", KG_BODY, re.S | re.I).group(0))
    start = body.index("FOR i IN 1 .. l_facts.COUNT LOOP")
    loop = body[start:body.index("l_key := l_owners.FIRST;", start)]
    steps = [loop.index(s) for s in (
        "EXECUTE IMMEDIATE sql_for(gc_tpl_hk_clear_summary, l_sid) USING l_facts(i);",
        "EXECUTE IMMEDIATE sql_for(gc_tpl_hk_clear_cluster, l_sid, 'CLUSTER') USING l_facts(i);",
        "EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_links, l_sid)",
        "EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_fact, l_sid)")]
    assert steps == sorted(steps), "the summaries are cleared while the links and the fact row are still there"


def test_the_python_purge_clears_the_same_summaries_first():
    """The SQLite side of the same rule (``deletes.purge_facts``), in the same order."""
    import inspect

    from oramem.knowledge import deletes

    src = inspect.getsource(deletes.purge_facts)
    steps = [src.index(s) for s in ("reads.clear_summaries_citing(conn, t, batch)",
                                    "reads.clear_cluster_summaries(conn, t, batch)",
                                    "conn.execute(sa.delete(lk)", "conn.execute(sa.delete(f)")]
    assert steps == sorted(steps)
