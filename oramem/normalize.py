"""Argument normalisation and validation, done once for every engine (DESIGN: "engines
receive a normalised request").

Two stages for writes:

1. :func:`draft_records` checks everything that does not depend on a store (types,
   alignment, broadcast, ids, scope, roles, timestamps, metadata, TTL values, vector
   shapes) and returns :class:`RecordDraft` values. ``PendingRecordBatch`` runs this on
   construction.
2. :class:`Normalizer` resolves drafts against one store's settings (TTL defaults and
   caps, vector dimension, the embedder) into :class:`~oramem.requests.NewRecord`.

Nothing here touches a database: every error is raised before anything is written.
"""

from __future__ import annotations

import json
import math
import numbers
import re
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Optional, overload

import numpy as np

from .errors import ArgumentError, ArgumentTypeError, DuplicateRecordError, NoEmbedder
from . import timeutil
from .chunking import DEFAULT_CHUNK_CHARS, DEFAULT_CHUNK_OVERLAP, store_chunker, tail_handicap
from .filters import filter_key, remember_filter_key, validate_filter
from .requests import (
    ChunkRow,
    ListRequest,
    NewRecord,
    RetrievalChange,
    Scope,
    ScopeMatch,
    SearchRequest,
    StoreSettings,
    TTLSpec,
    UpdateRequest,
)
from .types import (
    MAX_LIST_LIMIT,
    NOT_SET,
    PROFILE_TYPES,
    RECORD_TYPES,
    SCOPED_TYPES,
    TTL_TYPES,
    MemoryRetentionConfig,
    SearchStrategy,
    TimeToLiveAnchor,
)

__all__ = [
    "MAX_ID_LENGTH",
    "RecordDraft",
    "draft_records",
    "validate_batch_shape",
    "Normalizer",
    "check_record_type",
    "check_id",
    "parse_timestamp",
    "validate_store_id",
]

#: Record ids and scope ids are 1..MAX_ID_LENGTH characters (Oracle stores them as
#: VARCHAR2(255 CHAR); the SQLite engine enforces the same bound for parity).
MAX_ID_LENGTH = 255
_STORE_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
DEFAULT_STORE_ID = "DEFAULT"
DEFAULT_BATCH_SIZE = 256
_SEARCHABLE_TYPES = tuple(t for t in RECORD_TYPES if t != "thread")


# ---------------------------------------------------------------------------- scalars
def check_record_type(record_type: Any, *, allow_thread: bool = True) -> str:
    if not isinstance(record_type, str):
        raise ArgumentTypeError(f"record_type must be a str, got {type(record_type).__name__}")
    accepted = RECORD_TYPES if allow_thread else _SEARCHABLE_TYPES
    if record_type not in accepted:
        raise ArgumentError(f"unknown record_type {record_type!r}; accepted types: {', '.join(accepted)}")
    return record_type


@overload
def check_id(value: Any, argument: str) -> str: ...
@overload
def check_id(value: Any, argument: str, *, optional: bool) -> Optional[str]: ...
def check_id(value: Any, argument: str, *, optional: bool = False) -> Optional[str]:
    """A record/thread/user/agent id: 1..255 characters, no NUL, not only white space (an id
    with visible characters is kept verbatim, its leading/trailing spaces included)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{argument} must be a str{' or None' if optional else ''}, got {type(value).__name__}")
    if not value:
        raise ArgumentError(f"{argument} must not be empty" + (" (pass None for no value)" if optional else ""))
    if value.isspace():
        raise ArgumentError(
            f"{argument}={value!r} is only white space; give an id with a visible character"
            + (" (or None for no value)" if optional else "")
        )
    if len(value) > MAX_ID_LENGTH:
        raise ArgumentError(f"{argument} is {len(value)} characters; the limit is {MAX_ID_LENGTH}")
    if "\x00" in value:
        raise ArgumentError(f"{argument} must not contain NUL characters")
    return check_unicode(value, argument)


def validate_store_id(memory_store_id: Any) -> str:
    """SC-10.1: 1-16 characters, a letter then letters/digits/underscores; upper-cased."""
    if not isinstance(memory_store_id, str):
        raise ArgumentTypeError(f"memory_store_id must be a str, got {type(memory_store_id).__name__}")
    if not 1 <= len(memory_store_id) <= 16 or not _STORE_ID_RE.match(memory_store_id):
        raise ArgumentError(
            f"memory_store_id {memory_store_id!r} is invalid: use 1-16 characters, a letter first, "
            "then letters, digits or underscores (e.g. 'agent_prod')"
        )
    return memory_store_id.upper()


def parse_timestamp(value: Any, argument: str) -> str:
    """ISO-8601 text or a datetime -> canonical UTC ISO text (naive means UTC)."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        try:
            dt = timeutil.parse_iso(value)
        except ValueError:
            raise ArgumentError(
                f"{argument}={value!r} is not an ISO-8601 date/time; use e.g. '2026-01-31T12:00:00Z'"
            ) from None
    else:
        raise ArgumentTypeError(f"{argument} must be an ISO-8601 str or a datetime, got {type(value).__name__}")
    return format_time(dt)


def format_time(dt: datetime) -> str:
    """Canonical time text: UTC, microseconds, ``+00:00`` (sorts lexically)."""
    return timeutil.store_text(dt)


def check_unicode(value: str, argument: str) -> str:
    """``value`` when it is valid Unicode text; a lone surrogate (``"\\ud800"``, what a
    bad decoder or ``surrogateescape`` leaves) is a ``ValueError`` naming the argument
    (finding 20: no database driver error later)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ArgumentError(
            f"{argument} contains a lone surrogate (U+{ord(value[exc.start]):04X} at position {exc.start}), which is "
            "not valid Unicode text; decode its source correctly (or with errors='replace') and pass the text again"
        ) from None
    return value


def _all_valid_ids(values: list[Any]) -> bool:
    """Whether every entry is None or a plain ``str`` id that :func:`check_id` accepts
    unchanged (1..MAX_ID_LENGTH characters, not only white space, no NUL, valid Unicode), checked for the whole
    list at once: one join and one UTF-8 encode instead of a Python call per entry. False
    means "check entry by entry" (which raises the first entry's exact error)."""
    strs = [v for v in values if v is not None]
    if not strs:
        return True
    if set(map(type, strs)) != {str} or min(map(len, strs)) < 1 or max(map(len, strs)) > MAX_ID_LENGTH:
        return False
    if any(map(str.isspace, strs)):
        return False
    return _valid_texts(strs)


def _valid_texts(strs: list[str]) -> bool:
    """Whether the plain strings hold no NUL and no lone surrogate (one encode of their
    join; a surrogate is invalid in UTF-8 wherever it stands, so joining cannot hide one)."""
    joined = "\n".join(strs)
    if "\x00" in joined:
        return False
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_texts(values: list[Any], argument: str) -> list[Optional[str]]:
    """:func:`_check_text` of every entry (``argument[i]`` in messages), the valid case
    checked for the whole list at once."""
    strs = [v for v in values if v is not None]
    if set(map(type, strs)) <= {str}:
        try:
            "\n".join(strs).encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return list(values)
    return [_check_text(c, f"{argument}[{i}]") for i, c in enumerate(values)]


def _check_text(value: Any, argument: str) -> Optional[str]:
    if value is None:
        return value
    if isinstance(value, str):
        return check_unicode(value, argument)
    raise ArgumentTypeError(f"{argument} must be a str or None, got {type(value).__name__}")


def _check_metadata(value: Any, argument: str) -> Optional[dict[str, Any]]:
    return _checked_metadata(value, argument)[0]


#: ``json.dumps(value, allow_nan=False, ensure_ascii=False)`` without building an encoder per call
_METADATA_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False)


def _checked_metadata(value: Any, argument: str) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """``(a detached JSON copy, its JSON text)`` of one metadata mapping, or (None, None).
    The text is what engines store (``ensure_ascii=False``), so it is serialised once."""
    if value is None:
        return None, None
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"{argument} must be a dict or None, got {type(value).__name__}")
    try:
        text = _METADATA_ENCODER.encode(value)
        copy = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"{argument} must be JSON-serialisable with string keys and finite numbers: {exc}") from None
    except RecursionError:
        raise ArgumentError(f"{argument} nests too deeply to be stored as JSON") from None
    # json.dumps turns int/float/bool/None keys into strings; the copy's keys equal the
    # mapping's exactly when every key already was a string (the per-key check is the slow path)
    if copy.keys() != value.keys() and any(not isinstance(k, str) for k in value.keys()):
        raise ArgumentTypeError(f"{argument} keys must be strings")
    check_unicode(text, argument)
    if "\\u0000" in text and _has_nul(copy):
        # SQLite's JSON functions cut strings at an escaped NUL, so "a\x00b" would match "a"
        raise ArgumentError(f"{argument} keys and string values must not contain NUL characters")
    return copy, text


def _metadata_encode_fast() -> Callable[[Any], str]:
    """``_METADATA_ENCODER.encode`` without its per-call Python layer: CPython's C encoder
    with the same settings (``allow_nan=False``, ``ensure_ascii=False``, default
    separators) but no circular-reference bookkeeping — a cycle raises ``RecursionError``,
    which sends the list through the per-entry check and its usual message."""
    c_make = getattr(json.encoder, "c_make_encoder", None)
    if c_make is None:  # another Python: the encoder itself
        return _METADATA_ENCODER.encode
    try:
        enc = c_make(None, _METADATA_ENCODER.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, False)
        if "".join(enc({"k": [1.5, "é"]}, 0)) != _METADATA_ENCODER.encode({"k": [1.5, "é"]}):
            return _METADATA_ENCODER.encode
    except TypeError:  # another signature: the encoder itself
        return _METADATA_ENCODER.encode
    return lambda value: "".join(enc(value, 0))


_FAST_ENCODE = _metadata_encode_fast()


def _checked_metadata_list(values: list[Any], argument: str) -> list[tuple[Optional[dict[str, Any]], Optional[str]]]:
    """:func:`_checked_metadata` of every entry. For plain dicts the detached copies come
    from one ``json.loads`` of the joined texts instead of one per record (the same values:
    each text is a JSON object, and a JSON array of them parses to those objects); any
    entry the fast path cannot vouch for sends the whole list through the per-entry check."""
    if not values or any(type(v) is not dict for v in values if v is not None):
        return [_checked_metadata(m, argument) for m in values]
    encode = _FAST_ENCODE
    texts: list[Optional[str]] = []
    try:
        for v in values:
            texts.append(None if v is None else encode(v))
    except (TypeError, ValueError, RecursionError):
        return [_checked_metadata(m, argument) for m in values]  # raises the first entry's error
    present = [t for t in texts if t is not None]
    if not present:
        return [(None, None)] * len(values)
    joined = "[" + ",".join(present) + "]"
    if "\\u0000" in joined or not _valid_texts(present):
        return [_checked_metadata(m, argument) for m in values]
    copies = iter(json.loads(joined))
    out: list[tuple[Optional[dict[str, Any]], Optional[str]]] = []
    for v, text in zip(values, texts):
        if text is None:
            out.append((None, None))
            continue
        copy = next(copies)
        if copy.keys() != v.keys() and any(not isinstance(k, str) for k in v.keys()):
            raise ArgumentTypeError(f"{argument} keys must be strings")
        out.append((copy, text))
    return out


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any("\x00" in k or _has_nul(v) for k, v in value.items())
    return False


def _check_ttl_days(value: Any, argument: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentError(f"{argument} must be a whole number of days >= 0 or None, got {value!r}")
    if value < 0:
        raise ArgumentError(f"{argument} must be >= 0, got {value}")
    return int(value)


_FLOAT32 = np.dtype(np.float32)


def _check_vector(value: Any, argument: str) -> np.ndarray:
    """One vector -> finite, non-zero 1-D float32 array (may be empty: an empty payload)."""
    if type(value) is np.ndarray and value.dtype == _FLOAT32 and value.ndim == 1:
        # what embedders hand over: already the array np.asarray would return (itself), so
        # only the value tests remain (no conversion, no overflow to guard)
        if not np.isfinite(value).all():
            raise ArgumentError(f"{argument} contains NaN or infinite values")
        if value.size and not value.any():
            raise ArgumentError(f"{argument} is all zeros: cosine distance is undefined for a zero vector; pass the "
                                "embedding of the text (at least one non-zero value)")
        return value
    if isinstance(value, np.ndarray) and np.iscomplexobj(value):
        raise ArgumentError(f"{argument} is a complex array; pass real numbers (float32)")
    try:
        with np.errstate(over="ignore"):  # beyond float32 range becomes inf, rejected below
            arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise ArgumentError(f"{argument} must be a sequence of numbers") from None
    if arr.ndim != 1:
        raise ArgumentError(f"{argument} must be one vector (1-D), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ArgumentError(f"{argument} contains NaN or infinite values")
    if arr.size and not arr.any():
        raise ArgumentError(f"{argument} is all zeros: cosine distance is undefined for a zero vector; pass the "
                         "embedding of the text (at least one non-zero value)")
    return arr


def _vector_payload(value: Any, argument: str) -> Optional[tuple[str, Any]]:
    """An ``embeddings[i]`` entry -> ('one', vector) | ('many', [vectors]) | ('empty', None)
    | None (no payload)."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return ("empty", None)
        if value.ndim == 1:
            return ("one", _check_vector(value, argument))
        if value.ndim == 2:
            return ("many", [_check_vector(row, f"{argument}[{j}]") for j, row in enumerate(value)])
        raise ArgumentError(f"{argument} must be a vector or a list of vectors, got shape {value.shape}")
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"{argument} must be a vector or a list of vectors, got {type(value).__name__}")
    if len(value) == 0:
        return ("empty", None)
    first = value[0]
    if isinstance(first, (np.ndarray, list, tuple)):
        return ("many", [_check_vector(row, f"{argument}[{j}]") for j, row in enumerate(value)])
    return ("one", _check_vector(value, argument))


# ------------------------------------------------------------------------ broadcasting
def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _aligned(value: Any, n: int, argument: str) -> list[Any]:
    """SC-4.2: a scalar is broadcast, a list must have ``n`` entries."""
    if _is_list(value):
        if len(value) != n:
            raise ArgumentError(f"{argument} has {len(value)} entries but contents has {n}; pass one per record or a scalar")
        return list(value)
    return [value] * n


def _aligned_list_only(value: Any, n: int, argument: str) -> list[Any]:
    """``index_texts``/``embeddings``: the outer list must align with contents (its
    entries may themselves be lists, so a scalar cannot be broadcast)."""
    if isinstance(value, np.ndarray):
        if value.ndim < 1 or value.shape[0] != n:
            raise ArgumentError(f"{argument} has {value.shape[0] if value.ndim else 0} rows but contents has {n}")
        return list(value)
    if not _is_list(value):
        raise ArgumentTypeError(f"{argument} must be a list aligned with contents, got {type(value).__name__}")
    if len(value) != n:
        raise ArgumentError(f"{argument} has {len(value)} entries but contents has {n}; pass one per record")
    return list(value)


# ------------------------------------------------------------------------------ drafts
@dataclass(frozen=True)
class RecordDraft:
    """A record checked without a store. ``ttl_days`` may be NOT_SET (store default);
    ``index`` is NOT_SET (use content), a str, or a tuple of caller chunks; ``payload`` is
    the parsed ``embeddings[i]`` (see :func:`_vector_payload`)."""

    id: Optional[str]
    record_type: str
    content: Optional[str]
    thread_id: Optional[str]
    user_id: Optional[str]
    agent_id: Optional[str]
    role: Optional[str]
    timestamp: Optional[str]
    metadata: Optional[dict[str, Any]]
    ttl_days: Any
    ttl_anchor: Optional[TimeToLiveAnchor]
    index: Any
    payload: Optional[tuple[str, Any]]
    #: the JSON text of ``metadata`` as checked (None when metadata is None)
    metadata_json: Optional[str] = None


def draft_records(
    contents: Any,
    record_type: Any,
    *,
    index_texts: Any = NOT_SET,
    embeddings: Any = NOT_SET,
    record_ids: Any = NOT_SET,
    thread_ids: Any = NOT_SET,
    user_ids: Any = NOT_SET,
    agent_ids: Any = NOT_SET,
    roles: Any = NOT_SET,
    timestamps: Any = NOT_SET,
    metadata: Any = NOT_SET,
    ttl_days: Any = NOT_SET,
    ttl_anchor: Any = NOT_SET,
    contents_name: str = "contents",
) -> list[RecordDraft]:
    """Stage 1 of ``add`` (see the module docstring)."""
    if isinstance(contents, (str, bytes)) or not _is_list(contents):
        raise ArgumentTypeError(
            f"{contents_name} must be a list of str or None (wrap a single text: [{contents_name[:-1]}])"
            if isinstance(contents, str)
            else f"{contents_name} must be a list of str or None, got {type(contents).__name__}"
        )
    record_type = check_record_type(record_type)
    if record_type == "thread":
        raise ArgumentError("threads are created implicitly by the first record that names a thread_id (SC-2.3)")
    n = len(contents)
    texts = _check_texts(contents, contents_name)
    is_profile = record_type in PROFILE_TYPES

    # ids
    if record_ids is NOT_SET or record_ids is None:
        ids: list[Optional[str]] = [None] * n
    elif isinstance(record_ids, str):
        if n != 1:
            raise ArgumentError(f"record_ids is a single str but contents has {n} records; pass a list of ids")
        ids = [check_id(record_ids, "record_ids")]
    elif _is_list(record_ids):
        ids = _aligned(record_ids, n, "record_ids")
        if not _all_valid_ids(ids):
            ids = [check_id(v, f"record_ids[{i}]", optional=True) for i, v in enumerate(ids)]
    else:
        raise ArgumentTypeError(f"record_ids must be a str, a list of str/None, or None, got {type(record_ids).__name__}")
    given = [rid for rid in ids if rid is not None]
    if len(set(given)) != len(given):  # the first repeated id names the error
        seen: set[str] = set()
        for rid in given:
            if rid in seen:
                raise DuplicateRecordError(f"duplicate record id {rid!r} in one call; record ids must be unique")
            seen.add(rid)
    if is_profile and any(rid is None for rid in ids):
        raise ArgumentError(f"{record_type} records need record_ids: a profile's id is the user/agent id (SC-2.4)")

    # scope and role
    scopes = {}
    for name, value in (("thread_ids", thread_ids), ("user_ids", user_ids), ("agent_ids", agent_ids)):
        if value is NOT_SET or value is None:
            vals: list[Any] = [None] * n
        elif _is_list(value):
            vals = _aligned(value, n, name)
            if not _all_valid_ids(vals):
                vals = [check_id(v, f"{name}[{i}]", optional=True) for i, v in enumerate(vals)]
        else:  # a scalar applies to every record: checked once
            vals = [check_id(value, name, optional=True)] * n if n else []
        if is_profile and any(v is not None for v in vals):
            raise ArgumentError(f"{record_type} records are unscoped; remove {name} (SC-2.4)")
        scopes[name] = vals
    if roles is NOT_SET:  # nothing to check
        role_vals: list[Optional[str]] = [None] * n
    else:
        role_vals = [_check_text(r, "roles") for r in _aligned(roles, n, "roles")]
        if record_type != "message" and any(r is not None for r in role_vals):
            raise ArgumentError(f"roles apply only to message records, not {record_type!r} (SC-2.2)")
        for r in role_vals:
            if r is not None and not r:
                raise ArgumentError("roles entries must be non-empty strings or None")

    # times and metadata
    if timestamps is NOT_SET:
        ts_vals: list[Optional[str]] = [None] * n
    else:
        ts_vals = [None if t is None else parse_timestamp(t, "timestamps") for t in _aligned(timestamps, n, "timestamps")]
    md_vals = [None] * n if metadata is NOT_SET else _aligned_metadata(metadata, n)
    checked = _checked_metadata_list(md_vals, "metadata")
    md_vals = [copy for copy, _ in checked]

    # content fallback (SC-4.1): None -> metadata["content"] when it is a str
    for i, (text, md) in enumerate(zip(texts, md_vals)):
        if text is None and md is not None and isinstance(md.get("content"), str):
            texts[i] = md["content"]
    if is_profile and any(t is None for t in texts):
        raise ArgumentError(f"{record_type} records need text (information)")

    # TTL
    if record_type not in TTL_TYPES and (ttl_days is not NOT_SET or ttl_anchor is not NOT_SET):
        raise ArgumentError(
            f"ttl_days/ttl_anchor apply to message, memory, guideline, fact and preference records, not {record_type!r} (SC-5.1)"
        )
    if ttl_days is NOT_SET:
        ttl_vals: list[Any] = [NOT_SET] * n
    else:
        ttl_vals = [_check_ttl_days(v, "ttl_days") for v in _aligned(ttl_days, n, "ttl_days")]
    if ttl_anchor is NOT_SET:
        anchors: list[Any] = [TimeToLiveAnchor.CREATED_AT if record_type in TTL_TYPES else None] * n
    else:
        anchors = [TimeToLiveAnchor.coerce(a, "ttl_anchor") for a in _aligned(ttl_anchor, n, "ttl_anchor")]

    # retrieval payloads
    if index_texts is NOT_SET or index_texts is None:
        idx_vals: list[Any] = [NOT_SET] * n
    else:
        idx_vals = [_index_entry(v, f"index_texts[{i}]") for i, v in enumerate(_aligned_list_only(index_texts, n, "index_texts"))]
    block: Optional[np.ndarray] = None
    if embeddings is NOT_SET or embeddings is None:
        payloads: list[Any] = [None] * n
    elif isinstance(embeddings, np.ndarray) and embeddings.ndim == 2 and embeddings.shape[1] > 0:
        # one vector per record as a 2-D block: checked once, rows are views of one copy
        if embeddings.shape[0] != n:
            raise ArgumentError(f"embeddings has {embeddings.shape[0]} rows but contents has {n}")
        if np.iscomplexobj(embeddings):
            raise ArgumentError("embeddings is a complex array; pass real numbers (float32)")
        try:
            with np.errstate(over="ignore"):  # beyond float32 range becomes inf, rejected below
                block = np.ascontiguousarray(embeddings, dtype=np.float32)
        except (TypeError, ValueError):
            raise ArgumentError("embeddings must hold numbers") from None
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            raise ArgumentError(f"embeddings[{int(np.flatnonzero(~finite)[0])}] contains NaN or infinite values")
        nonzero = block.any(axis=1)
        if not nonzero.all():
            raise ArgumentError(f"embeddings[{int(np.flatnonzero(~nonzero)[0])}] is all zeros: cosine distance is "
                             "undefined for a zero vector; pass the embedding of the text")
        payloads = [("one", row) for row in block]
    else:
        payloads = [
            _vector_payload(v, f"embeddings[{i}]") for i, v in enumerate(_aligned_list_only(embeddings, n, "embeddings"))
        ]
    # the SC-4.6 shape rules have nothing to refuse when there are no vectors, or one per
    # record from one 2-D block, and no index_texts
    plain = embeddings is NOT_SET or embeddings is None or block is not None
    if not (plain and (index_texts is NOT_SET or index_texts is None)):
        dims = {
            (p[1].shape[0] if p[0] == "one" else v.shape[0])
            for p in payloads
            if p is not None and p[0] != "empty"
            for v in (p[1] if p[0] == "many" else [p[1]])
        }
        if len(dims) > 1:
            raise ArgumentError(f"all explicit embeddings of one call must have one dimension, got {sorted(dims)} (SC-4.6)")
        for i, (idx, payload) in enumerate(zip(idx_vals, payloads)):
            _check_payload_alignment(i, texts[i], idx, payload)

    return _build_drafts(record_type, ids, texts, scopes, role_vals, ts_vals, md_vals, checked, ttl_vals, anchors,
                         idx_vals, payloads)


def _build_drafts(record_type: str, ids: list[Any], texts: list[Any], scopes: dict[str, list[Any]],
                  role_vals: list[Any], ts_vals: list[Any], md_vals: list[Any], checked: list[Any],
                  ttl_vals: list[Any], anchors: list[Any], idx_vals: list[Any], payloads: list[Any]) -> list[RecordDraft]:
    """One :class:`RecordDraft` per record from the checked columns, built as
    :func:`~oramem.requests.frozen_from_fields` builds it (the instance's ``__dict__``
    filled at once: the same object) from one zip of the columns, without the per-record
    dict display and index lookups (~0.4 µs a record of a bulk add)."""
    new = object.__new__
    out: list[RecordDraft] = []
    append = out.append
    columns = zip(ids, texts, scopes["thread_ids"], scopes["user_ids"], scopes["agent_ids"], role_vals, ts_vals,
                  md_vals, checked, ttl_vals, anchors, idx_vals, payloads)
    for rid, text, thread, user, agent, role, ts, md, (_, md_json), days, anchor, index, payload in columns:
        draft = new(RecordDraft)
        draft.__dict__.update(
            id=rid, record_type=record_type, content=text, thread_id=thread, user_id=user, agent_id=agent, role=role,
            timestamp=ts, metadata=md, metadata_json=md_json, ttl_days=days, ttl_anchor=anchor, index=index,
            payload=payload,
        )
        append(draft)
    return out


def _aligned_metadata(value: Any, n: int) -> list[Any]:
    # A dict is broadcast (each record gets its own copy); a list aligns.
    if isinstance(value, Mapping) or value is None:
        return [value] * n
    return _aligned(value, n, "metadata")


def _index_entry(value: Any, argument: str) -> Any:
    if value is None:
        return NOT_SET
    if isinstance(value, str):
        return check_unicode(value, argument)
    if _is_list(value):
        for j, chunk in enumerate(value):
            if not isinstance(chunk, str):
                raise ArgumentTypeError(f"{argument}[{j}] must be a str, got {type(chunk).__name__}")
            check_unicode(chunk, f"{argument}[{j}]")
        return tuple(value)
    raise ArgumentTypeError(f"{argument} must be a str, a list of str chunks, or None, got {type(value).__name__}")


def _retrieval_texts(content: Optional[str], index: Any) -> tuple[str, Optional[tuple[str, ...]]]:
    """(whole retrieval text, caller chunks or None)."""
    if index is NOT_SET:
        return (content or "", None)
    if isinstance(index, str):
        return (index, None)
    return ("", index)


def _check_payload_alignment(i: int, content: Optional[str], index: Any, payload: Optional[tuple[str, Any]]) -> None:
    """SC-4.6 rules that need only the record itself."""
    if payload is None:
        return
    text, caller_chunks = _retrieval_texts(content, index)
    kind, value = payload
    has_rows = (caller_chunks is not None and any(caller_chunks)) or (caller_chunks is None and bool(text.strip()))
    if kind == "empty":
        if has_rows:
            raise ArgumentError(
                f"embeddings[{i}] is empty but record {i} has retrieval text; an empty vector payload "
                "is allowed only where there are no retrieval rows (SC-4.6)"
            )
        return
    if kind == "one":
        if caller_chunks is not None and len([c for c in caller_chunks if c]) > 1:
            raise ArgumentError(
                f"embeddings[{i}] is one vector but index_texts[{i}] has {len(caller_chunks)} chunks; "
                "pass one vector per chunk (SC-4.6)"
            )
        return
    if caller_chunks is None:
        raise ArgumentError(
            f"embeddings[{i}] has {len(value)} vectors; several vectors need a list index_texts[{i}] "
            "of the same length (caller-owned chunks, SC-4.6)"
        )
    if any(not c for c in caller_chunks):
        raise ArgumentError(f"index_texts[{i}] has empty chunks; with explicit vectors every chunk must be non-empty")
    if len(caller_chunks) != len(value):
        raise ArgumentError(
            f"embeddings[{i}] has {len(value)} vectors but index_texts[{i}] has {len(caller_chunks)} chunks (SC-4.6)"
        )


def validate_batch_shape(batch: Any) -> list[RecordDraft]:
    """Store-independent validation of a ``PendingRecordBatch`` (SC-4.10)."""
    return draft_records(batch.texts, batch.record_type, contents_name="texts", **batch.add_kwargs())


# -------------------------------------------------------------------------- normalizer
class Normalizer:
    """Stage 2: resolves drafts and read/update arguments for one store."""

    def __init__(
        self,
        settings: StoreSettings,
        embedder: Any,
        *,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.chunk_chars = chunk_chars
        self.chunk_overlap = chunk_overlap
        self._chunker: Optional[Callable[[str], list[str]]] = None
        # the recorded chunk policy's tail handicap (SC-6.4), read once like the chunker
        self._tail_handicap: Optional[float] = None

    # -- properties of the store
    @property
    def retention(self) -> MemoryRetentionConfig:
        return self.settings.retention or MemoryRetentionConfig()

    @property
    def needs_vectors(self) -> bool:
        return self.settings.search_strategy in (SearchStrategy.VECTOR, SearchStrategy.HYBRID)

    # -- TTL
    def resolve_ttl_days(self, days: Any) -> Optional[int]:
        """SC-5.2: omitted -> default; None (given, or as the default) -> max or never;
        above max -> clamped + warning."""
        cfg = self.retention
        if days is NOT_SET:
            days = cfg.default_ttl_days
        if days is None:  # "never expires" is capped by a maximum too
            return cfg.max_ttl_days
        if cfg.max_ttl_days is not None and days > cfg.max_ttl_days:
            warnings.warn(
                f"ttl_days={days} exceeds the store's max_ttl_days={cfg.max_ttl_days}; clamped to {cfg.max_ttl_days}",
                UserWarning,
                stacklevel=4,
            )
            return cfg.max_ttl_days
        result: Optional[int] = days
        return result

    # -- vectors
    def _check_dim(self, vec: np.ndarray, argument: str) -> np.ndarray:
        dim = self.settings.vector_dim
        if dim is None:
            raise ArgumentError(
                f"{argument}: this store has no vector column (a KEYWORD store created without vector_dim); "
                "open it with vector_dim/an embedder and CREATE_IF_NECESSARY to add vectors"
            )
        if vec.shape[0] != dim:
            raise ArgumentError(f"{argument} has dimension {vec.shape[0]} but the store's vector_dim is {dim} (SC-4.6)")
        return vec

    def embed(self, texts: list[str], *, is_query: bool) -> list[np.ndarray]:
        if not texts:
            return []
        if self.embedder is None:
            raise NoEmbedder(
                "this store needs vectors but has no embedder: pass embedder=... to the store, "
                "or explicit embeddings/query_vector (SC-4.7)"
            )
        out = np.asarray(self.embedder.embed(list(texts), is_query=is_query), dtype=np.float32)
        return self._embedded(out, len(texts))

    async def embed_async(self, texts: list[str], *, is_query: bool) -> list[np.ndarray]:
        if not texts:
            return []
        if self.embedder is None:
            return self.embed(texts, is_query=is_query)  # raises the SC-4.7 error
        fn = getattr(self.embedder, "embed_async", None)
        if fn is None:
            raw = self.embedder.embed(list(texts), is_query=is_query)
        else:
            raw = await fn(list(texts), is_query=is_query)
        return self._embedded(np.asarray(raw, dtype=np.float32), len(texts))

    def _embedded(self, out: np.ndarray, n: int) -> list[np.ndarray]:
        if out.ndim != 2 or out.shape[0] != n:
            raise ArgumentError(f"the embedder returned shape {out.shape} for {n} texts; expected ({n}, dim)")
        if not np.all(np.isfinite(out)):
            raise ArgumentError("the embedder returned NaN or infinite values")
        return [self._check_dim(row, "embedder output") for row in out]

    # -- add
    def plan_records(self, drafts: Sequence[RecordDraft]) -> tuple[list[dict[str, Any]], list[str]]:
        """Resolve everything but the embedder call: returns per-record plans and the
        texts to embed (in order); :meth:`finish_records` fills the vectors in."""
        plans: list[dict[str, Any]] = []
        to_embed: list[str] = []
        seen: set[str] = set()
        ttl_specs: dict[tuple[Any, ...], TTLSpec] = {}  # TTLSpec is immutable: one per (days, anchor)
        # the store's default TTL resolved once, when resolving it cannot warn (a default
        # above the maximum, which MemoryRetentionConfig refuses, would warn per record)
        cfg = self.retention
        quiet = cfg.max_ttl_days is None or cfg.default_ttl_days is None or cfg.default_ttl_days <= cfg.max_ttl_days
        default_days = self.resolve_ttl_days(NOT_SET) if quiet else None
        dim = self.settings.vector_dim
        for d in drafts:
            rid = d.id if d.id is not None else str(uuid.uuid4())
            if rid in seen:
                raise DuplicateRecordError(f"duplicate record id {rid!r} in one call; record ids must be unique")
            seen.add(rid)
            ttl: Optional[TTLSpec] = None
            if d.record_type in TTL_TYPES:
                days = default_days if d.ttl_days is NOT_SET and quiet else self.resolve_ttl_days(d.ttl_days)
                key = (days, d.ttl_anchor or TimeToLiveAnchor.CREATED_AT)
                ttl = ttl_specs.get(key)
                if ttl is None:
                    ttl = ttl_specs[key] = TTLSpec(days=key[0], anchor=key[1])
                if days is not None and ttl.anchor is TimeToLiveAnchor.TIMESTAMP and d.timestamp is None:
                    raise ArgumentError(
                        f"record {rid!r}: ttl_anchor=TIMESTAMP needs an ISO-8601 timestamp for every record that expires (SC-5.3)"
                    )
            first = len(to_embed)
            payload = d.payload
            if (payload is not None and payload[0] == "one" and d.index is NOT_SET and dim is not None
                    and payload[1].shape[0] == dim):
                # what _plan_rows returns for one vector of the store's dimension and no index
                # text, without its call and the label of its error messages
                rows: list[tuple[str, Any]] = [(d.content or "", payload[1])]
            else:
                rows, pending = self._plan_rows(d.content, d.index, payload, f"record {rid!r}")
                to_embed.extend(pending)
            plans.append({"draft": d, "id": rid, "ttl": ttl, "rows": rows, "embed_from": first})
        return plans, to_embed

    def _plan_rows(
        self, content: Optional[str], index: Any, payload: Optional[tuple[str, Any]], label: str
    ) -> tuple[list[tuple[str, Any]], list[str]]:
        """Retrieval rows as (text, vector | 'EMBED' | None) and the texts to embed."""
        text, caller_chunks = _retrieval_texts(content, index)
        if payload is not None:
            kind, value = payload
            if kind == "empty":
                return [], []
            if kind == "one":
                vec = self._check_dim(value, f"embedding of {label}")
                whole = " ".join(c for c in caller_chunks if c) if caller_chunks is not None else text
                return [(whole, vec)], []
            vecs = [self._check_dim(v, f"embedding of {label}") for v in value]
            assert caller_chunks is not None, "a vector list is aligned with index chunks"
            return list(zip(caller_chunks, vecs)), []
        chunks = [c for c in caller_chunks if c] if caller_chunks is not None else self.chunk(text)
        if self.needs_vectors:
            return [(c, "EMBED") for c in chunks], list(chunks)
        return [(c, None) for c in chunks], []

    @property
    def tail_handicap(self) -> float:
        """What vector ranking adds to a record's later rows in this store (SC-6.4)."""
        if self._tail_handicap is None:
            self._tail_handicap = tail_handicap(self.settings.embedder)
        return self._tail_handicap

    def chunk(self, text: str) -> list[str]:
        # the chunking the store recorded, sized to the embedder's window (issue 28)
        if self._chunker is None:
            self._chunker = store_chunker(self.settings.embedder, self.embedder, self.chunk_chars, self.chunk_overlap)
        return self._chunker(text)

    @staticmethod
    def finish_records(plans: list[dict[str, Any]], vectors: list[np.ndarray]) -> list[NewRecord]:
        # NewRecord and ChunkRow built as frozen_from_fields builds them (the instance's
        # __dict__ filled at once: the same objects), without the per-record dict display
        # and the frozen __init__ of each row (~0.5 µs a record of a bulk add)
        new = object.__new__
        out: list[NewRecord] = []
        append = out.append
        for plan in plans:
            d: RecordDraft = plan["draft"]
            k = plan["embed_from"]
            rows = []
            for text, vec in plan["rows"]:
                if isinstance(vec, str):  # "EMBED"
                    vec = vectors[k]
                    k += 1
                row = new(ChunkRow)
                row.__dict__.update(text=text, vector=vec)
                rows.append(row)
            record = new(NewRecord)
            record.__dict__.update(
                id=plan["id"], record_type=d.record_type, content=d.content, thread_id=d.thread_id, user_id=d.user_id,
                agent_id=d.agent_id, role=d.role, timestamp=d.timestamp, metadata=d.metadata,
                metadata_json=d.metadata_json, ttl=plan["ttl"], chunks=tuple(rows), restored_times=None,
            )
            append(record)
        return out

    # -- reads
    @staticmethod
    def list_scope(value: Any, argument: str) -> Scope:
        """SC-3.3: omitted -> any; None -> IS NULL; a str -> equality."""
        if value is NOT_SET:
            return Scope.any()
        if value is None:
            return Scope(ScopeMatch.IS_NULL)
        return Scope(ScopeMatch.EQUALS, check_id(value, argument))

    @staticmethod
    def search_scope(value: Any, exact: Any, argument: str) -> Scope:
        """SC-6.2: a value filters by equality; None with exact=True -> IS NULL."""
        if not isinstance(exact, bool):
            raise ArgumentTypeError(f"exact_{argument[:-3]}_match must be a bool, got {exact!r}")
        if value is None:
            return Scope(ScopeMatch.IS_NULL) if exact else Scope.any()
        return Scope(ScopeMatch.EQUALS, check_id(value, argument))

    def list_request(
        self, record_type: Any, limit: Any, thread_id: Any, user_id: Any, agent_id: Any, metadata_filter: Any
    ) -> ListRequest:
        record_type = check_record_type(record_type)
        if limit is NOT_SET:
            limit = MAX_LIST_LIMIT
        elif limit is not None:
            limit = _positive_int(limit, "limit", "or None for all rows")
        # Scope arguments are validated for every type; unscoped types ignore them (SC-3.3).
        scopes = [
            self.list_scope(v, name) for v, name in ((thread_id, "thread_id"), (user_id, "user_id"), (agent_id, "agent_id"))
        ]
        if record_type not in SCOPED_TYPES:
            scopes = [Scope.any()] * 3
        mf: Any
        if metadata_filter is NOT_SET or metadata_filter is None:
            mf = metadata_filter
        else:
            mf = validate_filter(metadata_filter)
        return ListRequest(record_type, limit, scopes[0], scopes[1], scopes[2], mf)

    def search_plan(
        self,
        query: Any,
        k: Any,
        query_vector: Any,
        thread_id: Any,
        user_id: Any,
        agent_id: Any,
        exact_user_match: Any,
        exact_agent_match: Any,
        exact_thread_match: Any,
        record_types: Any,
        metadata_filter: Any,
        strategy: Any,
        max_distance: Any = None,
    ) -> tuple[SearchRequest, Optional[str]]:
        """A search request, and the query text to embed (None when no embedding is
        needed); :meth:`with_query_vector` completes it."""
        if (query is None) == (query_vector is None):
            raise ArgumentError("pass exactly one of query (text) or query_vector (SC-6.1)")
        k = _positive_int(k, "k")
        chosen = self._strategy(strategy)
        bound = _max_distance(max_distance, chosen)
        text = None
        vector = None
        if query is not None:
            if not isinstance(query, str):
                raise ArgumentTypeError(f"query must be a str, got {type(query).__name__}")
            if not query.strip():
                raise ArgumentError("query is blank; pass some words to search for")
            text = check_unicode(query, "query")
        else:
            vector = self._check_dim(_check_vector(query_vector, "query_vector"), "query_vector")
            if chosen is not SearchStrategy.VECTOR:
                raise ArgumentError(
                    f"{chosen.value} search needs a text query; pass query='...' or strategy='vector' with query_vector"
                )
        if record_types is None:
            types = _SEARCHABLE_TYPES
        else:
            if isinstance(record_types, (str, bytes)) or not isinstance(record_types, Iterable):
                raise ArgumentTypeError("record_types must be a set or list of record types, e.g. {'memory', 'fact'}")
            types = tuple(sorted({check_record_type(t, allow_thread=False) for t in record_types}))
            if not types:
                raise ArgumentError("record_types is empty; pass None to search every type")
        mf = None if metadata_filter is None else _validated_filter(metadata_filter)
        request = SearchRequest(
            strategy=chosen,
            k=k,
            query_text=text,
            query_vector=vector,
            thread=self.search_scope(thread_id, exact_thread_match, "thread_id"),
            user=self.search_scope(user_id, exact_user_match, "user_id"),
            agent=self.search_scope(agent_id, exact_agent_match, "agent_id"),
            record_types=types,
            metadata_filter=mf,
            tail_handicap=self.tail_handicap,
            max_distance=bound,
        )
        needs_embedding = text is not None and chosen in (SearchStrategy.VECTOR, SearchStrategy.HYBRID)
        return request, text if needs_embedding else None

    @staticmethod
    def with_query_vector(request: SearchRequest, vector: np.ndarray) -> SearchRequest:
        from dataclasses import replace

        return replace(request, query_vector=vector)

    def _strategy(self, strategy: Any) -> SearchStrategy:
        """SC-6.6: a per-call strategy limited to what the store supports."""
        store = self.settings.search_strategy
        if strategy is None:
            return store
        chosen = SearchStrategy.coerce(strategy, "strategy")
        allowed = {
            SearchStrategy.HYBRID: {SearchStrategy.VECTOR, SearchStrategy.KEYWORD, SearchStrategy.HYBRID},
            SearchStrategy.VECTOR: {SearchStrategy.VECTOR},
            SearchStrategy.KEYWORD: {SearchStrategy.KEYWORD},
        }[store]
        if chosen not in allowed:
            raise ArgumentError(
                f"this store is open for {store.value} search (its search_strategy) and cannot answer strategy={chosen.value!r}; "
                f"allowed: {', '.join(sorted(s.value for s in allowed))} (open the store with search_strategy='hybrid'; "
                "a vector store is upgraded by that open under CREATE_IF_NECESSARY, a keyword store only "
                "while it holds no records)"
            )
        return chosen

    # -- update
    def update_plan(
        self,
        record_type: Any,
        record_id: Any,
        text: Any,
        index_text: Any,
        embedding: Any,
        metadata: Any,
        timestamp: Any,
        ttl_days: Any,
        ttl_anchor: Any,
    ) -> tuple[dict[str, Any], list[str]]:
        """SC-7: validated update fields and the texts to embed;
        :meth:`finish_update` builds the request."""
        record_type = check_record_type(record_type)
        record_id = check_id(record_id, "record_id")
        if all(v is NOT_SET for v in (text, index_text, embedding, metadata, timestamp, ttl_days, ttl_anchor)):
            raise ArgumentError("update needs at least one of text, index_text, embedding, metadata, timestamp, ttl_days, ttl_anchor")
        if record_type == "thread":
            raise ArgumentError("thread records are containers and cannot be updated; update their records instead")
        text = text if text is NOT_SET else _check_text(text, "text")
        if text is None and record_type in PROFILE_TYPES:
            raise ArgumentError(f"{record_type} records cannot have text=None; pass the new information text")
        payload: Optional[tuple[str, Any]] = None
        if embedding is not NOT_SET and embedding is not None:
            payload = _vector_payload(embedding, "embedding")
        non_empty_payload = payload is not None and payload[0] != "empty"
        if text is None and ((index_text is not NOT_SET and index_text is not None) or non_empty_payload):
            raise ArgumentError("text=None clears the text and retrieval rows; it cannot be combined with index_text or embedding (SC-7.2)")
        if index_text is None and non_empty_payload:
            raise ArgumentError("index_text=None clears retrieval rows; it cannot be combined with a non-empty embedding (SC-7.3)")
        index = NOT_SET if index_text is NOT_SET else _index_entry(index_text, "index_text") if index_text is not None else None

        fields: dict[str, Any] = {"record_type": record_type, "record_id": record_id}
        if text is not NOT_SET:
            fields["content"] = text
        if metadata is not NOT_SET:
            fields["metadata"] = _check_metadata(metadata, "metadata")
        if timestamp is not NOT_SET:
            fields["timestamp"] = None if timestamp is None else parse_timestamp(timestamp, "timestamp")
        if ttl_days is not NOT_SET or ttl_anchor is not NOT_SET:
            if record_type not in TTL_TYPES:
                raise ArgumentError(f"ttl_days/ttl_anchor do not apply to {record_type!r} records (SC-5.1)")
            days = self.resolve_ttl_days(NOT_SET if ttl_days is NOT_SET else _check_ttl_days(ttl_days, "ttl_days"))
            anchor = TimeToLiveAnchor.CREATED_AT if ttl_anchor is NOT_SET else TimeToLiveAnchor.coerce(ttl_anchor, "ttl_anchor")
            if days is not None and anchor is TimeToLiveAnchor.TIMESTAMP and fields.get("timestamp", NOT_SET) is None:
                raise ArgumentError("ttl_anchor=TIMESTAMP needs an event timestamp, but this update clears it (SC-7.6)")
            fields["ttl"] = TTLSpec(days=days, anchor=anchor)

        to_embed: list[str] = []
        if text is None or index is None:
            fields["retrieval"] = RetrievalChange.CLEAR
        elif index is not NOT_SET or text is not NOT_SET:
            content = text if text is not NOT_SET else None
            if payload is None and embedding is None:  # explicit embedding=None: rows without vectors
                rows = [(c, None) for c in self._plain_chunks(content, index)]
            else:
                if payload is not None:
                    _check_payload_alignment(0, content, index, payload)
                rows, to_embed = self._plan_rows(content, index, payload, f"record {record_id!r}")
            fields["retrieval"] = RetrievalChange.REPLACE
            fields["rows"] = rows
        elif embedding is not NOT_SET:
            if embedding is None:
                fields["retrieval"] = RetrievalChange.STRIP_VECTORS
            else:
                assert payload is not None  # set above for every embedding but NOT_SET/None
                kind, value = payload
                vecs = [] if kind == "empty" else [value] if kind == "one" else value
                fields["retrieval"] = RetrievalChange.REVECTOR
                fields["vectors"] = tuple(self._check_dim(v, "embedding") for v in vecs)
        return fields, to_embed

    def _plain_chunks(self, content: Optional[str], index: Any) -> list[str]:
        text, caller = _retrieval_texts(content, index)
        return [c for c in caller if c] if caller is not None else self.chunk(text)

    @staticmethod
    def finish_update(fields: dict[str, Any], vectors: list[np.ndarray]) -> UpdateRequest:
        fields = dict(fields)
        rows = fields.pop("rows", None)
        if rows is not None:
            it = iter(vectors)
            fields["chunks"] = tuple(ChunkRow(t, next(it) if isinstance(v, str) else v) for t, v in rows)
        return UpdateRequest(**fields, embedded=bool(len(vectors)))


#: validate_filter answers by filter document (filter_key): a search's filter is validated
#: once per distinct document (an agent's searches repeat a few shapes); emptied when full
#: (plain dict operations, atomic under the GIL: no lock on the search path)
_VALIDATED: dict[tuple[Any, ...], dict[str, Any]] = {}
_VALIDATED_MAX = 512


def _validated_filter(metadata_filter: Any) -> dict[str, Any]:
    """``validate_filter(metadata_filter)``, remembered for up to ``_VALIDATED_MAX``
    distinct plain-JSON documents (:func:`oramem.filters.filter_key`; anything else, and a
    filter that raises, is validated every time). The answer is shared between the requests
    of equal documents: the engines only read it."""
    key = filter_key(metadata_filter)
    if key is None:
        return validate_filter(metadata_filter)
    found = _VALIDATED.get(key)
    if found is None:
        found = validate_filter(metadata_filter)
        if len(_VALIDATED) >= _VALIDATED_MAX:
            _VALIDATED.clear()
        _VALIDATED[key] = found
        remember_filter_key(found, filter_key(found))  # the engine's caches look it up by identity
    return found


def _max_distance(value: Any, strategy: SearchStrategy) -> Optional[float]:
    """``search``'s ``max_distance``: None, or a finite number >= 0, for a vector search only."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"max_distance must be a number (a cosine distance, 0 to 2) or None, got {type(value).__name__}")
    bound = float(value)
    if not math.isfinite(bound) or bound < 0:
        raise ArgumentError(f"max_distance must be a finite cosine distance >= 0 (0 to 2), got {value!r}")
    if strategy is not SearchStrategy.VECTOR:
        raise ArgumentError(
            f"max_distance bounds vector distances, and this search is {strategy.value}: keyword and hybrid distances "
            "rank results within one search and do not compare across searches; pass strategy='vector' or drop max_distance")
    return bound


def _positive_int(value: Any, argument: str, extra: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{argument} must be an int >= 1{' ' + extra if extra else ''}, got {value!r}")
    if value < 1:
        raise ArgumentError(f"{argument} must be >= 1{' ' + extra if extra else ''}, got {value}")
    return int(value)

