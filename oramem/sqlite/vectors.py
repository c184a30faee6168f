"""The in-memory vector index of one store: a numpy matrix of unit-length retrieval
vectors plus, per row, the columns that scope/type/TTL filters need, so those filters
become one boolean mask computed before the top-k cut (SC-6.5).

The cache is versioned by the catalog's ``(generation, change_seq)``. Writes of this
process patch it in place (rows of the touched records are dropped and reloaded from the
writing transaction); a version that moved without us — another process wrote, or the
store was recreated — makes the next read reload it from SQLite.

With an :class:`oramem.ann.AnnConfig` (``SQLiteMemoryStore(approximate_search=...)``) the
cache also keeps an HNSW index over its live rows once they reach ``min_rows``, and a top-k
search takes its candidate rows from that index before the same exact float64 rescoring
(see :meth:`VectorCache.nearest`).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from ..ann import AnnConfig, AnnIndex
from ..requests import Scope, ScopeMatch
from ..types import RECORD_TYPES
from .metamask import MaskCache, MetadataColumns, Unsupported, compile_mask, keys_of, mask_key
from .timefmt import NEVER_MICROS, epoch_micros

__all__ = ["VectorCache", "CACHE_ROW_SQL", "GaveUp"]

#: Columns of one cached row, in order; the engine appends its FROM/WHERE clause.
CACHE_ROW_SQL = (
    "SELECT c.chunk_id, c.record_seq, c.vector, r.record_type, r.id, "
    "r.thread_id, r.user_id, r.agent_id, r.expires_at, c.chunk_index"
)
_TYPE_CODE = {name: code for code, name in enumerate(RECORD_TYPES)}
_NULL = -1  # scope code of SQL NULL
#: Rows fetched per block when the cache is loaded.
LOAD_BLOCK = 8192
#: (types, scope) masks kept by VectorCache.mask (one bool per row each)
_TYPE_SCOPE_MASKS = 8
#: Bound on float32 matrix-product noise between identical rows (a few ulps of 1.0).
_NOISE_SLACK = 1e-5
#: Bytes of float64 temporaries per block of the exact rescoring (under glibc's default
#: 128 KiB mmap threshold, so a block's temporaries are reused heap memory)
_RESCORE_BYTES = 96 * 1024
Version = tuple[str, int]
#: (chunk ids, seqs, unit vectors, type codes, scope codes, expiry micros, later-row flags)
Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: ``accept(record_seqs) -> set of the seqs that pass`` (see :meth:`VectorCache.nearest`).
Accept = Callable[[list[Any]], set[Any]]


class VectorCache:
    """Unit vectors and filter columns of every retrieval row that has a vector.

    Storage is append-friendly: arrays with spare capacity (grown by doubling) and a
    ``live`` flag per row, so a write of a few records costs O(rows written), not a copy
    of the whole matrix. Rows of updated or deleted records are flagged dead and the
    arrays are compacted once dead rows exceed a quarter of them.

    Every row also carries its ``chunk_id`` and a *row key*: a number given when the row is
    appended and never reused while the cache lives (compaction keeps it, a reload starts
    over), so the keys stay in increasing order along the rows and a key's row is one
    ``searchsorted`` away. The optional ANN index (``ann``) is keyed by row key, not by
    ``chunk_id``: an update that re-embeds a record keeps its chunk ids, and re-adding a
    removed label to hnswlib (``allow_replace_deleted``) can lose the label's lookup entry."""

    def __init__(self, dim: int, ann_config: Optional[AnnConfig] = None) -> None:
        self.dim = dim
        self.version: Optional[Version] = None
        self.ann_config = ann_config
        #: the HNSW index of the live rows, or None (disabled, fewer than min_rows, not loaded)
        self.ann: Optional[AnnIndex] = None
        #: rows were removed from ``ann`` since it was built or loaded: the backends keep a
        #: removed key's vector in the file they save, so such an index is never saved
        self.ann_removed = False
        self._codes: dict[str, int] = {}
        self._next_key = 0
        #: the version the sidecar file holds (loaded from it or written to it), if known
        self.saved_version: Optional[Version] = None
        self._reset(*self._columns([]))

    # -- storage -------------------------------------------------------------------------
    def _reset(
        self, chunk_ids: np.ndarray, seqs: np.ndarray, matrix: np.ndarray, types: np.ndarray, scopes: np.ndarray,
        expires: np.ndarray, later: np.ndarray, keys: Optional[np.ndarray] = None, size: Optional[int] = None,
    ) -> None:
        """Install column arrays; ``size`` rows are in use (default: all of them), the
        rest of each array is spare capacity."""
        self.size = seqs.shape[0] if size is None else size
        capacity = seqs.shape[0]
        if keys is None:
            keys = np.empty(capacity, dtype=np.int64)
            keys[: self.size] = np.arange(self._next_key, self._next_key + self.size, dtype=np.int64)
            self._next_key += self.size
        self._chunk_ids, self._keys = chunk_ids, keys
        self._seqs, self._matrix, self._types, self._scopes, self._expires = seqs, matrix, types, scopes, expires
        #: 1 for a record's later retrieval rows (chunk index > 0), which rank with the
        #: tail handicap (oramem.chunking.TAIL_HANDICAP), 0 for its first row
        self._later = later
        self._live = np.zeros(capacity, dtype=bool)
        self._live[: self.size] = True
        self._dead = 0
        #: True while the matrix is a read-only map of the sidecar file
        self.mapped = False
        self._forget_metadata()
        #: type codes of the rows in use (or a superset), so mask() can skip the type test
        self._type_codes = {int(code) for code in np.unique(types[: self.size])}
        #: no row in use has a larger record seq (an upper bound: dead rows count too)
        self._max_seq = int(seqs[: self.size].max()) if self.size else -1
        #: no row in use expires earlier (a lower bound: dead rows count too), so a search
        #: before it skips the TTL test
        self._min_expires = int(expires[: self.size].min()) if self.size else NEVER_MICROS
        #: mask()'s type and scope tests per (types, scope codes), over the first rows
        #: (rows never change their type or scope in place; appended rows are tested on use)
        self._type_scope_masks: dict[tuple[Any, ...], np.ndarray] = {}

    @property
    def matrix(self) -> np.ndarray:
        """Unit vectors of the rows in use (live and dead), shape ``(size, dim)``."""
        return self._matrix[: self.size]

    @property
    def seqs(self) -> np.ndarray:
        """Record seqs of the live rows: what a search can return."""
        return self._seqs[: self.size][self._live[: self.size]]

    @property
    def chunk_ids(self) -> np.ndarray:
        """``chunk_id`` of every row in use (live and dead), aligned with :attr:`matrix`."""
        return self._chunk_ids[: self.size]

    def seqs_of(self, mask: np.ndarray) -> np.ndarray:
        """Record seqs of the rows selected by a :meth:`mask`."""
        result: np.ndarray = self._seqs[: self.size][mask]
        return result

    def rows_of_keys(self, keys: np.ndarray) -> np.ndarray:
        """Row positions of row keys (keys increase along the rows)."""
        return np.searchsorted(self._keys[: self.size], np.asarray(keys, dtype=np.int64))

    def _append(self, chunk_ids: np.ndarray, seqs: np.ndarray, matrix: np.ndarray, types: np.ndarray,
                scopes: np.ndarray, expires: np.ndarray, later: np.ndarray) -> np.ndarray:
        """Append rows; returns their new row keys."""
        n = seqs.shape[0]
        if n == 0:  # also keeps a read-only mapped snapshot untouched (no write into the map)
            return np.empty(0, dtype=np.int64)
        need = self.size + n
        if need > self._seqs.shape[0] or self.mapped:
            capacity = max(need, 2 * self._seqs.shape[0], 64)

            def grow(array: np.ndarray) -> np.ndarray:
                out = np.empty((capacity,) + array.shape[1:], dtype=array.dtype)
                out[: self.size] = array[: self.size]
                return out

            self._seqs, self._matrix, self._types = grow(self._seqs), grow(self._matrix), grow(self._types)
            self._scopes, self._expires, self._live = grow(self._scopes), grow(self._expires), grow(self._live)
            self._chunk_ids, self._keys, self._later = grow(self._chunk_ids), grow(self._keys), grow(self._later)
            self.mapped = False  # copied out of the map
        end = self.size + n
        keys = np.arange(self._next_key, self._next_key + n, dtype=np.int64)
        self._next_key += n
        self._chunk_ids[self.size : end] = chunk_ids
        self._keys[self.size : end] = keys
        self._seqs[self.size : end] = seqs
        self._matrix[self.size : end] = matrix
        self._types[self.size : end] = types
        self._type_codes.update(int(code) for code in np.unique(types))
        self._max_seq = max(self._max_seq, int(seqs.max()))
        self._min_expires = min(self._min_expires, int(expires.min()))
        self._scopes[self.size : end] = scopes
        self._expires[self.size : end] = expires
        self._later[self.size : end] = later
        self._live[self.size : end] = True
        self.size = end
        return keys

    def _compact(self) -> None:
        keep = np.flatnonzero(self._live[: self.size])
        self._reset(
            self._chunk_ids[keep], self._seqs[keep], self._matrix[keep], self._types[keep],
            self._scopes[keep], self._expires[keep], self._later[keep], keys=self._keys[keep],
        )

    @property
    def live_count(self) -> int:
        return self.size - self._dead

    def _maybe_build_ann(self) -> None:
        """Build the ANN index over the live rows once it is enabled and they reach
        ``min_rows`` (synchronously: ~16 s per 100k x 384 rows on 2 cores)."""
        config = self.ann_config
        if config is None or self.ann is not None or self.live_count < config.min_rows:
            return
        live = np.flatnonzero(self._live[: self.size])
        ann = AnnIndex(self.dim, config)
        ann.build(self._keys[live], self._matrix[live])
        self.ann = ann

    # -- maintenance -------------------------------------------------------------------
    def invalidate(self) -> None:
        self.version = None
        self.saved_version = None
        self.ann = None
        self.ann_removed = False
        self._next_key = 0
        self._reset(*self._columns([]))

    def load(self, rows: Iterable[Sequence[Any]], version: Version, count: Optional[int] = None) -> None:
        """Replace the cache with ``rows`` (a cursor is read with ``fetchmany`` in blocks
        of ``LOAD_BLOCK`` rows, straight into the matrix). ``count``, an upper bound of the
        row count if known, sizes the arrays up front; otherwise they grow by doubling."""
        self.ann = None
        self.ann_removed = False
        self._next_key = 0
        self.saved_version = None
        # the scope code table is rebuilt from the rows: the old one holds the actor ids of
        # every row this cache ever held, an erased user's among them when another store
        # object erased her since the last load, and the sidecar written from this cache
        # saves the whole table (her id back on disk after her erasure)
        self._codes = {}
        fetch = getattr(rows, "fetchmany", None)
        if fetch is None:
            iterator = iter(rows)

            def fetch(n: int) -> list[Any]:
                return list(itertools.islice(iterator, n))

        capacity = max(int(count or 0), 1)
        arrays = _empty_columns(capacity, self.dim)
        size = 0
        while True:
            block = fetch(LOAD_BLOCK)
            if not block:
                break
            n = len(block)
            if size + n > capacity:
                capacity = max(size + n, 2 * capacity)
                c_ids, c_seqs, c_matrix, c_types, c_scopes, c_expires, c_later = (
                    _grown(array, size, capacity) for array in arrays)
                arrays = (c_ids, c_seqs, c_matrix, c_types, c_scopes, c_expires, c_later)
            chunk_ids, seqs, matrix, types, scopes, expires, later = arrays
            columns = self._columns(block, out=matrix[size : size + n])
            for array, column in zip((chunk_ids, seqs, types, scopes, expires, later), columns[:2] + columns[3:]):
                array[size : size + n] = column
            size += n
        chunk_ids, seqs, matrix, types, scopes, expires, later = arrays
        self._reset(chunk_ids, seqs, matrix, types, scopes, expires, later, size=size)
        self.version = version
        self._maybe_build_ann()

    def snapshot(self) -> tuple[dict[str, np.ndarray], np.ndarray, list[Any]]:
        """The live rows as sidecar columns, their matrix and the scope code table (code
        ``i`` is ``codes[i]``); the cache is at :attr:`version`."""
        n = self.size
        live = None if self._dead == 0 else np.flatnonzero(self._live[:n])

        def rows(array: np.ndarray) -> np.ndarray:
            return array[:n] if live is None else array[live]

        columns = {
            "chunk_ids": rows(self._chunk_ids), "seqs": rows(self._seqs), "types": rows(self._types),
            "scopes": rows(self._scopes), "expires": rows(self._expires), "later": rows(self._later),
        }
        codes: list[Any] = [None] * len(self._codes)
        for value, code in self._codes.items():
            codes[code] = value
        return columns, rows(self._matrix), codes

    def ann_keys_are_rows(self) -> bool:
        """Are the live rows' keys 0, 1, ... in order, i.e. the keys a :meth:`load_snapshot`
        of :meth:`snapshot` gives them (so a saved ANN index fits the snapshot), and has the
        index lost no row since it was built or loaded (a removed row's vector stays in the
        backend's file: the last rows deleted leave the keys in order, red26)?"""
        if self.ann_removed:
            return False
        keys = self._keys[: self.size][self._live[: self.size]]
        return bool(np.array_equal(keys, np.arange(keys.size)))

    def load_snapshot(
        self, columns: dict[str, np.ndarray], matrix: np.ndarray, codes: list[Any], version: Version, ann: Optional[AnnIndex] = None
    ) -> None:
        """Replace the cache with a sidecar snapshot at ``version``. ``matrix`` may be a
        read-only memory map: the arrays are installed with no spare capacity, so the
        first append copies them and nothing ever writes into the map. ``ann``: the saved
        HNSW index of the snapshot (labels = row keys), or None to build one if enabled."""
        self.ann = None
        self.ann_removed = False
        self._next_key = 0
        self._codes = {value: code for code, value in enumerate(codes)}
        # a plain ndarray view of the map (the memmap subclass adds per-index overhead)
        self._reset(columns["chunk_ids"], columns["seqs"], matrix.view(np.ndarray), columns["types"],
                    columns["scopes"], columns["expires"], columns["later"])
        self.mapped = True
        self.version = self.saved_version = version
        if self.ann_config is not None and ann is not None and len(ann) == self.size:
            self.ann = ann
        self._maybe_build_ann()

    def patch(self, before: Version, after: Version, record_seqs: Sequence[int], rows: Iterable[Sequence[Any]]) -> None:
        """Apply this process's own write: drop the rows of ``record_seqs`` and add
        ``rows`` (their current rows). Only valid when the cache was at ``before``."""
        if self.version != before:
            self.invalidate()
            return
        # an add's new records have seqs above every cached row's: nothing to drop
        if len(record_seqs) and min(record_seqs) <= self._max_seq:
            live = self._live[: self.size]
            gone = live & np.isin(self._seqs[: self.size], np.asarray(record_seqs, dtype=np.int64))
            self._dead += int(gone.sum())
            live[gone] = False
            if self.ann is not None and gone.any():
                self.ann.remove(self._keys[: self.size][gone])
                self.ann_removed = True
        columns = self._columns(list(rows))
        keys = self._append(*columns)
        if self.ann is not None and keys.size:
            self.ann.add(keys, columns[2])
        if self._dead > max(1024, self.size // 4):
            self._compact()  # rows move: the metadata columns are dropped (_reset)
        elif self._metadata is not None:
            # the rows before the appended ones are where they were, with the metadata they
            # had (a touched record's rows are flagged dead, never changed): the columns and
            # the compiled masks only grow (metadata_mask extends a mask on its next use)
            self._metadata.grow(self._seqs[: self.size])
        self.version = after
        self._maybe_build_ann()

    # -- in-memory metadata filters (see .metamask) ---------------------------------------
    def _forget_metadata(self) -> None:
        """Drop the metadata columns and compiled masks: called when the rows are replaced
        or moved (a reload, a compaction, an invalidation); a patch by this process's write
        lets the columns and masks grow."""
        self._metadata: Optional[MetadataColumns] = None
        self._metadata_asked: set[str] = set()
        self._masks = MaskCache()

    def metadata_mask(self, metadata_filter: Mapping[str, Any], fetch: Callable[..., list[Any]]) -> Optional[np.ndarray]:
        """The rows whose record passes ``metadata_filter``, evaluated over cached typed
        columns of the top-level keys it reads, or None when the SQL path should answer:
        the filter needs it (see :mod:`.metamask`), or a key is asked for the first time
        in this cache state (a column costs one scan of every record, ~50 ms per 100k;
        a one-off search is cheaper through the lazy SQL check). ``fetch(keys, seqs)``
        returns ``(seq, json_type, json_extract)`` of each key (see
        :class:`.metamask.MetadataColumns`).

        The answer is a boolean mask over the rows in use, or (for a selective filter)
        the sorted positions of the passing rows as int32, read-only; either form goes to
        :meth:`restrict`. It is kept under the filter's :func:`.metamask.mask_key` (the
        filter document, a string range test standing for the text it comes to) until the
        rows move (a reload, a compaction), so a repeated filter, or one whose time bound
        moved past no stored time, costs a lookup, plus after this process's writes a
        compile over the appended rows only: the rows before them are unchanged (see
        :meth:`patch`), and every test of a filter is row by row, so the kept part equals
        a fresh compile's."""
        try:
            keys = keys_of(metadata_filter)
        except Unsupported:
            return None
        if self._metadata is None:
            self._metadata = MetadataColumns(self._seqs[: self.size], fetch)
        known = set(self._metadata.columns) | self._metadata_asked
        if not keys <= known:
            self._metadata_asked |= keys
            return None
        self._metadata.fetch = fetch  # the caller's connection and transaction
        key = mask_key(metadata_filter, self._metadata)
        if key is not None:
            found = self._masks.entry(key)
            if found is not None:
                kept, rows = found
                if rows == self.size:
                    return kept
                try:
                    tail = compile_mask(metadata_filter, self._metadata.tail(rows))
                except Unsupported:  # e.g. an appended huge integer: the whole filter goes to SQL
                    self._masks.discard(key)
                    return None
                return self._masks.extend(key, tail)
        try:
            mask = compile_mask(metadata_filter, self._metadata)
        except Unsupported:
            return None
        return mask if key is None else self._masks.put(key, mask)

    @staticmethod
    def restrict(mask: np.ndarray, selected: np.ndarray) -> np.ndarray:
        """Sorted positions of the rows in both ``mask`` (boolean, from :meth:`mask`) and
        ``selected`` (a :meth:`metadata_mask` answer)."""
        if selected.dtype == np.bool_:
            return np.flatnonzero(mask & selected)
        result: np.ndarray = selected[mask[selected]]
        return result

    def _code(self, value: Optional[str]) -> int:
        if value is None:
            return _NULL
        return self._codes.setdefault(value, len(self._codes))

    def _columns(self, rows: list[Any], out: Optional[np.ndarray] = None) -> Columns:
        """(chunk ids, seqs, unit vectors, type codes, scope codes, expiry micros, later-row
        flags) of cache rows; the unit vectors are written to ``out`` (shape
        ``(len(rows), dim)``) if given."""
        n = len(rows)
        matrix = np.empty((n, self.dim), dtype=np.float32) if out is None else out
        if n == 0:
            empty = np.empty(0, dtype=np.int64)
            return (empty, empty.copy(), matrix, np.empty(0, dtype=np.int8), np.empty((0, 3), dtype=np.int64),
                    empty.copy(), np.empty(0, dtype=np.int8))
        chunk_col, seq_col, blobs, type_col, id_col, thread_col, user_col, agent_col, expiry_col, index_col = zip(*rows)
        chunk_ids = np.fromiter(chunk_col, dtype=np.int64, count=n)
        seqs = np.fromiter(seq_col, dtype=np.int64, count=n)
        width = 4 * self.dim
        if all(type(blob) is bytes and len(blob) == width for blob in blobs):
            matrix[...] = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(n, self.dim)
        else:  # a malformed row: the row-by-row path names it
            for i, row in enumerate(rows):
                vector = np.frombuffer(row[2], dtype="<f4")
                if vector.shape[0] != self.dim:
                    raise ValueError(
                        f"retrieval row {row[0]} holds a {vector.shape[0]}-dimensional vector in a "
                        f"{self.dim}-dimensional store"
                    )
                matrix[i] = vector
        # unit length in place; a row without a positive norm becomes zeros
        # norms in float64: a float32 sum of squares overflows for large finite values
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))[:, None]
        positive = norms > 0
        np.divide(matrix, norms, out=matrix, where=positive)
        flat = ~positive.reshape(-1)
        if flat.any():
            matrix[flat] = 0.0
        types = np.fromiter(map(_TYPE_CODE.__getitem__, type_col), dtype=np.int8, count=n)
        # effective scope: a user/agent profile is in the scope of its own actor id (SC-6.2)
        users = [rid if rtype == "user_profile" else user for rtype, rid, user in zip(type_col, id_col, user_col)]
        agents = [rid if rtype == "agent_profile" else agent for rtype, rid, agent in zip(type_col, id_col, agent_col)]
        scopes = np.empty((n, 3), dtype=np.int64)
        for column, values in enumerate((thread_col, users, agents)):
            codes = {value: self._code(value) for value in dict.fromkeys(values)}
            scopes[:, column] = np.fromiter(map(codes.__getitem__, values), dtype=np.int64, count=n)
        micros = {text: epoch_micros(text) for text in dict.fromkeys(expiry_col)}
        expires = np.fromiter(map(micros.__getitem__, expiry_col), dtype=np.int64, count=n)
        later = (np.fromiter(index_col, dtype=np.int64, count=n) > 0).astype(np.int8)
        return chunk_ids, seqs, matrix, types, scopes, expires, later

    # -- queries -------------------------------------------------------------------------
    def mask(
        self,
        record_types: Sequence[str],
        scopes: tuple[Scope, Scope, Scope],
        now_micros: int,
        allowed_seqs: Optional[np.ndarray],
    ) -> np.ndarray:
        """Rows passing the type, scope (thread, user, agent), TTL and metadata filters.

        The type and scope tests are kept per (types, scope values) and extended over rows
        appended since (a row's type and scope never change in place: a write flags the old
        rows dead and appends new ones), so a repeated search tests them only on new rows;
        the live and TTL tests apply on every call (the TTL test only when a row can have
        expired by ``now_micros``)."""
        n = self.size
        wanted = frozenset(_TYPE_CODE[t] for t in record_types)
        codes = self._scope_codes(scopes)
        if codes is None:
            return np.zeros(n, dtype=bool)
        key = (wanted, codes)
        kept = self._type_scope_masks.get(key)
        if kept is None or kept.size < n:
            start = 0 if kept is None else kept.size
            tail = self._type_scope(slice(start, n), n - start, wanted, codes)
            kept = tail if kept is None else np.concatenate([kept, tail])
            if len(self._type_scope_masks) >= _TYPE_SCOPE_MASKS:
                self._type_scope_masks.clear()
            self._type_scope_masks[key] = kept
        mask = kept & self._live[:n]
        if now_micros >= self._min_expires:
            mask &= self._expires[:n] > now_micros
        if allowed_seqs is not None:
            mask &= np.isin(self._seqs[:n], allowed_seqs)
        return mask

    def mask_rows(
        self, rows: np.ndarray, record_types: Sequence[str], scopes: tuple[Scope, Scope, Scope], now_micros: int
    ) -> np.ndarray:
        """The positions among ``rows`` (sorted positions, e.g. a selective
        :meth:`metadata_mask`) that pass the type, scope and TTL tests of :meth:`mask`:
        ``restrict(mask(record_types, scopes, now_micros, None), rows)``, computed over those
        rows only (a filtered search costs per passing row, not per row of the store)."""
        codes = self._scope_codes(scopes)
        if codes is None:
            return rows[:0]
        keep = self._live[rows] & (self._expires[rows] > now_micros)
        keep &= self._type_scope(rows, rows.size, frozenset(_TYPE_CODE[t] for t in record_types), codes)
        result: np.ndarray = rows[keep]
        return result

    def _scope_codes(self, scopes: tuple[Scope, Scope, Scope]) -> Optional[tuple[Optional[int], ...]]:
        """Per scope (thread, user, agent) the code its rows must have (None: any), or None
        when one names a value no row has."""
        codes: list[Optional[int]] = []
        for scope in scopes:
            if scope.match == ScopeMatch.IS_NULL:
                codes.append(_NULL)
            elif scope.match == ScopeMatch.EQUALS:
                code = self._codes.get(scope.value) if scope.value is not None else None
                if code is None:
                    return None
                codes.append(code)
            else:
                codes.append(None)
        return tuple(codes)

    def _type_scope(self, rows: Union[slice, np.ndarray], count: int, wanted: frozenset[int],
                    codes: tuple[Optional[int], ...]) -> np.ndarray:
        """The type and scope tests of ``rows`` (a slice or positions, ``count`` rows)."""
        if self._type_codes <= wanted:  # every row's type is requested
            mask = np.ones(count, dtype=bool)
        else:
            types = self._types[rows]
            # one comparison per wanted type: np.isin costs ~0.6 ms per 100k rows here, a
            # comparison of the int8 codes ~3 us
            mask = functools.reduce(np.logical_or, [types == code for code in sorted(wanted)], np.zeros(count, dtype=bool))
        for column, code in enumerate(codes):
            if code is not None:
                mask &= self._scopes[rows, column] == code
        return mask

    def nearest(
        self,
        query: np.ndarray,
        mask: np.ndarray,
        k: Optional[int],
        accept: Optional[Accept] = None,
        handicap: float = 0.0,
        within: Optional[float] = None,
    ) -> list[tuple[int, float]]:
        """``(record_seq, cosine distance)`` of the best row per record among ``mask``
        (a boolean mask over the rows in use, or sorted row positions), nearest first; the ``k`` nearest records plus every record tied with the k-th
        (the caller orders ties), or all of them when ``k`` is None (costly on large
        stores: every row is rescored exactly).

        ``accept`` is a further record filter (the metadata filter, evaluated in SQL) that
        is asked only about records in growing windows of nearest candidates, so a
        filtered search costs about what an unfiltered one does while the result stays
        exactly "filter first, then top-k" (SC-6.5). ``accept`` returns ``None`` when it
        prefers to be given up (the window grew past a quarter of the rows): the caller
        then filters every record in one SQL statement and calls again with a mask.

        ``handicap`` is added to the distance of a record's later rows (chunk index > 0):
        a record ranks by its first row, or a later row plus the handicap, whichever is
        nearer (SC-6.4).

        ``within``: only records at most this (ranked) distance away are returned (a
        search's ``max_distance``). Rows whose float32 distance exceeds it by more than the
        product's error bound (:func:`_product_error`) are dropped before any exact
        rescoring, so a search whose rows are mostly far away rescores few of them."""
        if mask.dtype == np.bool_:
            rows = np.flatnonzero(mask)
        else:  # sorted row positions (see restrict)
            rows = mask
            if self.ann is not None and k is not None:
                mask = np.zeros(self.size, dtype=bool)
                mask[rows] = True
        if rows.size == 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"the query vector has dimension {q.shape[0]}, the store's vector_dim is {self.dim}")
        q64 = q.astype(np.float64)  # float64: no overflow for large values
        # np.linalg.norm of a real vector, without its dispatch: sqrt of the dot product
        norm = math.sqrt(float(q64.dot(q64)))
        q = (q64 / norm).astype(np.float32) if norm > 0 else q
        if self.ann is not None and k is not None:
            found = self._ann_candidates(q, mask, rows.size, k, accept)
            if found is not None:
                return self._rescored(q, found, self._seqs[found], k, handicap, within)
        if rows.size == self.size:
            # every row passes: no gathers
            sims = self.matrix @ q
            seqs = self._seqs[: self.size]
            later = self._later[: self.size] if handicap else None
        else:
            if rows.size * 4 > self.size:
                # most rows pass: one product over the whole matrix beats gathering a copy
                sims = (self.matrix @ q)[rows]
            else:
                sims = self.matrix[rows] @ q
            seqs = self._seqs[rows]  # rows index the rows in use (< size)
            later = self._later[rows] if handicap else None
        distances = _ranked_distance(1.0 - sims.astype(np.float64), later, handicap)
        if within is not None:
            near = np.flatnonzero(distances <= within + _product_error(self.dim))
            if near.size == 0:
                return []
            if near.size < distances.size:
                rows, seqs, distances = rows[near], seqs[near], distances[near]
        # BLAS results depend on a row's position in the matrix (last-bit noise), so
        # identical vectors could get different distances: select generously, then
        # rescore the candidates with a position-independent float64 reduction so that
        # ties are exact ties, broken by type and id (SC-6.1).
        if accept is None:
            if k is not None and k < rows.size:
                top = _top_with_ties(distances, np.arange(rows.size), seqs, k, slack=_NOISE_SLACK)
                return self._rescored(q, rows[top], seqs[top], k, handicap, within)
            return self._rescored(q, rows, seqs, k, handicap, within)
        found = _accepted_window(distances, seqs, k, accept)
        if found is None:
            raise GaveUp()
        candidates = found
        if k is not None and k < candidates.size:
            candidates = candidates[
                _top_with_ties(distances[candidates], np.arange(candidates.size), seqs[candidates], k, slack=_NOISE_SLACK)
            ]
        return self._rescored(q, rows[candidates], seqs[candidates], k, handicap, within)

    def _rescored(
        self, q: np.ndarray, cand_rows: np.ndarray, seqs: np.ndarray, k: Optional[int], handicap: float,
        within: Optional[float] = None,
    ) -> list[tuple[int, float]]:
        """Exact float64 distances of candidate rows (a later row with the tail handicap),
        best row per record, the k nearest records plus ties with the k-th, nearest first
        (only those at most ``within`` away, if given)."""
        distances = _ranked_distance(self._exact(q, cand_rows), self._later[cand_rows] if handicap else None, handicap)
        if within is not None:
            near = distances <= within
            distances, seqs = distances[near], seqs[near]
        if k is not None and k < distances.size:
            keep = _top_with_ties(distances, np.arange(distances.size), seqs, k, slack=0.0)
            distances, seqs = distances[keep], seqs[keep]
        order = np.lexsort((distances, seqs))
        seqs, distances = seqs[order], distances[order]
        first = np.ones(seqs.size, dtype=bool)
        first[1:] = seqs[1:] != seqs[:-1]
        seqs, distances = seqs[first], distances[first]
        order = np.argsort(distances, kind="stable")
        return list(zip(seqs[order].tolist(), distances[order].tolist()))

    def _exact(self, q: np.ndarray, cand_rows: np.ndarray) -> np.ndarray:
        """Cosine distances of ``cand_rows`` to the unit query ``q``, each row's float64 dot
        product summed by numpy's reduction of that row alone, so a row's distance does not
        depend on its position or on the other candidates. Blocks of ``_RESCORE_BYTES`` of
        float64 temporaries: one product of a few thousand rows (a search whose k-th record
        ties with many others) would allocate megabytes that glibc maps and unmaps per call,
        ~1,500 page faults and 3 ms per 1,000 rows x 384 (bench/results/knowledge_speed.md,
        round f); a block stays on the heap."""
        q64 = q.astype(np.float64)
        dots = np.empty(cand_rows.size, dtype=np.float64)
        step = max(1, _RESCORE_BYTES // (8 * self.dim))
        for start in range(0, cand_rows.size, step):
            block = cand_rows[start : start + step]
            dots[start : start + block.size] = (self.matrix[block].astype(np.float64) * q64).sum(axis=1)
        result: np.ndarray = 1.0 - dots
        return result

    def _ann_candidates(
        self, q: np.ndarray, mask: np.ndarray, passing: int, k: int, accept: Optional[Accept]
    ) -> Optional[np.ndarray]:
        """Row positions of approximate nearest rows that pass ``mask`` (and ``accept``),
        covering at least ``k`` distinct records, or None: the index is not worth asking
        (too few rows, too selective a mask), the filter rejected too much within the
        index's fetch budget, or the index failed; the caller then searches exactly."""
        ann = self.ann
        live = self.live_count
        if ann is None or live == 0:
            return None
        selectivity = passing / live
        if not ann.use_for(live, selectivity):
            return None
        verdicts: dict[int, bool] = {}

        def passes(keys: np.ndarray) -> np.ndarray:
            rows = self.rows_of_keys(keys)
            ok = mask[rows]
            if accept is not None and ok.any():
                seqs = self._seqs[rows]
                fresh = [int(s) for s in np.unique(seqs[ok]) if int(s) not in verdicts]
                if fresh:
                    passed = accept(fresh)
                    for s in fresh:
                        verdicts[s] = s in passed
                ok &= np.fromiter((verdicts.get(int(s), False) for s in seqs), dtype=bool, count=seqs.size)
            result: np.ndarray = ok
            return result

        unfiltered = accept is None and passing == live
        limit = ann.config.max_fetch
        fetch = k
        while True:
            try:
                found = ann.query(q, fetch, accept=None if unfiltered else passes, selectivity=selectivity)
            except RuntimeError:  # hnswlib cannot fill k results from a tiny or sparse graph
                return None
            if found is None:
                return None
            rows = self.rows_of_keys(found[0])
            if rows.size < fetch or np.unique(self._seqs[rows]).size >= k:
                # fewer than asked means every passing row was seen
                return rows
            if fetch >= limit:
                return None
            # several rows per record: widen until k distinct records are covered
            fetch = min(fetch * 4, limit)


def _empty_columns(capacity: int, dim: int) -> Columns:
    """Uninitialised (chunk ids, seqs, matrix, types, scopes, expiries, later-row flags) of
    ``capacity`` rows."""
    return (
        np.empty(capacity, dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.empty((capacity, dim), dtype=np.float32),
        np.empty(capacity, dtype=np.int8),
        np.empty((capacity, 3), dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.empty(capacity, dtype=np.int8),
    )


def _grown(array: np.ndarray, size: int, capacity: int) -> np.ndarray:
    out = np.empty((capacity,) + array.shape[1:], dtype=array.dtype)
    out[:size] = array[:size]
    return out


def _ranked_distance(cosine_distance: np.ndarray, later: Optional[np.ndarray], handicap: float) -> np.ndarray:
    """The distance a row ranks its record by: the cosine distance, plus ``handicap`` for
    a record's later rows (a record counts its first row, or a later one plus the handicap,
    whichever is nearer: SC-6.4), within [0, 2]. ``later`` is read only with a handicap
    (None otherwise: no gather of the flags on the search path)."""
    shifted = cosine_distance if not handicap or later is None else cosine_distance + handicap * later
    result: np.ndarray = np.clip(shifted, 0.0, 2.0)
    return result


def _product_error(dim: int) -> float:
    """A bound on how far the cosine distance of a unit query and a unit row from the
    float32 matrix product can lie from their float64 one (:meth:`VectorCache._exact`):
    float32 summation of ``dim`` products errs by at most gamma_dim = dim*u / (1 - dim*u)
    times the sum of their magnitudes (at most about 1 for unit vectors; u = 2**-24), plus
    the rounding of the result; doubled for the rows' and the query's own rounding to unit
    length. 4.6e-5 at 384 dimensions."""
    u = 2.0**-24
    return 2.0 * (dim * u / (1.0 - dim * u) + u)


class GaveUp(Exception):
    """Raised by :meth:`VectorCache.nearest` when lazy filtering stops paying off."""


def _accepted_window(distances: np.ndarray, seqs: np.ndarray, k: Optional[int], accept: Accept) -> Optional[np.ndarray]:
    """Positions of the candidate rows of accepted records, checking records window by
    window in ascending distance until k accepted records are certainly the nearest (all
    rows outside the window are farther than the k-th, beyond float noise); ``None`` when
    the window would exceed a quarter of the rows (one SQL filter is cheaper then)."""
    n = distances.size
    if k is None:
        return None
    verdicts: dict[int, bool] = {}
    m = min(n, max(8 * k, 64))
    while True:
        window = np.argpartition(distances, m - 1)[:m] if m < n else np.arange(n)
        fresh = [int(x) for x in np.unique(seqs[window]) if int(x) not in verdicts]
        if fresh:
            passed = accept(fresh)
            for seq in fresh:
                verdicts[seq] = seq in passed
        ok = np.fromiter((verdicts[int(x)] for x in seqs[window]), dtype=bool, count=window.size)
        hits: np.ndarray = window[ok]
        if m >= n:
            return hits
        edge = float(distances[window].max())
        best: dict[int, float] = {}
        for i in hits:
            s, d = int(seqs[i]), float(distances[i])
            if d < best.get(s, np.inf):
                best[s] = d
        if sum(1 for d in best.values() if d < edge - _NOISE_SLACK) >= k:
            return hits
        m *= 4
        if m * 4 > n:
            return None


def _top_with_ties(
    distances: np.ndarray, positions: np.ndarray, seqs: np.ndarray, k: int, slack: float
) -> np.ndarray:
    """Positions of the rows that can be among the k best records: widen an argpartition
    window until it holds k distinct records, then keep every row within the k-th
    record's distance (plus ``slack``)."""
    n = distances.size
    if k >= n:
        return positions
    m = k
    while True:
        window = np.argpartition(distances, m - 1)[:m] if m < n else np.arange(n)
        best: dict[int, float] = {}
        for s, d in zip(seqs[window].tolist(), distances[window].tolist()):
            if d < best.get(s, np.inf):
                best[s] = d
        if len(best) >= k or m >= n:
            break
        m = min(n, m * 2)
    threshold = sorted(best.values())[min(k, len(best)) - 1]
    return positions[distances <= threshold + slack]
