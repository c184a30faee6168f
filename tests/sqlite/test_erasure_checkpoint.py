"""An erasure's TRUNCATE checkpoint when another connection is checkpointing
(``SQLiteEngine._after_erasure``).

SQLite answers a checkpoint "busy" at once, without the busy handler, while another connection
runs one (another store object on the file, another process: their automatic checkpoints):
observed with SQLite 3.40.1 and 3.50.4, a TRUNCATE checkpoint returned (1, -1, -1) after 0.2 ms
while another connection's PASSIVE one copied 20,000 pages. The connection below gives that
answer on demand, so the tests do not depend on winning a race.
``forget`` retries for a moment, so the erased pages still leave the WAL, and says so when the
checkpoint stays busy."""

from __future__ import annotations

import warnings

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder


def _write(store: SQLiteMemoryStore, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        store.add([f"note {i} about the garden and the weather"], "memory", user_ids="ana")


class _BusyCheckpoints:
    """The store's connection, except that its first ``times`` TRUNCATE checkpoints answer
    "busy" at once, as SQLite does while another connection runs a checkpoint."""

    def __init__(self, conn, times: int) -> None:
        self._conn = conn
        self.times = times
        self.tries = 0

    def execute(self, sql, *args):
        if "wal_checkpoint(TRUNCATE)" in sql:
            self.tries += 1
            if self.times:
                self.times -= 1
                return self._conn.execute("SELECT 1, -1, -1")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def _erase_alice_through(tmp_path, times: int, monkeypatch, wait_s: float):
    from oramem.sqlite.engine import SQLiteEngine

    monkeypatch.setattr(SQLiteEngine, "_ERASURE_CHECKPOINT_WAIT_S", wait_s)
    path = str(tmp_path / "m.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(64))
    _write(store, 10)
    store.add(["alice's secret diary entry zqxjkvw"], "memory", user_ids="alice")
    db = store.engine.database
    busy = _BusyCheckpoints(db._conn, times)
    db._conn = busy
    return store, path, busy


def test_an_erasure_retries_a_checkpoint_another_connection_made_busy(tmp_path, monkeypatch):
    store, path, busy = _erase_alice_through(tmp_path, 2, monkeypatch, wait_s=5.0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            store.forget(user_id="alice")
        assert busy.tries == 3  # two busy answers, then the checkpoint
        with open(path + "-wal", "rb") as fh:
            assert b"zqxjkvw" not in fh.read()
        assert len(store.list("memory", user_id="ana", limit=None)) == 10  # another user's records stay
        assert store.list("memory", user_id="alice", limit=None) == []
    finally:
        store.engine.database._conn = busy._conn
        store.close()


def test_an_erasure_says_so_when_the_checkpoint_stays_busy(tmp_path, monkeypatch):
    store, path, busy = _erase_alice_through(tmp_path, 10_000, monkeypatch, wait_s=0.1)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store.forget(user_id="alice")
        assert any("could not be checkpointed" in str(w.message) for w in caught)
        assert busy.tries >= 2
    finally:
        store.engine.database._conn = busy._conn
        store.close()
