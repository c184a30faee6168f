"""A knowledge write in flight while its user (or agent) is erased (KC-3.10, SC-14.3): the
write reads, awaits the model, then commits in a second transaction; ``forget`` commits in
between (deterministic: the model's route, or a step before the commit, runs it). A write
whose call started before the erasure committed is erased data: it stores nothing and
raises ``ConflictError``. A write that starts after the erasure is new data, stored."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from oramem.knowledge.errors import ConflictError
from oramem.knowledge.write import run as run_mod
from oramem.knowledge.write.erasures import LOG_TABLE, OPTIONS_TABLE, receipts_query, salt_query

from .helpers import extract


def _erase_then(store, reply, **who):
    def route(payload):
        store.forget(**who)
        return reply
    return route


def _scope_rows(km, column, value):
    t = km._tables
    out = {}
    with km._backend.read() as c:
        for table in t.all_agent_tables():
            if column in table.c:
                n = len(c.execute(sa.select(table).where(table.c[column] == value)).all())
                if n:
                    out[table.name] = n
    return out


def _zanzibar(store):
    return [r for t in ("fact", "message") for r in store.list(t, limit=None) if "Zanzibar" in (r.content or "")]


_REPLY = extract([("Alice", "person"), ("Zanzibar", "place")],
                 [("Alice", "Alice hides her passport in Zanzibar", "hiding_place")])


@pytest.mark.parametrize("erased, column, message", [
    ("user_id", "alice", "the user 'alice' of this write was erased"),
    ("agent_id", "a1", "the agent 'a1' of this write"),
], ids=["her-user", "its-agent"])
def test_a_write_in_flight_when_its_user_or_agent_is_erased_stores_nothing(km, llm, store, erased, column, message):
    llm.route("extract", _erase_then(store, _REPLY, **{erased: column}))
    with pytest.raises(ConflictError, match=message):
        km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    assert _scope_rows(km, erased, column) == {}
    assert not _zanzibar(store)


def test_write_async_in_flight_when_she_is_erased_stores_nothing_of_hers(km, llm, store):
    llm.route("extract", _erase_then(store, _REPLY, user_id="alice"))

    async def go():
        return await km.write_async("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")

    with pytest.raises(ConflictError, match="withheld"):
        asyncio.run(go())
    assert _scope_rows(km, "user_id", "alice") == {}
    assert not _zanzibar(store)


def test_a_failed_extraction_in_flight_when_she_is_erased_keeps_no_event(km, llm, store):
    """on_extraction_failure="keep_event": the event-only commit is refused too."""
    def down(payload):
        store.forget(user_id="alice")
        raise RuntimeError("model down")

    llm.route("extract", down)
    with pytest.raises(ConflictError, match="erased"):
        km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    assert _scope_rows(km, "user_id", "alice") == {}
    assert not _zanzibar(store)


def _erase_before_resolution(monkeypatch, store, **who):
    original = run_mod.resolve_all

    async def resolve_then(run):
        store.forget(**who)
        await original(run)

    monkeypatch.setattr(run_mod, "resolve_all", resolve_then)


def test_add_knowledge_in_flight_when_she_is_erased_stores_nothing_of_hers(km, store, monkeypatch):
    _erase_before_resolution(monkeypatch, store, user_id="alice")
    with pytest.raises(ConflictError, match="user 'alice'"):
        km.add_knowledge("a1", entities=[{"name": "Zanzibar", "type": "place"}],
                         facts=[{"subject": "Alice", "fact": "Alice hides her passport in Zanzibar"}], user_id="alice")
    assert _scope_rows(km, "user_id", "alice") == {}
    assert not _zanzibar(store)


def test_a_shared_write_in_flight_when_its_agent_is_erased_stores_nothing(km, store, monkeypatch):
    _erase_before_resolution(monkeypatch, store, agent_id="a1")
    with pytest.raises(ConflictError, match="agent 'a1'"):
        km.add_fact("a1", "Zanzibar", "Zanzibar is an island", subject_type="place")
    assert _scope_rows(km, "agent_id", "a1") == {}


def test_a_write_after_her_erasure_is_new_data_and_another_users_write_is_not_refused(km, llm, store):
    """After her forget (its receipt in the log) her next write is stored; Bob's write in
    flight during her erasure is his and stored too."""
    llm.route("extract", _REPLY)
    km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    km.forget(user_id="alice")
    assert _scope_rows(km, "user_id", "alice") == {}
    result = km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    assert result.success and result.facts_added
    assert _scope_rows(km, "user_id", "alice")
    llm.route("extract", _erase_then(store, extract([("Bob", "person")], [("Bob", "Bob plays chess")]),
                                     user_id="alice"))
    result = km.write("a1", "I play chess", "Bob", user_id="bob")
    assert result.success and result.facts_added
    assert _scope_rows(km, "user_id", "alice") == {}
    assert _scope_rows(km, "user_id", "bob")


def test_a_second_erasure_in_flight_is_seen_after_a_first_one(km, llm, store):
    """The store already has a salt and her receipt when the write starts: only a receipt
    added since refuses it."""
    llm.route("extract", _REPLY)
    km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    km.forget(user_id="alice")
    llm.route("extract", _erase_then(store, _REPLY, user_id="alice"))
    with pytest.raises(ConflictError):
        km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    assert _scope_rows(km, "user_id", "alice") == {}


def test_a_queued_write_of_hers_claimed_before_her_erasure_stores_nothing(km, llm, store):
    """A background write: forget deletes the job; a worker that claimed it before still
    stores nothing and the job is not retried (lost)."""
    km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice", background=True)
    llm.route("extract", _erase_then(store, _REPLY, user_id="alice"))
    report = km.process_jobs()
    assert (report.done, report.retried, report.failed, report.lost) == (0, 0, 0, 1)
    assert _scope_rows(km, "user_id", "alice") == {}
    assert not _zanzibar(store)


def test_the_oracle_statements_name_the_catalog_columns():
    """Oracle (static-checked, not run against Oracle): the lookups use the catalog's
    ``memory_store_id`` columns (ddl/upgrades/002_to_003.sql, 003_to_004.sql) with binds."""
    from pathlib import Path

    from sqlalchemy.dialects import oracle

    root = Path(__file__).resolve().parents[2] / "ddl" / "upgrades"
    ddl = (root / "002_to_003.sql").read_text() + (root / "003_to_004.sql").read_text()
    for table, columns in ((OPTIONS_TABLE, ("memory_store_id", "name", "value")),
                           (LOG_TABLE, ("memory_store_id", "receipt_id", "subject_hash"))):
        create = ddl[ddl.index(f"CREATE TABLE {table} ("):]
        for column in columns:
            assert f"'{column} " in create or f"|| '{column} " in create, (table, column)
    salt = str(salt_query("oracle", "MYSTORE").compile(dialect=oracle.dialect()))
    assert salt.split() == ("SELECT oramem_store_options.value FROM oramem_store_options WHERE "
                            "oramem_store_options.memory_store_id = :memory_store_id_1 AND "
                            "oramem_store_options.name = :name_1").split()
    log = receipts_query("oracle", "MYSTORE", ["h1", "h2"]).compile(
        dialect=oracle.dialect(), compile_kwargs={"render_postcompile": True})
    assert " ".join(str(log).split()) == (
        "SELECT oramem_erasure_log.receipt_id, oramem_erasure_log.subject_hash FROM oramem_erasure_log "
        "WHERE oramem_erasure_log.memory_store_id = "
        ":memory_store_id_1 AND oramem_erasure_log.subject_hash IN (:subject_hash_1_1, :subject_hash_1_2)")


def test_a_background_write_whose_call_started_before_her_erasure_queues_nothing(km, store, monkeypatch):
    """write(..., background=True): her erasure commits while the call screens the message
    (after it started, before its job is inserted): no job of hers is queued after her forget."""
    from oramem.knowledge.write import entry

    original = entry.screen

    async def screen_then(*args):
        store.forget(user_id="alice")
        return await original(*args)

    monkeypatch.setattr(entry, "screen", screen_then)
    with pytest.raises(ConflictError, match="the user 'alice' of this write"):
        km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice", background=True)
    assert _scope_rows(km, "user_id", "alice") == {}
    monkeypatch.setattr(entry, "screen", original)
    assert km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice", background=True).job_id


def test_the_commits_lookup_of_the_log_is_one_indexed_search(km, llm, store):
    """The happy path's cost: the commit looks the subjects' receipts up by (store id,
    subject hash) through an index of the SQLite log (created with the log), not by a scan of
    the store's receipts."""
    llm.route("extract", _REPLY)
    km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    km.forget(user_id="alice")
    statement = receipts_query("sqlite", km._tables.store_id, ["h1", "h2"])
    with km._backend.read() as c:
        compiled = statement.compile(dialect=c.dialect, compile_kwargs={"render_postcompile": True})
        plan = c.exec_driver_sql("EXPLAIN QUERY PLAN " + str(compiled), tuple(compiled.params.values())).all()
    assert [row[-1] for row in plan] == [
        "SEARCH oramem_erasure_log USING COVERING INDEX oramem_erasure_log_subject (store_id=? AND subject_hash=?)"]


@pytest.mark.parametrize("profile, subject", [("user_profile", "alice"), ("agent_profile", "a1")],
                         ids=["her-profile", "its-agent-profile"])
def test_a_write_in_flight_when_a_profile_cascade_erases_its_scope_stores_nothing(km, llm, store, profile, subject):
    def cascade_then(payload):
        store.delete(profile, subject, cascade=True)
        return _REPLY

    llm.route("extract", cascade_then)
    with pytest.raises(ConflictError, match="erased"):
        km.write("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")
    assert _scope_rows(km, "user_id", "alice") == {}
    assert not _zanzibar(store)


def test_write_async_in_flight_when_her_profile_cascade_runs_stores_nothing_of_hers(km, llm, store, monkeypatch):
    """The async twin: the cascade (``delete_async``, awaited inside the write's pipeline
    after the model's reply) leaves its tombstone, and ``write_async`` refuses as after
    ``forget`` (KC-3.10, SC-14.3)."""
    original = run_mod.resolve_all

    async def cascade_then(run):
        assert await store.delete_async("user_profile", "alice", cascade=True) == 0
        await original(run)

    llm.route("extract", _REPLY)
    monkeypatch.setattr(run_mod, "resolve_all", cascade_then)

    async def go():
        return await km.write_async("a1", "I hide my passport in Zanzibar", "Alice", user_id="alice")

    with pytest.raises(ConflictError, match="user 'alice' of this write was erased"):
        asyncio.run(go())
    assert _scope_rows(km, "user_id", "alice") == {}
    assert not _zanzibar(store)
