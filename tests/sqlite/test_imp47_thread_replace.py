"""imp47: ``replace`` of a ``thread`` line (SC-13.6) must not change who opened a thread.

A thread row's ``user_id`` / ``agent_id`` say who opened the thread (SC-13.2), which decides
what ``forget`` clears or takes whole, what ``export --user`` carries (the rows of the threads
she opened) and what ``oramem.threads.write_refusal`` lets a write of no user do there. red40
made ``replace`` refuse a stored record of another scope but left thread rows out, so Bob's
crafted file with a thread line for Alice's private thread (user_id bob, or null) made him
its opener, or took her out of it; and a line naming him over the agent's shared thread (a
row of no user) made him the opener of the agent's shared conversation, the takeover thr45's
rule guards. Decided: replace of a thread row only restores the same opener (same user_id
and agent_id, NULL equal only to NULL: its created_at); another opener, or no user where the
line names one and the reverse, is refused with DuplicateRecordError naming the thread id,
never whose, before anything is written (CLI exit 2). ``skip`` keeps the stored row."""

from __future__ import annotations

import json

import pytest

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.embedders import HashEmbedder
from oramem.errors import DuplicateRecordError

ALICE, BOB = "alice-7f3a", "bob-2c9e"


def _store(path):
    return SQLiteMemoryStore(str(path), embedder=HashEmbedder(dim=32))


@pytest.fixture
def shared(tmp_path):
    """Alice's private thread (she opened it) and the agent's shared thread (no user)."""
    path = tmp_path / "shared.db"
    with _store(path) as store:
        store.add(["alice: my diagnosis is confidential"], "message", thread_ids="t-alice", user_ids=ALICE,
                  agent_ids="helper", roles="user")
        store.add(["welcome, everyone"], "message", thread_ids="t-team", agent_ids="helper", roles="assistant")
    return path


def _row(path, tid):
    with _store(path) as store:
        r = store.get("thread", tid)
        return (r.user_id, r.agent_id, r.created_at)


@pytest.mark.parametrize("tid,user,agent", [
    ("t-alice", BOB, "helper"),    # her private thread handed to Bob
    ("t-alice", None, "helper"),   # her private thread made a thread of no user
    ("t-alice", ALICE, "other"),   # her user, another agent
    ("t-team", BOB, "helper"),     # the agent's shared thread taken by Bob
], ids=["alice-to-bob", "alice-to-nobody", "alice-other-agent", "shared-to-bob"])
def test_restore_threads_replace_refuses_another_opener(shared, tid, user, agent):
    before = _row(shared, tid)
    with _store(shared) as store:
        with pytest.raises(DuplicateRecordError, match="another user or agent") as err:
            store.restore_threads([(tid, user, agent, "2020-01-01T00:00:00Z")], on_conflict="replace")
        assert err.value.records == (("thread", tid),)
        assert "who opened the thread" in str(err.value) and ALICE not in str(err.value)
    assert _row(shared, tid) == before


def test_restore_threads_replace_of_the_same_opener_restores_its_row(shared):
    with _store(shared) as store:
        assert store.restore_threads([("t-alice", ALICE, "helper", "2020-01-01T00:00:00Z")],
                                     on_conflict="replace") == ["t-alice"]
        assert store.restore_threads([("t-team", None, "helper", "2020-01-01T00:00:00Z")],
                                     on_conflict="replace") == ["t-team"]
    assert _row(shared, "t-alice")[:2] == (ALICE, "helper") and _row(shared, "t-alice")[2].startswith("2020-01-01")
    assert _row(shared, "t-team")[:2] == (None, "helper")


def test_cli_import_replace_of_bobs_crafted_thread_line_keeps_alices_thread(runner, shared, tmp_path):
    """Bob's file: a thread line for Alice's thread naming him, and a record of his. Before,
    exit 0, the thread was his (his `export --user` then carried her thread's row); now exit
    2, nothing written, her thread hers."""
    file = tmp_path / "bob.jsonl"
    file.write_text(
        json.dumps({"record_type": "thread", "id": "t-alice", "user_id": BOB, "agent_id": "helper"}) + "\n"
        + json.dumps({"record_type": "memory", "id": "bob-note-1", "content": "bob: locker 4471", "user_id": BOB})
        + "\n", encoding="utf-8")
    before = _row(shared, "t-alice")
    result = runner.invoke(cli, ["--db", str(shared), "import", "--on-conflict", "replace", str(file)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "'t-alice' (thread)" in result.output and "--on-conflict skip" in result.output
    assert ALICE not in result.output
    assert _row(shared, "t-alice") == before
    with _store(shared) as store:
        assert store.get("memory", "bob-note-1") is None
    out = tmp_path / "bob-export.jsonl"
    assert runner.invoke(cli, ["--db", str(shared), "export", "--user", BOB, "--out", str(out)]).exit_code == 0
    assert "t-alice" not in out.read_text(encoding="utf-8")
    # skip keeps her row (and writes his record)
    result = runner.invoke(cli, ["--db", str(shared), "import", "--on-conflict", "skip", str(file)],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert _row(shared, "t-alice") == before
