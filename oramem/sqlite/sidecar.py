"""The vector sidecar: a snapshot of one store's vector cache in a file next to the
database, memory-mapped read-only by every process that opens the store, so a cold open
does not re-read and re-normalise every vector blob from SQLite.

The sidecar is a cache, never the source of truth. It is named
``<database file>.<store id>.oramem-vectors`` and holds, for one catalog version
``(generation, change_seq)``, the cache's columns (chunk ids, record seqs, type codes,
scope codes, expiry micros, later-row flags), the scope code table and the unit-length float32 matrix.

Consistency rules (see ``docs/sqlite-vector-sidecar.md``):

- A file is only ever written from a cache whose contents are exactly the catalog version
  written in its header (a cache just loaded inside a read transaction, or one patched by
  this process's own writes and re-checked against the catalog before saving).
- It is written to a temporary file in the same directory, flushed and fsynced, then
  renamed over the old one (atomic on POSIX): a crash leaves the old file or the new one,
  never a torn one; readers that mapped the old file keep their consistent mapping.
- A reader uses it only when, inside its read transaction, the header's store id,
  dimension, generation and change_seq equal the catalog's, the store's chunk count and
  largest chunk id equal the header's, the file has exactly the size the header implies,
  and the checksums (crc32 of the header and small columns, a 64-bit xor fold of the
  matrix) match. Anything else (missing, stale, truncated, corrupt, another process wrote
  since) makes it rebuild from SQLite and write a fresh file.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import struct
import tempfile
import uuid
import zlib
from typing import Any, Optional

import numpy as np

__all__ = ["sidecar_path", "read", "write", "remove", "SUFFIX"]

log = logging.getLogger("oramem.sqlite")

SUFFIX = ".oramem-vectors"
_MAGIC = b"ORAMEMV\x01"
#: 2: the later-row flags (issue 28's tail handicap); a format-1 file is rebuilt on open
_FORMAT = 2
_PREFIX = struct.Struct("<8sQ")  # magic, header length
_ALIGN = 4096
#: (name, dtype, columns per row) of the sections after the header, in file order
_SECTIONS = (
    ("chunk_ids", "<i8", 1),
    ("seqs", "<i8", 1),
    ("types", "i1", 1),
    ("scopes", "<i8", 3),
    ("expires", "<i8", 1),
    ("later", "i1", 1),
)


def stamp_of(conn: Any, tables: Any, generation: str, change_seq: int) -> dict[str, Any]:
    """What a sidecar must match to stand for the store's vectors at this moment (read
    inside the caller's transaction): the catalog version plus the chunk count and the
    largest chunk id, which also catch a database file replaced by another copy."""
    (count,) = conn.execute(f"SELECT count(*) FROM {tables.chunks}").fetchone()
    (largest,) = conn.execute(f"SELECT max(chunk_id) FROM {tables.chunks}").fetchone()
    return {
        "store_id": tables.store_id, "generation": generation, "change_seq": change_seq,
        "chunks": count, "max_chunk_id": largest,
    }


def sidecar_path(db_path: str, store_id: str) -> str:
    return f"{db_path}.{store_id}{SUFFIX}"


def remove(db_path: str, store_id: str) -> None:
    """Delete a store's sidecar and its ANN index files (when the store is dropped, after a
    delete, at an erasure). The sidecar goes last: interrupted, the files left still have
    their sidecar, so :func:`remove_stale` (which looks no further when the sidecar is
    missing) finds them next time."""
    path = sidecar_path(db_path, store_id)
    for name in _ann_files(path) + [path]:
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


def remove_stale(db_path: str, store_id: str) -> None:
    """After a commit that deleted retrieval rows or replaced their vectors: delete the
    store's snapshot and its ANN files, which hold the old vectors and are stale now. Never
    raises (it runs after a commit, or just before a caller's block commits): a file that
    cannot be removed is logged and stays stale (never used, replaced by the next reader)."""
    if not os.path.exists(sidecar_path(db_path, store_id)):
        return
    try:
        remove(db_path, store_id)
    except OSError as exc:
        log.warning("could not remove the stale vector sidecar of %s (%s); it still holds deleted rows' vectors "
                    "until the next reader replaces it", db_path, exc)


def _ann_files(path: str, keep: str = "") -> list[str]:
    """The ANN index files saved beside the sidecar ``path`` (``<path>.<token>.ann*``),
    except those of token ``keep``."""
    directory, base = os.path.split(os.path.abspath(path))
    prefix = base + "."
    return [
        os.path.join(directory, name) for name in os.listdir(directory)
        if name.startswith(prefix) and ".ann" in name[len(prefix):] and not (keep and name.startswith(prefix + keep + "."))
    ]


def _file_fold(path: str) -> int:
    return _fold(np.fromfile(path, dtype=np.uint8))


def write_ann(path: str, ann: Any) -> Optional[dict[str, Any]]:
    """Save the ANN index under a fresh token beside the sidecar ``path`` (files nobody
    reads until a sidecar header names them, so no rename is needed) and return the header
    entry that names and checksums them; None (logged) on failure."""
    token = uuid.uuid4().hex
    base = f"{path}.{token}.ann"
    try:
        ann.save(base)
        files = {}
        for suffix in ("", ".live.npy"):
            if os.path.exists(base + suffix):
                with open(base + suffix, "rb") as f:
                    os.fsync(f.fileno())
                files[suffix] = _file_fold(base + suffix)
    except (OSError, RuntimeError) as exc:
        log.warning("could not save the ANN index beside %s (%s); it is rebuilt on open", path, exc)
        for name in _ann_files(path):
            if name.startswith(base):
                os.unlink(name)
        return None
    config = ann.config
    return {"token": token, "backend": ann.backend, "graph": [config.connectivity, config.expansion_add],
            "files": files}


def forget_other_anns(path: str, entry: Optional[dict[str, Any]]) -> None:
    """After a new sidecar is in place: delete ANN files of earlier snapshots (a reader
    still loading one gets an error and rebuilds)."""
    for name in _ann_files(path, keep=entry["token"] if entry else ""):
        try:
            os.unlink(name)
        except OSError:
            pass


def read_ann(path: str, entry: Optional[dict[str, Any]], dim: int, config: Any) -> Any:
    """The ANN index a valid sidecar names, when it was built with ``config``'s graph
    parameters and its files are intact; else None (the caller builds a new one)."""
    if not entry or config is None or entry.get("graph") != [config.connectivity, config.expansion_add]:
        return None
    from ..ann import AnnIndex

    base = f"{path}.{entry.get('token')}.ann"
    try:
        files = entry["files"]
        for suffix, fold in files.items():
            if _file_fold(base + suffix) != fold:
                return None  # never hand a damaged file to the backend's loader
        return AnnIndex.load(base, dim, config, entry["backend"])
    except Exception as exc:  # missing (replaced meanwhile), unreadable, backend gone
        log.info("ANN index beside %s not loaded (%s); rebuilding", path, exc)
        return None


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def _layout(rows: int, dim: int, header_len: int) -> tuple[dict[str, int], int, int]:
    """Byte offset of each section, of the matrix, and the total file size."""
    offset = _round_up(_PREFIX.size + header_len, 64)
    offsets = {}
    for name, dtype, width in _SECTIONS:
        offsets[name] = offset
        offset = _round_up(offset + rows * width * np.dtype(dtype).itemsize, 64)
    matrix_at = _round_up(offset, _ALIGN)
    return offsets, matrix_at, matrix_at + rows * dim * 4


def _fold(matrix: np.ndarray) -> int:
    """64-bit xor of the matrix bytes (cheap enough to check on every open)."""
    flat = np.ascontiguousarray(matrix).reshape(-1).view(np.uint8)
    whole = flat.size // 8 * 8
    value = int(np.bitwise_xor.reduce(flat[:whole].view(np.uint64))) if whole else 0
    for i, byte in enumerate(flat[whole:].tolist()):
        value ^= byte << (8 * i)
    return value


def write(
    path: str, stamp: dict[str, Any], columns: dict[str, np.ndarray], matrix: np.ndarray, codes: list[Any], like: str,
    ann: Optional[dict[str, Any]] = None,
) -> bool:
    """Write a snapshot atomically, with the permission bits of the file ``like`` (the
    database); False (logged) when the directory is not writable or the rename fails
    (the store then simply keeps loading from SQLite)."""
    rows, dim = matrix.shape
    small = {name: np.ascontiguousarray(columns[name], dtype=dtype) for name, dtype, _ in _SECTIONS}
    crc = 0
    for name, _, _ in _SECTIONS:
        crc = zlib.crc32(small[name].tobytes(), crc)
    header = dict(stamp, format=_FORMAT, rows=rows, dim=dim, codes=codes, crc=crc, fold=_fold(matrix), ann=ann)
    body = json.dumps(header, separators=(",", ":")).encode()
    header_bytes = body + struct.pack("<I", zlib.crc32(body))
    offsets, matrix_at, total = _layout(rows, dim, len(header_bytes))
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
        os.chmod(tmp, stat.S_IMODE(os.stat(like).st_mode))
        with os.fdopen(fd, "wb") as out:
            out.write(_PREFIX.pack(_MAGIC, len(header_bytes)) + header_bytes)
            for name, _, _ in _SECTIONS:
                out.seek(offsets[name])
                out.write(small[name].tobytes())
            out.seek(matrix_at)
            out.write(np.ascontiguousarray(matrix, dtype="<f4").tobytes())
            out.truncate(total)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        tmp = None
        return True
    except OSError as exc:
        log.warning("could not write the vector sidecar %s (%s); cold opens will read SQLite", path, exc)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def read(path: str, stamp: dict[str, Any], dim: int) -> Optional[tuple[dict[str, np.ndarray], np.ndarray, list[Any], Optional[dict[str, Any]]]]:
    """``(columns, read-only memory-mapped matrix, codes, ANN entry)`` when the file is a valid
    snapshot of exactly ``stamp``, else None (missing, stale, truncated or corrupt)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            prefix = f.read(_PREFIX.size)
            if len(prefix) != _PREFIX.size:
                return None
            magic, header_len = _PREFIX.unpack(prefix)
            if magic != _MAGIC or header_len < 4 or header_len > size:
                return None
            header_bytes = f.read(header_len)
            body, (crc,) = header_bytes[:-4], struct.unpack("<I", header_bytes[-4:])
            if zlib.crc32(body) != crc:
                return None
            header = json.loads(body)
            if header.get("format") != _FORMAT or header.get("dim") != dim:
                return None
            if any(header.get(key) != value for key, value in stamp.items()):
                return None
            rows = header["rows"]
            offsets, matrix_at, total = _layout(rows, dim, header_len)
            if size != total:
                return None
            columns = {}
            crc = 0
            for name, dtype, width in _SECTIONS:
                f.seek(offsets[name])
                count = rows * width
                raw = f.read(count * np.dtype(dtype).itemsize)
                crc = zlib.crc32(raw, crc)
                column = np.frombuffer(raw, dtype=dtype, count=count).astype(dtype.lstrip("<"), copy=True)
                columns[name] = column.reshape(rows, width) if width > 1 else column
            if crc != header["crc"]:
                return None
        matrix: np.ndarray
        if rows:
            matrix = np.memmap(path, dtype="<f4", mode="r", offset=matrix_at, shape=(rows, dim))
        else:
            matrix = np.empty((0, dim), dtype=np.float32)
        if _fold(matrix) != header["fold"]:
            return None
        return columns, matrix, list(header["codes"]), header.get("ann")
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
