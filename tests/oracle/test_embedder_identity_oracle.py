"""The embedder identity on a live Oracle database (issue 28; catalog version 5): recorded
when a store is created, another embedder refused before anything changes, the same one
accepted, a store from before the upgrade keeps the legacy chunking when it holds rows, and
a new store's rows are the embedder's windows. Oracle-marked: skipped, with the reason
printed, when no Oracle database is available (conftest.py). Written without a database:
static-checked, not run against Oracle."""

from __future__ import annotations

import json
import re

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy, StoreSettingsMismatch
from oramem.chunking import chunk_text, policy_for
from oramem.embedders import HashEmbedder
from oramem.embedders.base import InputWindow, input_window
from oramem.embedders.identity import MOVE_ORACLE, identity_of, mismatch_message

pytestmark = pytest.mark.oracle


def _words(text):
    return [m.span() for m in re.finditer(r"\S+", text)]


class _WindowedHash(HashEmbedder):
    input_window = InputWindow(max_tokens=254, spans=_words, tokenizer="t")


def _store(pool, store_id, embedder, policy=SchemaPolicy.CREATE_IF_NECESSARY):
    return OracleDBMemoryStore(embedder, pool, memory_store_id=store_id, schema_policy=policy)


def _recorded(conn, store_id):
    with conn.cursor() as cur:
        cur.execute("SELECT embedder FROM oramem_stores WHERE memory_store_id = :s", s=store_id)
        value = cur.fetchone()[0]
    text = value.read() if hasattr(value, "read") else value
    return None if text is None else json.loads(text)


def _chunks(conn, store_id, record_id):
    with conn.cursor() as cur:
        cur.execute(f'SELECT chunk_text FROM "OM_{store_id}_CHK" WHERE record_id = :r ORDER BY chunk_no',  # test id
                    r=record_id)
        return [(r[0].read() if hasattr(r[0], "read") else r[0]) for r in cur]


def test_the_catalog_is_at_version_5_with_the_column(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT version FROM oramem_schema_version WHERE component = 'CATALOG'")
        assert cur.fetchone()[0] >= 5
        cur.execute("SELECT COUNT(*) FROM user_tab_columns WHERE table_name = 'ORAMEM_STORES' "
                    "AND column_name = 'EMBEDDER'")
        assert cur.fetchone()[0] == 1


def test_recorded_on_create_refused_for_another_accepted_for_the_same(pool, conn, store_id):
    built = HashEmbedder(8, seed=0)
    _store(pool, store_id, built).close()
    assert _recorded(conn, store_id) == identity_of(built)
    other = HashEmbedder(8, seed=1)
    with pytest.raises(StoreSettingsMismatch) as info:
        _store(pool, store_id, other)
    assert str(info.value) == mismatch_message(store_id, identity_of(built), identity_of(other), MOVE_ORACLE)
    assert _recorded(conn, store_id) == identity_of(built)  # nothing changed
    _store(pool, store_id, HashEmbedder(8, seed=0), SchemaPolicy.REQUIRE_EXISTING).close()


def test_a_new_store_chunks_to_the_embedders_window(pool, conn, store_id):
    embedder = _WindowedHash(8)
    store = _store(pool, store_id, embedder)
    text = " ".join(f"w{i}" for i in range(600))
    store.add([text], "memory", record_ids="a")
    assert _chunks(conn, store_id, "a") == policy_for(input_window(embedder)).split(text, _words)


def test_a_store_from_before_the_upgrade_with_rows_keeps_the_legacy_chunking(pool, conn, store_id):
    store = OracleDBMemoryStore(None, pool, memory_store_id=store_id, vector_dim=8,
                                schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    import numpy as np

    store.add(["old"], "memory", record_ids="old", embeddings=[np.ones(8, dtype=np.float32)])
    assert _recorded(conn, store_id) is None  # opened without an embedder: nothing recorded
    store = _store(pool, store_id, _WindowedHash(8), SchemaPolicy.REQUIRE_EXISTING)
    assert "chunking" not in _recorded(conn, store_id)  # adopted without a policy: it holds rows
    text = " ".join(f"w{i}" for i in range(600))
    store.add([text], "memory", record_ids="new")
    assert _chunks(conn, store_id, "new") == chunk_text(text)
