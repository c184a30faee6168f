"""Compiled metadata masks are kept per filter document (oramem.sqlite.metamask.MaskCache)
and per cache state: a repeated filter is answered without compiling it again, and any
change of the rows — this process's add, update and delete, TTL expiry, another process's
write — gives the same answer as brute force "filter, then top-k" right away (SC-6.5). This
process's writes keep a mask and extend it over the rows they append (see
tests/sqlite/test_mask_extension.py)."""

from __future__ import annotations

import numpy as np
import pytest

from oramem.sqlite import metamask
from oramem.sqlite.metamask import MaskCache, filter_key

from .conftest import DIM, vec
from .test_processes import run_child

FLT = {"topic": "a", "n": {"$gte": 2}}


def ids(store, flt=FLT, k=10, query=None):
    return [r.id for r, _ in store.search(query_vector=query or vec(0), k=k, metadata_filter=flt)]


def seeded(store, n=40):
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    store.add([f"t{i}" for i in range(n)], "memory", record_ids=[f"r{i:02d}" for i in range(n)],
              embeddings=[v.tolist() for v in vectors],
              metadata=[{"topic": "ab"[i % 2], "n": i % 4} for i in range(n)])
    # first ask: SQL path; second: columns built, the mask compiled and kept
    for _ in range(2):
        ids(store, k=100)
    return vectors


def expected(store, flt=FLT):
    """Every passing record, through list() (the SQL path), as a set."""
    return {r.id for r in store.list("memory", limit=None, metadata_filter=flt)}


def compiles(monkeypatch) -> list:
    calls: list = []
    real = metamask.compile_mask

    def counting(flt, columns):
        calls.append(flt)
        return real(flt, columns)

    monkeypatch.setattr("oramem.sqlite.vectors.compile_mask", counting)
    return calls


def test_repeated_filter_is_not_compiled_again(store, monkeypatch):
    seeded(store)
    calls = compiles(monkeypatch)
    for q in range(3):
        assert set(ids(store, k=100, query=vec(q))) == expected(store)
    assert calls == []
    # another document (other order of keys) is its own entry
    other = {"n": {"$gte": 2}, "topic": "a"}
    assert set(ids(store, other, k=100)) == expected(store)
    assert len(calls) == 1


def column_reads(store) -> list:
    statements: list = []
    store._engine._db.conn.set_trace_callback(statements.append)
    return statements


def test_own_writes_extend_the_kept_mask_and_keep_the_columns(store, monkeypatch):
    seeded(store)
    calls = compiles(monkeypatch)
    sizes: list = []
    real = metamask.compile_mask
    monkeypatch.setattr("oramem.sqlite.vectors.compile_mask",
                        lambda flt, columns: sizes.append(columns.row_seqs.size) or calls.append(flt) or real(flt, columns))
    reads = column_reads(store)
    store.add(["new"], "memory", record_ids="new", embeddings=[vec(0)], metadata={"topic": "a", "n": 3})
    assert ids(store, k=1) == ["new"]
    assert store.update("memory", "new", metadata={"topic": "b", "n": 3}) == 1
    assert "new" not in ids(store, k=100)
    assert store.update("memory", "r00", metadata={"topic": "a", "n": 9}) == 1
    got = ids(store, k=100)
    assert "r00" in got and set(got) == expected(store)
    assert store.delete("memory", "r00") == 1
    got = ids(store, k=100)
    assert "r00" not in got and set(got) == expected(store)
    store._engine._db.conn.set_trace_callback(None)
    # a search after a write that appended rows compiled the filter over those rows only
    # (the add and the two updates append one row each; the delete appends none) ...
    assert sizes == [1, 1, 1] and len(calls) == 3
    # ... over the kept columns: only the appended rows' records were read, by seq
    column_sql = [s for s in reads if s.startswith("SELECT r.seq, json_type(r.metadata")]
    assert column_sql and all("json_each" in s for s in column_sql)


def test_appended_rows_with_new_texts_and_numbers(store):
    seeded(store)
    store.add(["x", "y", "z"], "memory", record_ids=["x", "y", "z"], embeddings=[vec(1), vec(2), vec(3)],
              metadata=[{"topic": "0"}, {"topic": "aa", "n": 2.5}, {"topic": "zzz", "n": None}])
    for flt in ({"topic": {"$gt": "a"}}, {"topic": {"$lte": "aa"}}, {"topic": {"$in": ["0", "b"]}},
                {"n": {"$gte": 2.5}}, {"n": None}, {"topic": {"$ne": "zzz"}}, {"n": {"$exists": False}}):
        for _ in range(2):  # SQL on the first ask of a key in a fresh state, then in memory
            assert set(ids(store, flt, k=100)) == expected(store, flt), flt


def test_appended_huge_integer_sends_the_filter_back_to_sql(store):
    seeded(store)
    store.add(["big"], "memory", record_ids="big", embeddings=[vec(0)], metadata={"topic": "a", "n": 2**60 + 1})
    flt = {"n": 2**60 + 1}
    assert ids(store, flt) == ["big"]
    assert ids(store, {"n": {"$gte": 2}}, k=100) and set(ids(store, {"n": {"$gte": 2}}, k=100)) == expected(
        store, {"n": {"$gte": 2}})


def test_expiry_applies_to_a_kept_mask(store, clock):
    seeded(store)
    store.add(["brief"], "memory", record_ids="brief", embeddings=[vec(0)], ttl_days=1,
              metadata={"topic": "a", "n": 2})
    for _ in range(2):
        assert ids(store, k=1) == ["brief"]
    clock.advance(days=1)  # expired: the kept mask is ANDed with the TTL test of this moment
    assert "brief" not in ids(store, k=100)
    assert set(ids(store, k=100)) == expected(store)


def test_other_process_write_invalidates_the_kept_mask(store, db_path):
    seeded(store)
    run_child(db_path, """
        with SQLiteMemoryStore(path, vector_dim=8) as s:
            s.add(["theirs"], "memory", record_ids="theirs", embeddings=[vec(0)], metadata={"topic": "a", "n": 4})
            assert s.update("memory", "r02", metadata={"topic": "b", "n": 2}) == 1
    """)
    for _ in range(3):  # first ask after the reload goes through SQL, then in memory again
        got = ids(store, k=100)
        assert "theirs" in got and "r02" not in got
        assert set(got) == expected(store)
        assert ids(store, k=1) == ["theirs"]


def test_kept_mask_answers_equal_brute_force(store):
    vectors = seeded(store)
    rng = np.random.default_rng(4)
    keep = [i % 2 == 0 and i % 4 >= 2 for i in range(len(vectors))]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for _ in range(5):
        q = rng.normal(size=DIM)
        dist = 1.0 - unit.astype(np.float64) @ (q / np.linalg.norm(q))
        want = [f"r{i:02d}" for i in np.argsort(dist, kind="stable") if keep[i]][:3]
        assert ids(store, k=3, query=q.tolist()) == want


@pytest.mark.parametrize(
    "a, b",
    [
        ({"x": 1}, {"x": 1.0}),
        ({"x": 1}, {"x": True}),
        ({"x": 0}, {"x": False}),
        ({"x": None}, {"x": "None"}),
        ({"x": [1, 2]}, {"x": [2, 1]}),
        ({"x": 1, "y": 2}, {"y": 2, "x": 1}),
        ({"x": {"$in": ["a"]}}, {"x": {"$in": ["a", "a"]}}),
    ],
)
def test_filter_keys_tell_documents_apart(a, b):
    assert filter_key(a) is not None and filter_key(a) != filter_key(b)
    assert filter_key(a) == filter_key(dict(a))


def test_filter_key_refuses_what_it_cannot_tell_apart():
    class Text(str):
        pass

    assert filter_key({"x": Text("a")}) is None
    assert filter_key({"x": (1, 2)}) is None
    assert filter_key({"x": np.float64(1.0)}) is None


def test_mask_cache_is_bounded_and_keeps_selective_masks_small():
    cache = MaskCache(max_entries=2, max_bytes=10_000)
    sparse = np.zeros(1000, dtype=bool)
    sparse[[3, 500]] = True
    kept = cache.put(("a",), sparse)
    assert kept.dtype == np.int32 and kept.tolist() == [3, 500] and not kept.flags.writeable
    dense = np.ones(1000, dtype=bool)
    assert cache.put(("b",), dense).dtype == np.bool_
    cache.put(("c",), sparse)
    assert len(cache) == 2 and cache.get(("a",)) is None  # least recently used out
    huge = np.ones(20_000, dtype=bool)
    cache.put(("d",), huge)  # larger than the byte bound: answered, not kept
    assert cache.get(("d",)) is None and len(cache) == 2


def test_compiled_filter_sql_is_remembered_with_fresh_params(monkeypatch):
    from oramem.sqlite import records

    calls = []
    real = records.compile_filter
    monkeypatch.setattr(records, "compile_filter", lambda flt: calls.append(flt) or real(flt))
    monkeypatch.setattr(records, "_COMPILED", type(records._COMPILED)())
    flt = {"topic": "a", "n": {"$gte": 2}}
    first_sql, first = records.compiled_filter(flt)
    first["mutated"] = 1
    second_sql, second = records.compiled_filter({"topic": "a", "n": {"$gte": 2}})
    assert second_sql == first_sql and "mutated" not in second and len(calls) == 1
    records.compiled_filter({"topic": "a", "n": {"$gte": 2.0}})  # 2.0 is its own entry
    assert len(calls) == 2
