"""import/export round trip, import validation, and the demo command."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from oramem.cli import cli



def invoke(runner: CliRunner, *args: str, expect: int = 0, input: str | None = None):
    result = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == expect, (args, result.exit_code, result.output)
    return result


LINES = [
    {"record_type": "user_profile", "id": "ann", "content": "Ann, a chemist"},
    {"record_type": "message", "id": "m1", "thread_id": "t1", "user_id": "ann", "role": "user", "content": "hi there"},
    {"record_type": "message", "id": "m2", "thread_id": "t1", "user_id": "ann", "role": "assistant", "content": "hello"},
    {"record_type": "fact", "id": "f1", "user_id": "ann", "content": "Ann works with polymers", "metadata": {"tags": ["work"]}},
    {"type": "memory", "text": "alias fields work", "id": "x1", "timestamp": "2026-02-03T04:05:06Z"},
    {"record_type": "memory", "id": "x2", "content": "expires soon", "ttl_days": 5},
    {"record_type": "memory", "id": "x3", "content": "not searchable", "index_text": ""},
]


def write_jsonl(path: Path, rows: list) -> str:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return str(path)


def test_import_export_round_trip(runner, tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", LINES)
    db1, db2 = str(tmp_path / "one.db"), str(tmp_path / "two.db")
    res = json.loads(invoke(runner, "--db", db1, "--json", "import", src, "--batch-size", "2").stdout)
    assert res["imported"] == len(LINES)
    assert res["by_type"] == {"user_profile": 1, "message": 2, "fact": 1, "memory": 3}
    exported = invoke(runner, "--db", db1, "export").stdout
    rows = [json.loads(ln) for ln in exported.splitlines()]
    assert [r["id"] for r in rows] == ["ann", "t1", "m1", "m2", "x1", "x2", "x3", "f1"]  # t1: its thread row
    assert rows[0]["record_type"] == "user_profile"
    x2 = next(r for r in rows if r["id"] == "x2")
    assert x2["expires_at"] is not None
    out = tmp_path / "out.jsonl"
    invoke(runner, "--db", db1, "export", "--out", str(out))
    assert out.read_text(encoding="utf-8") == exported
    invoke(runner, "--db", db2, "import", str(out))
    again = [json.loads(ln) for ln in invoke(runner, "--db", db2, "export").stdout.splitlines()]
    keep = ("record_type", "id", "content", "thread_id", "user_id", "agent_id", "role", "timestamp", "metadata")
    assert [{k: r.get(k) for k in keep} for r in again] == [{k: r.get(k) for k in keep} for r in rows]
    # the index_text="" record stays unsearchable, the others are found
    hits = json.loads(invoke(runner, "--db", db1, "--json", "search", "searchable", "--strategy", "keyword").stdout)
    assert hits == []
    hits = json.loads(invoke(runner, "--db", db1, "--json", "search", "polymers", "--strategy", "keyword").stdout)
    assert [h["record"]["id"] for h in hits] == ["f1"]
    # messages keep their order
    listed = json.loads(invoke(runner, "--db", db2, "--json", "list", "--type", "message").stdout)
    assert [m["id"] for m in listed] == ["m1", "m2"] and listed[0]["seq_no"] < listed[1]["seq_no"]


def test_export_type_filter(runner, tmp_path):
    db = str(tmp_path / "d.db")
    invoke(runner, "--db", db, "import", write_jsonl(tmp_path / "in.jsonl", LINES))
    rows = [json.loads(ln) for ln in invoke(runner, "--db", db, "export", "--type", "fact").stdout.splitlines()]
    assert [r["id"] for r in rows] == ["f1"]


@pytest.mark.parametrize(
    "bad, message",
    [
        ("not json", "bad.jsonl:3: not valid JSON"),
        ("[1, 2]", "bad.jsonl:3: expected a JSON object"),
        ('{"record_type": "memory", "content": "x", "colour": "red"}', "bad.jsonl:3: unknown field(s) colour"),
        ('{"record_type": "widget", "content": "x"}', "bad.jsonl:3: record_type must be one of"),
        ('{"record_type": "fact", "content": "x", "role": "user"}', "bad.jsonl:3: role applies only to message"),
        ('{"record_type": "user_profile", "content": "no id"}', "bad.jsonl:3: user_profile records need id:"),
        ('{"record_type": "memory", "content": "x", "timestamp": "soon"}', "bad.jsonl:3:"),
    ],
)
def test_bad_line_fails_before_anything_is_written(runner, tmp_path, bad, message):
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"record_type": "memory", "id": "ok1", "content": "fine"})
    path.write_text(f"{good}\n\n{bad}\n", encoding="utf-8")
    db = str(tmp_path / "d.db")
    res = invoke(runner, "--db", db, "import", str(path), expect=2)
    assert message in res.stderr and "Traceback" not in res.output
    assert not Path(db).exists()  # validated before the store was even opened


def test_store_conflict_in_a_later_batch_writes_nothing(runner, tmp_path):
    """imp48: the stored id in the second batch is found before the first batch is written
    (SQLite checks the whole file first); before, the first batch stayed written."""
    db = str(tmp_path / "d.db")
    invoke(runner, "--db", db, "add", "--id", "dup", "already here")
    rows = [{"record_type": "memory", "id": f"n{i}", "content": f"note {i}"} for i in range(4)]
    rows.append({"record_type": "memory", "id": "dup", "content": "clash"})
    res = invoke(runner, "--db", db, "import", "--batch-size", "3", write_jsonl(tmp_path / "in.jsonl", rows), expect=2)
    assert "line 5: ids already stored: 'dup' (memory)" in res.stderr
    assert "nothing was written: 0 of 5 record(s) imported" in res.stderr and "--on-conflict skip" in res.stderr
    ids = [r["id"] for r in json.loads(invoke(runner, "--db", db, "--json", "list").stdout)]
    assert ids == ["dup"]


def test_import_from_stdin(runner, tmp_path):
    db = str(tmp_path / "d.db")
    data = "\n".join(json.dumps(r) for r in LINES[:3])
    out = invoke(runner, "--db", db, "import", "-", input=data).stdout
    assert out.startswith("imported 3 record(s)")


def test_demo_prints_all_three_strategies(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    out = invoke(runner, "demo").stdout
    assert time.monotonic() - started < 30
    assert "Loaded" in out and "3 users" in out
    for strategy in ("[VECTOR]", "[KEYWORD]", "[HYBRID]"):
        assert strategy in out
    tables = [ln for ln in out.splitlines() if ln.startswith("rank")]
    assert len(tables) >= 6
    assert "user=alice" in out and "dark roast" in out
    assert list(tmp_path.iterdir()) == []  # nothing left behind, no ./oramem.db created


def test_demo_json_results_respect_scope_and_filters(runner):
    data = json.loads(invoke(runner, "--json", "demo").stdout)
    assert data["loaded"] >= 40 and data["users"] == ["alice", "bob", "chen"]
    by = {(s["strategy"], s["query"]): s for s in data["searches"]}
    assert {s["strategy"] for s in data["searches"]} == {"vector", "keyword", "hybrid"}
    for s in data["searches"]:
        assert s["results"], s["query"]
        dists = [r["distance"] for r in s["results"]]
        assert dists == sorted(dists)
    coffee = by[("vector", "what coffee does she drink")]
    assert all(r["record"]["user_id"] == "alice" or r["record"]["id"] == "alice" for r in coffee["results"])
    assert any("coffee" in r["record"]["content"] for r in coffee["results"])
    peanut = by[("keyword", "peanut allergy")]
    assert "peanut" in peanut["results"][0]["record"]["content"].lower()
    thread = by[("hybrid", "vector index latency")]
    assert all(r["record"]["thread_id"] == "alice-db" for r in thread["results"])
    travel = by[("hybrid", "hotel budget per night")]
    assert all(r["record"]["metadata"]["topic"] == "travel" for r in travel["results"])
    safety = [s for s in data["searches"] if "safety" in s["query"]][0]
    assert all("safety" in r["record"]["metadata"]["tags"] for r in safety["results"])


def test_demo_with_explicit_db_keeps_it_and_never_clobbers(runner, tmp_path):
    db = tmp_path / "demo.db"
    out = invoke(runner, "--db", str(db), "demo").stdout
    assert db.exists() and f"oramem --db {db}" in out
    hits = json.loads(invoke(runner, "--db", str(db), "--json", "search", "marathon").stdout)
    assert hits
    res = invoke(runner, "--db", str(db), "demo", expect=1)
    assert "already exists" in res.stderr
