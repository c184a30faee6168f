"""An ``add`` whose ids are already stored is refused before anything is written; the
check looks the ids up by (record_type, id), with one type per call or several
(``add_batches``)."""

from __future__ import annotations

import pytest

import oramem
from oramem import PendingRecordBatch

from .conftest import vec


def _ids(store, record_type):
    return sorted(r.id for r in store.list(record_type))


def test_one_type_lists_the_stored_ids_in_order_and_writes_nothing(store):
    store.add(["a", "b", "c"], "memory", record_ids=["m9", "m2", "m5"], embeddings=[vec(1), vec(2), vec(3)])
    with pytest.raises(ValueError, match=r"record_ids already stored: 'm2' \(memory\), 'm9' \(memory\); nothing was added"):
        store.add(["x", "y", "z"], "memory", record_ids=["m9", "new", "m2"], embeddings=[vec(1), vec(2), vec(3)])
    assert _ids(store, "memory") == ["m2", "m5", "m9"]
    assert store.get("memory", "m9").content == "a"


def test_same_id_of_another_type_is_no_clash(store):
    store.add(["a"], "memory", record_ids="k1", embeddings=[vec(1)])
    assert store.add(["f"], "fact", record_ids="k1", embeddings=[vec(2)]) == ["k1"]
    assert _ids(store, "fact") == ["k1"] and _ids(store, "memory") == ["k1"]


def test_several_types_in_one_call(store):
    store.add(["a"], "fact", record_ids="f1", embeddings=[vec(1)])
    store.add(["b"], "memory", record_ids="m1", embeddings=[vec(1)])
    batches = [
        PendingRecordBatch(["m"], "memory", record_ids=["f2"], embeddings=[vec(2)]),  # f2 is no memory yet
        PendingRecordBatch(["g"], "fact", record_ids=["f1"], embeddings=[vec(3)]),
    ]
    with pytest.raises(ValueError, match=r"record_ids already stored: 'f1' \(fact\); nothing was added"):
        store.add_batches(batches)
    assert _ids(store, "memory") == ["m1"] and _ids(store, "fact") == ["f1"]
    batches[1] = PendingRecordBatch(["g"], "fact", record_ids=["m1"], embeddings=[vec(3)])  # m1 is no fact yet
    assert store.add_batches(batches) == ["f2", "m1"]
    assert _ids(store, "memory") == ["f2", "m1"] and _ids(store, "fact") == ["f1", "m1"]


def test_the_refusal_is_a_duplicate_record_error_naming_the_clashes(store):
    """oramem.DuplicateRecordError (an ArgumentError, so a ValueError as before) carries the
    (record_type, id) pairs already stored, so a caller can update them instead; an id
    repeated within one call is the same error (Oracle's -20005 covers both)."""
    store.add(["a", "b"], "memory", record_ids=["m9", "m2"], embeddings=[vec(1), vec(2)])
    store.add(["ana's profile"], "user_profile", record_ids="ana", embeddings=[vec(3)])
    with pytest.raises(oramem.DuplicateRecordError) as clash:
        store.add(["x", "y", "z"], "memory", record_ids=["m9", "new", "m2"], embeddings=[vec(1), vec(2), vec(3)])
    assert clash.value.records == (("memory", "m2"), ("memory", "m9"))
    assert isinstance(clash.value, oramem.ArgumentError) and isinstance(clash.value, ValueError)
    with pytest.raises(oramem.DuplicateRecordError, match="user profile 'ana' already exists") as profile:
        store.add(["again"], "user_profile", record_ids="ana", embeddings=[vec(4)])
    assert profile.value.records == (("user_profile", "ana"),)
    with pytest.raises(oramem.DuplicateRecordError, match="duplicate record id 'r1' in one call") as repeated:
        store.add(["p", "q"], "memory", record_ids=["r1", "r1"], embeddings=[vec(1), vec(2)])
    assert repeated.value.records == ()
    assert _ids(store, "memory") == ["m2", "m9"]
