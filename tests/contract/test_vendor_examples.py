"""Every code example of store-api.pt.txt (the vendor doc), run against each engine with
the documented outputs asserted. The doc runs them on one shared store; here each example
gets a fresh store plus the records it builds on."""

from __future__ import annotations

from oramem import PendingRecordBatch, TimeToLiveAnchor


def test_doc_add_batches(store):
    assert store.add_batches(
        [
            PendingRecordBatch(
                texts=["pizza batch"],
                record_type="memory",
                record_ids="mem-batch-docs",
            )
        ]
    ) == ["mem-batch-docs"]
    assert store.get("memory", "mem-batch-docs").content == "pizza batch"


def test_doc_db_add(store):
    assert store.add(["Index this stored text"], record_type="memory", record_ids="mem-db-add-docs") == [
        "mem-db-add-docs"]
    assert store.add(["Stored text"], record_type="memory", index_texts=["Search this text"],
                     record_ids="mem-db-index-text-docs") == ["mem-db-index-text-docs"]
    assert store.get("memory", "mem-db-index-text-docs").content == "Stored text"


def test_doc_db_add_ttl(store):
    assert store.add(
        ["Short-lived event"],
        record_type="memory",
        record_ids="mem-db-ttl-docs",
        timestamps="2026-01-01T12:00:00+00:00",
        ttl_days=7,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    ) == ["mem-db-ttl-docs"]


def test_doc_add_agent(store):
    assert store.add_agent("a-docs-agent", "Support assistant") == "a-docs-agent"


def test_doc_add_user(store):
    assert store.add_user("u-docs-profile", "Prefers concise answers.") == "u-docs-profile"


def test_doc_delete(store):
    assert store.add(["Delete me"], record_type="memory", record_ids="mem-delete-docs") == ["mem-delete-docs"]
    assert store.delete("memory", "mem-delete-docs") == 1


def test_doc_delete_thread(store):
    assert store.delete_thread("c1") == 0


def test_doc_get(store):
    assert store.add(["Remember this"], record_type="memory", record_ids="mem-get-docs") == ["mem-get-docs"]
    assert store.get("memory", "mem-get-docs").id == "mem-get-docs"


def test_doc_list(store):
    assert store.add(
        ["First listed", "Second listed"],
        record_type="memory",
        record_ids=["mem-list-docs-1", "mem-list-docs-2"],
    ) == ["mem-list-docs-1", "mem-list-docs-2"]
    assert [record.id for record in store.list("memory", limit=2)] == ["mem-list-docs-1", "mem-list-docs-2"]
    assert store.add_user("u-list-docs", "Prefers concise answers.") == "u-list-docs"
    assert any(record.id == "u-list-docs" for record in store.list("user_profile", user_id=None, limit=10)) is True


def test_doc_list_thread_messages(store):
    assert store.list_thread_messages("c1") == []


def test_doc_search_scoped(store):
    assert store.add(["pizza preference"], record_type="memory", record_ids="mem-search-docs",
                     thread_ids="c-search-docs") == ["mem-search-docs"]
    results = store.search("pizza", 1, thread_id="c-search-docs", exact_thread_match=True, record_types={"memory"})
    assert results[0][0].id == "mem-search-docs"


def test_doc_search_abstract(store):
    assert store.add(["Searchable abstract memory"], record_type="memory", record_ids="mem-search-abstract-docs") == [
        "mem-search-abstract-docs"]
    assert store.search("Searchable", 1, record_types={"memory"})[0][0].id == "mem-search-abstract-docs"


def _found(store, rid, k, flt):
    return any(record.id == rid for record, _ in store.search("pizza", k=k, metadata_filter=flt))


def test_doc_search_metadata_examples(store):
    assert store.add(["pizza release"], record_type="memory", record_ids="mem-search-meta-source-docs",
                     metadata={"source": "slack"}) == ["mem-search-meta-source-docs"]
    assert _found(store, "mem-search-meta-source-docs", 3, {"source": "slack"}) is True

    assert store.add(["pizza review"], record_type="memory", record_ids="mem-search-meta-review-docs",
                     metadata={"review": {"status": "open"}}) == ["mem-search-meta-review-docs"]
    assert _found(store, "mem-search-meta-review-docs", 3, {"review": {"status": "open"}}) is True

    assert store.add(["pizza tags"], record_type="memory", record_ids="mem-search-meta-tags-docs",
                     metadata={"tags": ["prod", "urgent"]}) == ["mem-search-meta-tags-docs"]
    assert _found(store, "mem-search-meta-tags-docs", 3, {"tags": ["prod", "urgent"]}) is True
    assert _found(store, "mem-search-meta-tags-docs", 3, {"tags": {"$array_contains": "prod"}}) is True

    assert store.add(
        ["pizza rollout"],
        record_type="memory",
        record_ids="mem-search-meta-combined-docs",
        metadata={"source": "slack", "review": {"status": "open"}, "tags": ["prod", "urgent"]},
    ) == ["mem-search-meta-combined-docs"]
    assert _found(store, "mem-search-meta-combined-docs", 5,
                  {"source": "slack", "review": {"status": "open"}, "tags": ["prod", "urgent"]}) is True


def test_doc_update(store):
    assert store.add(["Original note"], record_type="memory", record_ids="mem-update-docs") == ["mem-update-docs"]
    assert store.update("memory", "mem-update-docs", text="Updated note") == 1
    assert store.get("memory", "mem-update-docs").content == "Updated note"


def test_doc_all_examples_on_one_store(store):
    """The doc's examples in order, on one shared store, as the doc runs them."""
    test_doc_add_batches(store)
    test_doc_db_add(store)
    test_doc_db_add_ttl(store)
    test_doc_add_agent(store)
    test_doc_add_user(store)
    test_doc_delete(store)
    test_doc_delete_thread(store)
    test_doc_get(store)
    test_doc_list(store)
    test_doc_list_thread_messages(store)
    test_doc_search_scoped(store)
    test_doc_search_metadata_examples(store)
    test_doc_update(store)
