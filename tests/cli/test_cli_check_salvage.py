"""A damaged file: `oramem export` salvages the readable records row range by row range and
says how to recover the rest; `oramem check` reports integrity, settings and index
consistency (issue 13 item 3, new-user-trial #4)."""

from __future__ import annotations

import json
import re
from oramem.sqlite._sqlite import sqlite3

from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.testing import HashEmbedder

N = 3000


def run(runner: CliRunner, *args: str, expect: int):
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, (args, result.exit_code, result.output[-2000:])
    assert "Traceback" not in result.output
    return result


def _build(path: str) -> None:
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32), search_strategy="hybrid") as store:
        # the content lives only in the records table (the retrieval text differs)
        store.add([f"record-{i:05d} " * 12 for i in range(N)], "memory", index_texts=[f"idx {i}" for i in range(N)],
                  record_ids=[f"r{i}" for i in range(N)])


def _damage_page_holding(path: str, marker: bytes) -> None:
    conn = sqlite3.connect(path)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = open(path, "rb").read()
    at = data.index(marker) // page * page
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(b"\xff" * page)


def test_export_salvages_a_damaged_file_and_check_reports_it(runner, tmp_path):
    db = str(tmp_path / "d.db")
    _build(db)
    res = run(runner, "--db", db, "--json", "check", expect=0)
    report = json.loads(res.stdout)
    assert report["ok"] and [c["check"] for c in report["checks"]][:2] == ["integrity", "DEFAULT settings"]
    _damage_page_holding(db, b"record-01500")
    res = run(runner, "--db", db, "check", expect=1)
    assert res.stdout.startswith("FAIL  integrity") and ".recover" in res.stdout
    res = run(runner, "--db", db, "export", expect=1)
    ids = {json.loads(line)["id"] for line in res.stdout.splitlines()}
    assert "r1500" not in ids and {"r0", "r2999"} <= ids and len(ids) > N * 0.9
    assert "is damaged" in res.stderr and f"exported the {len(ids)} readable record(s)" in res.stderr
    assert "could not be read" in res.stderr and ".recover" in res.stderr


def test_check_finds_index_inconsistency(runner, tmp_path):
    db = str(tmp_path / "c.db")
    run(runner, "--db", db, "add", "alpha note", expect=0)
    run(runner, "--db", db, "add", "beta note", expect=0)
    conn = sqlite3.connect(db)
    conn.execute('DELETE FROM "om_DEFAULT_fts" WHERE rowid = (SELECT min(chunk_id) FROM "om_DEFAULT_chunks")')
    conn.commit()
    conn.close()
    res = run(runner, "--db", db, "check", expect=1)
    assert re.search(r"^FAIL  DEFAULT keyword index +1 keyword rows not indexed", res.stdout, re.M), res.stdout
    assert "1 check(s) failed: DEFAULT keyword index" in res.stderr
