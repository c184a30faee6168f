"""Lossless backup: export -> import keeps every field; conflicts, resume, in-file
duplicates, interruption, BOM and a default type (CLI and ``oramem.jsonl``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from oramem import SQLiteMemoryStore, jsonl
from oramem.embedders import HashEmbedder
from oramem import PendingRecordBatch

from .test_cli_import_export_demo import invoke


def store(path: str) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(path, embedder=HashEmbedder(256), search_strategy="hybrid")


def fill(path: str) -> None:
    s = store(path)
    s.add_user("ann", "Ann, a chemist", metadata={"tier": 2})
    s.add(["hi there", "hello"], "message", record_ids=["m1", "m2"], thread_ids="t1", user_ids="ann",
          roles=["user", "assistant"], timestamps=["2026-01-01T10:00:00Z", "2026-01-01T10:00:05Z"])
    s.add(["expires tomorrow"], "memory", record_ids=["x1"], user_ids="ann", agent_ids="bot", ttl_days=1,
          metadata=[{"topic": "privacy", "n": [1, 2]}])
    s.add(["lives forever"], "fact", record_ids=["f1"], user_ids="ann")
    s.close()


def all_records(path: str) -> list[dict]:
    s = store(path)
    try:
        out: list[dict] = []
        jsonl.export_records(s, lambda line: out.append(json.loads(line)))
        return out
    finally:
        s.close()


def backup_and_restore(runner, tmp_path, *import_flags: str) -> tuple[str, str]:
    """Fill a.db, export it, import the file into b.db; returns both paths."""
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    fill(a)
    backup = tmp_path / "backup.jsonl"
    invoke(runner, "--db", a, "export", "--out", str(backup))
    invoke(runner, "--db", b, "import", *import_flags, str(backup))
    return a, b


def test_cli_round_trip_keeps_every_field(runner, tmp_path):
    a, b = backup_and_restore(runner, tmp_path)
    before, after = all_records(a), all_records(b)
    assert len(before) == 6  # 5 records and the row of thread t1 (SC-13.6)
    for row in before + after:
        row.pop("seq_no", None)  # store-assigned numbering (documented)
    assert after == before  # created_at, expires_at, metadata, scope, role, timestamp: all equal
    x1 = next(r for r in after if r["id"] == "x1")
    assert x1["expires_at"] is not None
    # the restored store answers searches on the restored content
    s = store(b)
    assert [r.id for r, _ in s.search("tomorrow", k=1, strategy="keyword")] == ["x1"]
    s.close()


def test_fresh_times_reassigns(runner, tmp_path):
    a, b = backup_and_restore(runner, tmp_path, "--fresh-times")
    old = {r["id"]: r for r in all_records(a)}
    new = {r["id"]: r for r in all_records(b)}
    assert new["f1"]["created_at"] > old["f1"]["created_at"]
    assert "expires_at" not in new["x1"]  # no ttl_days in the file: never expires


def test_resume_after_partial_import_with_skip(runner, tmp_path):
    db = str(tmp_path / "d.db")
    rows = [{"record_type": "memory", "id": f"n{i}", "content": f"note {i}"} for i in range(6)]
    part = tmp_path / "part.jsonl"
    part.write_text("\n".join(json.dumps(r) for r in rows[:3]) + "\n", encoding="utf-8")
    full = tmp_path / "full.jsonl"
    full.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    invoke(runner, "--db", db, "import", str(part))
    res = invoke(runner, "--db", db, "import", str(full), expect=2)
    assert "already stored" in res.stderr and "0 of 6 record(s) imported" in res.stderr
    res = json.loads(invoke(runner, "--db", db, "--json", "import", "--on-conflict", "skip", str(full)).stdout)
    assert (res["imported"], res["skipped"]) == (3, 3)
    ids = [r["id"] for r in json.loads(invoke(runner, "--db", db, "--json", "list").stdout)]
    assert sorted(ids) == [f"n{i}" for i in range(6)]


def test_replace_overwrites_stored_records(runner, tmp_path):
    db = str(tmp_path / "d.db")
    invoke(runner, "--db", db, "add", "--id", "r1", "old words zebra")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"record_type": "memory", "id": "r1", "content": "new words okapi"}) + "\n", encoding="utf-8")
    invoke(runner, "--db", db, "import", "--on-conflict", "replace", str(src))
    got = json.loads(invoke(runner, "--db", db, "--json", "get", "memory", "r1").stdout)
    assert got["content"] == "new words okapi"
    assert json.loads(invoke(runner, "--db", db, "--json", "search", "zebra", "--strategy", "keyword").stdout) == []
    hits = json.loads(invoke(runner, "--db", db, "--json", "search", "okapi", "--strategy", "keyword").stdout)
    assert [h["record"]["id"] for h in hits] == ["r1"]


def test_duplicate_ids_in_the_file_are_caught_before_writing(runner, tmp_path):
    db = str(tmp_path / "d.db")
    rows = [{"record_type": "memory", "id": f"n{i}", "content": f"note {i}"} for i in range(10)]
    rows[8]["id"] = "n5"
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    res = invoke(runner, "--db", db, "import", "--batch-size", "3", str(src), expect=2)
    assert "in.jsonl:9: id 'n5' (memory) already appears on line 6" in res.stderr
    assert not Path(db).exists()
    # the same id under two record types is not a duplicate
    rows[8] = {"record_type": "fact", "id": "n5", "content": "a fact"}
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    invoke(runner, "--db", db, "import", str(src))


def test_bom_and_default_type(runner, tmp_path):
    db = str(tmp_path / "d.db")
    src = tmp_path / "in.jsonl"
    src.write_bytes("\ufeff".encode() + b'{"content": "plain line"}\n{"content": "typed", "record_type": "fact"}\n')
    res = invoke(runner, "--db", db, "import", str(src), expect=2)
    assert "give record_type on the line, or --type TYPE for the lines without one" in res.stderr
    out = json.loads(invoke(runner, "--db", db, "--json", "import", "--type", "guideline", str(src)).stdout)
    assert out["by_type"] == {"guideline": 1, "fact": 1}


def test_ctrl_c_prints_what_landed_and_exits_130(runner, tmp_path, monkeypatch):
    db = str(tmp_path / "d.db")
    rows = [{"record_type": "memory", "id": f"n{i}", "content": f"note {i}"} for i in range(10)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    real = SQLiteMemoryStore.restore_batches
    calls = {"n": 0}

    def interrupted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLiteMemoryStore, "restore_batches", interrupted)
    res = invoke(runner, "--db", db, "import", "--batch-size", "4", str(src), expect=130)
    assert "interrupted: 8 of 10 record(s) imported, stopped at line 9" in res.stderr
    assert "Aborted" not in res.output
    monkeypatch.setattr(SQLiteMemoryStore, "restore_batches", real)
    res = json.loads(invoke(runner, "--db", db, "--json", "import", "--on-conflict", "skip", str(src)).stdout)
    assert (res["imported"], res["skipped"]) == (2, 8)


def test_python_api_round_trip_and_errors(tmp_path):
    a = str(tmp_path / "a.db")
    fill(a)
    buf = io.StringIO()
    s = store(a)
    assert jsonl.export_records(s, buf.write) == 6  # with the thread row (SC-13.6)
    s.close()
    lines = jsonl.parse_lines(io.StringIO(buf.getvalue()), "buf")
    target = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(256))
    result = jsonl.import_records(target, lines, batch_size=2)
    assert (result.imported, result.skipped, result.total) == (6, 0, 6)
    assert target.get("memory", "x1").expires_at == next(r for r in all_records(a) if r["id"] == "x1")["expires_at"]
    with pytest.raises(jsonl.ImportStopped) as stopped:
        jsonl.import_records(target, lines)
    assert stopped.value.result.imported == 0 and stopped.value.lineno == 1
    assert jsonl.import_records(target, lines, on_conflict="skip").skipped == 6
    with pytest.raises(ValueError, match="on_conflict must be one of fail, skip, replace"):
        jsonl.import_records(target, lines, on_conflict="upsert")
    with pytest.raises(jsonl.JSONLError, match="ttl_days does not go with created_at"):
        jsonl.parse_lines(['{"record_type": "memory", "content": "a", "ttl_days": 1, "created_at": "2026-01-01T00:00:00Z"}'])
    with pytest.raises(jsonl.JSONLError, match="never expires"):
        jsonl.parse_lines(['{"record_type": "user_profile", "id": "u", "content": "a", "expires_at": "2026-01-01T00:00:00Z"}'])


def test_restore_batches_validates_times():
    s = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(32))
    batch = [PendingRecordBatch(["a"], "memory", record_ids=["a"])]
    with pytest.raises(ValueError, match="one entry per record"):
        s.restore_batches(batch, times=[])
    with pytest.raises(ValueError, match="not an ISO-8601"):
        s.restore_batches(batch, times=[("yesterday", None)])
    assert s.get("memory", "a") is None  # nothing written by the refused calls
    s.restore_batches(batch, times=[("2020-05-05T05:05:05Z", None)])
    assert s.get("memory", "a").created_at == "2020-05-05T05:05:05.000000+00:00"


def test_export_with_vectors_round_trips_chunks_and_vectors_and_guards_the_embedder(tmp_path):
    """Issue 13 item 5: vectors and caller chunks travel with the embedder's identity; a
    store with another embedder refuses them (or re-embeds with --no-vectors)."""
    from oramem.sqlite._sqlite import sqlite3

    from click.testing import CliRunner

    from oramem.cli import cli

    src, dst, other = (str(tmp_path / n) for n in ("s.db", "d.db", "o.db"))
    with SQLiteMemoryStore(src, embedder=HashEmbedder(48), search_strategy="hybrid") as store:
        store.add(["a long note"], "memory", index_texts=[["first chunk", "second chunk"]], record_ids=["c"])
        store.add(["plain text"], "memory", record_ids=["p"])
    runner = CliRunner()
    out = str(tmp_path / "v.jsonl")
    res = runner.invoke(cli, ["--db", src, "export", "--with-vectors", "--out", out], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in open(out, encoding="utf-8")]
    assert lines[0]["oramem_export"]["embedder"] == {"kind": "hash", "dimension": 48, "seed": 0}
    caller = next(x for x in lines[1:] if x["id"] == "c")
    assert caller["index_text"] == ["first chunk", "second chunk"] and len(caller["embedding"]) == 2
    res = runner.invoke(cli, ["--db", dst, "--embed-dim", "48", "import", out], catch_exceptions=False)
    assert res.exit_code == 0, res.output

    def chunks(path):
        conn = sqlite3.connect(path)
        try:
            return conn.execute(
                'SELECT r.id, c.chunk_index, c.text, c.vector FROM "om_DEFAULT_chunks" c '
                'JOIN "om_DEFAULT_records" r ON r.seq = c.record_seq ORDER BY r.id, c.chunk_index'
            ).fetchall()
        finally:
            conn.close()

    assert chunks(dst) == chunks(src)
    res = runner.invoke(cli, ["--db", other, "--embed-dim", "32", "import", out], catch_exceptions=False)
    assert res.exit_code == 2 and "holds vectors made by" in res.stderr and "--no-vectors" in res.stderr
    res = runner.invoke(cli, ["--db", other, "--embed-dim", "32", "import", "--no-vectors", out], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert [c[2] for c in chunks(other)] == ["first chunk", "second chunk", "plain text"]
