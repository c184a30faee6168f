"""Embedders: the :class:`IEmbedder` interface and the bundled implementations.

- :class:`HashEmbedder` — deterministic lexical feature hashing (numpy only); for tests,
  demos and offline use, not semantic.
- :class:`OpenAICompatibleEmbedder` — any server speaking the OpenAI ``/embeddings`` API
  (standard library HTTP only).
"""

from .base import IEmbedder
from .hashing import HashEmbedder
from .openai_compat import EmbeddingServiceError, OpenAICompatibleEmbedder

__all__ = ["IEmbedder", "HashEmbedder", "OpenAICompatibleEmbedder", "EmbeddingServiceError"]
