"""What `oramem ... --help` says is true and speaks in the CLI's words (audit24).

The CLI speaks in flags: an option's help names flags and what a user types, not the Python
argument behind it (``ttl_days=None``, ``memory_store_id``, ``user_id scope``: the new-user
trial's finding 18, docs/new-user-trial.md). And where a help text states a fact (here: where
the model cache is), the fact holds.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from oramem.cli.app import cli
from oramem.embedders.onnx import default_cache_dir

#: option helps that name a field of a file or a tool argument, not a Python argument:
#: (command path, option) -> why the name is the user's word there
FIELD_NAMES = {
    ("import", "--type"): "record_type is the JSON Lines field the option stands in for",
    ("import", "--fresh-times"): "ttl_days is the JSON Lines field the expiry is then read from",
    ("mcp", "--allow-scope-per-call"): "user_id/agent_id are the MCP tools' argument names a client sends",
}


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli, info_name="oramem")
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        out.append((" ".join(path), cmd))
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, [*path, name])

    walk(cli, [])
    return out


def test_option_help_speaks_in_flags_not_python_arguments():
    commands = _commands()
    assert len(commands) > 40, "the walk lost the command tree"
    # every Python name behind a CLI option, and the store API's name for a store id
    python_names = {p.name for _, c in commands for p in c.params if p.name and "_" in p.name} | {"memory_store_id"}
    problems = []
    for path, command in commands:
        for param in command.params:
            if not isinstance(param, click.Option) or not param.help:
                continue
            if (path, param.opts[0]) in FIELD_NAMES:
                continue
            named = sorted(n for n in python_names if re.search(rf"(?<![\w-]){n}(?![\w-])", param.help))
            if named or re.search(r"\w=(None|True|False)\b", param.help):
                problems.append(f"oramem {path} {param.opts[0]}: {param.help!r} names {named or 'a Python call'}")
    assert not problems, "\n".join(problems)


def test_the_scan_catches_a_python_name_in_a_help_text():
    """The scan above is not vacuous: the help texts it was written against."""
    python_names = {"ttl_days", "user_id", "memory_store_id"}
    for text in ("Never expire (ttl_days=None).", "user_id scope.", "memory_store_id of the store."):
        assert any(re.search(rf"(?<![\w-]){n}(?![\w-])", text) for n in python_names)


def test_models_help_names_every_place_the_model_cache_is(tmp_path, monkeypatch):
    """`oramem models --help` said "$ORAMEM_MODEL_CACHE, else ~/.cache/oramem/models"; with
    XDG_CACHE_HOME set the cache is $XDG_CACHE_HOME/oramem/models (measured: `oramem models
    list` said "No models in $XDG_CACHE_HOME/oramem/models")."""
    monkeypatch.delenv("ORAMEM_MODEL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "oramem" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "oramem" / "models"

    result = CliRunner().invoke(cli, ["models", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "$ORAMEM_MODEL_CACHE, else $XDG_CACHE_HOME/oramem/models, else ~/.cache/oramem/models" in text


def test_kg_group_help_says_which_command_has_no_default_store():
    """`oramem kg --help` gives --store-id a default (oramem --store, else the default store);
    `kg install-scheduler` requires it, and its help and the group's now say so."""
    group = dict(_commands())["kg"]
    scheduler = dict(_commands())["kg install-scheduler"]
    store_id = next(p for p in scheduler.params if p.name == "store_id")
    assert store_id.required
    assert "install-scheduler has no default" in (group.help or "")


def _run(runner, *args, expect=0):
    res = runner.invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == expect, (args, res.output)
    return res


@pytest.mark.parametrize("args, flag", [
    (["audit", "list", "--since", "x"], "--since"),
    (["audit", "list", "--until", "y"], "--until"),
    (["audit", "export", "--since", "x"], "--since"),
    (["audit", "list", "--limit", "0"], "--limit"),
])
def test_audit_filter_errors_name_the_flag(runner, tmp_path, args, flag):
    """`oramem audit list --since x` said "Error: since must be an ISO-8601 time": the Python
    argument, not the flag (only user_id was rewritten)."""
    db = str(tmp_path / "a.db")
    _run(runner, "--db", db, "add", "a memory")
    res = _run(runner, "--db", db, *args, expect=2)
    assert f"Error: {flag} must be" in res.output, res.output


def test_knowledge_read_without_knowledge_tables_names_the_command_that_creates_them(runner, tmp_path):
    """`oramem knowledge facts A` on a store nothing was written to said "open with
    schema_policy=CREATE_IF_NECESSARY to create them (policy in force: require_existing)":
    Python advice a CLI user cannot follow. It names `oramem knowledge write` now, as `oramem
    kg` does on SQLite."""
    db = str(tmp_path / "a.db")
    _run(runner, "--db", db, "add", "a memory")
    for args in (["knowledge", "facts", "a1"], ["knowledge", "entities", "a1"], ["knowledge", "retrieve", "a1", "q"]):
        res = _run(runner, "--db", db, *args, expect=1)
        assert "has no knowledge layer yet" in res.output and "`oramem knowledge write` creates them" in res.output, res.output
        assert "schema_policy" not in res.output and "CREATE_IF_NECESSARY" not in res.output, res.output


@pytest.mark.parametrize("args", [
    ["export"],
    ["export", "--user", "alice"],
    ["list"], ["search", "coffee"], ["import", "FILE", "--on-conflict", "skip"], ["check"], ["forget", "--user", "bob", "--yes"],
])
def test_sqlite_commands_import_neither_oracledb_nor_sqlalchemy(tmp_path, args):
    """docs/new-user-trial.md #26: `oramem --help` and the SQLite commands import neither
    oracledb nor SQLAlchemy. `oramem export` loaded SQLAlchemy to look for knowledge tables
    even in a store that has none (measured: 'sqlalchemy' in sys.modules after it); it now
    looks with the stdlib driver first (audit24)."""
    import os
    import subprocess
    import sys

    db = str(tmp_path / "a.db")
    backup = tmp_path / "b.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORAMEM_") or k == "ORAMEM_MODEL_CACHE"}
    env["HF_HUB_OFFLINE"] = "1"
    setup = [[sys.executable, "-m", "oramem.cli", "--db", db, "add", "dark roast coffee", "--user", "alice"],
             [sys.executable, "-m", "oramem.cli", "--db", db, "export", "--out", str(backup)]]
    for cmd in setup:
        subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=120)
    argv = ["oramem", "--db", db, *[str(backup) if a == "FILE" else a for a in args]]
    code = (
        "import sys\nfrom oramem.cli import main\n"
        f"sys.argv = {argv!r}\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
        "print('HEAVY', code, sorted(m for m in ('oracledb', 'sqlalchemy') if m in sys.modules), file=sys.stderr)\n"
    )
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stderr
    assert "HEAVY 0 []" in err, err


@pytest.mark.parametrize("flag", ["--user", "--agent", "--request-id", "--query"])
def test_audit_filters_refuse_an_empty_value(runner, tmp_path, flag):
    """`oramem audit list --user ''` printed "no audit entries" (exit 0) with entries stored:
    an empty filter matches nothing and read as an answer. It is refused like list/search's
    empty --user (docs/new-user-trial.md #18, #28), before the database is opened."""
    db = str(tmp_path / "a.db")
    _run(runner, "--db", db, "add", "tea", "--user", "alice")
    _run(runner, "--db", db, "audit", "enable")
    _run(runner, "--db", db, "search", "tea", "--user", "alice")
    assert "alice" in _run(runner, "--db", db, "audit", "list").output
    for command in ("list", "export"):
        res = _run(runner, "--db", db, "audit", command, flag, "", expect=2)
        assert f"Error: {flag} is empty" in res.output, res.output


@pytest.mark.parametrize("args, said", [
    (["knowledge", "retrieve", "a1", "q", "--as-of", "bad"], "Error: --as-of must be an ISO-8601 time"),
    (["knowledge", "retrieve", "a1", "q", "--known-at", "bad"], "Error: --known-at must be an ISO-8601 time"),
    (["knowledge", "write", "a1", "m", "--speaker", " ", "--background"], "Error: --speaker must not be empty"),
    (["knowledge", "write", "", "m", "--speaker", "A", "--background"], "Error: AGENT_ID must be a non-empty string"),
    (["knowledge", "write", "a1", "m", "--speaker", "A", "--background", "--occurred-at", "bad"],
     "Error: --occurred-at must be an ISO-8601 time"),
    (["knowledge", "facts", "a1", "--user", ""], "or leave the flag out for the agent's shared knowledge"),
    (["knowledge", "write", "a1", " ", "--speaker", "A", "--background"], "Error: MESSAGE is empty or blank"),
])
def test_knowledge_errors_name_flags_and_arguments(runner, tmp_path, args, said):
    """The knowledge commands passed the API's errors on as they were: "as_of must be a
    datetime or an ISO-8601 string", "speaker_name must not be empty", "agent_id must be ...",
    "user_id ... or None for the agent's shared knowledge"; and `knowledge write A ''
    --background` printed "queued job - event -" although nothing was queued (KC-4.1 makes an
    empty message a no-op). Now in the command's flags and ARGUMENTS, and an empty MESSAGE is
    refused like `add ''` (audit24)."""
    db = str(tmp_path / "a.db")
    _run(runner, "--db", db, "knowledge", "write", "a1", "I like tea", "--speaker", "Ann", "--background")
    res = _run(runner, "--db", db, *args, expect=2)
    assert said in res.output, res.output
    assert "None" not in res.output and "datetime" not in res.output and "_id " not in res.output, res.output


def test_errors_name_the_flag_that_was_given(runner, tmp_path):
    """Errors rewritten below the CLI named another command's flag: `search --types bogus` said
    "unknown --type 'bogus'" (add's flag; record_type below the CLI), `migrate --only ''` said
    "--store '' is invalid" (the root's flag; memory_store_id below), and `kg jobs status
    --store-id 'bad id'` said "memory_store_id 'bad id' is invalid" (audit24)."""
    db = str(tmp_path / "a.db")
    _run(runner, "--db", db, "add", "tea")
    res = _run(runner, "--db", db, "search", "tea", "--types", "memory,bogus", expect=2)
    assert "Error: unknown --types value 'bogus'" in res.output, res.output
    target = tmp_path / "t.db"
    res = _run(runner, "migrate", db, str(target), "--only", "", expect=2)
    assert "Error: --only '' is invalid" in res.output and not target.exists(), res.output
    res = _run(runner, "--db", db, "kg", "jobs", "status", "--store-id", "bad id", expect=2)
    assert "--store-id: 'bad id' is invalid" in res.output and "memory_store_id" not in res.output, res.output


@pytest.mark.parametrize("args, said", [
    (["get", "memory", ""], "Error: ID must not be empty"),
    (["delete", "user_profile", ""], "Error: ID must not be empty"),
    (["update", "memory", "", "--text", "x"], "Error: ID must not be empty"),
    (["forget", "--user", ""], "Error: --user must not be empty"),
    (["forget", "--agent", ""], "Error: --agent must not be empty"),
])
def test_empty_ids_are_named_as_the_command_line_names_them(runner, tmp_path, args, said):
    """`oramem get memory ''` said "record_id must not be empty" (the Python argument, not the
    ID argument), and `oramem forget --user ''` asked to confirm erasing "user " (nobody)
    before it checked the id (audit24)."""
    db = str(tmp_path / "a.db")
    _run(runner, "--db", db, "add", "tea")
    res = _run(runner, "--db", db, *args, expect=2)
    assert said in res.output and "record_id" not in res.output and "irreversibly" not in res.output, res.output


@pytest.mark.parametrize("line, said", [
    ('{"content": "a", "ttl_days": 0}', "ttl_days 0 would expire the record at once"),
    ('{"content": "a", "ttl_days": -3}', "ttl_days -3 would expire the record at once"),
    ('{"content": "a", "user_id": ""}', "user_id must not be empty (null, or leave the field out, for no value)"),
    ('{"content": "a", "metadata": [1]}', "metadata must be a JSON object or null"),
    ('{"content": "a", "timestamp": "bad"}', "timestamp='bad' is not an ISO-8601"),
    ('{"content": 5}', "content must be a str or null"),
])
def test_import_speaks_of_the_lines_fields_and_refuses_an_expired_ttl(runner, tmp_path, line, said):
    """`oramem import` reported a bad line in the batch API's Python words ("timestamps='bad'",
    "a dict or None", "(pass None for no value)", "texts[0]"), and imported a line with
    ttl_days 0 as "imported 1 record(s)" although the record expired at once and was gone from
    every read (add refuses --ttl-days 0, docs/new-user-trial.md #19) (audit24)."""
    db = str(tmp_path / "a.db")
    _run(runner, "--db", db, "add", "tea")
    path = tmp_path / "in.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    res = _run(runner, "--db", db, "import", str(path), "--type", "memory", expect=2)
    assert said in res.output, res.output
    assert "None" not in res.output and "dict" not in res.output and "timestamps" not in res.output, res.output
    assert len(_run(runner, "--db", db, "--json", "list").output.strip()) and "imported" not in res.output


@pytest.mark.parametrize("args", [["add", "tea"], ["search", "tea"], ["list"], ["export"], ["forget", "--user", "alice", "--yes"]])
def test_an_oracle_db_outside_reembed_is_a_clear_usage_error(runner, tmp_path, monkeypatch, args):
    """`--db oracle://...` is read by `oramem reembed` only (ora32); every other command took it
    for a SQLite path: `add` said "cannot create oracle://...: directory .../oracle:/scott@host
    does not exist", `search` "no database at oracle://...; add records first"."""
    monkeypatch.chdir(tmp_path)
    res = _run(runner, "--db", "oracle://scott@localhost:1521/FREEPDB1", *args, expect=2)
    assert "names an Oracle store: only `oramem reembed` takes one" in res.output, res.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("location", ["oracle://scott:S3cretPw@localhost:1521/FREEPDB1",
                                      "oracle://scott/S3cretPw@localhost:1521/FREEPDB1",
                                      "oracle://scott:p@S3cretPw@localhost:1521/FREEPDB1"])
@pytest.mark.parametrize("args", [["add", "tea"], ["list"]])
def test_an_oracle_db_with_a_password_outside_reembed_is_refused_without_repeating_it(runner, tmp_path, monkeypatch,
                                                                                       location, args):
    """red33 (dba33 F1: no secret is printed): `oramem --db oracle://scott:PW@... list` printed
    the whole location, password and all, in its usage error; `oramem reembed` and `migrate`
    refuse the same location without repeating it."""
    monkeypatch.chdir(tmp_path)
    res = _run(runner, "--db", location, *args, expect=2)
    assert "names an Oracle store: only `oramem reembed` takes one" in res.output, res.output
    assert "S3cretPw" not in res.output and "holds no password" in res.output, res.output
    assert list(tmp_path.iterdir()) == []
