"""Retrieval audit and self-check (issue 27 items 2 and 4, SC-16): an entry for every read
path, scoped listing, retention, erasure with the subject, drop with the store, and the
self-check passing on a clean store and failing on seeded problems."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.sqlite._sqlite import sqlite3  # the engine's SQLite build (FTS5 secure-delete files read as version 5)
from oramem.cli import cli
from oramem.errors import CapabilityError
from oramem.knowledge import KnowledgeMemory
from oramem.testing import HashEmbedder
from oramem.trust import audit
from oramem.trust.selfcheck import self_check

ALICE, BOB = "alice-7f3a91", "bob-22c4"


def open_store(path, **kw):
    return SQLiteMemoryStore(str(path), embedder=HashEmbedder(64), search_strategy="hybrid", **kw)


def seed(store):
    a = store.add(["Alice drinks green tea every morning", "Alice plays the violin"], "memory",
                  user_ids=ALICE, agent_ids="concierge")
    b = store.add(["Bob drinks black coffee", "Bob plays chess"], "memory", user_ids=BOB, agent_ids="concierge")
    return a, b


def audit_rows(path) -> list[tuple]:
    conn = sqlite3.connect(str(path))
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'oramem_audit_log'").fetchone():
            return []
        return conn.execute("SELECT request_id, user_id, surface, detail FROM oramem_audit_log ORDER BY at").fetchall()
    finally:
        conn.close()


def dump(path) -> list[str]:
    # every table's rows through the engine's SQLite build (sqlean has no iterdump, and the
    # interpreter's 3.40 cannot read an FTS5 index after a secure delete: format version 5)
    conn = sqlite3.connect(str(path))
    try:
        out: list[str] = []
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
            out.append(name)
            out.extend(repr(row) for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY 1'))
        return out
    finally:
        conn.close()


def run(*args, expect=0):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, result.output
    return result.output


# ------------------------------------------------------------------ entries for every read path
def test_audit_is_off_by_default_and_writes_nothing(tmp_path):
    with open_store(tmp_path / "a.db") as store:
        seed(store)
        store.search("tea", user_id=ALICE)
        assert audit.audit_settings(store) == audit.AuditSettings()
    assert audit_rows(tmp_path / "a.db") == []


@pytest.mark.parametrize("strategy", ["vector", "keyword", "hybrid"])
def test_every_search_strategy_writes_an_entry(tmp_path, strategy):
    with open_store(tmp_path / "a.db") as store:
        ids, _ = seed(store)
        audit.set_audit(store, True, ttl_days=30)
        hits = store.search("green tea", k=3, user_id=ALICE, strategy=strategy)
        rid = audit.last_request_id()
        [entry] = audit.find(store)
    assert hits and entry.request_id == rid and entry.surface == "search" and entry.user_id == ALICE
    assert entry.detail["strategy"] == strategy
    assert [s["id"] for s in entry.served] == [r.id for r, _ in hits]
    # the query text is not kept, only its keyed hash
    raw = json.dumps(audit_rows(tmp_path / "a.db"))
    assert "green tea" not in raw and entry.query_hash and len(entry.query_hash) == 64


async def test_async_search_writes_an_entry_and_returns_its_request_id(tmp_path):
    with open_store(tmp_path / "a.db") as store:
        seed(store)
        await audit.set_audit_async(store, True)
        hits = await store.search_async("coffee", user_id=BOB)
        rid = audit.last_request_id()
        [entry] = await audit.find_async(store, request_id=rid)
    assert entry.user_id == BOB and [s["id"] for s in entry.served] == [r.id for r, _ in hits]


def test_knowledge_retrieve_writes_one_entry_with_fact_times(tmp_path):
    with open_store(tmp_path / "k.db") as store:
        audit.set_audit(store, True)
        with KnowledgeMemory(store, None) as km:
            km.add_fact("concierge", "Alice", "Alice drinks green tea", subject_type="person", user_id=ALICE)
            before = len(audit.find(store))
            result = km.retrieve("concierge", "what does Alice drink", user_id=ALICE)
            entries = audit.find(store)[before:]
    assert result.facts
    # one entry: the retrieve's own candidate searches are not entries of their own
    [entry] = entries
    assert entry.surface == "retrieve" and entry.user_id == ALICE and entry.agent_id == "concierge"
    assert entry.request_id == result.audit_request_id
    facts = [s for s in entry.served if s["type"] == "fact"]
    assert [f["id"] for f in facts] == [f.fact_id for f in result.facts]
    assert facts[0]["valid_from"] and facts[0]["known_from"] and facts[0]["valid_to"] is None


async def test_mcp_search_tool_writes_an_entry(tmp_path):
    pytest.importorskip("mcp.server.mcpserver")
    from mcp import Client

    from oramem.integrations.mcp import build_server

    with open_store(tmp_path / "m.db") as store:
        seed(store)
        audit.set_audit(store, True)
        async with Client(build_server(store, user_id=ALICE, agent_id="concierge")) as client:
            result = await client.call_tool("search_memories", {"query": "violin"})
            assert not result.is_error
        [entry] = audit.find(store)
    assert entry.surface == "search" and entry.user_id == ALICE and entry.served


# ------------------------------------------------------------------ scope, retention, erasure, drop
def test_a_user_lists_only_her_own_entries(tmp_path):
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
        audit.set_audit(store, True)
        store.search("tea", user_id=ALICE)
        store.search("coffee", user_id=BOB)
        assert {e.user_id for e in audit.find(store, user_id=BOB)} == {BOB}
        # the audit is not a record: no search or list as B shows anything of it
        for record_type in ("memory", "fact", "message"):
            assert all(r.user_id == BOB for r in store.list(record_type, user_id=BOB))
    out = json.loads(run("--db", db, "--json", "audit", "list", "--user", BOB))
    assert [e["user_id"] for e in out] == [BOB]
    assert ALICE not in run("--db", db, "audit", "export", "--user", BOB)


def test_purge_expired_deletes_entries_past_the_audit_ttl(tmp_path):
    db = tmp_path / "a.db"
    with open_store(db) as store:
        seed(store)
        audit.set_audit(store, True, ttl_days=7)
        store.search("tea", user_id=ALICE)
        old = audit.last_request_id()
        store.search("coffee", user_id=BOB)
        recent = audit.last_request_id()
        conn = sqlite3.connect(str(db))
        conn.execute("UPDATE oramem_audit_log SET at = ? WHERE request_id = ?",
                     ((datetime.now(timezone.utc) - timedelta(days=8)).isoformat(), old))
        conn.commit()
        conn.close()
        assert not self_check(store).ok  # the stale entry is a self-check failure
        store.purge_expired()
        assert [e.request_id for e in audit.find(store)] == [recent]
        assert self_check(store).ok


def test_turning_the_audit_off_keeps_the_retention_of_entries_written(tmp_path):
    db = tmp_path / "a.db"
    with open_store(db) as store:
        seed(store)
        audit.set_audit(store, True, ttl_days=7)
        store.search("tea", user_id=ALICE)
        old = audit.last_request_id()
        off = audit.set_audit(store, False)
        assert (off.enabled, off.ttl_days) == (False, 7)
        store.search("coffee", user_id=BOB)
        assert [e.request_id for e in audit.find(store)] == [old]  # off: no new entry
        conn = sqlite3.connect(str(db))
        conn.execute("UPDATE oramem_audit_log SET at = ? WHERE request_id = ?",
                     ((datetime.now(timezone.utc) - timedelta(days=8)).isoformat(), old))
        conn.commit()
        conn.close()
        store.purge_expired()
        assert audit.find(store) == []
    assert "kept 7 days" in run("--db", str(db), "audit", "status")


def test_forget_erases_the_subjects_entries_and_the_receipt_stays_clean(tmp_path):
    db = tmp_path / "a.db"
    with open_store(db) as store:
        seed(store)
        audit.set_audit(store, True)
        store.search("tea", user_id=ALICE)
        store.search("coffee", user_id=BOB)
        receipt = store.forget(user_id=ALICE)
        assert receipt["oramem_audit_log"] == 1 and receipt.verified
        assert [e.user_id for e in audit.find(store)] == [BOB]
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("a.db"))
    assert ALICE.encode() not in raw


def test_dropping_the_store_drops_its_entries(tmp_path):
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
        audit.set_audit(store, True)
        store.search("tea", user_id=ALICE)
    assert audit_rows(db)
    run("--db", db, "stores", "drop", "DEFAULT", "--yes")
    assert audit_rows(db) == []


def test_bad_settings_are_refused_before_anything_is_written(tmp_path):
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
        for bad in (0, -1, 1.5, True, "7"):
            with pytest.raises(ValueError, match="ttl_days"):
                audit.set_audit(store, True, ttl_days=bad)
        assert audit.audit_settings(store).enabled is False
        with pytest.raises(ValueError, match="since"):
            audit.find(store, since="yesterday")
    assert "--ttl-days" in run("--db", db, "audit", "enable", "--ttl-days", "0", expect=2)
    assert "off" in run("--db", db, "audit", "status")


def test_enabling_on_another_engine_is_refused():
    class FakeStore:
        _engine = object()

        def set_option(self, *a):  # pragma: no cover - must not be reached
            raise AssertionError("written")

    with pytest.raises(CapabilityError, match="not done on Oracle"):
        audit.set_audit(FakeStore(), True)


def test_cli_enable_search_list_export(tmp_path):
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
    assert "on (entries kept 30 days)" in run("--db", db, "audit", "enable", "--ttl-days", "30")
    run("--db", db, "search", "violin", "--user", ALICE)
    [entry] = json.loads(run("--db", db, "--json", "audit", "list"))
    assert entry["user_id"] == ALICE and entry["served"]
    assert json.loads(run("--db", db, "--json", "audit", "list", "--request-id", entry["request_id"]))[0] == entry
    assert json.loads(run("--db", db, "--json", "audit", "list", "--query", "violin"))[0]["request_id"] == entry["request_id"]
    assert json.loads(run("--db", db, "--json", "audit", "list", "--until", "2000-01-01T00:00:00+00:00")) == []
    out = tmp_path / "audit.jsonl"
    run("--db", db, "audit", "export", "--out", str(out))
    assert json.loads(out.read_text().splitlines()[0])["request_id"] == entry["request_id"]
    assert "off" in run("--db", db, "audit", "disable")


# ------------------------------------------------------------------ self-check
def test_check_passes_on_a_clean_store_and_writes_nothing(tmp_path):
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
        # threads and profiles of both users (list ignores scope filters on them, SC-3.3)
        store.add(["hi"], "message", thread_ids="t-alice", user_ids=ALICE, agent_ids="concierge", roles="user")
        store.add(["yo"], "message", thread_ids="t-bob", user_ids=BOB, agent_ids="concierge", roles="user")
        store.add_user(ALICE, "Alice, violinist")
        audit.set_audit(store, True)
        with KnowledgeMemory(store, None) as km:
            km.add_fact("concierge", "Alice", "Alice drinks green tea", subject_type="person", user_id=ALICE)
            km.add_fact("concierge", "Bob", "Bob drinks coffee", subject_type="person", user_id=BOB)
        store.forget(user_id=BOB)
    before = audit_rows(db)
    before_dump = dump(db)
    out = json.loads(run("--db", db, "--json", "audit", "check"))
    assert out["ok"] is True
    names = {c["name"] for c in out["checks"]}
    assert {"cross_user.scope", "cross_user.placement", "cross_user.knowledge", "stale.records",
            "knowledge.superseded", "erasure.receipts"} <= names
    assert audit_rows(db) == before  # the probes' searches are not audit entries
    assert dump(db) == before_dump  # read-only: nothing written at all
    assert "self-check passed" in run("--db", db, "audit", "--check")


def test_check_fails_on_a_record_moved_into_another_users_scope(tmp_path):
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
        store.add([f"{ALICE} asked to be called back"], "memory", user_ids=ALICE, agent_ids="concierge")
    run("--db", db, "audit", "check")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE om_DEFAULT_records SET user_id = ? WHERE content LIKE ?", (BOB, f"{ALICE}%"))
    conn.commit()
    conn.close()
    out = run("--db", db, "audit", "--check", expect=1)
    assert "FAIL cross_user.placement" in out and f"names the id of user '{ALICE}'" in out
    report = json.loads(run("--db", db, "--json", "audit", "check", expect=1))
    assert report["ok"] is False


def test_check_fails_on_a_superseded_fact_still_current(tmp_path):
    db = str(tmp_path / "k.db")
    with open_store(db) as store:
        with KnowledgeMemory(store, None) as km:
            km.add_fact("concierge", "Alice", "Alice lives in Lyon", subject_type="person", user_id=ALICE)
            km.add_fact("concierge", "Alice", "Alice plays the violin", subject_type="person", user_id=ALICE)
        assert self_check(store).ok
        conn = sqlite3.connect(db)
        ids = dict(conn.execute('SELECT fact_text, id FROM "DEFAULT_KG_FACT"').fetchall())
        old_id, new_id = ids["Alice lives in Lyon"], ids["Alice plays the violin"]
        conn.execute('UPDATE "DEFAULT_KG_FACT" SET supersedes_fact_id = ? WHERE id = ?', (old_id, new_id))
        conn.commit()
        conn.close()
        report = self_check(store)
    [failed] = report.failures
    assert failed.name == "knowledge.superseded" and old_id in failed.problems[0]


def test_check_fails_on_an_erasure_receipt_that_no_longer_verifies(tmp_path):
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
        store.forget(user_id=ALICE)
        assert self_check(store).ok
        store.add(["Alice drinks green tea every morning"], "memory", user_ids=ALICE)  # she is back
        report = self_check(store)
    assert [c.name for c in report.failures] == ["erasure.receipts"]


def test_check_catches_a_search_that_serves_a_stale_scope(tmp_path):
    # found by the check itself: the vector sidecar keeps each row's scope, and a change made
    # behind the engine (raw SQL here) does not move its stamp, so a vector search as the old
    # owner still returns the record; the probe reads what the surface serves, not the table
    db = str(tmp_path / "a.db")
    with open_store(db) as store:
        seed(store)
        store.add(["she keeps a diary"], "memory", user_ids=ALICE, agent_ids="concierge")
        store.search("tea", user_id=BOB)  # the sidecar is written
    conn = sqlite3.connect(db)
    conn.execute("UPDATE om_DEFAULT_records SET user_id = ? WHERE content = ?", (BOB, "Alice drinks green tea every morning"))
    conn.commit()
    conn.close()
    with open_store(db) as store:
        report = self_check(store)
    scope = next(c for c in report.checks if c.name == "cross_user.scope")
    assert not scope.ok and f"as user '{ALICE}'" in scope.problems[0] and f"of user '{BOB}'" in scope.problems[0]


def test_recipe_what_did_the_agent_know_and_use_at_t(tmp_path):
    """SC-16.2 recipe: the entry names the facts used (with their versions); retrieve with
    ``as_of=entry.at, known_at=entry.at`` replays what the agent knew then, after the fact has
    been retracted and replaced."""
    with open_store(tmp_path / "t.db") as store:
        audit.set_audit(store, True)
        with KnowledgeMemory(store, None) as km:
            km.add_fact("concierge", "Alice", "Alice drinks green tea", subject_type="person", user_id=ALICE)
            answered = km.retrieve("concierge", "what does Alice drink", user_id=ALICE)
            rid = answered.audit_request_id
            [old] = [f.fact_id for f in answered.facts]
            assert km.retract_fact("concierge", old, user_id=ALICE)
            km.add_fact("concierge", "Alice", "Alice drinks black coffee", subject_type="person", user_id=ALICE)
            now = km.retrieve("concierge", "what does Alice drink", user_id=ALICE)
            assert old not in [f.fact_id for f in now.facts]
            # the recipe
            [entry] = audit.find(store, request_id=rid)
            used = {s["id"]: s for s in entry.served if s["type"] == "fact"}
            knew = km.retrieve(entry.agent_id, "what does Alice drink", user_id=entry.user_id,
                               as_of=entry.at, known_at=entry.at)
            [version] = [v for v in km.history("concierge", old, user_id=ALICE) if v.fact_id == old]
    assert list(used) == [old] and used[old]["valid_to"] is None  # it was current when served
    assert [f.fact_id for f in knew.facts] == [old]  # the coffee fact was not known at T
    assert version.valid_to is not None and used[old]["valid_from"]  # retracted since; history keeps it


def test_check_fails_on_an_unresolved_contradiction_and_passes_once_resolved(tmp_path):
    db = str(tmp_path / "c.db")
    with open_store(db) as store:
        with KnowledgeMemory(store, None) as km:
            km.add_fact("concierge", "Alice", "Alice lives in Lyon", subject_type="person", user_id=ALICE)
            km.add_fact("concierge", "Alice", "Alice lives in Porto", subject_type="person", user_id=ALICE)
        conn = sqlite3.connect(db)
        ids = dict(conn.execute('SELECT fact_text, id FROM "DEFAULT_KG_FACT"').fetchall())
        lyon, porto = ids["Alice lives in Lyon"], ids["Alice lives in Porto"]
        # what consolidation records when it finds two facts at odds (KC-6 observation type 'contradiction')
        now = datetime.now(timezone.utc).isoformat()
        conn.execute('INSERT INTO "DEFAULT_KG_META_OBSERVATION" (id, agent_id, user_id, observation_type, title, text, '
                     "supporting_event_ids, supporting_fact_ids, is_active, first_detected_at, last_reinforced_at, created_at) "
                     "VALUES ('obs-1', 'concierge', ?, 'contradiction', 'where Alice lives', 'Lyon or Porto', '[]', ?, 1, ?, ?, ?)",
                     (ALICE, json.dumps([lyon, porto]), now, now, now))
        conn.commit()
        conn.close()
        report = self_check(store)
        [failed] = report.failures
        assert failed.name == "knowledge.contradictions" and lyon in failed.problems[0] and porto in failed.problems[0]
        assert json.loads(run("--db", db, "--json", "audit", "check", expect=1))["ok"] is False
        with KnowledgeMemory(store, None) as km:
            assert km.retract_fact("concierge", lyon, user_id=ALICE)
        assert self_check(store).ok


async def test_langchain_retriever_sync_and_async_write_entries(tmp_path):
    pytest.importorskip("langchain_core")
    from oramem.integrations.langchain import OramemRetriever

    with open_store(tmp_path / "lc.db") as store:
        seed(store)
        audit.set_audit(store, True)
        retriever = OramemRetriever(store=store, user_id=BOB, agent_id="concierge", k=2, record_types=["memory"])
        assert retriever.invoke("chess")
        assert await retriever.ainvoke("coffee")
        entries = audit.find(store)
    assert [(e.surface, e.user_id) for e in entries] == [("search", BOB), ("search", BOB)]
    assert all(e.served for e in entries)
