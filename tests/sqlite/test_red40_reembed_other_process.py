"""red40: a long-lived process after another process moved the store to another embedder.

Bob's API worker opened the store with the embedder it was built with and searched (its
vector cache is warm). The operator then runs ``reembed`` in another process: every vector is
now of the new embedder, and the catalog records it. An open with the old embedder is refused
(SC-10.4, test_embedder_identity.py); the worker that opened before kept going: its searches
scored its old-space query against new-space vectors (ranks and distances of nothing), and
its adds wrote old-space vectors into the new space (his new record was then lost to every
search by the new embedder, and in a same-dimension move nothing said so). Its vector search,
and its writes of vectors, are now refused with a StoreSettingsMismatch naming both embedders
and what to open the store with; nothing is written. What needs no embedder (keyword search,
list, get, delete) still works. Real subprocess for the reembed; sequential steps, no sleeps."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from oramem import PendingRecordBatch, SQLiteMemoryStore, StoreSettingsMismatch
from oramem.embedders import HashEmbedder

ALICE, BOB = "alice-r40", "bob-r40"

_REEMBED = (
    "import sys; from oramem.sqlite import reembed_store; from oramem.embedders import HashEmbedder; "
    "r = reembed_store(sys.argv[1], HashEmbedder(dim=int(sys.argv[2]), seed=int(sys.argv[3]))); print(r.rows)"
)


def _reembed_in_another_process(db, dim: int, seed: int) -> None:
    out = subprocess.run([sys.executable, "-c", _REEMBED, str(db), str(dim), str(seed)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


def _seed(db):
    store = SQLiteMemoryStore(str(db), embedder=HashEmbedder(dim=32, seed=0), search_strategy="hybrid")
    store.add(["alice takes warfarin for her heart"], "memory", record_ids="a-1", user_ids=ALICE)
    store.add(["bob likes steam trains", "bob rides the night train"], "memory", record_ids=["b-1", "b-2"],
              user_ids=BOB)
    return store


@pytest.mark.parametrize("dim", [32, 48], ids=["same-dimension", "other-dimension"])
def test_a_process_opened_before_another_process_reembeds_refuses_vector_work(tmp_path, dim):
    db = tmp_path / "m.db"
    bob = _seed(db)  # Bob's long-lived process: opened, searched, cache warm
    assert [r.id for r, _ in bob.search("steam trains", k=1, user_id=BOB, strategy="vector")] == ["b-1"]

    _reembed_in_another_process(db, dim, seed=7)

    with pytest.raises(StoreSettingsMismatch) as err:
        bob.search("steam trains", k=2, user_id=BOB, strategy="vector")
    text = str(err.value)
    assert "HashEmbedder(dim=32, seed=0)" in text and f"HashEmbedder(dim={dim}, seed=7)" in text
    assert "open" in text and "new store object" in text
    with pytest.raises(StoreSettingsMismatch):
        bob.search("steam trains", k=2, user_id=BOB, strategy="hybrid")
    with pytest.raises(StoreSettingsMismatch, match="nothing was written"):
        bob.add(["bob now likes diesel trains"], "memory", record_ids="b-3", user_ids=BOB)
    with pytest.raises(StoreSettingsMismatch, match="nothing was written"):
        bob.update("memory", "b-2", text="bob rides the morning train")
    with pytest.raises(StoreSettingsMismatch, match="nothing was written"):  # the async twins too
        asyncio.run(bob.add_async(["bob now likes diesel trains"], "memory", record_ids="b-3", user_ids=BOB))
    with pytest.raises(StoreSettingsMismatch, match="nothing was written"):
        asyncio.run(bob.update_async("memory", "b-2", text="bob rides the morning train"))
    with pytest.raises(StoreSettingsMismatch, match="nothing was searched"):
        asyncio.run(bob.search_async("steam trains", k=2, user_id=BOB, strategy="vector"))
    with pytest.raises(StoreSettingsMismatch, match="nothing was written"):  # a restore embeds its lines too
        bob.restore_batches([PendingRecordBatch(["bob restored"], "memory", record_ids=["b-5"], user_ids=BOB)])

    # what needs no embedder still works in the same process
    assert [r.id for r, _ in bob.search("steam", k=2, user_id=BOB, strategy="keyword")] == ["b-1"]
    assert sorted(r.id for r in bob.list("memory", user_id=BOB)) == ["b-1", "b-2"]
    assert bob.get("memory", "b-2").content == "bob rides the night train"
    bob.close()

    # nothing of the refused writes landed; the new embedder finds Bob's records as stored
    with SQLiteMemoryStore(str(db), embedder=HashEmbedder(dim=dim, seed=7)) as fresh:
        assert fresh.get("memory", "b-3") is None and fresh.get("memory", "b-5") is None
        assert fresh.get("memory", "b-2").content == "bob rides the night train"
        hits = fresh.search("bob rides the night train", k=3, user_id=BOB, strategy="vector")
        assert hits[0][0].id == "b-2" and hits[0][1] < 1e-6


def test_vectors_the_caller_gives_are_not_refused_after_a_reembed(tmp_path):
    """The refusal is about what this object's embedder made: one that opened after the move,
    one opened with vector_dim and no embedder, and the stale object itself given the caller's
    own vectors (``query_vector``, ``embeddings``: the caller's to match, SC-10.4) all work.
    (An open with neither embedder nor vector_dim adopts the recorded embedder: checked.)"""
    db = tmp_path / "m.db"
    stale = _seed(db)
    bare = SQLiteMemoryStore(str(db), vector_dim=32)  # no embedder: keyword and caller vectors only
    adopted = SQLiteMemoryStore(str(db))  # adopts HashEmbedder(32, seed=0), recorded
    _reembed_in_another_process(db, 32, seed=7)
    new = HashEmbedder(dim=32, seed=7)
    with SQLiteMemoryStore(str(db), embedder=new) as after:
        after.add(["bob now likes diesel trains"], "memory", record_ids="b-3", user_ids=BOB)
        assert after.search("diesel trains", k=1, user_id=BOB, strategy="vector")[0][0].id == "b-3"
    vec = new.embed(["diesel trains"], is_query=True)[0]
    assert bare.search(query_vector=vec, k=1, user_id=BOB, strategy="vector")[0][0].id == "b-3"
    assert stale.search(query_vector=vec, k=1, user_id=BOB, strategy="vector")[0][0].id == "b-3"
    stale.add(["bob sold his bike"], "memory", record_ids="b-4", user_ids=BOB,
              embeddings=new.embed(["bob sold his bike"]))
    with pytest.raises(StoreSettingsMismatch, match="nothing was searched"):
        adopted.search("diesel trains", k=1, user_id=BOB, strategy="vector")
    for store in (bare, adopted, stale):
        store.close()
    with SQLiteMemoryStore(str(db), embedder=new) as after:
        assert after.search("bob sold his bike", k=1, user_id=BOB, strategy="vector")[0][0].id == "b-4"
