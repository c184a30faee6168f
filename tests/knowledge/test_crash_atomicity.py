"""KC-7.4 after a crash: a knowledge write is one transaction (the store's block, SC-12).

A child process makes one knowledge write (store records, knowledge rows, keyword-index rows)
and is killed with SIGKILL at one step of the commit phase (``oramem.knowledge.faults.kill_at``:
every commit step, after the store records, just before and just after the COMMIT). After each
kill the file is reopened and must hold either everything of that write (the row count of every
table equals an uninterrupted run's) or nothing (equal to the counts before the write), never a
mix, and no store record without its knowledge row.
"""

from __future__ import annotations

import shutil
import signal
from oramem.sqlite._sqlite import sqlite3
import subprocess
import sys

import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeMemory
from oramem.knowledge.faults import KILL_STEPS
from oramem.testing import HashEmbedder

DIM = 64
CHILD = r"""
import contextlib
import sys
from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeMemory
from oramem.knowledge.faults import kill_at
from oramem.testing import HashEmbedder

path, steps = sys.argv[1], [s for s in sys.argv[2:] if s]
store = SQLiteMemoryStore(path, embedder=HashEmbedder(%(dim)d), search_strategy="hybrid")
km = KnowledgeMemory(store, None)
with kill_at(*steps) if steps else contextlib.nullcontext():
    km.add_knowledge(
        "a1",
        entities=[{"name": "Pedro", "type": "person"}, {"name": "Porto", "type": "place"}],
        facts=[
            {"subject": "Pedro", "subject_type": "person", "fact": "Pedro lives in Porto", "attribute_key": "residence"},
            {"subject": "Porto", "subject_type": "place", "fact": "Porto has a river"},
        ],
        relations=[{"source": "Pedro", "target": "Porto", "rel_type": "lives in"}],
        session_id="s2",
    )
km.close()
store.close()
print("written")
""" % {"dim": DIM}


def _counts(path: str) -> dict[str, int]:
    """Rows per table of the file, FTS5 shadow data/index pages left out (their page layout
    is not rows of the write; the FTS table itself and its docsize rows are counted)."""
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        skip = ("_fts_data", "_fts_idx", "_fts_config")
        return {
            n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]
            for n in names
            if not n.startswith("sqlite_stat") and not n.endswith(skip)
        }
    finally:
        conn.close()


def _child(path: str, *steps: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, path, *steps], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """A file with one earlier knowledge write (so the crashed write also supersedes a fact
    and changes store metadata), its counts, and the counts after an uninterrupted write."""
    root = tmp_path_factory.mktemp("crash")
    base = str(root / "base.db")
    store = SQLiteMemoryStore(base, embedder=HashEmbedder(DIM), search_strategy="hybrid")
    km = KnowledgeMemory(store, None)
    km.add_knowledge("a1", facts=[{"subject": "Pedro", "subject_type": "person", "fact": "Pedro lives in Lisbon",
                                   "attribute_key": "residence"}], session_id="s1")
    km.close()
    store.close()
    full = str(root / "full.db")
    shutil.copy(base, full)
    done = _child(full)
    assert done.returncode == 0 and "written" in done.stdout, done.stderr
    before, after = _counts(base), _counts(full)
    changed = sorted(t for t in after if after[t] != before.get(t))
    # the write touches store records, retrieval rows, the keyword index and knowledge tables
    assert any(t.endswith("_fts") for t in changed) and any("_kg_" in t.lower() for t in changed), changed
    return root, base, before, after


#: run by default (the old orphan window, a knowledge step, both sides of the COMMIT); the
#: other steps are ``slow`` (a process start each), run by ``.ci/run``
QUICK = ("store_records", "facts", "commit", "committed")


@pytest.mark.parametrize("step", [s if s in QUICK else pytest.param(s, marks=pytest.mark.slow) for s in KILL_STEPS])
def test_a_write_killed_at_any_step_is_all_or_nothing(baseline, step):
    root, base, before, after = baseline
    path = str(root / f"{step}.db")
    shutil.copy(base, path)
    killed = _child(path, step)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    # reopen through the API (recovery, open-time purge, the knowledge layer's schema check)
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(DIM), search_strategy="hybrid")
    km = KnowledgeMemory(store, None)
    try:
        current = [f.fact_text for f in km.get_all("a1")]
        hits = [r.id for r, _ in store.search("Porto river", k=10, strategy="keyword")]
    finally:
        km.close()
        store.close()
    now = _counts(path)
    complete = step == "committed"
    expected = after if complete else before
    assert now == expected, {t: (before.get(t), now.get(t), after.get(t)) for t in now if now[t] != expected.get(t)}
    assert ("Pedro lives in Porto" in current) is complete and ("Pedro lives in Lisbon" in current) is not complete
    assert bool(hits) is complete
    # no store record without its knowledge row (and the reverse), in either outcome
    conn = sqlite3.connect(path)
    try:
        def ids(sql: str) -> list:
            return sorted(i for (i,) in conn.execute(sql))

        assert ids("SELECT id FROM om_DEFAULT_records WHERE record_type = 'fact'") == ids("SELECT id FROM DEFAULT_KG_FACT")
        assert ids("SELECT id FROM om_DEFAULT_records WHERE record_type = 'message'") == ids(
            "SELECT id FROM DEFAULT_KG_EVENT")
    finally:
        conn.close()
