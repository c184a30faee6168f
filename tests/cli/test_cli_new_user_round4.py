"""What a new user tripped on in the fourth trial (one agent, many users, a shared thread):
global options after a command group's command, `oramem kg` on the `--db` file, errors in
the CLI's words, and `update --ttl-days 0`."""

from __future__ import annotations

import json

from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.knowledge import KnowledgeMemory


def run(runner: CliRunner, *args: str, expect: int = 0, **kw):
    result = runner.invoke(cli, list(args), catch_exceptions=False, **kw)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def _two_users_with_knowledge(runner: CliRunner, db: str) -> None:
    run(runner, "--db", db, "add", "--user", "ana", "--thread", "shared", "Ana likes figs")
    run(runner, "--db", db, "add", "--user", "bo", "--thread", "shared", "Bo likes plums")
    with SQLiteMemoryStore(db) as store:  # the embedder the CLI recorded
        with KnowledgeMemory(store, None) as km:
            km.add_fact("helper", "Ana", "Ana's pin is 4417", subject_type="person", user_id="ana")
            km.add_fact("helper", "Bo", "Bo's pin is 9902", subject_type="person", user_id="bo")


# ----------------------------------------------------------------------------- global options after a group's command
def test_global_options_follow_a_command_of_a_group(runner, tmp_path):
    """README: --json, --db, --store and --read-only may also follow a command; that held for
    `oramem search ... --json` but `oramem stores list --json` and `oramem knowledge facts A
    --json --db X` were refused with "No such option"."""
    db = str(tmp_path / "g.db")
    _two_users_with_knowledge(runner, db)
    stores = json.loads(run(runner, "stores", "list", "--json", "--db", db).stdout)
    assert [s["memory_store_id"] for s in stores] == ["DEFAULT"]
    described = json.loads(run(runner, "stores", "describe", "--db", db, "--json").stdout)
    assert described["records"]["memory"] == 2
    # B reads with the options after the command: his facts, never Ana's
    facts = json.loads(run(runner, "knowledge", "facts", "helper", "--user", "bo", "--json", "--db", db).stdout)
    assert [f["fact_text"] for f in facts] == ["Bo's pin is 9902"]
    assert "4417" not in run(runner, "knowledge", "facts", "helper", "--db", db, "--user", "bo").stdout


def test_an_option_a_group_command_defines_itself_stays_with_it(runner, tmp_path):
    from oramem.cli import hoist_global_options

    # `kg jobs status` has its own --json: it stays; --db still goes to the root
    assert hoist_global_options(cli, ["kg", "jobs", "status", "--json", "--db", "x.db"]) == [
        "--db", "x.db", "kg", "jobs", "status", "--json"]
    assert hoist_global_options(cli, ["db", "status", "--json"]) == ["db", "status", "--json"]
    assert hoist_global_options(cli, ["stores", "describe", "S1", "--store", "X"]) == ["--store", "X", "stores", "describe", "S1"]
    # text after -- is never an option
    assert hoist_global_options(cli, ["knowledge", "write", "a", "--", "--json"]) == ["knowledge", "write", "a", "--", "--json"]


# ----------------------------------------------------------------------------- oramem kg on the --db file
def test_kg_uses_the_db_and_store_of_the_root_group(runner, tmp_path):
    """`knowledge write --background` said "run `oramem kg worker`", but every kg command
    required --sqlite and --store-id and ignored --db."""
    db = str(tmp_path / "k.db")
    run(runner, "--db", db, "add", "--user", "ana", "--thread", "shared", "Ana likes figs")
    queued = run(runner, "--db", db, "knowledge", "write", "helper", "I adopted a dog, Pepper", "--speaker", "Ana",
                 "--user", "ana", "--background").stdout
    assert f"(run `oramem --db {db} kg worker` to extract it)" in queued
    status = json.loads(run(runner, "--db", db, "kg", "jobs", "status", "--json").stdout)
    assert status["counts"]["pending"] == 1
    # the same with the options after the command, and with --store naming the store
    assert json.loads(run(runner, "kg", "jobs", "status", "--json", "--db", db).stdout)["counts"]["pending"] == 1
    assert json.loads(run(runner, "--db", db, "--store", "default", "kg", "jobs", "status", "--json").stdout)["counts"]["pending"] == 1
    assert "no store 'OTHER'" in run(runner, "--db", db, "--store", "OTHER", "kg", "jobs", "status", expect=2).output
    # B's job list through --db shows jobs without their text
    listed = run(runner, "--db", db, "kg", "jobs", "list", "--agent-id", "helper").stdout
    assert "pending" in listed and "Pepper" not in listed


def test_kg_on_a_store_without_knowledge_says_so(runner, tmp_path):
    db = str(tmp_path / "plain.db")
    run(runner, "--db", db, "add", "plain memory")
    res = run(runner, "--db", db, "kg", "jobs", "status", expect=1)
    assert "has no knowledge layer yet" in res.output and "schema_policy" not in res.output
    res = run(runner, "--db", str(tmp_path / "none.db"), "kg", "jobs", "list", expect=2)
    assert "no database at" in res.output and "--db" in res.output


# ----------------------------------------------------------------------------- errors in the CLI's words
def test_errors_name_the_flags_a_user_typed(runner, tmp_path):
    db = str(tmp_path / "w.db")
    run(runner, "--db", db, "add", "--user", "ana", "Ana likes figs")
    res = run(runner, "--db", db, "add", "--timestamp", "yesterday", "x", expect=2)
    assert "--timestamp='yesterday' is not an ISO-8601" in res.stderr and "timestamps" not in res.stderr
    # the store's embedder against an --embed-* flag: what to leave out, not embedder=HashEmbedder(...)
    res = run(runner, "--db", db, "--embed-dim", "384", "search", "figs", expect=1)
    assert "Leave out --embed-dim 384" in res.stderr and "embedder=" not in res.stderr
    assert f"oramem --db {db} --embed-dim 384 reembed" in res.stderr
    # a line without a type: the flag that gives one
    hand = tmp_path / "hand.jsonl"
    hand.write_text('{"content": "hand line"}\n')
    res = run(runner, "--db", db, "import", str(hand), expect=2)
    assert "--type TYPE" in res.stderr and "a default type" not in res.stderr
    # a line's own field names, not the store's per-record lists
    hand.write_text('{"content": "hand line", "type": "memory", "user_id": 5}\n')
    assert "user_id must be a str" in run(runner, "--db", db, "import", str(hand), expect=2).stderr
    rid = json.loads(run(runner, "--db", db, "--json", "list").stdout)[0]["id"]
    res = run(runner, "--db", db, "update", "memory", rid, "--timestamp", "nope", expect=2)
    assert "--timestamp='nope' is not" in res.stderr
    assert run(runner, "--db", db, "add", "--role", "user", "x", expect=2).stderr.startswith(
        "Error: --role applies only to message records")
    res = run(runner, "--db", db, "add", "--type", "message", "--thread", "t", "--role", "", "x", expect=2)
    assert res.stderr.strip() == "Error: --role must not be empty"
    res = run(runner, "--db", db, "--store-strategy", "vector", "search", "figs", "--strategy", "keyword", expect=2)
    assert "search_strategy" not in res.stderr and "--store-strategy" in res.stderr


def test_a_second_import_names_on_conflict(runner, tmp_path):
    """A restore run twice stopped on "user profile 'ana' already exists; update it instead"
    without naming --on-conflict skip, the flag made for it."""
    db, copy, backup = str(tmp_path / "a.db"), str(tmp_path / "b.db"), str(tmp_path / "backup.jsonl")
    run(runner, "--db", db, "add", "--type", "user_profile", "--id", "ana", "Ana, engineer")
    run(runner, "--db", db, "add", "--user", "ana", "--thread", "shared", "Ana likes figs")
    run(runner, "--db", db, "add", "--user", "bo", "--thread", "shared", "Bo likes plums")
    run(runner, "--db", db, "export", "--out", backup)
    run(runner, "--db", copy, "import", backup)
    res = run(runner, "--db", copy, "import", backup, expect=2)
    assert "--on-conflict skip" in res.stderr and "--on-conflict replace" in res.stderr
    assert "update it instead" not in res.stderr
    only_bo = tmp_path / "bo.jsonl"
    only_bo.write_text("\n".join(line for line in open(backup) if "plums" in line) + "\n")
    res = run(runner, "--db", copy, "import", str(only_bo), expect=2)
    assert "ids already stored" in res.stderr and "record_ids" not in res.stderr and "--on-conflict skip" in res.stderr
    # nothing half-written: both users' records are there once each
    listed = json.loads(run(runner, "--db", copy, "--json", "list", "--all").stdout)
    assert sorted(r["content"] for r in listed) == ["Ana likes figs", "Bo likes plums"]


# ----------------------------------------------------------------------------- update --ttl-days that is already over
def test_update_refuses_a_ttl_that_is_already_over(runner, tmp_path):
    """`add --ttl-days 0` was refused ("would expire the record at once") but `update --ttl-days
    0` said "updated" and the next command's purge erased the record."""
    db = str(tmp_path / "t.db")
    ana = run(runner, "--db", db, "add", "--user", "ana", "--thread", "shared", "Ana likes figs").stdout.strip()
    bo = run(runner, "--db", db, "add", "--user", "bo", "--thread", "shared", "Bo likes plums").stdout.strip()
    res = run(runner, "--db", db, "update", "memory", ana, "--ttl-days", "0", expect=2)
    assert "would expire the record at once" in res.stderr and f"oramem delete memory {ana}" in res.stderr
    assert "--ttl-days must be >= 0" in run(runner, "--db", db, "update", "memory", ana, "--ttl-days", "-1", expect=2).stderr
    # counted from the insert time: a record made 30 days ago with a new TTL of 5 days
    old = tmp_path / "old.jsonl"
    old.write_text('{"id": "old-1", "type": "memory", "user_id": "ana", "content": "old note", "created_at": "2020-01-01T00:00:00Z"}\n')
    run(runner, "--db", db, "import", str(old))
    assert "counts from the record's insert time" in run(runner, "--db", db, "update", "memory", "old-1", "--ttl-days", "5",
                                                        expect=2).stderr
    listed = {r["id"]: r for r in json.loads(run(runner, "--db", db, "--json", "list", "--all").stdout)}
    assert set(listed) == {ana, bo, "old-1"} and all(r["expires_at"] is None for r in listed.values())
    # a TTL still in the future is set; Bo's record is untouched
    run(runner, "--db", db, "update", "memory", ana, "--ttl-days", "2")
    listed = {r["id"]: r for r in json.loads(run(runner, "--db", db, "--json", "list", "--all").stdout)}
    assert listed[ana]["expires_at"] is not None and listed[bo]["expires_at"] is None


# ----------------------------------------------------------------------------- get/update/delete with the wrong TYPE
def test_not_found_names_the_type_the_id_has(runner, tmp_path):
    db = str(tmp_path / "n.db")
    rid = run(runner, "--db", db, "add", "--type", "preference", "--user", "ana", "Ana likes figs").stdout.strip()
    res = run(runner, "--db", db, "get", "memory", rid, expect=1)
    assert f"it is a preference record: oramem get preference {rid}" in res.stderr
    assert "it is a preference record" in run(runner, "--db", db, "delete", "fact", rid, expect=1).stderr
    assert "it is a preference record" in run(runner, "--db", db, "update", "memory", rid, "--text", "x", expect=1).stderr
    assert run(runner, "--db", db, "get", "memory", "no-such-id", expect=1).stderr.strip() == "Error: no memory record with id 'no-such-id'"
    assert json.loads(run(runner, "--db", db, "--json", "get", "preference", rid).stdout)["content"] == "Ana likes figs"


# ----------------------------------------------------------------------------- output to a pipe
def test_output_to_a_pipe_is_not_cut(runner, tmp_path):
    """`oramem list | grep ryokan` found nothing: the content column was cut to a 40-character
    snippet when stdout was not a terminal (CliRunner's stdout is not one either)."""
    db = str(tmp_path / "p.db")
    long = "Alice travels to Tokyo and Kyoto in April with her sister and wants quiet ryokans under 200 euros a night"
    run(runner, "--db", db, "add", "--user", "alice", "--thread", "shared", long)
    run(runner, "--db", db, "add", "--user", "bob", "--thread", "shared", "Bob stays home")
    listed = run(runner, "--db", db, "list", "--user", "alice").stdout
    assert long in listed and "…" not in listed and "Bob stays home" not in listed
    found = run(runner, "--db", db, "search", "ryokans", "--user", "bob").stdout
    assert "ryokans" not in found and "Bob stays home" in found
    assert long in run(runner, "--db", db, "search", "ryokans", "--user", "alice").stdout
    # -k is checked as the flag it is
    assert "-k" in run(runner, "--db", db, "search", "x", "-k", "0", expect=2).stderr


# ----------------------------------------------------------------------------- delete --cascade says what it erased
def test_delete_cascade_reports_what_it_erased(runner, tmp_path):
    """`delete user_profile carl --cascade` for a user without a profile erased his records but
    printed "deleted 0 user_profile record(s)"; `delete thread nope --cascade` exited 0; and
    `--cascade` on a memory was refused as "cascade=True applies to ...", a Python name."""
    db = str(tmp_path / "c.db")
    run(runner, "--db", db, "add", "--user", "carl", "Carl secret 1")
    run(runner, "--db", db, "add", "--user", "carl", "--thread", "tc", "Carl secret 2")
    dan = run(runner, "--db", db, "add", "--user", "dan", "--thread", "tc", "Dan in Carl's thread").stdout.strip()
    res = run(runner, "--db", db, "delete", "user_profile", "carl", "--cascade")
    assert res.stdout.strip() == ("no user_profile 'carl'; the cascade erased 2 record(s) of user carl "
                                  "(and the threads that were its alone)")
    listed = json.loads(run(runner, "--db", db, "--json", "list", "--all").stdout)
    assert [r["id"] for r in listed] == [dan]  # Dan's record in Carl's thread stays (SC-13.3)
    assert json.loads(run(runner, "--db", db, "--json", "delete", "user_profile", "carl", "--cascade").stdout) == {
        "deleted": 0, "cascaded": 0}
    assert "no thread with id 'nope'" in run(runner, "--db", db, "delete", "thread", "nope", "--cascade", expect=1).stderr
    res = run(runner, "--db", db, "delete", "memory", dan, "--cascade", expect=2)
    assert "--cascade applies to user_profile, agent_profile and thread records" in res.stderr and "cascade=True" not in res.stderr
    assert [r["id"] for r in json.loads(run(runner, "--db", db, "--json", "list", "--all").stdout)] == [dan]


# ----------------------------------------------------------------------------- migrate into a path that cannot be
def test_migrate_names_the_target_that_cannot_be_created(runner, tmp_path, monkeypatch):
    """`oramem migrate kn.db nowhere/x.db` said "cannot open or create ./oramem.db: the directory
    ... is not writable": the --db default, a file the command never uses, and a wrong cause."""
    monkeypatch.chdir(tmp_path)
    run(runner, "--db", "src.db", "add", "--user", "ana", "Ana likes figs")
    res = run(runner, "migrate", "src.db", "nowhere/x.db", expect=1)
    assert "cannot create TARGET nowhere/x.db" in res.stderr and "does not exist" in res.stderr
    assert "oramem.db" not in res.stderr
    res = run(runner, "migrate", "src.db", str(tmp_path), expect=2)
    assert "is a directory" in res.stderr and "oramem.db" not in res.stderr
    assert not (tmp_path / "oramem.db").exists()


# ----------------------------------------------------------------------------- list of profiles and threads by scope
def test_list_of_profiles_and_threads_honours_the_scope_options(runner, tmp_path):
    """`oramem list --type user_profile --user bob` listed Alice's profile too, and `--type thread
    --user bob` the threads Alice opened: the store's list ignores scope filters for these
    types (SC-3.3) and the CLI passed --user/--agent/--thread on silently."""
    db = str(tmp_path / "s.db")
    run(runner, "--db", db, "add", "--type", "user_profile", "--id", "alice", "Alice, lives at 12 Rue X")
    run(runner, "--db", db, "add", "--type", "user_profile", "--id", "bob", "Bob, designer")
    run(runner, "--db", db, "add", "--type", "agent_profile", "--id", "concierge", "Travel assistant")
    run(runner, "--db", db, "add", "--user", "alice", "--agent", "concierge", "--thread", "ta", "Alice's trip")
    run(runner, "--db", db, "add", "--user", "bob", "--thread", "tb", "Bob's plan")
    run(runner, "--db", db, "add", "--user", "bob", "--thread", "ta", "Bob writes in Alice's thread")

    def ids(*args):
        return [r["id"] for r in json.loads(run(runner, "--db", db, "--json", "list", *args).stdout)]

    assert ids("--type", "user_profile", "--user", "bob") == ["bob"]
    assert "12 Rue X" not in run(runner, "--db", db, "list", "--type", "user_profile", "--user", "bob").stdout
    assert ids("--type", "user_profile") == ["alice", "bob"]  # no scope option: all of them
    assert ids("--type", "user_profile", "--agent", "concierge") == []
    assert ids("--type", "agent_profile", "--agent", "concierge") == ["concierge"]
    assert ids("--type", "thread", "--user", "bob") == ["tb"]  # who opened it (SC-13.2)
    assert ids("--type", "thread", "--user", "alice", "--agent", "concierge") == ["ta"]
    assert ids("--type", "thread", "--thread", "tb") == ["tb"]
    assert ids("--type", "thread", "--no-agent") == ["tb"]
    assert ids("--type", "thread", "--user", "bob", "--limit", "1", "--offset", "1") == []
    # scoped types go through the store as before
    assert [r["content"] for r in json.loads(run(runner, "--db", db, "--json", "list", "--user", "bob", "--all").stdout)] == [
        "Bob's plan", "Bob writes in Alice's thread"]
