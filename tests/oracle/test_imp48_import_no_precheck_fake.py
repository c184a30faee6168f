"""imp48 on Oracle: no pre-check (said in ``oramem import --help``, README, store-decisions).

The SQLite engine checks a whole import file's ids before its first batch
(``Engine.check_restore``); the Oracle store has no read of many ids with their user and
agent without new PL/SQL, so its engine raises ``CapabilityError`` for that check,
``jsonl.check_conflicts`` says it did not check (False) and the import runs as before: the
batch holding Alice's id is refused by ``add_json`` (-20005, ``DuplicateRecordError``) and the
batches before it stay written. This pins the documented behaviour over the recording fake
(its stand-in answers ``add_json`` as the package does). Static-checked, not run against Oracle."""

from __future__ import annotations

import pytest

from oramem import jsonl
from oramem.errors import CapabilityError, DuplicateRecordError

from .plsql_standin import standin_store

ALICE, BOB = "alice-7f3a", "bob-2c9e"


def _lines(ids):
    import json

    text = [json.dumps({"record_type": "memory", "id": i, "content": f"bob: {i}", "user_id": BOB}) for i in ids]
    return jsonl.parse_lines(text, "bob.jsonl")


def test_oracle_engine_has_no_restore_precheck_and_import_finds_the_refusal_per_batch():
    store, rec = standin_store()
    try:
        store.add(["alice: my diagnosis is confidential"], "memory", record_ids="n-x1", user_ids=ALICE)
        with pytest.raises(CapabilityError, match="pre-check"):
            store._engine.check_restore([("memory", "n-x1", None, BOB)], "replace")
        lines = _lines(["bob-1", "bob-2", "n-x1"])
        assert jsonl.check_conflicts(store, lines, on_conflict="replace") is False
        with pytest.raises(jsonl.ImportStopped) as err:
            jsonl.import_records(store, lines, on_conflict="replace", batch_size=2)
        assert not isinstance(err.value, jsonl.ImportRefused)
        assert isinstance(err.value.cause, DuplicateRecordError)
        assert err.value.result.imported == 2 and err.value.lineno == 3
        assert store.get("memory", "n-x1").user_id == ALICE
    finally:
        store.close()
