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
