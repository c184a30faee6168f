"""A search's metadata filter is validated once per distinct document
(oramem.normalize._validated_filter): the same answer as validate_filter, every error
every time, and documents that differ only in JSON types or a zero's sign kept apart."""

from __future__ import annotations

import math

import pytest

from oramem import normalize
from oramem.errors import ArgumentError, ArgumentTypeError
from oramem.filters import filter_key, validate_filter


@pytest.fixture
def calls(monkeypatch) -> list:
    seen: list = []
    real = normalize.validate_filter
    monkeypatch.setattr(normalize, "validate_filter", lambda flt: seen.append(flt) or real(flt))
    monkeypatch.setattr(normalize, "_VALIDATED", type(normalize._VALIDATED)())
    return seen


def test_a_repeated_document_is_validated_once(calls):
    flt = {"$and": [{"kg_primary": "person:1", "kg_valid_to": {"$exists": False}}, {"kg_user": {"$exists": False}}]}
    first = normalize._validated_filter(flt)
    again = normalize._validated_filter({"$and": [{"kg_primary": "person:1", "kg_valid_to": {"$exists": False}},
                                                  {"kg_user": {"$exists": False}}]})
    assert first == validate_filter(flt) and again is first and len(calls) == 1
    normalize._validated_filter({"$and": [{"kg_primary": "person:2", "kg_valid_to": {"$exists": False}},
                                          {"kg_user": {"$exists": False}}]})
    assert len(calls) == 2


@pytest.mark.parametrize("a, b", [({"x": 1}, {"x": 1.0}), ({"x": 1}, {"x": True}), ({"x": 0.0}, {"x": -0.0}),
                                  ({"x": {"$gt": 0.0}}, {"x": {"$gt": -0.0}})])
def test_documents_equal_in_python_stay_apart(calls, a, b):
    assert filter_key(a) != filter_key(b)
    got_a, got_b = normalize._validated_filter(a), normalize._validated_filter(b)
    assert repr(got_a) == repr(validate_filter(a)) and repr(got_b) == repr(validate_filter(b))
    assert len(calls) == 2
    if b == {"x": -0.0}:
        assert math.copysign(1.0, got_b["x"]) == -1.0


@pytest.mark.parametrize("bad, error", [({"x": {"$in": []}}, ArgumentError), ({"x": {"$bogus": 1}}, ArgumentError),
                                        ({"$and": {}}, ArgumentError), ({"x": {"$exists": 1}}, ArgumentTypeError),
                                        ({"x": float("nan")}, ArgumentError)])
def test_a_bad_filter_raises_every_time(calls, bad, error):
    with pytest.raises(error) as first:
        validate_filter(bad)
    for _ in range(2):
        with pytest.raises(error) as again:
            normalize._validated_filter(bad)
        assert str(again.value) == str(first.value)
    assert len(calls) == 2


def test_other_containers_are_validated_every_time(calls):
    flt = {"x": {"$in": ("a", "b")}}  # a tuple: no key, normalised to a list each time
    assert normalize._validated_filter(flt) == {"x": {"$in": ["a", "b"]}}
    assert normalize._validated_filter(flt) == {"x": {"$in": ["a", "b"]}}
    assert len(calls) == 2


def test_the_engine_finds_a_shared_filter_s_key_by_identity(calls, monkeypatch):
    from oramem import filters

    monkeypatch.setattr(filters, "_KEYS", {})
    shared = normalize._validated_filter({"kg_user": "B", "n": {"$gte": 2}})
    assert filters.known_filter_key(shared) == filter_key(shared)
    want, want_a = filter_key(shared), filter_key({"kg_user": "A", "n": {"$gte": 2}})
    counted: list = []
    real = filters.filter_key
    monkeypatch.setattr(filters, "filter_key", lambda flt: counted.append(flt) or real(flt))
    assert filters.known_filter_key(shared) == want and counted == []  # looked up
    mine = {"kg_user": "B", "n": {"$gte": 2}}  # equal, but a caller's object: computed every time
    assert filters.known_filter_key(mine) == want and counted and counted[0] is mine
    mine["kg_user"] = "A"
    assert filters.known_filter_key(mine) == want_a


def test_a_hostile_nesting_is_validate_filter_s_error_not_a_recursion_error(calls):
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    nested: dict = {"k": 1}
    for _ in range(5000):
        nested = {"$and": [nested]}
    for flt in ({"k": deep}, nested):
        assert filter_key(flt) is None
        with pytest.raises(ArgumentError):
            normalize._validated_filter(flt)
    # a filter as deep as validation allows still has a key
    value: object = 1
    for _ in range(31):
        value = [value]
    assert validate_filter({"k": value}) and filter_key({"k": value}) is not None
