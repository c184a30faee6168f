"""SC-8.5 [ext] (del48): a deletion hook of a delete, cascade or purge may return a tuple of
``RecordRewrite``s that the SQLite engine applies in the deleting transaction, to the records of
the named owner only."""

from __future__ import annotations

import numpy as np

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.requests import RecordRewrite


def _store(tmp_path):
    return SQLiteMemoryStore(str(tmp_path / "r.db"), embedder=HashEmbedder(64), search_strategy="hybrid")


def test_a_hook_rewrites_and_deletes_records_of_their_owner_only(tmp_path):
    store = _store(tmp_path)
    try:
        store.add(["Room 12: code is KUMQUAT4471\nRoom 12: blue door"], "message", record_ids=["e1"], agent_ids="desk",
                  user_ids="alice", thread_ids="t1")
        store.add(["Room 9: code is MANGO5150"], "message", record_ids=["e2"], agent_ids="desk", user_ids="alice", thread_ids="t1")
        store.add(["Bob's note"], "message", record_ids=["e3"], agent_ids="desk", user_ids="bob", thread_ids="t2")
        store.add(["a fact"], "fact", record_ids=["f1"], agent_ids="desk", user_ids="alice")

        def hook(conn, event):
            if ("fact", "f1") not in event.records:
                return None
            return (RecordRewrite("message", "e1", "desk", "alice", "Room 12: blue door"),
                    RecordRewrite("message", "e2", "desk", "alice", None),
                    RecordRewrite("message", "e3", "desk", "alice", None))  # not Bob's record: his stays

        store.register_deletion_hook(hook)
        old = store.embedder.embed(["Room 12: code is KUMQUAT4471\nRoom 12: blue door"])[0]
        assert store.delete("fact", "f1") == 1
        assert store.get("message", "e1").content == "Room 12: blue door"
        assert store.get("message", "e2") is None and store.get("message", "e3").content == "Bob's note"
        # no vector of the old text: its one retrieval row holds the new text, without a vector
        hits = store.search(query_vector=np.asarray(old), k=5, record_types=["message"], strategy="vector")
        assert "e1" not in [r.id for r, _ in hits]
        assert [r.id for r, _ in store.search("KUMQUAT4471", k=5, record_types=["message"], strategy="keyword")] == []
        assert [r.id for r, _ in store.search("blue door", k=5, record_types=["message"], strategy="keyword")] == ["e1"]
    finally:
        store.close()

