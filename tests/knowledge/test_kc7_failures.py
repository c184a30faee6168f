"""KC §7: errors, timeouts, reported LLM failures, atomicity, concurrency, embedder
failures and untrusted content."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import sqlalchemy as sa

from oramem.knowledge import ConflictError, EmbeddingError
from oramem.knowledge.write import commit as commit_mod
from oramem.testing import Delay, fail_at

from .helpers import extract, reconcile
from .test_kc8_scenarios import store_ids, table_counts


def test_extraction_failure_rollback_mode_stores_nothing(km, llm, store):
    llm.route("extract", RuntimeError("boom"))
    r = km.write("a1", "I like tea", "Pedro", config_overrides={"on_extraction_failure": "rollback"})
    assert r.success is False and r.error.startswith("ExtractionError") and r.event_id == ""
    assert all(v == 0 for v in table_counts(km).values()) and store_ids(store) == []


def test_invalid_reply_is_a_failure_of_the_step(km, llm):
    llm.route("extract", {"entities": [{"type": "person"}], "facts": []})  # entity without a name
    r = km.write("a1", "I like tea", "Pedro")
    assert r.success is False and "name" in r.error
    llm.route("extract", "I am sorry, I cannot do that")
    r = km.write("a1", "I like tea", "Pedro")
    assert r.success is False and "unparsable" in r.error


def test_zero_facts_is_a_success(km, llm):
    llm.route("extract", extract([], []))
    r = km.write("a1", "ok", "Pedro")
    assert r.success is True and r.facts_added == [] and r.event_id


def test_extraction_timeout_is_read(km, llm):
    llm.route("extract", Delay(0.3, extract([], [])))
    r = km.write("a1", "ok", "Pedro", config_overrides={"extraction_timeout_sec": 0.05})
    assert r.success is False and "timed out" in r.error


def test_reprocess_rejects_completed_events(km, llm):
    llm.route("extract", extract([], []))
    r = km.write("a1", "ok", "Pedro")
    with pytest.raises(ValueError, match="extraction_failed"):
        km.reprocess_event("a1", r.event_id)
    with pytest.raises(ValueError, match="no event"):
        km.reprocess_event("a2", r.event_id)


class _Embedder:
    embedding_dimension = 384

    def __init__(self, mode):
        self.mode = mode

    def embed(self, texts, *, is_query=False):
        if self.mode == "count":
            return np.zeros((len(texts) + 1, 384), np.float32)
        if self.mode == "dim":
            return np.zeros((len(texts), 12), np.float32)
        return np.full((len(texts), 384), np.nan, np.float32)


@pytest.mark.parametrize("mode", ["count", "dim", "nan"])
def test_embedder_failures_raise_and_store_nothing(km, llm, store, mode):
    km.runtime.embedder = _Embedder(mode)
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    with pytest.raises(EmbeddingError):
        km.write("a1", "I like tea", "Pedro")
    assert all(v == 0 for v in table_counts(km).values()) and store_ids(store) == []


class _FailsOnNames:
    """A working embedder except for the entity names of the resolve step (embedded in the
    same worker trip as the resolve prefetch read)."""

    embedding_dimension = 384

    def __init__(self, mode, inner):
        self.mode, self.inner, self.name_calls = mode, inner, 0

    def embed(self, texts, *, is_query=False):
        if texts != ["Ana"]:
            return self.inner.embed(texts, is_query=is_query)
        self.name_calls += 1
        if self.mode == "raise":
            raise OSError("embedding service down")
        if self.mode == "own":
            raise EmbeddingError("quota exhausted")
        if self.mode == "count":
            return np.zeros((2, 384), np.float32)
        if self.mode == "dim":
            return np.zeros((1, 12), np.float32)
        return np.full((1, 384), np.nan, np.float32)


@pytest.mark.parametrize("mode", ["raise", "own", "count", "dim", "nan"])
def test_a_failing_name_embedding_raises_and_stores_nothing(km, llm, store, mode):
    """KC-7.6 for the entity names, whose vectors come in the resolve prefetch's trip."""
    embedder = _FailsOnNames(mode, km.runtime.embedder)
    km.runtime.embedder = embedder
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes tea")]))
    with pytest.raises(EmbeddingError) as info:
        km.write("a1", "Ana likes tea", "Pedro")
    assert embedder.name_calls == 1
    if mode == "own":
        assert str(info.value) == "quota exhausted"  # the embedder's own EmbeddingError, unchanged
    elif mode == "raise":
        assert "OSError: embedding service down" in str(info.value)
    assert all(v == 0 for v in table_counts(km).values()) and store_ids(store) == []


def test_store_error_during_commit_raises_with_nothing_stored(km, llm, store, monkeypatch):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    with fail_at("facts", "links"):
        with pytest.raises(Exception, match="injected"):
            km.write("a1", "I like tea", "Pedro")
    assert all(v == 0 for v in table_counts(km).values()) and store_ids(store) == []
    with pytest.raises(ValueError):
        with fail_at("nope"):
            pass


def test_stale_decision_is_reconciled_once_more(km, llm, clock):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro lives in Porto", "residence")]))
    f1 = km.write("a1", "Porto", "Pedro").facts_added[0]["fact_id"]
    clock.advance()
    t = km._tables
    calls = {"n": 0}

    def racing_reconcile(payload):
        # a concurrent writer closes the candidate between reconcile and commit
        calls["n"] += 1
        if calls["n"] == 1:
            with km._backend.write("race", "a1") as c:
                c.execute(sa.update(t.fact).where(t.fact.c.id == f1).values(valid_to=clock.now))
        return reconcile(("UPDATE", 1, 1))

    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro lives in Braga", "residence")]))
    llm.route("reconcile", racing_reconcile)
    r = km.write("a1", "Braga", "Pedro")
    assert r.success and len(r.facts_added) == 1 and r.facts_updated == []


def test_conflict_error_when_still_stale(km, llm, clock, store, monkeypatch):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro lives in Porto", "residence")]))
    km.write("a1", "Porto", "Pedro")
    counts, ids = table_counts(km), store_ids(store)

    def always_stale(run, conn):
        raise commit_mod.StaleDecisions({"person:pedro"})

    monkeypatch.setattr(commit_mod, "recheck", always_stale)
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro lives in Braga", "residence")]))
    llm.route("reconcile", reconcile(("UPDATE", 1, 1)))
    with pytest.raises(ConflictError):
        km.write("a1", "Braga", "Pedro")
    assert table_counts(km) == counts and store_ids(store) == ids


async def test_different_agents_write_concurrently(km, llm):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea")]))
    rs = await asyncio.gather(*(km.write_async(f"agent{i}", "I like tea", "Pedro") for i in range(6)))
    assert all(r.success for r in rs)
    for i in range(6):
        assert len(await km.get_all_async(f"agent{i}")) == 1


def test_untrusted_content_is_bound_and_clamped(km, llm, store):
    evil = "Robert'); DROP TABLE \"DEFAULT_KG_FACT\";--"
    llm.route("extract", extract([(evil, "person")], [{"subject": evil, "fact": f"{evil} likes tea", "confidence": -3,
                                                       "ttl_days": 10**9, "valid_from": "not a date"}]))
    r = km.write("a1", evil, "Pedro")
    f = km.get("a1", r.facts_added[0]["fact_id"])
    assert f.confidence == 0.0 and f.ttl_days == 36500 and f.valid_from == km._clock()
    assert f.entity_key == "person:robert_drop_table_default_kg_fact"
    assert sa.inspect(km._backend.sa_engine).has_table("DEFAULT_KG_FACT")


def test_database_errors_surface_as_store_errors(km, llm, store):
    from oramem import StoreError

    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro likes tea", "favorite_drink")]))
    with km._backend.write("sabotage", "a1") as c:
        c.exec_driver_sql('DROP TABLE "DEFAULT_KG_ATTRIBUTE_REGISTRY"')
    with pytest.raises(StoreError, match="CREATE_IF_NECESSARY"):
        km.write("a1", "I like tea", "Pedro")
    assert store_ids(store) == []


class _SlowBroken:
    """Fails every query embedding, after a pause: the failure lands while the key resolution
    still runs, or after it."""

    embedding_dimension = 384

    def __init__(self, inner, pause):
        self.inner, self.pause = inner, pause

    def embed(self, texts, *, is_query=False):
        if not is_query:
            return self.inner.embed(texts, is_query=is_query)
        import time

        time.sleep(self.pause)
        raise OSError("embedding service down")


@pytest.mark.parametrize("pause", [0.0, 0.05])
def test_retrieve_warnings_keep_their_order_when_the_query_embedding_fails(km, llm, pause):
    """The query is embedded while the entity keys are resolved (one trip): the unknown key's
    warning still comes before the embedding's, however the two finish."""
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana keeps bees")]))
    km.write("a1", "Ana keeps bees", "Pedro")
    km.runtime.embedder = _SlowBroken(km.runtime.embedder, pause)
    r = km.retrieve("a1", "what does Ana keep?", entity_keys=["nobody", "person:ana"])
    assert r.warnings[0] == "unknown entity key: nobody"
    assert r.warnings[1].startswith("embedding: OSError: embedding service down")
