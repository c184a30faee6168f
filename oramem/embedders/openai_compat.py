"""Embedder for any server that speaks the OpenAI ``/embeddings`` API.

Works with OpenAI itself and with local servers that copy its API (vLLM, llama.cpp
server, Ollama's ``/v1``, LM Studio, text-embeddings-inference's OpenAI route, ...). HTTP goes
through :mod:`oramem._http` (httpx, pooled connections), shared with the knowledge layer's
LLM provider.

Behaviour:

- ``POST {base_url}/embeddings`` with ``{"model": ..., "input": [...]}``, at most
  ``batch_size`` texts per request; results are put back in input order by their ``index``.
- Retries up to ``max_retries`` times on HTTP 408, 409, 425, 429 and 5xx, timeouts and
  connection errors, with exponential backoff and jitter; a ``Retry-After`` header (seconds or
  an HTTP date) is honoured, capped at :data:`MAX_RETRY_AFTER` seconds. Any other 4xx fails at
  once (the one policy of :mod:`oramem._http`). Errors are :class:`EmbeddingServiceError` and name the endpoint and the status.
- ``dimension`` is checked on every response; when omitted it is learned lazily, from the
  first response or by a one-text probe when :attr:`embedding_dimension` is read first.
- ``is_query`` is accepted and ignored: the OpenAI API has no query/passage flag. Models
  that want instruction prefixes ("query: ", "passage: ") need a small wrapper that adds
  them before calling :meth:`embed`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np

from ..errors import Error
from .._http import MAX_RETRY_AFTER, OPENAI_HOST, HTTPFailure, JSONPoster, RetryPolicy, redact_url
from .._http import resolve_api_key as _resolve_key
from .base import IEmbedder, InputWindow, texts_argument

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAICompatibleEmbedder", "EmbeddingServiceError", "MAX_RETRY_AFTER", "OPENAI_HOST", "resolve_api_key"]


class EmbeddingServiceError(Error, RuntimeError):
    """The embedding service failed or answered something unusable.

    ``url`` is the endpoint, ``status`` the HTTP status (None for network errors and
    malformed answers), ``attempts`` how many requests were made.
    """

    def __init__(self, message: str, *, url: str, status: Optional[int] = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = attempts


def resolve_api_key(base_url: str, api_key: Optional[str], allow_insecure_key: bool = False) -> Optional[str]:
    """The key to send to ``base_url`` (see :class:`OpenAICompatibleEmbedder`); raises
    ``ValueError`` rather than send a key in clear text to another machine."""
    return _resolve_key(
        base_url,
        api_key,
        env="ORAMEM_EMBED_API_KEY",
        allow_insecure_key=allow_insecure_key,
        what="embedding API key",
        opt_in="allow_insecure_key=True (CLI: --embed-allow-http-key)",
    )


#: Documented per-input token limits of OpenAI's embedding models (API reference, "Create
#: embeddings": "The input must not exceed the max input tokens for the model (8192 tokens for
#: all embedding models)"). Other models: pass ``max_input_tokens``.
KNOWN_INPUT_TOKENS = {"text-embedding-3-small": 8192, "text-embedding-3-large": 8192, "text-embedding-ada-002": 8192}
#: The character bound per token the store assumes for a service whose tokenizer it does not
#: have: English and other Latin-script text averages about 4 characters per BPE or WordPiece
#: token, so 2 leaves a margin; text in scripts with fewer characters per token (CJK) needs a
#: lower ``max_input_tokens``.
CHARS_PER_TOKEN = 2


class OpenAICompatibleEmbedder(IEmbedder):
    """``OpenAICompatibleEmbedder(model, base_url=..., api_key=None, dimension=None, ...)``.

    ``base_url`` is the API root, e.g. ``http://localhost:8000/v1`` or
    ``https://api.openai.com/v1``. The key: ``api_key``, else ``$ORAMEM_EMBED_API_KEY``,
    else ``$OPENAI_API_KEY`` only when ``base_url`` is OpenAI's own host; with none, no
    ``Authorization`` header is sent (fine for most local servers). A key is never sent
    over plain ``http://`` to a host other than this machine (loopback) unless
    ``allow_insecure_key=True``: the constructor refuses instead.
    ``backoff_base`` is the first retry delay in seconds (doubled per retry, jittered).
    ``max_input_tokens``: how many tokens the model reads per input (issue 28); the store
    chunks texts so none passes it (:attr:`input_window`). Known OpenAI models have it by
    default; give it for any other model (a local server's model has its own window, e.g.
    512 tokens), or text past the window is never embedded.
    Credentials in ``base_url`` (``https://user:secret@host/v1``) are sent as HTTP Basic auth,
    follow the same clear-text rule as a key, and never appear in :attr:`base_url`,
    :attr:`url`, the ``repr`` or an error message (shown as ``***@``); a key or credential
    that the server echoes in an error body is shown as ``***``.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: Optional[str] = None,
        dimension: Optional[int] = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 128,
        extra_headers: Optional[Mapping[str, str]] = None,
        backoff_base: float = 0.5,
        allow_insecure_key: bool = False,
        max_input_tokens: Optional[int] = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("OpenAICompatibleEmbedder needs a non-empty model name")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {redact_url(base_url)!r}")
        if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1):
            raise ValueError(f"dimension must be a positive int or None, got {dimension!r}")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if not isinstance(backoff_base, (int, float)) or backoff_base < 0:
            raise ValueError(f"backoff_base must be a number >= 0, got {backoff_base!r}")
        if max_input_tokens is not None and (
            isinstance(max_input_tokens, bool) or not isinstance(max_input_tokens, int) or max_input_tokens < 8
        ):
            raise ValueError(f"max_input_tokens must be an int >= 8 or None, got {max_input_tokens!r}")
        self.model = model
        real_base = base_url.rstrip("/")
        # the printable forms: without userinfo (the poster sends it as Basic auth)
        self.base_url = redact_url(real_base)
        self._api_key = resolve_api_key(real_base, api_key, allow_insecure_key)
        self._dimension = dimension
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.batch_size = batch_size
        self.backoff_base = float(backoff_base)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        headers.update(extra_headers or {})
        self._poster = JSONPoster(real_base + "/embeddings", headers=headers)
        self.url = redact_url(self.base_url + "/embeddings")
        self._lock = threading.Lock()
        if max_input_tokens is None:
            max_input_tokens = KNOWN_INPUT_TOKENS.get(model)
        self.max_input_tokens = max_input_tokens

    @property
    def input_window(self) -> Optional[InputWindow]:
        """What the service reads per input (issue 28): ``max_input_tokens`` as given, else
        the documented limit of a known OpenAI model (:data:`KNOWN_INPUT_TOKENS`), else
        None (not known: the store keeps its default 2,000-character chunks). The service's
        tokenizer is not available here, so the store sizes chunks by a safe character bound
        of :data:`CHARS_PER_TOKEN` characters per token."""
        if self.max_input_tokens is None:
            return None
        return InputWindow(max_tokens=self.max_input_tokens, max_chars=self.max_input_tokens * CHARS_PER_TOKEN)

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder(model={self.model!r}, base_url={self.base_url!r}, dimension={self._dimension})"

    # -- IEmbedder -----------------------------------------------------------------------
    @property
    def embedding_dimension(self) -> int:
        """The vector length; probes the service once with one short text when unknown."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        texts = texts_argument(texts)
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        parts = [
            self._embed_batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]

    async def embed_async(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        """Native async: the requests run on the caller's event loop (cancellable)."""
        texts = texts_argument(texts)
        if not texts:
            if self._dimension is None:
                await self.embed_async(["dimension probe"])
            assert self._dimension is not None
            return np.zeros((0, self._dimension), dtype=np.float32)
        retry = self._retry()
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            try:
                response = await self._poster.post_async(self._body(batch), timeout=self.timeout, retry=retry)
            except HTTPFailure as exc:
                raise self._service_error(exc) from None
            parts.append(self._parse_response(response, len(batch)))
        return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]

    def close(self) -> None:
        """Release the pooled HTTP connections (the embedder stays usable: it reconnects)."""
        self._poster.close()

    # -- one request ---------------------------------------------------------------------
    def _body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _retry(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries, backoff_base=self.backoff_base)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        try:
            response = self._poster.post(self._body(texts), timeout=self.timeout, retry=self._retry())
        except HTTPFailure as exc:
            raise self._service_error(exc) from None
        return self._parse_response(response, len(texts))

    def _service_error(self, exc: HTTPFailure) -> EmbeddingServiceError:
        if exc.retried:
            message = f"embedding request to {self.url} failed after {exc.attempts} attempt(s): {exc.reason}"
        else:
            message = f"embedding request to {self.url} was rejected: {exc.reason}"
        return EmbeddingServiceError(message, url=self.url, status=exc.status, attempts=exc.attempts)

    def _parse_response(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            payload = response.json()
        except ValueError:
            raise EmbeddingServiceError(
                f"embedding response from {self.url} is not JSON: {self._poster.redact(repr(response.content[:200]))}",
                url=self.url,
                status=200,
            ) from None
        return self._parse(payload, expected)

    def _parse(self, payload: Any, expected: int) -> np.ndarray:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise EmbeddingServiceError(
                f"embedding response from {self.url} has no 'data' list", url=self.url, status=200
            )
        if len(data) != expected:
            raise EmbeddingServiceError(
                f"embedding response from {self.url} has {len(data)} embeddings for {expected} inputs",
                url=self.url,
                status=200,
            )
        rows: list[Any] = [None] * expected
        for pos, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise EmbeddingServiceError(
                    f"embedding response from {self.url}: data[{pos}] has no 'embedding' list",
                    url=self.url,
                    status=200,
                )
            index = item.get("index", pos)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected or rows[index] is not None:
                raise EmbeddingServiceError(
                    f"embedding response from {self.url}: data[{pos}] has a missing, duplicate or "
                    f"out-of-range index {index!r}",
                    url=self.url,
                    status=200,
                )
            rows[index] = item["embedding"]
        lengths = {len(r) for r in rows}
        if len(lengths) != 1:
            raise ValueError(
                f"embedding service {self.url} returned vectors of different lengths {sorted(lengths)} in one response"
            )
        got = lengths.pop()
        with self._lock:
            if self._dimension is None:
                if got < 1:
                    raise ValueError(f"embedding service {self.url} returned empty vectors")
                self._dimension = got
            elif got != self._dimension:
                raise ValueError(
                    f"embedding service {self.url} returned {got}-dimensional vectors, expected "
                    f"dimension={self._dimension} (model {self.model!r}); fix the dimension argument or the model"
                )
        try:
            return np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbeddingServiceError(
                f"embedding response from {self.url} holds non-numeric vector values", url=self.url, status=200
            ) from None
