"""Which embedder to use when the caller names none (the semantic default).

- A new store: ``$ORAMEM_ONNX_MODEL`` when set (a model directory, an ``.onnx`` file or a
  model id; it names the model for NEW stores only), else the default model
  ``sentence-transformers/all-MiniLM-L6-v2`` on ONNX Runtime: from the model cache
  (``$ORAMEM_MODEL_CACHE``, else ``$XDG_CACHE_HOME/oramem/models``, else ``~/.cache/oramem/models``), fetched there once on first use
  (:mod:`oramem.embedders.hub`: ``$HF_ENDPOINT``, pinned revision, checked digests). When it
  can be neither found nor fetched (``HF_HUB_OFFLINE=1``, no network, a bad mirror), the
  store uses ``HashEmbedder(256)`` and one line (once per process) says why and how to get
  the model; a failed fetch is not retried in the same process.
- An existing store: the embedder its recorded identity names, when it can be rebuilt here
  (a ``HashEmbedder``; an ONNX model at its recorded path, in the cache or fetched again for
  a pinned model, with the same weights); otherwise none (the caller then gives vectors or
  an embedder; keyword search needs neither).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Mapping, Optional

from .hashing import HashEmbedder
from .identity import identity_of, same_identity

__all__ = ["DEFAULT_MODEL_ID", "MODEL_ENV", "HASH_DIM", "local_model", "default_embedder", "fallback_reason", "embedder_for", "SEMANTIC_HINT"]

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_ENV = "ORAMEM_ONNX_MODEL"
HASH_DIM = 256
SEMANTIC_HINT = (
    f"using the lexical HashEmbedder({HASH_DIM}), not semantic, for this new store (it keeps it; "
    "`oramem reembed` moves it later)"
)
_HOW = (
    "get the model with `oramem models pull` (HF_ENDPOINT may name a Hub mirror), or set "
    f"{MODEL_ENV} to an ONNX model directory"
)
_notified = False
#: Why fetching the default model failed in this process (not retried until restart).
_failed: Optional[str] = None


def _runtime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def _cached_default() -> bool:
    from . import hub
    from .onnx import _find_model_file

    cached = hub.model_dir(hub.DEFAULT_MODEL)
    if (cached / hub.MANIFEST).exists():
        return hub.is_complete(cached)
    # put there by hand (no manifest): usable when the graph and the tokenizer are there
    return cached.is_dir() and _find_model_file(cached) is not None and (cached / "tokenizer.json").is_file()


def local_model() -> Optional[str]:
    """The local model to use by default (``$ORAMEM_ONNX_MODEL`` or the cached default), or None;
    never touches the network."""
    value = os.environ.get(MODEL_ENV, "").strip()
    if value:
        return value
    if not _runtime_available():
        return None
    return DEFAULT_MODEL_ID if _cached_default() else None


def _warn(reason: str) -> None:
    global _notified
    if not _notified:
        _notified = True
        warnings.warn(f"oramem: {SEMANTIC_HINT}: {reason}; {_HOW}", UserWarning, stacklevel=4)


def default_embedder(*, notify: bool = True) -> Any:
    """The embedder for a new store when none is given (see the module docstring).

    ``$ORAMEM_ONNX_MODEL`` set to something unusable is an error (the user asked for it).
    """
    global _failed
    value = os.environ.get(MODEL_ENV, "").strip()
    if value:
        from .onnx import ONNXEmbedder

        return ONNXEmbedder(value)
    if not _runtime_available():
        if notify:
            _warn("ONNX Runtime or tokenizers is not installed (pip install onnxruntime tokenizers)")
        return HashEmbedder(HASH_DIM)
    from . import hub
    from .onnx import ModelNotAvailable, ONNXEmbedder

    if not _cached_default():
        if _failed is None:
            try:
                hub.pull(hub.DEFAULT_MODEL, progress=sys.stderr)
            except hub.ModelOffline:
                _failed = "HF_HUB_OFFLINE is set"
            except ModelNotAvailable as exc:
                _failed = " ".join(str(exc).split())
        if _failed is not None:
            if notify:
                _warn(f"the default model {DEFAULT_MODEL_ID} is not in the model cache ({hub.model_dir(hub.DEFAULT_MODEL).parent}) "
                      f"and could not be fetched ({_failed})")
            return HashEmbedder(HASH_DIM)
    return ONNXEmbedder(DEFAULT_MODEL_ID, download=False)


def fallback_reason() -> Optional[str]:
    """Why :func:`default_embedder` fell back to HashEmbedder in this process (None when it did
    not, or was not called): the text its notice gives."""
    if os.environ.get(MODEL_ENV, "").strip():
        return None
    if not _runtime_available():
        return "ONNX Runtime or tokenizers is not installed (pip install onnxruntime tokenizers)"
    if _failed is not None:
        return f"it is not in the model cache and could not be fetched ({_failed})"
    return None


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
        model = identity.get("model")
        from . import hub

        if isinstance(model, str) and model in hub.MODELS and _failed is None and not _cached_default():
            try:  # a pinned model whose cache was cleared: fetch it again (same revision and digests)
                candidate = ONNXEmbedder(model)
            except (RuntimeError, ValueError, OSError, TypeError):
                return None
            found = identity_of(candidate)
            if found is not None and same_identity(found, identity):
                return candidate
    return None
