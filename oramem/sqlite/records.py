"""Reading records: the selected columns, row → :class:`Record` conversion, and the SQL
predicates every read path shares (visibility under TTL, scope, metadata filter)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Mapping, Optional, Union

from ..requests import Scope, ScopeMatch
from ..types import MessageRecord, NotSetType, Record
from .filters_sql import compile_filter
from .metamask import UNKEYED, filter_key

__all__ = ["RECORD_COLUMNS", "to_record", "Where"]

#: Columns read for a record, in the order :func:`to_record` expects (table alias ``r``).
RECORD_COLUMNS = (
    "r.seq, r.record_type, r.id, r.content, r.timestamp, r.metadata, r.thread_id, "
    "r.user_id, r.agent_id, r.role, r.created_at, r.expires_at"
)

#: Effective scope columns: a profile is in the scope of its own actor id (SC-6.2).
_SCOPE_COLUMNS = {
    "thread": ("r.thread_id", "r.thread_id"),
    "user": ("r.user_id", "CASE WHEN r.record_type = 'user_profile' THEN r.id ELSE r.user_id END"),
    "agent": ("r.agent_id", "CASE WHEN r.record_type = 'agent_profile' THEN r.id ELSE r.agent_id END"),
}


_new = object.__new__
#: the scanner ``json.loads`` runs (a default decoder's), without its per-call wrappers
_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def load_json(text: Any) -> Any:
    """``json.loads(text)``: the same value, or the same error (anything but a whole JSON
    document without surrounding whitespace goes through ``json.loads`` itself)."""
    if type(text) is str:
        try:
            value, end = _scan_json(text, 0)
        except StopIteration:
            pass
        else:
            if end == len(text):
                return value
    return json.loads(text)


def to_record(row: tuple[Any, ...]) -> Record:
    """The record of a :data:`RECORD_COLUMNS` row. Built like
    :func:`oramem.requests.frozen_from_fields` (the instance's ``__dict__`` filled in field
    order: the same object as the constructor's, a few µs less per record of a search)."""
    seq, record_type, rid, content, timestamp, metadata, thread_id, user_id, agent_id, role, created, expires = row
    record: Record
    if record_type == "message":
        record = _new(MessageRecord)
        record.__dict__.update(
            id=rid, record_type=record_type, content=content, timestamp=timestamp,
            metadata=None if metadata is None else load_json(metadata), thread_id=thread_id, user_id=user_id,
            agent_id=agent_id, created_at=created, expires_at=expires, role=role, seq_no=seq,
        )
        return record
    record = _new(Record)
    record.__dict__.update(
        id=rid, record_type=record_type, content=content, timestamp=timestamp,
        metadata=None if metadata is None else load_json(metadata), thread_id=thread_id, user_id=user_id,
        agent_id=agent_id, created_at=created, expires_at=expires,
    )
    return record


class Where:
    """Accumulates ANDed predicates over ``r`` with named parameters."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: dict[str, Any] = {}

    def add(self, sql: str, **params: Any) -> "Where":
        self.parts.append(sql)
        self.params.update(params)
        return self

    def visible(self, now: str) -> "Where":
        return self.add("(r.expires_at IS NULL OR r.expires_at > :now)", now=now)

    def scopes(self, thread: Scope, user: Scope, agent: Scope, profiles: bool) -> "Where":
        """Scope predicates; ``profiles`` puts profiles in their own actor's scope."""
        for name, scope in (("thread", thread), ("user", user), ("agent", agent)):
            column = _SCOPE_COLUMNS[name][1 if profiles else 0]
            if scope.match == ScopeMatch.IS_NULL:
                self.add(f"{column} IS NULL")
            elif scope.match == ScopeMatch.EQUALS:
                self.add(f"{column} = :scope_{name}", **{f"scope_{name}": scope.value})
        return self

    def metadata(self, metadata_filter: Union[NotSetType, None, Mapping[str, Any]], key: Any = UNKEYED) -> "Where":
        """The filter's predicate; ``key``: its :func:`.metamask.filter_key` if known."""
        if isinstance(metadata_filter, NotSetType):
            return self
        if metadata_filter is None:
            return self.add("r.metadata IS NULL")
        sql, params = compiled_filter(metadata_filter, key)
        return self.add(sql, **params)

    def sql(self) -> str:
        return " AND ".join(self.parts) if self.parts else "1"

    def copy(self) -> "Where":
        """The predicates so far, to extend apart from this one."""
        other = Where()
        other.parts, other.params = list(self.parts), dict(self.params)
        return other


#: compile_filter answers by filter document (:func:`.metamask.filter_key`), most recent last
_COMPILED: "OrderedDict[tuple[Any, ...], tuple[str, dict[str, Any]]]" = OrderedDict()
_COMPILED_MAX = 256
_COMPILED_LOCK = threading.Lock()


def compiled_filter(metadata_filter: Mapping[str, Any], key: Any = UNKEYED) -> tuple[str, dict[str, Any]]:
    """:func:`.filters_sql.compile_filter` of a validated filter, remembered for the last
    ``_COMPILED_MAX`` distinct filter documents (the SQL depends on the document alone; a
    filter that raises is never remembered). The params are a fresh dict each time.
    ``key``: the filter's :func:`.metamask.filter_key`, if the caller has it."""
    if key is UNKEYED:
        key = filter_key(metadata_filter)
    if key is None:
        return compile_filter(metadata_filter)
    with _COMPILED_LOCK:
        found = _COMPILED.get(key)
        if found is not None:
            _COMPILED.move_to_end(key)
    if found is None:
        found = compile_filter(metadata_filter)
        with _COMPILED_LOCK:
            _COMPILED[key] = found
            while len(_COMPILED) > _COMPILED_MAX:
                _COMPILED.popitem(last=False)
    return found[0], dict(found[1])


def dump_metadata(metadata: Optional[Mapping[str, Any]]) -> Optional[str]:
    """Stored JSON text of a metadata mapping (None stays SQL NULL)."""
    if metadata is None:
        return None
    try:
        return json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"metadata must be JSON-serialisable: {exc}") from None
