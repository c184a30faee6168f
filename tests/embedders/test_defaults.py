"""The semantic default: which embedder a store without an explicit one uses."""

from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.embedders import HashEmbedder, defaults


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("ORAMEM_ONNX_MODEL", raising=False)
    monkeypatch.delenv("ORAMEM_DB", raising=False)
    monkeypatch.setenv("ORAMEM_MODEL_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(defaults, "_notified", False)


def test_no_local_model_means_hash_with_one_notice(tmp_path):
    with pytest.warns(UserWarning, match=r"HashEmbedder\(256\), not semantic.*ORAMEM_ONNX_MODEL"):
        store = SQLiteMemoryStore(str(tmp_path / "a.db"))
    assert isinstance(store.embedder, HashEmbedder) and store.vector_dim == 256
    store.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SQLiteMemoryStore(str(tmp_path / "b.db")).close()  # once per process
        # an existing store reuses its recorded embedder, silently
        with SQLiteMemoryStore(str(tmp_path / "a.db")) as again:
            assert isinstance(again.embedder, HashEmbedder)
        with SQLiteMemoryStore(str(tmp_path / "k.db"), search_strategy="KEYWORD") as kw:
            assert kw.embedder is None


def test_recorded_embedder_is_rebuilt(tmp_path):
    db = str(tmp_path / "s.db")
    with SQLiteMemoryStore(db, embedder=HashEmbedder(32, seed=4)) as store:
        store.add(["hello there"], "memory")
    with SQLiteMemoryStore(db) as store:
        assert repr(store.embedder) == "HashEmbedder(dim=32, seed=4)"
        assert store.search("hello", k=1)[0][0].content == "hello there"
    with SQLiteMemoryStore(db, vector_dim=32) as store:  # caller-supplied vectors: no embedder
        assert store.embedder is None


def test_env_model_is_the_default_and_demo_names_it(tmp_path, monkeypatch):
    for mod in ("onnxruntime", "tokenizers", "onnx"):
        pytest.importorskip(mod, reason=f"{mod} not installed: pip install '.[test]'")
    from oramem.embedders import ONNXEmbedder

    from .onnx_models import build_model_dir

    model = build_model_dir(tmp_path / "tiny")
    monkeypatch.setenv("ORAMEM_ONNX_MODEL", str(model))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with SQLiteMemoryStore(str(tmp_path / "s.db")) as store:
            assert isinstance(store.embedder, ONNXEmbedder) and store.vector_dim == 6
    out = CliRunner().invoke(cli, ["demo"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "embedder: the ONNX model 'tiny' (6-d" in out.output
    monkeypatch.delenv("ORAMEM_ONNX_MODEL")
    # the cached default model id is found without the variable
    build_model_dir(tmp_path / "empty-cache" / "sentence-transformers--all-MiniLM-L6-v2")
    assert defaults.local_model() == defaults.DEFAULT_MODEL_ID
    with SQLiteMemoryStore(str(tmp_path / "c.db")) as store:
        assert store.embedder.model_id == defaults.DEFAULT_MODEL_ID
    monkeypatch.setenv("ORAMEM_ONNX_MODEL", str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="no model file or directory"):
        SQLiteMemoryStore(str(tmp_path / "d.db"))


def test_cli_demo_says_hash_without_a_model():
    out = CliRunner().invoke(cli, ["demo"], catch_exceptions=False)
    assert out.exit_code == 0
    assert "embedder: HashEmbedder(dim=256, seed=0) (lexical, not semantic)." in out.output
    assert "Warning: oramem: using the lexical HashEmbedder(256)" in out.stderr
    data = json.loads(CliRunner().invoke(cli, ["--json", "demo"], catch_exceptions=False).stdout)
    assert data["embedder"] == {"kind": "hash", "dimension": 256, "seed": 0}
