"""LLM providers (KC-2.1, KC-2.2): the ``LLMProvider`` protocol, ``BaseLLMProvider`` (sync
``complete()`` derived from the async method) and ``OpenAICompatibleProvider`` (standard
library HTTP against any ``/chat/completions`` endpoint: OpenAI, vLLM, llama.cpp server,
Ollama ``/v1``, LM Studio)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Protocol, Sequence, runtime_checkable

from .._sync import run_sync
from ..embedders import OpenAICompatibleEmbedder
from .errors import LLMError, LLMTimeout
from .types import TokenUsage

__all__ = ["LLMProvider", "BaseLLMProvider", "LLMResult", "TokenUsage", "OpenAICompatibleProvider", "OpenAICompatibleEmbedder"]

log = logging.getLogger("oramem.knowledge")

_RETRY_STATUS = frozenset({408, 409, 425, 429})
JSON_INSTRUCTION = "Reply with one JSON object only, no prose and no markdown."


@dataclass(frozen=True)
class LLMResult:
    text: str
    usage: Optional[TokenUsage] = None


@runtime_checkable
class LLMProvider(Protocol):
    async def complete_async(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        response_format: Optional[Mapping[str, Any]] = None,
        max_tokens: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> LLMResult: ...


class BaseLLMProvider:
    """Subclasses implement ``complete_async``; ``complete`` is its sync twin."""

    async def complete_async(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        response_format: Optional[Mapping[str, Any]] = None,
        max_tokens: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> LLMResult:
        raise NotImplementedError(f"{type(self).__name__} must implement complete_async")

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        response_format: Optional[Mapping[str, Any]] = None,
        max_tokens: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> LLMResult:
        return run_sync(
            self.complete_async(
                messages, temperature=temperature, response_format=response_format, max_tokens=max_tokens, timeout=timeout
            ),
            name="complete",
        )


class NoLLM(BaseLLMProvider):
    """The provider of a ``KnowledgeMemory(llm=None)``: every call fails with ``LLMError``, so a
    step that would need a model degrades as it does when a model fails (KC-7), and the steps that
    are LLM-only (extraction, resolution by LLM, emotion, reranker) are switched off up front."""

    async def complete_async(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        response_format: Optional[Mapping[str, Any]] = None,
        max_tokens: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> LLMResult:
        raise LLMError("no LLM configured (KnowledgeMemory(llm=None)); pass an LLM provider to use this step")


class _Retry(Exception):
    def __init__(self, message: str, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class OpenAICompatibleProvider(BaseLLMProvider):
    """``POST {base_url}/chat/completions`` with retries (``min(0.5·2^n, 8)`` s) on HTTP
    408/409/425/429/5xx, connection errors and timeouts. A 400 naming ``response_format``
    is retried once with the JSON instruction moved into the system prompt, and that mode
    is remembered. The API key (``api_key``, else ``ORAMEM_LLM_API_KEY``, else
    ``OPENAI_API_KEY``) is never logged."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty string")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self._api_key = api_key or os.environ.get("ORAMEM_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._headers = dict(headers or {})
        self._json_in_prompt = False
        self._mode_lock = threading.Lock()
        self.backoff_base = 0.5

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(base_url={self.base_url!r}, model={self.model!r})"

    async def complete_async(self, messages, *, temperature=0.0, response_format=None, max_tokens=None, timeout=None):
        return await asyncio.to_thread(
            self._complete, list(messages), temperature, response_format, max_tokens, timeout
        )

    def complete(self, messages, *, temperature=0.0, response_format=None, max_tokens=None, timeout=None):
        return self._complete(list(messages), temperature, response_format, max_tokens, timeout)

    # -- internals -----------------------------------------------------------------------
    def _body(self, messages: list, temperature: float, response_format: Any, max_tokens: Optional[int]) -> dict:
        msgs = [dict(m) for m in messages]
        body: dict[str, Any] = {"model": self.model, "messages": msgs, "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if response_format is not None:
            if self._json_in_prompt:
                if msgs and msgs[0].get("role") == "system":
                    msgs[0]["content"] = f"{msgs[0]['content']}\n{JSON_INSTRUCTION}"
                else:
                    msgs.insert(0, {"role": "system", "content": JSON_INSTRUCTION})
            else:
                body["response_format"] = dict(response_format)
        return body

    def _complete(self, messages, temperature, response_format, max_tokens, timeout) -> LLMResult:
        deadline_timeout = float(timeout) if timeout is not None else self.timeout
        attempt = 0
        format_retry_done = False
        while True:
            body = self._body(messages, temperature, response_format, max_tokens)
            try:
                return self._post(body, deadline_timeout)
            except _FormatRejected:
                if format_retry_done or response_format is None:
                    raise LLMError(f"{self.url}: the server rejected response_format") from None
                with self._mode_lock:
                    self._json_in_prompt = True
                format_retry_done = True
                continue
            except _Retry as exc:
                if attempt >= self.max_retries:
                    if exc.timeout:
                        raise LLMTimeout(f"{self.url}: timed out after {attempt + 1} attempt(s)") from None
                    raise LLMError(f"{self.url}: {exc} after {attempt + 1} attempt(s)") from None
                time.sleep(min(self.backoff_base * 2**attempt, 8.0))
                attempt += 1

    def _post(self, body: dict, timeout: float) -> LLMResult:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self._headers}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:200].decode("utf-8", "replace")
            status = exc.code
            if status == 400 and "response_format" in detail:
                raise _FormatRejected() from None
            if status in _RETRY_STATUS or status >= 500:
                raise _Retry(f"HTTP {status}: {detail}") from None
            raise LLMError(f"{self.url}: HTTP {status}: {detail}") from None
        except (socket.timeout, TimeoutError) as exc:
            raise _Retry(f"timeout ({exc})", timeout=True) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (socket.timeout, TimeoutError)):
                raise _Retry("timeout", timeout=True) from None
            raise _Retry(f"connection error: {exc.reason}") from None
        except (ConnectionError, OSError) as exc:
            raise _Retry(f"connection error: {exc}") from None
        try:
            payload = json.loads(raw)
            text = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"{self.url}: unexpected reply: {raw[:200].decode('utf-8', 'replace')}") from None
        if not isinstance(text, str):
            raise LLMError(f"{self.url}: reply content is not text")
        usage = None
        u = payload.get("usage") if isinstance(payload, dict) else None
        if isinstance(u, dict):
            pin = int(u.get("prompt_tokens") or 0)
            pout = int(u.get("completion_tokens") or 0)
            usage = TokenUsage(pin, pout, int(u.get("total_tokens") or (pin + pout)))
        return LLMResult(text, usage)


class _FormatRejected(Exception):
    pass
