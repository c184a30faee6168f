"""Review D2 (issue 24 item 3): what a user installs has the database scripts.

``python -m build`` builds the sdist, then the wheel *from the unpacked sdist*; before the fix
the sdist carried no ``ddl/`` or ``plsql/``, so that wheel held 0 scripts and ``oramem db
install`` failed ("oramem's SQL scripts ... were not found"). This test does the same steps
explicitly: sdist from a copy of the checkout, wheel from the unpacked sdist, the wheel installed
(``--no-deps``) into a fresh virtualenv, and there, from an empty directory with no
``ORAMEM_SQL_DIR``, ``oramem.oracle.admin.install`` runs over a recording connection: the
same lookup (``scripts_root()``) and the same ``@@`` include walk as ``oramem db install``. Every
statement the checkout's scripts hold must come out, from files inside the virtualenv.

The virtualenv reaches the dependencies (python-oracledb, numpy, ...) through a ``.pth`` file
naming this interpreter's site-packages (no download); oramem itself comes from the wheel.
Marked slow (about 15-30 s): run by ``.ci/run`` (``pytest -m slow tests/packaging``).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("build")

REPO = Path(__file__).resolve().parents[2]
_SKIP = shutil.ignore_patterns(
    ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache", "__pycache__", "build", "dist", "*.egg-info",
    ".venv", "venv", "raw", "*.db", "*.db-wal", "*.db-shm", "*.oramem-vectors*",
)

#: runs in the fresh virtualenv: install over a recording connection, report what ran
CHILD = r'''
import json, os, sys
from pathlib import Path
import oramem
from oramem.oracle import admin

executed = []

class Cursor:
    def __enter__(self): return self
    def __exit__(self, *exc): return False
    def execute(self, sql, *args, **binds):
        if not sql.lstrip().lower().startswith(("select line, position", "select object_type")):
            executed.append(sql)
    def fetchall(self): return []

class Connection:
    def cursor(self): return Cursor()

root = admin.scripts_root()
count = admin.install(Connection(), echo=lambda line: None)
files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
print(json.dumps({"oramem": oramem.__file__, "root": str(root), "count": count, "executed": executed,
                  "files": files}))
'''


def _run(*cmd: str, cwd: Path | None = None, env: dict | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _checkout_statements() -> tuple[int, list[str]]:
    """What ``install`` runs from the source checkout (the reference)."""
    from oramem.oracle import admin

    executed: list[str] = []

    class Cursor:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def execute(self, sql, *args, **binds):
            if not sql.lstrip().lower().startswith(("select line, position", "select object_type")):
                executed.append(sql)

        def fetchall(self):
            return []

    class Connection:
        def cursor(self):
            return Cursor()

    return admin.install(Connection(), scripts_dir=str(REPO), echo=lambda line: None), executed


def test_sdist_then_wheel_from_it_then_fresh_venv_finds_every_script(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=_SKIP)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ORAMEM_SQL_DIR")}
    build = [sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check"]

    # 1. the sdist carries the scripts
    _run(*build, "--sdist", "-o", str(tmp_path / "sdist"), str(src), env=env)
    (sdist,) = (tmp_path / "sdist").glob("oramem-*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp_path / "unpacked", filter="data")
        else:  # Python < 3.10.12: no extraction filters; our own fresh sdist
            tar.extractall(tmp_path / "unpacked")
    top = members[0].name.split("/")[0]
    tracked = sorted(
        str(p.relative_to(REPO)) for d in ("ddl", "plsql") for p in (REPO / d).rglob("*") if p.is_file()
    )
    in_sdist = sorted(m.name.split("/", 1)[1] for m in members if m.name.split("/")[1] in ("ddl", "plsql"))
    assert in_sdist == tracked

    # 2. the wheel, built from the unpacked sdist (not from the checkout)
    _run(*build, "--wheel", "-o", str(tmp_path / "wheel"), str(tmp_path / "unpacked" / top), env=env)
    (wheel,) = (tmp_path / "wheel").glob("oramem-*.whl")

    # 3. a fresh virtualenv with the wheel only (dependencies through a .pth, nothing downloaded)
    home = tmp_path / "venv"
    venv.create(home, with_pip=False)
    py = home / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = Path(_run(str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", env=env).strip())
    _run(sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps", "--no-index",
         "--no-compile", str(wheel), env=env)
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "zz_parent_site.pth").write_text("\n".join(sorted(ours)) + "\n")

    # 4. there, from an empty directory: the same lookup and include walk as `oramem db install`
    empty = tmp_path / "empty"
    empty.mkdir()
    out = json.loads(_run(str(py), "-c", CHILD, cwd=empty, env=env).strip().splitlines()[-1])
    assert Path(out["oramem"]).resolve().is_relative_to(home.resolve()), out["oramem"]
    assert Path(out["root"]).resolve().is_relative_to(home.resolve()), out["root"]
    assert out["root"].endswith(os.path.join("oramem", "oracle", "sql"))
    assert out["files"] == tracked
    count, executed = _checkout_statements()
    from oramem.oracle.admin import _CREATE_UNIT, PACKAGES

    units = {" ".join(m.group(1).upper().split()) + " " + m.group(2).upper()
             for m in map(_CREATE_UNIT.match, executed) if m}
    assert {f"{kind} {name}" for name in PACKAGES for kind in ("PACKAGE", "PACKAGE BODY")} <= units
    assert (out["count"], out["executed"]) == (count, executed)
