"""rek47 on Oracle, over the recording fake: a KnowledgeMemory opened before another
session's reembed refuses its embedding work.

Its store calls carry explicit vectors, so before rek47 its add_json / search_json requests
had no ``"embedder"`` member (the driver sent one only when the store object's own embedder
made the vectors, ora44) and the packages compared nothing. Now the store sends the
KnowledgeMemory's identity (``vectors_made_by``; ``AddRequest.vectors_of`` /
``SearchRequest.vectors_of``) as the member, so the package's ``check_embedder`` runs inside
the call (no round trip of its own); a knowledge write that adds no store record, and the
jobs and the contradiction check that write or compare knowledge-table vectors, call
``oramem_admin.check_embedder`` themselves (one call, in the write's transaction). The
stand-in answers as the package does (``plsql_standin.StoreStandIn``). Static-checked, not
run against Oracle."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from oramem.embedders.identity import identity_of
from oramem.errors import StoreSettingsMismatch
from oramem.testing import ScriptedLLM

from .test_knowledge_oracle_fake import knowledge_over_fake

#: what another session's `oramem reembed` recorded (another model, the same dimension)
MOVED = {"kind": "onnx", "sha256": "e" * 64, "dimension": 8, "pooling": "mean", "normalize": True}


def _standin(rec):
    return rec.answers["oramem_store.add_json"].__self__


def _requests(rec, name: str) -> list[dict]:
    bind = "in_batch" if name.endswith("add_json") else "in_request"
    return [json.loads(getattr(c.binds[bind], "data", c.binds[bind])) for c in rec.plsql if c.name == name]


def _rows(km) -> dict[str, list]:
    out = {}
    with km._backend.read() as conn:
        for t in km._tables.metadata.sorted_tables:
            out[t.name] = sorted(map(repr, conn.execute(sa.select(t)).all()))
    return out


def _llm() -> ScriptedLLM:
    from knowledge.helpers import NEUTRAL, add_all

    return ScriptedLLM({"event_emotion": NEUTRAL, "reconcile": add_all, "resolve_entity": {"match_index": 0},
                        "cluster_summary": {"summary": "Bob's trains."}})


def test_a_knowledge_memory_opened_before_anothers_reembed_writes_and_searches_nothing(monkeypatch):
    km, store, rec, clock = knowledge_over_fake(monkeypatch, _llm())
    try:
        standin = _standin(rec)
        mine = identity_of(store.embedder)
        km.add_fact("a1", "Bob", "Bob likes steam trains", subject_type="person", user_id="bob")
        assert _requests(rec, "oramem_store.add_json")[-1]["embedder"] == mine  # its explicit vectors, named
        assert [r.content for r, _ in store.search(query_vector=[0.5] * 8, k=3, record_types=["fact"],
                                                          strategy="vector")] == [
            "Bob likes steam trains"]  # the caller's own vector outside a KnowledgeMemory: no member
        assert "embedder" not in _requests(rec, "oramem_search.search_json")[-1]
        clock.advance()
        km.retrieve("a1", "steam trains", user_id="bob")
        searches = [r for r in _requests(rec, "oramem_search.search_json") if r["strategy"] == "vector"]
        assert searches and all(r["embedder"] == mine for r in searches[1:])

        standin.embedder = MOVED  # another session's reembed swapped the store (and its knowledge vectors)
        records, rows = json.dumps(sorted(map(repr, standin.records.items()))), _rows(km)

        with pytest.raises(StoreSettingsMismatch, match="nothing was written") as err:
            km.add_fact("a1", "Carol", "Carol sells maps", subject_type="person", user_id="bob")
        assert "ORA-20108" in str(err.value) and "bob" not in str(err.value).lower()  # names no user
        with pytest.raises(StoreSettingsMismatch, match="nothing was searched"):
            km.add_fact("a1", "Bob", "Bob rides diesel trains", subject_type="person", user_id="bob")
        with pytest.raises(StoreSettingsMismatch, match="nothing was searched"):
            km.retrieve("a1", "steam trains", user_id="bob")
        calls = len(standin.checks)
        with pytest.raises(StoreSettingsMismatch, match="nothing was written"):
            km.cluster_facts("a1", user_id="bob")
        with pytest.raises(StoreSettingsMismatch, match="nothing was compared"):
            km.check_contradiction("a1", "Always answer in French", user_id="bob")
        assert standin.checks[calls:] == [mine, mine]  # oramem_admin.check_embedder, once each
        assert json.dumps(sorted(map(repr, standin.records.items()))) == records and _rows(km) == rows

        # reads need no embedder
        assert [f.fact_text for f in km.get_all("a1", user_id="bob")] == ["Bob likes steam trains"]
    finally:
        km.close()


def test_the_same_embedder_recorded_passes(monkeypatch):
    km, store, rec, clock = knowledge_over_fake(monkeypatch, _llm())
    try:
        standin = _standin(rec)
        standin.embedder = identity_of(store.embedder)
        assert km.add_fact("a1", "Bob", "Bob likes steam trains", subject_type="person", user_id="bob").facts_added
        clock.advance()
        assert km.add_fact("a1", "Bob", "Bob rides diesel trains", subject_type="person", user_id="bob").facts_added
        km.retrieve("a1", "trains", user_id="bob")  # the stand-in's ranking is not the package's: ran, not refused
        assert _requests(rec, "oramem_search.search_json")[-1]["embedder"] == standin.embedder
        km.cluster_facts("a1", user_id="bob")
        assert standin.checks and all(c == standin.embedder for c in standin.checks)
    finally:
        km.close()


def test_the_check_call_binds_what_the_package_declares(monkeypatch):
    """``oramem_admin.check_embedder`` as the driver calls it: the store id, the identity as
    JSON object text, what did not happen; a non-identity is refused before any call."""
    km, store, rec, _ = knowledge_over_fake(monkeypatch, _llm())
    try:
        store._engine.check_vectors_of({"kind": "hash", "dimension": 8, "seed": 0}, "nothing was written")
        call = [c for c in rec.plsql if c.name == "oramem_admin.check_embedder"][-1]
        assert call.binds["in_store_id"] == "MYSTORE" and call.binds["in_what"] == "nothing was written"
        assert json.loads(getattr(call.binds["in_identity"], "data", call.binds["in_identity"])) == {
            "kind": "hash", "dimension": 8, "seed": 0}
        n = len(rec.plsql)
        with pytest.raises(TypeError, match="embedder identity"):
            store._engine.check_vectors_of({"dimension": 8}, "nothing was written")
        assert len(rec.plsql) == n
    finally:
        km.close()
