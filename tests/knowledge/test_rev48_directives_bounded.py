"""rev48 (review of obs47): ``directives`` serves at most 10 behavioral preferences (KC-5.10)
and read them with ``LIMIT 10``. obs47 made it skip a preference citing an expired fact, and
dropped the LIMIT to do so: every ``directives`` call loaded every active preference of the
scope, with its JSON list of cited facts, and looked all those facts up (10k observations:
~4 ms before, ~80 ms after). The preferences are now read page by page, in the same order,
until 10 that cite no expired fact are found; an expired one is still skipped and the next one
takes its place."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from oramem.knowledge.db import queries as reads

from .test_tenant_knowledge import env  # noqa: F401  (the fixture: store, KnowledgeMemory, LLM, clock)

AGENT = "desk"


def _preferences(km, clock, n: int, cites: list[str]) -> list[str]:
    """``n`` active, reinforced behavioral preferences of the shared scope, the first one the
    most reinforced (the directives order), each citing ``cites``; returns their titles in
    that order."""
    mo = km.runtime.tables.meta_observation
    now = clock()
    rows = [dict(id=str(uuid.uuid4()), agent_id=AGENT, user_id=None, observation_type="behavioral_preference",
                 title=f"Preference {i:03d}", text=f"Guests like {i}", supporting_event_ids=[], supporting_fact_ids=cites,
                 confidence=0.8, importance=0.5, times_reinforced=1000 - i, is_active=True, embedding_vec=None,
                 first_detected_at=now, last_reinforced_at=now, created_at=now) for i in range(n)]
    with km.runtime.backend.write("test preferences", AGENT) as conn:
        conn.execute(sa.insert(mo), rows)
    return [r["title"] for r in rows]


def _fact(km, text: str, ttl=None) -> str:
    item = {"subject": "Room 12", "fact": text, "subject_type": "place"}
    if ttl is not None:
        item["ttl_days"] = ttl
    return km.add_knowledge(AGENT, facts=[item]).facts_added[0]["fact_id"]


def test_directives_reads_a_bounded_number_of_preferences(env, monkeypatch):  # noqa: F811
    _, _, km, _, clock = env
    fact = _fact(km, "Room 12 has a sea view")
    _preferences(km, clock, 300, [fact])
    seen: list[int] = []
    real = reads.observations_quoting_expired

    def counting(conn, t, rows, now):
        rows = list(rows)
        seen.append(len(rows))
        return real(conn, t, rows, now)

    monkeypatch.setattr(reads, "observations_quoting_expired", counting)
    block = km.directives(AGENT)
    assert block.directive_count == 10
    # the 300 were all loaded and checked before (one call with 300 rows)
    assert seen and sum(seen) <= 60, seen


def test_an_expired_preference_is_skipped_and_the_next_takes_its_place(env):  # noqa: F811
    _, _, km, _, clock = env
    view = _fact(km, "Room 12 has a sea view")
    code = _fact(km, "Room 12 code is 4417", ttl=1)
    titles = _preferences(km, clock, 15, [view])
    # the 12 most reinforced ones cite the code, which expires
    mo = km.runtime.tables.meta_observation
    with km.runtime.backend.write("test cites", AGENT) as conn:
        for t in titles[:12]:
            conn.execute(sa.update(mo).where(mo.c.title == t).values(supporting_fact_ids=[view, code]))
    clock.advance(days=2)
    block = km.directives(AGENT)
    assert block.directive_count == 3
    for t in titles[:12]:
        assert t not in block.text
    for t in titles[12:]:
        assert t in block.text



def test_the_paged_statement_compiles_for_oracle(env):  # noqa: F811
    """The statements ``directives`` sends, compiled for the Oracle dialect: the row limiting
    clause after the ORDER BY (plsql/VERIFY.md, rev48). Static-checked, not run against Oracle."""
    from sqlalchemy.dialects import oracle

    _, _, km, _, clock = env
    _preferences(km, clock, 3, [_fact(km, "Room 12 has a sea view")])
    mo = km.runtime.tables.meta_observation
    sent: list = []

    def grab(conn, clause, multiparams, params, execution_options):
        if isinstance(clause, sa.Select) and mo in clause.get_final_froms():
            sent.append(clause)

    engine = km.runtime.backend.sa_engine
    sa.event.listen(engine, "before_execute", grab)
    try:
        km.directives(AGENT)
    finally:
        sa.event.remove(engine, "before_execute", grab)
    assert sent
    for stmt in sent:
        text = " ".join(str(stmt.compile(dialect=oracle.dialect())).split())
        assert text.index("ORDER BY") < text.index("OFFSET") < text.index("FETCH FIRST"), text
        assert text.endswith("ROWS ONLY"), text
