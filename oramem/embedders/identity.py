"""Embedding identity: which embedder built a store's vectors (persisted with the store).

Vectors of two embedders live in two unrelated spaces, even at the same dimension, so a
store records the identity of the embedder that built it and refuses an open with another
one (``StoreSettingsMismatch``). An identity is a small JSON object:

- ``HashEmbedder``: ``{"kind": "hash", "dimension": 256, "seed": 0}``
- ``OpenAICompatibleEmbedder``: ``{"kind": "openai-compatible", "model": ..., "dimension": ...}``
  (the server URL is not part of it: the same model behind another server is the same space)
- ``ONNXEmbedder``: ``{"kind": "onnx", "model": ..., "digest": "sha256:...", "dimension": ...,
  "normalize": ..., "pooling": ..., "prefixes": ..., "path": ..., "files": {name: sha256}}``
  (``files``: every file that decides the vectors, compared when both sides record it); ``model`` (a directory
  name or a model id) and ``path`` (where it was loaded from) are informational: two ONNX
  identities are the same when everything else is (the weights digest decides)
- ``OracleDBEmbedder``: ``{"kind": "oracle-db", "model": ..., "dimension": ...}``
- every kind: ``chunking``, the chunk policy that fits the embedder's input window
  (:mod:`oramem.chunking`, issue 28), when it has one; informational for the comparison
- any embedder with an ``embedder_identity`` attribute (a dict of JSON values with a
  ``kind``): that dict; any other embedder: ``{"kind": "python", "class": "module.Class",
  "dimension": ...}``.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Mapping
from typing import Any, Iterator, Optional

__all__ = ["identity_of", "same_identity", "describe_identity", "how_to_open", "encode_identity", "decode_identity",
           "mismatch_message", "MOVE_ORACLE", "MOVE_SQLITE", "vectors_made_by", "vectors_maker"]

#: Keys that name an identity without deciding it (per kind).
_INFORMATIONAL = {"onnx": {"model", "path"}}
#: Keys compared only when both identities have them (stores built before they were recorded).
_WHEN_BOTH = {"onnx": {"files"}}


def identity_of(embedder: Any) -> Optional[dict[str, Any]]:
    """The identity of ``embedder`` (None for no embedder), with the chunking that fits its
    input window (``chunking``, issue 28) when it has one."""
    ident = _identity_of(embedder)
    if ident is not None and "chunking" not in ident:
        from ..chunking import chunking_identity

        chunking = chunking_identity(embedder)
        if chunking is not None:
            ident["chunking"] = chunking
    return ident


def _identity_of(embedder: Any) -> Optional[dict[str, Any]]:
    if embedder is None:
        return None
    own = getattr(embedder, "embedder_identity", None)
    if own is not None:
        if not isinstance(own, Mapping) or not isinstance(own.get("kind"), str):
            raise TypeError(f"{type(embedder).__name__}.embedder_identity must be a dict with a 'kind' string")
        ident = dict(own)
        try:
            json.dumps(ident)
        except (TypeError, ValueError):
            raise TypeError(f"{type(embedder).__name__}.embedder_identity must hold JSON values only") from None
        return ident
    from .hashing import HashEmbedder
    from .openai_compat import OpenAICompatibleEmbedder

    dim = int(embedder.embedding_dimension)
    if isinstance(embedder, HashEmbedder):
        return {"kind": "hash", "dimension": dim, "seed": embedder.seed}
    if isinstance(embedder, OpenAICompatibleEmbedder):
        return {"kind": "openai-compatible", "model": embedder.model, "dimension": dim}
    cls = type(embedder)
    if cls.__name__ == "OracleDBEmbedder" and hasattr(embedder, "model_name"):
        return {"kind": "oracle-db", "model": embedder.model_name, "dimension": dim}
    return {"kind": "python", "class": f"{cls.__module__}.{cls.__qualname__}", "dimension": dim}


def same_identity(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Same vector space. ``chunking`` does not decide it: a store keeps the chunking it
    recorded (or the legacy one) until ``oramem reembed`` adopts the embedder's."""
    if a.get("kind") != b.get("kind"):
        return False
    skip = _INFORMATIONAL.get(str(a.get("kind")), set()) | {"chunking"}
    keys = (set(a) | set(b)) - skip
    return all(a.get(k) == b.get(k) for k in keys if not _recorded_on_one_side(a, b, k))


def _recorded_on_one_side(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> bool:
    """A key of ``_WHEN_BOTH`` that one identity lacks (recorded by a newer oramem only)."""
    return key in _WHEN_BOTH.get(str(a.get("kind")), set()) and (a.get(key) is None or b.get(key) is None)


def describe_identity(ident: Optional[Mapping[str, Any]]) -> str:
    if ident is None:
        return "an unrecorded embedder"
    kind = ident.get("kind")
    dim = ident.get("dimension")
    if kind == "hash":
        return f"HashEmbedder(dim={dim}, seed={ident.get('seed')})"
    if kind == "openai-compatible":
        return f"the OpenAI-compatible model {ident.get('model')!r} ({dim}-d)"
    if kind == "onnx":
        return (
            f"the ONNX model {ident.get('model')!r} ({dim}-d, weights {ident.get('digest')}, "
            f"pooling {ident.get('pooling')}, normalize={ident.get('normalize')})"
        )
    if kind == "oracle-db":
        return f"the in-database model {ident.get('model')!r} ({dim}-d)"
    if kind == "python":
        return f"{ident.get('class')} ({dim}-d)"
    return json.dumps(dict(ident), sort_keys=True)


def how_to_open(ident: Mapping[str, Any]) -> str:
    """What to pass to open a store built by ``ident`` (API and CLI)."""
    kind = ident.get("kind")
    dim = ident.get("dimension")
    if kind == "hash":
        cli = "the CLI's default embedder" if dim == 256 and ident.get("seed") == 0 else f"CLI: --embed-dim {dim}"
        return f"embedder=HashEmbedder({dim}, seed={ident.get('seed')}) ({cli})"
    if kind == "openai-compatible":
        model = ident.get("model")
        return f"embedder=OpenAICompatibleEmbedder({model!r}, base_url=...) (CLI: --embed-url URL --embed-model {model})"
    if kind == "onnx":
        model = ident.get("path") or ident.get("model")
        return f"embedder=ONNXEmbedder({model!r}) with the same weights (CLI: --embed-onnx {model})"
    if kind == "oracle-db":
        return f"embedder=OracleDBEmbedder(conn, {ident.get('model')!r})"
    if kind == "python":
        return f"an embedder of class {ident.get('class')}"
    return "the embedder that built it"


def encode_identity(ident: Optional[Mapping[str, Any]]) -> Optional[str]:
    return None if ident is None else json.dumps(dict(ident), sort_keys=True, separators=(",", ":"))


def decode_identity(text: Optional[str]) -> Optional[dict[str, Any]]:
    if text is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None


#: how to move a store to another embedder, per engine (the last clause of the message)
MOVE_SQLITE = "or move the store to the new embedder with `oramem reembed` (Python: oramem.sqlite.reembed_store)"
MOVE_ORACLE = ("or move the store to the new embedder with `oramem --db oracle://USER@HOST:PORT/SERVICE reembed` "
               "(Python: oramem.oracle_reembed.reembed_store; docs/oracle-models.md)")


def mismatch_message(store_id: str, stored: Optional[Mapping[str, Any]], requested: Mapping[str, Any],
                     move: str = MOVE_SQLITE) -> str:
    """The StoreSettingsMismatch text for an open with another embedder (both engines; ``move``
    names the engine's way to another embedder)."""
    fix = f"open it with {how_to_open(stored)}" if stored is not None else "open it with the embedder that built it"
    setting = "embedder"
    if stored is not None and stored.get("dimension") != requested.get("dimension"):
        setting = f"embedder and vector_dim ({stored.get('dimension')} stored, {requested.get('dimension')} asked)"
    return (
        f"{setting}: store {store_id!r} was built with {describe_identity(stored)}, this open uses "
        f"{describe_identity(requested)}; vectors of different embedders are not comparable. {fix}, {move}"
    )


#: the identity of the embedder that made the vectors a layer above the store passes as its
#: own (``embeddings``, ``query_vector``) in this context (:func:`vectors_made_by`)
_VECTORS_MADE_BY: contextvars.ContextVar[Optional[dict[str, Any]]] = contextvars.ContextVar(
    "oramem_vectors_made_by", default=None)


@contextlib.contextmanager
def vectors_made_by(identity: Optional[Mapping[str, Any]]) -> Iterator[None]:
    """Inside the block, the vectors given to a store's ``add``/``add_batches``
    (``embeddings``) and ``search`` (``query_vector``) were made by the embedder
    ``identity`` (None: say nothing): the store sends it with the request and the engine
    refuses the call (``StoreSettingsMismatch``, nothing read or written) when the store
    records another embedder, i.e. another process moved the store with ``reembed`` after
    that embedder was chosen (rek47: a ``KnowledgeMemory`` embeds with its own embedder and
    hands the store explicit vectors; red40 covers only what the store object embeds
    itself). Cost: none of its own: the engine compares within the call."""
    token = _VECTORS_MADE_BY.set(None if identity is None else dict(identity))
    try:
        yield
    finally:
        _VECTORS_MADE_BY.reset(token)


def vectors_maker() -> Optional[dict[str, Any]]:
    """The identity :func:`vectors_made_by` set in this context, or None."""
    return _VECTORS_MADE_BY.get()
