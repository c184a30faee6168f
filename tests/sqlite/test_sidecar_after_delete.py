"""A deleted record's vector must not stay in the files beside the database (red26). The
vector sidecar and the HNSW index files hold every retrieval row's vector (float32, as the
database held it); the database zeroes a deleted row's pages (``secure_delete``), ``forget``
removes the sidecar. A ``delete``, ``delete_thread``, TTL purge or re-texting ``update`` in
a process that had not loaded the vector cache (``oramem delete``, a writer that never
searches) left the snapshot as it was: Alice's vector stayed in the sidecar (and the HNSW
files) until some later process searched the store and replaced it. A stale snapshot is
never used (its change counter no longer matches), so removing it costs nothing: the next
reader rebuilds it either way."""

from __future__ import annotations

import os

import numpy as np
import pytest

from oramem import SQLiteMemoryStore

from .conftest import DIM, FakeClock

_RNG = np.random.default_rng(26)
_ALICE = _RNG.normal(size=DIM)
_BOBS = _RNG.normal(size=(12, DIM))


def _needle() -> bytes:
    """Alice's vector as a snapshot stores it: float32, unit length (as the cache divides it)."""
    row = _ALICE.astype("<f4")[None, :]
    norm = np.sqrt(np.einsum("ij,ij->i", row, row, dtype=np.float64))[:, None]
    np.divide(row, norm, out=row)
    return row.tobytes()


def _files_with_her_vector(db_path: str) -> list[str]:
    folder, name = os.path.split(db_path)
    found = []
    for entry in sorted(os.listdir(folder)):
        if entry.startswith(name) and entry != name:  # the database itself zeroes freed pages
            with open(os.path.join(folder, entry), "rb") as f:
                if _needle() in f.read():
                    found.append(entry)
    return found


def _open(db_path, clock, approximate=False):
    kw = {}
    if approximate:
        from oramem.ann import AnnConfig

        kw["approximate_search"] = AnnConfig(min_rows=0)
    return SQLiteMemoryStore(db_path, vector_dim=DIM, clock=clock, **kw)


def _scenario(db_path, how, approximate=False):
    clock = FakeClock()
    with _open(db_path, clock, approximate) as store:
        store.add(["alice's passport"], "memory", record_ids="a1", user_ids="alice", thread_ids="t-alice",
                  embeddings=[_ALICE.tolist()], ttl_days=1 if how == "purge" else None)
        store.add([f"bob's note {i}" for i in range(len(_BOBS))], "memory", user_ids="bob",
                  embeddings=_BOBS.tolist())
        store.search(query_vector=_BOBS[0].tolist(), k=3, user_id="bob")  # loads the cache
    # the snapshot (and, approximate, the index) is on disk with her vector: the setting
    assert _files_with_her_vector(db_path), os.listdir(os.path.dirname(db_path))
    if how == "purge":
        clock.advance(days=2)
    # a process that only writes: it never loads the vector cache
    with _open(db_path, clock, approximate) as store:
        if how == "delete":
            assert store.delete("memory", "a1") == 1
        elif how == "delete_thread":
            assert store.delete_thread("t-alice") == 1
        elif how == "purge":
            store.purge_expired()  # (the open purged her expired record already)
            assert store.get("memory", "a1") is None
        else:
            assert store.update("memory", "a1", embedding=_BOBS[1].tolist()) == 1


@pytest.mark.parametrize("how", ["delete", "delete_thread", "purge", "update"])
def test_a_deleted_rows_vector_leaves_the_sidecar(db_path, how):
    _scenario(db_path, how)
    assert _files_with_her_vector(db_path) == []
    # the next reader rebuilds the snapshot without her, and answers as before
    with _open(db_path, FakeClock()) as store:
        hits = store.search(query_vector=_ALICE.tolist(), k=20)
        assert ("a1" in [r.id for r, _ in hits]) == (how == "update")
    assert _files_with_her_vector(db_path) == []


def test_a_deleted_rows_vector_leaves_the_hnsw_files(db_path):
    from oramem.ann import available_backends

    if not available_backends():
        pytest.skip("no ANN backend installed (pip install 'oramem[ann]')")
    _scenario(db_path, "delete", approximate=True)
    assert _files_with_her_vector(db_path) == []
    assert not [n for n in os.listdir(os.path.dirname(db_path)) if ".ann" in n]


def test_a_deletion_in_a_block_removes_the_snapshot_too(db_path):
    clock = FakeClock()
    with _open(db_path, clock) as store:
        store.add(["alice's passport"], "memory", record_ids="a1", user_ids="alice",
                  embeddings=[_ALICE.tolist()])
        store.add(["bob's note"], "memory", user_ids="bob", embeddings=[_BOBS[0].tolist()])
        store.search(query_vector=_BOBS[0].tolist(), k=3)
    assert _files_with_her_vector(db_path)
    with _open(db_path, clock) as store:
        with store.transaction():
            assert store.delete("memory", "a1") == 1
    assert _files_with_her_vector(db_path) == []


@pytest.mark.parametrize("backend", ["usearch", "hnswlib"])
@pytest.mark.parametrize("how", ["delete", "purge"])
def test_an_index_that_lost_a_row_is_not_saved_with_its_vector(db_path, monkeypatch, backend, how):
    """The process that deletes holds the HNSW index: the backend removes a key from the
    graph but keeps its vector in the file it saves (usearch and hnswlib alike). The index
    was saved with the snapshot at close whenever the live rows' keys were still 0..n-1,
    i.e. when the deleted rows were the last ones: Alice's newest memory went back to disk
    in the .ann file. An index that lost a row since it was built or loaded is not saved
    (the next approximate open builds it, as after any write that moves keys)."""
    pytest.importorskip("usearch.index" if backend == "usearch" else "hnswlib")
    monkeypatch.setattr("oramem.ann.available_backends", lambda: [backend])
    clock = FakeClock()
    with _open(db_path, clock, approximate=True) as store:
        store.add([f"bob's note {i}" for i in range(len(_BOBS))], "memory", user_ids="bob",
                  embeddings=_BOBS.tolist())
        # hers is the newest row: the last row key
        store.add(["alice's passport"], "memory", record_ids="a1", user_ids="alice",
                  embeddings=[_ALICE.tolist()], ttl_days=1 if how == "purge" else None)
        store.search(query_vector=_BOBS[0].tolist(), k=3)
        assert store._engine._cache.ann is not None and store._engine._cache.ann.backend == backend
    assert _files_with_her_vector(db_path)  # the setting: the saved index holds her vector
    with _open(db_path, clock, approximate=True) as store:
        store.search(query_vector=_BOBS[0].tolist(), k=3)  # the index is loaded in this process
        if how == "delete":
            assert store.delete("memory", "a1") == 1
        else:
            clock.advance(days=2)  # she expires while the process runs
            assert store.purge_expired() == 1
        assert store.get("memory", "a1") is None
        assert [r.id for r, _ in store.search(query_vector=_ALICE.tolist(), k=20)].count("a1") == 0
    assert _files_with_her_vector(db_path) == []


def test_a_snapshot_that_cannot_be_removed_is_logged_and_the_delete_stands(db_path, monkeypatch, caplog):
    # the removal runs after the commit (or just before a block's COMMIT): an error there must
    # neither roll the caller's block back nor make a committed delete look failed
    clock = FakeClock()
    with _open(db_path, clock) as store:
        store.add(["alice's passport"], "memory", record_ids="a1", user_ids="alice", embeddings=[_ALICE.tolist()])
        store.add(["bob's note"], "memory", record_ids="b1", user_ids="bob", embeddings=[_BOBS[0].tolist()])
        store.search(query_vector=_BOBS[0].tolist(), k=3)

    def refuse(name, *a, **kw):
        raise PermissionError(13, "Permission denied", name)

    with _open(db_path, clock) as store:
        monkeypatch.setattr("oramem.sqlite.sidecar.os.unlink", refuse)
        with store.transaction():
            assert store.delete("memory", "a1") == 1
        assert store.delete("memory", "b1") == 1
        monkeypatch.undo()
        assert store.get("memory", "a1") is None and store.get("memory", "b1") is None
    assert "could not remove the stale vector sidecar" in caplog.text


def test_an_interrupted_removal_leaves_no_index_file_without_its_sidecar(tmp_path, monkeypatch):
    """``remove_stale`` looks no further when the sidecar is gone, so ``remove`` takes the ANN
    index files first and the sidecar last: stopped after any unlink, what is left still has
    its sidecar and the next removal finds it."""
    from oramem.sqlite import sidecar

    db = str(tmp_path / "s.db")
    side = sidecar.sidecar_path(db, "DEFAULT")
    files = [side, f"{side}.tok.ann", f"{side}.tok.ann.live.npy"]
    for name in files:
        with open(name, "wb") as f:
            f.write(b"x")
    real_unlink, done = os.unlink, []

    def unlink_then_stop(name):
        if done:
            raise OSError("interrupted")
        real_unlink(name)
        done.append(name)

    monkeypatch.setattr(os, "unlink", unlink_then_stop)
    sidecar.remove_stale(db, "DEFAULT")  # logs the failure, never raises
    monkeypatch.setattr(os, "unlink", real_unlink)
    assert done and done[0] != side and os.path.exists(side)
    sidecar.remove_stale(db, "DEFAULT")
    assert [name for name in files if os.path.exists(name)] == []


@pytest.mark.parametrize("approximate", [False, True])
def test_a_snapshot_left_by_a_failed_removal_never_answers_a_search(db_path, monkeypatch, approximate):
    """red27: when the stale snapshot (and HNSW files) cannot be removed after her delete,
    the next reader, Bob's, neither gets her record from it nor keeps her vector on disk: it
    sees the snapshot is stale (change counter), rebuilds from SQLite and replaces it."""
    if approximate:
        from oramem.ann import available_backends

        if not available_backends():
            pytest.skip("no ANN backend installed (pip install 'oramem[ann]')")
    clock = FakeClock()
    with _open(db_path, clock, approximate) as store:
        store.add(["alice's passport"], "memory", record_ids="a1", user_ids="alice", embeddings=[_ALICE.tolist()])
        store.add([f"bob's note {i}" for i in range(len(_BOBS))], "memory", user_ids="bob", embeddings=_BOBS.tolist())
        store.search(query_vector=_BOBS[0].tolist(), k=3)
    assert _files_with_her_vector(db_path)

    def refuse(name, *a, **kw):
        raise PermissionError(13, "Permission denied", name)

    with _open(db_path, clock, approximate) as store:
        monkeypatch.setattr("oramem.sqlite.sidecar.os.unlink", refuse)
        assert store.delete("memory", "a1") == 1
        monkeypatch.undo()
    assert _files_with_her_vector(db_path)  # the setting: the stale snapshot stayed
    with _open(db_path, clock, approximate) as bob:
        for scope in ({}, {"user_id": "alice", "exact_user_match": True}):
            hits = bob.search(query_vector=_ALICE.tolist(), k=20, **scope)
            assert "a1" not in [r.id for r, _ in hits]
        assert len(bob.search(query_vector=_ALICE.tolist(), k=20)) == len(_BOBS)
    assert _files_with_her_vector(db_path) == []
