"""What a reembed does the same way on every engine (``oramem reembed``; SQLite:
:mod:`oramem.sqlite.reembed`, Oracle: :mod:`oramem.oracle_reembed`): the checks of its
arguments, the embedding of one batch (shape and finiteness checked before anything is
written), the result, and the re-chunk pass that follows the swap (issue 28): which records
get the new identity's chunking, and their update through the store.

Nothing here imports an engine or the store facade: the engines' modules import it, and
the re-chunk pass takes the open store it updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import numpy as np

from .embedders.identity import identity_of

__all__ = ["ReembedResult", "Progress", "check_arguments", "embed_batch", "rechunk_plan", "apply_rechunk"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ReembedResult:
    """``rows``: retrieval rows embedded by this call; ``resumed``: rows an earlier,
    interrupted run had already done; ``total``: rows in the store at the swap."""

    memory_store_id: str
    rows: int
    resumed: int
    total: int
    vector_dim: int
    embedder: dict[str, Any]
    previous: Optional[dict[str, Any]]
    #: records re-chunked to the new identity's chunking (issue 28), and records whose rows
    #: were kept as they were (caller chunks, another index text)
    rechunked: int = 0
    kept: int = 0
    #: vectors of the knowledge tables (facts, entities, events, clusters, observations,
    #: intentions) re-embedded from their texts in the swap (rek43; :mod:`oramem.kg_vectors`)
    knowledge: int = 0


def check_arguments(embedder: Any, batch_size: Any, progress: Any) -> tuple[dict[str, Any], int]:
    """The target identity and its dimension; a bad argument is an error before anything is read."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if progress is not None and not callable(progress):
        raise TypeError("progress must be a callable(done, total) or None")
    target = identity_of(embedder)
    if target is None:
        raise ValueError("reembed needs an embedder")
    return target, int(target.get("dimension") or embedder.embedding_dimension)


def embed_batch(embedder: Any, texts: list[str], dim: int) -> np.ndarray:
    """``embedder.embed(texts)`` as float32 rows, refused (nothing written) when the shape is
    not ``(len(texts), dim)`` or a value is not a finite float32."""
    vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
    if vectors.shape != (len(texts), dim):
        raise ValueError(f"the embedder returned shape {vectors.shape} for {len(texts)} texts, expected ({len(texts)}, {dim})")
    if not np.isfinite(vectors).all() or (np.abs(vectors) > np.finfo(np.float32).max).any():
        raise ValueError("the embedder returned non-finite vector values; nothing was written")
    return vectors.astype(np.float32)


def rechunk_plan(records: Iterable[tuple[str, str, Any, list[str]]], old_chunker: Callable[[str], list[str]],
                 new_chunker: Callable[[str], list[str]]) -> tuple[list[tuple[str, str, str]], int]:
    """From ``(record_type, record_id, content, [row texts in order])`` of each record with
    rows: the records whose rows are exactly what the previous chunking made of their content
    and the new one cuts differently (``(record_type, record_id, content)``, to re-chunk), and
    how many records keep their rows (caller-owned chunks, a separate ``index_text``, or a
    previous chunking this embedder cannot reproduce)."""
    todo: list[tuple[str, str, str]] = []
    kept = 0
    for rtype, rid, content, chunks in records:
        if isinstance(content, str) and chunks == old_chunker(content):
            if chunks != new_chunker(content):
                todo.append((rtype, rid, content))
        else:
            kept += 1
    return todo, kept


def apply_rechunk(store: Any, todo: list[tuple[str, str, str]], batch_size: int) -> int:
    """Update each planned record with ``index_text`` = its content through ``store`` (so the
    store chunks it with its recorded policy and keyword rows follow), ``batch_size`` records
    per transaction; returns how many were updated. Each record is read again in the update's
    transaction: one deleted (a user's ``forget``), re-texted, or replaced by another record
    under its id since the plan was read keeps its rows, and the content read is never
    written into it."""
    done = 0
    for start in range(0, len(todo), batch_size):
        with store.transaction():
            for rtype, rid, content in todo[start:start + batch_size]:
                now = store.get(rtype, rid)
                if now is None or now.content != content:
                    continue
                done += store.update(rtype, rid, index_text=content)
    return done
