"""left34 item 1 through the CLI: a white-space-only --user/--agent/--thread/--id is refused
(exit 2, in the CLI's words, nothing written); `oramem forget --user " "` is refused before it
asks for a confirmation that would name nobody."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from oramem.cli import cli


def run(runner: CliRunner, *args: str, expect: int = 0):
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


@pytest.mark.parametrize("flag", ["--user", "--agent", "--thread", "--id"])
def test_add_with_a_blank_id_is_refused_and_writes_nothing(runner, tmp_path, flag):
    db = str(tmp_path / "b.db")
    run(runner, "--db", db, "--embed-dim", "16", "add", "--user", "ana", "first")
    res = run(runner, "--db", db, "--embed-dim", "16", "add", flag, " \t", "hello", expect=2)
    shown = f"{flag}[0]" if flag == "--id" else flag  # --id takes one id per text
    assert f"{shown}=' \\t' is only white space; give an id with a visible character" in res.stderr
    if flag != "--id":
        assert "(or leave the flag out for no value)" in res.stderr
    listed = json.loads(run(runner, "--db", db, "--json", "list", "--all").stdout)
    assert [r["content"] for r in listed] == ["first"]


def test_list_with_a_blank_user_is_refused(runner, tmp_path):
    db = str(tmp_path / "b.db")
    run(runner, "--db", db, "--embed-dim", "16", "add", "--user", "ana", "first")
    assert "only white space" in run(runner, "--db", db, "list", "--user", " ", expect=2).stderr


@pytest.mark.parametrize("flag", ["--user", "--agent"])
def test_forget_a_blank_actor_is_refused_before_the_confirmation(runner, tmp_path, flag):
    db = str(tmp_path / "b.db")
    run(runner, "--db", db, "--embed-dim", "16", "add", "--user", "ana", "first")
    res = run(runner, "--db", db, "forget", flag, "  ", expect=2)
    assert f"{flag} must not be empty or only white space; give the id to erase" in res.stderr
    assert "--yes" not in res.stderr
    res = run(runner, "--db", db, "forget", flag, "  ", "--yes", expect=2)
    assert "only white space" in res.stderr
    assert len(json.loads(run(runner, "--db", db, "--json", "list", "--all").stdout)) == 1
