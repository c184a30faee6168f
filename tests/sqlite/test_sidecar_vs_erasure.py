"""A vector sidecar written from a snapshot taken before a user's erasure must not land after
it (SC-14.2: the sidecar holds vectors and the scope code table, the erased user's id among
them). Bob's process loads its vector cache in a read transaction and writes the sidecar in
it; Alice's ``forget`` (another connection) commits meanwhile and removes the sidecar. Before,
it removed the file right after its commit, so Bob's rename, later, put back a snapshot with
her id and vectors. The erasure now removes the file after its TRUNCATE checkpoint, which
waits for every reader of an older snapshot (and so for a sidecar write inside one).
Deterministic: Bob's sidecar write waits until Alice's erasure has committed."""

from __future__ import annotations

import os
import threading

from oramem import SQLiteMemoryStore
from oramem.sqlite import sidecar

from .conftest import DIM, vec


def _committed(path: str) -> bool:
    from oramem.sqlite._sqlite import sqlite3

    conn = sqlite3.connect(path)
    try:
        return not conn.execute('SELECT 1 FROM "om_DEFAULT_records" WHERE user_id = ?', ("alice-77",)).fetchone()
    finally:
        conn.close()


def test_a_sidecar_from_before_an_erasure_does_not_land_after_it(tmp_path, monkeypatch):
    db = str(tmp_path / "s.db")
    with SQLiteMemoryStore(db, vector_dim=DIM) as setup:
        setup.add(["alice's"], "memory", user_ids="alice-77", embeddings=[vec(1)])
        setup.add(["bob's"], "memory", user_ids="bob", embeddings=[vec(2)])
    sidecar.remove(db, "DEFAULT")
    monkeypatch.setattr("oramem.sqlite.engine.SQLiteEngine._ERASURE_CHECKPOINT_WAIT_S", 120.0)
    real_write = sidecar.write
    erasing = threading.Thread(target=lambda: SQLiteMemoryStore(db, vector_dim=DIM).forget(user_id="alice-77"))

    def write(*args, **kwargs):
        # Bob's cache holds Alice's rows (read before her erasure); her erasure commits now
        erasing.start()
        while erasing.is_alive() and not _committed(db):
            erasing.join(0.01)
        return real_write(*args, **kwargs)

    monkeypatch.setattr(sidecar, "write", write)
    bob = SQLiteMemoryStore(db, vector_dim=DIM)
    try:
        assert [r.user_id for r, _ in bob.search(query_vector=vec(2), k=2)] == ["bob", "alice-77"]
    finally:
        monkeypatch.setattr(sidecar, "write", real_write)
        erasing.join()
        bob.close()
    path = sidecar.sidecar_path(db, "DEFAULT")
    assert not (os.path.exists(path) and b"alice-77" in open(path, "rb").read())
