"""Verifiable erasure on SQLite (SC-14, :mod:`oramem.trust.erasure`): the erasure log table,
the subject's texts collected before a ``forget``, and the verification scan afterwards.

The log is one catalog-level table, ``oramem_erasure_log`` (store id, receipt id, time,
salted subject hash, the receipt as JSON), created by the first ``forget`` and kept when
the store is dropped: a store re-created under the same id still refuses the erased
subjects (SC-14.3). Nothing in it is an id or a text: the receipt carries salted hashes.

The scan (SC-14.2) looks for the subject's tokens, lower-cased, in every byte of every
file of the database (the file, ``-wal``, ``-shm``, ``-journal``, the vector sidecars and
ANN files: every file next to the database whose name starts with its name), and in the
vocabulary of every FTS5 index of the file (``fts5vocab``: the index stores its terms
prefix-compressed, so a byte search alone can miss them). A token found is *shared* when
a live row of any table of the file (FTS shadow tables aside) still contains it, else it
is *residue*.
"""

from __future__ import annotations

import contextlib
import json
import os
import unicodedata
from typing import Any, Iterable, Iterator, Sequence

from ._sqlite import sqlite3
from .schema import StoreTables

__all__ = ["LOG_TABLE", "read_log", "write_log", "write_tombstone", "subject_in_scope", "store_files", "subject_texts", "scan", "live_words", "file_words"]

LOG_TABLE = "oramem_erasure_log"
_DDL = (
    f"CREATE TABLE IF NOT EXISTS {LOG_TABLE} ("
    "store_id TEXT NOT NULL, receipt_id TEXT NOT NULL, erased_at TEXT NOT NULL, "
    "subject_hash TEXT NOT NULL, receipt TEXT NOT NULL, "
    "PRIMARY KEY (store_id, receipt_id)) WITHOUT ROWID"
)
#: a knowledge write's commit looks its subjects' receipts up by hash (KC-3.10,
#: oramem.knowledge.write.erasures): one indexed lookup however long the log is
_SUBJECT_INDEX = f"CREATE INDEX IF NOT EXISTS {LOG_TABLE}_subject ON {LOG_TABLE} (store_id, subject_hash)"


def _exists(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def read_log(conn: sqlite3.Connection, store_id: str) -> list[str]:
    """The store's receipts (JSON texts), oldest first."""
    if not _exists(conn, LOG_TABLE):
        return []
    return [row[0] for row in conn.execute(
        f"SELECT receipt FROM {LOG_TABLE} WHERE store_id = ? ORDER BY erased_at, receipt_id", (store_id,))]


def write_log(conn: sqlite3.Connection, store_id: str, entries: Sequence[tuple[str, str, str, str]]) -> None:
    """Inside a write transaction: insert or replace ``(receipt_id, erased_at, subject_hash,
    receipt JSON)`` rows."""
    if not entries:
        return
    conn.execute(_DDL)
    conn.execute(_SUBJECT_INDEX)
    conn.executemany(
        f"INSERT INTO {LOG_TABLE} (store_id, receipt_id, erased_at, subject_hash, receipt) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (store_id, receipt_id) DO UPDATE SET receipt = excluded.receipt",
        [(store_id, *entry) for entry in entries],
    )


def subject_texts(conn: sqlite3.Connection, tables: StoreTables, kind: str, subject_id: str) -> list[str]:
    """The texts of the subject's own records (content, metadata, retrieval rows), read
    before they are deleted: a user's records (``user_id``) and her profile, or an agent's
    (``agent_id``) and its profile."""
    column, profile = ("user_id", "user_profile") if kind == "user" else ("agent_id", "agent_profile")
    r, c = tables.records, tables.chunks
    where = f"(r.{column} = :id OR (r.record_type = '{profile}' AND r.id = :id))"
    out: list[str] = []
    for content, metadata in conn.execute(f"SELECT r.content, r.metadata FROM {r} r WHERE {where}", {"id": subject_id}):
        if content:
            out.append(content)
        if metadata:  # the values she wrote, not the keys (field names are everybody's)
            out.extend(_strings(json.loads(metadata)))
    out.extend(row[0] for row in conn.execute(
        f"SELECT c.text FROM {c} c JOIN {r} r ON r.seq = c.record_seq WHERE {where}", {"id": subject_id}) if row[0])
    return out


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def store_files(path: str) -> list[str]:
    """Every file of the database: the file itself and every file next to it whose name
    starts with its name (``-wal``, ``-shm``, ``-journal``, vector sidecars, ANN files)."""
    if not path or path == ":memory:" or path.startswith("file:") or not os.path.exists(path):
        return []
    folder, base = os.path.split(os.path.abspath(path))
    return sorted(os.path.join(folder, n) for n in os.listdir(folder or ".")
                  if n.startswith(base) and os.path.isfile(os.path.join(folder, n)))


#: bytes read at a time by the scans (a block overlaps the previous one by the longest needle)
BLOCK = 32 << 20


def _blocks(path: str, overlap: int) -> Iterator[bytes]:
    """The file's bytes, ASCII-lower-cased, in blocks of :data:`BLOCK` that overlap by
    ``overlap`` bytes, so a needle across a block boundary is still found."""
    tail = b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(BLOCK)
            if not block:
                return
            data = tail + block.lower()
            yield data
            tail = data[-overlap:] if overlap else b""


def _label(path: str, db_path: str) -> str:
    base = os.path.basename(os.path.abspath(db_path))
    name = os.path.basename(path)
    return "db" if name == base else "file:" + name[len(base):].lstrip(".-")[:80]


def _fts_tables(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' AND lower(sql) LIKE '%using fts5%'")]


def _fold(token: str) -> str:
    """The form an FTS5 ``unicode61`` index stores: lower case, diacritics removed."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", token.lower()) if not unicodedata.combining(ch))


@contextlib.contextmanager
def _vocab(conn: sqlite3.Connection, fts: str) -> Iterator[str]:
    name = f"oramem_vocab_{abs(hash(fts)) % 10**9}"
    conn.execute(f'CREATE VIRTUAL TABLE IF NOT EXISTS temp."{name}" USING fts5vocab(main, "{fts}", \'row\')')
    try:
        yield f'temp."{name}"'
    finally:
        conn.execute(f'DROP TABLE IF EXISTS temp."{name}"')


def _source_tables(conn: sqlite3.Connection) -> list[tuple[str, list[str]]]:
    """Every table of the file that holds rows of its own (FTS shadow tables and the
    erasure log aside) with its columns."""
    virtual = _fts_tables(conn)
    out = []
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"):
        if name == LOG_TABLE or any(name == v or name.startswith(v + "_") for v in virtual):
            continue
        cols = [row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')]
        out.append((name, cols))
    out.append(("sqlite_master", ["sql"]))  # the schema's own words (table and column names)
    return out


def scan(conn: sqlite3.Connection, path: str, needles: dict[str, set[bytes]]) -> dict[str, Any]:
    """SC-14.2: ``needles`` maps each token (lower case) to the byte forms searched (its
    ASCII-lower-cased UTF-8 surface forms). Returns ``{"scanned": [...], "found": {token:
    [where, ...]}, "shared": {token, ...}}``: where a token was seen, and which of those
    a live row still contains."""
    found: dict[str, list[str]] = {}
    scanned: list[str] = []
    longest = max((len(f) for forms in needles.values() for f in forms), default=1)
    for file in store_files(path):
        label = _label(file, path)
        scanned.append(label)
        left = dict(needles)
        for data in _blocks(file, longest):
            for token in [t for t, forms in left.items() if any(form in data for form in forms)]:
                found.setdefault(token, []).append(label)
                del left[token]
    folded = {_fold(t): t for t in needles}
    for fts in _fts_tables(conn):
        scanned.append(f"fts-index:{fts}")
        with _vocab(conn, fts) as vocab:
            for (term,) in conn.execute(f"SELECT term FROM {vocab} WHERE term IN (SELECT value FROM json_each(?))",
                                        (_json_list(folded),)):
                found.setdefault(folded[term], []).append(f"fts-index:{fts}")
    tables = _source_tables(conn)
    if not store_files(path):  # an in-memory database: its tables are what there is to read
        scanned.extend(f"table:{name}" for name, _ in tables)
        for token in _live_tokens(conn, tables, set(needles) - set(found)):
            found.setdefault(token, []).append("table")
    shared = _live_tokens(conn, tables, set(found))
    return {"scanned": scanned, "found": found, "shared": shared}


def _live_tokens(conn: sqlite3.Connection, tables: list[tuple[str, list[str]]], tokens: set[str]) -> set[str]:
    """Which of ``tokens`` a live row's text contains (as a substring, lower-cased: as the
    byte scan matches), in one pass over the tables' text in blocks."""
    left = set(tokens)
    hit: set[str] = set()
    for name, cols in tables:
        if not left:
            break
        sel = ", ".join(f'"{col}"' for col in cols)
        block: list[str] = []
        size = 0
        for row in conn.execute(f'SELECT {sel} FROM "{name}"'):
            for value in row:
                if isinstance(value, str):
                    block.append(value)
                    size += len(value)
            if size >= BLOCK:
                _match_block(block, left, hit)
                block, size = [], 0
        _match_block(block, left, hit)
    return hit


def _match_block(block: list[str], left: set[str], hit: set[str]) -> None:
    if not block or not left:
        return
    text = "\n".join(block).lower()
    for token in [t for t in left if t in text]:
        hit.add(token)
        left.discard(token)


def _json_list(values: Iterable[str]) -> str:
    return json.dumps(sorted(values), ensure_ascii=False)


def live_words(conn: sqlite3.Connection, split: Any) -> set[str]:
    """The tokens (``split(text)``) of every live row of every source table of the file."""
    out: set[str] = set()
    for name, cols in _source_tables(conn):
        if not cols:
            continue
        sel = ", ".join(f'"{col}"' for col in cols)
        for row in conn.execute(f'SELECT {sel} FROM "{name}"'):
            for value in row:
                if isinstance(value, str):
                    out.update(split(value))
    return out


def file_words(conn: sqlite3.Connection, path: str, split: Any) -> tuple[list[str], dict[str, set[str]]]:
    """For re-verification: where each token of the files' bytes and the FTS vocabularies
    occurs (``{token: {where}}``), and what was scanned."""
    where: dict[str, set[str]] = {}
    scanned = []
    for file in store_files(path):
        label = _label(file, path)
        scanned.append(label)
        for data in _blocks(file, 256):
            for token in split(data.decode("utf-8", errors="replace")):
                where.setdefault(token, set()).add(label)
    for fts in _fts_tables(conn):
        scanned.append(f"fts-index:{fts}")
        with _vocab(conn, fts) as vocab:
            for (term,) in conn.execute(f"SELECT term FROM {vocab}"):
                where.setdefault(str(term), set()).add(f"fts-index:{fts}")
    return scanned, where


def subject_in_scope(conn: sqlite3.Connection, tables: StoreTables, kind: str) -> list[str]:
    """The distinct live actor ids of ``kind`` (``user``/``agent``) in the store's records."""
    column = "user_id" if kind == "user" else "agent_id"
    profile = "user_profile" if kind == "user" else "agent_profile"
    r = tables.records
    rows = conn.execute(f"SELECT DISTINCT {column} FROM {r} WHERE {column} IS NOT NULL "
                        f"UNION SELECT id FROM {r} WHERE record_type = ?", (profile,))
    return [row[0] for row in rows]




def write_tombstone(conn: sqlite3.Connection, store_id: str, entry: str) -> None:
    """Inside the ``forget`` transaction: the receipt's first log row (SC-14.3)."""
    obj = json.loads(entry)
    write_log(conn, store_id, [(obj["receipt_id"], obj["erased_at"], obj["subject_hash"], entry)])
