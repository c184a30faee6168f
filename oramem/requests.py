"""Normalised requests: what an engine receives from :class:`oramem.OracleMemoryStore`.

The store validates and normalises user arguments once (broadcast, alignment, NOT_SET vs
None, TTL resolution, chunking, embedding, filter validation) and hands an engine these
plain frozen values. Engines never see raw user arguments and never re-validate shapes;
they own only what needs the stored state (duplicate ids, existing retrieval rows, the
stored event time of an update).

Conventions:
- times are ISO-8601 strings in UTC with a ``+00:00`` offset, microsecond precision;
- vectors are 1-D ``numpy.float32`` arrays of the store's ``vector_dim``;
- metadata filters are validated JSON-compatible dicts (see :mod:`oramem.filters`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields as _fields
from typing import Any, Mapping, Optional, Union

import numpy as np

from .types import NOT_SET, MemoryRetentionConfig, NotSetType, SearchIndexSyncMode, SearchStrategy, TimeToLiveAnchor

__all__ = [
    "frozen_from_fields",
    "StoreSettings",
    "ChunkRow",
    "NewRecord",
    "AddRequest",
    "ON_CONFLICT",
    "ScopeMatch",
    "Scope",
    "ListRequest",
    "SearchRequest",
    "RetrievalChange",
    "UpdateRequest",
    "TTLSpec",
    "DeletionEvent",
    "ForgetRequest",
    "ErasureReport",
    "RecordRewrite",
]


@dataclass(frozen=True)
class StoreSettings:
    """Settings of one store (SC-10.1, SC-10.4).

    As a request to ``Engine.open``, ``vector_dim``, ``search_index_sync`` and
    ``retention`` may be ``None``, meaning "not given by the caller": an existing store
    keeps its persisted value, a new store gets the default (no vector column for a
    KEYWORD store, ``ON_COMMIT``, ``MemoryRetentionConfig()``). A given value that differs
    from the persisted one is a ``StoreSettingsMismatch`` naming the setting, except an
    explicit ``retention`` under ``CREATE_IF_NECESSARY`` (or ``RECREATE``), which replaces
    the persisted retention (vendor behaviour: retention is a policy, not a schema shape),
    and a capability upgrade of ``search_strategy`` under ``CREATE_IF_NECESSARY``
    (SC-10.2). Creating a
    VECTOR or HYBRID store with ``vector_dim=None`` is a ``ValueError`` asking for
    ``vector_dim`` or an embedder. The settings ``open`` returns are always complete
    (only ``vector_dim`` stays ``None``, for a KEYWORD store without vectors).
    """

    memory_store_id: str
    vector_dim: Optional[int]
    search_strategy: SearchStrategy
    search_index_sync: Optional[SearchIndexSyncMode]
    retention: Optional[MemoryRetentionConfig]
    #: Identity of the embedder (``oramem.embedders.identity``); as a request ``None`` means
    #: no embedder given (no check); as a result, the persisted identity (``None``: none
    #: recorded, or an engine that does not persist it).
    embedder: Optional[dict[str, Any]] = None


_FIELD_NAMES: dict[type, frozenset[Any]] = {}


def frozen_from_fields(cls: type, values: dict[str, Any]) -> Any:
    """An instance of the frozen dataclass ``cls`` holding ``values`` (every field, by
    name), built without its generated ``__init__``: a frozen ``__init__`` sets each field
    through ``object.__setattr__``, which made building the per-record objects of a bulk
    ``add`` (a draft and a resolved record per record, 14 and 13 fields) ~4x slower than
    filling the instance's ``__dict__`` at once (bench/results/FINDINGS.md, issue 14).
    The result is the same object (equality, hash, repr, frozenness). Only for classes
    without ``__post_init__``; a missing or unknown field name raises ``TypeError``."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        if hasattr(cls, "__post_init__"):
            raise TypeError(f"{cls.__name__} has __post_init__; build it with its constructor")
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in _fields(cls))
    if len(values) != len(names) or not names.issuperset(values):
        missing = sorted(names.difference(values))
        unknown = sorted(set(values).difference(names))
        raise TypeError(f"{cls.__name__}: missing fields {missing}, unknown fields {unknown}")
    obj: Any = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


@dataclass(frozen=True)
class ChunkRow:
    """One retrieval row: the text search sees and its vector (``None`` = no vector).

    ``text`` may be ``""`` only when a caller gave one explicit vector for an empty
    retrieval text (SC-4.6)."""

    text: str
    vector: Optional[np.ndarray]


@dataclass(frozen=True)
class TTLSpec:
    """A resolved time to live: ``days=None`` never expires. ``anchor`` says whether
    the expiry counts from the insert time or from the record's event timestamp."""

    days: Optional[int]
    anchor: TimeToLiveAnchor


@dataclass(frozen=True)
class NewRecord:
    """One record to insert, fully resolved."""

    id: str
    record_type: str
    content: Optional[str]
    thread_id: Optional[str]
    user_id: Optional[str]
    agent_id: Optional[str]
    role: Optional[str]
    timestamp: Optional[str]
    metadata: Optional[Mapping[str, Any]]
    ttl: Optional[TTLSpec]  # None for types without TTL (profiles, threads)
    chunks: tuple[ChunkRow, ...]
    #: ``(created_at, expires_at)`` kept from a backup (``restore_batches``); None = the
    #: engine assigns created_at = now and derives expires_at from ``ttl`` as usual.
    restored_times: Optional[tuple[str, Optional[str]]] = None
    #: the JSON text of ``metadata`` when the caller already serialised it (normalize
    #: does, once, while checking it); None = engines serialise ``metadata`` themselves
    metadata_json: Optional[str] = None


#: ``AddRequest.on_conflict`` values (``restore_batches(on_conflict=...)``).
ON_CONFLICT = ("fail", "skip", "replace")


@dataclass(frozen=True)
class AddRequest:
    """One ``add``/``add_batches`` call: all records go in one transaction (SC-4.4).
    Ids are unique within the request; the engine checks them against the store."""

    records: tuple[NewRecord, ...]
    batch_size: int
    #: What an id already stored does: "fail" (SC-4 default: nothing is written),
    #: "skip" (that record is left out, the stored one kept) or "replace" (the stored
    #: record is deleted, with its retrieval rows, in the same transaction).
    on_conflict: str = "fail"
    #: this store object's embedder made some of the vectors (not only the caller's
    #: ``embeddings``): the engine refuses them when another process moved the store to
    #: another embedder since the open (red40: SQLite reads its catalog; ora44: the Oracle
    #: driver sends the identity and the packages compare it, -20108)
    embedded: bool = False
    #: the identity of the embedder that made the caller's ``embeddings`` when a layer above
    #: the store says so (``oramem.embedders.identity.vectors_made_by``: the knowledge
    #: layer's own embedder; rek47): the engine refuses the add as for ``embedded`` when the
    #: store records another embedder. None: the caller's vectors are the caller's to match
    vectors_of: Optional[Mapping[str, Any]] = None


class ScopeMatch(enum.Enum):
    """How one scope dimension constrains a read."""

    ANY = "any"  # unconstrained
    EQUALS = "equals"  # value == given string
    IS_NULL = "is_null"  # value IS NULL


@dataclass(frozen=True)
class Scope:
    """One scope dimension (thread, user or agent) of a read."""

    match: ScopeMatch = ScopeMatch.ANY
    value: Optional[str] = None

    @staticmethod
    def any() -> "Scope":
        return Scope(ScopeMatch.ANY, None)


@dataclass(frozen=True)
class ListRequest:
    """``list`` (SC-3.3). ``limit=None`` means all rows. ``metadata_filter``: NOT_SET =
    no filter; ``None`` = only records without metadata; a dict = the validated filter.
    Unscoped types carry ``Scope.any()`` in every dimension."""

    record_type: str
    limit: Optional[int]
    thread: Scope
    user: Scope
    agent: Scope
    metadata_filter: Union[NotSetType, None, Mapping[str, Any]]


@dataclass(frozen=True)
class SearchRequest:
    """``search`` (SC-6). Exactly one of ``query_text``/``query_vector`` drives the
    strategy: VECTOR needs ``query_vector`` (the store embeds a text query before the
    engine sees it); KEYWORD needs ``query_text``; HYBRID needs both.
    ``record_types`` is never empty: the store expands ``None`` to every searchable type."""

    strategy: SearchStrategy
    k: int
    query_text: Optional[str]
    query_vector: Optional[np.ndarray]
    thread: Scope
    user: Scope
    agent: Scope
    record_types: tuple[str, ...]
    metadata_filter: Optional[Mapping[str, Any]]
    #: VECTOR: cosine distance added to a record's later retrieval rows (SC-6.4): the
    #: store's chunk policy decides it (``oramem.chunking.tail_handicap``), 0 = best row
    tail_handicap: float = 0.0
    #: VECTOR: records farther than this cosine distance are left out (None: no bound); the
    #: answer is the k nearest records within it, i.e. the search's answer without the bound,
    #: cut where the distance exceeds it
    max_distance: Optional[float] = None
    #: as ``AddRequest.vectors_of``, for a ``query_vector`` the caller gives (rek47)
    vectors_of: Optional[Mapping[str, Any]] = None


class RetrievalChange(enum.Enum):
    """What an update does to the record's retrieval rows (SC-7.2 to SC-7.4)."""

    KEEP = "keep"  # leave rows and vectors as they are
    CLEAR = "clear"  # remove every retrieval row
    REPLACE = "replace"  # replace with ``UpdateRequest.chunks``
    REVECTOR = "revector"  # keep texts, set vectors from ``UpdateRequest.vectors``
    STRIP_VECTORS = "strip_vectors"  # keep texts, drop their vectors


@dataclass(frozen=True)
class UpdateRequest:
    """``update`` (SC-7). Fields left ``NOT_SET`` are unchanged.

    - ``content``: NOT_SET, None (clear) or the new text.
    - ``retrieval`` with ``chunks`` (REPLACE) or ``vectors`` (REVECTOR: one vector per
      existing row, in row order; a single vector requires exactly one existing row —
      the engine raises ``ValueError`` naming the count otherwise).
    - ``ttl``: NOT_SET keeps the expiry; otherwise the resolved TTL, where a TIMESTAMP
      anchor uses ``timestamp`` when given in this call, else the stored event time
      (``ValueError`` from the engine when that is unset).
    """

    record_type: str
    record_id: str
    content: Union[NotSetType, None, str] = NOT_SET
    retrieval: RetrievalChange = RetrievalChange.KEEP
    chunks: tuple[ChunkRow, ...] = ()
    vectors: tuple[np.ndarray, ...] = ()
    metadata: Union[NotSetType, None, Mapping[str, Any]] = NOT_SET
    timestamp: Union[NotSetType, None, str] = NOT_SET
    ttl: Union[NotSetType, TTLSpec] = NOT_SET
    #: as ``AddRequest.embedded``: this store object's embedder made some of the vectors
    embedded: bool = False


@dataclass(frozen=True)
class DeletionEvent:
    """What a delete, cascade or purge removed, handed to deletion hooks (SC-8.5) inside
    the deleting transaction. ``records`` lists ``(record_type, record_id)`` pairs;
    ``thread_ids``/``user_ids``/``agent_ids`` the scopes whose records were removed
    wholesale."""

    memory_store_id: str
    records: tuple[tuple[str, str], ...]
    thread_ids: tuple[str, ...] = ()
    user_ids: tuple[str, ...] = ()
    agent_ids: tuple[str, ...] = ()
    reason: str = "delete"  # "delete" | "delete_thread" | "cascade" | "purge" | "replace" | "forget"
    #: ``forget``: the names under which the erased user appears in derived data (the
    #: knowledge layer's speakers and entities); empty for every other reason.
    names: tuple[str, ...] = ()
    #: ``(agent_id, user_id)`` of each record of ``records``, in the same order: who the
    #: deleted record belonged to (ids are unique per record type only and callers may choose
    #: them, SC-4.3, so a hook matching its own rows by id checks the owner too). Empty when
    #: the engine does not say (older events): hooks then match by ``(type, id)`` alone.
    scopes: tuple[tuple[Optional[str], Optional[str]], ...] = ()
    #: an actor's cascade and ``forget``: every thread that held a record of the erased
    #: actor (its own records, the thread rows aside), those removed whole (``thread_ids``)
    #: and those that stay, so a layer above can take the actor's words out of what it
    #: copied from those conversations (queued writes' context, KC-3.10). Empty otherwise.
    actor_thread_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForgetRequest:
    """Erase one actor (``store.forget``): exactly one of ``user_id`` / ``agent_id``;
    ``names`` are the user's names in derived data (speaker and entity names)."""

    user_id: Optional[str] = None
    agent_id: Optional[str] = None
    names: tuple[str, ...] = ()
    #: the erasure-log row (JSON) the engine writes in the erasure's own transaction (SC-14.3)
    tombstone: Optional[str] = None


@dataclass(frozen=True)
class ErasureReport:
    """What a deletion hook erased for a ``forget`` event: rows per table, and the store
    records derived from them (``(record_type, record_id)``) that the engine deletes in the
    same transaction."""

    tables: Mapping[str, int]
    records: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RecordRewrite:
    """What a deletion hook changes in another store record in the deleting transaction
    (SC-8.5 [ext], del48): the record ``(record_type, record_id)`` of the owner
    ``(agent_id, user_id)`` (a record of another owner under the id is not touched) gets
    ``content`` as its text and one retrieval row of that text with no vector (the hook
    cannot embed; its old rows and vectors go), or is deleted when ``content`` is None.
    A hook returns a tuple of them (the knowledge layer: an ``add_knowledge`` event that
    listed a deleted fact loses its line)."""

    record_type: str
    record_id: str
    agent_id: Optional[str]
    user_id: Optional[str]
    content: Optional[str]
