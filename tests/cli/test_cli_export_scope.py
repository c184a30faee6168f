"""`oramem export --user / --agent / --thread`: one user's (agent's, thread's) data, for an
access or portability request. Alice and Bob share an agent and a thread: Bob's export holds
every record and knowledge row of his and nothing of Alice's (nor the unscoped replies of the
thread they share), restores into a fresh store, and carries no erasure-log lines."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore, jsonl
from oramem.cli import cli
from oramem.embedders import HashEmbedder
from oramem.knowledge import KnowledgeMemory

BOB_TEXTS = {
    "BOB_PROFILE_q7", "BOB_MEMORY_q7", "BOB_IN_SHARED_q7", "BOB_PRIVATE_q7", "REPLY_TO_BOB_PRIVATE_q7",
    "BOB_OTHER_AGENT_q7",
}
BOB_FACT = "BOB_FACT_q7 bob drinks mate"
ALICE_TEXTS = {
    "ALICE_PROFILE_z3", "ALICE_MEMORY_z3", "ALICE_IN_SHARED_z3", "ALICE_PRIVATE_z3", "REPLY_TO_ALICE_PRIVATE_z3",
    "ALICE_FACT_z3 alice drinks tea",
}
SHARED_REPLY = "REPLY_IN_SHARED_z3"  # the assistant's unscoped reply in the shared thread: not Bob's


def run(runner: CliRunner, *args: str, expect: int = 0):
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def _lines(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture
def db(tmp_path, runner):
    path = str(tmp_path / "people.db")
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32)) as store:
        store.add_user("alice", "ALICE_PROFILE_z3")
        store.add_user("bob", "BOB_PROFILE_q7")
        store.add(["ALICE_MEMORY_z3"], "memory", user_ids="alice", agent_ids="helper")
        store.add(["BOB_MEMORY_q7"], "memory", user_ids="bob", agent_ids="helper")
        # the thread they share (Alice opened it), with the assistant's unscoped reply
        store.add(["ALICE_IN_SHARED_z3"], "message", user_ids="alice", agent_ids="helper", thread_ids="t-shared",
                  roles="user")
        store.add(["BOB_IN_SHARED_q7"], "message", user_ids="bob", agent_ids="helper", thread_ids="t-shared",
                  roles="user")
        store.add([SHARED_REPLY], "message", agent_ids="helper", thread_ids="t-shared", roles="assistant")
        for user, mine, reply in (("alice", "ALICE_PRIVATE_z3", "REPLY_TO_ALICE_PRIVATE_z3"),
                                  ("bob", "BOB_PRIVATE_q7", "REPLY_TO_BOB_PRIVATE_q7")):
            store.add([mine], "message", user_ids=user, agent_ids="helper", thread_ids=f"t-{user}", roles="user")
            store.add([reply], "message", agent_ids="helper", thread_ids=f"t-{user}", roles="assistant")
        store.add(["BOB_OTHER_AGENT_q7"], "memory", user_ids="bob", agent_ids="other")
        store.add_agent("other", "OTHER_AGENT_PROFILE")
        store.add(["carol was here"], "memory", user_ids="carol", agent_ids="helper")
        with KnowledgeMemory(store, None) as km:
            km.add_fact("helper", "Alice", "ALICE_FACT_z3 alice drinks tea", subject_type="person", user_id="alice")
            km.add_fact("helper", "Bob", BOB_FACT, subject_type="person", user_id="bob")
    # an erased user: the store's erasure log has a receipt, which a scoped export leaves out
    run(runner, "--db", path, "forget", "--user", "carol", "--yes")
    return path


def _texts(lines: list[dict]) -> set[str]:
    out = {d.get("content") for d in lines if "record_type" in d}
    out |= {d["row"].get("fact_text") for d in lines if "kg_table" in d}
    return {t for t in out if t}


@pytest.mark.parametrize("vectors", [False, True])
def test_export_user_holds_every_record_of_his_and_none_of_hers(runner, db, tmp_path, vectors):
    out = tmp_path / "bob.jsonl"
    res = run(runner, "--db", db, "export", "--user", "bob", "--out", str(out), *(["--with-vectors"] if vectors else []))
    assert "of user bob" in res.stderr
    lines = _lines(out)
    texts = _texts(lines)
    assert BOB_TEXTS | {BOB_FACT} <= texts
    assert not texts & (ALICE_TEXTS | {SHARED_REPLY})
    raw = out.read_text(encoding="utf-8")
    assert "alice" not in raw.lower() and "z3" not in raw  # not her id, not a word of hers, anywhere
    assert not [d for d in lines if "erasure_log" in d]
    full = run(runner, "--db", db, "export").stdout
    assert '"erasure_log"' in full  # the whole store's export does carry the log
    # the threads: his private ones (his and the knowledge layer's default thread of his
    # writes, KC-4.21), not the one Alice opened
    threads = {d["id"]: d for d in lines if d.get("record_type") == "thread"}
    assert len(threads) == 2 and "t-bob" in threads and "t-shared" not in threads
    assert all(d["user_id"] == "bob" for d in threads.values())
    assert {d["kg_table"] for d in lines if "kg_table" in d} >= {"FACT", "ENTITY", "FACT_ENTITY_LINK"}
    assert all(d["row"].get("user_id") == "bob" for d in lines if "kg_table" in d)
    if vectors:
        assert "oramem_export" in lines[0]
        recs = [d for d in lines if d.get("record_type") not in (None, "thread")]
        assert recs and all(isinstance(d.get("embedding"), list) and d["embedding"] for d in recs)


@pytest.mark.parametrize("vectors", [False, True])
def test_bobs_file_restores_bob_into_a_fresh_store(runner, db, tmp_path, vectors):
    out = tmp_path / "bob.jsonl"
    run(runner, "--db", db, "export", "--user", "bob", "--out", str(out), *(["--with-vectors"] if vectors else []))
    fresh = str(tmp_path / "fresh.db")
    run(runner, "--db", fresh, "--embed-dim", "32", "import", str(out))
    exported = {(d["record_type"], d["id"]): d.get("content") for d in _lines(out) if "record_type" in d}
    with SQLiteMemoryStore(fresh, embedder=HashEmbedder(32)) as store:
        lines: list[str] = []
        jsonl.export_records(store, lines.append)
        restored = {(d["record_type"], d["id"]): d.get("content") for d in map(json.loads, lines)}
        # the shared thread's row stays behind (Alice opened it): his message there opens
        # it anew in the fresh store, in his name (SC-2.3)
        assert restored == {**exported, ("thread", "t-shared"): None}
        assert store.get("thread", "t-shared").user_id == "bob"
        assert BOB_TEXTS <= set(restored.values())
        assert store.get("thread", "t-bob") is not None
        with KnowledgeMemory(store, None) as km:
            assert [f.fact_text for f in km.get_all("helper", user_id="bob")] == [BOB_FACT]


def test_export_thread_holds_the_whole_conversation_only(runner, db, tmp_path):
    out = tmp_path / "t.jsonl"
    run(runner, "--db", db, "export", "--thread", "t-shared", "--out", str(out))
    lines = _lines(out)
    assert _texts(lines) == {"ALICE_IN_SHARED_z3", "BOB_IN_SHARED_q7", SHARED_REPLY}
    assert [(d["id"], d["user_id"]) for d in lines if d.get("record_type") == "thread"] == [("t-shared", "alice")]
    out2 = tmp_path / "t2.jsonl"
    run(runner, "--db", db, "export", "--thread", "t-bob", "--thread", "t-shared", "--out", str(out2))
    assert _texts(_lines(out2)) == {"ALICE_IN_SHARED_z3", "BOB_IN_SHARED_q7", SHARED_REPLY, "BOB_PRIVATE_q7",
                                    "REPLY_TO_BOB_PRIVATE_q7"}


def test_export_agent_holds_its_records_of_every_user(runner, db, tmp_path):
    out = tmp_path / "a.jsonl"
    run(runner, "--db", db, "export", "--agent", "other", "--out", str(out))
    assert _texts(_lines(out)) == {"BOB_OTHER_AGENT_q7", "OTHER_AGENT_PROFILE"}  # its profile is in its scope
    out = tmp_path / "h.jsonl"
    run(runner, "--db", db, "export", "--agent", "helper", "--out", str(out))
    texts = _texts(_lines(out))
    assert "BOB_OTHER_AGENT_q7" not in texts and "BOB_PROFILE_q7" not in texts
    assert {"ALICE_MEMORY_z3", "BOB_MEMORY_q7", SHARED_REPLY, BOB_FACT, "ALICE_FACT_z3 alice drinks tea"} <= texts


def test_export_user_with_type_and_several_users(runner, db, tmp_path):
    out = tmp_path / "m.jsonl"
    run(runner, "--db", db, "export", "--user", "bob", "--type", "memory", "--out", str(out))
    lines = _lines(out)
    assert _texts(lines) == {"BOB_MEMORY_q7", "BOB_OTHER_AGENT_q7"} and not [d for d in lines if "kg_table" in d]
    out = tmp_path / "two.jsonl"
    run(runner, "--db", db, "export", "--user", "bob", "--user", "alice", "--no-knowledge", "--out", str(out))
    texts = _texts(_lines(out))
    # both users' records; the reply in the thread they share is neither's
    assert BOB_TEXTS <= texts and ALICE_TEXTS - {"ALICE_FACT_z3 alice drinks tea"} <= texts
    assert SHARED_REPLY not in texts


@pytest.mark.parametrize("args, message", [
    (["--user", "bob", "--thread", "t-shared"], "--user and --thread do not combine"),
    (["--agent", "helper", "--user", "bob"], "--user and --agent do not combine"),
    (["--user", ""], "--user: a user id is a non-empty string"),
    (["--thread", "  "], "--thread: a thread id is a non-empty string"),
])
def test_bad_scope_is_refused_before_anything_is_written(runner, db, tmp_path, args, message):
    out = tmp_path / "x.jsonl"
    res = run(runner, "--db", db, "export", *args, "--out", str(out), expect=2)
    assert message in res.stderr and "nothing was written" in res.stderr
    assert not out.exists() and not [n for n in os.listdir(tmp_path) if n.startswith(".x.jsonl")]


def test_a_user_with_nothing_stored_gives_an_empty_export(runner, db, tmp_path):
    out = tmp_path / "nobody.jsonl"
    res = run(runner, "--db", db, "export", "--user", "nobody", "--out", str(out))
    assert "nothing stored about user nobody: the export is empty" in res.stderr
    assert out.read_text() == ""
    res = run(runner, "--db", db, "export", "--user", "carol")  # erased: nothing of her is left
    assert res.stdout == "" and "nothing stored about user carol" in res.stderr
    res = run(runner, "--db", db, "export", "--user", "bob", "--type", "guideline")
    assert res.stdout == "" and "nothing of type guideline stored about user bob" in res.stderr


def test_export_help_names_the_scope_flags(runner):
    text = run(runner, "export", "--help").stdout
    for flag in ("--user USER_ID", "--agent AGENT_ID", "--thread THREAD_ID", "oramem forget --user"):
        assert flag in text
