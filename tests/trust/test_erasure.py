"""Verifiable erasure (issue 27 item 1, SC-14): forget receipts, the erasure log (salted
hashes only), the verification scan, and the refusal of erased subjects by import, migrate
and restore (reliability-security finding 22: a backup taken before forget brought the
erased user back)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from oramem.sqlite._sqlite import sqlite3  # the engine's SQLite build (FTS5 secure-delete files read as version 5)

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.knowledge import KnowledgeMemory
from oramem.testing import HashEmbedder
from oramem.trust.erasure import (
    SALT_OPTION,
    ErasedSubjectError,
    ErasureReceipt,
    erasure_log,
    verify_receipts,
    verify_receipts_async,
)

ALICE = "alice-7f3a91"
ALICE_TEXT = "Alice keeps her passport in the quokkafish drawer near Zanzibar"


def open_store(path, **kw):
    return SQLiteMemoryStore(str(path), embedder=HashEmbedder(64), search_strategy="hybrid", **kw)


def seed(store):
    store.add_user(ALICE, "Alice Verbrugghen, violinist")
    store.add([ALICE_TEXT], "memory", user_ids=ALICE, agent_ids="concierge")
    store.add(["alice says hello about the quokkafish"], "message", thread_ids="t-alice", user_ids=ALICE,
              agent_ids="concierge", roles="user")
    store.add(["Bob likes Zanzibar too"], "memory", user_ids="bob", agent_ids="concierge")


def all_bytes(path) -> bytes:
    folder, base = os.path.split(str(path))
    return b"".join(open(os.path.join(folder, n), "rb").read() for n in os.listdir(folder) if n.startswith(base))


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


def run(runner, *args, expect=0, **kw):
    result = runner.invoke(cli, list(args), catch_exceptions=False, **kw)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def runner(monkeypatch):
    for var in ("ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_STRATEGY"):
        monkeypatch.delenv(var, raising=False)
    return CliRunner()


# ---------------------------------------------------------------------------- the receipt
def test_forget_returns_a_receipt_with_rows_salted_hash_and_a_clean_scan(tmp_path):
    with open_store(tmp_path / "r.db") as store:
        seed(store)
        receipt = store.forget(user_id=ALICE)
        assert isinstance(receipt, ErasureReceipt) and isinstance(receipt, dict)
        # backward compatible: still the rows erased per table (profile, memory, message, her thread)
        assert receipt["om_DEFAULT_records"] == 4 and json.loads(json.dumps(receipt)) == dict(receipt)
        salt = store.get_option(SALT_OPTION)
        assert isinstance(salt, str) and len(salt) == 32
        expected = hmac.new(bytes.fromhex(salt), f"user:{ALICE}".encode(), hashlib.sha256).hexdigest()
        assert receipt.subject == "user" and receipt.subject_hash == expected
        check = receipt.verification
        assert check["status"] == "clean" and receipt.verified and check["residue"] == []
        assert check["tokens_checked"] >= 5  # her distinctive words and her id
        assert check["tokens_shared"] >= 1  # "zanzibar" is Bob's too: found, but not hers alone
        assert {"db", "file:wal", "fts-index:om_DEFAULT_fts"} <= set(check["scanned"])
        printed = json.dumps(receipt.to_json())
        assert ALICE not in printed and "quokkafish" not in printed and salt not in printed
        assert receipt.erased_at.endswith("+00:00") and len(receipt.receipt_id) == 32
        # the salt is created once per store: a second erasure uses it again
        assert store.forget(agent_id="concierge").salt == salt
        assert store.get_option(SALT_OPTION) == salt


def test_an_in_memory_store_is_scanned_table_by_table():
    with SQLiteMemoryStore(":memory:", search_strategy="keyword") as store:
        seed(store)
        receipt = store.forget(user_id=ALICE)
        assert receipt.verified and "table:om_DEFAULT_records" in receipt.verification["scanned"]
        assert receipt.verification["tokens_shared"] >= 1  # zanzibar: Bob's too


def test_the_log_keeps_salted_hashes_only_no_id_and_no_text(tmp_path):
    path = tmp_path / "log.db"
    with open_store(path) as store:
        seed(store)
        store.forget(user_id=ALICE)
        [entry] = erasure_log(store)
        text = json.dumps(entry)
        assert ALICE not in text and "quokkafish" not in text.lower() and "verbrugghen" not in text.lower()
        assert entry["subject_hash"] and entry["token_hashes"] and entry["verification"]["status"] == "clean"
    raw = all_bytes(path).lower()
    for needle in (ALICE.encode(), b"quokkafish", b"verbrugghen", b"passport"):
        assert needle not in raw, needle


def test_the_scan_reports_residue_in_any_file_of_the_store(tmp_path):
    path = tmp_path / "res.db"
    with open_store(path) as store:
        seed(store)
        # a stray copy next to the database (an editor's backup, a sync conflict) is a file of the store
        (tmp_path / "res.db.orig").write_bytes(ALICE_TEXT.encode())
        receipt = store.forget(user_id=ALICE)
        assert receipt.verification["status"] == "residue" and not receipt.verified
        assert {w for r in receipt.verification["residue"] for w in r["where"]} == {"file:orig"}
        assert "quokkafish" not in json.dumps(receipt.to_json())  # residue named by hash only
        [check] = verify_receipts(store)
        assert not check.ok and check.residue and not check.subject_present
        os.remove(tmp_path / "res.db.orig")
        [check] = verify_receipts(store)
        assert check.ok, check


def test_reverification_fails_when_the_subject_comes_back(tmp_path):
    with open_store(tmp_path / "v.db") as store:
        seed(store)
        store.forget(user_id=ALICE)
        [check] = verify_receipts(store)
        assert check.ok and check.tokens_checked >= 5 and check.problem == ""
        store.add(["back again"], "memory", user_ids=ALICE)
        [check] = verify_receipts(store)
        assert not check.ok and check.subject_present and "names the erased subject" in check.problem
        assert json.loads(json.dumps(check.to_json()))["ok"] is False


async def test_forget_async_returns_a_receipt(tmp_path):
    with open_store(tmp_path / "a.db") as store:
        seed(store)
        receipt = await store.forget_async(user_id=ALICE)
        assert isinstance(receipt, ErasureReceipt) and receipt.verified
        assert (await verify_receipts_async(store))[0].ok


def test_knowledge_forget_returns_a_receipt(tmp_path):
    with open_store(tmp_path / "k.db") as store:
        seed(store)
        with KnowledgeMemory(store, None) as km:
            km.add_fact("concierge", "Alice", "Alice's locker code is 77123-quokka", subject_type="person", user_id=ALICE)
            receipt = km.forget(user_id=ALICE)
        assert isinstance(receipt, ErasureReceipt) and receipt.verified
        assert receipt["DEFAULT_KG_FACT"] == 1
        assert b"77123" not in all_bytes(tmp_path / "k.db")


# ---------------------------------------------------------------------------- CLI, export -> forget -> import
def test_cli_forget_prints_the_receipt(runner, tmp_path):
    db = str(tmp_path / "c.db")
    with open_store(db) as store:
        seed(store)
    out = json.loads(run(runner, "--db", db, "--json", "forget", "--user", ALICE, "--yes").stdout)
    receipt = out["receipt"]
    assert receipt["verification"]["status"] == "clean" and receipt["rows"]["om_DEFAULT_records"] == 4
    assert ALICE not in json.dumps(receipt)
    text = run(runner, "--db", db, "forget", "--user", "bob", "--yes").stdout
    assert "receipt " in text and "no trace found" in text


def test_a_backup_from_before_forget_does_not_bring_her_back(runner, tmp_path):
    db, backup = str(tmp_path / "b.db"), str(tmp_path / "before.jsonl")
    with open_store(db) as store:
        seed(store)
    run(runner, "--db", db, "export", "--out", backup)
    run(runner, "--db", db, "forget", "--user", ALICE, "--yes")
    before = all_bytes(db)
    res = run(runner, "--db", db, "import", backup, "--on-conflict", "skip", expect=2)
    assert "1 erased user(s)" in res.stderr and "--allow-erased" in res.stderr and "Nothing was written" in res.stderr
    with SQLiteMemoryStore(db) as store:
        assert store.list("memory", user_id=ALICE, limit=None) == []
    assert all_bytes(db).count(b"quokkafish") == before.count(b"quokkafish") == 0
    # told to, it restores her (and the re-verification then says so)
    run(runner, "--db", db, "import", backup, "--on-conflict", "skip", "--allow-erased")
    with SQLiteMemoryStore(db) as store:
        assert [r.content for r in store.list("memory", user_id=ALICE, limit=None)] == [ALICE_TEXT]
        [check] = verify_receipts(store)
        assert check.subject_present and not check.ok


def test_a_copy_carries_the_log_and_refuses_the_same(runner, tmp_path):
    db, old, new = str(tmp_path / "s.db"), str(tmp_path / "old.jsonl"), str(tmp_path / "new.jsonl")
    with open_store(db) as store:
        seed(store)
    run(runner, "--db", db, "export", "--out", old)
    run(runner, "--db", db, "forget", "--agent", "concierge", "--yes")
    res = run(runner, "--db", db, "export", "--out", new)
    assert "1 erasure receipt(s)" in res.stderr
    lines = [json.loads(x) for x in open(new, encoding="utf-8")]
    assert [x for x in lines if "erasure_log" in x] and "concierge" not in open(new, encoding="utf-8").read()
    # restore the post-erasure backup into a fresh file: its receipts come along ...
    copy = str(tmp_path / "copy.db")
    run(runner, "--db", copy, "import", new)
    with SQLiteMemoryStore(copy) as store:
        assert len(erasure_log(store)) == 1
    # ... so the old backup is refused there too (agent records), before anything is written
    res = run(runner, "--db", copy, "import", old, "--on-conflict", "skip", expect=2)
    assert "erased agent(s)" in res.stderr
    # a file holding both the old records and the new receipts is refused even by a fresh file
    mixed = str(tmp_path / "mixed.jsonl")
    with open(mixed, "w", encoding="utf-8") as f:
        f.write(open(old, encoding="utf-8").read())
        f.writelines(json.dumps(x) + "\n" for x in lines if "erasure_log" in x)
    fresh = tmp_path / "fresh.db"
    run(runner, "--db", str(fresh), "import", mixed, expect=2)
    assert not fresh.exists()


def test_python_import_refuses_and_allows(tmp_path):
    from oramem import jsonl

    with open_store(tmp_path / "p.db") as store:
        seed(store)
        lines: list[str] = []
        jsonl.export_records(store, lines.append)
        store.forget(user_id=ALICE)
        parsed = jsonl.parse_lines(lines)
        with pytest.raises(ErasedSubjectError, match="allow-erased"):
            jsonl.import_records(store, parsed, on_conflict="skip")
        assert store.get("user_profile", ALICE) is None
        result = jsonl.import_records(store, parsed, on_conflict="skip", allow_erased=True)
        assert result.imported == 4 and store.get("user_profile", ALICE) is not None


def test_a_bad_erasure_line_is_refused_with_its_line_number(tmp_path):
    from oramem import jsonl

    with pytest.raises(jsonl.JSONLError, match="x.jsonl:1"):
        jsonl.parse_lines(['{"erasure_log": {"receipt_id": "r", "subject": "user"}}'], "x.jsonl")


# ---------------------------------------------------------------------------- migrate
def _refused_into_a_store_where_alice_is_erased(old, live) -> list:
    """``live`` seeded and Alice erased there; migrating ``old`` into it is refused (one erased
    user). Returns ``live``'s dump from before the attempt."""
    from oramem.migrate import migrate

    with open_store(live) as store:
        seed(store)
        store.forget(user_id=ALICE)
    before = dump(live)
    with pytest.raises(ErasedSubjectError, match="1 erased user"):
        migrate(str(old), str(live))
    return before


def test_migrate_refuses_an_erased_subject_and_copies_the_log(tmp_path):
    from oramem.migrate import migrate

    old, live = tmp_path / "old.db", tmp_path / "live.db"
    with open_store(old) as store:
        seed(store)
    before = _refused_into_a_store_where_alice_is_erased(old, live)
    assert dump(live) == before  # nothing written
    # the other way round the log travels: a copy of the live store refuses the old one
    copy = tmp_path / "copy.db"
    migrate(str(live), str(copy))
    with SQLiteMemoryStore(str(copy)) as store:
        assert [e["receipt_id"] for e in erasure_log(store)] == [e["receipt_id"] for e in erasure_log(open_store(live))]
    with pytest.raises(ErasedSubjectError):
        migrate(str(old), str(copy))
    report = migrate(str(old), str(copy), allow_erased=True)
    assert report.copied_records >= 3


def test_migrate_refuses_an_erased_users_knowledge_rows_when_her_records_have_expired(tmp_path):
    """Alice's knowledge write in a thread Bob opened: in an old copy her store records have
    expired (and been purged), her knowledge rows (the event holds her words) stay. Migrating
    that copy into the store where she was erased is refused: the knowledge rows name her (as
    an import of the same rows as knowledge lines is)."""
    import datetime as dt

    from oramem.types import MemoryRetentionConfig

    old, live = tmp_path / "old.db", tmp_path / "live.db"
    then = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)  # long before the migration
    with open_store(old, clock=lambda: then, memory_retention_config=MemoryRetentionConfig(default_ttl_days=30)) as store:
        store.add(["Bob opens the shared thread"], "message", thread_ids="t-both", user_ids="bob", agent_ids="concierge",
                  roles="user", ttl_days=None)
        km = KnowledgeMemory(store, None, clock=lambda: then)
        km.add_knowledge("concierge", facts=[{"subject": "Alice", "fact": ALICE_TEXT, "subject_type": "person",
                                              "ttl_days": 10}], user_id=ALICE, session_id="t-both")
        km.close()
    with SQLiteMemoryStore(str(old)) as store:  # opening purges her expired records
        assert not [r for t in ("fact", "message") for r in store.list(t, user_id=ALICE, limit=None)]
    before = _refused_into_a_store_where_alice_is_erased(old, live)
    assert dump(live) == before
    assert "quokkafish" not in "\n".join(before)


# ---------------------------------------------------------------------------- scoped surfaces
async def test_a_user_scoped_mcp_server_returns_only_its_own_users_receipt(tmp_path):
    from integrations.extras import require_extra

    require_extra("mcp.server.mcpserver", "mcp")
    from mcp import Client

    from oramem.integrations.mcp import build_server

    with open_store(tmp_path / "m.db") as store:
        seed(store)
        async with Client(build_server(store, user_id="bob", agent_id="concierge")) as bob:
            tools = {t.name for t in (await bob.list_tools()).tools}
            assert not any("erasure" in t or "receipt" in t or "audit" in t for t in tools)
            result = await bob.call_tool("forget", {"user_id": ALICE})
            assert result.is_error  # bob cannot erase alice
            result = await bob.call_tool("forget", {})
            assert not result.is_error
            out = result.structured_content
            out = out.get("result", out)
        salt = store.get_option(SALT_OPTION)
        bob_hash = hmac.new(bytes.fromhex(salt), b"user:bob", hashlib.sha256).hexdigest()
        assert out["forgotten"] == "bob" and out["receipt"]["subject_hash"] == bob_hash
        assert [e["subject_hash"] for e in erasure_log(store)] == [bob_hash]
        assert store.get("user_profile", ALICE) is not None


def test_the_tombstones_outlive_a_dropped_store(runner, tmp_path):
    from oramem.sqlite import admin

    db, backup = str(tmp_path / "d.db"), str(tmp_path / "d.jsonl")
    with open_store(db) as store:
        seed(store)
    run(runner, "--db", db, "export", "--out", backup)
    run(runner, "--db", db, "forget", "--user", ALICE, "--yes")
    assert admin.drop_store(db, "DEFAULT")
    res = run(runner, "--db", db, "import", backup, expect=2)
    assert "1 erased user(s)" in res.stderr


@pytest.mark.parametrize("erase", [
    lambda store: store.forget(user_id=ALICE),
    lambda store: store.delete("user_profile", ALICE, cascade=True),  # an erasure too (SC-13.3)
], ids=["forget", "profile-cascade"])
def test_the_tombstone_commits_with_the_erasure(tmp_path, monkeypatch, erase):
    """A failure after the erasure's transaction (the scan) leaves the tombstone in the log."""
    from oramem.trust import erasure

    with open_store(tmp_path / "t.db") as store:
        seed(store)

        def boom(self, needles):
            raise OSError("disk went away")

        monkeypatch.setattr(erasure._SQLiteOps, "scan", boom)
        with pytest.raises(OSError):
            erase(store)
        [entry] = erasure_log(store)
        assert entry["verification"] == {"status": "pending"} and ALICE not in json.dumps(entry)
        assert store.get("user_profile", ALICE) is None


def test_the_scan_finds_a_token_across_a_block_boundary(tmp_path, monkeypatch):
    from oramem.sqlite import erasure as sq

    monkeypatch.setattr(sq, "BLOCK", 7)  # "quokkafish" always straddles blocks of 7 bytes
    with open_store(tmp_path / "blk.db") as store:
        seed(store)
        (tmp_path / "blk.db.copy").write_bytes(b"xx QUOKKAFISH xx")
        receipt = store.forget(user_id=ALICE)
        assert {w for r in receipt.verification["residue"] for w in r["where"]} == {"file:copy"}
