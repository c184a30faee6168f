"""LLM providers (KC-2.1, KC-2.2): the ``LLMProvider`` protocol, ``BaseLLMProvider`` (sync
``complete()`` derived from the async method) and ``OpenAICompatibleProvider`` (any
``/chat/completions`` endpoint: OpenAI, vLLM, llama.cpp server, Ollama ``/v1``, LM Studio),
on the HTTP client and retry policy the embedders use (:mod:`oramem._http`)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Protocol, Sequence, runtime_checkable

import httpx

from ..._http import HTTPFailure, JSONPoster, RetryPolicy, redact_url, resolve_api_key
from ..._sync import run_sync
from ...embedders import OpenAICompatibleEmbedder
from ..errors import LLMError, LLMTimeout
from ..types import TokenUsage

__all__ = ["LLMProvider", "BaseLLMProvider", "LLMResult", "TokenUsage", "OpenAICompatibleProvider", "OpenAICompatibleEmbedder"]

log = logging.getLogger("oramem.knowledge")

#: seconds of a request whose call passes no timeout, without a constructor ``timeout``
DEFAULT_TIMEOUT = 30.0

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


class OpenAICompatibleProvider(BaseLLMProvider):
    """``POST {base_url}/chat/completions`` with the retry policy of :mod:`oramem._http`
    (HTTP 408/409/425/429/5xx, connection errors and timeouts; exponential backoff from
    ``backoff_base`` seconds with jitter, ``Retry-After`` honoured). A 400 naming
    ``response_format`` is retried once with the JSON instruction moved into the system
    prompt, and that mode is remembered.

    The API key: ``api_key``, else ``$ORAMEM_LLM_API_KEY``, else ``$OPENAI_API_KEY`` only when
    ``base_url`` is OpenAI's own host (``api.openai.com``). A key is never sent over plain
    ``http://`` to a host other than this machine unless ``allow_insecure_key=True`` (the
    constructor refuses instead), and never logged.

    ``timeout`` (seconds), when given, bounds each HTTP request: a call's own ``timeout=``
    (the knowledge layer passes its step's, ``extraction_timeout_sec`` and the others of
    KC-7.2) is capped by it. Without it a call's own timeout applies, and 30 s for a call
    that passes none (trial32: the layer always passes one, so a constructor timeout that
    only filled in for calls without one bounded nothing)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        max_retries: int = 2,
        headers: Optional[Mapping[str, str]] = None,
        allow_insecure_key: bool = False,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {redact_url(base_url)!r}")
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty string")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout > 0 or timeout == float("inf")):
            raise ValueError(f"timeout must be a positive number of seconds (or None), got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        key = resolve_api_key(
            self.base_url,
            api_key,
            env="ORAMEM_LLM_API_KEY",
            allow_insecure_key=allow_insecure_key,
            what="LLM API key",
            opt_in="allow_insecure_key=True (CLI: --llm-allow-http-key)",
        )
        #: the bound of every request (None: each call's own, 30 s for a call without one)
        self.timeout_cap = None if timeout is None else float(timeout)
        self.timeout = self.timeout_cap if self.timeout_cap is not None else DEFAULT_TIMEOUT
        self.max_retries = max_retries
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        self._poster = JSONPoster(self.url, headers={**auth, **(headers or {})})
        # printable forms: userinfo credentials are sent as Basic auth, never shown (oramem._http)
        self.base_url, self.url = redact_url(self.base_url), redact_url(self.url)
        self._json_in_prompt = False
        self._mode_lock = threading.Lock()
        self.backoff_base = 0.5

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(base_url={self.base_url!r}, model={self.model!r})"

    async def complete_async(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        response_format: Optional[Mapping[str, Any]] = None,
        max_tokens: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> LLMResult:
        msgs = list(messages)
        format_retry_done = False
        while True:
            body = self._body(msgs, temperature, response_format, max_tokens)
            try:
                response = await self._poster.post_async(body, timeout=self._timeout(timeout), retry=self._retry())
            except HTTPFailure as exc:
                if self._format_fallback(exc, response_format, format_retry_done):
                    format_retry_done = True
                    continue
                raise self._llm_error(exc) from None
            return self._result(response)

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        response_format: Optional[Mapping[str, Any]] = None,
        max_tokens: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> LLMResult:
        msgs = list(messages)
        format_retry_done = False
        while True:
            body = self._body(msgs, temperature, response_format, max_tokens)
            try:
                response = self._poster.post(body, timeout=self._timeout(timeout), retry=self._retry())
            except HTTPFailure as exc:
                if self._format_fallback(exc, response_format, format_retry_done):
                    format_retry_done = True
                    continue
                raise self._llm_error(exc) from None
            return self._result(response)

    def close(self) -> None:
        """Release the pooled HTTP connections (the provider stays usable: it reconnects)."""
        self._poster.close()

    # -- internals -----------------------------------------------------------------------
    def _timeout(self, timeout: Optional[float]) -> float:
        if timeout is None:
            return self.timeout
        if self.timeout_cap is None:
            return float(timeout)
        return min(float(timeout), self.timeout_cap)

    def _retry(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries, backoff_base=self.backoff_base)

    def _body(
        self, messages: list[Mapping[str, str]], temperature: float, response_format: Any, max_tokens: Optional[int]
    ) -> dict[str, Any]:
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

    def _format_fallback(self, exc: HTTPFailure, response_format: Any, done: bool) -> bool:
        """Whether to retry once with the JSON instruction in the prompt (a 400 that names
        ``response_format``); raises when the server rejects it again."""
        if exc.status != 400 or "response_format" not in exc.body:
            return False
        if done or response_format is None:
            raise LLMError(f"{self.url}: the server rejected response_format") from None
        with self._mode_lock:
            self._json_in_prompt = True
        return True

    def _llm_error(self, exc: HTTPFailure) -> LLMError:
        if exc.retried:
            if exc.timed_out:
                return LLMTimeout(f"{self.url}: timed out after {exc.attempts} attempt(s)")
            return LLMError(f"{self.url}: {exc.reason} after {exc.attempts} attempt(s)")
        return LLMError(f"{self.url}: {exc.reason}")

    def _result(self, response: httpx.Response) -> LLMResult:
        raw = response.content
        try:
            payload = response.json()
            text = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"{self.url}: unexpected reply: {self._poster.redact(raw[:200].decode('utf-8', 'replace'))}",
                           plain=f"{self.url}: unexpected reply ({len(raw)} bytes, not a chat completion; not quoted "
                                 "here: it may repeat the conversation it was given)") from None
        if not isinstance(text, str):
            raise LLMError(f"{self.url}: reply content is not text")
        usage = None
        u = payload.get("usage") if isinstance(payload, dict) else None
        if isinstance(u, dict):
            pin = int(u.get("prompt_tokens") or 0)
            pout = int(u.get("completion_tokens") or 0)
            usage = TokenUsage(pin, pout, int(u.get("total_tokens") or (pin + pout)))
        return LLMResult(text, usage)
