"""Keyword passages on a live Oracle database (issue 23): a HYBRID store whose rows a
client-side embedder with a token window chunks writes each record's passages to
``OM_<ID>_KWP`` (fewer than its rows), ranks them in the keyword leg as the SQLite engine
ranks its keyword rows (the same first record), keeps them with the rows through an update,
a delete and the erasure scan, and the 3 -> 4 step gives the records of an older store one
passage per row. Oracle-marked: skipped, with the reason printed, when no Oracle database or
no in-database ONNX model is available (conftest.py). Written without a database:
static-checked, not run against Oracle."""

from __future__ import annotations

import json

import pytest

from oramem import SchemaPolicy, SearchStrategy
from oramem.chunking import KEYWORD_ROW_CHARS, keyword_passages
from oramem.cli.selftest import PASSAGE_WORDS, PassageEmbedder, passage_records

pytestmark = pytest.mark.oracle


def _oracle(conn, store_id, model, policy=SchemaPolicy.CREATE_IF_NECESSARY):
    from oramem import OracleDBEmbedder
    from oramem.oracle.sync_engine import SyncOracleEngine
    from oramem.store import OracleMemoryStore

    dim = OracleDBEmbedder(conn, model).embedding_dimension
    return OracleMemoryStore(SyncOracleEngine(conn, embedding_model=model), embedder=PassageEmbedder(dim),
                             schema_policy=policy, memory_store_id=store_id, search_strategy=SearchStrategy.HYBRID)


def _rows(conn, store_id, table, record_id):
    with conn.cursor() as cur:
        column = "passage_text" if table == "KWP" else "chunk_text"
        cur.execute(f'SELECT chunk_no, {column} FROM "OM_{store_id}_{table}" WHERE record_id = :i ORDER BY chunk_no',
                    i=record_id)
        return [(int(n), t.read() if hasattr(t, "read") else t) for n, t in cur.fetchall()]


def test_the_passages_are_the_sqlite_engines_and_rank_first_alike(conn, store_id, onnx_model):
    from oramem import SQLiteMemoryStore

    ora = _oracle(conn, store_id, onnx_model)
    lite = SQLiteMemoryStore(":memory:", embedder=PassageEmbedder(ora.settings.vector_dim),
                             search_strategy=SearchStrategy.HYBRID)
    texts, ids = passage_records()
    for store in (ora, lite):
        store.add(texts, "memory", record_ids=ids)
    rows = _rows(conn, store_id, "CHK", "st-whole")
    passages = _rows(conn, store_id, "KWP", "st-whole")
    expected = keyword_passages([t for _, t in rows], KEYWORD_ROW_CHARS)
    assert passages == [(i + 1, p) for i, p in enumerate(expected) if p is not None]
    assert 0 < len(passages) < len(rows)
    query = " ".join(PASSAGE_WORDS)
    first = [r.id for r, _ in ora.search(query, k=3, strategy="keyword")][:1]
    assert first == [r.id for r, _ in lite.search(query, k=3, strategy="keyword")][:1] == ["st-whole"]
    lite.close()


def test_an_update_and_a_delete_keep_the_passages_those_of_the_rows(conn, store_id, onnx_model):
    store = _oracle(conn, store_id, onnx_model)
    texts, ids = passage_records()
    store.add(texts[:1], "memory", record_ids=ids[:1])
    store.update("memory", "st-whole", text="a short text now")
    assert _rows(conn, store_id, "KWP", "st-whole") == [(1, "a short text now")]
    store.delete("memory", "st-whole")
    assert _rows(conn, store_id, "KWP", "st-whole") == []


def test_the_erasure_scan_reads_the_passages(conn, store_id, onnx_model):
    import oracledb

    store = _oracle(conn, store_id, onnx_model)
    texts, ids = passage_records()
    store.add(texts[:1], "memory", record_ids=ids[:1])
    with conn.cursor() as cur:
        out = cur.callfunc("oramem_admin.erasure_scan_json", oracledb.DB_TYPE_CLOB,
                           keyword_parameters={"in_store_id": store_id, "in_tokens": json.dumps(["zanzibar"])})
        scan = json.loads(out.read())
    assert f"table:OM_{store_id}_KWP" in scan["scanned"] and f"text-index:OM_{store_id}_KTX" in scan["scanned"]
    assert f"table:OM_{store_id}_KWP" in scan["found"]["zanzibar"]


def test_the_3_to_4_step_gives_older_records_one_passage_per_row(conn, store_id, onnx_model):
    store = _oracle(conn, store_id, onnx_model)
    texts, ids = passage_records()
    store.add(texts[:1], "memory", record_ids=ids[:1])
    with conn.cursor() as cur:  # as schema version 3 left it: no passage table, no index
        cur.execute(f'DROP INDEX "OM_{store_id}_KTX" FORCE')
        cur.execute(f'DROP TABLE "OM_{store_id}_KWP" PURGE')
        cur.execute("UPDATE oramem_stores SET schema_version = 3 WHERE memory_store_id = :s", s=store_id)
    conn.commit()
    reopened = _oracle(conn, store_id, onnx_model)
    rows = _rows(conn, store_id, "CHK", "st-whole")
    assert _rows(conn, store_id, "KWP", "st-whole") == rows   # one passage per row
    first = [r.id for r, _ in reopened.search(" ".join(PASSAGE_WORDS), k=1, strategy="keyword")]
    assert first == ["st-whole"]


def test_bobs_search_never_ranks_alices_passages(conn, store_id, onnx_model):
    """B vs A (SC-13.1) on a grouping store: Alice's long record is the keyword leg's best
    match for the words, and Bob's keyword and hybrid searches never return it."""
    store = _oracle(conn, store_id, onnx_model)
    texts, ids = passage_records()
    store.add(texts[:1], "memory", record_ids=ids[:1], user_ids="alice")
    store.add(["bob keeps a short note about groceries"], "memory", record_ids=["bob-1"], user_ids="bob")
    query = " ".join(PASSAGE_WORDS)
    assert [r.id for r, _ in store.search(query, k=3, strategy="keyword", user_id="alice")][:1] == ["st-whole"]
    for strategy in ("keyword", "hybrid"):
        got = [r.id for r, _ in store.search(query, k=10, strategy=strategy, user_id="bob")]
        assert "st-whole" not in got, strategy
