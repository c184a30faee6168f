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
