"""Use a LangChain ``Embeddings`` object (or a LangGraph ``embed`` function) as an oramem embedder.

LangGraph's ``IndexConfig`` names its embedding model as a LangChain ``Embeddings``, a sync
function ``list[str] -> list[list[float]]``, or a ``"provider:model"`` string; this wraps any of
them (through ``langgraph.store.base.embed.ensure_embeddings``) into oramem's ``IEmbedder``
contract: float32 arrays of shape ``(len(texts), dim)``, queries embedded with ``embed_query``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..embedders.base import IEmbedder


class LangChainEmbedder(IEmbedder):
    """``embedder=LangChainEmbedder(OpenAIEmbeddings(...), dims=1536)`` for any oramem store."""

    def __init__(self, embeddings: Any, dims: int):
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
            raise ValueError(f"dims must be a positive int (the embedding model's dimension), got {dims!r}")
        if not (hasattr(embeddings, "embed_documents") and hasattr(embeddings, "embed_query")):
            # an embed function or "provider:model" is LangGraph's IndexConfig form: it needs
            # langgraph, which the langchain extra alone does not install
            from . import require

            embeddings = require("langgraph.store.base.embed", "langgraph").ensure_embeddings(embeddings)
        self._embeddings = embeddings
        self._dims = dims

    @property
    def embedding_dimension(self) -> int:
        return self._dims

    def _array(self, vectors: Any, n: int) -> np.ndarray:
        out = np.asarray(vectors, dtype=np.float32).reshape(n, -1) if n else np.zeros((0, self._dims), np.float32)
        if out.shape[1] != self._dims:
            raise ValueError(f"the embedding model returned {out.shape[1]}-dimensional vectors; dims says {self._dims}")
        return out

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        texts = list(texts)
        if is_query:
            return self._array([self._embeddings.embed_query(t) for t in texts], len(texts))
        return self._array(self._embeddings.embed_documents(texts) if texts else [], len(texts))

    async def embed_async(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        texts = list(texts)
        if is_query:
            return self._array([await self._embeddings.aembed_query(t) for t in texts], len(texts))
        return self._array(await self._embeddings.aembed_documents(texts) if texts else [], len(texts))
