"""Files, WAL, :memory:, several stores per file, the catalog and seq_no."""

from __future__ import annotations

from oramem.sqlite._sqlite import sqlite3
import threading

import pytest

from oramem import SchemaPolicy, SQLiteMemoryStore, StoreSettingsMismatch
from oramem.sqlite.schema import SCHEMA_VERSION

from .conftest import DIM, RecordingConnection, vec


def test_file_is_in_wal_mode(store, db_path):
    store.add(["x"], record_type="memory", embeddings=[vec(0)])
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_memory_database_works_and_is_private():
    with SQLiteMemoryStore(":memory:", vector_dim=DIM) as a, SQLiteMemoryStore(":memory:", vector_dim=DIM) as b:
        a.add(["only in a"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
        assert a.get("memory", "m1").content == "only in a"
        assert b.get("memory", "m1") is None
        assert [r.id for r, _ in a.search(query_vector=vec(1), k=3)] == ["m1"]


def test_several_stores_share_a_file(make, db_path):
    one = make(memory_store_id="one")
    two = make(memory_store_id="Two")
    one.add(["a"], record_type="memory", record_ids="same", embeddings=[vec(0)])
    two.add(["b"], record_type="memory", record_ids="same", embeddings=[vec(0)])
    assert one.get("memory", "same").content == "a"
    assert two.get("memory", "same").content == "b"
    assert [r.content for r, _ in two.search(query_vector=vec(0), k=5)] == ["b"]
    with sqlite3.connect(db_path) as conn:
        stores = [row[0] for row in conn.execute("SELECT store_id FROM oramem_stores ORDER BY 1")]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert stores == ["ONE", "TWO"]
    assert {"om_ONE_records", "om_ONE_chunks", "om_TWO_records", "om_TWO_chunks"} <= tables


def test_settings_are_persisted_in_the_catalog(make, db_path):
    make(memory_store_id="S", search_strategy="hybrid", search_index_sync="manual").close()
    with sqlite3.connect(db_path) as conn:
        row = conn.execute(
            "SELECT capability, vector_dim, search_index_sync, schema_version, state FROM oramem_stores"
        ).fetchone()
    assert row == ("hybrid", DIM, "manual", SCHEMA_VERSION, "ready")
    with pytest.raises(StoreSettingsMismatch, match="vector_dim"):
        make(memory_store_id="S", search_strategy="hybrid", vector_dim=DIM * 2)


def test_seq_no_is_monotonic_across_calls_and_types(store):
    store.add(["m1"], record_type="message", record_ids="x1", thread_ids="t", embeddings=[vec(0)])
    store.add(["f"], record_type="fact", record_ids="f1", embeddings=[vec(0)])
    store.add(["m2", "m3"], record_type="message", record_ids=["x2", "x3"], thread_ids="t",
              embeddings=[vec(0), vec(0)])
    seqs = [r.seq_no for r in store.list_thread_messages("t")]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3


def test_batch_size_slices_executemany(store, monkeypatch):
    """200 records with batch_size=64: four executemany slices for records and chunks."""
    db = store._engine._db
    recorder = RecordingConnection(db._conn)
    monkeypatch.setattr(db, "_conn", recorder)
    store.add([f"r{i}" for i in range(200)], record_type="memory", embeddings=[vec(i % DIM) for i in range(200)],
              batch_size=64)
    monkeypatch.setattr(db, "_conn", recorder._conn)
    inserts = [sql for kind, sql in recorder.calls if kind == "executemany" and sql.lstrip().startswith("INSERT")]
    assert sum('"om_DEFAULT_records"' in sql for sql in inserts) == 4
    assert sum('"om_DEFAULT_chunks"' in sql for sql in inserts) == 4
    assert len(store.list("memory", limit=None)) == 200


def test_threads_share_one_engine_safely(store):
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(20):
                store.add([f"w{n}-{i}"], record_type="memory", record_ids=f"w{n}-{i}", embeddings=[vec(n % DIM)])
                store.search(query_vector=vec(n % DIM), k=3)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.list("memory", limit=None)) == 80


def test_require_existing_on_missing_store_in_existing_file(make):
    make(memory_store_id="A").close()
    from oramem import StoreNotFound

    with pytest.raises(StoreNotFound, match="CREATE_IF_NECESSARY"):
        make(memory_store_id="B", schema_policy=SchemaPolicy.REQUIRE_EXISTING)


def test_create_if_empty_refuses_partial_store(make, db_path):
    make(memory_store_id="P").close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("DELETE FROM oramem_stores WHERE store_id = 'P'")
    from oramem import SchemaError

    with pytest.raises(SchemaError, match="CREATE_IF_NECESSARY"):
        make(memory_store_id="P", schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    repaired = make(memory_store_id="P", schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    repaired.add(["ok"], record_type="memory", embeddings=[vec(0)])
