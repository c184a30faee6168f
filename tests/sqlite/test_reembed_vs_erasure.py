"""A reembed running while a user is erased (SC-14.2, SC-13.3). ``reembed_store`` reads a batch
of retrieval rows, embeds them outside any transaction, then saves them with their text in its
work table. ``forget`` deletes the work rows of the chunks it removes; a batch read before
Alice's erasure and saved after it must not put her text back there, where it outlives her
erasure until the reembed finishes (forever, if it is never resumed), and where the
verification counts her words as another live row's. Deterministic: the embedder erases her
while it embeds her row."""

from __future__ import annotations

import pytest

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.sqlite import reembed_store
from oramem.sqlite._sqlite import sqlite3


class _Interrupt(Exception):
    pass


class _ErasingEmbedder(HashEmbedder):
    """Embeds like ``HashEmbedder``; on Alice's text, erases her first (another connection:
    her ``forget`` commits while the reembed holds her row outside any transaction); on
    Bob's, stops the reembed (interrupted, to be resumed later)."""

    def __init__(self, path, *args, **kw):
        super().__init__(*args, **kw)
        self._path = path

    def embed(self, texts):
        if any("zanzibar" in t for t in texts):
            with SQLiteMemoryStore(str(self._path), embedder=HashEmbedder(64)) as other:
                other.forget(user_id="alice")
        if any("bob" in t for t in texts):
            raise _Interrupt
        return super().embed(texts)


def test_a_reembed_does_not_save_text_of_a_user_erased_while_it_ran(tmp_path):
    db = tmp_path / "s.db"
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(64)) as store:
        store.add(["alice keeps her passport in zanzibar"], "memory", user_ids="alice")
        store.add(["bob likes tea"], "memory", user_ids="bob")
    with pytest.raises(_Interrupt):
        reembed_store(db, _ErasingEmbedder(db, 64, seed=8), batch_size=1)
    conn = sqlite3.connect(str(db))
    try:
        work = [r[0] for r in conn.execute("SELECT text FROM \"om_DEFAULT_reembed\"")]
    finally:
        conn.close()
    assert not [t for t in work if "zanzibar" in t], work
    # the reembed resumes and finishes: Bob's row is re-embedded, Alice stays erased
    result = reembed_store(db, HashEmbedder(64, seed=8), batch_size=1)
    assert result.total == 1
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(64, seed=8)) as store:
        assert [r.content for r in store.list("memory")] == ["bob likes tea"]


class _StopOnBob(HashEmbedder):
    """Stops the reembed at Bob's row: Alice's row (the first) is then in the work table."""

    def embed(self, texts):
        if any("bob" in t for t in texts):
            raise _Interrupt
        return super().embed(texts)


def _interrupted(db, alice_ttl_days=None):
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(64)) as store:
        store.add(["alice keeps her passport in zanzibar"], "memory", user_ids="alice",
                  record_ids="a1", thread_ids="t-alice", ttl_days=alice_ttl_days)
        store.add(["bob likes tea"], "memory", user_ids="bob", record_ids="b1")
    with pytest.raises(_Interrupt):
        reembed_store(db, _StopOnBob(64, seed=8), batch_size=1)
    assert any("zanzibar" in t for t in _work_texts(db))  # the setting: her text is in the work table


def _work_texts(db):
    conn = sqlite3.connect(str(db))
    try:
        return [r[0] for r in conn.execute('SELECT text FROM "om_DEFAULT_reembed"')]
    finally:
        conn.close()


def _file_bytes(db):
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


def test_a_profile_cascade_during_an_unfinished_reembed_takes_her_text_out_of_the_work_table(tmp_path):
    # SC-14.1: a profile cascade is an erasure with a receipt, like forget. Before the fix the
    # work table kept her chunk's text (forget swept it, the cascade did not), and the scan
    # counted each of her words as "shared" (a live row held it): a clean receipt over her text.
    from oramem.trust.erasure import erasure_log

    db = tmp_path / "s.db"
    _interrupted(db)
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(64)) as store:
        store.delete("user_profile", "alice", cascade=True)
        (entry,) = erasure_log(store)
    assert not [t for t in _work_texts(db) if "zanzibar" in t]
    assert b"zanzibar" not in _file_bytes(db)
    verification = entry["receipt"]["verification"] if "receipt" in entry else entry["verification"]
    assert verification["status"] == "clean" and verification["tokens_shared"] == 0, verification
    # the resumed reembed finishes with Bob's row only
    assert reembed_store(db, HashEmbedder(64, seed=8), batch_size=1).total == 1


@pytest.mark.parametrize("how", ["delete", "delete_thread", "purge", "update"])
def test_deleting_or_retexting_a_row_during_an_unfinished_reembed_takes_its_text_out_of_the_work_table(tmp_path, how):
    # SC-8.1 / SC-8.3 / SC-5.5 / SC-7: a deleted (or re-texted) retrieval row's text must not
    # outlive it in the work table until a resume that may never come
    import datetime as dt

    db = tmp_path / "s.db"
    _interrupted(db, alice_ttl_days=1 if how == "purge" else None)
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3)
    clock = (lambda: later) if how == "purge" else None
    kw = {"clock": clock} if clock else {}
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(64), **kw) as store:
        if how == "delete":
            assert store.delete("memory", "a1") == 1
        elif how == "delete_thread":
            assert store.delete_thread("t-alice") == 1
        elif how == "purge":
            store.purge_expired()  # (the open purged her expired record already)
        else:
            assert store.update("memory", "a1", text="alice moved") == 1
    conn = sqlite3.connect(str(db))
    try:
        ids = sorted(r[0] for r in conn.execute('SELECT id FROM "om_DEFAULT_records" WHERE record_type = \'memory\''))
    finally:
        conn.close()
    assert ids == (["a1", "b1"] if how == "update" else ["b1"])  # the row is gone (or re-texted)
    assert not [t for t in _work_texts(db) if "zanzibar" in t]
    result = reembed_store(db, HashEmbedder(64, seed=8), batch_size=1)
    assert result.total == (2 if how == "update" else 1)
