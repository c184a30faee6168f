"""CLI conventions: global options after the subcommand, quiet SIGPIPE, Ctrl-C = 130,
`list` says when its window cut rows off, lazy imports for --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli, hoist_global_options, main


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for var in ("ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_STRATEGY"):
        monkeypatch.delenv(var, raising=False)
    return CliRunner()


def run(runner, *args, expect=0):
    res = runner.invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == expect, (args, res.output)
    return res


def test_json_db_store_after_the_subcommand(runner, tmp_path):
    db = str(tmp_path / "a.db")
    run(runner, "add", "dark roast coffee", "--db", db)
    hits = json.loads(run(runner, "search", "coffee", "--json", "--db", db).stdout)
    assert hits[0]["record"]["content"] == "dark roast coffee"
    listed = json.loads(run(runner, "list", f"--db={db}", "--json").stdout)
    assert len(listed) == 1
    # text after -- is content, not an option
    run(runner, "--db", db, "add", "--", "--json")
    assert [r["content"] for r in json.loads(run(runner, "--db", db, "--json", "list").stdout)] == ["dark roast coffee", "--json"]


def test_hoisting_keeps_group_values_and_a_group_commands_own_options():
    assert hoist_global_options(cli, ["--embed-url", "http://x", "search", "q", "--json"]) == [
        "--embed-url", "http://x", "--json", "search", "q"]
    assert hoist_global_options(cli, ["db", "status", "--json"]) == ["db", "status", "--json"]  # its own --json
    # a group's command without one of its own takes the root's (README: they may follow a command)
    assert hoist_global_options(cli, ["stores", "list", "--json"]) == ["--json", "stores", "list"]


def test_list_says_when_the_window_cuts_rows(runner, tmp_path):
    db = str(tmp_path / "l.db")
    s = SQLiteMemoryStore(db, search_strategy="hybrid", embedder=__import__("oramem.embedders", fromlist=["x"]).HashEmbedder(256))
    s.add([f"n{i}" for i in range(5)], "memory")
    s.close()
    res = run(runner, "--db", db, "--json", "list", "--limit", "3")
    assert [r["content"] for r in json.loads(res.stdout)] == ["n2", "n3", "n4"]
    assert "showing the newest 3 memory records; there are more" in res.stderr
    res = run(runner, "--db", db, "list", "--limit", "5")
    assert "there are more" not in res.stderr
    # paging back from the newest: --offset skips the newest N
    res = run(runner, "--db", db, "--json", "list", "--limit", "2", "--offset", "1")
    assert [r["content"] for r in json.loads(res.stdout)] == ["n2", "n3"]
    assert "showing 2-3 counted from the newest of the memory records; there are more: --offset 3" in res.stderr
    res = run(runner, "--db", db, "--json", "list", "--limit", "2", "--offset", "3")
    assert [r["content"] for r in json.loads(res.stdout)] == ["n0", "n1"] and "there are more" not in res.stderr
    res = run(runner, "--db", db, "--json", "list", "--offset", "5")
    assert json.loads(res.stdout) == [] and "--offset 5 skips every memory record" in res.stderr
    res = runner.invoke(cli, ["--db", db, "list", "--offset", "1", "--all"])
    assert res.exit_code == 2 and "--offset pages with --limit" in res.output


def test_ctrl_c_exits_130_quietly(tmp_path, monkeypatch, capsys):
    db = str(tmp_path / "c.db")
    CliRunner().invoke(cli, ["--db", db, "add", "x"], catch_exceptions=False)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(SQLiteMemoryStore, "search", interrupted)
    monkeypatch.setattr(sys, "argv", ["oramem", "--db", db, "search", "x"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 130
    assert "Aborted" not in capsys.readouterr().err


def _env():
    env = dict(os.environ)
    env.pop("ORAMEM_DB", None)
    return env


def test_broken_pipe_is_quiet(tmp_path):
    db = str(tmp_path / "p.db")
    s = SQLiteMemoryStore(db, search_strategy="hybrid", embedder=__import__("oramem.embedders", fromlist=["x"]).HashEmbedder(256))
    s.add([f"record number {i} " * 20 for i in range(3000)], "memory")
    s.close()
    code = "import sys; from oramem.cli import main; sys.argv = ['oramem', '--db', sys.argv[1], 'export']; main()"
    proc = subprocess.Popen([sys.executable, "-c", code, db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdout.readline().startswith(b"{")
    proc.stdout.close()  # what `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err


def test_help_imports_neither_oracledb_nor_sqlalchemy_nor_httpx():
    code = (
        "import sys\nfrom oramem.cli import main\nsys.argv = ['oramem', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', sorted(m for m in ('oracledb', 'sqlalchemy', 'httpx') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60).stdout
    assert "HEAVY []" in out, out
    assert "db " in out and "knowledge " in out and "kg " in out  # lazy groups still listed


def test_errors_from_below_the_cli_name_flags_not_python_arguments(tmp_path):
    from click.testing import CliRunner

    from oramem.cli import cli, in_cli_words

    db = str(tmp_path / "w.db")
    for args, flag in ((["add", "hello", "--user", ""], "--user"), (["add", "hello", "--thread", ""], "--thread")):
        result = CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)
        assert result.exit_code == 2, result.output
        assert f"Error: {flag} must not be empty (leave the flag out for no value)" in result.stderr
        assert "_ids" not in result.stderr and "None" not in result.stderr
    flags = {"user_id": "--user", "metadata_filter": "--filter", "types": "--types"}
    assert in_cli_words("record_types is empty; pass None to search every type", flags) == (
        "--types is empty; leave the flag out to search every type")
    assert in_cli_words("bad metadata_filter key", flags) == "bad --filter key"
    # only whole names are replaced; names without a matching flag stay as they are
    assert in_cli_words("user_idsx and agent_ids", flags) == "user_idsx and agent_ids"


def test_an_error_names_only_flags_the_command_run_accepts():
    """The Python-name -> flag map for an error of command C holds C's own options (and its
    subcommands') and the root group's, never another command's: `search`'s error naming
    ``on_conflict`` must not become `--on-conflict`, which only `import` accepts."""
    import click

    from oramem.cli import cli
    from oramem.cli.group import LAZY_GROUPS, command_flags

    def accepted(command: click.Command) -> set[str]:
        names = set(command_flags(command).values())
        if isinstance(command, click.Group):
            for sub in command.commands.values():
                names |= accepted(sub)
        return names

    root = set(command_flags(cli).values())
    checked = 0
    for name in cli.commands:
        if name in LAZY_GROUPS:
            continue
        ctx = click.Context(cli)
        ctx.invoked_subcommand = name
        flags = set(cli._flags_of(ctx).values())
        stray = flags - accepted(cli.commands[name]) - root
        assert not stray, f"{name}: {sorted(stray)}"
        checked += 1
    assert checked >= 10


def test_python_dash_m_oramem_is_the_command():
    """`python -m oramem` runs the CLI (a venv whose scripts directory is not on PATH; trial31)."""
    ok = subprocess.run([sys.executable, "-m", "oramem", "--help"], capture_output=True, text=True, env=_env(), timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("Usage: oramem [OPTIONS] COMMAND")
    bad = subprocess.run([sys.executable, "-m", "oramem", "nosuch"], capture_output=True, text=True, env=_env(), timeout=60)
    assert bad.returncode == 2 and "No such command 'nosuch'" in bad.stderr
