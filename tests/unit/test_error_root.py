"""Issue 25 item 4: one error root. Every error class oramem raises on purpose is an
``oramem.Error`` and keeps the built-in base it had before (``except ValueError`` callers
keep working); a closed store, engine or KnowledgeMemory raises ``StoreClosed`` in both
colours (SC-11.1); a busy SQLite database is recognised by its error code, not its message (SC-11.2)."""

from __future__ import annotations

import asyncio

import pytest

import oramem
from oramem import SQLiteMemoryStore
from oramem.errors import ArgumentError, ArgumentTypeError, Error, StoreClosed, StoreError, is_sqlite_busy
from oramem.sqlite._sqlite import sqlite3
from oramem.testing import HashEmbedder, ScriptedLLM


def _classes() -> list[tuple[type, tuple[type, ...]]]:
    """(class, the built-in bases it must keep) for every public error class."""
    from oramem._http import HTTPFailure
    from oramem.ann import AnnUnavailable
    from oramem.embedders import EmbeddingServiceError
    from oramem.embedders.hub import ChecksumMismatch, ModelOffline
    from oramem.embedders.onnx import ModelNotAvailable
    from oramem.jsonl import JSONLError
    from oramem.knowledge import errors as kerr
    from oramem.oracle.admin import ScriptError
    from oramem.oracle.scripts import PlsqlSyntaxError
    from oramem.trust.erasure import ErasedSubjectError
    from oramem.trust.firewall import FirewallRejected

    return [
        (ArgumentError, (ValueError,)), (ArgumentTypeError, (TypeError,)), (oramem.errors.NoEmbedder, (ValueError, ArgumentError)),
        (oramem.StoreError, ()), (oramem.SchemaError, ()), (oramem.StoreNotFound, ()),
        (oramem.StoreSettingsMismatch, ()), (oramem.StoreBusy, ()), (oramem.CapabilityError, ()),
        (StoreClosed, (ValueError, RuntimeError)),
        (kerr.KnowledgeError, ()), (kerr.LLMError, ()), (kerr.LLMTimeout, ()), (kerr.EmbeddingError, ()),
        (kerr.ExtractionError, ()), (kerr.ConflictError, ()),
        (FirewallRejected, (ValueError,)), (ErasedSubjectError, (ValueError,)), (JSONLError, (ValueError,)),
        (EmbeddingServiceError, (RuntimeError,)), (ModelNotAvailable, (RuntimeError,)),
        (ChecksumMismatch, (RuntimeError,)), (ModelOffline, (RuntimeError,)),
        (AnnUnavailable, (ImportError,)), (ScriptError, (RuntimeError,)), (PlsqlSyntaxError, (ValueError,)),
        (HTTPFailure, ()),
    ]


@pytest.mark.parametrize("cls,kept", _classes(), ids=lambda v: getattr(v, "__name__", ""))
def test_every_error_class_is_under_the_root_and_keeps_its_old_base(cls, kept):
    assert issubclass(cls, Error)
    for base in kept:
        assert issubclass(cls, base), f"{cls.__name__} lost its base {base.__name__}"


def test_the_root_is_exported_top_level():
    for name in ("Error", "ArgumentError", "ArgumentTypeError", "StoreClosed", "StoreBusy"):
        assert getattr(oramem, name) is getattr(oramem.errors, name)
        assert name in oramem.__all__
    assert issubclass(oramem.StoreClosed, oramem.StoreError)
    assert issubclass(oramem.StoreBusy, oramem.StoreError)


# ----------------------------------------------------------------------------- closed
def _closed_sqlite(tmp_path):
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=HashEmbedder(8))
    store.add(["hello"], "memory", record_ids="a")
    store.close()
    return store


def test_closed_sqlite_store_raises_store_closed_sync(tmp_path):
    store = _closed_sqlite(tmp_path)
    for call in (lambda: store.get("memory", "a"), lambda: store.add(["x"], "memory"),
                 lambda: store.search("hello", "memory")):
        with pytest.raises(StoreClosed, match="closed"):
            call()


def test_closed_sqlite_store_raises_store_closed_async(tmp_path):
    store = _closed_sqlite(tmp_path)

    async def go():
        with pytest.raises(StoreClosed, match="closed"):
            await store.get_async("memory", "a")
        with pytest.raises(StoreClosed, match="closed"):
            await store.search_async("hello", "memory")

    asyncio.run(go())


def test_closed_sqlite_engine_connection_raises_store_closed(tmp_path):
    """Below the facade: an engine whose connection was closed (the third type of before)."""
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=HashEmbedder(8))
    engine = store.engine
    store.close()
    with pytest.raises(StoreClosed, match="closed"):
        engine.get("memory", "a")  # type: ignore[attr-defined]


def _km(tmp_path):
    from oramem.knowledge import KnowledgeMemory

    store = SQLiteMemoryStore(str(tmp_path / "kg.db"), embedder=HashEmbedder(16))
    llm = ScriptedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}})
    return KnowledgeMemory(store, llm), store


def test_closed_knowledge_memory_raises_store_closed_sync(tmp_path):
    km, store = _km(tmp_path)
    km.close()
    try:
        with pytest.raises(StoreClosed, match="closed"):
            km.retrieve("agent", "anything")
        with pytest.raises(StoreClosed, match="closed"):
            km.write("agent", "I like tea", "Ann")
    finally:
        store.close()


def test_closed_knowledge_memory_raises_store_closed_async(tmp_path):
    km, store = _km(tmp_path)

    async def go():
        await km.close_async()
        with pytest.raises(StoreClosed, match="closed"):
            await km.retrieve_async("agent", "anything")
        with pytest.raises(StoreClosed, match="closed"):
            await km.write_async("agent", "I like tea", "Ann")

    try:
        asyncio.run(go())
    finally:
        store.close()


def test_knowledge_memory_over_a_closed_store_raises_store_closed(tmp_path):
    km, store = _km(tmp_path)
    store.close()
    try:
        with pytest.raises(StoreClosed, match="closed"):
            km.retrieve("agent", "anything")
    finally:
        km.close()


def test_store_closed_is_still_caught_as_the_old_types(tmp_path):
    store = _closed_sqlite(tmp_path)
    for old in (ValueError, RuntimeError, StoreError):
        with pytest.raises(old):
            store.get("memory", "a")


# ----------------------------------------------------------------------------- busy
def _error(sql: str) -> sqlite3.OperationalError:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(sql)
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError(f"{sql} did not fail")


def test_busy_is_read_from_the_error_code_not_the_message():
    from oramem.sqlite.connection import _translate

    # a missing table whose name says "locked": SQLITE_ERROR, not a lock
    exc = _error("SELECT * FROM locked_accounts")
    assert exc.sqlite_errorcode == sqlite3.SQLITE_ERROR
    assert not is_sqlite_busy(exc)
    translated = _translate(exc, "search")
    assert type(translated) is StoreError and "no such table" in str(translated)


def test_a_real_lock_is_busy_by_its_code(tmp_path):
    from oramem.sqlite.connection import _translate

    path = str(tmp_path / "lock.db")
    a = sqlite3.connect(path, timeout=0, isolation_level=None)
    b = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        a.execute("CREATE TABLE t (x)")
        a.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError) as info:
            b.execute("BEGIN IMMEDIATE")
        assert info.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
        assert is_sqlite_busy(info.value)
        assert isinstance(_translate(info.value, "add"), oramem.StoreBusy)
    finally:
        a.close()
        b.close()


def test_busy_through_a_sqlalchemy_wrapper_uses_the_drivers_code():
    sa = pytest.importorskip("sqlalchemy")
    exc = _error("SELECT * FROM busy_queue")
    wrapped = sa.exc.OperationalError("SELECT", {}, exc)
    assert not is_sqlite_busy(wrapped)
    coded = sqlite3.OperationalError("some text")
    coded.sqlite_errorcode = 261  # SQLITE_LOCKED_SHAREDCACHE (extended code of SQLITE_LOCKED)
    assert is_sqlite_busy(sa.exc.OperationalError("SELECT", {}, coded))
