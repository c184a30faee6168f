"""Issue 7.1 — metadata filter fuzzing (SC-9, oramem/filters.py).

Random metadata documents and random filters (every SC-9 operator, nesting, odd keys:
quotes, dots, ``$`` inside, backslash, brackets, ``*``, spaces, emoji, blank-ish keys);
``list(..., metadata_filter=f)`` and ``search(..., metadata_filter=f)`` in every strategy
the store has must return exactly the records a small independent reference evaluator
(``_support.matches``) accepts. Invalid filters must raise ``ValueError``/``TypeError``,
never a database error. Each example writes its records under its own ``user_id`` and
removes them with a cascading profile delete afterwards.
"""

from __future__ import annotations

import itertools
from oramem.sqlite._sqlite import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oramem import SearchStrategy, StoreError

from ._support import matches

KEYS = ["a", "b", "a.b", 'q"t', "ap'o", "d$x", "b\\s", "[0]", "s*r", "sp ace", "🙂", "ü", " ", "\t", "a$.b", "x' OR '1'='1"]
META_ONLY_KEYS = ["", "$lead", "$.a"]  # valid metadata keys a filter cannot address
SCALARS = [
    None, True, False, 0, 1, 1.0, -1, 2, 2.5, -0.0, 1e300, -1e-300, 2**63 - 1, -(2**63), 2**53 + 1,
    "", "1", "a", "b", "A", "ü", "🙂", "a b", "true", "null", "2026-01-01", "'; DROP TABLE x; --", '"', "\\",
]
NUMBERS = [s for s in SCALARS if isinstance(s, (int, float)) and not isinstance(s, bool)]
STRINGS = [s for s in SCALARS if isinstance(s, str)]

scalar = st.sampled_from(SCALARS) | st.integers(-3, 3) | st.text(alphabet="ab ü🙂\"'\\.", max_size=3)
key = st.sampled_from(KEYS)


def _json(depth: int, keys=key, leaf=scalar):
    if depth <= 0:
        return leaf
    return leaf | st.lists(_json(depth - 1, keys, leaf), max_size=3) | st.dictionaries(
        keys | st.sampled_from(META_ONLY_KEYS), _json(depth - 1, keys, leaf), max_size=3
    )


# documents of one example share a few keys and values, so filters select some of them
doc_keys = st.lists(key, min_size=1, max_size=4, unique=True)
doc_leaves = st.lists(scalar, min_size=1, max_size=5)


@st.composite
def documents(draw):
    keys = st.sampled_from(draw(doc_keys) * 6 + META_ONLY_KEYS)
    mine = st.sampled_from(draw(doc_leaves))
    leaf = st.one_of(mine, mine, mine, scalar)
    wide = st.lists(leaf, min_size=15, max_size=20)  # past the engine's "bind as one JSON list" threshold
    value = st.one_of(leaf, leaf, st.lists(leaf, max_size=3), wide, _json(2, keys, leaf), _json(4, keys, leaf))
    doc = st.tuples(st.integers(0, 9), st.dictionaries(keys, value, max_size=4)).map(
        lambda pair: None if pair[0] == 0 else pair[1]
    )
    return draw(st.lists(doc, min_size=2, max_size=8))


def _values(docs) -> list:
    """Every value found in the documents (containers and leaves), to steer filters."""
    out: list = []

    def walk(v):
        out.append(v)
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    for d in docs:
        if d:
            for v in d.values():
                walk(v)
    return out


def _keys(docs) -> list:
    out: list = []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k and not k.startswith("$"):
                    out.append(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for d in docs:
        walk(d)
    return out


def filter_strategy(docs):
    values = _values(docs)
    seen = [v for v in values if not isinstance(v, dict)]
    leaves = [v for v in seen if not isinstance(v, list)]
    key = st.sampled_from(KEYS + _keys(docs) * 8)
    sc = st.one_of(st.sampled_from(leaves), st.sampled_from(leaves), scalar) if leaves else scalar
    exact = st.one_of(sc, st.sampled_from(seen) if seen else sc, st.lists(_json(1, key, sc), max_size=3))
    scalar_list = st.lists(sc, min_size=1, max_size=3)
    comparable = st.sampled_from(NUMBERS + STRINGS) | st.integers(-3, 3) | sc.filter(
        lambda v: isinstance(v, (int, float, str)) and not isinstance(v, bool)
    )

    def op_dict(depth: int):
        ops = [
            st.tuples(st.sampled_from(["$eq", "$ne"]), exact),
            st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), comparable),
            st.tuples(st.sampled_from(["$in", "$nin", "$array_contains_any"]), scalar_list),
            st.tuples(st.just("$array_contains"), sc | scalar_list),
            st.tuples(st.just("$exists"), st.booleans()),
        ]
        if depth > 0:
            ops.append(st.tuples(st.just("$not"), exact | op_dict(depth - 1)))
        return st.lists(st.one_of(ops), min_size=1, max_size=2).map(dict)

    def condition(depth: int):
        options = [exact, op_dict(2)]
        if depth > 0:
            options.append(st.dictionaries(key, condition(depth - 1), min_size=1, max_size=2))
        return st.one_of(options)

    pairs = [(k, v) for d in docs if d for k, v in d.items() if k and not k.startswith("$")]
    random_field = st.dictionaries(key, condition(2), min_size=1, max_size=2)
    if pairs:
        # conditions built from a value a document really holds, so they select something
        anchored = st.sampled_from(pairs).flatmap(lambda kv: _anchored(kv[0], kv[1], sc))
        field_filter = st.one_of(anchored, anchored, random_field, st.tuples(anchored, random_field).map(
            lambda two: {**two[1], **two[0]}
        ))
    else:
        field_filter = random_field
    return field_filter | st.builds(
        lambda op, subs, extra: {op: subs, **extra},
        st.sampled_from(["$and", "$or"]),
        st.lists(field_filter, min_size=1, max_size=3),
        st.dictionaries(key, condition(1), max_size=1),
    )


def _anchored(k, v, sc):
    """A condition on key ``k`` derived from a stored value ``v``."""
    options = [
        st.just(v), st.just({"$eq": v}), st.just({"$ne": v}), st.just({"$not": v}), st.just({"$exists": True}),
        st.just({"$exists": False}), st.lists(sc, max_size=2).map(lambda more: {"$in": [v, *more]}),
        st.lists(sc, max_size=2).map(lambda more: {"$nin": [v, *more]}),
        st.lists(sc, min_size=16, max_size=20).map(lambda more: {"$in": [*more, v]}),
        st.lists(sc, min_size=16, max_size=20).map(lambda more: {"$nin": [*more, v]}),
    ]
    if isinstance(v, dict):
        # a dict value is a nested filter (subset match); $eq/$in/... of a dict are invalid
        inner = [(ik, iv) for ik, iv in v.items() if ik and not ik.startswith("$")]
        options = options[3:5]
        if inner:
            options.append(st.sampled_from(inner).flatmap(lambda kv: _anchored(kv[0], kv[1], sc)))
    if (isinstance(v, (int, float)) and not isinstance(v, bool)) or isinstance(v, str):
        options.append(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]).map(lambda op: {op: v}))
        options.append(st.tuples(st.sampled_from(["$gt", "$lt"]), st.sampled_from(["$lte", "$gte"])).map(
            lambda ops: {ops[0]: v, ops[1]: v}
        ))
    if isinstance(v, list) and v and all(not isinstance(e, (list, dict)) for e in v):
        options.append(st.sampled_from(v).map(lambda e: {"$array_contains": e}))
        options.append(st.lists(sc, max_size=2).map(lambda more: {"$array_contains_any": [v[0], *more]}))
        options.append(st.lists(sc, min_size=16, max_size=20).map(lambda more: {"$array_contains_any": [*more, v[-1]]}))
        options.append(st.lists(st.sampled_from(v), min_size=17, max_size=20).map(lambda w: {"$array_contains": w}))
        options.append(st.just({"$array_contains": list(v)}))
        options.append(st.sampled_from(v).map(lambda e: {"$not": {"$array_contains": e}}))
    return st.one_of(options).map(lambda cond: {k: cond}).filter(lambda f: _valid_here(f))


def _valid_here(f) -> bool:
    from oramem.filters import validate_filter

    try:
        validate_filter(f)
        return True
    except (ValueError, TypeError):
        return False


field_filter = st.dictionaries(key, st.sampled_from(SCALARS) | st.just({"$exists": True}), min_size=1, max_size=2)

# invalid filters: each must be a ValueError/TypeError whatever surrounds it
BAD_PARTS = [
    {"$bogus": 1}, {"k": {}}, {"k": {"$in": []}}, {"k": {"$gt": True}}, {"k": {"$gt": None}}, {"k": {"$gt": [1]}},
    {"k": {"$eq": 1, "x": 2}}, {"k": {"$exists": 1}}, {"$and": []}, {"$or": {}}, {"$and": [1]},
    {"k": {"$and": [{"a": 1}]}}, {"": 1}, {1: 2}, {"k": float("nan")}, {"k": {"$eq": float("inf")}},
    {"k": {"$in": [[1]]}}, {"k": {1, 2}}, {"k": {"$not": {}}}, {"k": {"$not": {"a": 1}}}, {"k": b"x"},
    {"k": {"$array_contains": []}}, {"k": {"$array_contains_any": "x"}}, {"k": {"$nin": None}},
    {"k": {"$regex": "a"}}, {"k": {"$eq": {"a": 1}}}, {"k": {"a": {}}}, {"k": object()},
]


def _deep(n: int) -> dict:
    f: dict = {"a": 1}
    for _ in range(n):
        f = {"a": f}
    return f


bad_filter = st.sampled_from(BAD_PARTS) | st.builds(
    lambda good, bad: {**good, **bad} if not (good.keys() & bad.keys()) else bad, field_filter, st.sampled_from(BAD_PARTS)
) | st.sampled_from([[], "x", 1, ("a", 1), _deep(40), {"$or": [{"a": 1}, _deep(40)]}])


class FilterHarness:
    """One store for the whole test; every example is its own user scope."""

    def __init__(self, store, strategies):
        self.store = store
        self.strategies = strategies
        self.counter = itertools.count()
        self.examples = 0
        self.checks = 0
        self.selective = 0  # examples whose filter kept some records and dropped others

    def check(self, docs, flt) -> None:
        n = next(self.counter)
        user = f"u{n}"
        ids = [f"r{n}_{i}" for i in range(len(docs))]
        self.store.add(
            [f"common words{' alpha' * (i % 4)}{' beta' * (i % 3)}" for i in range(len(docs))], "memory",
            record_ids=ids, user_ids=user, metadata=list(docs),
        )
        try:
            expected = {rid for rid, doc in zip(ids, docs) if matches(doc, flt)}
            self.selective += 0 < len(expected) < len(ids)
            listed = {r.id for r in self.store.list("memory", user_id=user, metadata_filter=flt, limit=None)}
            assert listed == expected, f"list: filter={flt!r} extra={listed - expected} missing={expected - listed}"
            for strategy in self.strategies:
                hits = self.store.search(
                    "common", k=len(docs) + 5, user_id=user, record_types=["memory"],
                    metadata_filter=flt, strategy=strategy,
                )
                found = {r.id for r, _ in hits}
                assert found == expected, (
                    f"search({strategy.value}): filter={flt!r} extra={found - expected} missing={expected - found}"
                )
                self.checks += 1
                if len(expected) >= 2 and strategy != SearchStrategy.HYBRID:
                    # SC-6.5: the filter applies before the top-k cut: the k best matching
                    # records, with the distances the full ranking gives them
                    full = {r.id: d for r, d in hits}
                    k = len(expected) // 2
                    top = self.store.search(
                        "common", k=k, user_id=user, record_types=["memory"], metadata_filter=flt, strategy=strategy,
                    )
                    assert len(top) == k and {r.id for r, _ in top} <= expected, (strategy.value, flt, k)
                    assert all(abs(full[r.id] - d) < 1e-9 for r, d in top)
                    rest = [full[rid] for rid in expected - {r.id for r, _ in top}]
                    assert max(d for _, d in top) <= min(rest) + 1e-9, (strategy.value, flt, k)
            self.checks += 1
        finally:
            self.store.delete("user_profile", user, cascade=True)
        self.examples += 1


def _strategies(engine):
    if engine == "sqlite":
        return SearchStrategy.HYBRID, [SearchStrategy.VECTOR, SearchStrategy.KEYWORD, SearchStrategy.HYBRID]
    return SearchStrategy.VECTOR, [SearchStrategy.VECTOR]


def _run_valid(make_store, engine, max_examples):
    store_strategy, strategies = _strategies(engine)
    harness = FilterHarness(make_store(search_strategy=store_strategy), strategies)

    @settings(
        max_examples=max_examples, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(data=st.data())
    def prop(data):
        docs = data.draw(documents(), label="docs")
        flt = data.draw(filter_strategy(docs), label="filter")
        harness.check(docs, flt)

    prop()
    print(
        f"filter fuzz ({engine}): {harness.examples} examples ({harness.selective} selective), "
        f"{harness.checks} list/search comparisons"
    )
    assert harness.examples >= max_examples // 2
    assert harness.selective >= harness.examples // 20, "the generated filters hardly ever select anything"
    return harness


def _run_invalid(make_store, engine, max_examples):
    store_strategy, strategies = _strategies(engine)
    store = make_store(search_strategy=store_strategy)
    store.add(["common words"], "memory", record_ids=["r0"], metadata={"k": 1})
    seen = itertools.count()

    @settings(max_examples=max_examples, deadline=None, database=None)
    @given(flt=bad_filter)
    def prop(flt):
        next(seen)
        calls = [lambda: store.list("memory", metadata_filter=flt)]
        calls += [
            (lambda s=s: store.search("common", k=3, metadata_filter=flt, strategy=s)) for s in strategies
        ]
        for call in calls:
            with pytest.raises((ValueError, TypeError)) as info:
                call()
            assert not isinstance(info.value, (sqlite3.Error, StoreError)), repr(info.value)

    prop()
    count = next(seen)
    print(f"invalid filters ({engine}): {count} examples")
    return count


def test_filters_match_reference(make_store, engine):
    _run_valid(make_store, engine, 200)


def test_invalid_filters_raise_argument_errors(make_store, engine):
    _run_invalid(make_store, engine, 100)


@pytest.mark.slow
def test_filters_match_reference_slow(make_store, engine):
    harness = _run_valid(make_store, engine, 10_000)
    assert harness.examples >= 10_000


@pytest.mark.slow
def test_invalid_filters_slow(make_store, engine):
    _run_invalid(make_store, engine, 2_000)


def test_nul_in_metadata_is_never_confused(make_store, engine):
    """A NUL inside a metadata string or key must not make it equal to its prefix: either
    the store rejects it with ValueError (nothing stored), or filters see the full text."""
    store = make_store()
    try:
        store.add(["x"], "memory", record_ids=["nul"], metadata={"k": "a\x00b", "x\x00y": 1})
    except ValueError:
        assert store.get("memory", "nul") is None
        return
    assert store.get("memory", "nul").metadata == {"k": "a\x00b", "x\x00y": 1}
    assert [r.id for r in store.list("memory", metadata_filter={"k": "a"})] == []
    assert [r.id for r in store.list("memory", metadata_filter={"x": 1})] == []
    assert [r.id for r in store.list("memory", metadata_filter={"k": "a\x00b"})] == ["nul"]


def test_numbers_the_sqlite_build_parses_off_by_an_ulp(make_store, engine):
    """The slow fuzz found it: SQLite 3.50.4 reads the stored JSON text ``-1e-300`` as
    ``-9.999999999999999e-301``. A filter on the same number must still match it, on the SQL
    path (list) and the mask path (search), for equality and for the inclusive bounds."""
    store = make_store()
    values = [-1e-300, 1e-300, 2.2250738585072014e-308, 5e-324, 1.7976931348623157e308, 0.1, 10**25]
    ids = [f"n{i}" for i in range(len(values))]
    store.add(["common words"] * len(values), "memory", record_ids=ids, metadata=[{"x": v} for v in values])
    for rid, v in zip(ids, values):
        for flt in ({"x": v}, {"x": {"$eq": v}}, {"x": {"$gte": v, "$lte": v}}, {"x": {"$in": [v]}}):
            assert [r.id for r in store.list("memory", metadata_filter=flt)] == [rid], (flt, v)
            found = store.search("common", k=20, metadata_filter=flt)
            assert [r.id for r, _ in found] == [rid], (flt, v)
