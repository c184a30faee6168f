"""red35: derived text in the PL/SQL package ``oramem_kg_jobs`` never outlives, nor hides from an
erasure, the rows it was written from (as the Python jobs, tests/knowledge/
test_cluster_summary_provenance.py and test_emotional_trend_provenance.py).

KC-6.2, KC-6.7: the PL/SQL deletion hook ``oramem_kg_jobs.on_store_delete``, run
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


def test_the_scheduler_trend_supports_the_events_its_keywords_came_from():
    """red35, KC-5.13 / KC-3.10: the PL/SQL ``emotional_trends`` lists, as the Python job does,
    the newest 50 events and every intense event that said one of the trigger keywords (it
    listed the newest 50 only: a keyword from an older event outlived its speaker's erasure)."""
    from .test_review_search_admin import _procedure

    body = _code(_procedure(KG_BODY, "emotional_trends"))
    assert "FOR i IN GREATEST(1, l_n - 49) .. l_n LOOP" not in body
    assert "l_top3(l_best) := 1;" in body and body.index("l_top3(l_best) := 1;") < body.index("l_words.DELETE(l_best);")
    support = body[body.index("l_hit := i > l_n - 50;"):body.index("EXECUTE IMMEDIATE sql_for(gc_tpl_trend_recent")]
    for step in ("IF NOT l_hit AND NVL(l_intens(i), 0) >= 0.7 AND l_top3.COUNT > 0 THEN", "l_ev_words.DELETE;",
                 "count_words(l_texts(i), l_ev_words);", "l_hit := l_ev_words.EXISTS(l_word);",
                 "IF l_hit THEN\n            l_support.append(l_ids(i));"):
        assert step in support, step
    assert re.search(r"\bl_top3\s+word_map_t;", body) and re.search(r"\bl_ev_words\s+word_map_t;", body)
