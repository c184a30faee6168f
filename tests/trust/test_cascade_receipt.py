"""A profile cascade is an erasure (SC-8.2, SC-13.3, SC-13.4) and leaves forget's proof
(SC-14.1-14.4): a receipt in the erasure log, its tombstone committed in the cascade's own
transaction (KC-3.10: a knowledge write in flight refuses), the verification scan after the
commit, and import / migrate refusing her records afterwards. ``delete`` still returns 1 or 0."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from oramem.trust.erasure import SALT_OPTION, ErasedSubjectError, erasure_log, verify_receipts

from .test_erasure import ALICE, open_store, seed


def _hash(store, kind, subject):
    salt = store.get_option(SALT_OPTION)
    return hmac.new(bytes.fromhex(salt), f"{kind}:{subject}".encode(), hashlib.sha256).hexdigest()


@pytest.mark.parametrize("profile, kind, subject", [
    ("user_profile", "user", ALICE),
    ("agent_profile", "agent", "concierge"),  # no profile row: the cascade runs anyway (SC-8.2)
], ids=["user", "agent"])
def test_a_profile_cascade_logs_a_verified_receipt_and_returns_what_delete_returns(tmp_path, profile, kind, subject):
    with open_store(tmp_path / "f.db") as twin:
        seed(twin)
        receipt = twin.forget(**{f"{kind}_id": subject})
    with open_store(tmp_path / "c.db") as store:
        seed(store)
        expected = 1 if profile == "user_profile" else 0  # SC-8.2: 0 when the profile row is absent
        assert store.delete(profile, subject, cascade=True) == expected
        [entry] = erasure_log(store)
        assert entry["subject"] == kind and entry["subject_hash"] == _hash(store, kind, subject)
        assert entry["verification"]["status"] == "clean" and entry["verification"]["tokens_checked"] >= 2
        # the rows erased per table, as forget's receipt counts them on the same store
        assert entry["rows"] == receipt.to_json()["rows"] and entry["total"] == sum(receipt.values()) > 0
        assert len(entry["token_hashes"]) == len(receipt.token_hashes)
        assert subject not in json.dumps(entry) and "quokkafish" not in json.dumps(entry)
        assert [c.ok for c in verify_receipts(store)] == [True]


def test_a_plain_delete_of_a_profile_is_no_erasure_and_logs_nothing(tmp_path):
    with open_store(tmp_path / "d.db") as store:
        seed(store)
        assert store.delete("user_profile", ALICE) == 1
        assert erasure_log(store) == []


async def test_delete_async_cascade_logs_the_receipt_too(tmp_path):
    with open_store(tmp_path / "a.db") as store:
        seed(store)
        assert await store.delete_async("user_profile", ALICE, cascade=True) == 1
        [entry] = erasure_log(store)
        assert entry["subject_hash"] == _hash(store, "user", ALICE) and entry["verification"]["status"] == "clean"


def test_a_cascade_in_a_block_commits_its_tombstone_with_the_block_and_stays_pending(tmp_path):
    with open_store(tmp_path / "b.db") as store:
        seed(store)
        with pytest.raises(RuntimeError, match="rolled back"):
            with store.transaction():
                store.delete("user_profile", ALICE, cascade=True)
                raise RuntimeError("rolled back")
        assert erasure_log(store) == [] and store.get("user_profile", ALICE) is not None
        with store.transaction():
            assert store.delete("user_profile", ALICE, cascade=True) == 1
        [entry] = erasure_log(store)
        assert entry["verification"] == {"status": "pending"} and entry["subject_hash"] == _hash(store, "user", ALICE)
        # no checkpoint in a block: her words stay in the WAL's old pages, and re-verification says so
        [check] = verify_receipts(store)
        assert not check.subject_present and check.residue and "in no live row" in check.problem


def test_a_backup_from_before_the_cascade_does_not_bring_her_back(tmp_path):
    """SC-14.4 follows the receipt: import (and migrate) refuse her records afterwards."""
    from oramem import jsonl
    from oramem.migrate import migrate

    with open_store(tmp_path / "p.db") as store:
        seed(store)
        lines: list[str] = []
        jsonl.export_records(store, lines.append)
        store.delete("user_profile", ALICE, cascade=True)
        parsed = jsonl.parse_lines(lines)
        with pytest.raises(ErasedSubjectError, match="allow-erased"):
            jsonl.import_records(store, parsed, on_conflict="skip")
        assert store.get("user_profile", ALICE) is None
    with open_store(tmp_path / "old.db") as old:
        seed(old)
    with pytest.raises(ErasedSubjectError):
        migrate(str(tmp_path / "old.db"), str(tmp_path / "p.db"))
    with open_store(tmp_path / "p.db") as store:
        assert store.get("user_profile", ALICE) is None


def test_a_profile_cascade_erases_her_audit_entries_as_forget_does(tmp_path):
    """SC-16.6: the cascade deletes the entries of her scope in its transaction; its receipt
    counts them and stays clean (no byte of her id is left in the files)."""
    from oramem.trust import audit

    db = tmp_path / "au.db"
    with open_store(db) as store:
        seed(store)
        audit.set_audit(store, True)
        store.search("passport", user_id=ALICE)
        store.search("zanzibar", user_id="bob")
        assert store.delete("user_profile", ALICE, cascade=True) == 1
        [entry] = erasure_log(store)
        assert entry["rows"]["oramem_audit_log"] == 1 and entry["verification"]["status"] == "clean"
        assert [e.user_id for e in audit.find(store)] == ["bob"]
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("au.db"))
    assert ALICE.encode() not in raw


def test_a_refused_cascade_writes_nothing_not_even_the_salt(tmp_path):
    """SC-8.6: a user's cascade on a store with knowledge tables and no KnowledgeMemory open
    is refused before anything is written: the receipt's salt (SC-14.1) is not created, no
    tombstone is logged; with KnowledgeMemory open the cascade erases her with a receipt."""
    from oramem.errors import StoreError
    from oramem.knowledge import KnowledgeMemory

    from knowledge.test_forget import _reopened_without_knowledge_memory

    store = _reopened_without_knowledge_memory(tmp_path)
    try:
        with pytest.raises(StoreError, match="nothing was deleted"):
            store.delete("user_profile", "alice", cascade=True)
        assert store.get_option(SALT_OPTION) is None and erasure_log(store) == []
        km = KnowledgeMemory(store, None)
        try:
            assert store.delete("user_profile", "alice", cascade=True) == 0
            assert [e["subject_hash"] for e in erasure_log(store)] == [_hash(store, "user", "alice")]
            assert km.get_all("a", user_id="alice") == []
        finally:
            km.close()
    finally:
        store.close()


@pytest.mark.parametrize("subject", [{"user_id": ALICE}, {"agent_id": "concierge"}], ids=["user", "agent"])
def test_forget_refused_in_a_block_writes_nothing_not_even_the_salt(tmp_path, subject):
    """forget() is refused inside store.transaction() (an erasure commits and checkpoints at
    once); it is refused before its receipt is prepared, so the block commits no salt and no
    tombstone (sync and async alike; red28 noticed the salt)."""
    import asyncio

    from oramem.errors import StoreError

    with open_store(tmp_path / "f.db") as store:
        seed(store)
        with store.transaction():
            with pytest.raises(StoreError, match="cannot run inside store.transaction"):
                store.forget(**subject)
        assert store.get_option(SALT_OPTION) is None and erasure_log(store) == []

        async def in_async_block():
            async with store.transaction_async():
                with pytest.raises(StoreError, match="cannot run inside store.transaction"):
                    await store.forget_async(**subject)

        asyncio.run(in_async_block())
        assert store.get_option(SALT_OPTION) is None and erasure_log(store) == []
        assert store.get("user_profile", ALICE) is not None
