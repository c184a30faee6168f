"""The embedder interface (STORE_CONTRACT §1)."""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

__all__ = ["IEmbedder", "InputWindow", "input_window", "texts_argument"]


@dataclass(frozen=True)
class InputWindow:
    """How much text an embedder reads per input (issue 28); the store sizes its chunks to it.

    - ``max_tokens``: tokens of text read per input, the model's special tokens excluded;
      with ``spans`` (the model's own tokenizer: ``spans(text)`` gives each token's
      ``(start, end)`` character offsets) the store counts chunks in these tokens.
    - ``max_chars``: a safe character bound when the tokenizer is not available here (a
      service's documented or configured token limit, derived conservatively).
    - ``tokenizer``: an identity of the tokenizer (a digest of its file), recorded with the
      store's chunking.

    An embedder exposes it as the optional attribute ``input_window``; an embedder without
    one (or with ``None``, as ``HashEmbedder``) reads any length."""

    max_tokens: Optional[int] = None
    max_chars: Optional[int] = None
    tokenizer: Optional[str] = None
    spans: Optional[Callable[[str], Sequence[tuple[int, int]]]] = field(default=None, compare=False, repr=False)


def input_window(embedder: Any) -> Optional[InputWindow]:
    """The embedder's :class:`InputWindow`, or None (reads any length, or does not say)."""
    window = getattr(embedder, "input_window", None) if embedder is not None else None
    return window if isinstance(window, InputWindow) else None


class IEmbedder(abc.ABC):
    """Turns texts into float32 vectors of a fixed dimension.

    ``embed`` returns an array of shape ``(len(texts), embedding_dimension)``.
    ``is_query=True`` marks search queries, for models that embed queries and passages
    differently. Any object with these three members works as an embedder (duck typing);
    subclassing only supplies the default ``embed_async``.
    """

    #: ``embed`` only computes, in this process (no network, no database, no other process):
    #: a caller with nothing to overlap it with may run it in place instead of on a worker
    #: thread (the knowledge layer's sync calls on SQLite). False unless an embedder says so.
    computes_locally: bool = False

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
