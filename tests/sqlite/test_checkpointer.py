"""WAL checkpoints on a thread of their own (``oramem.sqlite.connection.Checkpointer``).

A commit no longer copies the WAL into the database file when it crosses SQLite's automatic
threshold: a background connection runs PASSIVE checkpoints every few commits. These tests
check that it does the work (with the automatic checkpoint switched off, the WAL still stays
small), that an erasure's TRUNCATE checkpoint waits for a running one, that the thread ends
with the store (and with a store nobody closed), and that no thread starts for a read-only
store or an in-memory one."""

from __future__ import annotations

import gc
import os
import threading
import time
import warnings

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.sqlite.connection import Checkpointer


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "oramem-checkpoint"]


def _wal_frames(path: str) -> int:
    """Frames in the WAL now (a PASSIVE checkpoint of another connection reports them)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    finally:
        conn.close()


def _write(store: SQLiteMemoryStore, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        store.add([f"note {i} about the garden and the weather"], "memory", user_ids="ana")


def test_the_background_thread_checkpoints_the_wal_when_commits_do_not(tmp_path):
    path = str(tmp_path / "m.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(64))
    try:
        db = store.engine.database
        db.conn.execute("PRAGMA wal_autocheckpoint=0")  # the commits themselves never checkpoint now
        _write(store, 120)
        checkpointer = db.checkpointer
        assert isinstance(checkpointer, Checkpointer)
        deadline = time.monotonic() + 10
        while checkpointer.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert checkpointer.runs > 0
        assert len(_checkpoint_threads()) >= 1
    finally:
        store.close()


def test_without_the_thread_the_wal_keeps_every_frame(tmp_path):
    """The control of the test above: the same writes with the automatic checkpoint off and no
    background thread leave every frame in the WAL (so the test above can fail)."""
    path = str(tmp_path / "m.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(64))
    try:
        db = store.engine.database
        db.conn.execute("PRAGMA wal_autocheckpoint=0")
        db.checkpointer.close()  # stopped before it ever ran
        _write(store, 120)
        assert db.checkpointer.runs == 0
        assert _wal_frames(path) > 120  # at least one frame per commit, none copied back
    finally:
        store.close()


def test_an_erasure_waits_for_a_running_background_checkpoint(tmp_path):
    path = str(tmp_path / "m.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(64))
    try:
        _write(store, 10)
        store.add(["alice's secret diary entry zqxjkvw"], "memory", user_ids="alice")
        checkpointer = store.engine.database.checkpointer
        held = threading.Event()
        release = threading.Event()

        def running_checkpoint():
            with checkpointer.quiet():  # what a running checkpoint holds
                held.set()
                release.wait(10)

        t = threading.Thread(target=running_checkpoint)
        t.start()
        held.wait(10)
        threading.Timer(0.3, release.set).start()
        started = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "the WAL could not be checkpointed" would be an error here
            store.forget(user_id="alice")
        waited = time.monotonic() - started
        t.join(10)
        assert waited >= 0.25, waited  # the TRUNCATE checkpoint waited for the running one
        with open(path + "-wal", "rb") as fh:  # and then emptied the WAL of her words
            assert b"zqxjkvw" not in fh.read()
    finally:
        store.close()


def test_closing_the_store_ends_the_thread_and_removes_the_wal(tmp_path):
    path = str(tmp_path / "m.db")
    before = set(_checkpoint_threads())
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(64))
    _write(store, 40)
    mine = set(_checkpoint_threads()) - before
    assert mine  # started by the commits
    store.close()
    assert not any(t.is_alive() for t in mine)
    assert not os.path.exists(path + "-wal")  # the store's connection closed last and removed it


def test_a_store_nobody_closes_ends_its_thread_when_collected(tmp_path):
    path = str(tmp_path / "m.db")
    before = set(_checkpoint_threads())
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(64))
    _write(store, 40)
    mine = set(_checkpoint_threads()) - before
    assert mine
    del store
    gc.collect()
    deadline = time.monotonic() + 10
    while any(t.is_alive() for t in mine) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.is_alive() for t in mine)


def test_no_thread_for_an_in_memory_or_a_read_only_store(tmp_path):
    memory = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(64))
    try:
        _write(memory, 20)
        assert memory.engine.database.checkpointer is None
    finally:
        memory.close()
    path = str(tmp_path / "m.db")
    SQLiteMemoryStore(path, embedder=HashEmbedder(64)).close()
    reader = SQLiteMemoryStore(path, embedder=HashEmbedder(64), read_only=True)
    try:
        assert reader.engine.database.checkpointer is None
    finally:
        reader.close()


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
