"""The Oracle engine records the store's embedder identity (issue 28; catalog version 5,
``ORAMEM_STORES.EMBEDDER``), over the recording fake: the open sends the caller's identity
and reads the recorded one, another embedder is refused with the SQLite engine's message
before anything is written (in both colours), the same one is accepted by the SQLite rule
(``same_identity``), and a store from before the upgrade keeps its legacy chunking when it
already holds rows. ``CatalogStandIn`` answers as ``oramem_admin.open_store`` does (its
PL/SQL is checked as text in tests/plsql/test_embedder_identity_plsql.py). Static-checked,
not run against Oracle."""

from __future__ import annotations

import json
import os
import re
import tempfile

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy, SearchStrategy, SQLiteMemoryStore, StoreSettingsMismatch
from oramem.chunking import TAIL_HANDICAP, chunk_text, policy_for
from oramem.embedders import HashEmbedder
from oramem.embedders.base import InputWindow, input_window
from oramem.embedders.identity import MOVE_ORACLE, MOVE_SQLITE, identity_of, mismatch_message

from .fakes import FakePool, Recorder
from .plsql_standin import CatalogStandIn
from .test_driver_fake import KINDS, SETTINGS_OUT, make, run, settings


def _words(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"\S+", text)]


class _WindowedHash(HashEmbedder):
    """A client-side embedder with a token window, as ``ONNXEmbedder``."""

    input_window = InputWindow(max_tokens=254, spans=_words, tokenizer="t")


def _catalog(rec: Recorder, recorded=None, has_rows=False, **row) -> CatalogStandIn:
    standin = CatalogStandIn(dict(SETTINGS_OUT, **row), recorded, has_rows)
    standin.install(rec.answers)
    return standin


@pytest.mark.parametrize("kind", KINDS)
def test_the_open_sends_the_identity_and_a_new_store_reports_it_recorded(kind):
    engine, rec = make(kind)
    standin = _catalog(rec)
    asked = identity_of(_WindowedHash(3))
    result = run(engine, "open", settings(embedder=asked), SchemaPolicy.CREATE_IF_NECESSARY)
    assert standin.opens[-1]["embedder"] == asked  # sent in the settings JSON
    assert result.embedder == asked and result.embedder["chunking"]["unit"] == "tokens"
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_open_without_embedder_sends_none_and_is_not_checked(kind):
    engine, rec = make(kind)
    recorded = identity_of(HashEmbedder(3, seed=7))
    standin = _catalog(rec, recorded)
    result = run(engine, "open", settings(), SchemaPolicy.REQUIRE_EXISTING)
    assert "embedder" not in standin.opens[-1]
    assert result.embedder == recorded  # the recorded policy still applies (as on SQLite)


@pytest.mark.parametrize("kind", KINDS)
def test_another_embedder_is_refused_with_the_sqlite_message_before_any_write(kind):
    engine, rec = make(kind)
    recorded = identity_of(HashEmbedder(3, seed=0))
    _catalog(rec, recorded)
    asked = identity_of(HashEmbedder(3, seed=1))
    with pytest.raises(StoreSettingsMismatch) as info:
        run(engine, "open", settings(embedder=asked), SchemaPolicy.CREATE_IF_NECESSARY)
    assert str(info.value) == mismatch_message("mystore", recorded, asked, MOVE_ORACLE)
    assert info.value.__cause__ is not None and getattr(info.value.__cause__, "oracle_code", None) == 20108
    # the refused open, then a read of what the store records: no write, no commit
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store", "oramem_admin.describe_store"]
    assert not rec.of("commit")
    assert engine.memory_store_id is None


def test_the_refusal_is_the_sqlite_engines_text_but_for_how_to_move_the_store():
    asked_embedder, built_with = HashEmbedder(3, seed=1), HashEmbedder(3, seed=0)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.db")
        SQLiteMemoryStore(path, embedder=built_with, memory_store_id="mystore").close()
        with pytest.raises(StoreSettingsMismatch) as sqlite_err:
            SQLiteMemoryStore(path, embedder=asked_embedder, memory_store_id="mystore")
    rec = Recorder()
    _catalog(rec, identity_of(built_with))
    with pytest.raises(StoreSettingsMismatch) as oracle_err:
        OracleDBMemoryStore(asked_embedder, FakePool(rec), memory_store_id="mystore")
    assert MOVE_SQLITE in str(sqlite_err.value) and MOVE_ORACLE in str(oracle_err.value)
    assert str(oracle_err.value).replace(MOVE_ORACLE, MOVE_SQLITE) == str(sqlite_err.value)


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_embedder_is_accepted_by_the_sqlite_rule(kind):
    """ONNX: the model name and path are informational, ``files`` is compared only when both
    record it, ``chunking`` never decides (the recorded policy stays in force)."""
    engine, rec = make(kind)
    recorded = {"kind": "onnx", "digest": "sha256:aa", "dimension": 3, "model": "a", "path": "/a",
                "chunking": json.loads(policy_for(InputWindow(max_tokens=254, spans=_words, tokenizer="t")).to_json())}
    _catalog(rec, recorded)
    asked = {"kind": "onnx", "digest": "sha256:aa", "dimension": 3, "model": "b", "path": "/b",
             "files": {"model.onnx": "sha256:aa"}}
    result = run(engine, "open", settings(embedder=asked), SchemaPolicy.REQUIRE_EXISTING)
    assert result.embedder == recorded
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_that_names_another_embedder_is_refused_too(kind):
    """A package that compared nothing (or a concurrent first adoption) reports another
    identity: the driver applies the same rule to the reply."""
    other = identity_of(HashEmbedder(3, seed=5))
    engine, rec = make(kind, {"oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, embedder=other))})
    asked = identity_of(HashEmbedder(3, seed=0))
    with pytest.raises(StoreSettingsMismatch, match="HashEmbedder\\(dim=3, seed=5\\)"):
        run(engine, "open", settings(embedder=asked), SchemaPolicy.REQUIRE_EXISTING)
    assert engine.memory_store_id is None


def _added_chunks(rec: Recorder) -> list[str]:
    batch = json.loads([c for c in rec.plsql if c.name == "oramem_store.add_json"][-1].binds["in_batch"])
    return [c["text"] for c in batch["records"][0]["chunks"]]


def _store(rec: Recorder, strategy="vector") -> OracleDBMemoryStore:
    return OracleDBMemoryStore(_WindowedHash(8), FakePool(rec), memory_store_id="mystore", search_strategy=strategy,
                               schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)


def test_a_store_from_before_the_upgrade_that_holds_rows_keeps_the_legacy_chunking():
    rec = Recorder({"oramem_store.add_json": json.dumps(["a"]), "oramem_search.search_json": json.dumps([])})
    standin = _catalog(rec, None, has_rows=True, vector_dim=8)
    store = _store(rec)
    assert "chunking" in standin.opens[-1]["embedder"]  # asked with its policy ...
    assert "chunking" not in store.settings.embedder  # ... adopted without it: the rows keep one chunking
    text = " ".join(f"w{i}" for i in range(600))
    store.add([text], "memory", record_ids="a")
    assert _added_chunks(rec) == chunk_text(text)  # the legacy 2,000 characters, overlap 200
    store.search("w1", k=1)
    assert "tail_handicap" not in json.loads(rec.plsql[-1].binds["in_request"])


def test_an_empty_store_from_before_the_upgrade_adopts_the_embedders_chunking():
    rec = Recorder({"oramem_store.add_json": json.dumps(["a"]), "oramem_search.search_json": json.dumps([])})
    _catalog(rec, None, has_rows=False, vector_dim=8)
    store = _store(rec)
    embedder = store.embedder
    text = " ".join(f"w{i}" for i in range(600))
    store.add([text], "memory", record_ids="a")
    assert _added_chunks(rec) == policy_for(input_window(embedder)).split(text, _words)
    store.search("w1", k=1)
    assert json.loads(rec.plsql[-1].binds["in_request"])["tail_handicap"] == TAIL_HANDICAP


def test_a_keyword_store_records_no_identity_and_keeps_the_legacy_chunking():
    rec = Recorder({"oramem_store.add_json": json.dumps(["a"])})
    _catalog(rec, None, vector_dim=8, search_strategy="keyword", supported_strategies=["vector", "keyword"])
    store = _store(rec, strategy=SearchStrategy.KEYWORD)
    assert store.settings.embedder is None
    text = " ".join(f"w{i}" for i in range(600))
    store.add([text], "memory", record_ids="a")
    assert _added_chunks(rec) == chunk_text(text)


def test_the_documented_hybrid_route_records_the_client_model_and_refuses_the_in_database_one():
    """docs/oracle-models.md: a HYBRID store created with the client's model as embedder and
    the in-database copy as the engine's model records the client's identity; opening it
    with OracleDBEmbedder (another kind, another chunking) is refused."""
    from oramem import OracleMemoryStore
    from oramem.oracle import OracleDBEmbedder, SyncOracleEngine

    from .test_embedder_fake import answers

    rec = Recorder(answers(dim=8))
    standin = _catalog(rec, None, vector_dim=8, search_strategy="hybrid", embedding_model="ALL_MINILM_L6_V2")
    client = _WindowedHash(8)
    store = OracleMemoryStore(SyncOracleEngine(FakePool(rec), embedding_model="ALL_MINILM_L6_V2"), embedder=client,
                              search_strategy="hybrid", schema_policy="create_if_necessary")
    assert standin.opens[-1]["embedding_model"] == "ALL_MINILM_L6_V2"
    assert store.settings.embedder == identity_of(client)
    with pytest.raises(StoreSettingsMismatch, match="the in-database model 'ALL_MINILM_L6_V2'"):
        OracleDBMemoryStore(OracleDBEmbedder(FakePool(rec), "ALL_MINILM_L6_V2", embedding_dimension=8),
                            FakePool(rec), memory_store_id="mystore", search_strategy="hybrid")
