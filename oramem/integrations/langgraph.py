"""LangGraph long-term memory: ``OramemStore``, a ``langgraph.store.base.BaseStore`` over an oramem store.

Install with ``pip install 'oramem[langgraph]'``. Works on both engines (it calls the public
store API only); ``batch`` drives the store's sync API, ``abatch`` its native async API.

Mapping (one LangGraph item = one oramem record of ``record_type``, default ``memory``):

==================  =================================================================
LangGraph           oramem
==================  =================================================================
namespace, key      record id ``lg-<sha256>`` of (fixed scope, namespace, key), plus
                    ``metadata["langgraph"]`` = ``{"namespace": [...], "key": ...,
                    "prefixes": [...], "updated_at": ..., "expires_at": ...}``
fixed scope         ``user_id`` / ``agent_id`` / ``thread_id`` given to the constructor:
                    every record written carries it, every read is limited to it
namespace → scope   ``scope_from_namespace={"user_id": 1}`` also copies namespace label 1
                    into the record's ``user_id`` (so ``("memories", "alice")`` items belong
                    to user ``alice``: oramem's forget-an-actor cascade removes them)
value               ``metadata["value"]`` (what ``filter`` matches) and, as JSON, the
                    record's content
index fields        retrieval text: one caller-owned chunk per extracted field text
                    (``"$"`` = the whole value as JSON); ``index=False`` = no retrieval rows
query search        ``store.search`` with the store's strategy (vector / keyword / hybrid);
                    ``score`` = ``1 - distance``
filter              oramem metadata filter on the value (``$eq $ne $gt $gte $lt $lte`` as
                    LangGraph has them, plus oramem's other operators); nested dicts are a
                    subset match
TTL (minutes)       precise expiry in ``metadata["langgraph"]["expires_at"]`` (expired
                    items are never returned), plus an oramem TTL of whole days from the
                    last write/refresh so the store's purge removes them physically
==================  =================================================================

Items are always returned with their exact namespace and key; reads never cross the fixed
scope. A record id is predictable, so a record of another scope may sit under an item's id
(written by an adapter that takes caller ids, or by an ``OramemStore`` that maps the scope
differently): ``get`` and ``search`` never return it, ``delete`` leaves it, and ``put`` raises
``ValueError`` rather than write the item's value into it. Likewise a record whose LangGraph
metadata was written by another scope (a search or ``list_namespaces`` above a
``scope_from_namespace`` label reads every user's records): a record is an item of this store
only under the id this store derives from its namespace and key, with the scope it gives that
namespace; a query search asks the store for more hits while others fill its top-k.
On a store with a write-time firewall (SC-15) a ``put`` whose namespace labels or key hold
text the policy redacts is refused (the item could not be found by them again).
``list_namespaces`` and a search without a query read the matching records' metadata
(filters run in the database), so they cost one pass over the matching items.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from datetime import datetime, timedelta, timezone
from collections.abc import Mapping
from typing import Any, Iterable, Optional, cast

from . import check_scope_ids, check_store, require
from ..errors import DuplicateRecordError
from ..threads import write_refusal
from ..trust.firewall import VERDICT_KEY, scan
from ._colour import call, run_async, run_async_in_transaction, run_sync, run_sync_in_transaction

require("langgraph.store.base", "langgraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path  # noqa: E402

__all__ = ["OramemStore"]

_SCOPES = ("user_id", "agent_id", "thread_id")
_READ_ONLY_REFRESH = ("{asked} extends the TTL of the items read, which writes, and this oramem store is read-only: "
                      "leave it out (a read-only store's reads do not refresh TTLs) or open the store writable")
_TTL_TYPES = {"message", "memory", "guideline", "fact", "preference"}
_SCOPED_TYPES = _TTL_TYPES


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    # fixed width so that ISO strings compare in time order inside metadata filters
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _writes(ops: list[Op]) -> bool:
    return any(isinstance(op, PutOp) for op in ops)


def _prefix_token(labels: Iterable[str]) -> str:
    return json.dumps(list(labels), ensure_ascii=False)


class OramemStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items live in an oramem store.

    ``store``: an open oramem store (``SQLiteMemoryStore`` or ``OracleDBMemoryStore``).
    ``user_id`` / ``agent_id`` / ``thread_id``: fixed scope of every item (see module doc).
    ``scope_from_namespace``: ``{"user_id": i, ...}`` takes that scope from namespace label ``i``.
    ``index_fields``: default fields to embed (``["$"]``, the whole value); ``None`` disables
    query search (items are stored without retrieval rows and ``query=`` raises).
    ``ttl``: LangGraph ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``).
    """

    supports_ttl = True

    def __init__(
        self,
        store: Any,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        thread_id: Optional[str] = None,
        scope_from_namespace: Optional[Mapping[str, int]] = None,
        index_fields: Optional[list[str]] = ["$"],  # noqa: B006 - read only
        record_type: str = "memory",
        ttl: Optional[TTLConfig] = None,
    ) -> None:
        fixed, mapping, ttl_keys = self._check_config(
            user_id=user_id, agent_id=agent_id, thread_id=thread_id, scope_from_namespace=scope_from_namespace,
            index_fields=index_fields, record_type=record_type, ttl=ttl,
        )
        check_store(store, "OramemStore")
        self._store = store
        self._fixed = fixed
        self._from_ns = mapping
        self._index_fields = index_fields
        self._record_type = record_type
        self._default_ttl = ttl_keys.get("default_ttl")
        self._refresh_default = ttl_keys.get("refresh_on_read", True)
        if ttl_keys.get("refresh_on_read") is True and self._read_only():
            raise ValueError(_READ_ONLY_REFRESH.format(asked='ttl={"refresh_on_read": True}'))
        self.ttl_config = cast(TTLConfig, ttl_keys) if ttl_keys else None
        #: what query search embeds, in LangGraph's ``IndexConfig`` shape (``embed`` only when
        #: the store was built by :meth:`from_index_config`)
        self.index_config: Optional[dict[str, Any]] = (
            None if index_fields is None else {"dims": getattr(store, "vector_dim", None), "fields": list(index_fields)}
        )

    @staticmethod
    def _check_config(
        *,
        user_id: Optional[str],
        agent_id: Optional[str],
        thread_id: Optional[str],
        scope_from_namespace: Optional[Mapping[str, int]],
        index_fields: Optional[list[str]],
        record_type: str,
        ttl: Optional[TTLConfig],
    ) -> tuple[dict[str, Optional[str]], dict[str, int], dict[str, Any]]:
        """The constructor's checks, also run by :meth:`from_index_config` before it opens a
        SQLite file (a refused argument leaves no file behind): the fixed scope, the namespace
        mapping and the TTL keys, checked."""
        if record_type not in _SCOPED_TYPES:
            raise ValueError(f"record_type must be one of {sorted(_SCOPED_TYPES)}, got {record_type!r}")
        fixed = {"user_id": user_id, "agent_id": agent_id, "thread_id": thread_id}
        check_scope_ids(*fixed.items())
        mapping = dict(scope_from_namespace or {})
        for name, position in mapping.items():
            if name not in _SCOPES:
                raise ValueError(f"scope_from_namespace keys must be among {list(_SCOPES)}, got {name!r}")
            if not isinstance(position, int) or isinstance(position, bool) or position < 0:
                raise ValueError(f"scope_from_namespace[{name!r}] must be a namespace position (int >= 0)")
            if fixed[name] is not None:
                raise ValueError(f"{name} is both fixed and taken from the namespace; choose one")
        if index_fields is not None and (
            not isinstance(index_fields, list) or not all(isinstance(f, str) and f for f in index_fields)
        ):
            raise ValueError("index_fields must be a list of field paths (e.g. ['$'] or ['text', 'tags[*]']) or None")
        ttl_keys: dict[str, Any] = dict(ttl or {})
        unknown = set(ttl_keys) - {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}
        if unknown:
            raise ValueError(f"unknown TTLConfig key(s) {sorted(unknown)}")
        if ttl_keys.get("sweep_interval_minutes") is not None:
            raise ValueError(
                "sweep_interval_minutes is not used: expired items are hidden at once and the oramem "
                "store's purge removes them (Oracle: its scheduler job; SQLite: purge_expired() / on open)"
            )
        if ttl_keys.get("default_ttl") is not None:
            OramemStore._check_ttl(ttl_keys["default_ttl"])
        return fixed, mapping, ttl_keys

    @classmethod
    def from_index_config(cls, index: Optional[Mapping[str, Any]] = None, *, path: str = ":memory:", **kwargs: Any):
        """An ``OramemStore`` on a new or existing SQLite file, configured like LangGraph's stores.

        ``index={"dims": 1536, "embed": embeddings, "fields": ["text"]}`` embeds with the given
        LangChain ``Embeddings`` (or embedding function, or ``"provider:model"``) in a vector
        store; without ``index`` the SQLite store searches by keyword (FTS5). Other keyword
        arguments go to :class:`OramemStore`; one it does not take is refused before the SQLite
        file is opened (with ``index``, its ``fields`` are the store's ``index_fields``).
        """
        from .. import SQLiteMemoryStore
        from .lc_embeddings import LangChainEmbedder

        accepted = [name for name in inspect.signature(cls.__init__).parameters if name not in ("self", "store")]
        if index:
            accepted.remove("index_fields")
        not_taken = sorted(set(kwargs) - set(accepted))
        if not_taken:
            hint = " (with index=, give the fields as index['fields'])" if "index_fields" in not_taken else ""
            raise TypeError(
                f"from_index_config has no argument {', '.join(map(repr, not_taken))}{hint}; it accepts index, path, "
                f"{', '.join(accepted)}"
            )
        unknown = set(index or {}) - {"dims", "embed", "fields"}
        if index and (unknown or "dims" not in index or "embed" not in index):
            raise ValueError(
                f"index needs 'dims' and 'embed' (and optionally 'fields'); got keys {sorted(index)}"
            )
        fields = list(index.get("fields") or ["$"]) if index else None
        # the constructor's checks before the SQLite file is opened (or created)
        config = inspect.signature(cls.__init__).bind_partial(None, None, **kwargs)
        config.apply_defaults()
        checked = {k: v for k, v in config.arguments.items() if k not in ("self", "store")}
        if index:
            checked["index_fields"] = fields
        cls._check_config(**checked)
        if not index:
            return cls(SQLiteMemoryStore(path, search_strategy="keyword"), **kwargs)
        embedder = LangChainEmbedder(index["embed"], index["dims"])
        made = cls(SQLiteMemoryStore(path, embedder=embedder, vector_dim=index["dims"]), index_fields=fields, **kwargs)
        made.index_config = {"dims": index["dims"], "embed": index["embed"], "fields": fields}
        return made

    # -- reads that name refresh_ttl ----------------------------------------------------------
    # LangGraph turns refresh_ttl=None into the TTL config's default before the operation reaches
    # batch, so an explicit refresh_ttl=True is told apart here: on a read-only store it is refused
    def _check_refresh_arg(self, refresh_ttl: Any) -> None:
        if refresh_ttl is True and self._read_only():
            raise ValueError(_READ_ONLY_REFRESH.format(asked="refresh_ttl=True"))

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: Optional[bool] = None) -> Optional[Item]:
        self._check_refresh_arg(refresh_ttl)
        return super().get(namespace, key, refresh_ttl=refresh_ttl)

    async def aget(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: Optional[bool] = None) -> Optional[Item]:
        self._check_refresh_arg(refresh_ttl)
        return await super().aget(namespace, key, refresh_ttl=refresh_ttl)

    def search(self, namespace_prefix: tuple[str, ...], /, **kwargs: Any) -> list[SearchItem]:
        self._check_refresh_arg(kwargs.get("refresh_ttl"))
        return super().search(namespace_prefix, **kwargs)

    async def asearch(self, namespace_prefix: tuple[str, ...], /, **kwargs: Any) -> list[SearchItem]:
        self._check_refresh_arg(kwargs.get("refresh_ttl"))
        return await super().asearch(namespace_prefix, **kwargs)

    def _read_only(self) -> bool:
        # the SQLite engine opened read-only (read_only=True, or a file it cannot write): the
        # store's engine is the seam for layers above the store API (the Oracle engine has none)
        return getattr(getattr(self._store, "engine", None), "read_only", False) is True

    # -- colour entry points ------------------------------------------------------------------
    # A batch with a put runs in one store transaction: every put's reads (the id's current
    # holder, the thread check of oramem.threads) and writes see one state, no other writer
    # runs between them, and a put that fails leaves none of the batch's writes behind.
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        run = run_sync_in_transaction if _writes(ops) else run_sync
        return run(self._store, self._batch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        run = run_async_in_transaction if _writes(ops) else run_async
        return await run(self._store, self._batch(ops))

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _check_ttl(ttl: Any) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
            raise ValueError(f"ttl is in minutes and must be a positive number, got {ttl!r}")

    def _scope(self, namespace: tuple[str, ...]) -> dict[str, Optional[str]]:
        scope = dict(self._fixed)
        for name, position in self._from_ns.items():
            scope[name] = namespace[position] if position < len(namespace) else None
        return scope

    def _record_id(self, namespace: tuple[str, ...], key: str) -> str:
        fixed = [self._fixed[s] for s in _SCOPES]
        digest = hashlib.sha256(json.dumps([fixed, list(namespace), key], ensure_ascii=False).encode()).hexdigest()
        return f"lg-{digest[:48]}"

    def _scope_filter(self, prefix: tuple[str, ...]) -> dict[str, Any]:
        """``list`` scope arguments: the fixed scope, where ``None`` means "records without one"
        (so an unscoped adapter never sees a scoped one's items), and namespace-derived scope
        only where the prefix reaches that label."""
        out: dict[str, Any] = {name: self._fixed[name] for name in _SCOPES if name not in self._from_ns}
        for name, position in self._from_ns.items():
            if position < len(prefix):
                out[name] = prefix[position]
        return out

    @staticmethod
    def _search_scope(scope: dict[str, Any]) -> dict[str, Any]:
        out = dict(scope)
        for name, value in scope.items():
            if value is None:
                out[f"exact_{name.split('_')[0]}_match"] = True
        return out

    def _live_filter(self, prefix: tuple[str, ...], value_filter: Optional[dict]) -> dict[str, Any]:
        mine: dict[str, Any] = (
            {"prefixes": {"$array_contains": _prefix_token(prefix)}} if prefix else {"key": {"$exists": True}}
        )
        clauses: list[dict] = [
            {"langgraph": mine},
            {"$or": [{"langgraph": {"expires_at": {"$exists": False}}}, {"langgraph": {"expires_at": {"$gt": _iso(_now())}}}]},
        ]
        if value_filter:
            if not isinstance(value_filter, Mapping):
                raise TypeError(f"filter must be a dict, got {type(value_filter).__name__}")
            clauses.append({"value": dict(value_filter)})
        return {"$and": clauses}

    def _texts(self, value: Mapping[str, Any], index: Any) -> list[str]:
        fields = self._index_fields if index is None else index
        if index is False or fields is None:
            return []
        texts: list[str] = []
        for field in fields:
            texts.extend(t for t in get_text_at_path(value, field) if t)
        return texts

    def _item(self, record: Any, score: Optional[float] = None, search: bool = False) -> Item:
        meta = record.metadata["langgraph"]
        created = datetime.fromisoformat(record.created_at)
        updated = max(created, datetime.fromisoformat(meta["updated_at"]))
        namespace = tuple(meta["namespace"])
        value = record.metadata.get("value", {})
        if search:
            return SearchItem(namespace, meta["key"], value, created, updated, score)
        return Item(value=value, key=meta["key"], namespace=namespace, created_at=created, updated_at=updated)

    def _expiry_fields(self, ttl: Optional[float], moment: datetime) -> dict[str, Any]:
        """oramem TTL arguments for a LangGraph TTL in minutes (None = never expires)."""
        if ttl is None:
            return {"ttl_days": None, "timestamp": _iso(moment)}
        days = max(1, math.ceil(ttl / 1440))
        return {"ttl_days": days, "ttl_anchor": "timestamp", "timestamp": _iso(moment)}

    # -- the plan (one body for both colours) ------------------------------------------------
    def _batch(self, ops: list[Op]):
        for op in ops:
            if isinstance(op, PutOp):
                self._validate_put(op)
            elif not isinstance(op, (GetOp, SearchOp, ListNamespacesOp)):
                raise TypeError(f"unknown LangGraph store operation {type(op).__name__}")
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append((yield from self._get(op)))
            elif isinstance(op, SearchOp):
                results.append((yield from self._search(op)))
            elif isinstance(op, PutOp):
                results.append((yield from self._put(op)))
            else:
                results.append((yield from self._list_namespaces(op)))
        return results

    def _validate_put(self, op: PutOp) -> None:
        if not op.namespace:
            from langgraph.store.base import InvalidNamespaceError

            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.value is not None:
            if not isinstance(op.value, Mapping):
                raise TypeError(f"value must be a dict (or None to delete), got {type(op.value).__name__}")
            json.dumps(dict(op.value))  # not JSON-serialisable: TypeError before anything is written
            if op.index is not None and op.index is not False and not (
                isinstance(op.index, list) and all(isinstance(f, str) and f for f in op.index)
            ):
                raise ValueError("index must be False, None or a list of field paths")
            if op.ttl is not None:
                self._check_ttl(op.ttl)

    def _in_scope(self, record: Any, namespace: tuple[str, ...]) -> bool:
        """Whether ``record`` carries exactly the scope this store gives ``namespace``. A record
        id is derived from (fixed scope, namespace, key), so it can be predicted: a record of
        another scope under that id (written through another adapter that takes caller ids, or
        by another ``OramemStore`` mapping the scope differently) is never read, overwritten or
        deleted as this store's item."""
        scope = self._scope(namespace)
        return (record.user_id, record.agent_id, record.thread_id) == (
            scope["user_id"], scope["agent_id"], scope["thread_id"])

    def _is_item(self, record: Any) -> bool:
        """Whether ``record`` is an item this store wrote: LangGraph metadata naming a namespace
        and key, the record id this store derives from them, and the scope it gives that
        namespace. Metadata is written by whoever writes a record, so a record of another scope
        may claim any namespace (e.g. Alice's, under ``scope_from_namespace``); it is not hers."""
        meta = (record.metadata or {}).get("langgraph")
        if not isinstance(meta, Mapping):
            return False
        labels, key = meta.get("namespace"), meta.get("key")
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels) or not isinstance(key, str):
            return False
        namespace = tuple(labels)
        return record.id == self._record_id(namespace, key) and self._in_scope(record, namespace)

    def _read_one(self, namespace: tuple[str, ...], key: str):
        record = yield call("get", self._record_type, self._record_id(namespace, key))
        if record is None or not record.metadata or "langgraph" not in record.metadata:
            return None
        if not self._in_scope(record, namespace):
            return None
        meta = record.metadata["langgraph"]
        if tuple(meta.get("namespace", ())) != tuple(namespace) or meta.get("key") != key:
            return None
        expires = meta.get("expires_at")
        if expires is not None and expires <= _iso(_now()):
            return None
        return record

    def _refresh(self, record: Any):
        """Extend ``record``'s TTL from now (a read's refresh). Not on a read-only store, where
        reading is all that can happen (trial33: every get or search of an item with a TTL
        failed there with "update needs to write"): LangGraph hands its default refresh on as
        ``refresh_ttl=True``, so a refresh asked for is refused before (``get``/``search`` and
        their async twins with ``refresh_ttl=True``, the constructor with
        ``ttl={"refresh_on_read": True}``), and the default one is left out here."""
        meta = record.metadata["langgraph"]
        ttl = meta.get("ttl")
        if ttl is None or self._read_only():
            return
        moment = _now()
        # the firewall's verdict (SC-15.4) is not the caller's to write back: a store with a
        # policy recomputes it over what the record holds (SC-15.5), one without has none
        metadata = {k: v for k, v in record.metadata.items() if k != VERDICT_KEY}
        metadata["langgraph"] = {**meta, "expires_at": _iso(moment + timedelta(minutes=ttl))}
        yield call("update", self._record_type, record.id, metadata=metadata, **self._expiry_fields(ttl, moment))

    def _wants_refresh(self, flag: Optional[bool]) -> bool:
        return self._refresh_default if flag is None else bool(flag)

    def _get(self, op: GetOp):
        record = yield from self._read_one(tuple(op.namespace), op.key)
        if record is None:
            return None
        if self._wants_refresh(op.refresh_ttl):
            yield from self._refresh(record)
        return self._item(record)

    def _put(self, op: PutOp):
        namespace = tuple(op.namespace)
        record_id = self._record_id(namespace, op.key)
        existing = yield call("get", self._record_type, record_id)
        if existing is not None and not self._in_scope(existing, namespace):
            if op.value is None:
                return None  # not this store's item: nothing of its scope to delete
            raise ValueError(
                f"the record id of item {op.key!r} in namespace {namespace!r} is taken by a record of another "
                "scope; it is left unchanged (remove that record, or use another key)"
            )
        if op.value is None:
            if existing is not None:
                yield call("delete", self._record_type, record_id)
            return None
        yield from self._labels_kept(namespace, op.key)
        value = dict(op.value)
        ttl = op.ttl if op.ttl is not None else self._default_ttl
        moment = _now()
        meta: dict[str, Any] = {
            "namespace": list(namespace),
            "key": op.key,
            "prefixes": [_prefix_token(namespace[: i + 1]) for i in range(len(namespace))],
            "updated_at": _iso(moment),
        }
        if ttl is not None:
            meta["ttl"] = ttl
            meta["expires_at"] = _iso(moment + timedelta(minutes=ttl))
        metadata = {"langgraph": meta, "value": value}
        content = json.dumps(value, ensure_ascii=False)
        texts = self._texts(value, op.index)
        expiry = self._expiry_fields(ttl, moment)
        if existing is not None:
            changed = yield call(
                "update", self._record_type, record_id, text=content, index_text=texts or "", metadata=metadata, **expiry
            )
            if changed:
                return None
        scope = self._scope(namespace)
        if scope["thread_id"] is not None:
            # a user's item may not be her first record in a thread of shared records only
            # (SC-13.5, oramem.threads): her erasure would take that thread whole
            refusal = yield from write_refusal(scope["thread_id"], scope["user_id"], scope["agent_id"])
            if refusal is not None:
                raise ValueError(refusal)
        add = call(
            "add",
            [content],
            self._record_type,
            record_ids=[record_id],
            index_texts=[texts],
            metadata=[metadata],
            user_ids=scope["user_id"],
            agent_ids=scope["agent_id"],
            thread_ids=scope["thread_id"],
            timestamps=expiry["timestamp"],
            ttl_days=expiry["ttl_days"],
            **({"ttl_anchor": "timestamp"} if "ttl_anchor" in expiry else {}),
        )
        try:
            yield add
        except DuplicateRecordError:
            if existing is not None:
                raise
            # ``get`` saw no record, yet the id may be held by an expired one the store has
            # not purged yet (expired records are invisible, not gone, SC-5.4), and maybe not
            # this store's: another ``OramemStore`` mapping the scope differently derives the
            # same id for the same namespace and key. So look at it first: a new expiry makes
            # it visible again (SC-5.6), inside the batch's transaction (``batch``), and a record
            # of another scope makes this put fail, which rolls the look back with the batch;
            # this store's own expired item is deleted (that one record, SC-8.1) and the add
            # runs once more. Nobody else's expired records are touched by this put
            yield call("update", self._record_type, record_id, ttl_days=None)
            holder = yield call("get", self._record_type, record_id)
            if holder is not None and not self._in_scope(holder, namespace):
                raise ValueError(
                    f"the record id of item {op.key!r} in namespace {namespace!r} is taken by an expired record of "
                    "another scope that the store has not purged yet; it is left unchanged (purge expired records "
                    "with the store's purge_expired(), or use another key)"
                ) from None
            yield call("delete", self._record_type, record_id)
            yield add
        return None

    def _labels_kept(self, namespace: tuple[str, ...], key: str):
        """The item's namespace labels and key go into its record's metadata, which the
        store's firewall screens (SC-15.2): a label or key holding what the policy redacts (a
        phone number under ``pii="redact"``) would be stored redacted, and the item, found by
        its exact namespace and key, could never be read back (red29: the put succeeded and
        get returned None). Refused before anything is written; a rejected category is
        refused by the store itself."""
        policy = yield call("get_firewall")
        if policy is None:
            return
        detectors = policy.active_detectors()
        parts = [(f"namespace label {i + 1}", label) for i, label in enumerate(namespace)] + [("the key", key)]
        for what, text in parts:
            names = sorted({f.detector for f in scan(text, detectors) if policy.action(f.category) == "redact"})
            if names:
                raise ValueError(
                    f"{what} holds text the store's firewall redacts ({', '.join(names)}), so the item could not be "
                    "found by its namespace and key again; nothing was written. Use a label or key without it "
                    "(an id instead of a phone number or e-mail address), or change the store's policy")

    def _search(self, op: SearchOp):
        prefix = tuple(op.namespace_prefix)
        if op.limit < 0 or op.offset < 0:
            raise ValueError("search limit and offset must be >= 0")
        metadata_filter = self._live_filter(prefix, op.filter)
        scope = self._scope_filter(prefix)
        if op.query:
            if self._index_fields is None:
                raise ValueError(
                    "this OramemStore was created with index_fields=None, so items have no retrieval text; "
                    "pass index_fields (e.g. ['$']) to search with query=, or search with filter= only"
                )
            if op.limit == 0:
                return []
            want = k = op.offset + op.limit
            while True:
                hits = yield call(
                    "search",
                    op.query,
                    k=k,
                    record_types=[self._record_type],
                    metadata_filter=metadata_filter,
                    **self._search_scope(scope),
                )
                items = [(record, distance) for record, distance in hits if self._is_item(record)]
                if len(items) >= want or len(hits) < k:
                    break
                k *= 2  # records that are not items filled the top-k: ask for more
            chosen = [(record, 1.0 - distance) for record, distance in items][op.offset :]
            if len(chosen) < op.limit:
                # like LangGraph's own stores: items without retrieval text follow the scored ones
                seen = {record.id for record, _ in hits}
                rest = yield from self._listed(metadata_filter, scope)
                unscored = [r for r in rest if r.id not in seen]
                skip = max(0, op.offset - len(items))
                chosen.extend((r, None) for r in unscored[skip : skip + op.limit - len(chosen)])
        else:
            records = yield from self._listed(metadata_filter, scope)
            chosen = [(r, None) for r in records[op.offset : op.offset + op.limit]]
        if self._wants_refresh(op.refresh_ttl):
            for record, _ in chosen:
                yield from self._refresh(record)
        return [self._item(record, score, search=True) for record, score in chosen]

    def _listed(self, metadata_filter: dict, scope: dict):
        records = yield call("list", self._record_type, limit=None, metadata_filter=metadata_filter, **scope)
        items = [r for r in records if self._is_item(r)]
        # newest update first, as LangGraph's database-backed stores order an unranked search
        return sorted(items, key=lambda r: str(r.metadata["langgraph"].get("updated_at", "")), reverse=True)

    def _list_namespaces(self, op: ListNamespacesOp):
        conditions = tuple(op.match_conditions or ())
        literal_prefix: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    literal_prefix += (label,)
                break
        records = yield from self._listed(self._live_filter(literal_prefix, None), self._scope_filter(literal_prefix))
        found: set[tuple[str, ...]] = set()
        for record in records:
            namespace = tuple(record.metadata["langgraph"]["namespace"])
            if all(_matches(c, namespace) for c in conditions):
                found.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        ordered = sorted(found)
        return ordered[op.offset : op.offset + op.limit]


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    if condition.match_type == "prefix":
        part = namespace[: len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path) :]
    else:
        raise ValueError(f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}")
    return all(p == "*" or p == label for p, label in zip(path, part))
