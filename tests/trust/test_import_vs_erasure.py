"""A user erased in the TARGET store while ``oramem import`` restores a backup into it
(SC-14.4; red26). The import checks the store's erasure log once, before it writes, then
writes one transaction per batch: a ``forget`` that commits between two batches let the
later batches restore her pre-erasure records after her erasure, and the import reported
success. Now the log is read again after the writes; a receipt written meanwhile that names
a subject of the file is reported (``ImportResult.erased_during_import``; CLI exit 1 with
what to do). Deterministic: the progress callback (after the first batch) erases her."""

from __future__ import annotations

from click.testing import CliRunner

from oramem import SQLiteMemoryStore, jsonl
from oramem.cli import cli
from oramem.testing import HashEmbedder

ALICE = "alice-mid-import"


def _open(path):
    return SQLiteMemoryStore(str(path), embedder=HashEmbedder(64))


def _backup(tmp_path):
    """A backup with Bob's records first, then Alice's (taken before anything was erased)."""
    src = tmp_path / "src.db"
    with _open(src) as store:
        store.add([f"bob likes tea {i}" for i in range(3)], "memory", user_ids="bob")
        store.add(["alice keeps her passport in zanzibar"], "memory", user_ids=ALICE)
        lines: list[str] = []
        jsonl.export_records(store, lines.append)
    path = tmp_path / "backup.jsonl"
    path.write_text("".join(lines))
    return path


def _parse(path):
    with open(path) as handle:
        return jsonl.parse_lines(handle, str(path))


def test_an_erasure_committed_while_import_runs_is_reported(tmp_path):
    backup = _backup(tmp_path)
    target = tmp_path / "dst.db"
    with _open(target) as store:
        store.add(["alice said hello earlier"], "memory", user_ids=ALICE)  # she is in the target
        erased = []

        def progress(n):
            if not erased:
                erased.append(True)
                with _open(target) as other:
                    other.forget(user_id=ALICE)

        result = jsonl.import_records(store, _parse(backup), batch_size=1, progress=progress)
        # the setting: her record of the backup landed after her erasure
        assert [r.content for r in store.list("memory", user_id=ALICE)] == ["alice keeps her passport in zanzibar"]
    assert result.erased_during_import == {"user": [ALICE], "agent": []}


def test_a_clean_import_reports_nothing(tmp_path):
    backup = _backup(tmp_path)
    with _open(tmp_path / "dst.db") as store:
        result = jsonl.import_records(store, _parse(backup), batch_size=1)
    assert result.imported == 4 and result.erased_during_import == {"user": [], "agent": []}


def test_the_cli_says_to_erase_her_again(tmp_path, monkeypatch):
    backup = _backup(tmp_path)
    target = tmp_path / "dst.db"
    with _open(target) as store:
        store.add(["alice said hello earlier"], "memory", user_ids=ALICE)
    real = SQLiteMemoryStore.restore_batches
    calls = []

    def erase_after_the_first_batch(self, *args, **kw):
        written = real(self, *args, **kw)
        calls.append(True)
        if len(calls) == 1:  # Bob's first record is in; her forget commits before the next batch
            with _open(target) as other:
                other.forget(user_id=ALICE)
        return written

    monkeypatch.setattr(SQLiteMemoryStore, "restore_batches", erase_after_the_first_batch)
    result = CliRunner().invoke(cli, ["--db", str(target), "import", "--batch-size", "1", str(backup)],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "erased in this store while the import ran" in result.output
    assert "oramem forget --user" in result.output
    assert "`oramem forget --agent ID`" in result.output  # an erased agent (audit25: named --user only)
    assert ALICE not in result.output  # counts only, as every erasure message


def test_another_users_erasure_during_the_import_is_not_reported(tmp_path):
    """red27: Carol is not in the file. Her erasure in the target while the import runs (and a
    record of hers written again by someone else after it) is not the import's to report: the
    result names only the file's subjects, so neither her id nor a count of her appears."""
    backup = _backup(tmp_path)
    target = tmp_path / "dst.db"
    with _open(target) as store:
        store.add(["carol's address is 1 rue de la paix"], "memory", user_ids="carol")
        done = []

        def progress(n):
            if not done:
                done.append(True)
                with _open(target) as other:
                    other.forget(user_id="carol")
                    other.add(["carol again"], "memory", user_ids="carol")

        result = jsonl.import_records(store, _parse(backup), batch_size=1, progress=progress)
        assert [r.content for r in store.list("memory", user_id="carol")] == ["carol again"]
    assert result.imported == 4 and result.erased_during_import == {"user": [], "agent": []}


def test_her_new_record_written_after_her_erasure_is_not_reported_as_restored(tmp_path):
    """red27: the file's record of Alice landed BEFORE her erasure (which took it); after it
    someone wrote her a new record. The import restored nothing of hers, so it reports
    nothing: telling the operator to erase her again would take her new record."""
    src = tmp_path / "src.db"
    with _open(src) as store:
        store.add(["alice keeps her passport in zanzibar"], "memory", user_ids=ALICE)
        store.add([f"bob likes tea {i}" for i in range(3)], "memory", user_ids="bob")
        lines: list[str] = []
        jsonl.export_records(store, lines.append)
    backup = tmp_path / "backup.jsonl"
    backup.write_text("".join(lines))
    target = tmp_path / "dst.db"
    with _open(target) as store:
        done = []

        def progress(n):
            if not done:  # after the first batch: her file record is in, then she is erased
                done.append(True)
                with _open(target) as other:
                    assert other.list("memory", user_id=ALICE)
                    other.forget(user_id=ALICE)
                    other.add(["alice is back: new phone"], "memory", user_ids=ALICE)

        result = jsonl.import_records(store, _parse(backup), batch_size=1, progress=progress)
        assert [r.content for r in store.list("memory", user_id=ALICE)] == ["alice is back: new phone"]
    assert result.imported == 4 and result.erased_during_import == {"user": [], "agent": []}
