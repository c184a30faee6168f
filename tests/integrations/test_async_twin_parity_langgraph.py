"""Sync/async parity of the LangGraph store, one user against another (red32; SC-13 tenant
scopes, the scope rules in oramem/integrations/langgraph.py).

``OramemStore.batch`` and ``abatch`` drive one plan of store calls (oramem._plans) on the
sync or the async store API; LangGraph's ``get`` / ``put`` / ``delete`` / ``search`` /
``list_namespaces`` and their ``a*`` twins go through them. This test holds the twins to the
same answers from outside: Bob's store (scoped to him, in the thread he shares with Alice) and
a store taking the user from the namespace run the same script once through the sync methods
and once through the async twins, on two stores seeded alike by Alice's store: her
namespace and keys read, overwritten, deleted and searched by Bob, his own items written with
a TTL and read back (the TTL refresh on read is a write), a put that fails (nothing of the
batch stays). Results (items without their times, which differ by construction), errors and
every record afterwards must be identical.
"""

from __future__ import annotations

import asyncio
from typing import Any

from integrations.colours import assert_colours_agree
from integrations.extras import require_extra

require_extra("langgraph.store.base", "langgraph")

from langgraph.store.base import GetOp, PutOp  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langgraph import OramemStore  # noqa: E402
from oramem.testing import HashEmbedder  # noqa: E402

ALICE, BOB, THREAD = "alice", "bob", "shared-thread"
HERS = ("prefs", "food")


def _open(path: Any) -> SQLiteMemoryStore:
    backing = SQLiteMemoryStore(str(path), embedder=HashEmbedder(32))
    alice = OramemStore(backing, user_id=ALICE, thread_id=THREAD)
    alice.put(HERS, "tea", {"text": "Alice drinks green tea"})
    alice.put(HERS, "passport", {"text": "Alice's passport X1234567"})
    by_ns = OramemStore(backing, scope_from_namespace={"user_id": 0})
    by_ns.put((ALICE, "notes"), "n1", {"text": "Alice's namespaced note"})
    return backing


def _norm(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if hasattr(value, "namespace") and hasattr(value, "key") and hasattr(value, "value"):
        return ("item", tuple(value.namespace), value.key, value.value, getattr(value, "score", None) is not None)
    return value


def _adapters(backing: SQLiteMemoryStore) -> dict[str, Any]:
    return {
        "bob": OramemStore(backing, user_id=BOB, thread_id=THREAD, ttl={"default_ttl": 120, "refresh_on_read": True}),
        "by_ns": OramemStore(backing, scope_from_namespace={"user_id": 0}),
        # no fixed scope: its record ids are the namespace store's (same fixed scope, None), so
        # (ALICE, "notes") / "n1" names her record; only the scope check keeps it from this store
        "plain": OramemStore(backing),
    }


# (adapter, method, args, kwargs): the async twin is "a" + method (batch: abatch)
SCRIPT: list[tuple[str, str, tuple, dict]] = [
    ("bob", "get", (HERS, "tea"), {}),
    ("bob", "search", (HERS,), {"query": "passport tea", "limit": 10}),
    ("bob", "search", ((),), {"limit": 10}),
    ("bob", "list_namespaces", (), {}),
    ("bob", "put", (HERS, "tea"), {"value": {"text": "Bob's tea, not hers"}}),
    ("bob", "get", (HERS, "tea"), {}),
    ("bob", "delete", (HERS, "passport"), {}),
    ("bob", "put", (("mine",), "k1"), {"value": {"text": "Bob likes rye"}}),
    ("bob", "get", (("mine",), "k1"), {}),
    ("bob", "search", (("mine",),), {"query": "rye", "limit": 5}),
    ("bob", "put", (("mine",), "k2"), {"value": "not a dict"}),
    ("bob", "batch", ([PutOp(("mine",), "k3", {"text": "kept?"}), PutOp((), "k4", {"text": "bad"})],), {}),
    ("bob", "batch", ([GetOp(("mine",), "k3"), GetOp(HERS, "passport")],), {}),
    ("bob", "search", (("mine",),), {"filter": "not a dict"}),
    ("by_ns", "get", ((BOB, "notes"), "n1"), {}),
    ("by_ns", "put", ((BOB, "notes"), "n1"), {"value": {"text": "Bob's own note"}}),
    ("by_ns", "search", ((BOB,),), {"limit": 10}),
    ("by_ns", "list_namespaces", (), {"prefix": (BOB,)}),
    ("plain", "get", ((ALICE, "notes"), "n1"), {}),
    ("plain", "search", ((ALICE,),), {"limit": 10}),
    ("plain", "put", ((ALICE, "notes"), "n1"), {"value": {"text": "over her note"}}),
    ("plain", "delete", ((ALICE, "notes"), "n1"), {}),
    ("bob", "delete", (("mine",), "k1"), {}),
    ("bob", "get", (("mine",), "k1"), {}),
]


def _async_name(name: str) -> str:
    return "abatch" if name == "batch" else f"a{name}"


def _error(exc: Exception) -> tuple:
    return ("error", type(exc).__name__, str(exc))


def _run_sync(backing: SQLiteMemoryStore) -> list:
    adapters, out = _adapters(backing), []
    for who, name, args, kwargs in SCRIPT:
        try:
            out.append(("ok", _norm(getattr(adapters[who], name)(*args, **kwargs))))
        except Exception as exc:  # noqa: BLE001 - the class and message are what is compared
            out.append(_error(exc))
    return out


def _run_async(backing: SQLiteMemoryStore) -> list:
    async def main() -> list:
        adapters, out = _adapters(backing), []
        for who, name, args, kwargs in SCRIPT:
            try:
                out.append(("ok", _norm(await getattr(adapters[who], _async_name(name))(*args, **kwargs))))
            except Exception as exc:  # noqa: BLE001
                out.append(_error(exc))
        return out
    return asyncio.run(main())


def _records(backing: SQLiteMemoryStore) -> list:
    # item times (created, updated, expires) differ between the two runs by construction
    def value(r: Any) -> Any:
        meta = dict(r.metadata or {})
        lg = {k: v for k, v in (meta.get("langgraph") or {}).items() if k not in ("updated_at", "expires_at")}
        return repr((meta.get("value"), sorted(lg.items())))
    return sorted((r.id, r.content, r.user_id, r.agent_id, r.thread_id, value(r), r.expires_at is None)
                  for r in backing.list("memory", limit=None))


def test_bob_against_alice_gets_the_same_answers_from_both_colours(tmp_path):
    sync_store, async_store = _open(tmp_path / "sync.db"), _open(tmp_path / "async.db")
    try:
        sync_out, async_out = _run_sync(sync_store), _run_async(async_store)
        assert_colours_agree(sync_out, async_out, SCRIPT, _records(sync_store), _records(async_store))
        # nothing of Alice's was read, changed or deleted by Bob's stores
        seen = repr(sync_out)
        assert "green tea" not in seen and "passport X" not in seen and "namespaced note" not in seen
        hers = [r for r in _records(sync_store) if r[2] == ALICE]
        assert sorted(r[1] for r in hers) == ['{"text": "Alice drinks green tea"}',
                                              '{"text": "Alice\'s namespaced note"}',
                                              '{"text": "Alice\'s passport X1234567"}']
    finally:
        sync_store.close()
        async_store.close()


def test_every_langgraph_entry_point_is_in_the_script():
    scripted = {name for _, name, _, _ in SCRIPT}
    assert scripted >= {"get", "put", "delete", "search", "list_namespaces", "batch"}
