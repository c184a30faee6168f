"""ora44 (Oracle parity of red40's reembed fix): a store object opened before another
session's reembed kept embedding with its old embedder on Oracle: ``add``/``update`` wrote
old-space vectors and ``search`` scored an old-space query against the new vectors, because
the Oracle engine ignored ``AddRequest.embedded`` / ``UpdateRequest.embedded`` and the
packages never compared anything after ``open_store``. The driver now sends its store
object's embedder identity as the request's ``"embedder"`` member when that embedder made
vectors of the call (an add or update from text, a vector or hybrid search with query
text), and ``add_json`` / ``update_json`` / ``search_json`` (through
``oramem_admin.check_embedder``, in the same call: no round trip of its own) raise -20108,
``StoreSettingsMismatch``, when the store now records another embedder, before anything is
read or written. The caller's own vectors, keyword search, reads and deletes carry no
identity and keep working. Run over the recording fake, whose stand-in of the packages
(``plsql_standin.StoreStandIn``) now reads ``"embedder"`` as the packages do; the PL/SQL
text is checked in ``tests/plsql/test_ora44_reembed_plsql.py``. Static-checked, not run
against Oracle."""

from __future__ import annotations

import json

import numpy as np
import pytest

from oramem.embedders.identity import identity_of
from oramem.errors import StoreSettingsMismatch
from oramem.oracle import codec
from oramem.requests import AddRequest, Scope, SearchRequest
from oramem.types import SearchStrategy

from .plsql_standin import StoreStandIn, standin_store

#: the identity another session's `oramem reembed` recorded (another model, same dimension)
MOVED = {"kind": "onnx", "sha256": "f" * 64, "dimension": 8, "pooling": "mean", "normalize": True}


def _standin(rec) -> StoreStandIn:
    return rec.answers["oramem_store.add_json"].__self__


def _sent(rec, name: str) -> dict:
    call = [c for c in rec.plsql if c.name == name][-1]
    bind = call.binds["in_batch" if name.endswith("add_json") else "in_request"]
    return json.loads(getattr(bind, "data", bind))


def test_a_worker_opened_before_anothers_reembed_writes_and_searches_nothing_with_its_old_embedder():
    store, rec = standin_store()
    try:
        standin = _standin(rec)
        store.add(["bob: my locker code is 4471"], "memory", record_ids="note-1", user_ids="bob")
        mine = _sent(rec, "oramem_store.add_json")["embedder"]
        assert mine == identity_of(store.embedder)  # what this object embeds with
        standin.embedder = MOVED  # another session's reembed swapped the store to MOVED
        before = json.dumps(sorted((list(k), v) for k, v in standin.records.items()), default=str)

        with pytest.raises(StoreSettingsMismatch, match="nothing was written") as err:
            store.add(["bob: dentist on friday"], "memory", record_ids="note-2", user_ids="bob")
        assert "moved to the embedder" in str(err.value) and "ORA-20108" in str(err.value)
        with pytest.raises(StoreSettingsMismatch, match="nothing was written"):
            store.update("memory", "note-1", text="bob: my locker code is 9911")
        with pytest.raises(StoreSettingsMismatch, match="nothing was searched"):
            store.search("locker code", k=3)
        assert json.dumps(sorted((list(k), v) for k, v in standin.records.items()), default=str) == before

        # what carries no vector of this object's embedder still works
        assert store.get("memory", "note-1").content == "bob: my locker code is 4471"
        own = np.ones((1, 8), dtype=np.float32) / np.sqrt(8)
        assert store.add(["bob: own vector"], "memory", record_ids="note-3", embeddings=own) == ["note-3"]
        assert "embedder" not in _sent(rec, "oramem_store.add_json")
        assert store.update("memory", "note-1", metadata={"k": 1}) == 1
        assert "embedder" not in _sent(rec, "oramem_store.update_json")
        store.delete("memory", "note-3")
    finally:
        store.close()


def test_the_same_embedder_recorded_passes():
    store, rec = standin_store()
    try:
        standin = _standin(rec)
        standin.embedder = identity_of(store.embedder)
        assert store.add(["bob: dentist on friday"], "memory", record_ids="note-2") == ["note-2"]
        assert store.update("memory", "note-2", text="bob: dentist on monday") == 1
        assert _sent(rec, "oramem_store.update_json")["embedder"] == standin.embedder
        assert [r.id for r, _ in store.search("dentist", k=3)] == ["note-2"]   # the stand-in searches (fake40)
        assert _sent(rec, "oramem_search.search_json")["embedder"] == standin.embedder
    finally:
        store.close()


def test_the_codec_sends_the_identity_only_with_vectors_of_the_objects_embedder():
    ident = {"kind": "hash", "dim": 3}
    anyone = (Scope.any(), Scope.any(), Scope.any(), ("memory",), None)
    vec = np.zeros(3, dtype=np.float32)
    assert "embedder" not in json.loads(codec.add_json(AddRequest((), 10), None, ident))
    assert json.loads(codec.add_json(AddRequest((), 10, embedded=True), None, ident))["embedder"] == ident
    assert "embedder" not in json.loads(codec.add_json(AddRequest((), 10, embedded=True), None, None))
    by_text = SearchRequest(SearchStrategy.VECTOR, 3, "tea", vec, *anyone)
    assert json.loads(codec.search_json(by_text, embedder=ident))["embedder"] == ident
    by_vector = SearchRequest(SearchStrategy.VECTOR, 3, None, vec, *anyone)
    assert "embedder" not in json.loads(codec.search_json(by_vector, embedder=ident))
    keyword = SearchRequest(SearchStrategy.KEYWORD, 3, "tea", None, *anyone)
    assert "embedder" not in json.loads(codec.search_json(keyword, embedder=ident))
