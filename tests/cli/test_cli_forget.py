"""`oramem forget --user/--agent`: erases the store records and, when the file has them, the
knowledge tables (through KnowledgeMemory's hook), printing the rows per table."""

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


def test_forget_user_and_agent_through_the_cli(runner, tmp_path):
    db = str(tmp_path / "f.db")
    run(runner, "--db", db, "add", "--user", "ana", "Ana likes figs")
    run(runner, "--db", db, "add", "--user", "bo", "Bo likes plums")
    with SQLiteMemoryStore(db) as store:  # the embedder the CLI recorded
        with KnowledgeMemory(store, None) as km:
            km.add_fact("helper", "Ana", "Ana's pin is 4417", subject_type="person", user_id="ana")
            km.add_fact("helper", "Bo", "Bo's pin is 9902", subject_type="person", user_id="bo")
    assert "--yes" in run(runner, "--db", db, "forget", "--user", "ana", expect=2).stderr
    res = run(runner, "--db", db, "--json", "forget", "--user", "ana", "--yes")  # KC-3.10: by id, no names
    out = json.loads(res.stdout)
    assert out["user_id"] == "ana" and out["erased"]["DEFAULT_KG_FACT"] == 1 and out["erased"]["om_DEFAULT_records"] >= 3
    listed = run(runner, "--db", db, "--json", "list", "--all").stdout
    assert "figs" not in listed and "plums" in listed
    with SQLiteMemoryStore(db) as store:
        with KnowledgeMemory(store, None) as km:
            assert [f.fact_text for f in km.get_all("helper", user_id="bo")] == ["Bo's pin is 9902"]
    res = run(runner, "--db", db, "forget", "--agent", "helper", "--yes")
    assert res.stdout.startswith("erased agent helper:") and "DEFAULT_KG_FACT" in res.stdout
    assert run(runner, "--db", db, "forget", "--agent", "helper", "--yes").stdout.splitlines()[0] == "nothing stored about agent helper"


def test_forget_arguments_are_flags(runner, tmp_path):
    db = str(tmp_path / "g.db")
    run(runner, "--db", db, "add", "x")
    assert "exactly one of --user or --agent" in run(runner, "--db", db, "forget", "--yes", expect=2).stderr
    # names are never matched (SC-13.3): the flag is gone, and using it is an error that writes nothing
    assert "No such option '--name'" in run(runner, "--db", db, "forget", "--user", "u1", "--name", "A", "--yes", expect=2).stderr
    # CliRunner's stdin is not a terminal: no prompt, the confirmation flag is asked for
    assert "repeat with --yes" in run(runner, "--db", db, "forget", "--user", "u1", input="y\n", expect=2).stderr
    assert run(runner, "--db", db, "list").stdout.count("\n") == 2  # nothing was erased
