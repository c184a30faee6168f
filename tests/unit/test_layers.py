"""Issue 25 item 3: the layer rules of pyproject.toml [tool.importlinter] hold (the same
check as `lint-imports` in .ci/run), and each contract can fail: an import that breaks it
is reported."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytest.importorskip("importlinter")


def _lint(root: pathlib.Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports")
    cmd = [exe] if exe else [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"]
    return subprocess.run(cmd + ["--no-cache"], cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin:" + str(pathlib.Path(sys.executable).parent)})


def _copy(tmp_path: pathlib.Path) -> pathlib.Path:
    dst = tmp_path / "repo"
    shutil.copytree(ROOT / "oramem", dst / "oramem", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", dst / "pyproject.toml")
    return dst


def test_the_layer_contracts_hold():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("module,line,contract", [
    ("oramem/sqlite/health.py", "from ..oracle import calls as _calls", "engines do not import each other"),
    ("oramem/types.py", "from . import normalize as _n", "are leaves"),
    ("oramem/sqlite/admin.py", "from ..knowledge import schema as _s", "do not import the knowledge layer"),
    ("oramem/store.py", "from .cli import group as _g", "no other module imports it"),
    ("oramem/jsonl.py", "import click as _click", "click is imported there only"),
    ("oramem/knowledge/write/commit.py", "from ...sqlite import engine as _e", "public store API only"),
    ("oramem/knowledge/read/run.py", "from ...oracle import base as _b", "public store API only"),
    ("oramem/knowledge/runtime.py", "from .. import engine as _seam", "public store API only"),
])
def test_each_contract_reports_a_breaking_import(tmp_path, module, line, contract):
    repo = _copy(tmp_path)
    path = repo / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    result = _lint(repo)
    assert result.returncode != 0
    broken = [ln for ln in result.stdout.splitlines() if " BROKEN" in ln]
    assert any(contract in ln for ln in broken), result.stdout[-3000:]


def test_drop_store_drops_the_knowledge_tables_the_layer_registered(tmp_path, monkeypatch):
    """sqlite.admin no longer imports the knowledge layer: the layer registers its tables
    (oramem.knowledge.db.install); without a registration a store with knowledge tables is
    refused, nothing dropped; `oramem stores drop` registers them itself."""
    from click.testing import CliRunner

    from oramem import SQLiteMemoryStore, StoreError
    from oramem.cli import cli
    from oramem.knowledge import KnowledgeMemory, install
    from oramem.sqlite import admin
    from oramem.testing import HashEmbedder, ScriptedLLM

    db = str(tmp_path / "kg.db")
    store = SQLiteMemoryStore(db, embedder=HashEmbedder(16))
    KnowledgeMemory(store, ScriptedLLM({})).close()
    store.close()
    names = install.table_names("DEFAULT")
    assert len(names) > 5 and admin.knowledge_tables_exist(db, "DEFAULT")

    monkeypatch.setattr(admin, "_DEPENDENT_TABLES", [])
    with pytest.raises(StoreError, match="knowledge tables"):
        admin.drop_store(db, "DEFAULT")
    assert admin.knowledge_tables_exist(db, "DEFAULT") and "DEFAULT" in admin.list_stores(db)

    result = CliRunner().invoke(cli, ["--db", db, "stores", "drop", "DEFAULT", "--yes"])
    assert result.exit_code == 0, result.output
    assert not admin.knowledge_tables_exist(db, "DEFAULT")
    from oramem.sqlite._sqlite import sqlite3

    with sqlite3.connect(db) as conn:
        left = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not left & set(names)
