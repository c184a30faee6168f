"""The batched checks of ``add`` (issue 26 item 2, insert throughput): ids, texts and
metadata of a whole call are checked at once when they are plain, and entry by entry
otherwise. These tests pin that the fast paths accept and store exactly what the
per-entry checks do, and that every bad entry still raises the per-entry error, naming
the first bad entry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oramem import SQLiteMemoryStore
from oramem.errors import ArgumentError, ArgumentTypeError
from oramem.normalize import _check_text, _checked_metadata, check_id, draft_records


class _Str(str):
    pass


def _reference(contents, record_ids, user_ids, thread_ids, metadata):
    """What the per-entry checks give, entry by entry."""
    return (
        [_check_text(c, f"contents[{i}]") for i, c in enumerate(contents)],
        [check_id(v, f"record_ids[{i}]", optional=True) for i, v in enumerate(record_ids)],
        [check_id(v, f"user_ids[{i}]", optional=True) for i, v in enumerate(user_ids)],
        [check_id(v, f"thread_ids[{i}]", optional=True) for i, v in enumerate(thread_ids)],
        [_checked_metadata(m, "metadata") for m in metadata],
    )


VARIED = dict(
    contents=["plain", "", None, "ünïcødé ✓ 𝄞", _Str("subclass"), "x" * 5000, "tab\tand\nnewline"],
    record_ids=["a", None, "é" * 255, _Str("s"), "b", "c", "d"],
    user_ids=[None, "u1", "u1", "ü", None, _Str("u2"), "u" * 255],
    thread_ids=["t", None, "t", "t2", None, None, "t3"],
    metadata=[
        {"k": 1, "nested": {"a": [1, 2.5, None, True]}, "s": "ü"},
        None,
        {"content": "fallback text"},
        {},
        {"big": 10**30, "neg": -0.0, "f": 1e-300},
        {"esc": "quote\" back\\slash \u2028 \x01"},
        {"u": "\\u0000 is not a NUL"},
    ],
)


def test_varied_batch_checks_as_the_per_entry_checks_do() -> None:
    drafts = draft_records(VARIED["contents"], "memory", **{k: v for k, v in VARIED.items() if k != "contents"})
    texts, ids, users, threads, checked = _reference(**VARIED)
    texts[2] = "fallback text"  # SC-4.1: content None takes metadata["content"]
    assert [d.content for d in drafts] == texts
    assert [d.id for d in drafts] == ids
    assert [d.user_id for d in drafts] == users
    assert [d.thread_id for d in drafts] == threads
    assert [d.metadata for d in drafts] == [c for c, _ in checked]
    assert [d.metadata_json for d in drafts] == [t for _, t in checked]
    # detached copies, not the caller's dicts
    for d, given in zip(drafts, VARIED["metadata"]):
        if given is not None:
            assert d.metadata is not given
    assert math.copysign(1.0, drafts[4].metadata["neg"]) == -1.0


@pytest.mark.parametrize(
    "field, bad_value, error, message",
    [
        ("record_ids", "\ud800", ArgumentError, "record_ids[3] contains a lone surrogate"),
        ("record_ids", "", ArgumentError, "record_ids[3] must not be empty"),
        ("record_ids", "x" * 256, ArgumentError, "record_ids[3] is 256 characters"),
        ("record_ids", "a\x00b", ArgumentError, "record_ids[3] must not contain NUL"),
        ("record_ids", 7, ArgumentTypeError, "record_ids[3] must be a str or None"),
        ("user_ids", "\udfff", ArgumentError, "user_ids[3] contains a lone surrogate"),
        ("user_ids", b"bytes", ArgumentTypeError, "user_ids[3] must be a str or None"),
        ("thread_ids", "", ArgumentError, "thread_ids[3] must not be empty"),
        ("contents", "bad \ud83d text", ArgumentError, "contents[3] contains a lone surrogate"),
        ("contents", 3.5, ArgumentTypeError, "contents[3] must be a str or None"),
    ],
)
def test_a_bad_entry_raises_the_per_entry_error(field, bad_value, error, message) -> None:
    values = {"contents": ["a", "b", "c", "d", "e"], "record_ids": ["1", "2", "3", "4", "5"],
              "user_ids": ["u", "u", None, "u", "u"], "thread_ids": [None, "t", "t", "t", None]}
    values[field] = list(values[field])
    values[field][3] = bad_value
    values[field][4] = "\ud800"  # a later bad entry: not the one named
    contents = values.pop("contents")
    with pytest.raises(error) as info:
        draft_records(contents, "memory", **values)
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        ({"n": float("nan")}, ArgumentError, "metadata must be JSON-serialisable"),
        ({"o": object()}, ArgumentError, "metadata must be JSON-serialisable"),
        ({1: "int key"}, ArgumentTypeError, "metadata keys must be strings"),
        ({"s": "\ud800"}, ArgumentError, "metadata contains a lone surrogate"),
        ({"s": "a\x00b"}, ArgumentError, "metadata keys and string values must not contain NUL"),
        ({"a\x00": 1}, ArgumentError, "metadata keys and string values must not contain NUL"),
        ("not a dict", ArgumentTypeError, "metadata must be a dict or None"),
    ],
)
def test_bad_metadata_raises_the_per_entry_error(bad, error, message) -> None:
    metadata = [{"ok": 1}, None, bad, {"also": "ok"}]
    with pytest.raises(error) as info:
        draft_records(["a", "b", "c", "d"], "memory", metadata=metadata)
    assert str(info.value).startswith(message), str(info.value)
    with pytest.raises(error) as single:
        _checked_metadata(bad, "metadata")
    assert str(single.value) == str(info.value)


def test_cyclic_metadata_keeps_its_message() -> None:
    cyclic: dict = {}
    cyclic["self"] = cyclic
    with pytest.raises(ArgumentError) as info:
        draft_records(["a", "b"], "memory", metadata=[{"x": 1}, cyclic])
    with pytest.raises(ArgumentError) as single:
        _checked_metadata(cyclic, "metadata")
    assert str(info.value) == str(single.value)


def test_first_duplicate_id_is_named() -> None:
    with pytest.raises(ArgumentError, match="duplicate record id 'b'"):
        draft_records(["1", "2", "3", "4", "5"], "memory", record_ids=["a", "b", None, "b", "a"])


def test_scalar_scope_is_checked_once_and_broadcast() -> None:
    drafts = draft_records(["a", "b"], "memory", user_ids="alice", thread_ids=None)
    assert [(d.user_id, d.thread_id) for d in drafts] == [("alice", None), ("alice", None)]
    with pytest.raises(ArgumentError, match="^user_ids must not be empty"):
        draft_records(["a"], "memory", user_ids="")
    assert draft_records([], "memory", user_ids="") == []  # nothing to scope: as before


def test_stored_rows_of_a_varied_add(tmp_path) -> None:
    """The stored records of a varied add read back as given (ids, scopes, metadata,
    content fallback, TTL, explicit chunks), through the fast paths."""
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), vector_dim=3, search_strategy="hybrid")
    try:
        md = VARIED["metadata"]
        ids = store.add(
            [c if c is None else str(c) for c in VARIED["contents"]], "memory",
            record_ids=["a", "r2", "é" * 255, "s", "b", "c", "d"], user_ids=VARIED["user_ids"],
            thread_ids=VARIED["thread_ids"], metadata=md, ttl_days=[None, 1, 2, None, 3, None, 0],
            embeddings=[np.ones(3, np.float32)] * 3 + [[np.ones(3, np.float32), np.full(3, 2.0, np.float32)]]
            + [np.ones(3, np.float32)] * 3,
            index_texts=[None, None, None, ["chunk one", "chunk two"], None, None, None],
        )
        assert ids[1] == "r2"
        for rid, user, thread, meta in zip(ids, VARIED["user_ids"], VARIED["thread_ids"], md):
            rec = store.get("memory", rid)
            if rid == "d":  # ttl_days=0: expired at once, not visible
                assert rec is None
                continue
            assert rec is not None
            assert (rec.user_id, rec.thread_id) == (user, thread)
            assert rec.metadata == meta
        assert store.get("memory", "r2").content == ""
        assert store.get("memory", "é" * 255).content == "fallback text"
        assert store.get("memory", "a").expires_at is None
        assert store.get("memory", "r2").expires_at is not None
    finally:
        store.close()
