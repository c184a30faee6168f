"""Embedder for any server that speaks the OpenAI ``/embeddings`` API.

Works with OpenAI itself and with local servers that copy its API (vLLM, llama.cpp
server, Ollama's ``/v1``, LM Studio, text-embeddings-inference's OpenAI route, ...). It uses
only the standard library (``urllib``), so it adds no dependency.

Behaviour:

- ``POST {base_url}/embeddings`` with ``{"model": ..., "input": [...]}``, at most
  ``batch_size`` texts per request; results are put back in input order by their ``index``.
- Retries up to ``max_retries`` times on HTTP 429, HTTP 5xx, timeouts and connection
  errors, with exponential backoff and jitter; a ``Retry-After`` header (seconds or an
  HTTP date) is honoured, capped at :data:`MAX_RETRY_AFTER` seconds. Any other 4xx fails at
  once. Errors are :class:`EmbeddingServiceError` and name the endpoint and the status.
- ``dimension`` is checked on every response; when omitted it is learned lazily, from the
  first response or by a one-text probe when :attr:`embedding_dimension` is read first.
- ``is_query`` is accepted and ignored: the OpenAI API has no query/passage flag. Models
  that want instruction prefixes ("query: ", "passage: ") need a small wrapper that adds
  them before calling :meth:`embed`.
"""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .base import IEmbedder, texts_argument

__all__ = ["OpenAICompatibleEmbedder", "EmbeddingServiceError", "MAX_RETRY_AFTER"]

#: Longest wait a server's Retry-After header can impose per retry, in seconds.
MAX_RETRY_AFTER = 60.0
_BACKOFF_CAP = 20.0


class EmbeddingServiceError(RuntimeError):
    """The embedding service failed or answered something unusable.

    ``url`` is the endpoint, ``status`` the HTTP status (None for network errors and
    malformed answers), ``attempts`` how many requests were made.
    """

    def __init__(self, message: str, *, url: str, status: Optional[int] = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = attempts


class _Retryable(Exception):
    def __init__(self, message: str, status: Optional[int], retry_after: Optional[float]) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def _parse_retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _error_detail(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:300]
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        message = err.get("message") if isinstance(err, dict) else None
        if isinstance(message, str):
            return message[:300]
        if isinstance(err, str):
            return err[:300]
    return text[:300]


OPENAI_HOST = "api.openai.com"


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_api_key(base_url: str, api_key: Optional[str], allow_insecure_key: bool = False) -> Optional[str]:
    """The key to send to ``base_url`` (see :class:`OpenAICompatibleEmbedder`); raises
    ``ValueError`` rather than send a key in clear text to another machine."""
    parts = urllib.parse.urlsplit(base_url)
    host = (parts.hostname or "").lower()
    source = "api_key"
    key = api_key
    if key is None and os.environ.get("ORAMEM_EMBED_API_KEY"):
        key, source = os.environ["ORAMEM_EMBED_API_KEY"], "ORAMEM_EMBED_API_KEY"
    if key is None and host == OPENAI_HOST and os.environ.get("OPENAI_API_KEY"):
        key, source = os.environ["OPENAI_API_KEY"], "OPENAI_API_KEY"
    if key and parts.scheme == "http" and not _is_loopback(host) and not allow_insecure_key:
        raise ValueError(
            f"refusing to send the embedding API key ({source}) in clear text over http to {host!r}: "
            "use an https:// URL, or opt in with allow_insecure_key=True (CLI: --embed-allow-http-key)"
        )
    return key or None


class OpenAICompatibleEmbedder(IEmbedder):
    """``OpenAICompatibleEmbedder(model, base_url=..., api_key=None, dimension=None, ...)``.

    ``base_url`` is the API root, e.g. ``http://localhost:8000/v1`` or
    ``https://api.openai.com/v1``. The key: ``api_key``, else ``$ORAMEM_EMBED_API_KEY``,
    else ``$OPENAI_API_KEY`` only when ``base_url`` is OpenAI's own host; with none, no
    ``Authorization`` header is sent (fine for most local servers). A key is never sent
    over plain ``http://`` to a host other than this machine (loopback) unless
    ``allow_insecure_key=True``: the constructor refuses instead.
    ``backoff_base`` is the first retry delay in seconds (doubled per retry, jittered).
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
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("OpenAICompatibleEmbedder needs a non-empty model name")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
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
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/embeddings"
        self._api_key = resolve_api_key(self.base_url, api_key, allow_insecure_key)
        self._dimension = dimension
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.batch_size = batch_size
        self.backoff_base = float(backoff_base)
        self._extra_headers = dict(extra_headers or {})
        self._lock = threading.Lock()

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

    # -- one request ---------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "oramem"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        headers.update(self._extra_headers)
        return headers

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            try:
                payload = self._post(body)
                break
            except _Retryable as exc:
                if attempt > self.max_retries:
                    raise EmbeddingServiceError(
                        f"embedding request to {self.url} failed after {attempt} attempt(s): {exc}",
                        url=self.url,
                        status=exc.status,
                        attempts=attempt,
                    ) from None
                delay = self.backoff_base * (2 ** (attempt - 1))
                delay = min(delay, _BACKOFF_CAP) * random.uniform(0.5, 1.0)
                if exc.retry_after is not None:
                    delay = max(delay, exc.retry_after)
                time.sleep(delay)
            except EmbeddingServiceError as exc:
                exc.attempts = attempt
                raise
        return self._parse(payload, len(texts))

    def _post(self, body: bytes) -> Any:
        request = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = _error_detail(exc.read())
            except Exception:  # a broken error body must not hide the status
                detail = ""
            status = exc.code
            message = f"HTTP {status} {exc.reason}" + (f": {detail}" if detail else "")
            if status == 429 or 500 <= status < 600:
                raise _Retryable(message, status, _parse_retry_after(exc.headers.get("Retry-After"))) from None
            raise EmbeddingServiceError(
                f"embedding request to {self.url} was rejected: {message}", url=self.url, status=status
            ) from None
        except (socket.timeout, TimeoutError) as exc:
            raise _Retryable(f"timed out after {self.timeout:g}s ({exc})", None, None) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise _Retryable(f"timed out after {self.timeout:g}s", None, None) from None
            raise _Retryable(f"connection error: {reason}", None, None) from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Retryable(f"connection error: {exc}", None, None) from None
        try:
            return json.loads(raw)
        except ValueError:
            raise EmbeddingServiceError(
                f"embedding response from {self.url} is not JSON: {raw[:200]!r}", url=self.url, status=200
            ) from None

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
