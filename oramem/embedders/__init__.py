"""Embedders: the :class:`IEmbedder` interface and the bundled implementations.

- :class:`HashEmbedder` — deterministic lexical feature hashing (numpy only); for tests,
  demos and offline use, not semantic.
- :class:`OpenAICompatibleEmbedder` — any server speaking the OpenAI ``/embeddings`` API
  (standard library HTTP only).
- :class:`ONNXEmbedder` — a local sentence-embedding model on ONNX Runtime (the
  default model's runtime; a core dependency, no torch). :mod:`oramem.embedders.hub` fetches
  the default model once into the model cache.
"""

from .base import IEmbedder
from .hashing import HashEmbedder
from .openai_compat import EmbeddingServiceError, OpenAICompatibleEmbedder

from .onnx import ModelNotAvailable, ONNXEmbedder

__all__ = [
    "IEmbedder",
    "HashEmbedder",
    "OpenAICompatibleEmbedder",
    "EmbeddingServiceError",
    "ONNXEmbedder",
    "ModelNotAvailable",
]
