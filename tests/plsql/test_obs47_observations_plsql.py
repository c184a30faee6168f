"""obs47 (KC-6.3 / KC-6.4 [ext]): on Oracle, a store-side delete of a fact record (a ``delete``
of the record, a TTL purge) runs the PL/SQL deletion hook ``oramem_kg_jobs.on_store_delete``,
which took only the fact's id out of each meta observation's ``supporting_fact_ids``
(``gc_tpl_hk_obs_set``) and left the observation's title and text quoting the deleted fact to
every reader of its scope. As the SQLite hook's ``deletes.purge_facts``
(``queries.delete_observations_citing``), an observation citing a deleted fact now goes.
Static-checked, not run against Oracle; the SQLAlchemy statements the Python side sends on
Oracle are compiled with the Oracle dialect below."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.dialects import oracle

from .test_review_search_admin import _code

# the package body and a template's text (checked to fit its declared size): red35's
from .test_derived_text_provenance_plsql import KG_BODY, _template


def _hook() -> str:
    return _code(re.search(r"PROCEDURE\s+on_store_delete\b.*?END\s+on_store_delete\s*;", KG_BODY, re.S | re.I).group(0))


def test_the_hook_deletes_an_observation_citing_a_deleted_fact():
    assert _template("gc_tpl_hk_obs_del") == "DELETE FROM #OBS# WHERE id = :1"
    assert "gc_tpl_hk_obs_set" not in KG_BODY, "no template rewrites supporting_fact_ids and keeps the text"
    assert "SET supporting_fact_ids" not in KG_BODY
    body = _hook()
    start = body.index("EXECUTE IMMEDIATE sql_for(gc_tpl_hk_obs, l_sid)")
    loop = body[start:body.index("l_key := l_owners.NEXT(l_key);", start)]
    for step in ("l_sup := JSON_ARRAY_T.parse(l_obs_sup(j));", "l_changed := FALSE;",
                 "IF l_sup.get_string(k) IS NOT NULL AND l_gone.EXISTS(l_sup.get_string(k)) THEN\n                  l_changed := TRUE;",
                 "IF l_changed THEN", "EXECUTE IMMEDIATE sql_for(gc_tpl_hk_obs_del, l_sid)\n                  USING l_obs_ids(j);"):
        assert step in loop, step
    assert loop.index("l_changed := TRUE;") < loop.index("IF l_changed THEN") < loop.index("gc_tpl_hk_obs_del")
    # every fact of the event is in l_gone before the observations are read
    assert body.index("l_gone(l_facts(i)) := 1;") < start


def test_the_python_purge_deletes_the_same_observations_before_the_facts_go():
    """The SQLite side (``deletes.purge_facts``): observations citing the batch are deleted
    while the facts are still there (their agents are read from them)."""
    import inspect

    from oramem.knowledge import deletes

    src = inspect.getsource(deletes.purge_facts)
    assert "supporting_fact_ids=[" not in src, "no update that keeps the text"
    steps = [src.index(s) for s in ("reads.delete_observations_citing(conn, t, batch, agent_id)", "conn.execute(sa.delete(f)")]
    assert steps == sorted(steps)


def test_the_new_statements_compile_for_oracle():
    """The statements ``delete_observations_citing``, ``observations_quoting_expired`` and the
    jobs' retirement send, compiled with SQLAlchemy's Oracle dialect over a recording
    connection (no database): plain SELECT / DELETE / UPDATE on key columns, ``IN`` batches,
    ``ttl_days IS NOT NULL``."""
    from oramem.knowledge.db import queries as reads
    from oramem.knowledge.db.schema import build_tables

    t = build_tables("MYSTORE", 8)
    sent: list[str] = []

    class _Rows(list):
        def mappings(self):
            return self

    class _Conn:
        def execute(self, stmt):
            text = str(stmt.compile(dialect=oracle.dialect()))
            sent.append(text)
            if "FROM \"MYSTORE_KG_FACT\"" in text and "ttl_days" in text:
                return _Rows([("f1", 1, datetime(2025, 1, 1, tzinfo=timezone.utc))])
            if text.startswith("SELECT DISTINCT \"MYSTORE_KG_FACT\".agent_id"):
                return _Rows([("a1",)])
            if text.startswith("SELECT \"MYSTORE_KG_FACT\".id"):
                return _Rows([("f1",)])
            if "FROM \"MYSTORE_KG_META_OBSERVATION\"" in text:
                return _Rows([("o1", ["f1", "f2"]), ("o2", ["f3"])])
            return _Rows([])

    assert reads.delete_observations_citing(_Conn(), t, ["f1"], "a1") == 1
    assert sent[-1].startswith('DELETE FROM "MYSTORE_KG_META_OBSERVATION" WHERE "MYSTORE_KG_META_OBSERVATION".id IN (')
    got = reads.observations_quoting_expired(_Conn(), t, [{"id": "o1", "supporting_fact_ids": ["f1"]}],
                                             datetime(2025, 1, 5, tzinfo=timezone.utc))
    assert got == {"o1"}
    assert '"MYSTORE_KG_FACT".ttl_days IS NOT NULL' in sent[-1] and '"MYSTORE_KG_FACT".id IN (' in sent[-1]
    mo = t.meta_observation
    retire = str(sa.update(mo).where(mo.c.id.in_(["o1"]), mo.c.is_active == True)  # noqa: E712
                 .values(is_active=False).compile(dialect=oracle.dialect()))
    assert retire.startswith('UPDATE "MYSTORE_KG_META_OBSERVATION" SET is_active=')
