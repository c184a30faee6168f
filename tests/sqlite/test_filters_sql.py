"""Metadata filters compiled to SQL: JSON typing, $not/$ne on missing fields, nested
objects and arrays, awkward keys — and no user text ever in the SQL string."""

from __future__ import annotations

import pytest

from oramem.sqlite.filters_sql import compile_filter

from .conftest import RecordingConnection, vec

DOCS = {
    "t": {"flag": True, "n": 1, "s": "1", "f": 1.5, "tags": ["a", "b"], "nested": {"x": {"y": [1, {"z": None}]}}},
    "one": {"flag": 1, "n": 1.0, "s": 1, "tags": "a"},
    "f": {"flag": False, "n": 2, "tags": ["b"], "nested": {"x": {"y": [1, {"z": None, "w": 0}]}}},
    "none": None,
    "odd": {'we"ird\\key.$[0]': "v", "a.b": 1, "a": {"b": 2}, "": "empty-key-not-filterable"},
}


@pytest.fixture
def filled(store):
    ids = list(DOCS)
    store.add([f"doc {i}" for i in ids], record_type="memory", record_ids=ids,
              metadata=[DOCS[i] for i in ids], embeddings=[vec(0) for _ in ids])
    return store


CASES = [
    ({"flag": True}, ["t"]),
    ({"flag": 1}, ["one"]),
    ({"flag": False}, ["f"]),
    ({"n": 1}, ["one", "t"]),  # 1 == 1.0
    ({"s": "1"}, ["t"]),
    ({"s": 1}, ["one"]),
    ({"tags": ["a", "b"]}, ["t"]),
    ({"tags": ["b", "a"]}, []),
    ({"tags": "a"}, ["one"]),
    ({"nested": {"x": {"y": [1, {"z": None}]}}}, ["t"]),  # objects inside lists compare exactly
    ({"nested": {"x": {"y": {"$exists": True}}}}, ["f", "t"]),
    ({"tags": {"$array_contains": "a"}}, ["t"]),
    ({"tags": {"$array_contains": ["a", "b"]}}, ["t"]),
    ({"tags": {"$array_contains_any": ["b", "zz"]}}, ["f", "t"]),
    ({"tags": {"$not": {"$array_contains": "a"}}}, ["f", "none", "odd", "one"]),
    ({"flag": {"$ne": True}}, ["f", "none", "odd", "one"]),
    ({"flag": {"$not": True}}, ["f", "none", "odd", "one"]),
    ({"n": {"$gt": 1}}, ["f"]),
    ({"n": {"$gte": 1, "$lt": 2}}, ["one", "t"]),
    ({"s": {"$gte": "0"}}, ["t"]),  # strings compare with strings only
    ({"n": {"$in": [2, 3]}}, ["f"]),
    ({"n": {"$nin": [2, 3]}}, ["none", "odd", "one", "t"]),
    ({"flag": {"$exists": False}}, ["none", "odd"]),
    ({"flag": {"$not": {"$exists": False}}}, ["f", "one", "t"]),
    ({"$or": [{"flag": True}, {"flag": False}]}, ["f", "t"]),
    ({"$and": [{"n": 1}, {"s": 1}]}, ["one"]),
    ({'we"ird\\key.$[0]': "v"}, ["odd"]),
    ({"a.b": 1}, ["odd"]),  # a literal key, not a path
    ({"a": {"b": 2}}, ["odd"]),
]


@pytest.mark.parametrize("flt,expected", CASES)
def test_filter_semantics(filled, flt, expected):
    assert sorted(r.id for r in filled.list("memory", metadata_filter=flt)) == expected
    assert sorted(r.id for r, _ in filled.search(query_vector=vec(0), k=10, metadata_filter=flt)) == expected


def test_none_filter_means_without_metadata(filled):
    assert [r.id for r in filled.list("memory", metadata_filter=None)] == ["none"]


def test_no_user_text_reaches_sql(filled, monkeypatch):
    db = filled._engine._db
    recorder = RecordingConnection(db._conn)
    monkeypatch.setattr(db, "_conn", recorder)
    secret_key, secret_value = "k3y'); DROP TABLE x;--", "v4lue' OR 1=1 --"
    filled.list("memory", metadata_filter={secret_key: secret_value, "$or": [{"zzkey": {"$in": ["zzval"]}}]})
    filled.search(query_vector=vec(0), k=3, metadata_filter={"nested": {"qqkey": {"$not": {"$gt": "qqval"}}}},
                  thread_id="tt-scope", user_id="uu-scope")
    filled.add(["ww-content"], record_type="memory", record_ids="ww-id", metadata={"mmkey": "mmval"},
               embeddings=[vec(1)], thread_ids="tt-thread")
    monkeypatch.setattr(db, "_conn", recorder._conn)
    assert any("json_each" in sql for sql in recorder.statements)
    text = "\n".join(recorder.statements)
    for user_text in (secret_key, secret_value, "DROP", "zzkey", "zzval", "qqkey", "qqval", "tt-scope", "uu-scope",
                      "ww-content", "ww-id", "mmkey", "mmval", "tt-thread"):
        assert user_text not in text


def test_compiled_sql_is_only_fixed_fragments():
    sql, params = compile_filter({"a": {"$array_contains_any": ["x", 1, None, True]}, "b": [1, [2, {"c": 3}]]})
    assert "'x'" not in sql and "\"c\"" not in sql
    assert set(params.values()) >= {'$."a"', '$."b"', "x", "c"}


@pytest.mark.parametrize("key", ['say "hi"', "back\\slash", "tab\there"])
def test_keys_a_json_path_cannot_address_use_a_bound_key(key):
    sql, params = compile_filter({key: 1})
    assert "json_each(r.metadata)" in sql and "json_extract" not in sql
    assert key in params.values()
    assert key not in sql


def test_plain_keys_use_a_bound_json_path():
    sql, params = compile_filter({"topic": "db", "nested": {"k.e y": {"$gt": 2}}})
    assert "json_each" not in sql
    assert {'$."topic"', '$."nested"', '$."nested"."k.e y"'} <= set(params.values())
