"""`oramem migrate SOURCE TARGET` (issue 13 item 4): every store with its knowledge tables,
batched and resumable, with counts and checksums compared (the Oracle sides over the recording
fake: tests/oracle/test_migrate_oracle_fake.py)."""

from __future__ import annotations

import json
from oramem.sqlite._sqlite import sqlite3

from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.knowledge import KnowledgeMemory
from oramem.migrate import migrate
from oramem.testing import HashEmbedder

import pytest


def run(runner: CliRunner, *args: str, expect: int = 0):
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def _source(path: str) -> None:
    with SQLiteMemoryStore(path, embedder=HashEmbedder(32), search_strategy="hybrid") as store:
        store.add_user("ana", "Ana, a gardener", metadata={"tier": 2})
        store.add(["Ana grows figs", "Ana hates frost"], "memory", user_ids="ana", ttl_days=30,
                  metadata=[{"topic": "garden"}, None])
        store.add(["hello there"], "message", thread_ids="t1", user_ids="ana", roles="user",
                  timestamps="2025-01-02T03:04:05+00:00")
        store.add(["a long note"], "memory", index_texts=[["chunk one", "chunk two"]], record_ids=["caller"])
        with KnowledgeMemory(store, None) as km:
            km.add_fact("helper", "Ana", "Ana lives in Porto", subject_type="person")
    with SQLiteMemoryStore(path, memory_store_id="KW", search_strategy="keyword") as kw:
        kw.add([f"keyword note {i}" for i in range(7)], "memory")


def _rows(path: str, table: str) -> list:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr)
    finally:
        conn.close()


def test_migrate_sqlite_to_sqlite_copies_everything_and_resumes(runner, tmp_path):
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    _source(src)
    out = json.loads(run(runner, "--json", "migrate", f"sqlite:{src}", dst, "--batch-size", "2").stdout)
    assert out["ok"] and out["copied_records"] == 5 + 2 + 7  # 5 records + the knowledge fact and event records, 7 keyword notes
    by_id = {s["memory_store_id"]: s for s in out["stores"]}
    assert by_id["KW"]["records"] == {"source": 7, "target": 7}
    assert by_id["DEFAULT"]["knowledge"]["DEFAULT_KG_FACT"] == {"source": 1, "target": 1}
    assert {"DEFAULT_KG_JOB", "DEFAULT_KG_AGENT", "DEFAULT_KG_EVENT"} <= set(by_id["DEFAULT"]["knowledge"])
    from oramem.sqlite import admin

    assert admin.list_stores(dst)["DEFAULT"]["capability"] == "hybrid"
    with SQLiteMemoryStore(dst, search_strategy="hybrid") as copy:  # the recorded embedder is rebuilt
        assert isinstance(copy.embedder, HashEmbedder) and copy.embedder.embedding_dimension == 32
        with SQLiteMemoryStore(src, search_strategy="hybrid") as orig:
            for rtype in ("memory", "message", "user_profile", "thread"):
                # seq_no is store-assigned (the thread rows are copied first, SC-13.6): the order is kept
                assert [dict(r.__dict__, seq_no=None) for r in copy.list(rtype)] == [
                    dict(r.__dict__, seq_no=None) for r in orig.list(rtype)]
        assert copy.search("figs", k=1, strategy="keyword")[0][0].content == "Ana grows figs"
        assert copy.search("chunk two", k=1, strategy="keyword")[0][0].id == "caller"
        assert copy.get("memory", "caller").expires_at is None
        with KnowledgeMemory(copy, None) as km:
            assert [f.fact_text for f in km.get_all("helper")] == ["Ana lives in Porto"]
    assert _rows(dst, "DEFAULT_KG_FACT") == _rows(src, "DEFAULT_KG_FACT")
    # a rerun (an interrupted migration resumed) copies nothing twice and still matches
    again = json.loads(run(runner, "--json", "migrate", src, dst).stdout)
    assert again["ok"] and again["copied_records"] == 0 and again["skipped_records"] == 14
    assert again["copied_knowledge_rows"] == 0


def test_migrate_reports_a_difference(runner, tmp_path):
    src, dst = str(tmp_path / "s.db"), str(tmp_path / "d.db")
    _source(src)
    run(runner, "migrate", src, dst)
    conn = sqlite3.connect(dst)
    conn.execute("UPDATE \"om_DEFAULT_records\" SET content = 'tampered' WHERE id = 'caller'")
    conn.commit()
    conn.close()
    res = run(runner, "migrate", src, dst, expect=1)
    assert "DEFAULT: 7 -> 7 records" in res.stdout and "checksums DIFFER" in res.stdout
    assert "the copy differs from the source: DEFAULT" in res.stderr


def test_migrate_refusals_come_before_anything_is_written(runner, tmp_path, monkeypatch):
    src = str(tmp_path / "s.db")
    _source(src)
    asked = []

    def connect(user, dsn):
        asked.append((user, dsn))
        raise AssertionError("no Oracle connection may be made")

    # a HYBRID store into Oracle needs the in-database model that embeds its queries
    with pytest.raises(ValueError, match="DEFAULT is HYBRID.*--oracle-model NAME"):
        migrate(src, "oracle://oramem@localhost:1521/FREEPDB1", stores=["DEFAULT"], oracle_connect=connect)
    assert asked == []
    # no password for an Oracle side: said before any connection
    monkeypatch.delenv("ORAMEM_PASSWORD", raising=False)
    with pytest.raises(ValueError, match="no password for Oracle user oramem: set ORAMEM_PASSWORD"):
        migrate("oracle://oramem@localhost:1521/FREEPDB1", str(tmp_path / "x.db"))
    assert not (tmp_path / "x.db").exists()
    with pytest.raises(ValueError, match="same Oracle database"):
        migrate("oracle://a@h:1521/S", "oracle://b@h:1521/S", oracle_connect=connect)
    with pytest.raises(ValueError, match="batch_size must be an int in 1..10000"):
        migrate(src, str(tmp_path / "y.db"), batch_size=0)
    assert "same file" in run(runner, "migrate", src, f"sqlite:{src}", expect=2).stderr
    assert "oracle://USER@HOST" in run(runner, "migrate", src, "oracle://nohost", expect=2).stderr
    assert "no database file" in run(runner, "migrate", str(tmp_path / "none.db"), str(tmp_path / "y.db"), expect=1).stderr
    assert "--oracle-model NAME" in run(runner, "migrate", src, "oracle://u@h:1521/S", expect=2).stderr


def test_an_unreachable_oracle_side_is_one_error_line(runner, tmp_path, monkeypatch):
    src = str(tmp_path / "s.db")
    with SQLiteMemoryStore(src, vector_dim=3, search_strategy="vector"):
        pass
    monkeypatch.setenv("ORAMEM_PASSWORD", "not-sent-anywhere-else")
    res = run(runner, "migrate", src, "oracle://u@127.0.0.1:1/FREEPDB1", expect=1)
    assert res.stderr.startswith("Error: cannot connect to Oracle as u at 127.0.0.1:1/FREEPDB1: DPY-")
    assert "not-sent-anywhere-else" not in res.stderr
