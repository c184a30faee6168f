"""Shared helpers of the hardening suite: an independent SC-9 reference evaluator, raw
read-only views of an SQLite store's tables, and full dumps for "nothing changed" checks."""

from __future__ import annotations

import json
from oramem.sqlite._sqlite import sqlite3
from typing import Any, Iterable, Optional

from oramem.sqlite.schema import CATALOG, StoreTables

ALL_TYPES = ("message", "memory", "guideline", "fact", "preference", "user_profile", "agent_profile", "thread")
LISTABLE = ("message", "memory", "guideline", "fact", "preference", "user_profile", "agent_profile")

# ------------------------------------------------------------------ SC-9 reference evaluator
MISSING = object()
_CMP = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def json_eq(a: Any, b: Any) -> bool:
    """JSON equality: True != 1, 1 == 1.0, "1" != 1, lists ordered, objects by key set."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _num(a) and _num(b):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_eq(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return isinstance(a, str) and isinstance(b, str) and a == b


def matches(metadata: Optional[dict], flt: dict) -> bool:
    """Does a record with ``metadata`` (None = no metadata) satisfy the filter?"""
    doc = metadata if isinstance(metadata, dict) else {}
    for key, cond in flt.items():
        if key == "$and":
            ok = all(matches(doc, sub) for sub in cond)
        elif key == "$or":
            ok = any(matches(doc, sub) for sub in cond)
        else:
            ok = _field(doc.get(key, MISSING), cond)
        if not ok:
            return False
    return True


def _field(value: Any, cond: Any) -> bool:
    if isinstance(cond, dict) and all(k.startswith("$") for k in cond):
        return all(_op(value, op, arg) for op, arg in cond.items())
    if isinstance(cond, dict):  # nested subset match on an object
        return isinstance(value, dict) and matches(value, cond)
    return value is not MISSING and json_eq(value, cond)


def _op(v: Any, op: str, arg: Any) -> bool:
    present = v is not MISSING
    if op == "$eq":
        return present and json_eq(v, arg)
    if op == "$ne":
        return not _op(v, "$eq", arg)
    if op in _CMP:
        same = (_num(v) and _num(arg)) or (isinstance(v, str) and isinstance(arg, str))
        return present and same and _CMP[op](v, arg)
    if op == "$in":
        return present and any(json_eq(v, a) for a in arg)
    if op == "$nin":
        return not _op(v, "$in", arg)
    if op == "$exists":
        return present == arg
    if op == "$array_contains":
        wanted = arg if isinstance(arg, list) else [arg]
        return isinstance(v, list) and all(any(json_eq(e, w) for e in v) for w in wanted)
    if op == "$array_contains_any":
        return isinstance(v, list) and any(any(json_eq(e, w) for e in v) for w in arg)
    if op == "$not":
        return not _field(v, arg)
    raise AssertionError(f"reference evaluator: unknown operator {op}")


# ------------------------------------------------------------------ raw SQLite views
def raw_connect(path: str) -> sqlite3.Connection:
    """A read-only connection to the store file (never writes, never checkpoints)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def table_names(store_id: str = "DEFAULT") -> StoreTables:
    return StoreTables(store_id)


def raw_dump(path: str, store_id: str = "DEFAULT") -> dict:
    """Every row of the store's tables (catalog row included), sorted."""
    t = StoreTables(store_id)
    conn = raw_connect(path)
    try:
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        out: dict[str, Any] = {
            "catalog": conn.execute(f"SELECT * FROM {CATALOG} WHERE store_id = ?", (store_id,)).fetchall()
        }
        for kind, name in t.names.items():
            if name not in present:
                continue
            cols = "rowid, text" if kind == "fts" else "*"
            out[kind] = sorted(conn.execute(f'SELECT {cols} FROM "{name}"').fetchall(), key=repr)
        return out
    finally:
        conn.close()


def raw_ids(path: str, store_id: str = "DEFAULT") -> dict:
    """Record keys, chunk owners, FTS rowids and pending ids, as sets, for orphan checks."""
    t = StoreTables(store_id)
    conn = raw_connect(path)
    try:
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        recs = conn.execute(f"SELECT seq, record_type, id FROM {t.records}").fetchall()
        chunks = conn.execute(f"SELECT chunk_id, record_seq FROM {t.chunks}").fetchall()
        fts = pending = set()
        if t.names["fts"] in present:
            fts = {r for (r,) in conn.execute(f"SELECT rowid FROM {t.fts}")}
            pending = {r for (r,) in conn.execute(f"SELECT chunk_id FROM {t.pending}")}
        integrity = conn.execute("PRAGMA integrity_check").fetchall()
        return {
            "records": {(rt, rid): seq for seq, rt, rid in recs},
            "seqs": {seq for seq, _, _ in recs},
            "chunks": dict(chunks),
            "fts": fts,
            "pending": pending,
            "integrity": integrity,
        }
    finally:
        conn.close()


def assert_no_orphans(path: str, store_id: str = "DEFAULT") -> dict:
    """Every chunk belongs to a record; every FTS/pending row to a chunk; file is sound."""
    ids = raw_ids(path, store_id)
    assert ids["integrity"] == [("ok",)], ids["integrity"]
    orphan_chunks = {c for c, seq in ids["chunks"].items() if seq not in ids["seqs"]}
    assert not orphan_chunks, f"chunks without record: {sorted(orphan_chunks)[:10]}"
    assert ids["fts"] <= set(ids["chunks"]), f"FTS rows without chunk: {sorted(ids['fts'] - set(ids['chunks']))[:10]}"
    assert ids["pending"] <= set(ids["chunks"]), "pending rows without chunk"
    return ids


def cache_seqs(store: Any) -> set:
    """Record seqs held by the engine's in-memory vector cache (empty when not loaded)."""
    cache = store._engine._cache
    if cache is None or cache.version is None:
        return set()
    return {int(s) for s in cache.seqs}


# ------------------------------------------------------------------ API dumps (any engine)
def freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[",) + tuple(freeze(v) for v in value)
    if isinstance(value, float):
        return ("f", value)
    return value


def api_dump(store: Any, types: Iterable[str] = LISTABLE) -> dict:
    """Everything readable through ``list`` (all types, no limit)."""
    out = {}
    for t in types:
        out[t] = sorted(
            (
                r.id, r.content, r.thread_id, r.user_id, r.agent_id, r.timestamp,
                json.dumps(r.metadata, sort_keys=True), r.created_at, r.expires_at,
            )
            for r in store.list(t, limit=None)
        )
    return out
