"""SC-9: metadata filters (on list and on search)."""

from __future__ import annotations

import pytest

from ._support import hit_ids, ids, vec

DATA = {
    "m1": {"source": "slack", "n": 5, "tags": ["prod", "urgent"], "review": {"status": "open", "by": "ann"}},
    "m2": {"source": "email", "n": 10, "tags": ["dev"], "review": {"status": "closed"}},
    "m3": {"source": "slack", "n": 1, "tags": "prod"},
    "m4": {"other": True},
    "m5": None,
    "m6": {"tags": ["urgent", "prod"], "d": "2026-01-05", "n": 5.5},
}
ALL = list(DATA)


@pytest.fixture
def fstore(store):
    store.add([f"text {k}" for k in DATA], record_type="memory", record_ids=list(DATA), metadata=list(DATA.values()),
              embeddings=[vec(1)] * len(DATA))
    return store


CASES = [
    # SC-9.1 exact / nested / list
    ({"source": "slack"}, ["m1", "m3"]),
    ({"n": 5}, ["m1"]),
    ({"other": True}, ["m4"]),
    ({"tags": ["prod", "urgent"]}, ["m1"]),
    ({"tags": ["urgent", "prod"]}, ["m6"]),
    ({"tags": ["prod"]}, []),
    ({"tags": "prod"}, ["m3"]),
    ({"review": {"status": "open"}}, ["m1"]),
    ({"review": {"status": "open", "by": "ann"}}, ["m1"]),
    ({"review": {"status": "open", "by": "bob"}}, []),
    ({"review": {"status": "closed"}}, ["m2"]),
    ({"source": "slack", "n": 1}, ["m3"]),
    ({"missing": "x"}, []),
    ({"source": "slack", "review": {"status": "open"}, "tags": ["prod", "urgent"]}, ["m1"]),
    # SC-9.2 array operators
    ({"tags": {"$array_contains": "prod"}}, ["m1", "m6"]),
    ({"tags": {"$array_contains": ["prod", "urgent"]}}, ["m1", "m6"]),
    ({"tags": {"$array_contains": ["prod", "dev"]}}, []),
    ({"tags": {"$array_contains_any": ["dev", "urgent"]}}, ["m1", "m2", "m6"]),
    ({"tags": {"$array_contains_any": ["nope"]}}, []),
    # SC-9.2 $not
    ({"source": {"$not": "slack"}}, ["m2", "m4", "m5", "m6"]),
    ({"tags": {"$not": {"$array_contains": "prod"}}}, ["m2", "m3", "m4", "m5"]),
    ({"tags": {"$not": {"$array_contains_any": ["dev", "urgent"]}}}, ["m3", "m4", "m5"]),
    ({"n": {"$not": {"$gt": 4}}}, ["m3", "m4", "m5"]),
    ({"source": {"$not": {"$exists": False}}}, ["m1", "m2", "m3"]),
    ({"source": {"$not": {"$exists": True}}}, ["m4", "m5", "m6"]),
    ({"tags": {"$not": ["prod", "urgent"]}}, ["m2", "m3", "m4", "m5", "m6"]),
    ({"source": {"$not": {"$in": ["slack", "email"]}}}, ["m4", "m5", "m6"]),
    # SC-9.3 comparison / membership / existence
    ({"source": {"$eq": "email"}}, ["m2"]),
    ({"tags": {"$eq": ["dev"]}}, ["m2"]),
    ({"n": {"$gt": 5}}, ["m2", "m6"]),
    ({"n": {"$gte": 5}}, ["m1", "m2", "m6"]),
    ({"n": {"$lt": 5}}, ["m3"]),
    ({"n": {"$lte": 5}}, ["m1", "m3"]),
    ({"n": {"$gt": 1, "$lt": 10}}, ["m1", "m6"]),
    ({"source": {"$gt": "email"}}, ["m1", "m3"]),
    ({"source": {"$lte": "email"}}, ["m2"]),
    ({"d": {"$gte": "2026-01-01"}}, ["m6"]),
    ({"d": {"$lt": "2026-01-05"}}, []),
    ({"d": {"$lte": "2026-01-05T00:00:00"}}, ["m6"]),
    ({"source": {"$in": ["email", "x"]}}, ["m2"]),
    ({"n": {"$in": [1, 10]}}, ["m2", "m3"]),
    ({"source": {"$exists": True}}, ["m1", "m2", "m3"]),
    ({"source": {"$exists": False}}, ["m4", "m5", "m6"]),
    ({"review": {"status": {"$eq": "open"}}}, ["m1"]),
    ({"$and": [{"source": {"$exists": True}}, {"source": {"$ne": "slack"}}]}, ["m2"]),
    ({"$and": [{"source": {"$exists": True}}, {"source": {"$nin": ["slack", "x"]}}]}, ["m2"]),
    ({"$and": [{"source": "slack"}, {"n": {"$gt": 2}}]}, ["m1"]),
    ({"$or": [{"source": "email"}, {"other": True}]}, ["m2", "m4"]),
    ({"$or": [{"n": {"$lt": 2}}, {"tags": {"$array_contains": "dev"}}], "source": {"$exists": True}}, ["m2", "m3"]),
    ({"$and": [{"$or": [{"n": 5}, {"n": 10}]}, {"tags": {"$array_contains": "prod"}}]}, ["m1"]),
]


@pytest.mark.parametrize("flt, expected", CASES, ids=[str(c[0]) for c in CASES])
def test_sc_9_filters_on_list(fstore, flt, expected):
    assert ids(fstore.list("memory", metadata_filter=flt)) == expected


@pytest.mark.parametrize("flt, expected", CASES, ids=[str(c[0]) for c in CASES])
def test_sc_9_filters_on_search(fstore, flt, expected):
    res = fstore.search(query_vector=vec(1), k=10, metadata_filter=flt)
    assert sorted(hit_ids(res)) == expected


def test_sc_9_2_not_of_nested_dict(fstore):
    """SC-9.1 calls only scalars/lists "exact" values; a nested dict under ``$not`` is either
    the negated subset match or a ValueError naming ``$not`` - never something else."""
    flt = {"review": {"$not": {"status": "open"}}}
    try:
        got = ids(fstore.list("memory", metadata_filter=flt))
    except ValueError as exc:
        assert "$not" in str(exc)
        return
    assert got == ["m2", "m3", "m4", "m5", "m6"]


def test_sc_9_1_list_exact_match_requires_key(fstore):
    assert ids(fstore.list("memory", metadata_filter={"other": None})) == []


def test_sc_9_1_null_value_exact(store):
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"], metadata=[{"k": None}, {"j": 1}])
    assert ids(store.list("memory", metadata_filter={"k": None})) == ["a"]


def test_sc_9_1_string_number_not_confused(store):
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"], metadata=[{"k": "5"}, {"k": 5}])
    assert ids(store.list("memory", metadata_filter={"k": 5})) == ["b"]
    assert ids(store.list("memory", metadata_filter={"k": "5"})) == ["a"]


def test_sc_9_1_bool_vs_int(store):
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"], metadata=[{"k": True}, {"k": 1}])
    assert ids(store.list("memory", metadata_filter={"k": True})) == ["a"]


def test_sc_9_empty_filter_matches_all(fstore):
    assert ids(fstore.list("memory", metadata_filter={})) == ALL


def test_sc_9_5_none_filter_in_list_means_no_metadata(fstore):
    assert ids(fstore.list("memory", metadata_filter=None)) == ["m5"]


BAD_FILTERS = [
    ({"source": {"$regex": "sl.*"}}, "$regex"),
    ({"$foo": [{"a": 1}]}, "$foo"),
    ({"$where": "1=1"}, "$where"),
    ({"tags": {"$array_contains_any": []}}, "$array_contains_any"),
    ({"tags": {"$array_contains": []}}, "$array_contains"),
    ({"source": {"$in": []}}, "$in"),
    ({"$and": []}, "$and"),
    ({"$or": []}, "$or"),
    ({"$or": {"source": "slack"}}, "$or"),
    ({"source": {"$eq": "slack", "plain": 1}}, ("plain", "source")),
    ({"n": {"$gt": 1, "$bogus": 2}}, "$bogus"),
    ({"tags": {"$not": {"$nope": 1}}}, "$nope"),
]


@pytest.mark.parametrize("flt, key", BAD_FILTERS, ids=[str(b[1]) + str(i) for i, b in enumerate(BAD_FILTERS)])
def test_sc_9_4_bad_filters_raise_naming_key(fstore, flt, key):
    keys = key if isinstance(key, tuple) else (key,)
    with pytest.raises(ValueError) as ei:
        fstore.list("memory", metadata_filter=flt)
    assert any(k in str(ei.value) for k in keys), str(ei.value)
    with pytest.raises(ValueError) as ei:
        fstore.search(query_vector=vec(1), k=3, metadata_filter=flt)
    assert any(k in str(ei.value) for k in keys), str(ei.value)


def test_sc_9_4_filter_must_be_a_mapping(fstore):
    with pytest.raises((TypeError, ValueError)):
        fstore.list("memory", metadata_filter=[{"source": "slack"}])


@pytest.mark.parametrize(
    "key, value",
    [
        ("it's", "x"),
        ('quo"te', "y"),
        ("semi;colon -- DROP", "z"),
        ("dollar$inside", 1),
        ("space key", True),
        ("dotted.key", "d"),
        ("ключ", "значение"),
    ],
)
def test_sc_9_5_keys_and_values_never_reach_sql(store, key, value):
    """Odd keys are either matched literally or rejected with a ValueError - never an SQL
    error and never a wrong result."""
    store.add(["a", "b"], record_type="memory", record_ids=["hit", "miss"],
              metadata=[{key: value}, {key: "other", "dotted": {"key": "d"}}])
    try:
        got = ids(store.list("memory", metadata_filter={key: value}))
    except ValueError:
        return
    assert got == ["hit"]


@pytest.mark.parametrize("value", ["o'brien", "x\" OR 1=1 --", "'; DROP TABLE memory; --", "%", "_", "\\"])
def test_sc_9_5_values_are_bound(store, value):
    store.add(["a", "b"], record_type="memory", record_ids=["hit", "miss"],
              metadata=[{"v": value}, {"v": "plain"}])
    assert ids(store.list("memory", metadata_filter={"v": value})) == ["hit"]
    assert ids(store.list("memory", metadata_filter={"v": {"$in": [value]}})) == ["hit"]
    assert ids(store.list("memory", metadata_filter={"v": {"$ne": value}})) == ["miss"]


def test_sc_9_keyword_search_with_filter(kw_store):
    kw_store.add(["zebra a", "zebra b"], record_type="memory", record_ids=["a", "b"],
                 metadata=[{"tags": ["x"]}, {"tags": ["y"]}])
    assert hit_ids(kw_store.search("zebra", k=5, metadata_filter={"tags": {"$array_contains": "y"}})) == ["b"]
