"""Red team of the adapters' user boundaries (after ``test_tenant_adapters``): user B acting
through one adapter on what user A keeps through another, on one store.

The LangGraph store names its records ``lg-<sha256 of (fixed scope, namespace, key)>``: a
predictable id. Another adapter that takes caller-chosen ids (the LangChain vector store's
``add_texts(ids=...)`` / ``Document.id``) can create a record of Bob's scope under the id of
Alice's future item; another ``OramemStore`` with the same fixed scope but a namespace-mapped
user computes the same id for a record of another scope. Alice's ``put`` must never write her
value into that record (it would be Bob's to read and would survive her ``forget``), her
``get`` must never return it, and her ``delete`` must never delete it."""

from __future__ import annotations

import asyncio
import json

import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")
require_extra("langgraph.store.base", "langgraph")

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langchain import OramemVectorStore  # noqa: E402
from oramem.integrations.langgraph import OramemStore  # noqa: E402

@pytest.fixture
def store():
    with SQLiteMemoryStore(search_strategy="keyword") as s:
        yield s


SECRET = {"card": "4111 1111 1111 1111", "passport": "X1234567"}


def _planted_meta(namespace: tuple[str, ...], key: str) -> dict:
    """Metadata that makes a record look like a LangGraph item of ``namespace`` / ``key``."""
    return {"langgraph": {"namespace": list(namespace), "key": key,
                          "prefixes": [json.dumps(list(namespace[: i + 1])) for i in range(len(namespace))],
                          "updated_at": "2000-01-01T00:00:00.000000+00:00"},
            "value": {"planted": "by bob"}}


def _plant(store, alice: OramemStore, namespace: tuple[str, ...], key: str) -> str:
    """Bob's vector store creates a record of his scope under the id of Alice's item."""
    rid = alice._record_id(namespace, key)
    assert OramemVectorStore(store, user_id="bob").add_texts(
        ["planted"], metadatas=[_planted_meta(namespace, key)], ids=[rid]) == [rid]
    return rid


def test_alices_put_never_writes_into_a_record_bob_planted_under_her_item_id(store):
    alice = OramemStore(store, user_id="alice")
    rid = _plant(store, alice, ("prefs",), "card")
    with pytest.raises(ValueError, match="another scope"):
        alice.put(("prefs",), "card", SECRET)
    # nothing of Alice's reached Bob's record or anything Bob can read
    bob_docs = OramemVectorStore(store, user_id="bob").get_by_ids([rid])
    assert [d.page_content for d in bob_docs] == ["planted"]
    assert all("X1234567" not in (r.content or "") and "X1234567" not in json.dumps(r.metadata)
               for r in store.list("memory", limit=None))
    # and Bob's planted record is not Alice's item
    assert alice.get(("prefs",), "card") is None
    assert alice.search(("prefs",)) == []


def test_alices_get_and_delete_ignore_a_record_of_another_scope_under_her_item_id(store):
    alice = OramemStore(store, user_id="alice")
    rid = _plant(store, alice, ("notes",), "k1")
    assert alice.get(("notes",), "k1") is None  # Bob's planted value is never shown as hers
    alice.delete(("notes",), "k1")
    record = store.get("memory", rid)  # Bob's record stays, untouched
    assert record is not None and record.user_id == "bob" and record.content == "planted"


def test_a_namespace_mapped_store_and_a_fixed_scope_store_never_share_a_record(store):
    """Both stores have the fixed scope (None, None, None), so (namespace, key) gives both the
    same record id; the mapped one puts user 'alice' (namespace label 1) on its records."""
    mapped = OramemStore(store, scope_from_namespace={"user_id": 1})
    unscoped = OramemStore(store)
    mapped.put(("memories", "alice"), "diet", {"text": "alice is allergic to peanuts"})
    assert unscoped.get(("memories", "alice"), "diet") is None
    with pytest.raises(ValueError, match="another scope"):
        unscoped.put(("memories", "alice"), "diet", {"text": "overwritten"})
    unscoped.delete(("memories", "alice"), "diet")
    item = mapped.get(("memories", "alice"), "diet")
    assert item is not None and item.value == {"text": "alice is allergic to peanuts"}
    (record,) = store.list("memory", limit=None)
    assert record.user_id == "alice"
    # her erasure takes it
    store.forget(user_id="alice")
    assert mapped.get(("memories", "alice"), "diet") is None and store.list("memory", limit=None) == []


async def test_async_put_and_get_keep_the_same_scope_check(store):
    alice = OramemStore(store, user_id="alice")
    rid = _plant(store, alice, ("prefs",), "card")
    with pytest.raises(ValueError, match="another scope"):
        await alice.aput(("prefs",), "card", SECRET)
    assert await alice.aget(("prefs",), "card") is None
    await alice.adelete(("prefs",), "card")
    assert store.get("memory", rid).content == "planted"
    # an item of her own scope still works end to end
    await alice.aput(("prefs",), "tea", {"kind": "green"})
    assert (await alice.aget(("prefs",), "tea")).value == {"kind": "green"}
    await alice.adelete(("prefs",), "tea")
    assert await alice.aget(("prefs",), "tea") is None


def test_another_scopes_put_never_deletes_alices_expired_item_under_the_same_id(store, monkeypatch):
    """As ``test_a_namespace_mapped_store_and_a_fixed_scope_store_never_share_a_record``, with
    her item expired (TTL) and not purged yet: the unscoped store's put is refused as for her
    live item, and her record stays for the store's purge (SC-5.4, SC-13.1)."""
    from datetime import datetime, timedelta, timezone

    import oramem.integrations.langgraph as lg

    mapped = OramemStore(store, scope_from_namespace={"user_id": 1})
    unscoped = OramemStore(store)
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc) - timedelta(days=3))
    mapped.put(("memories", "alice"), "diet", {"text": "alice is allergic to peanuts"}, ttl=5)
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc))
    assert mapped.get(("memories", "alice"), "diet") is None  # expired, not purged
    with pytest.raises(ValueError, match="expired record of another scope"):
        unscoped.put(("memories", "alice"), "diet", {"text": "overwritten"})
    with pytest.raises(ValueError, match="expired record of another scope"):
        asyncio.run(unscoped.aput(("memories", "alice"), "diet", {"text": "overwritten"}))
    # the look at the holder (a new expiry, SC-5.6) was rolled back with the refused put: her
    # record is still expired, and still hers, for the store's purge
    assert mapped.get(("memories", "alice"), "diet") is None
    assert store.purge_expired() == 1
