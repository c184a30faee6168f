"""keyword_language as a persisted Oracle store setting (issue 11 item 5), against the
recording fake of python-oracledb: the open sends it (absent = adopt), the settings in force
bring the store's back and that one shapes every KEYWORD/HYBRID request, and a mismatching
language is a ``StoreSettingsMismatch`` from ``oramem_admin.open_store`` after which nothing
else is called. The PL/SQL side (catalog column, registry, reconcile, Oracle Text
preferences, the 2 -> 3 rebuild) is checked in tests/plsql/test_keyword_language_plsql.py.
Static-checked, not run against Oracle."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from oramem import SchemaPolicy, SearchIndexSyncMode, SearchStrategy, StoreSettingsMismatch
from oramem.oracle import AsyncOracleEngine, SyncOracleEngine
from oramem.requests import Scope, SearchRequest, StoreSettings

from .fakes import FakeAsyncPool, FakePool, Recorder, db_error

OPENED = {
    "memory_store_id": "KW", "vector_dim": 3, "search_strategy": "keyword",
    "search_index_sync": "on_commit", "retention": {"default_ttl_days": None, "max_ttl_days": None},
    "embedding_model": None, "deletion_hook": None, "keyword_language": "english",
    "supported_strategies": ["vector", "keyword"], "schema_version": 3, "code_schema_version": 3,
    "state": "READY", "purge_job": None, "created": False, "upgraded": False, "warnings": [],
    "last_error": None,
}
REPO = Path(__file__).resolve().parents[2]
SETTINGS = StoreSettings("kw", 3, SearchStrategy.KEYWORD, SearchIndexSyncMode.ON_COMMIT, None)


def _run(engine, method, *args):
    if engine.is_async:
        return asyncio.run(getattr(engine, method + "_async")(*args))
    return getattr(engine, method)(*args)


def _engine(kind, language, opened=OPENED, answers=None):
    rec = Recorder({"oramem_admin.open_store": json.dumps(opened), "oramem_search.search_json": "[]",
                    **(answers or {})})
    colour = SyncOracleEngine if kind == "pool" else AsyncOracleEngine
    return colour((FakePool if kind == "pool" else FakeAsyncPool)(rec), keyword_language=language), rec


def _sent_settings(rec):
    calls = [c for c in rec.plsql if c.name == "oramem_admin.open_store"]
    assert len(calls) == 1
    return json.loads(calls[0].binds["in_settings"])


def _request(text="peanut allergy"):
    return SearchRequest(SearchStrategy.KEYWORD, 3, text, None, Scope.any(), Scope.any(), Scope.any(),
                         ("memory",), None)


def _keyword_search(engine, rec):
    rec.calls.clear()
    _run(engine, "search", _request())
    (call,) = [c for c in rec.plsql if c.name == "oramem_search.search_json"]
    return json.loads(call.binds["in_request"])


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
@pytest.mark.parametrize("language", ["english", "none", "NONE"])
def test_the_open_sends_the_requested_language(kind, language):
    opened = dict(OPENED, keyword_language=language.lower())
    engine, rec = _engine(kind, language, opened)
    _run(engine, "open", SETTINGS, SchemaPolicy.CREATE_IF_NECESSARY)
    assert _sent_settings(rec)["keyword_language"] == language.lower()
    assert engine.keyword_language == language.lower()
    assert _keyword_search(engine, rec)["keyword_language"] == language.lower()


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
def test_no_language_adopts_the_stored_one(kind):
    # None = adopt (as SQLite): the key is absent from the settings, and the store's language
    # from the settings in force is the one every keyword search then uses
    engine, rec = _engine(kind, None, dict(OPENED, keyword_language="none"))
    assert engine.keyword_language == "english"  # before open: the default
    _run(engine, "open", SETTINGS, SchemaPolicy.REQUIRE_EXISTING)
    assert "keyword_language" not in _sent_settings(rec)
    assert engine.keyword_language == "none"
    assert _keyword_search(engine, rec)["keyword_language"] == "none"


def test_packages_that_report_no_language_keep_the_requested_one():
    # settings in force of packages older than store schema version 3 lack the key
    opened = {k: v for k, v in OPENED.items() if k != "keyword_language"}
    engine, rec = _engine("pool", "none", opened)
    _run(engine, "open", SETTINGS, SchemaPolicy.REQUIRE_EXISTING)
    assert engine.keyword_language == "none" and _keyword_search(engine, rec)["keyword_language"] == "none"


def _mismatch_message(store: str, persisted: str, requested: str) -> str:
    """The text oramem_admin.mismatch raises for keyword_language, built from the package
    source (so the test follows the PL/SQL wording)."""
    body = (REPO / "plsql" / "oramem_admin.pkb").read_text()
    assert "'store ' || in_store_id || ' was created with ' || in_setting || '='" in body
    m = re.search(r"mismatch\(in_store\.memory_store_id, 'keyword_language'.*?;\n", body, re.S)
    assert m, "reconcile does not compare keyword_language"
    call = m.group(0)
    assert "in_store.keyword_language" in call and "in_set.language" in call
    hint = (f"omit keyword_language (or pass keyword_language={persisted}) to use the stored one, or use "
            "SchemaPolicy.RECREATE (destroys the data)")
    assert "'omit keyword_language (or pass keyword_language='" in call and "'SchemaPolicy.RECREATE (destroys the data)'" in call
    return (f"store {store} was created with keyword_language={persisted} but keyword_language={requested} "
            f"was requested; {hint}")


@pytest.mark.parametrize("kind", ["pool", "async_pool"])
def test_a_mismatching_language_is_refused_before_anything_is_written(kind):
    err = db_error(20103, _mismatch_message("KW", "english", "none"))
    engine, rec = _engine(kind, "none", answers={"oramem_admin.open_store": err})
    with pytest.raises(StoreSettingsMismatch) as info:
        _run(engine, "open", SETTINGS, SchemaPolicy.CREATE_IF_NECESSARY)
    text = str(info.value)
    # both values and what to pass; the driver's advice for -20103 is appended
    assert "keyword_language=english" in text and "keyword_language=none" in text
    assert "omit keyword_language" in text and "ORA-20103" in text
    # the one call was the refused open: no write, no commit, no hook registration
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]
    assert not rec.of("commit")
    assert engine.memory_store_id is None
    with pytest.raises(RuntimeError, match="open"):
        _run(engine, "search", _request("x"))


def test_the_store_refuses_a_mismatching_language_before_any_write():
    from oramem import OracleDBMemoryStore
    from oramem.embedders import HashEmbedder

    err = db_error(20103, _mismatch_message("KW", "english", "none"))
    rec = Recorder({"oramem_admin.open_store": err})
    with pytest.raises(StoreSettingsMismatch, match="keyword_language=english"):
        OracleDBMemoryStore(HashEmbedder(3), FakePool(rec), memory_store_id="kw",
                            search_strategy=SearchStrategy.KEYWORD, keyword_language="none")
    assert [c.name for c in rec.plsql] == ["oramem_admin.open_store"]
    assert not rec.of("commit")


def test_a_bad_language_is_refused_before_any_call():
    rec = Recorder()
    with pytest.raises(ValueError, match="keyword_language 'german' is not supported"):
        SyncOracleEngine(FakePool(rec), keyword_language="german")
    with pytest.raises(TypeError, match="keyword_language must be a str"):
        SyncOracleEngine(FakePool(rec), keyword_language=1)  # type: ignore[arg-type]
    assert rec.calls == []
