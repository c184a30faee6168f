"""ora44 (Oracle parity of red40's restore fix): ``restore_batches(on_conflict="replace")``
and ``oramem import --on-conflict replace`` over an Oracle store must not replace another
user's record stored under the same id (ids are the application's: Alice's and Bob's
``note-1``). ``oramem_store.add_json`` now refuses, in its replace branch and before its
DELETE, a stored record whose (agent_id, user_id) differ from the new record's (thread rows
too since imp47: ``test_imp47_thread_replace_fake.py``), with -20005 (``gc_duplicate_record_id``), which the driver maps to
``DuplicateRecordError`` as it does for "fail". The PL/SQL text is checked in
``tests/plsql/test_ora44_replace_plsql.py``; here the driver's path over the recording fake,
whose stand-in of ``add_json`` (``plsql_standin.StoreStandIn``) answers as the package does
(before ora44 it overwrote any stored record whatever ``on_conflict`` said). Static-checked,
not run against Oracle."""

from __future__ import annotations

import json

import pytest

from oramem import PendingRecordBatch
from oramem.errors import DuplicateRecordError

from .plsql_standin import StoreStandIn, standin_store

ALICE, BOB = "alice-7f3a", "bob-2c9e"


def _standin(rec) -> StoreStandIn:
    return rec.answers["oramem_store.add_json"].__self__


def _snapshot(standin: StoreStandIn) -> str:
    return json.dumps(sorted((list(k), v) for k, v in standin.records.items()), sort_keys=True, default=str)


def _last_batch(rec) -> dict:
    batch = [c for c in rec.plsql if c.name == "oramem_store.add_json"][-1].binds["in_batch"]
    return json.loads(getattr(batch, "data", batch))


@pytest.mark.parametrize("stored", [
    {"user_ids": ALICE},
    {"user_ids": BOB, "agent_ids": "support-bot"},  # Bob's, of another agent: another scope too
    {},  # a record of no user and no agent (shared)
], ids=["alice", "bob-other-agent", "unscoped"])
def test_bobs_replace_leaves_a_record_of_another_scope_byte_for_byte(stored):
    store, rec = standin_store()
    try:
        store.add(["what was there"], "memory", record_ids="note-1", **stored)
        standin = _standin(rec)
        before = _snapshot(standin)
        batch = PendingRecordBatch(["bob: my locker code is 4471", "bob: dentist on friday"], "memory",
                                   record_ids=["note-1", "note-2"], user_ids=BOB)
        with pytest.raises(DuplicateRecordError, match="another user or agent") as err:
            store.restore_batches([batch], on_conflict="replace")
        assert "'note-1' (memory)" in str(err.value) and ALICE not in str(err.value)
        assert _last_batch(rec)["on_conflict"] == "replace"
        assert _snapshot(standin) == before  # nothing written, hers byte for byte
        assert store.get("memory", "note-2") is None
        assert store.get("memory", "note-1").content == "what was there"
    finally:
        store.close()


def test_bobs_replace_of_his_own_record_still_replaces_it():
    store, rec = standin_store()
    try:
        store.add(["bob: an older note"], "memory", record_ids="note-1", user_ids=BOB)
        store.add(["alice: my diagnosis is confidential"], "memory", record_ids="note-9", user_ids=ALICE)
        batch = PendingRecordBatch(["bob: my locker code is 4471"], "memory", record_ids=["note-1"], user_ids=BOB)
        assert store.restore_batches([batch], on_conflict="replace") == ["note-1"]
        assert store.get("memory", "note-1").content == "bob: my locker code is 4471"
        assert store.get("memory", "note-9").user_id == ALICE
    finally:
        store.close()


def test_fail_and_skip_over_the_standin_answer_as_add_json():
    """The stand-in no longer overwrites a stored id whatever on_conflict says: fail is -20005
    (DuplicateRecordError), skip keeps the stored record (add_json step 2)."""
    store, rec = standin_store()
    try:
        store.add(["alice: my diagnosis is confidential"], "memory", record_ids="note-1", user_ids=ALICE)
        batch = PendingRecordBatch(["bob: my locker code is 4471"], "memory", record_ids=["note-1"], user_ids=BOB)
        with pytest.raises(DuplicateRecordError, match="already exists"):
            store.restore_batches([batch])
        assert store.restore_batches([batch], on_conflict="skip") == []
        assert store.get("memory", "note-1").user_id == ALICE
    finally:
        store.close()
