"""An ``add`` whose ids are already stored is refused before anything is written; the
check looks the ids up by (record_type, id), with one type per call or several
(``add_batches``)."""

from __future__ import annotations

import pytest

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
