"""Domain errors of the knowledge layer (KC-7.1).

Bad arguments raise ``ValueError``/``TypeError`` before any LLM call or write; database
problems raise the store's ``StoreError`` family. Everything else the layer reports is a
:class:`KnowledgeError`.
"""

from __future__ import annotations

from ..errors import Error

__all__ = ["KnowledgeError", "LLMError", "LLMTimeout", "LLMReplyError", "EmbeddingError", "ExtractionError", "ConflictError"]


class KnowledgeError(Error):
    """Base of the knowledge layer's domain errors."""


class LLMError(KnowledgeError):
    """An LLM call failed (transport, HTTP status, unparsable or non-conforming reply)."""


class LLMTimeout(LLMError):
    """An LLM call exceeded its step timeout (KC-7.2)."""


class LLMReplyError(LLMError):
    """An LLM reply that cannot be parsed or does not match its task's schema (KC-2.4).

    ``task`` is the task (``"extract"``), ``field`` the first offending field as a path
    (``"facts[2].subject"``; ``None`` when the reply is not a JSON object at all)."""

    def __init__(self, task: str, field: str | None, problem: str) -> None:
        self.task = task
        self.field = field
        self.problem = problem
        super().__init__(f"{task}: reply field {field}: {problem}" if field else f"{task}: {problem}")


class EmbeddingError(KnowledgeError):
    """The embedder raised, or returned the wrong count or dimension (KC-7.6)."""


class ExtractionError(KnowledgeError):
    """Extraction (or one of its chunks, after one retry) failed (KC-7.3)."""


class ConflictError(KnowledgeError):
    """A write's decisions went stale under the agent lock and could not be re-reconciled (KC-7.5)."""
