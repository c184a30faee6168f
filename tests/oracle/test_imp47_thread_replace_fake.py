"""imp47 (Oracle parity): ``restore_threads(on_conflict="replace")`` (and ``oramem.jsonl``
import of ``thread`` lines with replace) over an Oracle store must not change who opened a
thread (SC-13.2, SC-13.6). ``oramem_store.add_json`` left thread rows out of its red40
check (ora44), so Bob's thread line for Alice's private thread made him its opener, and one
naming him over the agent's shared thread (no user) made him the opener of that. The replace
branch now refuses a stored thread row of another (agent, user) too, -20005
(``DuplicateRecordError``), naming the thread id, never whose, nothing written. Here the
driver's path over the recording fake, whose stand-in answers as the package does; the
PL/SQL text is checked in ``tests/plsql/test_imp47_thread_replace_plsql.py``. Static-checked,
not run against Oracle."""

from __future__ import annotations

import json

import pytest

from oramem import jsonl
from oramem.errors import DuplicateRecordError

from .plsql_standin import standin_store
# the two users, the stand-in behind the recording fake and its snapshot: ora44's
from .test_ora44_replace_fake import ALICE, BOB, _snapshot, _standin


def _seed(store):
    # the thread rows as add_json's step 4 makes them (the stand-in does not make implicit
    # thread rows): Alice opened hers, the agent's shared thread has no user
    store.restore_threads([("t-alice", ALICE, "helper", None), ("t-team", None, "helper", None)])
    store.add(["alice: my diagnosis is confidential"], "message", thread_ids="t-alice", user_ids=ALICE,
              agent_ids="helper", roles="user")
    store.add(["welcome, everyone"], "message", thread_ids="t-team", agent_ids="helper", roles="assistant")


@pytest.mark.parametrize("tid,user,agent", [
    ("t-alice", BOB, "helper"),
    ("t-alice", None, "helper"),
    ("t-alice", ALICE, "other"),
    ("t-team", BOB, "helper"),
], ids=["alice-to-bob", "alice-to-nobody", "alice-other-agent", "shared-to-bob"])
def test_restore_threads_replace_refuses_another_opener(tid, user, agent):
    store, rec = standin_store()
    try:
        _seed(store)
        standin = _standin(rec)
        before = _snapshot(standin)
        with pytest.raises(DuplicateRecordError, match="another user or agent") as err:
            store.restore_threads([(tid, user, agent, None)], on_conflict="replace")
        assert f"'{tid}' (thread)" in str(err.value) and ALICE not in str(err.value)
        assert "who opened the thread" in str(err.value)
        assert _snapshot(standin) == before
    finally:
        store.close()


def test_restore_threads_replace_of_the_same_opener_still_restores_it():
    store, rec = standin_store()
    try:
        _seed(store)
        assert store.restore_threads([("t-alice", ALICE, "helper", "2020-01-01T00:00:00Z")],
                                     on_conflict="replace") == ["t-alice"]
        row = store.get("thread", "t-alice")
        assert (row.user_id, row.agent_id) == (ALICE, "helper") and row.created_at.startswith("2020-01-01")
    finally:
        store.close()


def test_jsonl_import_replace_of_bobs_thread_line_stops_before_his_records():
    store, rec = standin_store()
    try:
        _seed(store)
        standin = _standin(rec)
        before = _snapshot(standin)
        lines = jsonl.parse_lines([
            json.dumps({"record_type": "thread", "id": "t-alice", "user_id": BOB, "agent_id": "helper"}),
            json.dumps({"record_type": "memory", "id": "bob-note-1", "content": "bob: locker 4471", "user_id": BOB}),
        ])
        with pytest.raises(jsonl.ImportStopped) as stop:
            jsonl.import_records(store, lines, on_conflict="replace")
        assert isinstance(stop.value.cause, DuplicateRecordError) and stop.value.result.imported == 0
        assert _snapshot(standin) == before
    finally:
        store.close()
