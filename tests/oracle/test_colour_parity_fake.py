"""Sync vs async Oracle engine parity for the tenant boundary (red team 17).

One agent, two users: Bob calls every public store API against Alice's data (her thread,
her record ids, her user id, the shared records of no user). The same script runs through
``OracleDBMemoryStore`` over the recording fake twice, once on a synchronous pool and once
on an asynchronous one, and the PL/SQL calls each colour sends are compared: the package
subprogram, every bind (the JSON payloads parsed, so a scope object that differs in one
key shows), and whether the call committed. Any refusal, scope argument or transaction rule
of one colour that the other lacks shows as a difference here.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable

import numpy as np
import pytest

from oramem import OracleDBMemoryStore, StoreError
from oramem.embedders import HashEmbedder

from .fakes import Call, FakeAsyncPool, FakePool, Recorder
from .test_driver_fake import REC, SETTINGS_OUT

ALICE_REC = dict(REC, id="a1", user_id="alice", thread_id="t-alice", metadata=None)
KG_EVENT = dict(REC, id="e1", record_type="message", role="user", seq_no=9, user_id="alice", thread_id="t-shared",
                metadata={"kg_event": True})


def _reply(call: Call) -> Any:
    """A plausible reply per subprogram (the same for both colours)."""
    name = call.name
    if name == "oramem_store.add_json":
        return json.dumps([r["id"] for r in json.loads(call.binds["in_batch"])["records"]])
    if name == "oramem_store.get_json":
        return json.dumps(ALICE_REC) if call.binds["in_record_id"] == "a1" else None
    if name in ("oramem_store.list_json", "oramem_store.list_thread_messages_json"):
        return json.dumps([ALICE_REC])
    if name == "oramem_search.search_json":
        return json.dumps([{"record": ALICE_REC, "distance": 0.25}])
    if name == "oramem_store.update_json":
        return 1
    if name in ("oramem_store.delete_record_json", "oramem_store.delete_thread_json",
                "oramem_store.purge_expired_json"):
        return json.dumps({"count": 1, "event": None})
    if name == "oramem_admin.get_options_json":
        return "{}"
    if name == "oramem_kg_jobs.has_knowledge":
        return 1
    return None


def _recorder() -> Recorder:
    rec = Recorder()
    opened = json.dumps(dict(SETTINGS_OUT, vector_dim=8))
    rec.answer = lambda key, call: opened if key == "oramem_admin.open_store" else _reply(call)  # type: ignore[method-assign]
    return rec


#: Bob's script: (label, method name, args, kwargs). Every call names Alice's data or the
#: shared records; the async colour runs the ``*_async`` twin of each.
SCRIPT: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
    ("add into her thread", "add", (["bob was here"], "message"),
     dict(record_ids=["b1"], thread_ids=["t-alice"], user_ids=["bob"], roles=["user"])),
    ("add an unscoped record", "add", (["shared note"], "memory"), dict(record_ids=["s1"], user_ids=[None])),
    ("add under her record id", "add", (["mine now"], "memory"), dict(record_ids=["a1"], user_ids=["bob"])),
    ("his profile", "add_user", ("bob", "Bob the builder"), {}),
    ("get her record", "get", ("memory", "a1"), {}),
    ("list his", "list", ("memory",), dict(user_id="bob")),
    ("list no user", "list", ("memory",), dict(user_id=None)),
    ("list any user", "list", ("memory",), {}),
    ("list her thread", "list", ("message",), dict(thread_id="t-alice")),
    ("list with a filter", "list", ("memory",), dict(user_id="bob", metadata_filter={"kg_user": "bob"})),
    ("her thread's messages", "list_thread_messages", ("t-alice",), dict(last_n=5)),
    ("search his", "search", (None,), dict(query_vector=np.ones(8, np.float32), user_id="bob", k=3)),
    ("search exact no user", "search", (None,),
     dict(query_vector=np.ones(8, np.float32), user_id=None, exact_user_match=True, k=3)),
    ("search any user", "search", (None,), dict(query_vector=np.ones(8, np.float32), k=3)),
    ("search her thread", "search", (None,),
     dict(query_vector=np.ones(8, np.float32), thread_id="t-alice", user_id="bob", exact_thread_match=True)),
    ("search with a filter", "search", (None,),
     dict(query_vector=np.ones(8, np.float32), user_id="bob", metadata_filter={"kg_user": "bob"})),
    ("update her record", "update", ("memory", "a1"), dict(metadata={"x": 1})),
    ("delete her record", "delete", ("memory", "a1"), {}),
    ("delete her profile without cascade", "delete", ("user_profile", "alice"), {}),
    ("delete his profile with cascade", "delete", ("user_profile", "bob"), dict(cascade=True)),
    ("delete her thread", "delete_thread", ("t-alice",), {}),
    ("delete her thread as a record", "delete", ("thread", "t-alice"), dict(cascade=True)),
    ("purge", "purge_expired", (), {}),
]


def _normalised(call: Call) -> tuple[Any, ...]:
    binds = {}
    for k, v in call.binds.items():
        if isinstance(v, str) and v[:1] in "[{":
            try:
                v = json.loads(v)
            except ValueError:
                pass
        binds[k] = v
    return (call.kind, call.name, json.dumps(binds, sort_keys=True, default=repr))


def _trace(rec: Recorder) -> list[tuple[Any, ...]]:
    """PL/SQL calls and transaction ends, in order (connection numbers left out)."""
    out: list[tuple[Any, ...]] = []
    for c in rec.calls:
        if c.kind in ("callfunc", "callproc"):
            out.append(_normalised(c))
        elif c.kind in ("commit", "rollback"):
            out.append((c.kind,))
    return out


def _run_sync(step: Callable[[Any], Any]) -> tuple[list[tuple[Any, ...]], Any]:
    rec = _recorder()
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    start = len(rec.calls)
    try:
        result: Any = step(store)
    except Exception as e:  # noqa: BLE001 - compared with the other colour's
        result = (type(e).__name__, str(e))
    return _trace(_slice(rec, start)), result


def _run_async(step: Callable[[Any], Any]) -> tuple[list[tuple[Any, ...]], Any]:
    rec = _recorder()

    async def go() -> tuple[int, Any]:
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
        start = len(rec.calls)
        try:
            return start, await step(store)
        except Exception as e:  # noqa: BLE001
            return start, (type(e).__name__, str(e))

    start, result = asyncio.run(go())
    return _trace(_slice(rec, start)), result


def _slice(rec: Recorder, start: int) -> Recorder:
    out = Recorder()
    out.calls = rec.calls[start:]
    return out


def _comparable(result: Any) -> Any:
    if isinstance(result, list):
        return [_comparable(r) for r in result]
    if isinstance(result, tuple):
        return tuple(_comparable(r) for r in result)
    if hasattr(result, "id") and hasattr(result, "user_id"):
        return ("record", result.id, result.record_type, result.user_id, result.thread_id)
    return result


@pytest.mark.parametrize("label,method,args,kwargs", SCRIPT, ids=[s[0] for s in SCRIPT])
def test_bob_against_alice_sends_the_same_calls_in_both_colours(label, method, args, kwargs):
    sync_trace, sync_result = _run_sync(lambda store: getattr(store, method)(*args, **kwargs))
    async_trace, async_result = _run_async(lambda store: getattr(store, f"{method}_async")(*args, **kwargs))
    assert sync_trace, f"{label}: the sync colour made no PL/SQL call"
    assert async_trace == sync_trace, label
    assert _comparable(async_result) == _comparable(sync_result), label


def test_the_script_covers_every_user_reachable_call():
    """Each store subprogram a caller acting for a user reaches is in the script (forget,
    which the async colour refuses, is compared in the test below)."""
    names = set()
    for _, method, args, kwargs in SCRIPT:
        trace, _ = _run_sync(lambda store, m=method, a=args, k=kwargs: getattr(store, m)(*a, **k))
        names.update(t[1] for t in trace if len(t) > 1)
    assert {"oramem_store.add_json", "oramem_store.get_json", "oramem_store.list_json",
            "oramem_store.list_thread_messages_json", "oramem_search.search_json", "oramem_store.update_json",
            "oramem_store.delete_record_json", "oramem_store.delete_thread_json",
            "oramem_store.purge_expired_json"} <= names


def _with_knowledge(has: int) -> Callable[[], Recorder]:
    def make() -> Recorder:
        rec = _recorder()
        plain = rec.answer
        rec.answer = lambda key, call: has if key == "oramem_kg_jobs.has_knowledge" else plain(key, call)  # type: ignore[method-assign]
        return rec
    return make


@pytest.mark.parametrize("has_knowledge", [1, 0])
def test_her_profile_cascade_without_an_eraser_is_refused_on_a_store_with_knowledge(has_knowledge):
    """SC-13.3 / KC-3.10, red team 17. Alice's profile cascade is her erasure. Without the
    knowledge layer's eraser (the async colour never has one: its erasure runs through
    SQLAlchemy on a synchronous connection; a sync store opened without KnowledgeMemory has
    none either) only the PL/SQL knowledge hook ran: her events and facts went, but the rows of
    the shared scope citing them (meta and session observations, clusters, entity summaries,
    which Bob reads) stayed, and so did her queued writes, which a worker would write back.
    forget() refuses that case on both colours before anything is deleted; the cascade now
    does too, in both colours alike. A store without knowledge tables cascades: as before on the
    async pool, with forget's receipt on the synchronous one (SC-8.2, SC-14.1, red25)."""
    make = _with_knowledge(has_knowledge)
    traces = []
    for colour in ("sync", "async"):
        rec = make()
        if colour == "sync":
            store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
            start = len(rec.calls)
            try:
                result: Any = store.delete("user_profile", "alice", cascade=True)
            except Exception as e:  # noqa: BLE001
                result = e
        else:
            async def go() -> tuple[int, Any]:
                store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec),
                                                                memory_store_id="mystore")
                begin = len(rec.calls)
                try:
                    return begin, await store.delete_async("user_profile", "alice", cascade=True)
                except Exception as e:  # noqa: BLE001
                    return begin, e

            start, result = asyncio.run(go())
        trace = _trace(_slice(rec, start))
        names = [t[1] for t in trace if len(t) > 1]
        if has_knowledge:
            assert isinstance(result, StoreError) and "nothing was deleted" in str(result), (colour, result)
            assert "alice" in str(result) and "KnowledgeMemory" in str(result)
            assert names == ["oramem_kg_jobs.has_knowledge"], colour  # no delete_record_json, nothing committed
            assert ("commit",) not in trace
        elif colour == "async":
            assert result == 1, (colour, result)
            assert names == ["oramem_kg_jobs.has_knowledge", "oramem_store.delete_record_json"], colour
        else:
            # SC-8.2 / SC-14.1 (red25): on the synchronous pool the cascade is an erasure with
            # forget's receipt: the salt and her texts read first, then one transaction (the
            # cascade, its tombstone) and one commit, then the scan and the receipt; the async
            # pool keeps no erasure log and cascades as before (SC-14.1)
            assert result == 1, (colour, result)
            reads = {"oramem_store.list_json", "oramem_store.get_json"}
            head = names.index("oramem_admin.set_option")
            body = names.index("oramem_store.delete_record_json")
            assert names[:head + 1] == ["oramem_kg_jobs.has_knowledge", "oramem_admin.get_options_json",
                                        "oramem_admin.set_option"], names
            assert set(names[head + 1:body]) == reads, names
            assert names[body:] == ["oramem_store.delete_record_json", "oramem_admin.log_erasure",
                                    "oramem_admin.erasure_scan_json", "oramem_admin.log_erasure"], names
            calls = trace
            cascade_at = next(i for i, t in enumerate(calls) if len(t) > 1 and t[1] == "oramem_store.delete_record_json")
            assert calls[cascade_at + 1][1] == "oramem_admin.log_erasure" and calls[cascade_at + 2] == ("commit",)
            assert ("commit",) not in calls[cascade_at - 1:cascade_at + 1], calls  # one commit, after the tombstone
            binds = json.loads(calls[cascade_at][2])
            assert (binds["in_record_type"], binds["in_record_id"], binds["in_cascade"]) == ("user_profile", "alice", 1)
            tomb = json.loads(calls[cascade_at + 1][2])["in_receipt"]
            assert tomb["subject"] == "user" and tomb["verification"] == {"status": "pending"}
        traces.append(trace)
    # the cascade itself is the same call in both colours (the sync one names its reason NULL)
    sync_cascade, async_cascade = ([json.loads(t[2]) for t in tr if len(t) > 1 and t[1] == "oramem_store.delete_record_json"]
                                   for tr in traces)
    for call in sync_cascade:
        assert call.pop("in_reason", None) is None and call.pop("in_names", None) is None
    assert sync_cascade == async_cascade
    if has_knowledge:
        assert traces[0] == traces[1]


def test_bobs_block_over_alices_thread_commits_once_in_both_colours():
    """SC-12 parity: Bob's block (a write into Alice's thread, a read of it, the delete of his
    record) runs on one connection and commits once at its end, in both colours; a failing
    block rolls back and commits nothing."""
    def sync_block(store: Any) -> Any:
        with store.transaction():
            store.add(["bob here"], "message", record_ids=["b1"], thread_ids=["t-alice"], user_ids=["bob"], roles=["user"])
            seen = store.list("message", thread_id="t-alice", user_id="bob")
            store.delete("message", "b1")
        return seen

    async def async_block(store: Any) -> Any:
        async with store.transaction_async():
            await store.add_async(["bob here"], "message", record_ids=["b1"], thread_ids=["t-alice"], user_ids=["bob"],
                                  roles=["user"])
            seen = await store.list_async("message", thread_id="t-alice", user_id="bob")
            await store.delete_async("message", "b1")
        return seen

    sync_trace, sync_result = _run_sync(sync_block)
    async_trace, async_result = _run_async(async_block)
    assert async_trace == sync_trace and _comparable(async_result) == _comparable(sync_result)
    assert [t for t in sync_trace if t[0] in ("commit", "rollback")] == [("commit",)] and sync_trace[-1] == ("commit",)

    def failing(store: Any) -> Any:
        with store.transaction():
            store.delete("message", "a1")
            raise RuntimeError("Bob's block fails")

    async def failing_async(store: Any) -> Any:
        async with store.transaction_async():
            await store.delete_async("message", "a1")
            raise RuntimeError("Bob's block fails")

    sync_trace, sync_result = _run_sync(failing)
    async_trace, async_result = _run_async(failing_async)
    assert async_trace == sync_trace and sync_result == async_result == ("RuntimeError", "Bob's block fails")
    assert ("commit",) not in sync_trace and sync_trace[-1] == ("rollback",)
