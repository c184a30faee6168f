"""Run the frameworks' own tests against our adapters, unmodified (``.ci/run`` calls this).

The test files are taken from the PyPI source distribution of the *installed* version of each
framework, downloaded into a temporary directory at run time: they are never committed.
Each suite runs in a fresh ``pytest`` process with its plugin (``upstream_*_plugin.py`` in this
folder), which swaps the framework's reference implementation for our adapter before the test
modules are imported.

Tests that inspect the reference implementation's private internals rather than the framework's
public protocol are deselected below, each with its reason; the list is checked against what the
suite really collects, so a stale entry fails the run instead of hiding a test.

Usage: ``python tests/integrations/upstream.py [--work DIR] [--keep]``. Exit status 0 only when
every suite ran, nothing selected failed or errored, and at least one test passed per suite.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent

_AGENTS_INTERNALS = (
    "reaches into SQLiteSession's private connection pool (_connections, _connections_lock, "
    "_get_connection), not the Session protocol"
)
_AGENTS_TABLES = (
    "opens SQLiteSession's own tables (agent_sessions / agent_messages) with sqlite3 to plant "
    "corrupt rows or hold its write lock; our rows live in the oramem store's schema"
)


@dataclass(frozen=True)
class Suite:
    dist: str  # PyPI distribution whose sdist ships the tests
    plugin: str  # module in this folder that swaps in our adapter
    paths: tuple[str, ...]  # test files, relative to the sdist root
    ini: str  # pytest settings the framework's own pyproject uses for these tests
    deselect: dict[str, str] = field(default_factory=dict)  # node id -> reason


SUITES = (
    Suite(
        dist="langgraph-checkpoint",
        plugin="upstream_langgraph_plugin",
        paths=("tests/test_store.py",),
        ini="asyncio_mode = auto\n",
    ),
    Suite(
        dist="openai-agents",
        plugin="upstream_openai_agents_plugin",
        paths=("tests/memory/test_session.py", "tests/memory/test_session_limit.py"),
        ini="asyncio_mode = auto\nasyncio_default_fixture_loop_scope = session\n",
        deselect={
            "tests/memory/test_session.py::test_sqlite_session_close_closes_worker_thread_connections": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_reaps_connections_from_exited_worker_threads": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_closes_retired_connections_before_the_next_allocation": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_keeps_connections_of_live_worker_threads": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_rollback_failure_evicts_connection": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_close_retries_quarantined_connection": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome[add]": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome[pop]": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome[clear]": _AGENTS_INTERNALS,
            "tests/memory/test_session.py::test_sqlite_session_pop_item_skips_corrupt_most_recent": _AGENTS_TABLES,
            "tests/memory/test_session.py::test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _AGENTS_TABLES,
            "tests/memory/test_session.py::test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _AGENTS_TABLES,
            "tests/memory/test_session.py::test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _AGENTS_TABLES,
            "tests/memory/test_session.py::test_sqlite_session_failed_add_items_releases_write_lock": _AGENTS_TABLES,
            "tests/memory/test_session.py::test_sqlite_session_failed_clear_session_rolls_back": _AGENTS_TABLES,
            "tests/memory/test_session.py::test_sqlite_session_failed_pop_item_releases_write_lock": _AGENTS_TABLES,
            "tests/memory/test_session.py::test_sqlite_session_file_lock_is_shared_across_instances": (
                "checks that two SQLiteSession objects share one per-file threading lock object "
                "(an implementation detail; oramem serialises writers in SQLite itself)"
            ),
            "tests/memory/test_session.py::test_sqlite_session_closed_rejects_empty_add_items": (
                "expects RuntimeError('SQLiteSession is closed'); ours raises the store's "
                "ValueError('this store is closed'), on the empty-list path too "
                "(test_openai_agents.py::test_closed_store_is_refused_even_for_an_empty_add)"
            ),
        },
    ),
)


def fetch_tests(suite: Suite, work: Path) -> tuple[str, Path]:
    """Download the installed version's sdist and extract its ``tests/`` tree into ``work``."""
    version = importlib.metadata.version(suite.dist)
    sdists = work / "sdist"
    sdists.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         "--dest", str(sdists), f"{suite.dist}=={version}"],
        check=True,
    )
    stem = re.sub(r"[-_.]+", "_", suite.dist).lower()
    (archive,) = [p for p in sdists.iterdir() if p.name.lower().startswith(f"{stem}-{version}")]
    root = work / f"{suite.dist}-{version}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) < 2 or parts[1] != "tests":
                continue
            if ".." in parts or member.name.startswith("/") or not (member.isfile() or member.isdir()):
                raise SystemExit(f"refusing unsafe member {member.name!r} in {archive.name}")
            target = root.joinpath(*parts[1:])
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # isfile() members always have a payload
            target.write_bytes(source.read())
    (root / "pytest.ini").write_text("[pytest]\n" + suite.ini, encoding="utf-8")
    return version, root


def _pytest(suite: Suite, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", suite.plugin, *args],
        cwd=root, env=env, text=True, capture_output=True,
    )


def run_suite(suite: Suite, work: Path) -> bool:
    version, root = fetch_tests(suite, work)
    print(f"==> {suite.dist} {version}: {' '.join(suite.paths)} against oramem ({suite.plugin})", flush=True)
    collected = _pytest(suite, root, "--collect-only", "-q", *suite.paths)
    ids = {line.strip() for line in collected.stdout.splitlines() if "::" in line}
    if collected.returncode != 0 or not ids:
        print(collected.stdout[-4000:], collected.stderr[-4000:], sep="\n")
        print(f"==> {suite.dist}: collection failed", file=sys.stderr)
        return False
    stale = sorted(set(suite.deselect) - ids)
    if stale:
        print(f"==> {suite.dist}: deselect list names tests the suite no longer has: {stale}", file=sys.stderr)
        return False
    for node, reason in suite.deselect.items():
        print(f"    deselected {node.split('::', 1)[1]}: {reason}")
    deselect_args = [arg for node in suite.deselect for arg in ("--deselect", node)]
    result = _pytest(suite, root, "-q", "-rfE", *deselect_args, *suite.paths)
    print(result.stdout[-6000:])
    if result.stderr.strip():
        print(result.stderr[-3000:], file=sys.stderr)
    tail = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    ok = result.returncode == 0 and re.search(r"\b[1-9]\d* passed", tail) is not None
    print(f"==> {suite.dist} {version}: {tail or 'no summary'} "
          f"({len(ids)} collected, {len(suite.deselect)} deselected){'' if ok else '  FAILED'}", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="directory for the downloaded tests (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the downloaded tests")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="oramem-upstream-"))
    try:
        results = [run_suite(suite, work) for suite in SUITES]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
