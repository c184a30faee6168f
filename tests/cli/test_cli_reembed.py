"""`oramem reembed`, `--embed-onnx` and the embedder shown by `stores describe`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from oramem.cli import cli


@pytest.fixture
def run(tmp_path, monkeypatch):
    for name in ("ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_STRATEGY", "ORAMEM_ONNX_MODEL", "ORAMEM_EMBED_DIM"):
        monkeypatch.delenv(name, raising=False)
    db = str(tmp_path / "mem.db")
    runner = CliRunner()

    def invoke(*args, expect=0):
        result = runner.invoke(cli, ["--db", db, *args], catch_exceptions=False)
        assert result.exit_code == expect, (args, result.exit_code, result.output)
        return result

    return invoke


def test_mismatch_advice_and_reembed_round_trip(run):
    run("add", "My daughter is allergic to peanuts", "I drive a red Prius", "We honeymooned in Lisbon")
    refused = run("--embed-dim", "384", "add", "x", expect=1)
    assert "HashEmbedder(dim=256, seed=0)" in refused.output and "Leave out --embed-dim 384" in refused.output
    assert "--embed-dim 384 reembed`" in refused.output and "embedder=" not in refused.output
    out = run("--embed-dim", "64", "reembed", "--batch-size", "2")
    assert "re-embedded 3 of 3 rows" in out.output and "HashEmbedder(dim=64, seed=0)" in out.output
    assert "re-embedding DEFAULT" in out.stderr
    desc = json.loads(run("--json", "stores", "describe").stdout)
    assert desc["vector_dim"] == 64 and desc["embedder"] == {"kind": "hash", "dimension": 64, "seed": 0}
    human = run("stores", "describe").output
    assert "HashEmbedder(dim=64, seed=0)" in human
    run("--embed-dim", "256", "add", "y", expect=1)  # the old embedder is now the wrong one
    run("add", "y")  # without --embed-* the CLI reuses the recorded HashEmbedder(64)
    hits = json.loads(run("--json", "search", "peanuts", "--strategy", "vector", "-k", "1").stdout)
    assert "peanuts" in json.dumps(hits)
    again = json.loads(run("--embed-dim", "64", "--json", "reembed").stdout)
    assert again["rows"] == 4 and again["previous"] == again["embedder"]


def test_reembed_errors(run, tmp_path):
    run("reembed", expect=1)  # no database
    run("--store-strategy", "keyword", "add", "hello")
    out = run("reembed", expect=2)
    assert "no vectors to re-embed" in out.output
    out = run("--store", "other", "reembed", expect=1)
    assert "no store 'OTHER'" in out.output


def test_embed_onnx_option(run, tmp_path):
    for mod in ("onnxruntime", "tokenizers", "onnx"):
        pytest.importorskip(mod, reason=f"{mod} not installed: pip install '.[test]'")
    from embedders.onnx_models import build_model_dir  # tests/ is on sys.path (rootdir-relative imports)

    model = build_model_dir(tmp_path / "tiny")
    run("--embed-onnx", str(model), "add", "peanut allergy", "red car")
    desc = json.loads(run("--json", "stores", "describe").stdout)
    assert desc["embedder"]["kind"] == "onnx" and desc["vector_dim"] == 6
    refused = run("--embed-dim", "6", "add", "hello", expect=1)
    assert f"--embed-onnx {model.resolve()}" in refused.output
    hits = json.loads(run("--embed-onnx", str(model), "--json", "search", "peanut", "--strategy", "vector", "-k", "1").stdout)
    assert "peanut allergy" in json.dumps(hits)
    # no option: the recorded model is found at its path and reused
    hits = json.loads(run("--json", "search", "red car", "--strategy", "vector", "-k", "1").stdout)
    assert "red car" in json.dumps(hits)
    out = run("--embed-onnx", str(tmp_path / "missing"), "add", "x", expect=1)
    assert "no model file or directory" in out.output
    out = run("--embed-onnx", str(model), "--embed-url", "http://127.0.0.1:1/v1", "--embed-model", "m", "add", "x", expect=2)
    assert "alternatives" in out.output


def test_describe_and_list_say_whether_the_store_groups_keyword_passages(run, tmp_path):
    """ora31 (issue 23): `stores describe` / `stores list` report keyword_passages, the field
    Oracle's describe_store reports: a store with a keyword index whose recorded chunk policy
    counts tokens ranks passages of its consecutive retrieval rows; others rank the rows."""
    from oramem import SQLiteMemoryStore
    from oramem.cli.selftest import PassageEmbedder
    from oramem.embedders import HashEmbedder

    db = str(tmp_path / "mem.db")  # the fixture's --db
    for sid, strategy, embedder in (("GROUPS", "hybrid", PassageEmbedder(32)), ("WINDOWS", "vector", PassageEmbedder(32)),
                                    ("ROWS", "hybrid", HashEmbedder(32))):
        with SQLiteMemoryStore(db, memory_store_id=sid, search_strategy=strategy, embedder=embedder):
            pass
    want = {"GROUPS": True, "WINDOWS": False, "ROWS": False}
    for sid, groups in want.items():
        desc = json.loads(run("--json", "stores", "describe", sid).stdout)
        assert desc["keyword_passages"] is groups, (sid, desc)
    listed = {s["memory_store_id"]: s["keyword_passages"] for s in json.loads(run("--json", "stores", "list").stdout)}
    assert listed == want
    assert re.search(r"^keyword_passages +True$", run("stores", "describe", "GROUPS").output, re.M)
    # the list's table shows no such column: the docs name `stores list --json` (audit25: they
    # said `stores list`, whose human output a user read it in vain)
    assert "keyword_passages" not in run("stores", "list").output and "True" not in run("stores", "list").output
    root = Path(__file__).resolve().parents[2]
    for doc in ("docs/spec/store.md", "docs/store-decisions.md", "plsql/VERIFY.md"):
        text = " ".join((root / doc).read_text(encoding="utf-8").split())
        assert "`oramem stores describe` / `stores list --json`" in text, doc
        assert "`oramem stores describe` / `stores list` " not in text, doc


def test_reembed_without_options_refuses_the_offline_fallback(run, tmp_path):
    """red31: without --embed-* options reembed targets the default model; offline (the tests'
    hub is off, the model cache empty) default_embedder falls back to HashEmbedder(256), and
    reembed moved a store of another embedder to it (notice: 'for this new store'), exit 0."""
    run("--embed-dim", "64", "add", "My daughter is allergic to peanuts")
    out = run("reembed", expect=2)
    assert "default model" in out.output and "oramem models pull" in out.output and "--embed-dim N" in out.output
    assert "nothing was changed" in out.output and "new store" not in out.output
    desc = json.loads(run("--json", "stores", "describe").stdout)
    assert desc["embedder"] == {"kind": "hash", "dimension": 64, "seed": 0}  # not moved
    out = run("--embed-dim", "256", "reembed")  # the lexical embedder, named, is still a target
    assert "HashEmbedder(dim=256, seed=0)" in out.output


def test_oracle_reembed_without_options_refuses_before_connecting(monkeypatch):
    from oramem.cli import cmd_backup

    def connect(*_a, **_k):
        raise AssertionError("connected: the refusal comes first")

    monkeypatch.setattr(cmd_backup, "oracle_connect", connect)
    monkeypatch.setenv("ORAMEM_PASSWORD", "x")
    result = CliRunner().invoke(cli, ["--db", "oracle://scott@db.invalid:1521/FREEPDB1", "reembed"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "default model" in result.output and "nothing was changed" in result.output


def test_reembed_moves_the_knowledge_vectors_and_says_so(run, tmp_path):
    """rek43: the CLI's reembed re-embeds the knowledge tables' vectors too (text line and
    --json "knowledge"); a fact's vector is then the new embedder's of its text."""
    import numpy as np

    from oramem import SQLiteMemoryStore
    from oramem.embedders import HashEmbedder
    from oramem.knowledge import KnowledgeMemory
    from oramem.sqlite._sqlite import sqlite3

    db = str(tmp_path / "mem.db")
    store = SQLiteMemoryStore(db, embedder=HashEmbedder(256))
    km = KnowledgeMemory(store, llm=None)
    km.add_fact("a1", "Alice", "Alice drinks green tea", subject_type="person", user_id="alice")
    km.close()
    store.close()
    out = run("--embed-dim", "64", "reembed")
    assert re.search(r"re-embedded [1-9]\d* vector\(s\) of the knowledge tables", out.output)
    again = json.loads(run("--embed-dim", "48", "--json", "reembed").stdout)
    assert again["knowledge"] >= 3  # the fact, its entity, its event
    conn = sqlite3.connect(db)
    (blob,) = conn.execute("SELECT embedding_vec FROM DEFAULT_KG_FACT").fetchone()
    conn.close()
    want = HashEmbedder(48).embed(["Alice: Alice drinks green tea"])[0]
    assert np.allclose(np.frombuffer(blob, dtype="<f4"), want, atol=1e-6)
