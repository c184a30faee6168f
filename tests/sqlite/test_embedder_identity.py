"""Embedding identity (SC-10.4) and reembed_store on the SQLite engine."""

from __future__ import annotations

from oramem.sqlite._sqlite import sqlite3

import numpy as np
import pytest

from oramem import SQLiteMemoryStore, StoreSettingsMismatch
from oramem.embedders import HashEmbedder
from oramem.embedders.identity import identity_of
from oramem.errors import StoreError
from oramem.sqlite import reembed_store

TEXTS = [f"memory {i}: I like topic {i % 7} and colour {i % 5}" for i in range(23)]


def _open(path, embedder, **kw):
    return SQLiteMemoryStore(str(path), embedder=embedder, schema_policy="CREATE_IF_NECESSARY", **kw)


def _vectors(path, store_id="DEFAULT"):
    conn = sqlite3.connect(str(path))
    try:
        rows = conn.execute(
            f'SELECT c.text, c.vector FROM "om_{store_id}_chunks" c ORDER BY c.chunk_id'
        ).fetchall()
    finally:
        conn.close()
    return {text: np.frombuffer(blob, dtype="<f4") for text, blob in rows}


def test_same_dimension_other_embedder_is_refused(tmp_path):
    db = tmp_path / "s.db"
    with _open(db, HashEmbedder(64, seed=1)) as store:
        store.add(TEXTS[:3], "memory")
        assert store.settings.embedder == {"kind": "hash", "dimension": 64, "seed": 1}
    with pytest.raises(StoreSettingsMismatch) as err:
        _open(db, HashEmbedder(64, seed=2))
    text = str(err.value)
    assert "embedder:" in text and "HashEmbedder(dim=64, seed=1)" in text and "HashEmbedder(dim=64, seed=2)" in text
    assert "embedder=HashEmbedder(64, seed=1)" in text and "oramem reembed" in text
    with pytest.raises(StoreSettingsMismatch, match=r"embedder and vector_dim \(64 stored, 32 asked\)"):
        _open(db, HashEmbedder(32, seed=1))
    # the same embedder, and an open without an embedder, still work
    _open(db, HashEmbedder(64, seed=1)).close()
    SQLiteMemoryStore(str(db)).close()


class _Custom:
    embedding_dimension = 64

    def embed(self, texts, *, is_query=False):
        return HashEmbedder(64, seed=9).embed(texts)


def test_custom_embedder_identity_and_vector_dim_advice(tmp_path):
    db = tmp_path / "s.db"
    with _open(db, _Custom()) as store:
        store.add(["x"], "memory")
        assert store.settings.embedder["kind"] == "python" and store.settings.embedder["class"].endswith("_Custom")
    with pytest.raises(StoreSettingsMismatch, match="_Custom"):
        _open(db, HashEmbedder(64))
    # vector_dim alone (caller-supplied vectors): the dimension advice no longer suggests
    # just any embedder of that dimension
    with pytest.raises(StoreSettingsMismatch, match="would mix two vector spaces"):
        SQLiteMemoryStore(str(db), vector_dim=32)


def test_store_without_identity_adopts_the_first_embedder(tmp_path):
    db = tmp_path / "old.db"
    with _open(db, HashEmbedder(64)) as store:
        store.add(TEXTS[:2], "memory")
    # make it look like a store from before identities: no column at all
    conn = sqlite3.connect(str(db))
    conn.execute("ALTER TABLE oramem_stores DROP COLUMN embedder")
    conn.execute("ALTER TABLE oramem_stores DROP COLUMN reembed_target")
    conn.commit()
    conn.close()
    with SQLiteMemoryStore(str(db)) as store:  # no embedder: nothing adopted
        assert store.settings.embedder is None
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(64, seed=3)) as store:
        assert store.settings.embedder == {"kind": "hash", "dimension": 64, "seed": 3}
    with pytest.raises(StoreSettingsMismatch):
        SQLiteMemoryStore(str(db), embedder=HashEmbedder(64))


def test_reembed_round_trip_changes_model_and_dimension(tmp_path):
    db = tmp_path / "s.db"
    old, new = HashEmbedder(64), HashEmbedder(48, seed=5)
    with _open(db, old) as store:
        store.add(TEXTS, "memory", user_ids="u")
    calls = []
    result = reembed_store(db, new, batch_size=5, progress=lambda d, t: calls.append((d, t)))
    assert (result.rows, result.resumed, result.total, result.vector_dim) == (len(TEXTS), 0, len(TEXTS), 48)
    assert result.previous == identity_of(old) and result.embedder == identity_of(new)
    assert calls[0] == (0, len(TEXTS)) and calls[-1] == (len(TEXTS), len(TEXTS)) and len(calls) >= 6
    vectors = _vectors(db)
    for text, vec in vectors.items():
        np.testing.assert_allclose(vec, new.embed([text])[0], rtol=1e-6)
    with pytest.raises(StoreSettingsMismatch):
        _open(db, old)
    with _open(db, new) as store:
        assert store.vector_dim == 48
        (record, _), = store.search(TEXTS[4], k=1, strategy="VECTOR", user_id="u")
        assert record.content == TEXTS[4]
    conn = sqlite3.connect(str(db))
    assert not conn.execute("SELECT name FROM sqlite_master WHERE name = 'om_DEFAULT_reembed'").fetchall()
    conn.close()


class _Interrupt(Exception):
    pass


def test_reembed_resumes_after_interruption_and_catches_later_writes(tmp_path):
    db = tmp_path / "s.db"
    old, new = HashEmbedder(64), HashEmbedder(64, seed=8)
    with _open(db, old) as store:
        ids = store.add(TEXTS, "memory")

    def stop_after_two_batches(done, total):
        if done >= 10:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        reembed_store(db, new, batch_size=5, progress=stop_after_two_batches)
    # interrupted: the store still answers with the old embedder, its vectors unchanged
    for text, vec in _vectors(db).items():
        np.testing.assert_allclose(vec, old.embed([text])[0], rtol=1e-6)
    with _open(db, old) as store:
        store.add(["written while the reembed was pending"], "memory")
        store.update("memory", ids[0], text="a new text for the first memory")
    # another embedder cannot take over without --restart
    with pytest.raises(StoreError, match="unfinished reembed"):
        reembed_store(db, HashEmbedder(32))
    result = reembed_store(db, new, batch_size=5)
    # the update took the first memory's row out of the work table with its old text (red26):
    # 9 of the 10 copied rows resume, the other 15 rows are embedded by this run
    assert result.resumed == 9 and result.rows == 15 and result.total == len(TEXTS) + 1
    vectors = _vectors(db)
    assert "written while the reembed was pending" in vectors and "a new text for the first memory" in vectors
    for text, vec in vectors.items():
        np.testing.assert_allclose(vec, new.embed([text])[0], rtol=1e-6)
    _open(db, new).close()


def test_reembed_restart_and_bad_input(tmp_path):
    db = tmp_path / "s.db"
    with _open(db, HashEmbedder(64)) as store:
        store.add(TEXTS[:6], "memory")
    with pytest.raises(_Interrupt):
        reembed_store(db, HashEmbedder(32), batch_size=2, progress=lambda d, t: (_ for _ in ()).throw(_Interrupt) if d else None)
    result = reembed_store(db, HashEmbedder(16), restart=True)
    assert result.resumed == 0 and result.vector_dim == 16
    with pytest.raises(ValueError, match="batch_size"):
        reembed_store(db, HashEmbedder(16), batch_size=0)
    with pytest.raises(StoreError, match="no database file"):
        reembed_store(tmp_path / "none.db", HashEmbedder(16))
    with pytest.raises(StoreError, match="no store 'OTHER'"):
        reembed_store(db, HashEmbedder(16), memory_store_id="other")
    kw = tmp_path / "kw.db"
    SQLiteMemoryStore(str(kw), schema_policy="CREATE_IF_NECESSARY", search_strategy="KEYWORD").close()
    with pytest.raises(ValueError, match="no vectors to re-embed"):
        reembed_store(kw, HashEmbedder(16))

    class Broken:
        embedding_dimension = 16

        def embed(self, texts, *, is_query=False):
            return np.full((len(texts), 16), np.nan)

    with pytest.raises(ValueError, match="non-finite"):
        reembed_store(db, Broken(), restart=True)
    with _open(db, HashEmbedder(16)) as store:  # nothing of the broken run was swapped in
        assert store.vector_dim == 16
