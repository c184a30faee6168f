"""The TYPE hint of `get`/`update`/`delete` opens the store while click parses the arguments
(red27 check of RecordTypeArgument): it only reads. The database file and the files beside
it stay as they were, no store is created in it, and a record deleted or erased is not named."""

from __future__ import annotations

import hashlib
import os

import pytest
from click.testing import CliRunner

from oramem.cli import cli


def run(runner: CliRunner, *args: str, expect: int = 0):
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def _files(folder) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in sorted(os.listdir(folder))}


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("command", ["get", "delete", "update"])
def test_the_type_hint_writes_nothing(runner, tmp_path, command, read_only):
    db = str(tmp_path / "t.db")
    rid = run(runner, "--db", db, "--store-strategy", "keyword", "add", "--user", "alice", "Alice's passport").stdout.strip()
    before = _files(tmp_path)
    extra = ["--text", "x"] if command == "update" else []
    flags = ["--read-only"] if read_only else []
    err = run(runner, "--db", db, *flags, command, rid, *extra, expect=2).stderr
    assert f"it is a memory record: oramem {command} memory {rid}" in err
    # another store of the file (none there): no hint, and no store created for it
    err = run(runner, "--db", db, *flags, "--store", "bobs", command, rid, *extra, expect=2).stderr
    assert "is not a record type" in err and "it is a" not in err
    after = _files(tmp_path)
    assert after["t.db"] == before["t.db"]
    # a read-only SQLite connection (the catalog lookup) leaves its WAL index files behind: an
    # empty log, nothing written (plain `oramem --store bobs get memory ID` does the same)
    assert set(after) - set(before) <= {"t.db-wal", "t.db-shm"}
    if "t.db-wal" in after:
        assert os.path.getsize(tmp_path / "t.db-wal") == 0
    listed = run(runner, "--db", db, "stores", "list").stdout
    assert "DEFAULT" in listed and "BOBS" not in listed.upper()


def test_the_type_hint_never_names_a_deleted_or_erased_record(runner, tmp_path):
    db = str(tmp_path / "t.db")
    add = ("--db", db, "--store-strategy", "keyword", "add")
    gone = run(runner, *add, "--user", "alice", "Alice's passport").stdout.strip()
    erased = run(runner, *add, "--user", "carol", "Carol's address").stdout.strip()
    run(runner, "--db", db, "delete", "memory", gone)
    run(runner, "--db", db, "forget", "--user", "carol", "--yes")
    for rid in (gone, erased):
        err = run(runner, "--db", db, "get", rid, expect=2).stderr
        assert "is not a record type" in err and "it is a" not in err


def test_the_type_hint_on_an_in_memory_database(runner):
    err = run(runner, "--db", ":memory:", "get", "abc", expect=2).stderr
    assert "'abc' is not a record type" in err and "it is a" not in err
