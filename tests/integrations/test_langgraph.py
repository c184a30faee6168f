"""OramemStore (LangGraph BaseStore) on SQLite: mapping, scope, strategies, filters, TTL, colours.

LangGraph's own store tests run against it too (tests/integrations/upstream_langgraph_plugin.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from integrations.extras import require_extra

require_extra("langgraph.store.base", "langgraph")

from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp  # noqa: E402

import oramem  # noqa: E402
from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.embedders.hashing import HashEmbedder  # noqa: E402
from oramem.integrations import langgraph as lg  # noqa: E402
from oramem.integrations.langgraph import OramemStore  # noqa: E402


@pytest.fixture(params=["vector", "keyword", "hybrid"])
def backing(request):
    kwargs = {"search_strategy": request.param}
    if request.param != "keyword":
        kwargs.update(embedder=HashEmbedder(64), vector_dim=64)
    with SQLiteMemoryStore(**kwargs) as store:
        yield store


def test_put_get_update_delete_round_trip(backing):
    store = OramemStore(backing)
    store.put(("prefs", "alice"), "coffee", {"text": "dark roast coffee", "n": 1})
    first = store.get(("prefs", "alice"), "coffee")
    assert first.value == {"text": "dark roast coffee", "n": 1}
    assert first.namespace == ("prefs", "alice") and first.key == "coffee"
    store.put(("prefs", "alice"), "coffee", {"text": "light roast coffee", "n": 2})
    second = store.get(("prefs", "alice"), "coffee")
    assert second.value["n"] == 2
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert len(backing.list("memory")) == 1  # an update, not a second record
    store.delete(("prefs", "alice"), "coffee")
    assert store.get(("prefs", "alice"), "coffee") is None
    assert backing.list("memory") == []


def test_query_search_uses_the_store_strategy(backing):
    store = OramemStore(backing)
    store.put(("docs",), "a", {"text": "espresso coffee beans"})
    store.put(("docs",), "b", {"text": "green tea leaves"})
    store.put(("docs",), "c", {"text": "coffee grinder"}, index=False)
    hits = store.search(("docs",), query="coffee beans", limit=3)
    assert hits[0].key == "a" and hits[0].score is not None
    # the non-indexed item comes after every scored one, without a score
    scores = [h.score for h in hits]
    assert next(h for h in hits if h.key == "c").score is None
    assert scores == sorted(scores, key=lambda s: s is None)  # scored first
    assert [h.key for h in store.search(("docs",), query="coffee beans", limit=1, offset=1)] != ["a"]


def test_index_fields_choose_the_retrieval_text():
    with SQLiteMemoryStore(search_strategy="keyword") as backing:
        store = OramemStore(backing, index_fields=["title"])
        store.put(("n",), "1", {"title": "volcano", "body": "penguin"})
        assert [h.key for h in store.search(("n",), query="volcano")] == ["1"]
        assert [h.score for h in store.search(("n",), query="penguin")] == [None]  # only filler, unscored
        store.put(("n",), "2", {"title": "x", "tags": ["penguin", "ice"]}, index=["tags[*]"])
        assert store.search(("n",), query="penguin")[0].key == "2"


def test_filters_follow_langgraph_operators(backing):
    store = OramemStore(backing)
    for i in range(5):
        store.put(("items",), f"k{i}", {"text": f"item {i}", "n": i, "color": "red" if i % 2 else "blue"})
    assert {h.key for h in store.search(("items",), filter={"color": "red"})} == {"k1", "k3"}
    assert {h.key for h in store.search(("items",), filter={"n": {"$gte": 3}})} == {"k3", "k4"}
    assert {h.key for h in store.search(("items",), filter={"n": {"$ne": 0}, "color": "blue"})} == {"k2", "k4"}
    assert {h.key for h in store.search(("items",), query="item", filter={"n": {"$lt": 2}})} == {"k0", "k1"}
    with pytest.raises(ValueError, match=r"\$regex"):
        store.search(("items",), filter={"n": {"$regex": "x"}})


def test_search_without_query_pages_newest_update_first(backing):
    store = OramemStore(backing)
    for i in range(4):
        store.put(("p",), f"k{i}", {"text": str(i)})
    store.put(("p",), "k0", {"text": "again"})
    keys = [h.key for h in store.search(("p",), limit=10)]
    assert keys[0] == "k0" and sorted(keys) == ["k0", "k1", "k2", "k3"]
    assert [h.key for h in store.search(("p",), limit=2, offset=1)] == keys[1:3]


def test_namespace_prefix_is_by_whole_labels(backing):
    store = OramemStore(backing)
    store.put(("a", "b"), "k", {"v": 1})
    store.put(("a", "bc"), "k", {"v": 2})
    store.put(("ab",), "k", {"v": 3})
    assert {h.value["v"] for h in store.search(("a",))} == {1, 2}
    assert {h.value["v"] for h in store.search(("a", "b"))} == {1}
    assert {h.value["v"] for h in store.search(())} == {1, 2, 3}
    assert store.list_namespaces() == [("a", "b"), ("a", "bc"), ("ab",)]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b"), ("a", "bc")]
    assert store.list_namespaces(suffix=("bc",)) == [("a", "bc")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("ab",)]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "bc")]


def test_fixed_scope_isolates_adapters_sharing_one_store(backing):
    alice = OramemStore(backing, user_id="alice")
    bob = OramemStore(backing, user_id="bob")
    unscoped = OramemStore(backing)
    alice.put(("m",), "k", {"text": "alice secret"})
    assert bob.get(("m",), "k") is None and unscoped.get(("m",), "k") is None
    assert bob.search(("m",)) == [] and unscoped.search(("m",), query="secret") == []
    assert bob.list_namespaces() == [] and unscoped.list_namespaces() == []
    bob.put(("m",), "k", {"text": "bob's"})
    assert alice.get(("m",), "k").value == {"text": "alice secret"}
    assert {r.user_id for r in backing.list("memory")} == {"alice", "bob"}


def test_scope_from_namespace_lets_the_store_forget_an_actor(backing):
    store = OramemStore(backing, scope_from_namespace={"user_id": 1})
    store.put(("memories", "alice"), "k1", {"text": "likes tea"})
    store.put(("memories", "bob"), "k1", {"text": "likes coffee"})
    assert backing.get("memory", backing.list("memory")[0].id).user_id in {"alice", "bob"}
    assert [h.value["text"] for h in store.search(("memories", "alice"), query="likes")] == ["likes tea"]
    backing.delete("user_profile", "alice", cascade=True)
    assert store.get(("memories", "alice"), "k1") is None
    assert store.get(("memories", "bob"), "k1").value == {"text": "likes coffee"}


def test_ttl_hides_expired_items_at_once_and_refreshes_on_read(backing, monkeypatch):
    clock = [datetime(2030, 1, 1, tzinfo=timezone.utc)]
    monkeypatch.setattr(lg, "_now", lambda: clock[0])
    store = OramemStore(backing)
    store.put(("t",), "short", {"text": "x"}, ttl=5)
    store.put(("t",), "forever", {"text": "y"})
    record = backing.list("memory")[0]
    assert record.expires_at is not None or backing.list("memory")[1].expires_at is not None
    clock[0] += timedelta(minutes=4)
    assert store.get(("t",), "short") is not None  # read refreshes: 5 more minutes from now
    clock[0] += timedelta(minutes=4)
    assert store.get(("t",), "short", refresh_ttl=False) is not None
    clock[0] += timedelta(minutes=2)
    assert store.get(("t",), "short") is None
    assert [h.key for h in store.search(("t",))] == ["forever"]
    assert store.list_namespaces() == [("t",)]


def test_put_over_an_expired_item_the_store_has_not_purged(backing, monkeypatch):
    # the store's expiry is in whole days from the item's timestamp: an item written three
    # days ago with a 5-minute TTL is expired (invisible) but still stored until a purge
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc) - timedelta(days=3))
    store = OramemStore(backing)
    store.put(("t",), "k", {"text": "old"}, ttl=5)
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc))
    assert store.get(("t",), "k") is None
    store.put(("t",), "k", {"text": "new"})
    assert store.get(("t",), "k").value == {"text": "new"}
    assert [r.content for r in backing.list("memory")] == ['{"text": "new"}']


def test_bobs_put_over_his_expired_item_leaves_alices_items(backing, monkeypatch):
    # one store, scope per user: Bob's put over his expired, unpurged item replaces that
    # record alone; Alice's live item (same key, her scope) stays as it was, and so does her
    # expired, unpurged one (another key): his put purges nothing of hers
    store = OramemStore(backing, scope_from_namespace={"user_id": 1})
    store.put(("memories", "alice"), "k", {"text": "alice's note"})
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc) - timedelta(days=3))
    store.put(("memories", "bob"), "k", {"text": "bob's old note"}, ttl=5)
    store.put(("memories", "alice"), "old", {"text": "alice's old note"}, ttl=5)
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc))
    store.put(("memories", "bob"), "k", {"text": "bob's new note"})
    assert store.get(("memories", "alice"), "k").value == {"text": "alice's note"}
    assert store.get(("memories", "bob"), "k").value == {"text": "bob's new note"}
    assert sorted((r.user_id, r.content) for r in backing.list("memory")) == [
        ("alice", '{"text": "alice\'s note"}'), ("bob", '{"text": "bob\'s new note"}')]
    assert backing.purge_expired() == 1  # Alice's expired item was left to the store's purge


def test_a_put_the_store_refuses_for_another_reason_purges_nothing(backing, monkeypatch):
    # only an id clash (DuplicateRecordError) sends put through the delete of the expired
    # holder and a second add; a put refused for anything else (here Bob's user id from the namespace is too
    # long) leaves the store as it was: Alice's expired, unpurged item is still there to purge
    store = OramemStore(backing, scope_from_namespace={"user_id": 1})
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc) - timedelta(days=3))
    store.put(("memories", "alice"), "k", {"text": "alice's old note"}, ttl=5)
    monkeypatch.setattr(lg, "_now", lambda: datetime.now(timezone.utc))
    with pytest.raises(ValueError) as refused:
        store.put(("memories", "b" * 600), "k", {"text": "bob's note"})
    assert not isinstance(refused.value, oramem.DuplicateRecordError)
    assert backing.purge_expired() == 1


def test_default_ttl_and_bad_ttl():
    with SQLiteMemoryStore(search_strategy="keyword") as backing:
        store = OramemStore(backing, ttl={"default_ttl": 60})
        store.put(("t",), "k", {"a": 1})
        assert backing.list("memory")[0].expires_at is not None
        with pytest.raises(ValueError, match="minutes"):
            store.put(("t",), "k", {"a": 1}, ttl=-1)
        with pytest.raises(ValueError, match="sweep_interval_minutes"):
            OramemStore(backing, ttl={"sweep_interval_minutes": 5})


def test_batch_runs_in_order_and_validates_before_writing(backing):
    store = OramemStore(backing)
    results = store.batch(
        [
            PutOp(("b",), "k", {"text": "one"}),
            GetOp(("b",), "k"),
            SearchOp(("b",), query="one"),
            PutOp(("b",), "k", None),
            GetOp(("b",), "k"),
        ]
    )
    assert results[0] is None and results[1].value == {"text": "one"}
    assert [h.key for h in results[2]] == ["k"] and results[3] is None and results[4] is None
    with pytest.raises(TypeError):
        store.batch([PutOp(("b",), "ok", {"a": 1}), PutOp(("b",), "bad", {"a": object()})])
    assert store.get(("b",), "ok") is None  # nothing of the bad batch was written
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"a": 1})


async def test_async_colour_matches_sync(backing):
    store = OramemStore(backing)
    await store.aput(("a",), "k", {"text": "async coffee"})
    assert (await store.aget(("a",), "k")).value == store.get(("a",), "k").value
    assert [h.key for h in await store.asearch(("a",), query="coffee")] == ["k"]
    assert await store.alist_namespaces() == [("a",)]
    await store.adelete(("a",), "k")
    assert store.get(("a",), "k") is None


def test_query_on_an_unindexed_adapter_is_an_error():
    with SQLiteMemoryStore(search_strategy="keyword") as backing:
        store = OramemStore(backing, index_fields=None)
        store.put(("x",), "k", {"text": "hello"})
        assert [h.key for h in store.search(("x",))] == ["k"]
        with pytest.raises(ValueError, match="index_fields"):
            store.search(("x",), query="hello")


def test_bad_configuration_is_refused():
    with SQLiteMemoryStore(search_strategy="keyword") as backing:
        with pytest.raises(ValueError, match="record_type"):
            OramemStore(backing, record_type="user_profile")
        with pytest.raises(ValueError, match="both fixed"):
            OramemStore(backing, user_id="u", scope_from_namespace={"user_id": 1})
        with pytest.raises(ValueError, match="scope_from_namespace"):
            OramemStore(backing, scope_from_namespace={"org": 1})
        with pytest.raises(ValueError, match="dims"):
            OramemStore.from_index_config({"embed": lambda texts: [[0.0]]})


def test_from_index_config_embeds_with_a_langgraph_embed_function():
    def embed(texts):
        return [[float(len(t)), 1.0, float(t.count("a"))] for t in texts]

    store = OramemStore.from_index_config({"dims": 3, "embed": embed, "fields": ["text"]})
    store.put(("e",), "k", {"text": "banana"})
    assert store.index_config["dims"] == 3 and store.search(("e",), query="banana")[0].key == "k"


@pytest.mark.parametrize("with_index", [False, True])
def test_from_index_config_refuses_an_unknown_argument_before_opening_the_file(tmp_path, with_index):
    """kw37: an argument OramemStore does not take was a TypeError from Python only after the
    SQLite file had been created; now it is named, with what is accepted, and nothing is opened."""
    path = tmp_path / "lg.db"
    index = {"dims": 3, "embed": lambda texts: [[1.0, 0.0, 0.0] for _ in texts]} if with_index else None
    with pytest.raises(TypeError, match="from_index_config has no argument 'namespace'; it accepts index, path, user_id"):
        OramemStore.from_index_config(index, path=str(path), namespace=("a",))
    assert not path.exists()
    if with_index:
        with pytest.raises(TypeError, match=r"'index_fields' \(with index=, give the fields as index\['fields'\]\)"):
            OramemStore.from_index_config(index, path=str(path), index_fields=["text"])
        assert not path.exists()
    made = OramemStore.from_index_config(index, path=str(path), user_id="alice")
    made.put(("n",), "k", {"text": "x"})
    assert made._store.get("memory", made._record_id(("n",), "k")).user_id == "alice"


@pytest.mark.parametrize("with_index", [False, True])
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"record_type": "user_profile"}, "record_type must be one of"),
        ({"user_id": " "}, "user_id must be a non-empty str"),
        ({"scope_from_namespace": {"user_id": -1}}, "must be a namespace position"),
        ({"ttl": {"default_ttl": 0}}, "ttl is in minutes and must be a positive number"),
        ({"ttl": {"sweep_interval_minutes": 5}}, "sweep_interval_minutes is not used"),
    ],
)
def test_from_index_config_refuses_a_bad_constructor_value_before_opening_the_file(tmp_path, with_index, kwargs, message):
    """A value OramemStore's constructor refuses was refused only after the SQLite file had
    been created (kw37 noticed): the file stayed behind. The constructor's checks now run
    before the file is opened; with index=, its fields are checked as index_fields."""
    path = tmp_path / "lg.db"
    index = {"dims": 3, "embed": lambda texts: [[1.0, 0.0, 0.0] for _ in texts]} if with_index else None
    with pytest.raises(ValueError, match=message):
        OramemStore.from_index_config(index, path=str(path), **kwargs)
    assert not path.exists()


def test_from_index_config_checks_the_index_fields_before_opening_the_file(tmp_path):
    path = tmp_path / "lg.db"
    index = {"dims": 3, "embed": lambda texts: [[1.0, 0.0, 0.0] for _ in texts], "fields": ["text", ""]}
    with pytest.raises(ValueError, match="index_fields must be a list of field paths"):
        OramemStore.from_index_config(index, path=str(path))
    assert not path.exists()
