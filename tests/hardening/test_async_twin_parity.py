"""Sync/async parity of every public store and KnowledgeMemory method, one user against another
(red28; SC-12 blocks, SC-13 tenant scopes, SC-14 erasure log, SC-16 retrieval audit).

Every public method ``x`` of the store has an ``x_async`` twin. For each pair the same
Bob-vs-Alice scenario (Bob scoped by user in a thread he shares with Alice, an agent scope, a
metadata filter, a bad argument) runs once through the sync methods and once through the async
twins, on two stores seeded alike; the results, the errors (class and message) and the side
effects (every record, the audit log, the erasure receipts) must be identical. Each scenario
runs plainly and inside a caller's block (``with store.transaction()`` against
``async with store.transaction_async()``): before red28 the async twins ran the audit, the
audit's retention and forget's erasure bookkeeping with ``asyncio.to_thread``, which a block
refuses as "another thread", so an audited ``search_async`` / ``purge_expired_async`` in a block
failed where ``search`` / ``purge_expired`` worked, and ``forget_async`` was refused with the
wrong reason.

A new public method without a twin, or a pair without a scenario here (or a reason in
``NO_SCENARIO``), fails ``test_every_store_method_has_a_twin_and_a_scenario``.
"""

from __future__ import annotations

import asyncio
import inspect
from datetime import datetime, timezone
from typing import Any

import pytest

from oramem import SQLiteMemoryStore
from oramem.batches import PendingRecordBatch
from oramem.knowledge import KnowledgeMemory
from oramem.testing import HashEmbedder
from oramem.trust import FirewallPolicy, audit, erasure

ALICE, BOB, AGENT, THREAD = "alice-7f3a91", "bob-22c4", "concierge", "shared-thread"
NOW = datetime(2026, 12, 7, 8, 0, tzinfo=timezone.utc)

#: pairs without a Bob-vs-Alice scenario, and why (each a reason, not an omission)
NO_SCENARIO = {
    "close": "no scope; closing is checked by the store tests (every later call raises StoreClosed)",
    "transaction": "the scenarios below run inside it (sync) and its twin (async)",
    "sql_access": "returns a new SQLAccess object (no I/O, no scope); both twins call engine.sql_access",
    "register_erasure": "registration only (no I/O); both twins call engine.register_erasure",
    "register_deletion_hook": "registration only (no I/O); both twins call engine.register_deletion_hook",
}
#: public store methods that are themselves aliases or async-only spellings
ALIASES = {"aclose": "close_async"}


def _rec(r: Any) -> tuple:
    return (r.record_type, r.id, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata,
            str(r.created_at), str(r.expires_at), str(r.timestamp))


def _norm(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if hasattr(value, "record_type") and hasattr(value, "id"):
        return _rec(value)
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, FirewallPolicy):
        return value.to_json()
    return value


# one scenario per pair: steps (method name, args, kwargs); each step's result or error is compared
SCENARIOS: dict[str, list[tuple[str, tuple, dict]]] = {
    "add": [
        ("add", (["Bob likes rye bread"],), {"record_type": "memory", "record_ids": "b9", "user_ids": BOB,
                                             "agent_ids": AGENT, "thread_ids": THREAD, "metadata": {"topic": "food"}}),
        ("add", (["x"], "memory"), {"user_ids": 123}),  # a bad scope
        ("add", (["x"], "memory"), {"users": BOB}),  # another library's name
    ],
    "add_batches": [
        ("add_batches", ([PendingRecordBatch(["Bob batch"], "memory", record_ids=["bb"], user_ids=BOB,
                                             thread_ids=THREAD, agent_ids=AGENT)],), {}),
        ("add_batches", ("not a list",), {}),
    ],
    "restore_batches": [
        ("restore_batches", ([PendingRecordBatch(["Bob restored"], "memory", record_ids=["b1"], user_ids=BOB)],),
         {"on_conflict": "skip"}),
        ("restore_batches", ([],), {"on_conflict": "overwrite"}),
    ],
    "restore_threads": [
        ("restore_threads", ([("bob-thread", BOB, AGENT, None), (THREAD, ALICE, AGENT, None)],), {}),
        ("restore_threads", ([("t", BOB)],), {}),
    ],
    "add_user": [("add_user", (BOB, "Bob, chess player"), {}), ("add_user", ("", "x"), {})],
    "add_agent": [("add_agent", ("helper", "a helper"), {}), ("add_agent", ("helper", b"bytes"), {})],
    "get": [("get", ("memory", "b1"), {}), ("get", ("memory", "a1"), {}), ("get", ("nope", "b1"), {}),
            ("get", ("memory",), {"memory_id": "b1"})],
    "list": [
        ("list", ("memory",), {"user_id": BOB, "thread_id": THREAD, "limit": None}),
        ("list", ("memory",), {"user_id": BOB, "agent_id": AGENT, "metadata_filter": {"topic": "food"}, "limit": None}),
        ("list", ("memory",), {"thread_id": THREAD, "limit": None}),
        ("list", ("memory",), {"user_id": BOB, "limit": 0}),
        ("list", ("memory",), {"user": BOB}),
    ],
    "list_thread_messages": [("list_thread_messages", (THREAD,), {}), ("list_thread_messages", (THREAD,), {"last_n": 0})],
    "search": [
        ("search", ("tea",), {"user_id": BOB, "thread_id": THREAD, "exact_user_match": True}),
        ("search", ("bread",), {"user_id": BOB, "agent_id": AGENT, "metadata_filter": {"topic": "food"}}),
        ("search", ("tea",), {"user_id": ALICE, "exact_user_match": True, "record_types": ["memory"]}),
        ("search", ("tea",), {"user_id": BOB, "k": 0}),
        ("search", ("tea",), {"user_ids": BOB}),
    ],
    "update": [
        ("update", ("memory", "b1"), {"text": "Bob drinks tea now", "metadata": {"topic": "drinks"}}),
        ("update", ("memory", "a1"), {"ttl_days": -1}),
        ("update", ("memory", "b1"), {"metadata": {"oramem_firewall": "x"}}),
        ("update", ("memory", "b1"), {"data": "x"}),
    ],
    "delete": [("delete", ("memory", "b1"), {}), ("delete", ("memory", "a1"), {"cascade": True}),
               ("delete", ("user_profile", BOB), {"cascade": True}), ("delete", ("memory", "zz"), {})],
    "delete_thread": [("delete_thread", ("bob-only",), {}), ("delete_thread", ("",), {})],
    "purge_expired": [("purge_expired", (), {})],
    "forget": [("forget", (), {"user_id": BOB}), ("forget", (), {"user_id": BOB, "names": ["Bob"]}),
               ("forget", (), {})],
    "sync_search_index": [("sync_search_index", (), {})],
    "get_option": [("get_option", ("oramem.audit",), {}), ("get_option", ("no such option",), {})],
    "set_option": [("set_option", ("no such option", 1), {})],
    "get_firewall": [("get_firewall", (), {})],
    "set_firewall": [("set_firewall", (FirewallPolicy(secret="reject"),), {}), ("set_firewall", ("reject",), {}),
                     ("add", (["token sk-live-0123456789abcdef0123456789"], "memory"), {"user_ids": BOB})],
}


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def test_every_store_method_has_a_twin_and_a_scenario():
    names = _public(SQLiteMemoryStore) - set(ALIASES)
    sync_names = {n for n in names if not n.endswith("_async")}
    assert {n for n in names if n.endswith("_async")} == {f"{n}_async" for n in sync_names}, "a method without its twin"
    missing = sync_names - set(SCENARIOS) - set(NO_SCENARIO)
    assert not missing, f"add a Bob-vs-Alice scenario (or a reason in NO_SCENARIO) for {sorted(missing)}"
    for name in sync_names:  # the same parameters, in the same order, with the same defaults
        sync_sig = inspect.signature(getattr(SQLiteMemoryStore, name))
        async_sig = inspect.signature(getattr(SQLiteMemoryStore, f"{name}_async"))
        assert list(sync_sig.parameters.values()) == list(async_sig.parameters.values()), name


def test_every_knowledge_method_is_its_async_twin_run_on_the_loop():
    """KnowledgeMemory's sync methods re-implement nothing: each is ``sync_method(x_async)``
    (oramem._sync), so its scope checks, refusals and audit entries are the async twin's."""
    names = _public(KnowledgeMemory)
    sync_names = {n for n in names if not n.endswith("_async")} - {"start_worker", "stop_worker"}
    assert {n for n in names if n.endswith("_async")} == {f"{n}_async" for n in sync_names}
    for name in sync_names - {"close"}:  # close_async runs close in a worker thread
        assert getattr(KnowledgeMemory, name).__wrapped__ is getattr(KnowledgeMemory, f"{name}_async"), name


def _open(path: Any) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(str(path), embedder=HashEmbedder(32), search_strategy="hybrid", clock=lambda: NOW)
    store.add(["Alice drinks green tea", "Alice's tea order"], "memory", record_ids=["a1", "a2"], user_ids=ALICE,
              agent_ids=AGENT, thread_ids=THREAD, metadata={"topic": "drinks"})
    store.add(["Bob drinks black coffee and tea", "Bob likes sourdough"], "memory", record_ids=["b1", "b2"],
              user_ids=BOB, agent_ids=AGENT, thread_ids=THREAD,
              metadata=[{"topic": "drinks"}, {"topic": "food"}])
    store.add(["Bob alone"], "memory", record_ids=["b3"], user_ids=BOB, thread_ids="bob-only")
    store.add_user(ALICE, "Alice, violinist")
    audit.set_audit(store, True, ttl_days=30)
    return store


def _outcome(call: Any) -> Any:
    try:
        return ("ok", _norm(call()))
    except Exception as exc:  # noqa: BLE001 - the class and message are what is compared
        return ("error", type(exc).__name__, str(exc))


def _same_name(outcome: Any) -> Any:
    # Python's own binding error names the function called: get_async() against get()
    return tuple(o.replace("_async()", "()") if isinstance(o, str) else o for o in outcome)


async def _outcome_async(call: Any) -> Any:
    try:
        return ("ok", _norm(await call()))
    except Exception as exc:  # noqa: BLE001
        return _same_name(("error", type(exc).__name__, str(exc)))


def _run_sync(store: SQLiteMemoryStore, steps: list, block: bool) -> list:
    def go() -> list:
        return [_outcome(lambda: getattr(store, m)(*a, **k)) for m, a, k in steps]
    if not block:
        return go()
    with store.transaction():
        return go()


def _run_async(store: SQLiteMemoryStore, steps: list, block: bool) -> list:
    async def go() -> list:
        return [await _outcome_async(lambda: getattr(store, f"{m}_async")(*a, **k)) for m, a, k in steps]

    async def main() -> list:
        if not block:
            return await go()
        async with store.transaction_async():
            return await go()
    return asyncio.run(main())


def _side_effects(store: SQLiteMemoryStore) -> dict:
    types = ("memory", "user_profile", "agent_profile")
    return {
        "records": {t: sorted(_rec(r) for r in store.list(t, limit=None)) for t in types},
        "threads": [_rec(r) for r in store.list_thread_messages(THREAD)],
        # request ids, times and salted query hashes differ by construction; the rest must not
        "audit": sorted(repr((e.surface, e.user_id, e.agent_id, e.thread_id, sorted(e.detail.items())))
                        for e in audit.find(store)),
        "erasures": sorted(repr((c.subject, c.ok, c.subject_present, c.problem)) for c in erasure.verify_receipts(store)),
        "firewall": _norm(store.get_firewall()),
    }


@pytest.mark.parametrize("block", [False, True], ids=["plain", "in-block"])
@pytest.mark.parametrize("pair", sorted(SCENARIOS))
def test_sync_and_async_twins_agree_for_bob_against_alice(tmp_path, pair, block):
    sync_store, async_store = _open(tmp_path / "sync.db"), _open(tmp_path / "async.db")
    try:
        steps = SCENARIOS[pair]
        sync_out = _run_sync(sync_store, steps, block)
        async_out = _run_async(async_store, steps, block)
        assert async_out == sync_out
        # outside a block every scenario but set_option's has a call that succeeds (else it
        # would compare refusals only); in a block forget and sync_search_index are refused
        assert any(o[0] == "ok" for o in sync_out) or pair == "set_option" or (
            block and pair in ("forget", "sync_search_index"))
        assert any(o[0] == "error" for o in sync_out) or pair in ("purge_expired", "sync_search_index", "get_firewall")
        assert _side_effects(async_store) == _side_effects(sync_store)
    finally:
        sync_store.close()
        async_store.close()


def test_audited_search_async_in_a_block_reads_and_logs_like_search(tmp_path):
    """The defect red28 fixed, spelled out: Bob's audited search inside a caller's block."""
    sync_store, async_store = _open(tmp_path / "sync.db"), _open(tmp_path / "async.db")
    with sync_store.transaction():
        expected = [r.id for r, _ in sync_store.search("tea", user_id=BOB, thread_id=THREAD, exact_user_match=True)]

    async def main() -> list:
        async with async_store.transaction_async():
            return [r.id for r, _ in await async_store.search_async("tea", user_id=BOB, thread_id=THREAD,
                                                                    exact_user_match=True)]
    got = asyncio.run(main())
    assert got == expected and "b1" in got and not {"a1", "a2"} & set(got)
    assert [e.user_id for e in audit.find(async_store)] == [e.user_id for e in audit.find(sync_store)] == [BOB]
    sync_store.close()
    async_store.close()


#: the trust layer's module-level twins that take a store (SC-14 receipts, SC-16 audit)
MODULE_TWINS = {
    "audit.find": (audit.find, audit.find_async, (), {"user_id": BOB}),
    "audit.set_audit": (audit.set_audit, audit.set_audit_async, (True,), {"ttl_days": 7}),
    "erasure.verify_receipts": (erasure.verify_receipts, erasure.verify_receipts_async, (), {}),
}


@pytest.mark.parametrize("block", [False, True], ids=["plain", "in-block"])
@pytest.mark.parametrize("name", sorted(MODULE_TWINS))
def test_trust_module_twins_agree_in_and_out_of_a_block(tmp_path, name, block):
    """Before red28 these async twins ran in ``asyncio.to_thread``: inside ``async with
    store.transaction_async()`` each was refused as a call from "another thread" (and told the
    caller to use the *_async methods, which it was doing), where the sync twin worked."""
    sync_fn, async_fn, args, kwargs = MODULE_TWINS[name]
    sync_store, async_store = _open(tmp_path / "sync.db"), _open(tmp_path / "async.db")
    sync_store.search("tea", user_id=BOB, thread_id=THREAD)
    async_store.search("tea", user_id=BOB, thread_id=THREAD)
    sync_store.forget(user_id=ALICE)
    async_store.forget(user_id=ALICE)

    def norm(value: Any) -> Any:
        if isinstance(value, list):  # AuditEntry / ReceiptCheck: ids, times and salted hashes differ by construction
            return [repr((getattr(v, "user_id", None), getattr(v, "surface", None), getattr(v, "subject", None),
                          getattr(v, "ok", None))) for v in value]
        return value

    if block:
        with sync_store.transaction():
            expected = _outcome(lambda: norm(sync_fn(sync_store, *args, **kwargs)))
    else:
        expected = _outcome(lambda: norm(sync_fn(sync_store, *args, **kwargs)))

    async def main() -> Any:
        async def call() -> Any:
            return norm(await async_fn(async_store, *args, **kwargs))
        if not block:
            return await _outcome_async(call)
        async with async_store.transaction_async():
            return await _outcome_async(call)
    got = asyncio.run(main())
    assert expected[0] == "ok" and got == expected
    assert expected[1], "the scenario reads or writes something"
    assert _side_effects(async_store) == _side_effects(sync_store)
    sync_store.close()
    async_store.close()
