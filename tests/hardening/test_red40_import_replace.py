"""red40: ``oramem import --on-conflict replace`` of Bob's file must not overwrite Alice's record.

Record ids are the application's (``note-1``, a message counter): two users' records in two
stores can share one. Bob exports his records (``oramem export --user bob``, nothing of
Alice's in it) and restores them into another store, where Alice has a record with one of his
ids. ``--on-conflict replace`` ("an id already stored: replace") deleted her record and put
his in its place, exit 0: her memory gone, her id now his record. Replace is the restore of
the same record from a backup: it now replaces only a stored record of the same user and
agent, and a clash with another scope's record is refused (exit 2, nothing of that batch
written, her record as it was), naming the id and what to do, not whose it is. Bob's own
record under that id is still replaced. The CLI runs in its own process (a real operator
invocation on the shared file); the API call is checked too."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from oramem import PendingRecordBatch, SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.errors import DuplicateRecordError

ALICE, BOB = "alice-7f3a", "bob-2c9e"


def _store(path):
    return SQLiteMemoryStore(str(path), embedder=HashEmbedder(dim=32))


def _oramem(db, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORAMEM_")}
    return subprocess.run([sys.executable, "-m", "oramem", "--db", str(db), *args], capture_output=True, text=True,
                          env=env, timeout=120)


def _bob_file(tmp_path):
    """Bob's own export from his store: his two records, ids note-1 and note-2."""
    src = tmp_path / "bob.db"
    with _store(src) as store:
        store.add(["bob: my locker code is 4471", "bob: dentist on friday"], "memory",
                  record_ids=["note-1", "note-2"], user_ids=BOB)
    out = _oramem(src, "export", "--user", BOB, "--no-knowledge", "--out", str(tmp_path / "bob.jsonl"))
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in (tmp_path / "bob.jsonl").read_text().splitlines()]
    assert {ln["id"] for ln in lines if ln.get("record_type") == "memory"} == {"note-1", "note-2"}
    assert all(ln.get("user_id") in (BOB, None) for ln in lines)
    return tmp_path / "bob.jsonl"


def test_cli_import_replace_of_bobs_file_does_not_overwrite_alices_record(tmp_path):
    path = _bob_file(tmp_path)
    db = tmp_path / "shared.db"
    with _store(db) as store:
        store.add(["alice: my diagnosis is confidential"], "memory", record_ids="note-1", user_ids=ALICE)
    out = _oramem(db, "import", "--on-conflict", "replace", str(path))
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "'note-1'" in out.stderr and "another user or agent" in out.stderr and "nothing" in out.stderr
    assert ALICE not in out.stderr + out.stdout
    with _store(db) as store:
        kept = store.get("memory", "note-1")
        assert (kept.user_id, kept.content) == (ALICE, "alice: my diagnosis is confidential")
        assert store.get("memory", "note-2") is None  # the batch wrote nothing
        assert [r.id for r, _ in store.search("diagnosis confidential", k=3, user_id=ALICE)] == ["note-1"]


def test_cli_import_replace_still_replaces_bobs_own_record(tmp_path):
    path = _bob_file(tmp_path)
    db = tmp_path / "shared.db"
    with _store(db) as store:
        store.add(["bob: an older note"], "memory", record_ids="note-1", user_ids=BOB)
        store.add(["alice: my diagnosis is confidential"], "memory", record_ids="note-9", user_ids=ALICE)
    out = _oramem(db, "import", "--on-conflict", "replace", str(path))
    assert out.returncode == 0, out.stderr
    with _store(db) as store:
        assert store.get("memory", "note-1").content == "bob: my locker code is 4471"
        assert store.get("memory", "note-2").user_id == BOB
        assert store.get("memory", "note-9").user_id == ALICE


@pytest.mark.parametrize("stored", [
    {"user_ids": ALICE},
    {"user_ids": BOB, "agent_ids": "support-bot"},  # Bob's, but of another agent: another scope too
    {},  # a record of no user and no agent (shared)
], ids=["alice", "bob-other-agent", "unscoped"])
def test_restore_batches_replace_refuses_a_record_of_another_scope(tmp_path, stored):
    with _store(tmp_path / "s.db") as store:
        store.add(["what was there"], "memory", record_ids="note-1", **stored)
        batch = PendingRecordBatch(["bob: my locker code is 4471"], "memory", record_ids=["note-1"], user_ids=BOB)
        with pytest.raises(DuplicateRecordError, match="nothing was added") as err:
            store.restore_batches([batch], on_conflict="replace")
        assert err.value.records == (("memory", "note-1"),)
        kept = store.get("memory", "note-1")
        assert kept.content == "what was there"
