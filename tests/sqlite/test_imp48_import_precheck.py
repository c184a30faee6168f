"""imp48: an import that a batch would refuse writes nothing at all.

``oramem import`` / ``jsonl.import_records`` write thread lines, then records, ``batch_size``
lines per transaction. A refusal the file's content decides -- under ``--on-conflict fail`` an
id already stored; under ``replace`` a stored record or thread row of another user or agent
under the id (red40, imp47) -- was found only when its batch ran, so the batches before it
stayed written (and the file's erasure-log lines were merged first). The project's standard is
a clear error before anything is written: the SQLite engine now checks the whole file's ids
before the first batch (and before the erasure-log lines are merged), by the rule the batches
apply (``mutations.resolve_conflicts``), so such a file writes nothing: exit 2, the message
names the ids and lines, never whose records they are. Bob's own replace still works."""

from __future__ import annotations

import json

import pytest

from oramem import jsonl
from oramem.cli import cli
from oramem.errors import DuplicateRecordError
from oramem.sqlite._sqlite import sqlite3

# the store and the two users of imp47's tests (the CLI runner: conftest.py)
from .test_imp47_thread_replace import ALICE, BOB, _store


@pytest.fixture
def shared(tmp_path):
    """Alice's record and her private thread; Bob's own record (his to replace)."""
    path = tmp_path / "shared.db"
    with _store(path) as store:
        store.add(["alice: my diagnosis is confidential"], "memory", record_ids="a-note", user_ids=ALICE,
                  agent_ids="helper")
        store.add(["alice: hello"], "message", thread_ids="t-x1", user_ids=ALICE, agent_ids="helper",
                  roles="user")
        store.add(["bob: old locker code"], "memory", record_ids="bob-own", user_ids=BOB, agent_ids="helper")
    return path


def _dump(path) -> dict[str, list[tuple]]:
    """Every row of every table of the database (FTS5 shadow tables included), by table: the
    store's content as it is on disk."""
    conn = sqlite3.connect(str(path))
    try:
        names = [n for (n, sql) in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
                 if not (sql or "").upper().startswith("CREATE VIRTUAL")]
        return {n: conn.execute(f'SELECT * FROM "{n}" ORDER BY 1').fetchall() for n in names}
    finally:
        conn.close()


def _memory(rid, text, user=BOB):
    return {"record_type": "memory", "id": rid, "content": text, "user_id": user, "agent_id": "helper"}


def _thread(tid, user=BOB):
    return {"record_type": "thread", "id": tid, "user_id": user, "agent_id": "helper"}


def _write(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def _bob_records(last):
    """Four fresh records of Bob's (batches 1 and 2 at --batch-size 2), then ``last`` (batch 3)."""
    return [_memory(f"bob-{i}", f"bob: note {i}") for i in range(1, 5)] + [last]


CASES = {
    # (a) an id stored (Alice's record) under fail
    "fail-stored-id": ("fail", _bob_records(_memory("a-note", "bob: mine now")), "'a-note' (memory)", "line 5"),
    # (b) Alice's record id under replace, as Bob
    "replace-her-record": ("replace", _bob_records(_memory("a-note", "bob: mine now")), "'a-note' (memory)",
                           "line 5"),
    # (c) Alice's thread under replace, as Bob: five thread lines, hers in the 3rd thread batch
    "replace-her-thread": ("replace", [_thread(f"t-bob-{i}") for i in range(1, 5)] + [_thread("t-x1")]
                           + [_memory("bob-9", "bob: note 9")], "'t-x1' (thread)", "line 5"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cli_import_refused_by_its_third_batch_writes_nothing(runner, shared, tmp_path, case):
    on_conflict, objs, named, where = CASES[case]
    file = _write(tmp_path / "bob.jsonl", objs)
    before = _dump(shared)
    result = runner.invoke(cli, ["--db", str(shared), "import", "--batch-size", "2", "--on-conflict", on_conflict,
                                 str(file)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert named in result.output and where in result.output, result.output
    assert "nothing was written" in result.output, result.output
    assert ALICE not in result.output and "alice" not in result.output.lower()
    assert _dump(shared) == before
    with _store(shared) as store:
        assert store.get("memory", "bob-1") is None
        assert store.get("thread", "t-bob-1") is None


def test_api_import_records_refusal_imports_nothing_and_names_the_lines(shared, tmp_path):
    file = _write(tmp_path / "bob.jsonl", _bob_records(_memory("a-note", "bob: mine now")))
    lines = jsonl.parse_lines(file.read_text(encoding="utf-8").splitlines(), str(file))
    before = _dump(shared)
    with _store(shared) as store:
        with pytest.raises(jsonl.ImportStopped) as err:
            jsonl.import_records(store, lines, on_conflict="replace", batch_size=2)
    assert err.value.result.imported == 0 and err.value.lineno == 5
    assert isinstance(err.value.cause, DuplicateRecordError)
    assert err.value.cause.records == (("memory", "a-note"),)
    assert ALICE not in str(err.value.cause)
    assert _dump(shared) == before


def test_refused_file_merges_none_of_its_erasure_log_lines(runner, shared, tmp_path):
    """The file's erasure-log lines were merged before the first batch, so a file refused by
    a later batch still added its receipts to the store's log: now nothing at all."""
    src = tmp_path / "src.db"
    with _store(src) as store:
        store.add(["carol: hi"], "memory", record_ids="c-1", user_ids="carol")
    assert runner.invoke(cli, ["--db", str(src), "forget", "--user", "carol", "--yes"]).exit_code == 0
    exported = runner.invoke(cli, ["--db", str(src), "export"])
    assert exported.exit_code == 0, exported.output
    receipts = [json.loads(x) for x in exported.output.splitlines() if '"erasure_log"' in x]
    assert receipts
    file = _write(tmp_path / "bob.jsonl", receipts + _bob_records(_memory("a-note", "bob: mine now")))
    before = _dump(shared)
    result = runner.invoke(cli, ["--db", str(shared), "import", "--batch-size", "2", str(file)])
    assert result.exit_code == 2, result.output
    assert _dump(shared) == before


def test_bobs_own_replace_still_works(runner, shared, tmp_path):
    file = _write(tmp_path / "bob.jsonl", [_memory(f"bob-{i}", f"bob: note {i}") for i in range(1, 5)]
                  + [_memory("bob-own", "bob: new locker code"), _thread("t-bob-1")])
    result = runner.invoke(cli, ["--db", str(shared), "import", "--batch-size", "2", "--on-conflict", "replace",
                                 str(file)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with _store(shared) as store:
        assert store.get("memory", "bob-own").content == "bob: new locker code"
        assert store.get("memory", "a-note").user_id == ALICE
        assert store.get("thread", "t-x1").user_id == ALICE


def test_skip_keeps_the_stored_records_and_writes_the_rest(runner, shared, tmp_path):
    file = _write(tmp_path / "bob.jsonl", _bob_records(_memory("a-note", "bob: mine now")) + [_thread("t-x1")])
    result = runner.invoke(cli, ["--db", str(shared), "import", "--batch-size", "2", "--on-conflict", "skip",
                                 str(file)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with _store(shared) as store:
        assert store.get("memory", "a-note").user_id == ALICE
        assert store.get("memory", "bob-4") is not None


def test_a_writer_between_the_precheck_and_a_batch_is_still_caught_by_the_batch(shared, tmp_path):
    """Guard (held before): the per-batch check stays; a record another writer stores after the
    pre-check, under an id of a later batch, stops that batch as before (earlier ones stay)."""
    file = _write(tmp_path / "bob.jsonl", [_memory(f"bob-{i}", f"bob: note {i}") for i in range(1, 7)])
    lines = jsonl.parse_lines(file.read_text(encoding="utf-8").splitlines(), str(file))
    with _store(shared) as store, _store(shared) as other:
        calls = []

        def progress(n):
            calls.append(n)
            if len(calls) == 1:
                other.add(["someone: racing"], "memory", record_ids="bob-5", user_ids=ALICE)

        with pytest.raises(jsonl.ImportStopped) as err:
            jsonl.import_records(store, lines, on_conflict="fail", batch_size=2, progress=progress)
    assert err.value.result.imported == 4 and err.value.lineno == 5
    assert isinstance(err.value.cause, DuplicateRecordError)


def test_precheck_reads_every_chunk_and_keys_by_type(shared, tmp_path):
    """More ids than one statement takes (500 a statement): a stored id in the third chunk is
    found; an id stored under another record type is no conflict (the engines key by type)."""
    objs = [_memory(f"bob-{i}", f"bob: note {i}") for i in range(1, 1101)]
    objs.append({"record_type": "fact", "id": "a-note", "content": "bob: a fact", "user_id": BOB})
    objs.append(_memory("a-note", "bob: mine now"))
    file = _write(tmp_path / "bob.jsonl", objs)
    lines = jsonl.parse_lines(file.read_text(encoding="utf-8").splitlines(), str(file))
    with _store(shared) as store:
        with pytest.raises(jsonl.ImportRefused) as err:
            jsonl.check_conflicts(store, lines, on_conflict="fail")
        assert err.value.linenos == (1102,) and err.value.cause.records == (("memory", "a-note"),)
        assert jsonl.check_conflicts(store, lines[:-1], on_conflict="fail") is True
