"""``oramem migrate`` with Oracle on either side, over the recording fake of python-oracledb.

The fake answers ``oramem_store.add_json`` and ``oramem_store.export_json`` from a small
in-memory model of what plsql/README.md documents for them (ids written, "restored_times"
kept, "on_conflict" "skip", implicit threads, pages in seq order after ``in_after_seq``), so
these tests check what the Python side sends and how it reads the answers: the payloads,
the paging, the kept times and float32 vectors, resuming and the checksum comparison.
What the packages do in a database is static-checked, not run against Oracle. The
knowledge tables' copy over SQLAlchemy is not exercised here (the fake answers no
``user_tables`` rows): it runs against Oracle Database Free only.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from oramem import SQLiteMemoryStore
from oramem.migrate import migrate
from oramem.oracle.admin import ADMIN_CALLS
from oramem.testing import HashEmbedder

from .fakes import FakeConnection, Recorder
from .test_driver_fake import SETTINGS_OUT

ORACLE = "oracle://oramem@dbhost:1521/FREEPDB1"
NOW = "2026-12-02T10:00:00.000000+00:00"


class OracleModel:
    """What the fake database holds for one store: records in seq order."""

    def __init__(self, rows=None):
        self.rows: list[dict] = list(rows or [])
        self.batches: list[dict] = []

    def add(self, call):
        batch = json.loads(call.binds["in_batch"])
        self.batches.append(batch)
        have = {(r["record"]["record_type"], r["record"]["id"]) for r in self.rows}
        out = []
        for rec in batch["records"]:
            key = (rec["record_type"], rec["id"])
            if key in have:
                assert batch.get("on_conflict") == "skip", batch.get("on_conflict")
                continue
            kept = rec.get("restored_times") or {}
            assert rec["ttl"] is None or not kept, "the package refuses ttl with restored_times"
            self._append(dict(id=rec["id"], record_type=rec["record_type"], content=rec["content"],
                              timestamp=rec["timestamp"], metadata=rec["metadata"], thread_id=rec["thread_id"],
                              user_id=rec["user_id"], agent_id=rec["agent_id"], role=rec["role"],
                              created_at=kept.get("created_at", NOW), expires_at=kept.get("expires_at")),
                         rec["chunks"])
            have.add(key)
            out.append(rec["id"])
        for rec in batch["records"]:  # implicit threads, owned by the first record naming them
            t = rec["thread_id"]
            if t and ("thread", t) not in have:
                self._append(dict(id=t, record_type="thread", content=None, timestamp=None, metadata=None,
                                  thread_id=t, user_id=rec["user_id"], agent_id=rec["agent_id"], role=None,
                                  created_at=NOW, expires_at=None), [])
                have.add(("thread", t))
        return json.dumps(out)

    def _append(self, record, chunks):
        record["seq_no"] = len(self.rows) + 1
        self.rows.append({"record": record, "chunks": chunks or None})

    def export(self, call):
        after, limit = call.binds["in_after_seq"], call.binds["in_limit"]
        assert 1 <= limit <= 10000
        page = [r for r in self.rows if r["record"]["seq_no"] > after][:limit]
        return json.dumps(page)


def fake_oracle(model: OracleModel, settings=None):
    rec = Recorder()
    describe = dict(SETTINGS_OUT, memory_store_id="DEFAULT", vector_dim=3, keyword_language="english")
    describe.update(settings or {})
    rec.answers.update({
        "oramem_admin.open_store": json.dumps(describe),
        "oramem_admin.list_stores": json.dumps([describe]),
        "oramem_store.add_json": model.add,
        "oramem_store.export_json": model.export,
        "sql:user_tables": [],
    })
    conns: list[FakeConnection] = []

    def connect(user, dsn):
        assert (user, dsn) == ("oramem", "dbhost:1521/FREEPDB1")
        conns.append(FakeConnection(rec))
        return conns[-1]

    return rec, connect


def _source(path):
    with SQLiteMemoryStore(path, embedder=HashEmbedder(3), search_strategy="vector") as store:
        store.add_user("ana", "Ana, a gardener", metadata={"tier": 2})
        store.add(["Ana grows figs", "Ana hates frost"], "memory", user_ids="ana", ttl_days=30,
                  metadata=[{"topic": "garden", "n": 1.5}, None], thread_ids="t1")
        store.add(["hello there"], "message", thread_ids="t1", user_ids="ana", roles="user",
                  timestamps="2025-01-02T03:04:05+00:00")
        store.add(["a long note"], "memory", index_texts=[["chunk one", "chunk two"]], record_ids=["caller"],
                  embeddings=[[np.array([0.1, 0.2, 0.3]), np.array([1e-7, -2.5, 3.0])]])


def test_sqlite_to_oracle_keeps_times_and_vectors_and_resumes(tmp_path):
    src = str(tmp_path / "src.db")
    _source(src)
    model = OracleModel()
    rec, connect = fake_oracle(model)
    report = migrate(src, ORACLE, batch_size=2, oracle_connect=connect)
    assert report.ok, report.stores
    assert report.copied_records == 5 and report.skipped_records == 0
    assert report.stores[0].records == (5, 5)
    # every batch is a restore: kept times instead of a ttl, stored ids skipped
    sent = [r for b in model.batches for r in b["records"]]
    assert all(b["on_conflict"] == "skip" for b in model.batches)
    assert all(r["ttl"] is None and r["restored_times"]["created_at"] for r in sent)
    with SQLiteMemoryStore(src) as orig:
        figs = next(r for r in orig.list("memory") if r.content == "Ana grows figs")
    got = next(r for r in sent if r["content"] == "Ana grows figs")
    assert got["restored_times"] == {"created_at": figs.created_at, "expires_at": figs.expires_at}
    assert figs.expires_at is not None
    caller = next(r for r in sent if r["id"] == "caller")
    assert [c["text"] for c in caller["chunks"]] == ["chunk one", "chunk two"]
    assert np.array_equal(np.array(caller["chunks"][1]["vector"], dtype=np.float32),
                          np.array([1e-7, -2.5, 3.0], dtype=np.float32))
    # the export pages were read in seq order, 2 at a time (batch_size), for the comparison
    pages = [c.binds for c in rec.calls if c.name == "oramem_store.export_json"]
    assert pages[0]["in_after_seq"] == 0 and all(p["in_limit"] in (2, 2000) for p in pages)
    assert all(set(c.binds) == set(ADMIN_CALLS["export"].param_names) for c in rec.calls
               if c.name == "oramem_store.export_json")
    # resumed: nothing is written twice, the stored records are counted as skipped
    again = migrate(src, ORACLE, oracle_connect=connect)
    assert again.ok and again.copied_records == 0 and again.skipped_records == 5
    # every connection the migration opened was closed
    assert sum(1 for c in rec.calls if c.kind == "close") >= 2


def test_oracle_to_sqlite_pages_through_export_and_keeps_everything(tmp_path):
    chunks = [{"text": "Ana grows figs", "vector": [1.10000002e+000, 2.20000005e+000, 3.29999995e+000]}]
    base = dict(content=None, timestamp=None, metadata=None, thread_id=None, user_id=None, agent_id=None, role=None,
                created_at="2024-03-01T08:00:00.000000+00:00", expires_at=None)
    rows = [
        {"record": dict(base, id="t1", record_type="thread", thread_id="t1", user_id="ana", seq_no=1), "chunks": None},
        {"record": dict(base, id="m1", record_type="memory", content="Ana grows figs", thread_id="t1", user_id="ana",
                        metadata={"topic": "garden"}, expires_at="2999-01-01T00:00:00.000000+00:00", seq_no=2),
         "chunks": chunks},
        {"record": dict(base, id="g1", record_type="message", content="hello", thread_id="t1", user_id="ana",
                        role="user", timestamp="2025-01-02T03:04:05.000000+00:00", seq_no=5),
         "chunks": [{"text": "hello", "vector": [0.5, -0.25, 0.0]}]},
        {"record": dict(base, id="ana", record_type="user_profile", content="Ana, a gardener", seq_no=9),
         "chunks": [{"text": "Ana, a gardener", "vector": [0.0, 1.0, 0.0]}]},
    ]
    model = OracleModel(rows)
    rec, connect = fake_oracle(model)
    dst = str(tmp_path / "copy.db")
    report = migrate(ORACLE, dst, batch_size=2, oracle_connect=connect)
    assert report.ok, report.stores
    assert report.copied_records == 3 and report.stores[0].records == (3, 3)
    after = [c.binds["in_after_seq"] for c in rec.calls if c.name == "oramem_store.export_json"
             and c.binds["in_limit"] == 2]
    assert after == [0, 2, 9]  # next page after the last seq_no of the previous one
    with SQLiteMemoryStore(dst, vector_dim=3) as copy:
        m1 = copy.get("memory", "m1")
        assert (m1.created_at, m1.expires_at, m1.metadata) == (
            "2024-03-01T08:00:00.000000+00:00", "2999-01-01T00:00:00.000000+00:00", {"topic": "garden"})
        hit, distance = copy.search(query_vector=np.array([1.1, 2.2, 3.3], dtype=np.float32), k=1)[0]
        assert hit.id == "m1" and distance == pytest.approx(0.0, abs=1e-6)
        assert copy.get("message", "g1").role == "user"
        assert [t.id for t in copy.list("thread")] == ["t1"]
        assert copy.get("user_profile", "ana").content == "Ana, a gardener"


def test_n5_oracle_source_pages_read_one_read_only_snapshot(tmp_path):
    """N5: every export page of a store is read in one SET TRANSACTION READ ONLY transaction
    (identity values are drawn at insert, not commit: separate transactions could skip a row
    committed late); nothing ends that transaction between pages."""
    base = dict(content="x", timestamp=None, metadata=None, thread_id=None, user_id=None, agent_id=None, role=None,
                created_at="2024-03-01T08:00:00.000000+00:00", expires_at=None)
    rows = [{"record": dict(base, id=f"m{i}", record_type="memory", seq_no=i), "chunks": None} for i in (1, 2, 3)]
    rec, connect = fake_oracle(OracleModel(rows))
    report = migrate(ORACLE, str(tmp_path / "copy.db"), batch_size=2, oracle_connect=connect)
    assert report.ok and report.copied_records == 3
    seq = [(c.kind, c.name) for c in rec.calls if c.kind in ("execute", "commit", "rollback")
           or c.name == "oramem_store.export_json"]
    starts = [i for i, s in enumerate(seq) if s == ("execute", "SET TRANSACTION READ ONLY")]
    assert starts and all(seq[i - 1][0] == "rollback" for i in starts), "READ ONLY must start the transaction"
    first = seq[starts[0] + 1:]
    run = first[:next((i for i, s in enumerate(first) if s[1] != "oramem_store.export_json"), len(first))]
    # the thread pre-pass (one 2000-row page, then the empty page) and the record pass (pages after
    # 0 and 2, then the empty page) run in the one snapshot, with no commit or rollback between
    assert len(run) == 5 and len(starts) == 1, seq
    assert seq.index(("callfunc", "oramem_store.export_json")) > starts[0], "no page before the snapshot"


# -- issue 28: the copy records the embedder identity its vectors came from ---------------

def _opened_identity(rec):
    return [json.loads(c.binds["in_settings"]).get("embedder") for c in rec.calls
            if c.name == "oramem_admin.open_store"]


def test_a_copy_into_oracle_records_the_sources_identity_with_its_chunking(tmp_path):
    from oramem.embedders.identity import identity_of

    from .test_embedder_identity_fake import _WindowedHash

    src = str(tmp_path / "src.db")
    with SQLiteMemoryStore(src, embedder=_WindowedHash(3), search_strategy="vector") as store:
        store.add(["Ana grows figs"], "memory")
        recorded = store.settings.embedder
    assert recorded == identity_of(_WindowedHash(3)) and recorded["chunking"]["unit"] == "tokens"
    rec, connect = fake_oracle(OracleModel())
    assert migrate(src, ORACLE, oracle_connect=connect).ok
    # sent on the copy's open, so open_store records it on the new store (and refuses another)
    assert _opened_identity(rec) == [recorded]


def test_a_hybrid_copy_records_the_source_identity_and_names_the_in_database_model(tmp_path):
    from .test_embedder_fake import answers

    src = str(tmp_path / "src.db")
    with SQLiteMemoryStore(src, embedder=HashEmbedder(3), search_strategy="hybrid") as store:
        store.add(["Ana grows figs"], "memory")
        recorded = store.settings.embedder
    rec, connect = fake_oracle(OracleModel(), {"search_strategy": "hybrid"})
    rec.answers.update(answers(dim=3))
    assert migrate(src, ORACLE, oracle_connect=connect, oracle_model="ALL_MINILM").ok
    opens = [json.loads(c.binds["in_settings"]) for c in rec.calls if c.name == "oramem_admin.open_store"]
    assert [(o["embedder"], o["embedding_model"]) for o in opens] == [(recorded, "ALL_MINILM")]


def test_a_hybrid_copy_of_a_store_without_identity_records_the_model_without_chunking(tmp_path):
    from oramem.sqlite import admin

    from .test_embedder_fake import answers

    src = str(tmp_path / "src.db")
    with SQLiteMemoryStore(src, embedder=HashEmbedder(3), search_strategy="hybrid") as store:
        store.add(["Ana grows figs"], "memory")
    admin.record_embedder(src, "DEFAULT", None)  # as a store from before identities were recorded
    rec, connect = fake_oracle(OracleModel(), {"search_strategy": "hybrid"})
    rec.answers.update(answers(dim=3))
    assert migrate(src, ORACLE, oracle_connect=connect, oracle_model="ALL_MINILM").ok
    # the copied rows keep the legacy chunking: no policy is recorded for them
    assert _opened_identity(rec) == [{"kind": "oracle-db", "model": "ALL_MINILM", "dimension": 3}]


@pytest.mark.parametrize("kind, kept", [("hash", True), ("oracle-db", False)])
def test_a_sqlite_copy_of_an_oracle_store_keeps_an_identity_it_can_open_with(tmp_path, kind, kept):
    from oramem.sqlite import admin

    identity = ({"kind": "hash", "dimension": 3, "seed": 0} if kind == "hash"
                else {"kind": "oracle-db", "model": "ALL_MINILM", "dimension": 3})
    rows = [{"record": dict(id="m1", record_type="memory", content="figs", timestamp=None, metadata=None,
                            thread_id=None, user_id=None, agent_id=None, role=None,
                            created_at="2024-03-01T08:00:00.000000+00:00", expires_at=None, seq_no=1),
             "chunks": [{"text": "figs", "vector": [1.0, 0.0, 0.0]}]}]
    rec, connect = fake_oracle(OracleModel(rows), {"embedder": identity})
    dst = str(tmp_path / "copy.db")
    assert migrate(ORACLE, dst, oracle_connect=connect).ok
    recorded = admin.list_stores(dst)["DEFAULT"]["embedder"]
    # the in-database model cannot run on SQLite: that copy is opened with the model's local twin
    assert (json.loads(recorded) if recorded else None) == (identity if kept else None)


# -- red26: a subject erased on the source while migrate copies it (SC-14.3, SC-14.4) --------

def _receipt_for(user_id):
    from oramem.trust.erasure import subject_hash

    salt = "5" * 32
    return {"receipt_id": "r-late", "erased_at": "2026-12-02T10:00:01+00:00", "subject": "user",
            "subject_hash": subject_hash(salt, "user", user_id), "salt": salt, "token_hashes": [],
            "verification": {"status": "clean"}}


def test_an_oracle_sources_log_is_read_again_after_its_snapshot_ends(tmp_path):
    """The pages of an Oracle source are one READ ONLY snapshot (N5): a receipt that commits
    while they are read is not in it. The log is read again after the snapshot ended (a
    rollback on the source's connection first), its late receipt copied into the target,
    and the report names the erased user whose rows were copied."""
    base = dict(content="x", timestamp=None, metadata=None, thread_id=None, agent_id=None, role=None,
                created_at="2024-03-01T08:00:00.000000+00:00", expires_at=None)
    rows = [{"record": dict(base, id=f"m{i}", record_type="memory", user_id=u, seq_no=i), "chunks": None}
            for i, u in ((1, "ana"), (2, "bob"), (3, "bob"))]
    rec, connect = fake_oracle(OracleModel(rows))
    reads = []

    def log(call):  # the erasure commits after the first read of the log
        reads.append(call)
        return json.dumps([] if len(reads) == 1 else [_receipt_for("ana")])

    rec.answers["oramem_admin.get_erasure_log_json"] = log
    dst = str(tmp_path / "copy.db")
    report = migrate(ORACLE, dst, batch_size=2, oracle_connect=connect)
    assert len(reads) == 2
    assert report.stores[0].erased_during_copy == {"user": ["ana"], "agent": []}
    assert not report.ok
    from oramem.trust.erasure import erasure_log

    with SQLiteMemoryStore(dst, vector_dim=3) as copy:
        assert [e["receipt_id"] for e in erasure_log(copy)] == ["r-late"]
    # the second read of the log came after the snapshot's end, on the source's connection
    seq = [(c.kind, c.name) for c in rec.calls if c.kind in ("execute", "commit", "rollback")
           or c.name in ("oramem_store.export_json", "oramem_admin.get_erasure_log_json")]
    second = max(i for i, s in enumerate(seq) if s[1] == "oramem_admin.get_erasure_log_json")
    last_page = max(i for i, s in enumerate(seq) if s[1] == "oramem_store.export_json")
    assert last_page < second and any(kind == "rollback" for kind, _ in seq[last_page:second]), seq


def test_a_late_receipt_is_written_into_an_oracle_target_outside_its_read_only_snapshot(tmp_path):
    """SQLite source, Oracle target: the comparison reads the target in a READ ONLY
    transaction (N5), where Oracle refuses a write (ORA-01456); the late receipt's
    log_erasure comes after a rollback on the target's connection, and the target's snapshot
    is ended again before migrate goes on (the next store's copy writes there)."""
    from oramem.migrate import _OracleSide

    src = str(tmp_path / "src.db")
    with SQLiteMemoryStore(src, embedder=HashEmbedder(3), search_strategy="vector") as store:
        store.add(["ana grows figs"], "memory", user_ids="ana")
        store.add(["bob likes tea", "bob likes figs"], "memory", user_ids="bob")
    model = OracleModel()
    rec, connect = fake_oracle(model)
    rec.answers["oramem_admin.get_erasure_log_json"] = "[]"
    rec.answers["oramem_admin.log_erasure"] = None
    done = []

    def progress(copied, total):
        if copied and not done:
            done.append(True)
            with SQLiteMemoryStore(src, embedder=HashEmbedder(3)) as store:
                store.forget(user_id="ana")

    ended = []
    real_end = _OracleSide.end_snapshot

    def end_snapshot(self):
        ended.append(getattr(self, "_snapshot_of", None))
        real_end(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_OracleSide, "end_snapshot", end_snapshot)
        report = migrate(src, ORACLE, batch_size=2, oracle_connect=connect, progress=progress)
    assert report.stores[0].erased_during_copy == {"user": ["ana"], "agent": []}
    seq = [(c.kind, c.name, c.conn) for c in rec.calls if c.kind in ("execute", "commit", "rollback")
           or c.name in ("oramem_admin.log_erasure", "oramem_store.export_json")]
    logged = [i for i, s in enumerate(seq) if s[1] == "oramem_admin.log_erasure"]
    assert logged, seq
    # the comparison read the target in a READ ONLY transaction; a rollback on the target's
    # connection ended it before the write
    starts = [i for i, s in enumerate(seq) if s[:2] == ("execute", "SET TRANSACTION READ ONLY")
              and s[2] == seq[logged[0]][2] and i < logged[0]]
    assert starts, seq
    assert any(s[0] == "rollback" and s[2] == seq[logged[0]][2] for s in seq[max(starts):logged[0]]), seq
    # and the target's snapshot of the subject check is ended too
    assert ended and ended[-1] == "DEFAULT"
