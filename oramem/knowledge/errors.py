"""Domain errors of the knowledge layer (KC-7.1).

Bad arguments raise ``ValueError``/``TypeError`` before any LLM call or write; database
problems raise the store's ``StoreError`` family. Everything else the layer reports is a
:class:`KnowledgeError`.
"""

from __future__ import annotations

from typing import Optional

from ..errors import Error

__all__ = ["KnowledgeError", "LLMError", "LLMTimeout", "LLMReplyError", "EmbeddingError", "ExtractionError", "ConflictError",
           "plain_text"]


class KnowledgeError(Error):
    """Base of the knowledge layer's domain errors.

    ``plain``: the message without the text of a model reply it quotes (``unparsable reply:
    '...'``), for what the layer returns and stores (see :func:`plain_text`); the message
    itself when it quotes nothing."""

    def __init__(self, *args: object, plain: Optional[str] = None) -> None:
        super().__init__(*args)
        self.plain = plain


class LLMError(KnowledgeError):
    """An LLM call failed (transport, HTTP status, unparsable or non-conforming reply)."""


def plain_text(exc: BaseException) -> str:
    """``str(exc)`` without the model reply it may quote: the text a write returns and stores
    (``WriteResult.error`` and ``warnings``, the event's ``trace_json``, a queued write's
    ``last_error``). A failed reply to a prompt that carried a conversation may repeat another
    user's words; stored, the quote would outlive her erasure in rows of another scope, where
    the verification scan counts it as shared (KC-3.10, SC-14.2). The exception keeps the quote
    for whoever catches it."""
    plain = getattr(exc, "plain", None)
    return plain if isinstance(plain, str) else str(exc)


class LLMTimeout(LLMError):
    """An LLM call exceeded its step timeout (KC-7.2)."""


class LLMReplyError(LLMError):
    """An LLM reply that cannot be parsed or does not match its task's schema (KC-2.4).

    ``task`` is the task (``"extract"``), ``field`` the first offending field as a path
    (``"facts[2].subject"``; ``None`` when the reply is not a JSON object at all)."""

    def __init__(self, task: str, field: str | None, problem: str, *, plain_problem: Optional[str] = None) -> None:
        self.task = task
        self.field = field
        self.problem = problem
        shown = problem if plain_problem is None else plain_problem
        super().__init__(f"{task}: reply field {field}: {problem}" if field else f"{task}: {problem}",
                         plain=f"{task}: reply field {field}: {shown}" if field else f"{task}: {shown}")


class EmbeddingError(KnowledgeError):
    """The embedder raised, or returned the wrong count or dimension (KC-7.6)."""


class ExtractionError(KnowledgeError):
    """Extraction (or one of its chunks, after one retry) failed (KC-7.3)."""


class ConflictError(KnowledgeError):
    """A write's decisions went stale under the agent lock and could not be re-reconciled (KC-7.5)."""
