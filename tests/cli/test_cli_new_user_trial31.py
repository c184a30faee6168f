"""What a new user tripped on in trial 31 (fresh virtualenv, the README from the top, then
one agent serving several users from the CLI): the record's TYPE left out of `get`/`delete`/
`update` (mem0 addresses a memory by its id alone), `search --limit`/`--k` (the count is
`-k`; `--k` was "Did you mean '--rrf-k'?"), and an Oracle password prompt with no terminal
("Warning: Can not control echo on the terminal ... Aborted!", exit 1)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from oramem.cli import cli


def run(runner: CliRunner, *args: str, expect: int = 0, **kw):
    result = runner.invoke(cli, list(args), catch_exceptions=False, **kw)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def _memory(runner: CliRunner, db: str) -> str:
    return run(runner, "--db", db, "--store-strategy", "keyword", "add", "--user", "ana",
               "Ana is allergic to shellfish").stdout.strip()


# ----------------------------------------------------------------------------- TYPE left out
@pytest.mark.parametrize("command", ["get", "delete", "update"])
def test_an_id_without_its_type_names_the_type_and_the_command(runner, tmp_path, command):
    db = str(tmp_path / "t.db")
    rid = _memory(runner, db)
    extra = ["--text", "x"] if command == "update" else []
    err = run(runner, "--db", db, command, rid, *extra, expect=2).stderr
    assert f"'{rid}' is not a record type" in err
    options = " OPTIONS" if command == "update" else ""
    assert f"it is a memory record: oramem {command} memory {rid}{options}" in err
    # the record is untouched
    shown = json.loads(run(runner, "--db", db, "--json", "get", "memory", rid).stdout)
    assert shown["content"] == "Ana is allergic to shellfish"


def test_the_two_arguments_swapped_name_the_order(runner, tmp_path):
    db = str(tmp_path / "t.db")
    rid = _memory(runner, db)
    err = run(runner, "--db", db, "get", rid, "memory", expect=2).stderr
    assert f"it is a memory record: oramem get memory {rid}" in err


def test_a_word_that_is_neither_type_nor_stored_id_lists_the_types(runner, tmp_path):
    db = str(tmp_path / "t.db")
    _memory(runner, db)
    err = run(runner, "--db", db, "get", "memroy", "x", expect=2).stderr
    assert "'memroy' is not a record type (one of: message, memory, guideline" in err
    assert "TYPE comes first, then the id" in err
    # no database at all: the same, without a lookup
    err = run(runner, "--db", str(tmp_path / "none.db"), "get", "abc", expect=2).stderr
    assert "'abc' is not a record type" in err and "none.db" not in str(list(tmp_path.iterdir()))


# ----------------------------------------------------------------------------- search count
@pytest.mark.parametrize("flag", ["-k", "--limit"])
def test_search_count_as_k_or_limit(runner, tmp_path, flag):
    db = str(tmp_path / "s.db")
    for text in ("tea one", "tea two", "tea three"):
        run(runner, "--db", db, "--store-strategy", "keyword", "add", text)
    hits = json.loads(run(runner, "--db", db, "--json", "search", "tea", flag, "2").stdout)
    assert len(hits) == 2


def test_search_k_misspelt_points_at_k_not_rrf_k(runner, tmp_path):
    db = str(tmp_path / "s.db")
    run(runner, "--db", db, "--store-strategy", "keyword", "add", "tea")
    err = run(runner, "--db", db, "search", "tea", "--k", "2", expect=2).stderr
    assert "--rrf-k" not in err
    assert "the number of results is -k N (or --limit N)" in err


# ----------------------------------------------------------------------------- passwords without a terminal
def test_db_password_without_a_terminal_says_how_to_give_it(runner, monkeypatch):
    monkeypatch.delenv("ORAMEM_PASSWORD", raising=False)
    result = run(runner, "db", "--dsn", "localhost:1521/FREEPDB1", "--user", "oramem", "status", input="", expect=2)
    assert "Aborted" not in result.output and "control echo" not in result.output
    assert "no password for oramem" in result.stderr
    assert "ORAMEM_PASSWORD" in result.stderr and "--password-stdin" in result.stderr


def test_migrate_password_without_a_terminal_says_how_to_give_it(runner, tmp_path, monkeypatch):
    from oramem import SQLiteMemoryStore

    monkeypatch.delenv("ORAMEM_PASSWORD", raising=False)
    src = str(tmp_path / "s.db")
    with SQLiteMemoryStore(src, vector_dim=3, search_strategy="vector"):
        pass
    result = run(runner, "migrate", src, "oracle://oramem@localhost:1521/FREEPDB1", input="", expect=2)
    assert "Aborted" not in result.output and "control echo" not in result.output
    assert "no password for Oracle user oramem at localhost:1521/FREEPDB1" in result.stderr
    assert "ORAMEM_PASSWORD" in result.stderr


# ----------------------------------------------------------------------------- import a database, export into nowhere
def test_importing_a_database_file_says_what_it_is(runner, tmp_path):
    src = str(tmp_path / "src.db")
    _memory(runner, src)
    target = str(tmp_path / "t.db")
    err = run(runner, "--db", target, "import", src, expect=2).stderr
    assert f"{src} is a SQLite database, not a JSON Lines export" in err
    assert f"oramem migrate sqlite:{src} sqlite:TARGET" in err and "UTF-8" not in err
    assert not (tmp_path / "t.db").exists()


def test_export_into_a_missing_directory_names_it(runner, tmp_path):
    db = str(tmp_path / "e.db")
    _memory(runner, db)
    out = tmp_path / "nowhere" / "backup.jsonl"
    err = run(runner, "--db", db, "export", "--out", str(out), expect=1).stderr
    assert f"directory {tmp_path / 'nowhere'} does not exist" in err and ".tmp" not in err


# ----------------------------------------------------------------------------- a one-value option twice
def test_a_one_value_option_given_twice_is_refused(runner, tmp_path):
    """click kept the last value silently: `search --user alice --user bob` answered as bob."""
    db = str(tmp_path / "r.db")
    _memory(runner, db)
    run(runner, "--db", db, "--store-strategy", "keyword", "add", "--user", "bob", "Bob avoids pork")
    result = run(runner, "--db", db, "search", "pork", "--user", "alice", "--user", "bob", expect=2)
    assert "--user is given more than once; it takes one value" in result.stderr and "Bob" not in result.stdout
    other = str(tmp_path / "other.db")
    err = run(runner, "--db", db, "list", "--db", other, expect=2).stderr
    assert "--db is given more than once" in err and not (tmp_path / "other.db").exists()
    err = run(runner, "--db", db, "knowledge", "facts", "a1", "--user", "x", "--user", "y", expect=2).stderr
    assert "--user is given more than once" in err
    err = run(runner, "--db", db, "add", "--type", "fact", "--type", "memory", "x", expect=2).stderr
    assert "--type is given more than once" in err
    # an option with two spellings is named by both: `-k 5 -k 6` said "--limit is given more than
    # once", a flag the user never typed (audit25)
    for twice in (["-k", "5", "-k", "6"], ["-k5", "--limit", "3"]):
        err = run(runner, "--db", db, "search", "pork", *twice, expect=2).stderr
        assert "-k/--limit is given more than once" in err, err


def test_flags_and_repeatable_options_still_repeat(runner, tmp_path):
    db = str(tmp_path / "r.db")
    _memory(runner, db)
    hits = json.loads(run(runner, "--db", db, "--json", "search", "shellfish", "--types", "memory",
                          "--types", "fact", "--json").stdout)
    assert [h["record"]["content"] for h in hits] == ["Ana is allergic to shellfish"]
    # a value that looks like an option is a value, not a second option
    assert "no results" in run(runner, "--db", db, "search", "shellfish", "--user", "--user").stdout
    run(runner, "--db", db, "add", "--user", "ana", "--", "--user is a word here")


# ----------------------------------------------------------------------------- knowledge read without --user
def test_knowledge_facts_without_user_says_how_to_read_a_users_facts(runner, tmp_path):
    from oramem import SQLiteMemoryStore
    from oramem.embedders import HashEmbedder
    from oramem.knowledge import KnowledgeMemory

    db = str(tmp_path / "k.db")
    with SQLiteMemoryStore(db, embedder=HashEmbedder(256), search_strategy="hybrid") as store:
        with KnowledgeMemory(store, None) as km:
            km.add_fact("concierge", "Ana", "Ana lives in Porto", subject_type="person", user_id="ana")
    for command in ("facts", "entities"):
        out = run(runner, "--db", db, "knowledge", command, "concierge").stdout
        assert f"(no shared {command}; a user's own {command} are listed with --user ID)" in out
        out = run(runner, "--db", db, "knowledge", command, "concierge", "--user", "ana").stdout
        assert "Ana" in out or "ana" in out
    assert run(runner, "--db", db, "knowledge", "facts", "concierge", "--user", "ben").stdout.strip() == "(no facts)"
