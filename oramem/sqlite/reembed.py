"""Move a SQLite store to another embedder: re-embed every retrieval row, in batches,
resumably (what ``oramem reembed`` runs).

How it works, so that an interruption (Ctrl-C, a crash, a failing embedding service) loses
at most one batch and never leaves a store with two kinds of vectors:

1. One transaction records the target embedder's identity in the catalog
   (``reembed_target``) and creates the work table ``om_<ID>_reembed`` (chunk id, the text
   embedded, the new vector). The store keeps answering with its old vectors meanwhile.
2. Batches of ``batch_size`` rows, in chunk-id order, are embedded outside any transaction
   and written to the work table, one short transaction per batch (a row deleted or
   re-texted since its batch was read is not written: an erasure that committed meanwhile
   keeps her text out of the work table); ``progress(done, total)`` is called after each.
3. One final transaction embeds the rows added or whose text changed since they were
   copied, swaps all vectors in, re-embeds every vector of the store's knowledge tables
   (KnowledgeMemory's facts, entities, events, intentions, observations, clusters) from the
   text it was made from (:func:`reembed_knowledge`, :mod:`oramem.kg_vectors`; rek43: before,
   they stayed in the old embedder's space), records the new identity and ``vector_dim``,
   bumps the change counter (other processes reload their caches) and drops the work table.
   The knowledge tables are small next to the store, so they are embedded inside that
   transaction: no committed state has the new embedder with knowledge vectors of the old.
4. The store adopts the chunking of the new identity (issue 28): each record whose rows are
   exactly the previous chunking of its content is re-chunked and re-embedded
   (:func:`rechunk_store`); rows of any other origin are kept.

A rerun with the same embedder resumes from the work table; a rerun with a different one is
refused unless ``restart=True`` (which discards the pending work). Writers that keep using
the old embedder while a reembed runs are caught at the swap only for the rows they
add or re-text (those are re-embedded); stop them, then reopen with the new embedder. A
store object opened with the old embedder before the swap refuses, after it, the searches and
writes its embedder would embed (``StoreSettingsMismatch``: its vectors are of the old
space; red40); keyword search, reads, deletes and the caller's own vectors still work. A
``KnowledgeMemory`` opened before the swap embeds with the old embedder too: with the same
dimension its later writes still store old-space vectors (it passes its own vectors to the
store), so stop it before the reembed and reopen it after.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from ..kg_vectors import CLUSTER_TABLE, FACT_TABLE, SOURCES, kg_table_name, mean_unit_vector
from ..embedders.identity import decode_identity, describe_identity, encode_identity, same_identity
from ..errors import SchemaError, StoreError, StoreNotFound
from ..normalize import DEFAULT_STORE_ID, validate_store_id
from ..reembed import Progress, ReembedResult, apply_rechunk, check_arguments, embed_batch, rechunk_plan
from ..types import SearchStrategy
from .connection import Database
from .schema import CATALOG, StoreTables, has_vector, upgrade_catalog

__all__ = ["reembed_store", "ReembedResult"]

def _embed(embedder: Any, texts: list[str], dim: int) -> list[bytes]:
    return [row.astype("<f4").tobytes() for row in embed_batch(embedder, texts, dim)]


def reembed_store(
    path: "str | os.PathLike[str]",
    embedder: Any,
    *,
    memory_store_id: str = DEFAULT_STORE_ID,
    batch_size: int = 256,
    progress: Optional[Progress] = None,
    restart: bool = False,
) -> ReembedResult:
    """Re-embed store ``memory_store_id`` of the SQLite file ``path`` with ``embedder``.

    See the module docstring. Raises ``StoreNotFound`` for a missing file or store,
    ``ValueError`` for a KEYWORD store (no vectors) or bad arguments, ``StoreError`` when
    another reembed is pending and ``restart`` is false.
    """
    path = os.fspath(path)
    if path == ":memory:" or not os.path.isfile(path):
        raise StoreNotFound(f"no database file at {path!r}")
    target, dim = check_arguments(embedder, batch_size, progress)
    tables = StoreTables(validate_store_id(memory_store_id))
    work = f'"{tables.names["reembed"]}"'
    db = Database(path)
    try:
        previous, resumed, total = _begin(db, tables, work, target, restart)
        done = resumed
        if progress is not None:
            progress(done, total)
        last = _last_done(db, work)
        embedded = 0
        while True:
            with db.transaction(False, "reading rows to re-embed") as conn:
                rows = conn.execute(
                    f"SELECT chunk_id, text FROM {tables.chunks} WHERE chunk_id > ? ORDER BY chunk_id LIMIT ?",
                    (last, batch_size),
                ).fetchall()
            if not rows:
                break
            blobs = _embed(embedder, [text for _, text in rows], dim)
            with db.transaction(True, "saving re-embedded rows") as conn:
                _check_target(conn, tables, target)
                # only rows still there with the text embedded: a row deleted (a user's
                # ``forget``, which clears the work rows of the chunks it removes) or
                # re-texted since the read is not saved, so no text outlives its chunk here
                conn.executemany(
                    f"INSERT OR REPLACE INTO {work} (chunk_id, text, vector) SELECT ?, ?, ? "
                    f"WHERE EXISTS (SELECT 1 FROM {tables.chunks} c WHERE c.chunk_id = ? AND c.text = ?)",
                    [(cid, text, blob, cid, text) for (cid, text), blob in zip(rows, blobs)],
                )
            last = rows[-1][0]
            embedded += len(rows)
            done += len(rows)
            if progress is not None:
                progress(min(done, total), total)
        with db.transaction(True, "swapping in the new vectors") as conn:
            _check_target(conn, tables, target)
            stale = conn.execute(
                f"SELECT c.chunk_id, c.text FROM {tables.chunks} c LEFT JOIN {work} w ON w.chunk_id = c.chunk_id "
                "WHERE w.chunk_id IS NULL OR w.text IS NOT c.text ORDER BY c.chunk_id"
            ).fetchall()
            for start in range(0, len(stale), batch_size):
                part = stale[start : start + batch_size]
                blobs = _embed(embedder, [text for _, text in part], dim)
                conn.executemany(
                    f"INSERT OR REPLACE INTO {work} (chunk_id, text, vector) VALUES (?, ?, ?)",
                    [(cid, text, blob) for (cid, text), blob in zip(part, blobs)],
                )
            embedded += len(stale)
            conn.execute(
                f"UPDATE {tables.chunks} SET vector = (SELECT w.vector FROM {work} w "
                f"WHERE w.chunk_id = {tables.chunks}.chunk_id)"
            )
            (final_total,) = conn.execute(f"SELECT count(*) FROM {tables.chunks}").fetchone()
            knowledge = reembed_knowledge(conn, tables.store_id, embedder, dim, batch_size)
            conn.execute(
                f"UPDATE {CATALOG} SET vector_dim = ?, embedder = ?, reembed_target = NULL, "
                "change_seq = change_seq + 1 WHERE store_id = ?",
                (dim, encode_identity(target), tables.store_id),
            )
            conn.execute(f"DROP TABLE {work}")
        if progress is not None:
            progress(final_total, final_total)
    finally:
        db.close()
    rechunked, kept = rechunk_store(path, embedder, tables.store_id, previous, batch_size)
    return ReembedResult(tables.store_id, embedded, resumed, final_total, dim, target, previous, rechunked, kept, knowledge)


def reembed_knowledge(conn: Any, store_id: str, embedder: Any, dim: int, batch_size: int = 256) -> int:
    """Re-embed, on the open write transaction ``conn`` (the swap's), every vector of the
    knowledge tables of store ``store_id`` from the text it was made from
    (:mod:`oramem.kg_vectors`: the write path embeds the same texts), so no knowledge vector
    stays in the old embedder's space once the store records the new one. Only the vector
    columns of rows that have a vector change (every other column, the user scope included,
    stays as it is); a store without knowledge tables has nothing to do. Returns the number
    of vectors written (a cluster whose vector was the mean of facts that no longer have one
    gets NULL, as the cluster job leaves it)."""
    existing = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    done = 0
    for src in SOURCES:
        table = kg_table_name(store_id, src.table)
        if table not in existing:
            continue
        cols = ", ".join(f'"{c}"' for c in src.text_columns)
        rows = conn.execute(f'SELECT id, {cols} FROM "{table}" WHERE "{src.column}" IS NOT NULL ORDER BY id').fetchall()
        for start in range(0, len(rows), batch_size):
            part = rows[start : start + batch_size]
            blobs = _embed(embedder, [src.text(*row[1:]) for row in part], dim)
            conn.executemany(f'UPDATE "{table}" SET "{src.column}" = ? WHERE id = ?',
                             [(blob, row[0]) for row, blob in zip(part, blobs)])
        done += len(rows)
    cluster, fact = kg_table_name(store_id, CLUSTER_TABLE), kg_table_name(store_id, FACT_TABLE)
    if cluster in existing:
        rows = conn.execute(
            f'SELECT id, summary_text FROM "{cluster}" WHERE embedding_vec IS NOT NULL ORDER BY id'
        ).fetchall()
        summarised = [(cid, text) for cid, text in rows if text is not None]
        for start in range(0, len(summarised), batch_size):
            part = summarised[start : start + batch_size]
            blobs = _embed(embedder, [text for _, text in part], dim)
            conn.executemany(f'UPDATE "{cluster}" SET embedding_vec = ? WHERE id = ?',
                             [(blob, cid) for (cid, _), blob in zip(part, blobs)])
        for cid, text in rows:
            if text is not None:
                continue
            # the cluster job's fallback: the mean of its facts' vectors (re-embedded above)
            vecs = [np.frombuffer(blob, dtype="<f4") for (blob,) in conn.execute(
                f'SELECT embedding_vec FROM "{fact}" WHERE cluster_id = ? AND embedding_vec IS NOT NULL ORDER BY id', (cid,))]
            mean = mean_unit_vector(vecs)
            conn.execute(f'UPDATE "{cluster}" SET embedding_vec = ? WHERE id = ?',
                         (None if mean is None else mean.astype("<f4").tobytes(), cid))
        done += len(rows)
    return done


def rechunk_store(path: str, embedder: Any, store_id: str, previous: Optional[dict[str, Any]],
                  batch_size: int = 256) -> tuple[int, int]:
    """After a reembed: re-chunk, with the chunking the new identity records (issue 28), every
    record whose retrieval rows are exactly what the previous chunking made of its content;
    returns ``(rechunked, kept)``. Rows of any other origin (caller-owned chunks, a separate
    ``index_text``, or a previous chunking this embedder cannot reproduce) are kept as they
    are (re-embedded, not re-split). Each record is updated with ``index_text`` = its
    content, through the store, so keyword rows follow."""
    from itertools import groupby

    from ._sqlite import sqlite3

    from ..chunking import store_chunker
    from ..store import SQLiteMemoryStore

    old_chunker = store_chunker(previous, embedder)
    tables = StoreTables(store_id)
    store = SQLiteMemoryStore(path, embedder=embedder, memory_store_id=store_id)
    try:
        new_chunker = store._n().chunk
        if store.settings.embedder == previous:
            return 0, 0
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                f"SELECT r.seq, r.record_type, r.id, r.content, c.text FROM {tables.records} r "
                f"JOIN {tables.chunks} c ON c.record_seq = r.seq ORDER BY r.seq, c.chunk_index"
            ).fetchall()
        records = [(group[0][1], group[0][2], group[0][3], [row[4] for row in group])
                   for _, group in ((seq, list(g)) for seq, g in groupby(rows, key=lambda row: row[0]))]
        todo, kept = rechunk_plan(records, old_chunker, new_chunker)
        return apply_rechunk(store, todo, batch_size), kept
    finally:
        store.close()


def _begin(db: Database, tables: StoreTables, work: str, target: dict[str, Any], restart: bool) -> tuple[Optional[dict[str, Any]], int, int]:
    with db.transaction(True, f"starting the reembed of store {tables.store_id!r}") as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (CATALOG,)).fetchone():
            raise StoreNotFound(f"{db.path} holds no oramem stores")
        upgrade_catalog(conn)
        row = conn.execute(
            f"SELECT state, capability, embedder, reembed_target FROM {CATALOG} WHERE store_id = ?",
            (tables.store_id,),
        ).fetchone()
        if row is None:
            raise StoreNotFound(f"no store {tables.store_id!r} in {db.path}")
        state, capability, stored, pending = row
        if state != "ready":
            raise SchemaError(f"store {tables.store_id!r} is in state {state!r}; it cannot be re-embedded")
        if not has_vector(SearchStrategy(capability)):
            raise ValueError(f"store {tables.store_id!r} is a {capability} store: it holds no vectors to re-embed")
        pending_identity = decode_identity(pending)
        if pending_identity is not None and not same_identity(pending_identity, target):
            if not restart:
                raise StoreError(
                    f"store {tables.store_id!r} has an unfinished reembed to {describe_identity(pending_identity)}; "
                    "rerun it with that embedder to resume, or restart with the new one (CLI: --restart, "
                    "Python: restart=True), which discards the pending work"
                )
            conn.execute(f"DROP TABLE IF EXISTS {work}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {work} (chunk_id INTEGER PRIMARY KEY, text TEXT NOT NULL, vector BLOB NOT NULL)"
        )
        conn.execute(
            f"UPDATE {CATALOG} SET reembed_target = ? WHERE store_id = ?", (encode_identity(target), tables.store_id)
        )
        (resumed,) = conn.execute(f"SELECT count(*) FROM {work}").fetchone()
        (total,) = conn.execute(f"SELECT count(*) FROM {tables.chunks}").fetchone()
    return decode_identity(stored), resumed, total


def _last_done(db: Database, work: str) -> int:
    with db.transaction(False, "reading the reembed position") as conn:
        (last,) = conn.execute(f"SELECT coalesce(max(chunk_id), 0) FROM {work}").fetchone()
    result: int = last
    return result


def _check_target(conn: Any, tables: StoreTables, target: dict[str, Any]) -> None:
    row = conn.execute(f"SELECT reembed_target FROM {CATALOG} WHERE store_id = ?", (tables.store_id,)).fetchone()
    pending = decode_identity(row[0]) if row else None
    if pending is None or not same_identity(pending, target):
        raise StoreError(
            f"the reembed of store {tables.store_id!r} was taken over by another run (or the store was dropped); "
            "stopped without swapping"
        )
