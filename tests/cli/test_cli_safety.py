"""Opening safely (missing/unwritable directory, read-only or damaged file) and the
embedding key scoping, through the CLI: one `Error:` line, no traceback."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from oramem.cli import cli


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for var in ("ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_STRATEGY", "ORAMEM_EMBED_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return CliRunner()


def run(runner: CliRunner, *args: str, expect: int):
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def test_missing_directory(runner, tmp_path):
    res = run(runner, "--db", str(tmp_path / "nope" / "x.db"), "add", "hello", expect=1)
    assert "directory" in res.stderr and "does not exist" in res.stderr
    assert res.stderr.count("\n") == 1


def test_unwritable_directory_and_read_only_file(runner, tmp_path, monkeypatch):
    db = str(tmp_path / "r.db")
    run(runner, "--db", db, "add", "hello", expect=0)
    real = os.access
    # root ignores permission bits, so emulate a read-only file and directory
    monkeypatch.setattr("oramem.cli.state.os.access", lambda p, mode: False if mode & os.W_OK else real(p, mode))
    # reading commands open it read-only (tests/sqlite/test_read_only.py checks real permissions)
    assert "hello" in run(runner, "--db", db, "search", "hello", expect=0).stdout
    res = run(runner, "--db", db, "add", "more", expect=1)
    assert "is read-only here" in res.stderr and "write access to the file and its directory" in res.stderr
    res = run(runner, "--db", str(tmp_path / "new.db"), "add", "x", expect=1)
    assert "is not writable" in res.stderr


def test_empty_and_directory_db(runner, tmp_path):
    assert "is empty" in run(runner, "--db", "", "add", "x", expect=2).stderr
    assert "is a directory" in run(runner, "--db", str(tmp_path), "add", "x", expect=2).stderr


@pytest.mark.parametrize("command", [["search", "x"], ["list"], ["get", "memory", "a"], ["export"], ["purge"],
                                     ["check"], ["stores", "list"], ["reembed"], ["knowledge", "facts", "a1"]])
def test_empty_and_directory_db_for_every_command_that_opens_it(runner, tmp_path, command):
    """docs/new-user-trial.md #28: `--db ""` and `--db .` give clear errors. They did for
    writing commands only: a reading command said "no database at " (an empty name) or, for
    a directory, "not an oramem SQLite database (disk I/O error)", exit 1 (audit22)."""
    assert "--db '' is empty; give a database file path" in run(runner, "--db", "", *command, expect=2).stderr
    res = run(runner, "--db", str(tmp_path), *command, expect=2)
    assert f"--db {str(tmp_path)!r} is a directory; give a database file path" in res.stderr


@pytest.mark.parametrize("command", [["search", "--help"], ["list", "-h"], ["stores", "list", "--help"]])
def test_a_help_page_is_shown_whatever_db_says(runner, tmp_path, command):
    """The empty/directory --db check above runs before the command; a help request is not a
    use of --db, so it still gets its page (and --db after "--" is a value, not a request)."""
    for db in ("", str(tmp_path)):
        assert "Usage: " in run(runner, "--db", db, *command, expect=0).stdout
    assert "is empty" in run(runner, "--db", "", "search", "--", "--help", expect=2).stderr


def test_damaged_file_says_damaged_and_how_to_recover(runner, tmp_path):
    db = str(tmp_path / "d.db")
    for i in range(5):
        run(runner, "--db", db, "add", f"note number {i} " * 200, expect=0)
    with open(db, "r+b") as fh:
        fh.seek(4096 * 2)
        fh.write(b"\xff" * 8192)
    for cmd in (["export"], ["search", "note"], ["list"]):
        res = run(runner, "--db", db, *cmd, expect=1)
        assert "is damaged" in res.stderr and ".recover" in res.stderr, res.stderr


def test_embed_key_not_sent_in_clear_to_remote_host(runner, monkeypatch, tmp_path):
    monkeypatch.setenv("ORAMEM_EMBED_API_KEY", "sk-secret")
    res = run(runner, "--db", str(tmp_path / "e.db"), "--embed-url", "http://embed.example.com/v1", "--embed-model", "m",
              "add", "hi", expect=2)
    assert "refusing to send the embedding API key" in res.stderr and "--embed-allow-http-key" in res.stderr
    assert "sk-secret" not in res.output


def test_blank_text_and_zero_ttl_are_refused(runner, tmp_path):
    db = str(tmp_path / "b.db")
    assert "text 1 is empty or blank" in run(runner, "--db", db, "add", "", expect=2).stderr
    assert "text 2 is empty or blank" in run(runner, "--db", db, "add", "ok", "   ", expect=2).stderr
    assert "would expire the record at once" in run(runner, "--db", db, "add", "--ttl-days", "0", "x", expect=2).stderr
    assert not os.path.exists(db)


def test_full_shows_the_whole_content(runner, tmp_path, monkeypatch):
    db = str(tmp_path / "w.db")
    text = "a long memory " + "word " * 60 + "THE-END"
    run(runner, "--db", db, "add", text, expect=0)
    assert "THE-END" in run(runner, "--db", db, "list", expect=0).stdout  # not a terminal: never cut
    monkeypatch.setattr("oramem.cli.output._stdout_is_terminal", lambda: True)
    assert "THE-END" not in run(runner, "--db", db, "list", expect=0).stdout  # a terminal: cut to the width
    assert "THE-END" in run(runner, "--db", db, "list", "--full", expect=0).stdout
    assert "THE-END" in run(runner, "--db", db, "search", "memory", "--full", expect=0).stdout


def test_db_connection_options_after_the_subcommand(runner, monkeypatch):
    """new-user-trial #15: `oramem db status --dsn X` is `oramem db --dsn X status`."""
    for var in ("ORAMEM_DSN", "ORAMEM_USER", "ORAMEM_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    after = runner.invoke(cli, ["db", "status", "--dsn", "localhost:1/X", "--password-stdin"], input="")
    before = runner.invoke(cli, ["db", "--dsn", "localhost:1/X", "--password-stdin", "status"], input="")
    assert "No such option" not in after.output and "no user given" in after.output
    assert (after.exit_code, after.output.splitlines()[-1]) == (before.exit_code, before.output.splitlines()[-1])


def test_empty_types_and_store_are_refused(runner, tmp_path):
    db = str(tmp_path / "e.db")
    run(runner, "--db", db, "add", "hello", expect=0)
    assert "--types is empty" in run(runner, "--db", db, "search", "hello", "--types", "", expect=2).stderr
    assert "--store is empty" in run(runner, "--db", db, "--store", "", "search", "hello", expect=2).stderr
