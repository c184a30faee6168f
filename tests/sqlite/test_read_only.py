"""Read-only databases (issue 13, new-user-trial #5): a file opened read-only (explicitly, or
because the file or its directory is not writable) answers get/list/search/export, never
purges on open, and refuses writes with a clear error."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from oramem.sqlite._sqlite import sqlite3
import subprocess
import sys
import tempfile

import pytest

from oramem import SQLiteMemoryStore
from oramem.errors import StoreError
from oramem.testing import HashEmbedder

PAST = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)


def _make(path: str) -> str:
    with SQLiteMemoryStore(path, embedder=HashEmbedder(64), search_strategy="hybrid", clock=lambda: PAST) as store:
        store.add(["an old note that expired long ago"], "memory", ttl_days=1, record_ids=["gone"])
        store.add(["Ana drinks green tea every morning"], "memory", user_ids="ana", record_ids=["tea"])
    return path


def _raw_ids(path: str) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return sorted(r[0] for r in conn.execute('SELECT id FROM "om_DEFAULT_records" WHERE record_type = \'memory\''))
    finally:
        conn.close()


def test_read_only_open_reads_and_refuses_writes(tmp_path):
    path = _make(str(tmp_path / "ro.db"))
    with SQLiteMemoryStore(path, embedder=HashEmbedder(64), search_strategy="hybrid", read_only=True) as store:
        assert store.engine.read_only
        assert store.get("memory", "tea").content.startswith("Ana")
        assert [r.id for r in store.list("memory")] == ["tea"]  # the expired one is skipped...
        assert store.search("green tea", k=1, strategy="keyword")[0][0].id == "tea"
        assert store.search("green tea", k=1, strategy="vector")[0][0].id == "tea"
        with pytest.raises(StoreError, match="opened read-only"):
            store.add(["x"], "memory")
        with pytest.raises(StoreError, match="opened read-only"):
            store.purge_expired()
    assert _raw_ids(path) == ["gone", "tea"]  # ...and was not purged by the open
    with pytest.raises(Exception, match="no database file"):
        SQLiteMemoryStore(str(tmp_path / "missing.db"), embedder=HashEmbedder(64), read_only=True)


def test_cli_read_only_flag(tmp_path):
    from click.testing import CliRunner

    from oramem.cli import cli

    path = _make(str(tmp_path / "c.db"))
    runner = CliRunner()
    res = runner.invoke(cli, ["--db", path, "--read-only", "--json", "search", "tea", "-k", "1"], catch_exceptions=False)
    assert res.exit_code == 0 and json.loads(res.stdout)[0]["record"]["id"] == "tea"
    res = runner.invoke(cli, ["--db", path, "add", "x", "--read-only"], catch_exceptions=False)
    assert res.exit_code == 2 and "--read-only allows only reading commands" in res.stderr


def _reader_prefix() -> list[str]:
    """Root ignores permission bits: run the reader as root without the capabilities that
    bypass them (util-linux setpriv), so a 0444 file and a 0555 directory bind it too."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits do not bind root, so this cannot be checked")
    return [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


@pytest.mark.parametrize("directory_writable", [True, False])
def test_chmod_0444_file_and_read_only_directory_are_readable(directory_writable):
    prefix = _reader_prefix()
    root = tempfile.mkdtemp(prefix="oramem-ro-")
    try:
        os.chmod(root, 0o755)
        path = _make(os.path.join(root, "shared.db"))
        os.chmod(path, 0o444)
        if not directory_writable:
            os.chmod(root, 0o555)

        def cli(*args: str) -> subprocess.CompletedProcess:
            env = {k: v for k, v in os.environ.items() if not k.startswith("ORAMEM_")}
            return subprocess.run(
                [*prefix, sys.executable, "-m", "oramem.cli", "--db", path, *args], capture_output=True, text=True,
                env=env, cwd=root, timeout=120,
            )

        found = cli("--json", "search", "green tea", "-k", "1")
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)[0]["record"]["id"] == "tea"
        got = cli("get", "memory", "tea")
        assert got.returncode == 0 and "green tea" in got.stdout, got.stderr
        listed = cli("--json", "list")
        assert listed.returncode == 0 and [r["id"] for r in json.loads(listed.stdout)] == ["tea"], listed.stderr
        exported = cli("export")
        assert exported.returncode == 0 and '"tea"' in exported.stdout, exported.stderr
        added = cli("add", "a new note")
        assert added.returncode == 1 and "read-only here" in added.stderr and "Traceback" not in added.stderr
        assert _raw_ids(path) == ["gone", "tea"]  # nothing purged, nothing added
    finally:
        os.chmod(root, 0o755)
        shutil.rmtree(root, ignore_errors=True)


def test_a_read_only_store_creates_no_vector_sidecar(tmp_path):
    """README: a read-only open creates nothing. A vector search builds the cache from the
    database and writes no sidecar (a writable store saves one for its next open); user
    scopes answer as on the writable store."""
    path = _make(str(tmp_path / "ro.db"))
    for name in os.listdir(tmp_path):
        if name.endswith(".oramem-vectors"):
            os.remove(tmp_path / name)
    before = sorted(os.listdir(tmp_path))
    with SQLiteMemoryStore(path, embedder=HashEmbedder(64), read_only=True) as store:
        hits = store.search("green tea", k=3, strategy="vector", user_id="ana")
        assert [r.id for r, _ in hits] == ["tea"]
        assert store.search("green tea", k=3, strategy="vector", user_id="bob") == []
    created = sorted(set(os.listdir(tmp_path)) - set(before))
    # only SQLite's own companions of a WAL database, which any reader opens
    assert set(created) <= {"ro.db-wal", "ro.db-shm"}, created
    # the same search on a writable open writes it
    with SQLiteMemoryStore(path, embedder=HashEmbedder(64)) as store:
        store.search("green tea", k=3, strategy="vector", user_id="ana")
    assert any(name.endswith(".oramem-vectors") for name in os.listdir(tmp_path))
