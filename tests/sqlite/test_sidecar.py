"""The vector sidecar (oramem/sqlite/sidecar.py): a fresh process maps a valid snapshot,
and every way a snapshot can be wrong (another process wrote, file deleted, truncated,
corrupted, a different database file) makes the store rebuild from SQLite, never answer
from a stale or damaged file."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from oramem import SQLiteMemoryStore
from oramem.sqlite import admin, sidecar

from .conftest import DIM, vec
from .test_processes import run_child


def _path(db_path: str, store_id: str = "DEFAULT") -> str:
    return sidecar.sidecar_path(db_path, store_id)


def _ids(store, q, k=3, **kw):
    return [r.id for r, _ in store.search(query_vector=q, k=k, **kw)]


def _fill(store, n=6):
    store.add(
        [f"t{i}" for i in range(n)], record_type="memory", record_ids=[f"m{i}" for i in range(n)],
        embeddings=[vec(i % DIM) for i in range(n)], user_ids=["u1" if i % 2 else "u2" for i in range(n)],
    )


def _cache(store):
    return store._engine._cache


def _saved(make) -> None:
    """A filled store whose first search wrote the sidecar, closed."""
    store = make()
    _fill(store)
    _ids(store, vec(0))
    store.close()


def test_first_search_writes_it_and_a_fresh_store_maps_it(make, db_path):
    store = make()
    _fill(store)
    assert not os.path.exists(_path(db_path))
    assert _ids(store, vec(3), k=1) == ["m3"]
    assert os.path.exists(_path(db_path))  # written after the load from SQLite
    store.close()
    again = make()
    assert _ids(again, vec(3), k=1, user_id="u1") == ["m3"]
    assert _ids(again, vec(2), k=1, user_id="u2") == ["m2"]
    assert _cache(again).mapped  # mapped, not re-read
    assert _cache(again).saved_version == _cache(again).version


def test_own_writes_are_saved_on_close(make, db_path):
    store = make()
    _fill(store)
    _ids(store, vec(0))
    store.add(["new"], record_type="memory", record_ids="n", embeddings=[vec(0, 1)])
    assert store.delete("memory", "m1") == 1
    store.close()
    again = make()
    assert _ids(again, vec(0, 1), k=1) == ["n"]
    assert "m1" not in _ids(again, vec(1), k=10)
    assert _cache(again).mapped
    # writing after mapping copies (the map is read-only) and stays correct
    again.add(["more"], record_type="memory", record_ids="x", embeddings=[vec(5, 6)])
    assert _ids(again, vec(5, 6), k=1) == ["x"]
    assert not _cache(again).mapped


@pytest.mark.parametrize("write", ["delete", "update_metadata", "update_embedding", "purge"])
def test_every_write_on_a_mapped_snapshot_works(make, db_path, write):
    """A delete (or any write that appends no vector row) on a store opened from the sidecar
    once wrote into the read-only map: 'assignment destination is read-only'."""
    _saved(make)
    store = make()
    assert _ids(store, vec(1), k=1) == ["m1"] and _cache(store).mapped
    if write == "delete":
        assert store.delete("memory", "m1") == 1
        assert "m1" not in _ids(store, vec(1), k=10)
    elif write == "update_metadata":
        assert store.update("memory", "m1", metadata={"k": 1}) == 1
        assert _ids(store, vec(1), k=1, metadata_filter={"k": 1}) == ["m1"]
    elif write == "update_embedding":
        assert store.update("memory", "m1", embedding=vec(4, 5)) == 1
        assert _ids(store, vec(4, 5), k=1) == ["m1"]
    else:
        assert store.purge_expired() == 0
        assert _ids(store, vec(1), k=1) == ["m1"]
    store.close()
    again = make()
    assert ("m1" in _ids(again, vec(1), k=10)) is (write != "delete")


def test_other_process_write_makes_it_stale(make, db_path):
    _saved(make)
    run_child(db_path, """
        with SQLiteMemoryStore(path, vector_dim=8, vector_sidecar=False) as s:
            s.add(["theirs"], record_type="memory", record_ids="b", embeddings=[vec(7, 6)])
            s.delete("memory", "m3")
    """)
    again = make()
    assert _ids(again, vec(7, 6), k=1) == ["b"]
    assert "m3" not in _ids(again, vec(3), k=10)
    assert not _cache(again).mapped  # rebuilt from SQLite


def test_a_stale_cache_is_not_saved_over_a_newer_database(make, db_path):
    store = make()
    _fill(store)
    _ids(store, vec(0))
    store.add(["mine"], record_type="memory", record_ids="a", embeddings=[vec(1, 2)])  # patched: unsaved
    run_child(db_path, """
        with SQLiteMemoryStore(path, vector_dim=8, vector_sidecar=False) as s:
            s.add(["theirs"], record_type="memory", record_ids="b", embeddings=[vec(7, 6)])
    """)
    before = os.path.getmtime(_path(db_path))
    store.close()  # its cache is behind the catalog: not written
    assert os.path.getmtime(_path(db_path)) == before
    again = make()
    assert _ids(again, vec(7, 6), k=1) == ["b"]
    assert _ids(again, vec(1, 2), k=1) == ["a"]


def test_another_process_reads_the_snapshot(make, db_path):
    _saved(make)
    run_child(db_path, """
        import numpy as np
        with SQLiteMemoryStore(path, vector_dim=8) as s:
            assert [r.id for r, _ in s.search(query_vector=vec(4), k=1)] == ["m4"]
            assert s._engine._cache.mapped
    """)


def _damage(path: str, how: str) -> None:
    size = os.path.getsize(path)
    if how == "deleted":
        os.unlink(path)
    elif how == "truncated":
        with open(path, "r+b") as f:
            f.truncate(size - 7)
    elif how == "empty":
        open(path, "wb").close()
    elif how == "matrix-byte":
        with open(path, "r+b") as f:
            f.seek(size - 5)
            byte = f.read(1)
            f.seek(size - 5)
            f.write(bytes([byte[0] ^ 0x40]))
    elif how == "header-byte":
        with open(path, "r+b") as f:
            f.seek(20)
            byte = f.read(1)
            f.seek(20)
            f.write(bytes([byte[0] ^ 0x01]))
    elif how == "column-byte":
        with open(path, "r+b") as f:
            data = f.read()
            _, header_len = sidecar._PREFIX.unpack(data[: sidecar._PREFIX.size])
            header = json.loads(data[sidecar._PREFIX.size : sidecar._PREFIX.size + header_len - 4])
            offsets, _, _ = sidecar._layout(header["rows"], DIM, header_len)
            at = offsets["seqs"] + 8  # the second row's record seq
            f.seek(at)
            f.write(bytes([data[at] ^ 0x02]))
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["deleted", "truncated", "empty", "matrix-byte", "header-byte", "column-byte"])
def test_a_damaged_file_is_rebuilt(make, db_path, how):
    store = make()
    _fill(store)
    expected = {i: _ids(store, vec(i), k=3) for i in range(DIM)}
    store.close()
    _damage(_path(db_path), how)
    again = make()
    assert {i: _ids(again, vec(i), k=3) for i in range(DIM)} == expected
    assert not _cache(again).mapped
    again.close()
    # and the rebuild wrote a good file again
    third = make()
    assert {i: _ids(third, vec(i), k=3) for i in range(DIM)} == expected
    assert _cache(third).mapped


def test_a_snapshot_of_another_database_is_not_used(make, db_path, tmp_path):
    _saved(make)
    # a different file whose catalog looks the same except for its contents
    other = str(tmp_path / "other.db")
    with SQLiteMemoryStore(other, vector_dim=DIM) as s:
        s.add(["o"], record_type="memory", record_ids="o", embeddings=[vec(0)])
    os.replace(_path(db_path), _path(other))
    with SQLiteMemoryStore(other, vector_dim=DIM) as s:
        assert _ids(s, vec(3), k=10) == ["o"]


def test_recreated_store_does_not_use_the_old_file(make, db_path):
    _saved(make)
    with SQLiteMemoryStore(db_path, vector_dim=DIM, schema_policy="recreate") as s:
        s.add(["fresh"], record_type="memory", record_ids="f", embeddings=[vec(3)])
        assert _ids(s, vec(3), k=10) == ["f"]


def test_drop_store_removes_it(make, db_path):
    _saved(make)
    assert os.path.exists(_path(db_path))
    assert admin.drop_store(db_path, "DEFAULT")
    assert not os.path.exists(_path(db_path))


def test_disabled_and_memory_stores_write_nothing(db_path, tmp_path):
    with SQLiteMemoryStore(db_path, vector_dim=DIM, vector_sidecar=False) as s:
        _fill(s)
        _ids(s, vec(0))
    assert not os.path.exists(_path(db_path))
    with SQLiteMemoryStore(":memory:", vector_dim=DIM) as s:
        _fill(s)
        _ids(s, vec(0))
    assert not any(name.endswith(sidecar.SUFFIX) for name in os.listdir(tmp_path))
    with pytest.raises(TypeError, match="vector_sidecar"):
        SQLiteMemoryStore(db_path, vector_dim=DIM, vector_sidecar="yes")


def test_unwritable_directory_falls_back_to_sqlite(make, db_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(sidecar.tempfile, "mkstemp", refuse)
    store = make()
    _fill(store)
    assert _ids(store, vec(2), k=1) == ["m2"]
    assert not os.path.exists(_path(db_path))


def test_a_process_killed_while_writing_leaves_a_usable_store(make, db_path):
    """The writer dies between writing the temporary file and renaming it: the old
    sidecar is untouched (and stale, so not used), the answer is right, and the next
    load writes a good file."""
    _saved(make)
    run_child(db_path, """
        import os
        from oramem.sqlite import sidecar
        with SQLiteMemoryStore(path, vector_dim=8) as s:
            s.add(["late"], record_type="memory", record_ids="late", embeddings=[vec(6, 7)])
            sidecar.os.replace = lambda *a: os._exit(0)  # killed right before the rename
            s.search(query_vector=vec(0), k=1)
    """)
    leftovers = [n for n in os.listdir(os.path.dirname(db_path)) if n.endswith(".tmp")]
    assert leftovers  # the torn temporary file, never read
    again = make()
    assert _ids(again, vec(6, 7), k=1) == ["late"]
    assert not _cache(again).mapped
    again.close()
    third = make()
    assert _ids(third, vec(6, 7), k=1) == ["late"]
    assert _cache(third).mapped


def _approx(db_path):
    from oramem.ann import AnnConfig

    return SQLiteMemoryStore(db_path, vector_dim=DIM, approximate_search=AnnConfig(min_rows=0))


@pytest.fixture
def ann_backend():
    from oramem.ann import available_backends

    if not available_backends():
        pytest.skip("no ANN backend installed (pip install 'oramem[ann]')")


def _fill_distinct(store, n=40):
    """Records without tied distances (ties make an approximate top-k graph-dependent)."""
    rng = np.random.default_rng(4)
    store.add([f"t{i}" for i in range(n)], record_type="memory", record_ids=[f"m{i}" for i in range(n)],
              embeddings=rng.normal(size=(n, DIM)).tolist())


def _ann_files(db_path):
    folder = os.path.dirname(db_path)
    return sorted(n for n in os.listdir(folder) if ".ann" in n)


def test_approximate_store_loads_its_saved_index(db_path, ann_backend, monkeypatch):
    from oramem.ann import AnnIndex

    with _approx(db_path) as s:
        _fill_distinct(s)
        expected = {i: _ids(s, vec(i), k=3) for i in range(DIM)}
        assert _cache(s).ann is not None
    assert _ann_files(db_path)
    built = []
    real_build = AnnIndex.build
    monkeypatch.setattr(AnnIndex, "build", lambda self, *a: built.append(1) or real_build(self, *a))
    with _approx(db_path) as s:
        assert {i: _ids(s, vec(i), k=3) for i in range(DIM)} == expected
        assert _cache(s).ann is not None and _cache(s).mapped
        assert not built  # loaded, not rebuilt
        s.add(["new"], record_type="memory", record_ids="n", embeddings=[vec(1, 2)])
        assert _ids(s, vec(1, 2), k=1) == ["n"]
    # an exact store ignores the index files (and an approximate store opening a snapshot
    # saved without one builds it once and saves it)
    with SQLiteMemoryStore(db_path, vector_dim=DIM, schema_policy="require_existing") as s:
        s.add(["m"], record_type="memory", record_ids="m", embeddings=[vec(3, 4)])
    with SQLiteMemoryStore(db_path, vector_dim=DIM) as s:
        _ids(s, vec(0))  # writes a snapshot without an index
    assert not _ann_files(db_path)
    with _approx(db_path) as s:
        assert _ids(s, vec(3, 4), k=1) == ["m"]
    assert _ann_files(db_path)
    built.clear()
    with _approx(db_path) as s:
        assert _ids(s, vec(3, 4), k=1) == ["m"]
        assert not built
    # a dropped store takes them along
    with SQLiteMemoryStore(db_path, vector_dim=DIM) as s:
        assert _ids(s, vec(1, 2), k=1) == ["n"]
        assert _cache(s).ann is None
    assert admin.drop_store(db_path, "DEFAULT")
    assert not _ann_files(db_path)


def test_a_damaged_index_file_is_rebuilt(db_path, ann_backend, monkeypatch):
    from oramem.ann import AnnIndex

    with _approx(db_path) as s:
        _fill_distinct(s)
        expected = {i: _ids(s, vec(i), k=3) for i in range(DIM)}
    index = [n for n in _ann_files(db_path) if n.endswith(".ann")][0]
    with open(os.path.join(os.path.dirname(db_path), index), "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0x10]))
    built = []
    real_build = AnnIndex.build
    monkeypatch.setattr(AnnIndex, "build", lambda self, *a: built.append(1) or real_build(self, *a))
    with _approx(db_path) as s:
        assert {i: _ids(s, vec(i), k=3) for i in range(DIM)} == expected
        assert built  # never handed to the backend's loader
