"""``dml.update_owned_many`` / ``update_by_id_many`` (issue 25 item 6): a write's updates of one
table in as few executemany calls as their column sets allow, in their order, each row
changed as :func:`dml.update_owned` would change it alone, and only in the writer's scope."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import sqlalchemy as sa

from oramem.knowledge.db import dml
from oramem.knowledge.db.schema import build_tables

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def db():
    t = build_tables("DMLT", 4)
    engine = sa.create_engine("sqlite://")
    t.metadata.create_all(engine)
    statements: list[tuple[str, bool]] = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith("UPDATE"):
            statements.append((statement, executemany))

    with engine.begin() as conn:
        for user in ("alice", "bob", None):
            for key in ("a", "b", "c", "d"):
                conn.execute(sa.insert(t.entity).values(
                    id=f"{user}-{key}", agent_id="desk", user_id=user, canonical_key=key, display_name=key.upper(),
                    entity_type="person", fact_count=0, is_active=True, first_seen_at=T0, last_seen_at=T0, created_at=T0))
    yield engine, t, statements
    engine.dispose()


def _names(engine, t):
    with engine.connect() as conn:
        return {(u, k): (n, c) for u, k, n, c in conn.execute(
            sa.select(t.entity.c.user_id, t.entity.c.canonical_key, t.entity.c.display_name, t.entity.c.fact_count))}


@pytest.mark.parametrize("user", ["alice", None])
def test_runs_of_the_same_columns_are_one_executemany_in_the_writers_scope(db, user):
    engine, t, statements = db
    before = _names(engine, t)
    updates = {"a": {"display_name": "A2"}, "b": {"display_name": "B2"}, "c": {"fact_count": 7},
               "d": {"display_name": "D2"}}
    with engine.begin() as conn:
        dml.update_owned_many(conn, t.entity, "desk", user, "canonical_key", updates)
    assert [many for _, many in statements] == [True, False, False]  # (a, b), (c), (d): order kept
    after = _names(engine, t)
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {(user, "a"), (user, "b"), (user, "c"), (user, "d")}
    assert after[(user, "a")] == ("A2", 0) and after[(user, "c")] == ("C", 7) and after[(user, "d")] == ("D2", 0)


def test_by_id_and_the_empty_cases(db):
    engine, t, statements = db
    with engine.begin() as conn:
        dml.update_by_id_many(conn, t.entity, {"bob-a": {"fact_count": 1}, "bob-b": {"fact_count": 2}})
        dml.update_by_id_many(conn, t.entity, {})
        with pytest.raises(ValueError, match="at least one column"):
            dml.update_owned_many(conn, t.entity, "desk", "bob", "canonical_key", {"a": {}})
    assert len(statements) == 1
    after = _names(engine, t)
    assert after[("bob", "a")][1] == 1 and after[("bob", "b")][1] == 2 and after[("alice", "a")][1] == 0
