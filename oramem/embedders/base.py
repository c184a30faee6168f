"""The embedder interface (STORE_CONTRACT §1)."""

from __future__ import annotations

import abc
import asyncio
from typing import Sequence

import numpy as np

__all__ = ["IEmbedder", "texts_argument"]


class IEmbedder(abc.ABC):
    """Turns texts into float32 vectors of a fixed dimension.

    ``embed`` returns an array of shape ``(len(texts), embedding_dimension)``.
    ``is_query=True`` marks search queries, for models that embed queries and passages
    differently. Any object with these three members works as an embedder (duck typing);
    subclassing only supplies the default ``embed_async``.
    """

    @property
    @abc.abstractmethod
    def embedding_dimension(self) -> int:
        """Length of every vector this embedder returns."""

    @abc.abstractmethod
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        """Embed ``texts``; shape ``(len(texts), embedding_dimension)``, float32."""

    async def embed_async(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        """Async twin of :meth:`embed`; by default runs ``embed`` in a worker thread."""
        return await asyncio.to_thread(self.embed, texts, is_query=is_query)


def texts_argument(texts: Sequence[str], who: str = "embed") -> list[str]:
    """The ``texts`` argument of ``embed`` as a list of str, or ``TypeError`` saying what to pass
    (a bare string is a common slip: it would be embedded character by character)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{who} takes a sequence of str, not a single string; wrap it in a list")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"{who}: texts[{i}] must be a str, got {type(text).__name__}")
    return out
