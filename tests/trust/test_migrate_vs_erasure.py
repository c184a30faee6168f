"""A user erased on the SOURCE while ``migrate`` copies it (SC-14.3, SC-14.4; red26). Migrate
reads the source's erasure log once, before it copies, and then reads the records in pages,
each in its own read: Alice's records copied before her ``forget`` committed stayed in the
target with no tombstone there (her receipt, written after the read, was never copied), and
the report said only that the copy differs. Now the receipts written during the copy are
copied too, and the report names the erased subjects the target still holds, so the
operator erases them there (the CLI says how). Deterministic: the progress callback, called
after the first page, erases her on the source."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.migrate import migrate
from oramem.testing import HashEmbedder
from oramem.trust.erasure import erasure_log, verify_receipts

ALICE = "alice-mid-copy"


def _open(path):
    return SQLiteMemoryStore(str(path), embedder=HashEmbedder(64))


def _seed(path):
    with _open(path) as store:
        store.add(["alice keeps her passport in zanzibar"], "memory", user_ids=ALICE)
        store.add([f"bob likes tea {i}" for i in range(5)], "memory", user_ids="bob")


def _erase_alice_once(path):
    done = []

    def progress(copied, total):
        if copied and not done:
            done.append(True)
            with _open(path) as store:
                store.forget(user_id=ALICE)

    return progress


def test_a_user_erased_on_the_source_during_migrate_leaves_a_tombstone_and_a_failed_report(tmp_path):
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    _seed(src)
    report = migrate(str(src), str(dst), batch_size=2, progress=_erase_alice_once(src))
    with _open(src) as store:
        (receipt,) = erasure_log(store)
    with _open(dst) as store:
        # the setting: her record was copied before her erasure committed
        assert [r.user_id for r in store.list("memory")].count(ALICE) == 1
        # the tombstone travels: re-verification on the target sees her back (SC-14.5)
        assert [e["receipt_id"] for e in erasure_log(store)] == [receipt["receipt_id"]]
        (check,) = verify_receipts(store)
        assert check.subject_present and not check.ok
    (comparison,) = report.stores
    assert comparison.erased_during_copy == {"user": [ALICE], "agent": []}
    assert not comparison.ok and not report.ok


def test_the_cli_says_to_erase_her_on_the_target(tmp_path, monkeypatch):
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    _seed(src)
    real = migrate

    def erasing_migrate(*args, **kw):
        kw["progress"] = _erase_alice_once(src)
        return real(*args, **kw)

    monkeypatch.setattr("oramem.migrate.migrate", erasing_migrate)
    result = CliRunner().invoke(cli, ["migrate", str(src), str(dst), "--batch-size", "2"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "erased on SOURCE while it was copied" in result.output
    assert "forget" in result.output
    assert ALICE not in result.output  # counts only, as every erasure message
    # an erased agent is erased with --agent (audit25: the message named --user only)
    assert "`oramem --db TARGET forget --agent ID`" in result.output


def test_migrate_help_names_every_exit_1():
    """audit25: `oramem migrate --help` said exit 1 meant a checksum difference only; since
    red26 a subject erased on SOURCE during the copy and still in TARGET exits 1 too."""
    text = " ".join(CliRunner().invoke(cli, ["migrate", "--help"]).output.split())
    assert "Exit 1 when the comparison finds a difference, or when a user or agent erased on SOURCE while it was copied still has rows in TARGET" in text
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert ("(exit 1 on a difference, and when a user or agent erased on the source while it was copied still has "
            "rows in the target: SC-14.4)") in readme


def test_an_erasure_before_the_copy_is_still_refused_and_nothing_is_reported_after_a_clean_copy(tmp_path):
    from oramem.trust.erasure import ErasedSubjectError

    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    _seed(src)
    report = migrate(str(src), str(dst), batch_size=2)
    assert report.ok and report.stores[0].erased_during_copy == {"user": [], "agent": []}
    with _open(dst) as store:
        store.forget(user_id=ALICE)
    with pytest.raises(ErasedSubjectError):
        migrate(str(src), str(dst), batch_size=2)
