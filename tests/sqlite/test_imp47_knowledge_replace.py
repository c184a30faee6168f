"""imp47: ``oramem import --on-conflict replace`` of a knowledge line must not replace a
knowledge row of another scope stored under its primary key (red40's rule for records,
extended to the knowledge tables).

A knowledge line ``{"kg_table": NAME, "row": {...}}`` was replaced by primary key alone: Bob
runs the CLI with a file he crafted (his own export, one FACT line given the id of Alice's
fact), and her fact was deleted and his row written under its key (her fact gone from her
scope, his text now under her fact's id; with ``user_id`` null it became the agent's shared
fact). Replace is the restore of the same row: it now replaces only a stored row of the same
``agent_id`` and ``user_id`` (the table's scope columns; NULL equals only NULL), and a row of
another scope under the key refuses the import before any row, record or knowledge, is
written (exit 2), naming the table and key, never whose the row is. Bob's own row is still
replaced. ``skip`` keeps a stored row whoever's it is and counts it as skipped, as
``fail`` names it: a key's existence is not hidden (red40 decided the same for record ids).

Also: the knowledge rows of one import are one transaction. They were written
``batch_size`` rows per transaction, so a later batch that failed (a row breaking a UNIQUE
constraint) left the earlier ones written, and the error was a traceback."""

from __future__ import annotations

import copy
import json

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore, jsonl
from oramem.cli import cli
from oramem.embedders import HashEmbedder
from oramem.knowledge import KnowledgeMemory
from oramem.sqlite._sqlite import sqlite3

ALICE, BOB = "alice-7f3a", "bob-2c9e"
ALICE_FACT = "ALICE_FACT_z3 alice takes insulin at noon"
SHARED_FACT = "SHARED_FACT_k8 the office opens at nine"
BOB_FACT = "BOB_FACT_q7 bob drinks mate"


def _engine(path):
    return sa.create_engine(f"sqlite:///{path}", module=sqlite3)


def _rows(path, table):
    """Every row of a knowledge table, as the database has it (ordered by id)."""
    engine = _engine(path)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(f'SELECT * FROM "DEFAULT_KG_{table}" ORDER BY id'))]
    finally:
        engine.dispose()


def _fact_id(path, user_id):
    engine = _engine(path)
    try:
        with engine.connect() as conn:
            if user_id is None:
                return conn.execute(sa.text('SELECT id FROM "DEFAULT_KG_FACT" WHERE user_id IS NULL')).scalar_one()
            return conn.execute(sa.text('SELECT id FROM "DEFAULT_KG_FACT" WHERE user_id = :u'),
                                {"u": user_id}).scalar_one()
    finally:
        engine.dispose()


@pytest.fixture
def shared(tmp_path):
    """One store, one agent: Alice's fact, a shared fact (no user) and Bob's fact."""
    path = str(tmp_path / "shared.db")
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32)) as store:
        with KnowledgeMemory(store, None) as km:
            km.add_fact("helper", "Alice", ALICE_FACT, subject_type="person", user_id=ALICE)
            km.add_fact("helper", "Office", SHARED_FACT, subject_type="place")
            km.add_fact("helper", "Bob", BOB_FACT, subject_type="person", user_id=BOB)
    return path


def _bobs_export(runner, path, tmp_path):
    out = tmp_path / "bob-export.jsonl"
    result = runner.invoke(cli, ["--db", path, "export", "--user", BOB, "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]


def _crafted(tmp_path, lines):
    path = tmp_path / "crafted.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def _bob_fact_line(export):
    return copy.deepcopy(next(x for x in export if x.get("kg_table") == "FACT"))


def _bob_note(export):
    """A record line of Bob's (a new id): must not be written when the import is refused."""
    return [export[0], {"record_type": "memory", "id": "bob-note-1", "content": "bob: my locker code is 4471",
                        "user_id": BOB, "agent_id": "helper"}]


@pytest.mark.parametrize("victim,scope", [
    (ALICE, {"user_id": BOB}),                          # her fact moved into his scope
    (ALICE, {"user_id": None}),                         # her fact made the agent's shared fact
    (ALICE, {"user_id": ALICE, "agent_id": "other"}),   # her user, another agent: another scope
    (None, {"user_id": BOB}),                           # the shared fact taken into his scope
], ids=["alice-as-bob", "alice-as-shared", "alice-other-agent", "shared-as-bob"])
def test_cli_replace_refuses_a_knowledge_row_of_another_scope_before_anything_is_written(
        runner, shared, tmp_path, victim, scope):
    export = _bobs_export(runner, shared, tmp_path)
    target = _fact_id(shared, victim)
    line = _bob_fact_line(export)
    line["row"].update(id=target, fact_text="BOB_WAS_HERE_x1 she takes nothing", **scope)
    file = _crafted(tmp_path, _bob_note(export) + [line])
    facts, entities = _rows(shared, "FACT"), _rows(shared, "ENTITY")

    result = runner.invoke(cli, ["--db", shared, "import", "--on-conflict", "replace", file])

    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # an oramem error, not a traceback
    assert target in result.output and "FACT" in result.output
    assert "another user or agent" in result.output and "nothing was written" in result.output
    assert ALICE not in result.output  # the key is named, never whose row it is
    assert _rows(shared, "FACT") == facts and _rows(shared, "ENTITY") == entities  # byte for byte
    with SQLiteMemoryStore(shared, embedder=HashEmbedder(32)) as store:
        assert store.get("memory", "bob-note-1") is None  # no record was written either


def test_cli_replace_still_replaces_bobs_own_knowledge_row(runner, shared, tmp_path):
    export = _bobs_export(runner, shared, tmp_path)
    line = _bob_fact_line(export)
    line["row"]["fact_text"] = "BOB_FACT_q7 bob drinks mate, no sugar"
    file = _crafted(tmp_path, _bob_note(export) + [line])
    alice_before = [r for r in _rows(shared, "FACT") if r[0] == _fact_id(shared, ALICE)]

    result = runner.invoke(cli, ["--db", shared, "import", "--on-conflict", "replace", file], catch_exceptions=False)

    assert result.exit_code == 0, result.output
    engine = _engine(shared)
    try:
        with engine.connect() as conn:
            text = conn.execute(sa.text('SELECT fact_text, user_id FROM "DEFAULT_KG_FACT" WHERE id = :i'),
                                {"i": line["row"]["id"]}).one()
    finally:
        engine.dispose()
    assert tuple(text) == ("BOB_FACT_q7 bob drinks mate, no sugar", BOB)
    assert [r for r in _rows(shared, "FACT") if r[0] == _fact_id(shared, ALICE)] == alice_before


def test_skip_keeps_another_scopes_row_and_counts_it(runner, shared, tmp_path):
    """Decided (as red40 for record ids): skip keeps the stored row, whoever's, and counts it
    as skipped; its key's existence is what fail names too, never whose it is."""
    export = _bobs_export(runner, shared, tmp_path)
    target = _fact_id(shared, ALICE)
    line = _bob_fact_line(export)
    line["row"].update(id=target, fact_text="BOB_WAS_HERE_x1")
    file = _crafted(tmp_path, [export[0], line])
    facts = _rows(shared, "FACT")
    result = runner.invoke(cli, ["--json", "--db", shared, "import", "--on-conflict", "skip", file],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert (out["knowledge_rows"], out["knowledge_rows_skipped"]) == (0, 1)
    assert _rows(shared, "FACT") == facts


def test_import_knowledge_api_refuses_another_scope_and_writes_no_row(shared, tmp_path, runner):
    """The library path (jsonl.import_knowledge) refuses too, before any knowledge row of the
    call: a fresh row of Bob's in the same call is not written either."""
    export = _bobs_export(runner, shared, tmp_path)
    theirs = _bob_fact_line(export)
    theirs["row"].update(id=_fact_id(shared, ALICE), user_id=BOB)
    fresh = _bob_fact_line(export)
    fresh["row"].update(id="bob-fresh-fact", fact_text="BOB_FRESH_q7")
    lines = jsonl.parse_lines([json.dumps(export[0]), json.dumps(fresh), json.dumps(theirs)])
    facts = _rows(shared, "FACT")
    engine = _engine(shared)
    try:
        with pytest.raises(jsonl.JSONLError, match="another user or agent") as err:
            jsonl.import_knowledge(engine, "DEFAULT", 32, [ln for ln in lines if ln.record_type == "kg_row"],
                                   policy=None, on_conflict="replace", batch_size=1)
        assert ALICE not in str(err.value)
        # the check alone, as the CLI runs it before the records
        with pytest.raises(jsonl.JSONLError, match="another user or agent"):
            jsonl.check_knowledge(engine, "DEFAULT", 32, [ln for ln in lines if ln.record_type == "kg_row"],
                                  on_conflict="replace")
    finally:
        engine.dispose()
    assert _rows(shared, "FACT") == facts


def test_a_table_without_a_user_column_is_scoped_by_its_agent(tmp_path):
    """ATTRIBUTE_REGISTRY has agent_id and no user_id: another agent's row under the key is
    another scope; the same agent's is replaced."""
    path = str(tmp_path / "reg.db")
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32)):
        pass
    row = {"id": "reg-1", "agent_id": "helper", "key": "diet", "first_seen_at": "2026-01-01T00:00:00+00:00",
           "last_seen_at": "2026-01-01T00:00:00+00:00", "created_at": "2026-01-01T00:00:00+00:00"}
    engine = _engine(path)
    try:
        first = jsonl.parse_lines([json.dumps({"kg_table": "ATTRIBUTE_REGISTRY", "row": row})])
        assert jsonl.import_knowledge(engine, "DEFAULT", 32, first, policy=None) == (1, 0)
        other = jsonl.parse_lines([json.dumps({"kg_table": "ATTRIBUTE_REGISTRY",
                                               "row": dict(row, agent_id="other", reason="x")})])
        with pytest.raises(jsonl.JSONLError, match="another user or agent"):
            jsonl.import_knowledge(engine, "DEFAULT", 32, other, policy=None, on_conflict="replace")
        same = jsonl.parse_lines([json.dumps({"kg_table": "ATTRIBUTE_REGISTRY", "row": dict(row, reason="kept")})])
        assert jsonl.import_knowledge(engine, "DEFAULT", 32, same, policy=None, on_conflict="replace") == (1, 0)
        with engine.connect() as conn:
            assert tuple(conn.execute(sa.text('SELECT agent_id, reason FROM "DEFAULT_KG_ATTRIBUTE_REGISTRY"')).one()) \
                == ("helper", "kept")
    finally:
        engine.dispose()


def test_knowledge_rows_are_one_transaction(runner, shared, tmp_path):
    """--batch-size 1: the second ENTITY row breaks the (agent, user, canonical_key) UNIQUE
    constraint with Bob's stored entity. The first (a new entity) was written and kept, and
    the error was a traceback; now no knowledge row is written and the error says which rows."""
    export = _bobs_export(runner, shared, tmp_path)
    entity = next(x for x in export if x.get("kg_table") == "ENTITY")
    first = copy.deepcopy(entity)
    first["row"].update(id="new-entity-1", canonical_key="person:zed", display_name="Zed")
    second = copy.deepcopy(entity)
    second["row"]["id"] = "new-entity-2"  # a new id, Bob's stored canonical key
    file = _crafted(tmp_path, [export[0], first, second])
    entities = _rows(shared, "ENTITY")

    result = runner.invoke(cli, ["--db", shared, "import", "--batch-size", "1", file])

    assert result.exit_code == 2, (result.output, result.exception)
    assert "ENTITY" in result.output and "no knowledge row was written" in result.output
    assert _rows(shared, "ENTITY") == entities


def test_import_knowledge_api_leaves_no_earlier_batch_written(runner, shared, tmp_path):
    """The library path with batch_size=1: the row the database refuses comes after a row
    that was written in its own transaction before; now neither is written."""
    export = _bobs_export(runner, shared, tmp_path)
    entity = next(x for x in export if x.get("kg_table") == "ENTITY")
    first = copy.deepcopy(entity)
    first["row"].update(id="new-entity-1", canonical_key="person:zed", display_name="Zed")
    second = copy.deepcopy(entity)
    second["row"]["id"] = "new-entity-2"
    lines = [ln for ln in jsonl.parse_lines([json.dumps(export[0]), json.dumps(first), json.dumps(second)])
             if ln.record_type == "kg_row"]
    entities = _rows(shared, "ENTITY")
    engine = _engine(shared)
    try:
        with pytest.raises(jsonl.JSONLError, match=r"line 3: knowledge row\(s\) of ENTITY cannot be written"):
            jsonl.import_knowledge(engine, "DEFAULT", 32, lines, policy=None, batch_size=1)
    finally:
        engine.dispose()
    assert _rows(shared, "ENTITY") == entities
