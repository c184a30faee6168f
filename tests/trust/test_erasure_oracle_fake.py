"""Verifiable erasure on the Oracle engine (SC-14), over the recording fake of
python-oracledb (static-checked, not run against Oracle): forget writes its tombstone with
oramem_admin.log_erasure inside the erasure's transaction, scans with erasure_scan_json,
replaces the log row with the receipt, and the receipt holds no id and no text."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from oracle.fakes import FakePool, Recorder
from oracle.test_driver_fake import SETTINGS_OUT
from oramem import OracleDBMemoryStore
from oramem.embedders import HashEmbedder
from oramem.trust.erasure import SALT_OPTION, ErasureReceipt, erasure_log, verify_receipts

SALT = "00112233445566778899aabbccddeeff"
CASCADE = json.dumps({"count": 1, "event": {
    "memory_store_id": "MYSTORE", "records": [["user_profile", "ana-9"], ["memory", "m1"]],
    "thread_ids": [], "user_ids": ["ana-9"], "agent_ids": [], "reason": "forget"}})
MEMORY = {"id": "m1", "record_type": "memory", "content": "Ana hides gold under the quokkafish bridge",
          "timestamp": None, "metadata": {"city": "Vilnius"}, "thread_id": None, "user_id": "ana-9", "agent_id": None,
          "created_at": "2026-12-05T00:00:00.000000+00:00", "expires_at": None, "role": None, "seq_no": 1}


def _list(call):
    request = json.loads(call.binds["in_request"])
    if request.get("record_type") == "memory" and (request.get("scope") or {}).get("user_id", {}).get("value") != "bob":
        return json.dumps([MEMORY])
    return "[]"


def _recorder(scan: dict, log: list) -> Recorder:
    return Recorder({
        "oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, vector_dim=8)),
        "oramem_admin.get_options_json": json.dumps({SALT_OPTION: SALT}),
        "oramem_store.list_json": _list,
        "oramem_store.get_json": None,
        "oramem_kg_jobs.has_knowledge": 0,
        "oramem_store.delete_record_json": CASCADE,
        "oramem_admin.erasure_scan_json": json.dumps(scan),
        "oramem_admin.get_erasure_log_json": json.dumps(log),
    })


def test_forget_logs_the_tombstone_in_the_erasure_transaction_and_returns_a_receipt():
    scan = {"scanned": ["table:OM_MYSTORE_REC", "table:OM_MYSTORE_CHK", "text-index:OM_MYSTORE_TXT"],
            "found": {"quokkafish": ["text-index:OM_MYSTORE_TXT"], "vilnius": ["table:OM_MYSTORE_REC"]},
            "shared": ["vilnius"]}
    rec = _recorder(scan, [])
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    receipt = store.forget(user_id="ana-9")
    names = [c.name for c in rec.plsql]
    cascade, tomb = names.index("oramem_store.delete_record_json"), names.index("oramem_admin.log_erasure")
    assert cascade < tomb < names.index("oramem_admin.erasure_scan_json")
    # the tombstone goes on the erasure's connection, before its one commit
    assert rec.plsql[tomb].conn == rec.plsql[cascade].conn
    tokens = json.loads(rec.plsql[names.index("oramem_admin.erasure_scan_json")].binds["in_tokens"])
    assert {"quokkafish", "vilnius", "ana-9"} <= set(tokens) and "the" not in tokens
    assert isinstance(receipt, ErasureReceipt) and receipt == {"OM_MYSTORE_REC": 2}
    expected = hmac.new(bytes.fromhex(SALT), b"user:ana-9", hashlib.sha256).hexdigest()
    assert receipt.subject_hash == expected
    # the Oracle Text token table still holds a word of hers: residue, reported by hash
    assert receipt.verification["status"] == "residue" and receipt.verification["tokens_shared"] == 1
    assert [r["where"] for r in receipt.verification["residue"]] == [["text-index:OM_MYSTORE_TXT"]]
    logged = [json.loads(c.binds["in_receipt"]) for c in rec.plsql if c.name == "oramem_admin.log_erasure"]
    assert len(logged) == 2 and logged[0]["verification"] == {"status": "pending"}
    assert logged[1]["receipt_id"] == logged[0]["receipt_id"] == receipt.receipt_id
    for entry in logged:
        text = json.dumps(entry)
        assert "ana-9" not in text and "quokkafish" not in text and entry["subject_hash"] == expected


def test_a_clean_scan_and_reverification_on_oracle():
    rec = _recorder({"scanned": ["table:OM_MYSTORE_REC"], "found": {}, "shared": []}, [])
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    receipt = store.forget(user_id="ana-9")
    assert receipt.verified
    entry = receipt.log_entry()
    rec.answers["oramem_admin.get_erasure_log_json"] = json.dumps([entry])
    assert erasure_log(store)[0]["subject_hash"] == receipt.subject_hash
    # ana's memory is listed again by the fake: the subject is back
    [check] = verify_receipts(store)
    assert check.subject_present and not check.ok


def test_the_salt_is_created_once_through_the_options():
    rec = _recorder({"scanned": [], "found": {}, "shared": []}, [])
    rec.answers["oramem_admin.get_options_json"] = "{}"
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    store.forget(user_id="ana-9")
    [set_salt] = [c for c in rec.plsql if c.name == "oramem_admin.set_option"]
    assert set_salt.binds["in_name"] == SALT_OPTION and len(json.loads(set_salt.binds["in_value"])) == 32


def _migration_source(path):
    from oramem import SQLiteMemoryStore

    with SQLiteMemoryStore(str(path), embedder=HashEmbedder(3), search_strategy="vector") as s:
        s.add(["Ana grows figs"], "memory", user_ids="ana")
        s.add(["Bob grows plums"], "memory", user_ids="bob")
        return s


def test_migrate_into_oracle_carries_the_receipts(tmp_path):
    from oracle.test_migrate_oracle_fake import ORACLE, OracleModel, fake_oracle
    from oramem import SQLiteMemoryStore
    from oramem.migrate import migrate

    src = tmp_path / "src.db"
    _migration_source(src)
    with SQLiteMemoryStore(str(src)) as s:
        receipt = s.forget(user_id="ana")
    rec, connect = fake_oracle(OracleModel())
    report = migrate(str(src), ORACLE, oracle_connect=connect)
    assert report.copied_records == 1
    [logged] = [json.loads(c.binds["in_receipt"]) for c in rec.plsql if c.name == "oramem_admin.log_erasure"]
    assert logged["receipt_id"] == receipt.receipt_id and "ana" not in json.dumps(logged).replace(logged["salt"], "")


def test_migrate_refuses_a_subject_erased_in_the_oracle_target(tmp_path):
    from oracle.test_migrate_oracle_fake import ORACLE, OracleModel, fake_oracle
    from oramem.migrate import migrate
    from oramem.trust.erasure import ErasedSubjectError, subject_hash

    src = tmp_path / "src.db"
    _migration_source(src)
    tomb = {"receipt_id": "r" * 32, "erased_at": "2026-12-05T00:00:00+00:00", "subject": "user", "salt": SALT,
            "subject_hash": subject_hash(SALT, "user", "ana"), "rows": {}, "total": 0, "token_hashes": [],
            "verification": {"status": "clean"}}
    model = OracleModel()
    rec, connect = fake_oracle(model)
    rec.answers["oramem_admin.get_erasure_log_json"] = json.dumps([tomb])
    with pytest.raises(ErasedSubjectError, match="1 erased user"):
        migrate(str(src), ORACLE, oracle_connect=connect)
    assert model.batches == [] and "oramem_store.add_json" not in [c.name for c in rec.plsql]
    report = migrate(str(src), ORACLE, oracle_connect=connect, allow_erased=True)
    assert report.copied_records == 2


def test_the_plsql_side_static():
    """The PL/SQL half, read as source (the static gate in tests/plsql parses it): the log
    table has no foreign key (it outlives a dropped store), the upgrade runs after 002_to_003,
    log_erasure never commits (forget's transaction does), and the scan puts identifiers
    into dynamic SQL only through quoted_name / ENQUOTE_NAME and values only as binds."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    ddl = (root / "ddl" / "upgrades" / "003_to_004.sql").read_text()
    assert "oramem_erasure_log" in ddl and "REFERENCES" not in ddl.upper() and "4 AS version" in ddl
    install = (root / "plsql" / "install.sql").read_text()
    assert install.index("002_to_003.sql") < install.index("003_to_004.sql") < install.index("@@oramem_errors.pks")
    assert "'ORAMEM_ERASURE_LOG'" in (root / "plsql" / "uninstall.sql").read_text()
    body = (root / "plsql" / "oramem_admin.pkb").read_text()
    log = body[body.index("PROCEDURE log_erasure("):body.index("END log_erasure;")]
    assert "COMMIT" not in log.upper()
    scan = body[body.index("FUNCTION erasure_scan_json("):body.index("END erasure_scan_json;")]
    for stmt in re.findall(r"EXECUTE IMMEDIATE(.*?)INTO", scan, re.S):
        assert "l_token" not in stmt and ":t" in stmt
    assert "quoted_name(l_id, oramem_registry.gc_obj_records)" in scan and "DBMS_ASSERT.ENQUOTE_NAME" in scan


def test_forget_after_a_plsql_cascade_logs_the_receipt_the_cascade_did_not():
    """left34 item 5, the remedy plsql/README.md and oramem_store.pks document: a PL/SQL
    application's own profile cascade (``oramem_store.delete_record(_json)``, in_cascade => 1)
    writes no erasure receipt; the Python ``forget`` of the same user afterwards finds nothing
    left (count 0, no records) and still logs her tombstone, with the subject hash that
    ``oramem import`` / ``migrate`` check (SC-14.4). Pins documented behaviour (passes on the
    code before: the package was not changed)."""
    nothing_left = json.dumps({"count": 0, "event": {
        "memory_store_id": "MYSTORE", "records": [], "thread_ids": [], "user_ids": ["ana-9"], "agent_ids": [],
        "reason": "forget"}})
    rec = _recorder({"scanned": ["table:OM_MYSTORE_REC"], "found": {}, "shared": []}, [])
    rec.answers["oramem_store.list_json"] = "[]"
    rec.answers["oramem_store.delete_record_json"] = nothing_left
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    receipt = store.forget(user_id="ana-9")
    logged = [json.loads(c.binds["in_receipt"]) for c in rec.plsql if c.name == "oramem_admin.log_erasure"]
    expected = hmac.new(bytes.fromhex(SALT), b"user:ana-9", hashlib.sha256).hexdigest()
    assert logged and all(e["subject_hash"] == expected for e in logged)
    assert logged[0]["verification"] == {"status": "pending"} and receipt.subject_hash == expected
