"""The LangChain adapter's multi-record deletes lock in one canonical order (ora31).

``OramemVectorStore.delete(ids)`` reads each record (its scope check) and deletes it, in one
store transaction; on Oracle each read inside the block locks its row until the block ends
(``get_json`` with ``in_lock = 1``, SC-12.10). In the caller's order, two deletes naming the
same records in opposite orders would each lock one and wait for the other (ORA-00060, one of
them rolled back). The reads and deletes now go out sorted by id on both engines, whatever the
caller's order; the chat history's ``clear()`` deletes each type's records sorted by id too.
Static-checked on Oracle (the recording fake), not run against Oracle."""

from __future__ import annotations


import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.integrations.langchain import OramemChatMessageHistory, OramemVectorStore  # noqa: E402

IDS = ["doc-c", "doc-a", "doc-d", "doc-b"]
ORDERS = [["doc-c", "doc-a", "doc-d", "doc-b"], ["doc-b", "doc-d", "doc-a", "doc-c", "doc-a"]]


def _spy(monkeypatch, store):
    """(method, record id) of every get and delete the store is asked for, in order."""
    seen: list[tuple[str, str]] = []
    for name in ("get", "delete"):
        real = getattr(store, name)

        def spy(record_type, record_id, *a, _real=real, _name=name, **kw):
            seen.append((_name, record_id))
            return _real(record_type, record_id, *a, **kw)

        monkeypatch.setattr(store, name, spy)
    return seen


@pytest.mark.parametrize("order", ORDERS, ids=["cadb", "bdaca"])
def test_sqlite_deletes_read_and_delete_in_sorted_id_order(tmp_path, monkeypatch, order):
    with SQLiteMemoryStore(str(tmp_path / "lc.db"), search_strategy="keyword") as store:
        bob = OramemVectorStore(store, user_id="bob", agent_id="desk")
        assert bob.add_texts([f"page {i}" for i in IDS], ids=IDS) == IDS
        seen = _spy(monkeypatch, store)
        assert bob.delete(order) is True
        ids = sorted(IDS)
        assert seen == [("get", i) for i in ids] + [("delete", i) for i in ids]
        assert bob.get_by_ids(IDS) == []


def test_sqlite_chat_history_clear_deletes_in_sorted_id_order(tmp_path, monkeypatch):
    with SQLiteMemoryStore(str(tmp_path / "lc.db"), search_strategy="keyword") as store:
        history = OramemChatMessageHistory(store, "t1", user_id="bob")
        store.add(["one", "two", "three"], "message", record_ids=["m-c", "m-a", "m-b"], thread_ids="t1",
                  user_ids="bob", roles=["human", "ai", "human"])  # listed oldest first: c, a, b
        assert [m.content for m in history.messages] == ["one", "two", "three"]
        seen = _spy(monkeypatch, store)
        history.clear()
        assert [rid for name, rid in seen if name == "delete"] == ["m-a", "m-b", "m-c"]
        assert history.messages == []


def test_a_non_string_id_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    with SQLiteMemoryStore(str(tmp_path / "lc.db"), search_strategy="keyword") as store:
        bob = OramemVectorStore(store, user_id="bob", agent_id="desk")
        seen = _spy(monkeypatch, store)
        with pytest.raises(TypeError, match="delete ids must be strings"):
            bob.delete(["doc-a", 7])
        assert seen == []


@pytest.mark.parametrize("order", ORDERS, ids=["cadb", "bdaca"])
def test_oracle_deletes_lock_and_delete_in_sorted_id_order(order):
    """Over the recording fake: the block's ``get_json`` calls (``in_lock = 1``: each locks its
    row) and ``delete_record_json`` calls go out sorted by id, on one connection, before one
    commit."""
    from oracle.plsql_standin import standin_store

    store, rec = standin_store()
    try:
        bob = OramemVectorStore(store, user_id="bob", agent_id="desk")
        assert bob.add_texts([f"page {i}" for i in IDS], ids=IDS) == IDS
        start = len(rec.calls)
        assert bob.delete(order) is True
        calls = [c for c in rec.calls[start:] if c.name in ("oramem_store.get_json", "oramem_store.delete_record_json")]
        ids = sorted(IDS)
        assert [(c.name, c.binds["in_record_id"]) for c in calls] == (
            [("oramem_store.get_json", i) for i in ids] + [("oramem_store.delete_record_json", i) for i in ids])
        assert all(c.binds["in_lock"] == 1 for c in calls if c.name == "oramem_store.get_json")
        assert len({c.conn for c in calls}) == 1
        commits = [c for c in rec.calls[start:] if c.kind == "commit" and c.conn == calls[0].conn]
        assert commits and rec.calls.index(commits[0]) > rec.calls.index(calls[-1])
    finally:
        store.close()
