"""Opening what exists (issue 23 item 3): a store reopens with its recorded strategy and
embedder from Python and from the CLI alike; $ORAMEM_ONNX_MODEL names the model for new
stores only; keyword search never needs the embedder's dimension; a with-vectors backup
restores into a fresh file by itself; a file that is not a database is a StoreError."""

from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore, StoreError
from oramem.cli import cli
from oramem.embedders import HashEmbedder, defaults
from oramem.sqlite import admin


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("ORAMEM_ONNX_MODEL", "ORAMEM_DB", "ORAMEM_STORE", "ORAMEM_EMBED_DIM", "ORAMEM_STRATEGY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(defaults, "_notified", False)


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def tiny_model(tmp_path):
    for mod in ("onnx", "onnxruntime", "tokenizers"):
        pytest.importorskip(mod, reason=f"{mod} not installed: pip install '.[test]'")
    from embedders.onnx_models import build_model_dir  # tests/ is on sys.path (rootdir-relative imports)

    return build_model_dir(tmp_path / "tiny")


def test_python_reopens_a_cli_hybrid_store_as_hybrid(tmp_path):
    db = str(tmp_path / "cli.db")
    notes = ["I drink green tea every morning", "green tea gives me a headache", "coffee after lunch", "tea leaves"]
    for note in notes:
        assert run("--db", db, "add", note).exit_code == 0
    with SQLiteMemoryStore(db) as store:  # F-5: no search_strategy given
        assert store.search_strategy.value == "hybrid"
        assert store.search("morning", k=1, strategy="keyword")[0][0].content == notes[0]
        python_ids = [r.id for r, _ in store.search("green tea in the morning", k=4)]
    cli = json.loads(run("--db", db, "--json", "search", "green tea in the morning", "-k", "4").stdout)
    assert [hit["record"]["id"] for hit in cli] == python_ids
    # a new store without search_strategy is still VECTOR (SC default)
    with SQLiteMemoryStore(str(tmp_path / "new.db"), embedder=HashEmbedder(16)) as fresh:
        assert fresh.search_strategy.value == "vector"


def test_explicit_weaker_open_does_not_ask_for_an_upgrade_the_store_has(tmp_path):
    db = str(tmp_path / "h.db")
    SQLiteMemoryStore(db, embedder=HashEmbedder(16), search_strategy="hybrid").close()
    with SQLiteMemoryStore(db, search_strategy="vector") as store:
        with pytest.raises(ValueError) as info:
            store.search("x", strategy="keyword")
    assert "open the store with search_strategy='hybrid'" in str(info.value)
    assert "CREATE_IF_NECESSARY to upgrade)" not in str(info.value)


def test_env_model_is_for_new_stores_only(tmp_path):
    model = tiny_model(tmp_path)
    db = str(tmp_path / "hash.db")
    assert run("--db", db, "add", "I like green tea").exit_code == 0  # built with HashEmbedder(256)
    env = {"ORAMEM_ONNX_MODEL": str(model)}
    for args in (("list", "--limit", "1"), ("search", "green tea"), ("export",), ("add", "more tea")):
        out = run("--db", db, *args, env=env)
        assert out.exit_code == 0, (args, out.output)
    rows = admin.list_stores(db)
    assert json.loads(rows["DEFAULT"]["embedder"])["kind"] == "hash"
    # a new file takes the variable's model
    fresh = str(tmp_path / "fresh.db")
    assert run("--db", fresh, "add", "hello world", env=env).exit_code == 0
    assert json.loads(admin.list_stores(fresh)["DEFAULT"]["embedder"])["kind"] == "onnx"
    # the explicit flag still means "this embedder", and refuses a store built otherwise
    out = run("--db", db, "--embed-onnx", str(model), "list")
    assert out.exit_code == 1 and "HashEmbedder(dim=256" in out.output


def test_store_whose_embedder_is_not_here_still_lists_exports_and_keyword_searches(tmp_path):
    model = tiny_model(tmp_path)
    db = str(tmp_path / "o.db")
    assert run("--db", db, "--embed-onnx", str(model), "add", "hello world").exit_code == 0
    import shutil

    shutil.rmtree(model)
    assert run("--db", db, "list").exit_code == 0
    assert "hello world" in run("--db", db, "export").stdout
    assert "hello world" in run("--db", db, "search", "--strategy", "keyword", "hello").stdout
    out = run("--db", db, "search", "hello")
    assert out.exit_code == 2
    assert "cannot be loaded here: give it with --embed-onnx" in out.output and "embedder=" not in out.output


def test_keyword_search_never_needs_the_embedder_dimension(tmp_path):
    db = str(tmp_path / "kw.db")
    with SQLiteMemoryStore(db, embedder=HashEmbedder(64), search_strategy="keyword") as store:
        store.add(["hello keyword world"], "memory")
    out = run("--db", db, "search", "keyword")
    assert out.exit_code == 0, out.output
    assert "hello keyword world" in out.stdout
    with SQLiteMemoryStore(db) as again:
        assert again.search("keyword", k=1)[0][0].content == "hello keyword world"


def test_with_vectors_backup_restores_into_a_fresh_file(tmp_path):
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    assert run("--db", a, "--embed-dim", "64", "add", "hello world").exit_code == 0
    dump = str(tmp_path / "full.jsonl")
    assert run("--db", a, "export", "--with-vectors", "--out", dump).exit_code == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback notice: the file's embedder is adopted
        out = run("--db", b, "import", dump)
    assert out.exit_code == 0, out.output
    ident = json.loads(admin.list_stores(b)["DEFAULT"]["embedder"])
    assert ident == {"kind": "hash", "dimension": 64, "seed": 0}
    assert "hello world" in run("--db", b, "search", "hello world").stdout
    # an existing store with another embedder still refuses the vectors
    c = str(tmp_path / "c.db")
    assert run("--db", c, "add", "x").exit_code == 0
    out = run("--db", c, "import", dump)
    assert out.exit_code == 2 and "holds vectors made by HashEmbedder(dim=64" in out.output


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_text("this is not sqlite\n" * 100)
    for kwargs in ({}, {"embedder": HashEmbedder(8)}, {"search_strategy": "keyword"}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no embedder notice before the error
            with pytest.raises(StoreError, match=r"junk.db is not an oramem SQLite database \(file is not a database\)"):
                SQLiteMemoryStore(str(junk), **kwargs)
    out = run("--db", str(junk), "list")
    assert out.exit_code == 1 and "is not an oramem SQLite database" in out.output
