"""The row -> Record conversion of every read path (oramem.sqlite.records.to_record) builds
the same object as the dataclass constructor with ``json.loads`` metadata, and the query
vector check's float32 fast path (oramem.normalize._check_vector) answers as the general
path does."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from oramem.errors import ArgumentError
from oramem.normalize import _check_vector
from oramem.sqlite.records import load_json, to_record
from oramem.types import MessageRecord, Record

METADATA = [None, "{}", '{"kg_user": "B", "n": 2.5, "big": 1152921504606846977, "list": [1, null, true]}',
            '{"nested": {"a": {"b": [1e300, -0.0, "\\u00e9"]}}}', '{"a": 1, "a": 2}']


@pytest.mark.parametrize("metadata", METADATA)
@pytest.mark.parametrize("record_type", ["fact", "message", "user_profile"])
def test_to_record_is_the_constructor_s_record(record_type, metadata):
    row = (7, record_type, "r7", "text", "2025-01-01T00:00:00.000000+00:00", metadata, "th", "B", "ag",
           "user" if record_type == "message" else None, "2025-01-01T00:00:00.000000+00:00", None)
    fields = dict(id="r7", record_type=record_type, content="text", timestamp=row[4],
                  metadata=None if metadata is None else json.loads(metadata), thread_id="th", user_id="B",
                  agent_id="ag", created_at=row[10], expires_at=None)
    want = MessageRecord(**fields, role="user", seq_no=7) if record_type == "message" else Record(**fields)
    got = to_record(row)
    assert type(got) is type(want) and got == want and repr(got) == repr(want)
    assert list(vars(got)) == [f.name for f in dataclasses.fields(want)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.id = "other"  # type: ignore[misc]


def test_records_have_nothing_the_fast_constructor_would_skip():
    for cls in (Record, MessageRecord):
        assert not hasattr(cls, "__post_init__") and "__slots__" not in vars(cls)


@pytest.mark.parametrize("text", ['{"a": [1, 2.5]}', "[]", '"x"', "1", "null", " {} ", "{}\n", "\ufeff{}", "", "{",
                                  "[1,]", "NaN", '{"a": 1}x', '{"a": "\ud800"}', b'{"a": 1}', "{} {}"])
def test_load_json_is_json_loads(text):
    try:
        want = json.loads(text)
    except Exception as exc:  # the same error, same message
        with pytest.raises(type(exc)) as caught:
            load_json(text)
        assert str(caught.value) == str(exc)
    else:
        got = load_json(text)
        assert type(got) is type(want) and repr(got) == repr(want)  # repr: NaN, -0.0


@pytest.mark.parametrize("values", [[0.5, -1.0, 3.0], [np.nan, 1.0], [np.inf, 1.0], [0.0, 0.0], [], [0.0, -0.0, 1e-45]])
def test_float32_fast_path_answers_as_the_general_path(values):
    fast = np.asarray(values, dtype=np.float32)
    general = list(values)  # a list: the conversion path
    try:
        want = _check_vector(general, "query_vector")
    except ArgumentError as exc:
        with pytest.raises(ArgumentError) as caught:
            _check_vector(fast, "query_vector")
        assert str(caught.value) == str(exc)
    else:
        got = _check_vector(fast, "query_vector")
        assert got is fast and got.dtype == want.dtype and np.array_equal(got, want)


def test_other_vector_kinds_keep_the_general_path():
    swapped = np.asarray([1.0, 2.0], dtype=">f4")
    assert _check_vector(swapped, "v").dtype == np.float32
    assert _check_vector(np.asarray([1.0, 2.0]), "v").dtype == np.float32
    with pytest.raises(ArgumentError, match="1-D"):
        _check_vector(np.ones((2, 2), dtype=np.float32), "v")
