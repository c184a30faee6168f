"""Move an Oracle store to another embedder (``oramem --db oracle://USER@HOST:PORT/SERVICE
reembed``): the Oracle twin of :mod:`oramem.sqlite.reembed`, with the same contract.
Static-checked, not run against Oracle (tests: the recording fake, tests/oracle).

The embedder runs here, in Python (a client-side embedder); reading, saving and swapping are
calls of ``oramem_admin.reembed_*`` and ``oramem_store.lock_retrieval_rows``
(plsql/oramem_admin.pks, "Re-embedding"), one call per step, on one connection:

1. ``reembed_begin_json`` records the target identity and dimension as the store's pending
   reembed and adds the shadow column ``EMBEDDING_NEW VECTOR(dim, FLOAT32)`` to the store's
   retrieval rows (DDL: it commits itself). The store keeps answering with ``EMBEDDING``.
2. Batches of ``batch_size`` rows still without a new vector are read (``reembed_rows_json``),
   embedded here outside any transaction, and saved in one short transaction each
   (``lock_retrieval_rows`` first: the erasure lock order, then the rows; then
   ``reembed_save_json``, which writes a vector only where the row still exists with the
   text embedded). A row a ``forget`` deletes takes its new vector with it: nothing of an
   erased text stays behind.
3. The swap transaction takes the same lock, embeds the rows added meanwhile, and calls
   ``reembed_swap_json``. Same dimension: every vector is swapped in and the new identity
   recorded in that one commit. Another dimension: the commit puts the store in state
   UPGRADING, and ``reembed_finish_json`` replaces the column by DDL (drop the HNSW index,
   SET UNUSED the old column, rename the new one, create the index), then records the
   dimension, the identity and READY in one commit. Each DDL commits, so each step is
   idempotent and a rerun with the same embedder finishes an interrupted swap; while it
   runs, data calls are refused (-20106) instead of answering with vectors of two kinds.
4. The store adopts the chunking of the new identity (issue 28): records whose rows are
   exactly the previous chunking of their content are re-chunked through the store
   (:func:`oramem.reembed.apply_rechunk`); rows of any other origin are kept.

Knowledge tables (rek43): unlike the SQLite reembed, this one does not re-embed the
knowledge layer's vectors (facts, entities, events ... of ``KnowledgeMemory``). A store whose
knowledge tables hold a vector is refused by ``reembed_begin_json`` before anything is
written (``ValueError``, -20001, saying what to do), and a swap is refused (rolled back) when
one was written since the begin, so the store never records the new embedder while its
knowledge vectors are of the old one.

A rerun with the same embedder resumes; one with another embedder is refused unless
``restart=True``. After the swap, a store object of another session opened with the old
embedder has the adds, text updates and text searches its embedder would embed refused
(-20108, ``StoreSettingsMismatch``; the request's ``"embedder"`` member, checked by
``oramem_admin.check_embedder``; ora44). In-database embedders (``OracleDBEmbedder``) are not a target here (not
built: the re-embedding would have to run in SQL); see docs/oracle-models.md.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from .embedders.identity import describe_identity, encode_identity, same_identity
from .errors import StoreError
from .normalize import DEFAULT_STORE_ID, validate_store_id
from .oracle.admin import call_plsql
from .oracle.calls import REEMBED_CALLS
from .reembed import Progress, ReembedResult, apply_rechunk, check_arguments, embed_batch, rechunk_plan

__all__ = ["reembed_store"]


def reembed_store(
    conn: Any,
    embedder: Any,
    *,
    memory_store_id: str = DEFAULT_STORE_ID,
    batch_size: int = 256,
    progress: Optional[Progress] = None,
    restart: bool = False,
) -> ReembedResult:
    """Re-embed store ``memory_store_id`` of the Oracle schema ``conn`` (a sync
    python-oracledb connection with no transaction in progress, which stays open) with
    ``embedder``. See the module docstring. Raises ``StoreNotFound`` for a missing store,
    ``ValueError`` for a KEYWORD store, an in-database embedder, a transaction in progress,
    a store whose knowledge tables hold vectors (not re-embedded on Oracle) or bad arguments, ``StoreError`` when another reembed is pending and ``restart`` is
    false. Static-checked, not run against Oracle."""
    target, dim = check_arguments(embedder, batch_size, progress)
    if target.get("kind") == "oracle-db":
        raise ValueError(
            "oramem reembed embeds in Python; an in-database model (OracleDBEmbedder) as the target is not "
            "supported: create a new store with it and copy the records there (oramem export / import), "
            "or re-embed with the client-side ONNX model the database model was exported from"
        )
    if not 1 <= dim <= 65535:
        raise ValueError(f"the embedder's dimension {dim} is outside 1..65535 (Oracle's VECTOR limit)")
    sid = validate_store_id(memory_store_id)
    target_text = encode_identity(target) or json.dumps(target)  # identity_of gave a dict: never empty

    def call(name: str, **values: Any) -> Any:
        return call_plsql(conn, REEMBED_CALLS[name], in_store_id=sid, **values)

    # python-oracledb's Connection.transaction_in_progress: "whether a transaction is currently in
    # progress on the database associated with the connection"; our commits would commit it
    if conn.transaction_in_progress:
        raise ValueError("the connection has a transaction in progress: commit or roll it back first "
                         "(reembed commits each batch on it; or pass a connection of its own)")
    begun = json.loads(call("begin", in_target=target_text, in_vector_dim=dim, in_restart=int(bool(restart))))
    if not begun.get("started"):
        raise StoreError(
            f"store {sid!r} has an unfinished reembed to {describe_identity(begun.get('pending'))}; rerun it with "
            "that embedder to resume, or restart with the new one (CLI: --restart, Python: restart=True), which "
            "discards the pending work"
        )
    previous, resumed, total = begun.get("previous"), int(begun["resumed"]), int(begun["total"])
    done, embedded = resumed, 0
    if progress is not None:
        progress(done, total)
    if not begun.get("swapping"):
        after: Optional[list[Any]] = None
        while True:
            rows = json.loads(call("rows", in_after=None if after is None else json.dumps(after), in_limit=batch_size))
            if not rows:
                break
            _save(conn, call, embedder, target_text, rows, dim)  # commits
            after = rows[-1][:3]
            embedded += len(rows)
            done += len(rows)
            if progress is not None:
                progress(min(done, total), total)
        try:
            call("lock")  # the swap transaction: nobody deletes, adds or erases until its commit
            while True:
                stale = json.loads(call("rows", in_after=None, in_limit=batch_size))
                if not stale:
                    break
                if _save(conn, call, embedder, target_text, stale, dim, commit=False) != len(stale):
                    # under the lock nothing changes the rows read: a row not saved would be read again forever
                    raise StoreError(f"store {sid!r}: retrieval rows read under the reembed's lock could not be "
                                     "saved; stopped without swapping (rerun to resume)")
                embedded += len(stale)
            swap = json.loads(call("swap", in_target=target_text))
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        total = int(swap["total"])
    finished = json.loads(call("finish", in_target=target_text))
    recorded = finished.get("embedder")
    if not (isinstance(recorded, dict) and same_identity(recorded, target) and finished.get("vector_dim") == dim):
        # e.g. another session's repairing open (CREATE_IF_NECESSARY) made the store READY again
        # between the swap's commit and the finish: the old vectors still answer, nothing is lost
        raise StoreError(
            f"store {sid!r} does not record the new embedder after the swap (it records "
            f"{describe_identity(recorded)}, vector_dim {finished.get('vector_dim')}): another session changed it "
            "meanwhile; run the same reembed again to finish"
        )
    if progress is not None:
        progress(total, total)
    rechunked, kept = _rechunk(conn, embedder, sid, previous, finished, batch_size)
    return ReembedResult(sid, embedded, resumed, total, dim, target, previous, rechunked, kept)


def _save(conn: Any, call: Any, embedder: Any, target_text: str, rows: list[list[Any]], dim: int,
          commit: bool = True) -> int:
    """Embed ``rows`` ([record_type, record_id, chunk_no, text]) and save their vectors: one
    transaction that takes the reembed's lock first (``commit``), or part of the caller's."""
    vectors = embed_batch(embedder, [row[3] or "" for row in rows], dim)
    payload = json.dumps([[*row[:4], [float(v) for v in vec]] for row, vec in zip(rows, vectors)])
    if not commit:
        return int(call("save", in_target=target_text, in_rows=payload))
    try:
        call("lock")
        saved = int(call("save", in_target=target_text, in_rows=payload))
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return saved


def _rechunk(conn: Any, embedder: Any, sid: str, previous: Optional[dict[str, Any]], settings: dict[str, Any],
             batch_size: int) -> tuple[int, int]:
    """Step 4 (issue 28): the records whose rows are exactly the previous chunking of their
    content get the new identity's chunking, through the store; ``(rechunked, kept)``."""
    from .chunking import store_chunker
    from .oracle import SyncOracleEngine
    from .oracle.admin import export_page
    from .oracle.codec import record_from_json
    from .store import OracleMemoryStore
    from .types import SchemaPolicy

    if settings.get("embedder") == previous:
        return 0, 0
    engine = SyncOracleEngine(conn, embedding_model=settings.get("embedding_model"),
                              keyword_language=settings.get("keyword_language"))
    store = OracleMemoryStore(engine, embedder=embedder, memory_store_id=sid,
                              search_strategy=settings.get("search_strategy") or "vector",
                              schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    try:
        records: list[tuple[str, str, Any, list[str]]] = []
        after = 0
        while True:
            page = export_page(conn, sid, after, 500)
            if not page:
                break
            for item in page:
                record = record_from_json(item["record"])
                chunks = [ch.get("text") or "" for ch in (item.get("chunks") or ())]
                if chunks:
                    records.append((record.record_type, record.id, record.content, chunks))
                after = int(item["record"]["seq_no"])
        todo, kept = rechunk_plan(records, store_chunker(previous, embedder), store._n().chunk)
        return apply_rechunk(store, todo, batch_size), kept
    finally:
        store.close()
