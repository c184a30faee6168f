"""Metadata filters as numpy masks over the vector cache's rows.

A filtered vector search used to multiply the query with the whole matrix and then check
the filter in SQL on windows of nearest candidates (``VectorCache.nearest(accept=...)``).
For the common filters — conditions on top-level scalar fields — this module evaluates the
filter in memory instead, so the search masks first and multiplies only the rows that pass,
like brute force over the filtered rows.

Each top-level key a filter uses becomes a typed column aligned with the cache's rows: the
field's JSON type, its number (float64) and the rank of its text among the column's sorted
distinct texts. It is read once per key with ``json_type`` / ``json_extract`` (the same
functions the SQL filter uses, so both see the same values); a write of this process adds
the rows of the records it touched to the cache, and the next use of a column reads the keys
of those records only (every column that lags, in one statement). A reload or compaction of
the cache drops the columns.

A compiled mask stays valid across this process's writes too: such a write never changes a
row in place (it flags the touched records' rows dead and appends their current rows), and
every test here is row by row, so the mask of the rows before the appended ones is what a
fresh compile would give them; the kept mask is extended by compiling the filter over the
appended rows only (:meth:`MetadataColumns.tail`, :meth:`MaskCache.extend`).

Supported, with exactly the semantics of :mod:`.filters_sql` (SC-9): ``$and``, ``$or``,
equality with a scalar (``null``, booleans, numbers — ``1`` equals ``1.0`` —, strings),
``$eq``, ``$ne``, ``$gt``/``$gte``/``$lt``/``$lte`` on numbers or strings (strings by code
point, which is SQLite's BINARY order of UTF-8), ``$in``/``$nin`` of scalars, ``$exists``,
``$not``; a negated test matches a record whose field is missing. Anything else (nested
paths, subset matches, containers, array operators, keys the JSON path syntax cannot quote,
integers beyond 2**53, strings with NUL) returns None and the caller keeps the SQL path.
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Optional, Protocol

import numpy as np

from ..filters import MAX_FILTER_DEPTH, filter_key
from ._sqlite import sqlite_double

__all__ = ["Unsupported", "compile_mask", "keys_of", "filter_key", "mask_key", "MetadataColumns", "MaskCache", "Rows", "UNKEYED"]

_PATH_SAFE = re.compile(r'^[^"\\\x00-\x1f]+$')
_EXACT = 2**53
# JSON type codes of a column (0: the field is missing)
_MISSING, _NULL, _TRUE, _FALSE, _NUMBER, _TEXT, _OTHER = range(7)
_TYPE = {"null": _NULL, "true": _TRUE, "false": _FALSE, "integer": _NUMBER, "real": _NUMBER, "text": _TEXT}


class Unsupported(Exception):
    """The filter needs the SQL path."""


#: "no filter_key given": the callee computes it (a caller that has it passes it on, so a
#: search walks its filter once for the SQL cache and the mask cache)
UNKEYED: Any = object()


class MaskCache:
    """Compiled filter masks, least recently used first out, stored as the passing row
    positions (int32) when they are few, else as a boolean mask; bounded in entries and
    bytes. Each entry remembers how many rows it covers: rows appended since then are
    compiled and added by :meth:`extend`. Its owner drops it whenever rows move or change
    in place (a reload, a compaction)."""

    def __init__(self, max_entries: int = 256, max_bytes: int = 64 * 2**20) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries: "OrderedDict[tuple[Any, ...], tuple[np.ndarray, int]]" = OrderedDict()
        self._bytes = 0

    def get(self, key: tuple[Any, ...]) -> Optional[np.ndarray]:
        found = self.entry(key)
        return None if found is None else found[0]

    def entry(self, key: tuple[Any, ...]) -> Optional[tuple[np.ndarray, int]]:
        """``(stored mask, rows it covers)`` of ``key``, or None."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: tuple[Any, ...], mask: np.ndarray) -> np.ndarray:
        """Store ``mask`` (boolean over the rows); returns what :meth:`get` will return."""
        rows = np.flatnonzero(mask)
        stored = rows.astype(np.int32) if rows.size * 4 < mask.size and mask.size < 2**31 else mask
        return self._store(key, stored, int(mask.size))

    def extend(self, key: tuple[Any, ...], tail: np.ndarray) -> np.ndarray:
        """Add ``tail`` (boolean over the rows appended after the ones ``key``'s entry
        covers) to that entry; returns the whole mask as :meth:`get` will return it."""
        stored, start = self._entries[key]
        total = start + int(tail.size)
        if stored.dtype == np.bool_:
            grown = np.concatenate([stored, tail])
        elif total < 2**31:
            grown = np.concatenate([stored, (np.flatnonzero(tail) + start).astype(np.int32)])
        else:
            grown = np.zeros(total, dtype=bool)
            grown[stored] = True
            grown[start:] = tail
        self.discard(key)
        return self._store(key, grown, total)

    def discard(self, key: tuple[Any, ...]) -> None:
        found = self._entries.pop(key, None)
        if found is not None:
            self._bytes -= found[0].nbytes

    def _store(self, key: tuple[Any, ...], stored: np.ndarray, rows: int) -> np.ndarray:
        stored.flags.writeable = False
        if stored.nbytes <= self.max_bytes:
            self._entries[key] = (stored, rows)
            self._bytes += stored.nbytes
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (old, _) = self._entries.popitem(last=False)
                self._bytes -= old.nbytes
        return stored

    def __len__(self) -> int:
        return len(self._entries)


class Column:
    """One top-level field over the cache rows; grows with the rows (:meth:`extend`) into
    spare capacity (doubling), so a write of a few records does not copy the column."""

    def __init__(self, types: np.ndarray, numbers: np.ndarray, ranks: np.ndarray, texts: list[Any], exact: bool) -> None:
        self._types, self._numbers, self._ranks = types, numbers, ranks
        self._size = int(types.size)
        self.texts, self.exact = texts, exact

    @property
    def types(self) -> np.ndarray:
        return self._types[: self._size]

    @property
    def numbers(self) -> np.ndarray:
        return self._numbers[: self._size]

    @property
    def ranks(self) -> np.ndarray:
        return self._ranks[: self._size]

    @property
    def size(self) -> int:
        return self._size

    def tail(self, start: int) -> "Column":
        """The rows from ``start`` on (views; the sorted texts and ``exact`` of the whole
        column, so a test over them answers as over the whole column)."""
        return Column(self.types[start:], self.numbers[start:], self.ranks[start:], self.texts, self.exact)

    def extend(self, other: "Column") -> None:
        """Append the rows of ``other``; a text new to this column is inserted into the sorted
        distinct texts and the ranks at or after its place move up by one."""
        ranks = other.ranks.copy()
        if other.texts:
            mine = self.ranks
            for text in other.texts:  # ascending
                i = bisect.bisect_left(self.texts, text)
                if i == len(self.texts) or self.texts[i] != text:
                    mine[mine >= i] += 1
                    self.texts.insert(i, text)
            mapping = np.fromiter((bisect.bisect_left(self.texts, t) for t in other.texts), dtype=np.int64,
                                  count=len(other.texts))
            has = ranks >= 0
            ranks[has] = mapping[ranks[has]]
        n, m = self._size, other.size
        if n + m > self._types.size:
            capacity = max(n + m, 2 * self._types.size, 64)
            self._types, self._numbers, self._ranks = (
                _grown(array, n, capacity) for array in (self._types, self._numbers, self._ranks))
        self._types[n : n + m] = other.types
        self._numbers[n : n + m] = other.numbers
        self._ranks[n : n + m] = ranks
        self._size = n + m
        self.exact = self.exact and other.exact


def _grown(array: np.ndarray, size: int, capacity: int) -> np.ndarray:
    out = np.empty(capacity, dtype=array.dtype)
    out[:size] = array[:size]
    return out


class Rows(Protocol):
    """What :func:`compile_mask` reads: the rows' record seqs and a column per key."""

    row_seqs: np.ndarray

    def column(self, key: str) -> Column: ...


#: Pending rows up to which a lagging column is read together with every other lagging
#: column (one statement for all keys; beyond it each key is read when it is used).
_GROW_TOGETHER = 4096


class MetadataColumns:
    """Columns per key over the cache rows; ``fetch(keys, seqs)`` reads keys over the
    records ``seqs`` (every record when None) as ``[(seq, json type of keys[0], its value,
    json type of keys[1], ...)]``, ``row_seqs`` are the cache rows' record seqs. Rows
    appended to the cache (a write of this process drops the rows of the records it
    touched and appends their current rows) are read for the columns already built on
    their next use (:meth:`grow`), so a write costs one read of its own records, not a
    scan of every record."""

    def __init__(self, row_seqs: np.ndarray, fetch: Callable[..., list[Any]]) -> None:
        self.row_seqs = row_seqs
        self.fetch = fetch
        self.columns: dict[str, Column] = {}

    def grow(self, row_seqs: np.ndarray) -> None:
        """The cache appended rows (the first ``len(self.row_seqs)`` rows are unchanged)."""
        self.row_seqs = row_seqs

    def column(self, key: str) -> Column:
        found = self.columns.get(key)
        if found is None:
            rows = self.fetch([key], None)
            found = self.columns[key] = _decode(rows, self.row_seqs)
        elif found.size < self.row_seqs.size:
            self._catch_up(key)
        return found

    def _catch_up(self, key: str) -> None:
        """Read the appended rows of ``key``'s column, and of every other lagging column
        when they are few, in one statement."""
        n = self.row_seqs.size
        start = self.columns[key].size
        keys = [key]
        if n - start <= _GROW_TOGETHER:
            for other, column in self.columns.items():
                if other != key and n - _GROW_TOGETHER <= column.size < n:
                    keys.append(other)
                    start = min(start, column.size)
        rows = self.fetch(keys, np.unique(self.row_seqs[start:]).tolist())
        for j, name in enumerate(keys):
            column = self.columns[name]
            pending = self.row_seqs[column.size :]
            mine = rows
            if column.size != start:  # only the records of this column's pending rows
                wanted = set(pending.tolist())
                mine = [r for r in rows if r[0] in wanted]
            if j:
                mine = [(r[0], r[1 + 2 * j], r[2 + 2 * j]) for r in mine]
            column.extend(_decode(mine, pending))

    def tail(self, start: int) -> "Rows":
        """The rows from ``start`` on, for compiling a filter over appended rows only."""
        return _Tail(self, start)


class _Tail:
    def __init__(self, columns: MetadataColumns, start: int) -> None:
        self._columns, self._start = columns, start
        self.row_seqs = columns.row_seqs[start:]

    def column(self, key: str) -> Column:
        return self._columns.column(key).tail(self._start)


#: Rows up to which :func:`_decode` works in plain Python (numpy's per-call cost dominates)
_FEW = 64


def _decode(rows: list[Any], row_seqs: np.ndarray) -> Column:
    """A column aligned with ``row_seqs`` from ``(seq, json type, value)`` rows that cover
    every seq of ``row_seqs`` (further values after the first three are ignored)."""
    if row_seqs.size <= _FEW:
        return _decode_few(rows, row_seqs)
    m = len(rows)
    seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=m)
    types = np.fromiter((_TYPE.get(r[1], _OTHER) if r[1] is not None else _MISSING for r in rows),
                        dtype=np.int8, count=m)
    numbers = np.full(m, np.nan)
    exact = True
    is_number = np.flatnonzero(types == _NUMBER)
    if is_number.size:
        values = [rows[i][2] for i in is_number.tolist()]
        exact = all(isinstance(v, float) or -_EXACT <= v <= _EXACT for v in values)
        numbers[is_number] = np.array(values, dtype=np.float64)
    is_text = np.flatnonzero(types == _TEXT)
    texts = sorted({rows[i][2] for i in is_text.tolist()})
    ranks = np.full(m, -1, dtype=np.int64)
    if is_text.size:
        rank = {text: r for r, text in enumerate(texts)}
        ranks[is_text] = np.fromiter((rank[rows[i][2]] for i in is_text.tolist()), dtype=np.int64,
                                     count=is_text.size)
    # align with the cache rows (every row's record is among the fetched records)
    # (rows of deleted records, dead in the cache, get a neighbour's values: the
    # cache's live mask excludes them)
    n = row_seqs.size
    if m == 0:
        return Column(np.zeros(n, dtype=np.int8), np.full(n, np.nan), np.full(n, -1, dtype=np.int64), [], True)
    order = np.argsort(seqs, kind="stable")
    at = order[np.minimum(np.searchsorted(seqs[order], row_seqs), m - 1)]
    return Column(types[at], numbers[at], ranks[at], texts, exact)


def _decode_few(rows: list[Any], row_seqs: np.ndarray) -> Column:
    """:func:`_decode` of a few rows, value by value (the same types, numbers, texts and
    ranks; a row whose record was not fetched, i.e. a dead row of a deleted record, reads
    as a missing field instead of a neighbour's values: the live mask excludes it anyway)."""
    by_seq = {r[0]: r for r in rows}
    types: list[int] = []
    numeric: list[int] = []
    values: list[Any] = []
    textual: list[int] = []
    words: list[Any] = []
    for i, seq in enumerate(row_seqs.tolist()):
        row = by_seq.get(seq)
        kind = None if row is None else row[1]
        code = _TYPE.get(kind, _OTHER) if kind is not None else _MISSING
        types.append(code)
        if code == _NUMBER:
            numeric.append(i)
            values.append(row[2])  # type: ignore[index]  # a number has a row
        elif code == _TEXT:
            textual.append(i)
            words.append(row[2])  # type: ignore[index]
    n = len(types)
    numbers = np.full(n, np.nan)
    exact = True
    if numeric:
        exact = all(isinstance(v, float) or -_EXACT <= v <= _EXACT for v in values)
        numbers[numeric] = np.array(values, dtype=np.float64)
    texts = sorted(set(words))
    ranks = np.full(n, -1, dtype=np.int64)
    if textual:
        rank = {text: r for r, text in enumerate(texts)}
        ranks[textual] = [rank[w] for w in words]
    return Column(np.array(types, dtype=np.int8), numbers, ranks, texts, exact)


def keys_of(flt: Mapping[str, Any]) -> set[str]:
    """The top-level keys a filter reads (through ``$and``/``$or``); raises
    :class:`Unsupported` for a key the in-memory path cannot address."""
    keys: set[str] = set()
    for key, condition in flt.items():
        if key in ("$and", "$or") and isinstance(condition, list):
            for sub in condition:
                if not isinstance(sub, Mapping):
                    raise Unsupported(key)
                keys |= keys_of(sub)
        elif not isinstance(key, str) or key.startswith("$") or not _PATH_SAFE.match(key):
            raise Unsupported(key)
        else:
            keys.add(key)
    return keys


#: a string range test as the boundary text it comes to: ``("$lte", b)`` passes the texts
#: ``<= b``, ``("$gte", b)`` the texts ``>= b`` (b None: no text passes)
_BOUNDARY = {"$lt": "$lte", "$lte": "$lte", "$gt": "$gte", "$gte": "$gte"}


def mask_key(flt: Any, cols: Rows) -> Optional[tuple[Any, ...]]:
    """The key a compiled mask of ``flt`` is kept under (:class:`MaskCache`), or None when
    the filter is not to be kept (what :func:`.filters.filter_key` refuses). It is the
    filter's ``filter_key`` except that a string range test (``$gt``, ``$gte``, ``$lt``,
    ``$lte``) stands for the column text it comes to: ``{"$lte": v}`` passes the texts
    ``<= b``, b the greatest of the column's texts ``<= v``, so its key is ``("$lte", b)``;
    ``$lt`` takes the greatest text ``< v``; ``$gt`` and ``$gte`` the least text above,
    as ``("$gte", b)``.

    Two filters with one key pass the same rows: the column's texts are the distinct texts
    of every row it holds, and no text lies between a bound and its boundary. A kept mask
    stays right for the rows it covers when a later key equals its own: the column's texts
    only grow (a reset drops the kept masks too), so the boundary being the same means no
    text came between, and the rows appended since are compiled with the filter's own
    values (:meth:`MaskCache.extend`). So a filter whose bound moves with the clock
    ("ingested at or before now", the knowledge layer's visibility) is one entry as long as
    no stored time falls between two searches' clocks, instead of a compile per search
    (~0.6 ms per 100k rows). The columns a range test reads are brought up to date."""
    return _document_key(flt, cols, 0)


def _document_key(flt: Any, cols: Rows, depth: int) -> Optional[tuple[Any, ...]]:
    if type(flt) is not dict or depth > 2 * MAX_FILTER_DEPTH:
        return filter_key(flt)
    return _keyed((key, _member_key(key, condition, cols, depth + 1)) for key, condition in flt.items())


def _member_key(key: Any, condition: Any, cols: Rows, depth: int) -> Optional[tuple[Any, ...]]:
    if type(key) is not str:
        return None
    if key in ("$and", "$or") and type(condition) is list:
        subs = [_document_key(sub, cols, depth) for sub in condition]
        return None if any(sub is None for sub in subs) else ("l", tuple(subs))
    if type(condition) is dict and not key.startswith("$") and depth <= 2 * MAX_FILTER_DEPTH:
        return _keyed(_operator_key(key, op, arg, cols, depth) for op, arg in condition.items())
    return filter_key(condition)


def _operator_key(field: str, op: Any, arg: Any, cols: Rows, depth: int) -> tuple[Any, Optional[tuple[Any, ...]]]:
    """(operator, key of its operand) of one test of a field's condition."""
    if op in _BOUNDARY and type(arg) is str and _PATH_SAFE.match(field):
        if "\x00" in arg:
            return op, None  # compile_mask sends it to SQL: never answered from a kept mask
        texts = cols.column(field).texts
        if op in ("$lt", "$lte"):
            i = (bisect.bisect_left if op == "$lt" else bisect.bisect_right)(texts, arg)
            return _BOUNDARY[op], ("text", texts[i - 1] if i > 0 else None)
        i = (bisect.bisect_right if op == "$gt" else bisect.bisect_left)(texts, arg)
        return _BOUNDARY[op], ("text", texts[i] if i < len(texts) else None)
    if op == "$not" and type(arg) is dict and depth < 2 * MAX_FILTER_DEPTH:
        return op, _keyed(_operator_key(field, inner, value, cols, depth + 1) for inner, value in arg.items())
    return op, filter_key(arg)


def _keyed(pairs: Iterable[tuple[Any, Optional[tuple[Any, ...]]]]) -> Optional[tuple[Any, ...]]:
    """``("d", pairs)`` as :func:`.filters.filter_key` keys an object, or None when a name is
    not a string or a part has no key."""
    parts = []
    for name, sub in pairs:
        if type(name) is not str or sub is None:
            return None
        parts.append((name, sub))
    return ("d", tuple(parts))


def compile_mask(flt: Mapping[str, Any], columns: Rows) -> np.ndarray:
    """The rows (of ``columns.row_seqs``) whose record passes ``flt``; raises
    :class:`Unsupported` for what only the SQL path evaluates."""
    return _document(flt, columns)


def _all(n: int) -> np.ndarray:
    return np.ones(n, dtype=bool)


def _document(flt: Mapping[str, Any], cols: Rows) -> np.ndarray:
    mask = _all(cols.row_seqs.size)
    for key, condition in flt.items():
        if key in ("$and", "$or"):
            if not isinstance(condition, list):
                raise Unsupported(key)
            parts = [_document(sub, cols) for sub in condition]
            if key == "$and":
                for part in parts:
                    mask &= part
            else:
                union = np.zeros(cols.row_seqs.size, dtype=bool)
                for part in parts:
                    union |= part
                mask &= union
        elif not isinstance(key, str) or key.startswith("$") or not _PATH_SAFE.match(key):
            raise Unsupported(key)
        else:
            mask &= _field(key, condition, cols)
    return mask


def _field(key: str, condition: Any, cols: Rows) -> np.ndarray:
    if isinstance(condition, Mapping):
        if not condition or not all(isinstance(k, str) and k.startswith("$") for k in condition):
            raise Unsupported("subset match or an empty object")
        mask = _all(cols.row_seqs.size)
        for op, arg in condition.items():
            mask &= _operator(key, op, arg, cols)
        return mask
    return _equals(cols.column(key), condition)


def _operator(key: str, op: str, arg: Any, cols: Rows) -> np.ndarray:
    if op == "$not":
        return ~_field(key, arg, cols)
    if op == "$exists":
        present = cols.column(key).types != _MISSING
        result: np.ndarray = present if arg else ~present
        return result
    if op in ("$eq", "$ne"):
        found = _equals(cols.column(key), arg)
        return found if op == "$eq" else ~found
    if op in ("$in", "$nin"):
        if not isinstance(arg, list):
            raise Unsupported(op)
        column = cols.column(key)
        found = np.zeros(cols.row_seqs.size, dtype=bool)
        for value in arg:
            found |= _equals(column, value)
        return found if op == "$in" else ~found
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return _compare(cols.column(key), op, arg)
    raise Unsupported(op)


def _scalar(value: Any) -> None:
    if isinstance(value, (list, tuple, Mapping)):
        raise Unsupported("container value")
    if isinstance(value, str) and "\x00" in value:
        raise Unsupported("NUL in a string")
    if isinstance(value, int) and not isinstance(value, bool) and not -_EXACT <= value <= _EXACT:
        raise Unsupported("integer beyond 2**53")
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise Unsupported(type(value).__name__)


def _as_stored(value: float) -> float:
    """The number as the column holds it: SQLite's parse of its JSON text (see sqlite_double)."""
    return sqlite_double(value) if isinstance(value, float) else float(value)


def _equals(column: Column, value: Any) -> np.ndarray:
    _scalar(value)
    if value is None:
        result: np.ndarray = column.types == _NULL
        return result
    if isinstance(value, bool):
        result = column.types == (_TRUE if value else _FALSE)
        return result
    if isinstance(value, (int, float)):
        if not column.exact:
            raise Unsupported("integers beyond 2**53 in the column")
        result = (column.types == _NUMBER) & (column.numbers == _as_stored(value))
        return result
    i = bisect.bisect_left(column.texts, value)
    if i < len(column.texts) and column.texts[i] == value:
        result = column.ranks == i
        return result
    return np.zeros(column.ranks.size, dtype=bool)


def _compare(column: Column, op: str, value: Any) -> np.ndarray:
    _scalar(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise Unsupported(op)  # the SQL compiler raises the user-facing error
    if isinstance(value, str):
        texts, ranks = column.texts, column.ranks
        if op == "$gt":
            return ranks >= bisect.bisect_right(texts, value)
        if op == "$gte":
            return ranks >= bisect.bisect_left(texts, value)
        if op == "$lt":
            return (ranks >= 0) & (ranks < bisect.bisect_left(texts, value))
        return (ranks >= 0) & (ranks < bisect.bisect_right(texts, value))
    if not column.exact:
        raise Unsupported("integers beyond 2**53 in the column")
    number = column.numbers
    x = _as_stored(value)
    with np.errstate(invalid="ignore"):  # NaN (not a number) compares false
        if op == "$gt":
            return number > x
        if op == "$gte":
            return number >= x
        if op == "$lt":
            return number < x
        return number <= x
