"""SC-8.6 across store objects: after Alice's ``forget`` (through one store object, or
another process) her id is in no byte of the database's files. Another store object on the
same file whose vector cache held her rows reloads the cache at its next search (the catalog
moved on) and writes a fresh vector sidecar from it; the reload kept the cache's scope-code
table, which names every actor whose rows the cache ever held, and the sidecar saves the
whole table: her id came back on disk in Bob's next search. Fails before the fix
(``VectorCache.load`` starts a new code table)."""

from __future__ import annotations

import threading

from oramem import SQLiteMemoryStore
from oramem.testing import HashEmbedder

ALICE, BOB = "alice-5e1d07", "bob-90aa3c"


def _open(path):
    return SQLiteMemoryStore(str(path), embedder=HashEmbedder(32))


def test_a_cache_reloaded_after_another_objects_erasure_writes_no_id_of_hers(tmp_path):
    db = tmp_path / "c.db"
    with _open(db) as store, _open(db) as other:
        store.add(["Alice drinks green tea"], "memory", user_ids=ALICE, agent_ids="desk")
        store.add(["Bob drinks black coffee"], "memory", user_ids=BOB, agent_ids="desk")
        assert store.search("tea", user_id=ALICE)  # the cache holds her rows
        t = threading.Thread(target=lambda: other.forget(user_id=ALICE))  # another caller erases her
        t.start()
        t.join()
        assert [r.user_id for r, _ in store.search("coffee")] == [BOB]  # the reload writes a new sidecar
        sidecars = [p for p in tmp_path.iterdir() if p.name.endswith("oramem-vectors")]
        assert sidecars, "the search wrote a vector sidecar (what this test reads)"
        for path in tmp_path.iterdir():
            assert ALICE.encode() not in path.read_bytes(), path.name
    for path in tmp_path.iterdir():
        assert ALICE.encode() not in path.read_bytes(), path.name
