"""The Oracle engine's codec: requests -> the JSON payloads of the ``oramem_*`` packages, and
their JSON replies -> results (formats in ``plsql/README.md`` "JSON payloads"). No I/O and no
colour: both :class:`~oramem.oracle.sync_engine.SyncOracleEngine` and
:class:`~oramem.oracle.async_engine.AsyncOracleEngine` use it through
:class:`~oramem.oracle.base.OracleEngine`. Static-checked, not run against Oracle.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any, Mapping, Optional

import numpy as np

from ..chunking import keyword_passages
from ..errors import CapabilityError
from ..requests import (
    AddRequest,
    ChunkRow,
    ListRequest,
    NewRecord,
    Scope,
    SearchRequest,
    StoreSettings,
    TTLSpec,
    UpdateRequest,
)
from ..sqlite.keyword import DEFAULT_KEYWORD_LANGUAGE, HybridConfig
from ..types import (
    NOT_SET,
    MemoryRetentionConfig,
    MessageRecord,
    Record,
    SearchIndexSyncMode,
    SearchStrategy,
)

__all__ = [
    "MAX_FUSION_DEPTH", "add_json", "check_hybrid", "list_json", "record_from_json", "search_json",
    "settings_from_json", "settings_json", "update_json",
]


# --------------------------------------------------------------------------------------
# request -> JSON (plsql/README.md "JSON payloads")
# --------------------------------------------------------------------------------------

def _vector(v: Optional[np.ndarray]) -> Optional[list[float]]:
    if v is None:
        return None
    arr = np.asarray(v)
    if arr.ndim != 1:
        raise ValueError(f"a vector must be 1-D, got shape {arr.shape}")
    # The shortest decimal that reads back as the same float32 (numpy's str of a float32),
    # not the float32 widened to a double ("0.1", not "0.10000000149011612"): about half
    # the payload (review F20); TO_VECTOR(..., FLOAT32) rounds it to the same float32.
    out = [float(str(x)) for x in arr.astype(np.float32)]
    if not all(math.isfinite(x) for x in out):
        raise ValueError("vectors must contain finite numbers only (no NaN or infinity)")
    return out


def _chunks(chunks: tuple[ChunkRow, ...], group_chars: Optional[int] = None) -> list[dict[str, Any]]:
    """The retrieval rows of one record. ``group_chars`` (a HYBRID store whose recorded chunk
    policy counts tokens: :func:`oramem.chunking.keyword_row_chars`): each row also carries
    its ``keyword_text``, the keyword passage it starts or null (``keyword_passages``, the
    SQLite engine's grouping), which ``oramem_store`` writes to the store's passage table."""
    out = [{"text": c.text, "vector": _vector(c.vector)} for c in chunks]
    if group_chars is not None and out:
        for row, passage in zip(out, keyword_passages([c.text for c in chunks], group_chars)):
            row["keyword_text"] = passage
    return out


def _ttl(ttl: Optional[TTLSpec]) -> Optional[dict[str, Any]]:
    if ttl is None:
        return None
    return {"days": ttl.days, "anchor": str(ttl.anchor.value)}


def _record(r: NewRecord, group_chars: Optional[int] = None) -> dict[str, Any]:
    out = {
        "id": r.id,
        "record_type": r.record_type,
        "content": r.content,
        "thread_id": r.thread_id,
        "user_id": r.user_id,
        "agent_id": r.agent_id,
        "role": r.role,
        "timestamp": r.timestamp,
        "metadata": dict(r.metadata) if r.metadata is not None else None,
        "ttl": _ttl(r.ttl),
        "chunks": _chunks(r.chunks, group_chars),
    }
    if r.restored_times is not None:
        # a backup's kept times replace this call's time and the ttl (oramem_store.add_json)
        created, expires = r.restored_times
        out["ttl"] = None
        out["restored_times"] = {"created_at": created, "expires_at": expires}
    return out


def _scope(s: Scope) -> dict[str, Any]:
    if s.match.value == "equals":
        return {"match": "equals", "value": s.value}
    return {"match": s.match.value}


def _dumps(payload: Any) -> str:
    try:
        return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as e:  # NaN/inf in metadata
        raise ValueError(f"the request cannot be sent as JSON: {e}; remove NaN/infinity values") from None
    except TypeError as e:
        raise TypeError(f"the request cannot be sent as JSON: {e}") from None


def settings_json(
    settings: StoreSettings, embedding_model: Optional[str], keyword_language: Optional[str] = None
) -> str:
    """The open_store settings JSON: a ``None`` adoptable setting is left out (absent =
    accept the persisted value; ``keyword_language`` too: a new store then gets ``english``).
    ``embedder``: the identity of the store's embedder (issue 28), which ``open_store``
    records on a new store, adopts on a store without one and compares with a recorded one
    (absent: no embedder, nothing compared or recorded)."""
    out: dict[str, Any] = {
        "memory_store_id": settings.memory_store_id,
        "search_strategy": SearchStrategy.coerce(settings.search_strategy, "search_strategy").value,
    }
    if settings.vector_dim is not None:
        out["vector_dim"] = settings.vector_dim
    if settings.search_index_sync is not None:
        out["search_index_sync"] = SearchIndexSyncMode.coerce(settings.search_index_sync, "search_index_sync").value
    if settings.retention is not None:
        out["retention"] = {
            "default_ttl_days": settings.retention.default_ttl_days,
            "max_ttl_days": settings.retention.max_ttl_days,
        }
    if embedding_model is not None:
        out["embedding_model"] = embedding_model
    if keyword_language is not None:
        out["keyword_language"] = keyword_language
    if settings.embedder is not None:
        out["embedder"] = dict(settings.embedder)
    return _dumps(out)


def add_json(request: AddRequest, group_chars: Optional[int] = None,
             embedder: Optional[Mapping[str, Any]] = None) -> str:
    """The add batch; ``group_chars``: the store's keyword passages (:func:`_chunks`);
    ``embedder``: the identity of the store object's embedder, sent when it made some of the
    vectors (``request.embedded``): ``add_json`` refuses them (-20108) when another session
    moved the store to another embedder since the open (ora44; red40 on SQLite)."""
    out: dict[str, Any] = {"records": [_record(r, group_chars) for r in request.records]}
    if request.on_conflict != "fail":
        out["on_conflict"] = request.on_conflict
    maker = _maker(embedder, request.embedded, request.vectors_of)
    if maker is not None:
        out["embedder"] = maker
    return _dumps(out)


def _maker(own: Optional[Mapping[str, Any]], embedded: bool, vectors_of: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    """The request's ``"embedder"`` member: the identity the caller named for its vectors
    (``vectors_of``: a KnowledgeMemory's embedder, rek47), else the store object's own when
    its embedder made some (``embedded``), else none. The packages compare it with the
    recorded identity (``oramem_admin.check_embedder``, -20108) within the call."""
    if vectors_of is not None:
        return dict(vectors_of)
    if own is not None and embedded:
        return dict(own)
    return None


def list_json(request: ListRequest) -> str:
    out: dict[str, Any] = {
        "record_type": request.record_type,
        "limit": request.limit,
        "thread": _scope(request.thread),
        "user": _scope(request.user),
        "agent": _scope(request.agent),
    }
    if request.metadata_filter is not NOT_SET:
        f = request.metadata_filter
        out["metadata_filter"] = dict(f) if f is not None else None  # type: ignore[arg-type]
    return _dumps(out)


#: the most candidates a HYBRID leg contributes on Oracle (oramem_search.gc_max_fusion_depth)
MAX_FUSION_DEPTH = 10000


def check_hybrid(hybrid: Any) -> HybridConfig:
    """A :class:`HybridConfig` Oracle can honour: every field reaches ``oramem_search``; a
    ``depth`` above :data:`MAX_FUSION_DEPTH` cannot, so it is a ``CapabilityError``."""
    if hybrid is None:
        return HybridConfig()
    if not isinstance(hybrid, HybridConfig):
        raise TypeError(f"hybrid must be an oramem.sqlite.HybridConfig or None, got {type(hybrid).__name__}")
    if hybrid.depth is not None and hybrid.depth > MAX_FUSION_DEPTH:
        raise CapabilityError(
            f"HybridConfig.depth={hybrid.depth}: Oracle fuses at most {MAX_FUSION_DEPTH} candidates a leg "
            f"(oramem_search.gc_max_fusion_depth); pass depth <= {MAX_FUSION_DEPTH}, or None for max(10 * k, 200)"
        )
    return hybrid


def search_json(
    request: SearchRequest, hybrid: Optional[HybridConfig] = None, keyword_language: Optional[str] = None,
    embedder: Optional[Mapping[str, Any]] = None,
) -> str:
    """The search request; ``embedder`` (as :func:`add_json`) is sent when the query vector
    is the store object's embedding of ``query_text`` (a vector or hybrid search with text)."""
    strategy = SearchStrategy.coerce(request.strategy, "strategy")
    out: dict[str, Any] = {
        "strategy": strategy.value,
        "k": request.k,
        "query_text": request.query_text,
        "query_vector": _vector(request.query_vector),
        "thread": _scope(request.thread),
        "user": _scope(request.user),
        "agent": _scope(request.agent),
        "record_types": list(request.record_types),
        "metadata_filter": dict(request.metadata_filter) if request.metadata_filter is not None else None,
    }
    if strategy is not SearchStrategy.KEYWORD and request.tail_handicap:
        # absent = 0 in PL/SQL (a record ranks by its best chunk)
        out["tail_handicap"] = float(request.tail_handicap)
    if strategy is not SearchStrategy.VECTOR:
        out["keyword_language"] = keyword_language or DEFAULT_KEYWORD_LANGUAGE
    if strategy is not SearchStrategy.KEYWORD:
        maker = _maker(embedder, request.query_text is not None, request.vectors_of)
        if maker is not None:
            out["embedder"] = maker
    if strategy is SearchStrategy.HYBRID:
        cfg = check_hybrid(hybrid)
        out["hybrid"] = {
            "vector_weight": float(cfg.vector_weight),
            "fusion": cfg.fusion,
            "keyword_weight": float(cfg.keyword_weight or 0.0),
            "rrf_k": float(cfg.rrf_k or 0.0),
            "depth": cfg.depth,
        }
    return _dumps(out)


def update_json(request: UpdateRequest, group_chars: Optional[int] = None,
                embedder: Optional[Mapping[str, Any]] = None) -> str:
    """The update request; ``embedder`` as :func:`add_json` (``request.embedded``)."""
    out: dict[str, Any] = {
        "record_type": request.record_type,
        "record_id": request.record_id,
        "retrieval": request.retrieval.value,
    }
    if request.content is not NOT_SET:
        out["content"] = request.content
    if request.retrieval.value == "replace":
        out["chunks"] = _chunks(request.chunks, group_chars)
    if request.retrieval.value == "revector":
        out["vectors"] = [_vector(v) for v in request.vectors]
    if request.metadata is not NOT_SET:
        out["metadata"] = dict(request.metadata) if request.metadata is not None else None  # type: ignore[arg-type]
    if request.timestamp is not NOT_SET:
        out["timestamp"] = request.timestamp
    if request.ttl is not NOT_SET:
        out["ttl"] = _ttl(request.ttl)  # type: ignore[arg-type]
    if embedder is not None and request.embedded:
        out["embedder"] = dict(embedder)
    return _dumps(out)


# --------------------------------------------------------------------------------------
# JSON -> results
# --------------------------------------------------------------------------------------

def record_from_json(obj: Mapping[str, Any]) -> Record:
    common = dict(
        id=obj["id"],
        record_type=obj["record_type"],
        content=obj.get("content"),
        timestamp=obj.get("timestamp"),
        metadata=obj.get("metadata"),
        thread_id=obj.get("thread_id"),
        user_id=obj.get("user_id"),
        agent_id=obj.get("agent_id"),
        created_at=obj.get("created_at"),
        expires_at=obj.get("expires_at"),
    )
    if obj["record_type"] == "message":
        seq = obj.get("seq_no")
        return MessageRecord(**common, role=obj.get("role"), seq_no=int(seq) if seq is not None else None)
    return Record(**common)


def settings_from_json(obj: Mapping[str, Any]) -> StoreSettings:
    for w in obj.get("warnings") or ():
        warnings.warn(f"oramem store {obj.get('memory_store_id')}: {w}", UserWarning, stacklevel=4)
    ret = obj.get("retention") or {}
    dim = obj.get("vector_dim")
    # the recorded embedder identity (catalog version 5; older packages report none)
    embedder = obj.get("embedder")
    return StoreSettings(
        memory_store_id=obj["memory_store_id"],
        vector_dim=int(dim) if dim is not None else None,
        search_strategy=SearchStrategy(obj["search_strategy"]),
        search_index_sync=SearchIndexSyncMode(obj["search_index_sync"]),
        retention=MemoryRetentionConfig(
            default_ttl_days=ret.get("default_ttl_days"), max_ttl_days=ret.get("max_ttl_days")
        ),
        embedder=dict(embedder) if isinstance(embedder, dict) else None,
    )


def _loads(text: Optional[str]) -> Any:
    return None if text is None else json.loads(text)


def _none(_reply: Any) -> None:
    return None


def _record_or_none(text: Any) -> Optional[Record]:
    obj = _loads(text)
    return record_from_json(obj) if obj else None
