"""Several processes on one file: visibility of committed writes, vector-cache
invalidation, and concurrent CREATE_IF_NECESSARY opens (SC-10.3)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from oramem import SQLiteMemoryStore

from .conftest import DIM, vec

_PRELUDE = textwrap.dedent(
    f"""
    import sys, json
    import numpy as np
    from oramem import SQLiteMemoryStore
    path, store_id = sys.argv[1], sys.argv[2]
    def vec(*hot):
        v = np.zeros({DIM})
        for i in hot:
            v[i] = 1.0
        return list(v / np.linalg.norm(v))
    """
)


def run_child(path: str, body: str, store_id: str = "DEFAULT") -> None:
    code = _PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code, path, store_id], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_other_process_sees_committed_writes(make, db_path):
    store = make()
    store.add(["mine"], record_type="memory", record_ids="m0", embeddings=[vec(0)])
    run_child(db_path, """
        with SQLiteMemoryStore(path, vector_dim=8) as s:
            assert s.get("memory", "m0").content == "mine"
            s.add(["theirs"], record_type="memory", record_ids="m1", embeddings=[vec(1)])
    """)
    assert store.get("memory", "m1").content == "theirs"
    assert [r.id for r in store.list("memory")] == ["m0", "m1"]


def test_vector_cache_follows_other_processes(make, db_path):
    store = make()
    store.add(["a"], record_type="memory", record_ids="a", embeddings=[vec(0)])
    assert [r.id for r, _ in store.search(query_vector=vec(1), k=5)] == ["a"]  # cache now loaded
    run_child(db_path, """
        with SQLiteMemoryStore(path, vector_dim=8) as s:
            s.add(["b"], record_type="memory", record_ids="b", embeddings=[vec(1)])
    """)
    assert [r.id for r, _ in store.search(query_vector=vec(1), k=1)] == ["b"]
    run_child(db_path, """
        with SQLiteMemoryStore(path, vector_dim=8) as s:
            assert s.delete("memory", "b") == 1
            assert s.update("memory", "a", embedding=vec(2)) == 1
    """)
    hits = store.search(query_vector=vec(2), k=5)
    assert [r.id for r, _ in hits] == ["a"] and hits[0][1] < 1e-6
    # our own write after their write: the cache is current again
    store.add(["c"], record_type="memory", record_ids="c", embeddings=[vec(3)])
    assert [r.id for r, _ in store.search(query_vector=vec(3), k=1)] == ["c"]


def test_cache_survives_recreate_by_another_process(make, db_path):
    store = make()
    store.add(["old"], record_type="memory", record_ids="old", embeddings=[vec(0)])
    store.search(query_vector=vec(0), k=1)
    run_child(db_path, """
        with SQLiteMemoryStore(path, vector_dim=8, schema_policy="recreate") as s:
            s.add(["new"], record_type="memory", record_ids="new", embeddings=[vec(0)])
    """)
    assert [r.id for r, _ in store.search(query_vector=vec(0), k=5)] == ["new"]


def test_keyword_index_visible_to_other_process(make, db_path):
    kw = make(memory_store_id="KW", search_strategy="keyword", vector_dim=None)
    run_child(db_path, """
        with SQLiteMemoryStore(path, memory_store_id=store_id, search_strategy="keyword") as s:
            s.add(["the walrus sings"], record_type="memory", record_ids="w")
    """, store_id="KW")
    assert [r.id for r, _ in kw.search("walrus", k=3)] == ["w"]


_RACE = """
    import time
    start = float(sys.argv[3])
    while time.time() < start:
        time.sleep(0.001)
    s = SQLiteMemoryStore(path, memory_store_id=store_id, vector_dim=8, search_strategy="hybrid",
                          schema_policy="create_if_necessary")
    s.add(["p" + sys.argv[4]], record_type="memory", record_ids="p" + sys.argv[4], embeddings=[vec(0)])
    s.close()
"""


def test_concurrent_create_if_necessary_opens(db_path):
    import time

    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PRELUDE + textwrap.dedent(_RACE), db_path, "RACE", repr(start), str(i)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    errors = [(p.wait(120), p.stderr.read()) for p in procs]
    assert all(rc == 0 for rc, _ in errors), errors
    with SQLiteMemoryStore(db_path, memory_store_id="RACE", schema_policy="require_existing",
                           search_strategy="hybrid") as s:
        assert sorted(r.id for r in s.list("memory")) == ["p0", "p1", "p2"]
        assert sorted(r.id for r, _ in s.search("p1", k=5, strategy="keyword")) == ["p1"]
