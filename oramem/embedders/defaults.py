"""Which embedder to use when the caller names none (the semantic default).

- A new store: the **local model** when one is available, else ``HashEmbedder(256)`` with a
  one-line notice (once per process) saying how to get semantic search. The local model is
  ``$ORAMEM_ONNX_MODEL`` (a model directory, an ``.onnx`` file or a cached model id), else
  ``sentence-transformers/all-MiniLM-L6-v2`` when it is in the model cache
  (``$ORAMEM_MODEL_CACHE`` or ``~/.cache/oramem/models``) and ``oramem[onnx]`` is installed.
  Nothing is ever downloaded implicitly.
- An existing store: the embedder its recorded identity names, when it can be rebuilt here
  (a ``HashEmbedder``; an ONNX model at its recorded path or in the cache, with the same
  weights); otherwise none, as before (the caller then gives vectors or an embedder).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Optional

from .hashing import HashEmbedder
from .identity import identity_of, same_identity

__all__ = ["DEFAULT_MODEL_ID", "MODEL_ENV", "HASH_DIM", "local_model", "default_embedder", "embedder_for", "SEMANTIC_HINT"]

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_ENV = "ORAMEM_ONNX_MODEL"
HASH_DIM = 256
SEMANTIC_HINT = (
    f"using the lexical HashEmbedder({HASH_DIM}), not semantic; for semantic search "
    f"pip install 'oramem[onnx]' and set {MODEL_ENV} to an ONNX sentence-embedding model directory "
    "(README: 'Semantic search with a local model')"
)
_notified = False


def _runtime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def local_model() -> Optional[str]:
    """The local model to use by default (``$ORAMEM_ONNX_MODEL`` or the cached default), or None."""
    value = os.environ.get(MODEL_ENV, "").strip()
    if value:
        return value
    if not _runtime_available():
        return None
    from .onnx import _find_model_file, default_cache_dir

    cached = default_cache_dir() / DEFAULT_MODEL_ID.replace("/", "--")
    if cached.is_dir() and _find_model_file(cached) is not None and (cached / "tokenizer.json").is_file():
        return DEFAULT_MODEL_ID
    return None


def default_embedder(*, notify: bool = True) -> Any:
    """The embedder for a new store when none is given (see the module docstring).

    ``$ORAMEM_ONNX_MODEL`` set to something unusable is an error (the user asked for it).
    """
    global _notified
    model = local_model()
    if model is not None:
        from .onnx import ONNXEmbedder

        return ONNXEmbedder(model, download=False)
    if notify and not _notified:
        _notified = True
        warnings.warn(f"oramem: {SEMANTIC_HINT}", UserWarning, stacklevel=3)
    return HashEmbedder(HASH_DIM)


def embedder_for(identity: Optional[Mapping[str, Any]]) -> Optional[Any]:
    """Rebuild the embedder a store's identity names, or None when that is not possible here."""
    if not identity:
        return None
    kind = identity.get("kind")
    if kind == "hash":
        dim, seed = identity.get("dimension"), identity.get("seed", 0)
        if isinstance(dim, int) and dim >= 2 and isinstance(seed, int) and seed >= 0:
            return HashEmbedder(dim, seed=seed)
        return None
    if kind == "onnx" and _runtime_available():
        from .onnx import ONNXEmbedder

        for source in (identity.get("path"), os.environ.get(MODEL_ENV, "").strip() or None, identity.get("model")):
            if not source:
                continue
            try:
                candidate = ONNXEmbedder(source, download=False)
            except (RuntimeError, ValueError, OSError, TypeError):
                continue
            found = identity_of(candidate)
            if found is not None and same_identity(found, identity):
                return candidate
    return None
