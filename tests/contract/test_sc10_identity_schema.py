"""SC-10: store identity, schema policies, persisted settings, index sync; SC-11 errors."""

from __future__ import annotations

import secrets
import subprocess
import sys
import threading
from datetime import timedelta

import pytest

from oramem import (
    MemoryRetentionConfig,
    SchemaError,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
    StoreError,
    StoreNotFound,
    StoreSettingsMismatch,
)

from ._support import hit_ids, ids, parse_ts, vec


# ---------------------------------------------------------------- SC-10.1 identity
@pytest.mark.parametrize("sid", ["a", "A_1", "store_2", "Z" * 16])
def test_sc_10_1_valid_ids(make_store, sid):
    # RECREATE: on Oracle an unmapped (16-char) id may survive from an earlier run
    s = make_store(memory_store_id=sid, raw_id=len(sid) > 8, schema_policy=SchemaPolicy.RECREATE)
    s.add(["x"], record_type="memory", record_ids="m1")
    assert ids(s.list("memory")) == ["m1"]


@pytest.mark.parametrize("sid", ["", "1abc", "_a", "a-b", "a b", "A" * 17, "é", "a.b", "a;drop"])
def test_sc_10_1_invalid_ids_rejected(make_store, sid):
    with pytest.raises(ValueError) as ei:
        make_store(memory_store_id=sid, raw_id=True)
    assert "memory_store_id" in str(ei.value)


def test_sc_10_1_non_string_id_rejected(make_store):
    with pytest.raises((TypeError, ValueError)):
        make_store(memory_store_id=123, raw_id=True)


def test_sc_10_1_case_insensitive(make_store):
    a = make_store(memory_store_id="Alpha")
    a.add(["x"], record_type="memory", record_ids="m1")
    a.close()
    b = make_store(memory_store_id="ALPHA")
    assert ids(b.list("memory")) == ["m1"]
    c = make_store(memory_store_id="alpha", schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert ids(c.list("memory")) == ["m1"]


def test_sc_10_1_stores_side_by_side_are_isolated(make_store):
    s1 = make_store(memory_store_id="s1")
    s2 = make_store(memory_store_id="s2")
    d = make_store()
    s1.add(["zebra one"], record_type="memory", record_ids="same", thread_ids="t", embeddings=[vec(1)])
    s2.add(["zebra two"], record_type="memory", record_ids="same", thread_ids="t", embeddings=[vec(1)])
    d.add(["zebra default"], record_type="memory", record_ids="other", thread_ids="t", embeddings=[vec(1)])
    s1.add_user("u1", "s1 user")
    assert s1.get("memory", "same").content == "zebra one"
    assert s2.get("memory", "same").content == "zebra two"
    assert ids(d.list("memory")) == ["other"]
    assert s2.get("user_profile", "u1") is None
    assert hit_ids(s2.search(query_vector=vec(1), k=10)) == ["same"]
    assert [r.content for r, _ in s2.search(query_vector=vec(1), k=10)] == ["zebra two"]
    # deletes stay within their store
    assert s1.delete_thread("t") == 1
    assert s1.get("memory", "same") is None
    assert s2.get("memory", "same").content == "zebra two"
    assert d.get("memory", "other") is not None
    assert s2.delete("memory", "same") == 1
    assert d.delete_thread("t") == 1


def test_sc_10_1_purge_isolated(make_store):
    s1 = make_store(memory_store_id="s1")
    s2 = make_store(memory_store_id="s2")
    for s in (s1, s2):
        s.add([""], record_type="memory", record_ids="e", timestamps="2020-01-01T00:00:00Z", ttl_days=1,
              ttl_anchor="timestamp")
    assert s1.purge_expired() == 1
    assert s2.purge_expired() == 1


def test_sc_10_1_table_name_prefix_deprecated(make_store, oracle_only):
    """OracleDBMemoryStore only: table_name_prefix is a deprecated alias of memory_store_id."""
    prefix = "TP" + secrets.token_hex(3)
    with pytest.warns(DeprecationWarning, match="memory_store_id"):
        s = make_store(table_name_prefix=prefix, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, raw_id=True)
    s.add(["x"], record_type="memory", record_ids="m1")
    s2 = make_store(memory_store_id=prefix, schema_policy=SchemaPolicy.REQUIRE_EXISTING, raw_id=True)
    assert ids(s2.list("memory")) == ["m1"]


def test_sc_10_1_table_name_prefix_and_id_is_error(make_store, oracle_only):
    with pytest.raises((ValueError, TypeError)):
        make_store(table_name_prefix="TPX", memory_store_id="TPX", raw_id=True)


def test_sc_10_1_sqlite_has_no_table_name_prefix():
    import inspect

    from oramem import SQLiteMemoryStore

    assert "table_name_prefix" not in inspect.signature(SQLiteMemoryStore).parameters


# ---------------------------------------------------------------- SC-10.2 policies
def test_sc_10_2_require_existing_missing_store(make_store):
    with pytest.raises(StoreNotFound) as ei:
        make_store(memory_store_id="ghost", schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert isinstance(ei.value, SchemaError) and isinstance(ei.value, StoreError)
    assert "create_if" in str(ei.value).lower()  # names the policy to use instead


def test_sc_10_2_require_existing_other_id_in_existing_file(make_store):
    make_store().add(["x"], record_type="memory")
    with pytest.raises(StoreNotFound):
        make_store(memory_store_id="other", schema_policy="require_existing")


def test_sc_10_2_require_existing_creates_no_file(make_store, tmp_path, sqlite_only):
    path = tmp_path / "absent.db"
    with pytest.raises(StoreNotFound):
        make_store(path=str(path), schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert not path.exists()


def test_sc_10_2_require_existing_opens_existing(make_store):
    make_store(memory_store_id="rx").add(["x"], record_type="memory", record_ids="m1")
    s = make_store(memory_store_id="rx", schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert ids(s.list("memory")) == ["m1"]
    s.add(["y"], record_type="memory", record_ids="m2")
    assert ids(s.list("memory")) == ["m1", "m2"]


def test_sc_10_2_create_if_empty(make_store):
    s = make_store(memory_store_id="ce", schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    s.add(["x"], record_type="memory", record_ids="m1")
    s2 = make_store(memory_store_id="ce", schema_policy="create_if_empty")
    assert ids(s2.list("memory")) == ["m1"]


def test_sc_10_2_recreate_wipes(make_store):
    s = make_store(memory_store_id="rc")
    s.add(["x"], record_type="memory", record_ids="m1", thread_ids="t")
    s.add_user("u1", "info")
    s.close()
    s2 = make_store(memory_store_id="rc", schema_policy=SchemaPolicy.RECREATE)
    assert s2.list("memory") == [] and s2.list("user_profile") == []
    assert s2.delete_thread("t") == 0
    assert s2.add(["y"], record_type="memory", record_ids="m1") == ["m1"]


def test_sc_10_2_recreate_only_touches_its_store(make_store):
    keep = make_store(memory_store_id="keep")
    keep.add(["x"], record_type="memory", record_ids="k1")
    make_store(memory_store_id="wipe").add(["x"], record_type="memory", record_ids="w1")
    make_store(memory_store_id="wipe", schema_policy=SchemaPolicy.RECREATE)
    assert ids(keep.list("memory")) == ["k1"]


@pytest.mark.parametrize("bad", ["sometimes", "create"])
def test_sc_10_2_unknown_policy_rejected(make_store, bad):
    with pytest.raises(ValueError):
        make_store(schema_policy=bad)


def test_sc_10_2_upgrade_vector_to_keyword(make_store):
    v = make_store(memory_store_id="up")
    v.add(["zebra before upgrade"], record_type="memory", record_ids="m1")
    v.close()
    with pytest.raises(SchemaError) as ei:
        make_store(memory_store_id="up", embedder=None, search_strategy=SearchStrategy.KEYWORD,
                   schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert "create_if_necessary" in str(ei.value).lower() or "strategy" in str(ei.value).lower()
    k = make_store(memory_store_id="up", embedder=None, search_strategy=SearchStrategy.KEYWORD,
                   schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert hit_ids(k.search("zebra", k=5)) == ["m1"]
    k.add(["zebra after"], record_type="memory", record_ids="m2")
    assert sorted(hit_ids(k.search("zebra", k=5))) == ["m1", "m2"]


def test_sc_10_2_upgrade_vector_to_hybrid(make_store, hybrid_capable):
    v = make_store(memory_store_id="uph")
    v.add(["zebra before upgrade"], record_type="memory", record_ids="m1")
    v.close()
    h = make_store(memory_store_id="uph", search_strategy=SearchStrategy.HYBRID,
                   schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert hit_ids(h.search("zebra", k=5, strategy="keyword")) == ["m1"]
    assert hit_ids(h.search("zebra", k=5)) == ["m1"]


# ---------------------------------------------------------------- SC-10.3 concurrency
def test_sc_10_3_concurrent_create_threads(make_store, engine, tmp_path):
    """Several openers race with CREATE_IF_NECESSARY on one store: all succeed, one store."""
    errors: list[BaseException] = []
    stores = []
    lock = threading.Lock()
    barrier = threading.Barrier(4)

    def opener(i: int) -> None:
        try:
            barrier.wait()
            s = make_store(memory_store_id="race", schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
            s.add([f"r{i}"], record_type="memory", record_ids=f"r{i}")
            with lock:
                stores.append(s)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=opener, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for exc in errors:
        if isinstance(exc, pytest.skip.Exception):
            raise exc
    assert errors == []
    assert sorted(ids(stores[0].list("memory"))) == ["r0", "r1", "r2", "r3"]


_CHILD = r"""
import sys
from oramem import SQLiteMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder
path, i = sys.argv[1], sys.argv[2]
s = SQLiteMemoryStore(path, embedder=HashEmbedder(dim=64), memory_store_id="race",
                      schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
s.add(["p" + i], record_type="memory", record_ids="p" + i)
s.close()
"""


def test_sc_10_3_concurrent_create_processes(tmp_path, sqlite_only):
    from oramem import SQLiteMemoryStore
    from oramem.embedders import HashEmbedder

    path = str(tmp_path / "race.db")
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, path, str(i)], stderr=subprocess.PIPE)
             for i in range(4)]
    outs = [(p.wait(60), p.stderr.read().decode()) for p in procs]
    assert [rc for rc, _ in outs] == [0, 0, 0, 0], [err for _, err in outs]
    with SQLiteMemoryStore(path, embedder=HashEmbedder(dim=64), memory_store_id="race",
                           schema_policy=SchemaPolicy.REQUIRE_EXISTING) as s:
        assert sorted(ids(s.list("memory"))) == ["p0", "p1", "p2", "p3"]


# ---------------------------------------------------------------- SC-10.4 persisted settings
def test_sc_10_4_vector_dim_mismatch_names_setting(make_store):
    from oramem.embedders import HashEmbedder

    make_store(memory_store_id="vd").add(["x"], record_type="memory")
    with pytest.raises(StoreSettingsMismatch) as ei:
        make_store(memory_store_id="vd", embedder=HashEmbedder(dim=32))
    assert "vector_dim" in str(ei.value)
    with pytest.raises(StoreSettingsMismatch) as ei:
        make_store(memory_store_id="vd", embedder=None, vector_dim=128)
    assert "vector_dim" in str(ei.value)


def test_sc_10_4_vector_dim_adopted_when_omitted(make_store):
    make_store(memory_store_id="vd").add(["x"], record_type="memory")
    s = make_store(memory_store_id="vd", embedder=None)
    s.add(["y"], record_type="memory", record_ids="y", embeddings=[vec(2)])
    assert hit_ids(s.search(query_vector=vec(2), k=1)) == ["y"]
    with pytest.raises(ValueError):
        s.add(["z"], record_type="memory", embeddings=[vec(2, dim=32)])


def test_sc_10_4_retention_mismatch_names_setting(make_store):
    make_store(memory_store_id="rt", memory_retention_config=MemoryRetentionConfig(default_ttl_days=7))
    with pytest.raises(StoreSettingsMismatch) as ei:
        make_store(memory_store_id="rt", memory_retention_config=MemoryRetentionConfig(default_ttl_days=3),
                   schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert "retention" in str(ei.value)


def test_sc_10_4_retention_persisted_and_adopted(make_store):
    make_store(memory_store_id="rt", memory_retention_config=MemoryRetentionConfig(default_ttl_days=7)).close()
    s = make_store(memory_store_id="rt")
    s.add(["x"], record_type="memory", record_ids="m1")
    r = s.get("memory", "m1")
    assert abs(parse_ts(r.expires_at) - parse_ts(r.created_at) - timedelta(days=7)) <= timedelta(seconds=1)


def test_sc_10_4_retention_updated_by_create_if_necessary(make_store):
    """Vendor doc: with CREATE_IF_NECESSARY an explicit retention config updates the stored one."""
    make_store(memory_store_id="rt", memory_retention_config=MemoryRetentionConfig(default_ttl_days=7)).close()
    make_store(memory_store_id="rt", memory_retention_config=MemoryRetentionConfig(default_ttl_days=3),
               schema_policy=SchemaPolicy.CREATE_IF_NECESSARY).close()
    s = make_store(memory_store_id="rt")
    s.add(["x"], record_type="memory", record_ids="m1")
    r = s.get("memory", "m1")
    assert abs(parse_ts(r.expires_at) - parse_ts(r.created_at) - timedelta(days=3)) <= timedelta(seconds=1)


def test_sc_10_4_strategy_mismatch_names_setting(make_store):
    make_store(memory_store_id="st", embedder=None, search_strategy=SearchStrategy.KEYWORD).close()
    with pytest.raises(SchemaError) as ei:
        make_store(memory_store_id="st", search_strategy=SearchStrategy.VECTOR,
                   schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert "strategy" in str(ei.value).lower() or "vector_dim" in str(ei.value)


def test_sc_10_4_sync_mode_mismatch_names_setting(make_store):
    make_store(memory_store_id="sy", embedder=None, search_strategy=SearchStrategy.KEYWORD,
               search_index_sync=SearchIndexSyncMode.ON_COMMIT).close()
    with pytest.raises(StoreSettingsMismatch) as ei:
        make_store(memory_store_id="sy", embedder=None, search_strategy=SearchStrategy.KEYWORD,
                   search_index_sync=SearchIndexSyncMode.MANUAL, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert "search_index_sync" in str(ei.value)


# ---------------------------------------------------------------- SC-10.5 index sync
def test_sc_10_5_manual_sync_makes_rows_searchable(make_store):
    s = make_store(embedder=None, search_strategy=SearchStrategy.KEYWORD,
                   search_index_sync=SearchIndexSyncMode.MANUAL)
    s.add(["zebra"], record_type="memory", record_ids="m1")
    s.sync_search_index()
    assert hit_ids(s.search("zebra", k=5)) == ["m1"]
    s.update("memory", "m1", text="walrus")
    s.sync_search_index()
    assert hit_ids(s.search("walrus", k=5)) == ["m1"]
    assert s.search("zebra", k=5) == []


def test_sc_10_5_manual_defers_until_sync(make_store):
    s = make_store(embedder=None, search_strategy=SearchStrategy.KEYWORD,
                   search_index_sync=SearchIndexSyncMode.MANUAL)
    s.add(["zebra"], record_type="memory", record_ids="m1")
    assert s.search("zebra", k=5) == []
    s.sync_search_index()
    assert hit_ids(s.search("zebra", k=5)) == ["m1"]


def test_sc_10_5_on_commit_is_immediate(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="m1")
    assert hit_ids(kw_store.search("zebra", k=5)) == ["m1"]


@pytest.mark.parametrize("strategy", [SearchStrategy.KEYWORD, SearchStrategy.VECTOR])
def test_sc_10_5_auto_only_with_hybrid(make_store, strategy):
    extra = {"embedder": None} if strategy is SearchStrategy.KEYWORD else {}
    with pytest.raises(ValueError) as ei:
        make_store(search_strategy=strategy, search_index_sync=SearchIndexSyncMode.AUTO, **extra)
    assert "auto" in str(ei.value).lower()


def test_sc_10_5_auto_with_hybrid_accepted(make_store, hybrid_capable):
    s = make_store(search_strategy=SearchStrategy.HYBRID, search_index_sync=SearchIndexSyncMode.AUTO)
    s.add(["zebra"], record_type="memory", record_ids="m1")
    s.sync_search_index()
    assert hit_ids(s.search("zebra", k=5)) == ["m1"]


def test_sc_10_5_sync_on_vector_store_is_harmless(store):
    store.add(["x"], record_type="memory", record_ids="m1")
    store.sync_search_index()
    assert ids(store.list("memory")) == ["m1"]


# ---------------------------------------------------------------- SC-11 errors
def test_sc_11_error_hierarchy():
    assert issubclass(SchemaError, StoreError)
    assert issubclass(StoreNotFound, SchemaError)
    assert issubclass(StoreSettingsMismatch, SchemaError)
    assert not issubclass(StoreError, ValueError)


def test_sc_11_context_manager_closes(make_store):
    s = make_store()
    with s as entered:
        assert entered is s
        s.add(["x"], record_type="memory", record_ids="m1")
    s2 = make_store()
    assert ids(s2.list("memory")) == ["m1"]


def test_sc_10_2_create_if_empty_for_new_id_in_used_file(make_store):
    make_store(memory_store_id="s1").add(["x"], record_type="memory", record_ids="a")
    s2 = make_store(memory_store_id="s2", schema_policy=SchemaPolicy.CREATE_IF_EMPTY)
    assert s2.list("memory") == []
    s2.add(["y"], record_type="memory", record_ids="b")
    assert ids(make_store(memory_store_id="s1").list("memory")) == ["a"]


def _break_store(path: str, store_id: str) -> str:
    """Drop one of the store's own tables behind its back (found by name, not hard-coded)."""
    from oramem.sqlite._sqlite import sqlite3

    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
                 if store_id.lower() in n.lower()]
        assert len(names) >= 2, names
        victim = sorted(n for n in names if "record" not in n.lower())[0]
        conn.execute(f'DROP TABLE "{victim}"')
        conn.commit()
        return victim
    finally:
        conn.close()


def test_sc_10_2_partial_store_policies(make_store, tmp_path, sqlite_only):
    """SQLite: a store missing one of its objects fails REQUIRE_EXISTING and CREATE_IF_EMPTY
    with an error naming the policy to use; CREATE_IF_NECESSARY repairs it."""
    path = str(tmp_path / "partial.db")
    s = make_store(path=path, memory_store_id="PART")
    s.add([""], record_type="memory", record_ids="kept")
    s.close()
    _break_store(path, "PART")
    for policy in (SchemaPolicy.REQUIRE_EXISTING, SchemaPolicy.CREATE_IF_EMPTY):
        with pytest.raises(SchemaError) as ei:
            make_store(path=path, memory_store_id="PART", schema_policy=policy)
        msg = str(ei.value).lower()
        assert "create_if_necessary" in msg or "recreate" in msg, msg
    fixed = make_store(path=path, memory_store_id="PART", schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    fixed.add(["zebra"], record_type="memory", record_ids="new")
    assert "new" in ids(fixed.list("memory"))
    assert hit_ids(fixed.search("zebra", k=1)) == ["new"]
