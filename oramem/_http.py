"""The one HTTP client of oramem: JSON ``POST`` to OpenAI-compatible services, on httpx.

Used by :class:`~oramem.embedders.OpenAICompatibleEmbedder` (``/embeddings``) and
:class:`~oramem.knowledge.llm.providers.OpenAICompatibleProvider` (``/chat/completions``), so
both follow the same rules:

- **One retry policy** (:class:`RetryPolicy`): a request is retried on HTTP 408, 409, 425,
  429 and 5xx, on timeouts and on connection errors, with exponential backoff
  (``backoff_base * 2**n`` seconds, capped at :data:`BACKOFF_CAP`) and jitter; a
  ``Retry-After`` header (seconds or an HTTP date) is honoured, capped at
  :data:`MAX_RETRY_AFTER`. Any other status fails at once.
- **Timeouts** apply to every phase (connect, write, read, pool) of every attempt.
- **Connections are reused**: one ``httpx.Client`` per poster for sync calls, one
  ``httpx.AsyncClient`` per poster and event loop for async calls (real async I/O, so a
  cancelled task cancels its request).
- **One secret rule** (:func:`resolve_api_key`): a key comes from the explicit argument, the
  service's own environment variable, or ``OPENAI_API_KEY`` only for OpenAI's host; it is
  never sent over plain ``http://`` to a host other than this machine unless the caller opts
  in, and never logged or put in an error message. Credentials in the URL's userinfo
  (``http://user:secret@host/v1``) are a secret too: refused over plain ``http://`` to
  another machine like a key, sent as HTTP Basic auth, and shown as ``***@`` in every URL
  oramem prints (:func:`redact_url`); a key, a userinfo secret or a secret header that an
  error body echoes back is replaced by ``***`` in the message (:meth:`JSONPoster.redact`).
- **This machine** (:func:`is_loopback`) is a loopback IP address, ``localhost``, or a
  ``*.localhost`` name only when it resolves to loopback addresses and nothing else.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import os
import random
import socket
import threading
import time
import urllib.parse
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional

from .errors import Error

if TYPE_CHECKING:  # httpx is imported on first use: `oramem --help` and the SQLite commands never need it
    import httpx

__all__ = [
    "BACKOFF_CAP",
    "MAX_RETRY_AFTER",
    "OPENAI_HOST",
    "RETRY_STATUSES",
    "HTTPFailure",
    "JSONPoster",
    "RetryPolicy",
    "error_detail",
    "is_loopback",
    "redact_url",
    "resolve_api_key",
]

#: Longest wait a server's Retry-After header can impose per retry, in seconds.
MAX_RETRY_AFTER = 60.0
#: Longest backoff between two attempts (before jitter), in seconds.
BACKOFF_CAP = 8.0
#: Statuses retried besides every 5xx (timeout, conflict, too early, rate limit).
RETRY_STATUSES = frozenset({408, 409, 425, 429})
OPENAI_HOST = "api.openai.com"
USER_AGENT = "oramem"


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; delays as the module docstring says."""

    max_retries: int = 3
    backoff_base: float = 0.5

    def delay(self, retry: int, retry_after: Optional[float]) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        delay = min(self.backoff_base * (2 ** (retry - 1)), BACKOFF_CAP) * random.uniform(0.5, 1.0)
        result: float = max(delay, retry_after) if retry_after is not None else delay
        return result


def retryable_status(status: int) -> bool:
    return status in RETRY_STATUSES or 500 <= status < 600


class HTTPFailure(Error):
    """A request that failed for good.

    ``reason`` says what happened (``HTTP 500 Internal Server Error: boom``, ``timed out
    after 5s``, ``connection error: ...``); ``status`` is the HTTP status (None for network
    errors), ``detail`` the error body's message, ``body`` the start of the error body as
    text, ``attempts`` how many requests were made,
    ``retried`` whether the failure was a retryable one whose retries ran out (else the
    server rejected the request), ``timed_out`` whether the last attempt timed out.
    """

    def __init__(
        self,
        reason: str,
        *,
        status: Optional[int] = None,
        detail: str = "",
        body: str = "",
        attempts: int = 1,
        retried: bool = False,
        timed_out: bool = False,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.detail = detail
        self.body = body
        self.attempts = attempts
        self.retried = retried
        self.timed_out = timed_out


class _Attempt(Exception):
    """One failed attempt (internal): retryable or not."""

    def __init__(self, failure: HTTPFailure, retryable: bool, retry_after: Optional[float] = None) -> None:
        super().__init__(failure.reason)
        self.failure = failure
        self.retryable = retryable
        self.retry_after = retry_after


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds a ``Retry-After`` header asks for, capped at :data:`MAX_RETRY_AFTER`."""
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


def error_detail(body: bytes) -> str:
    """The message of an error body (OpenAI's ``{"error": {"message": ...}}`` or text), short."""
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


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host name, without brackets) is this machine.

    A loopback IP literal or ``localhost`` is. A ``*.localhost`` name is only when it resolves,
    here and now, to loopback addresses and nothing else: RFC 6761 asks resolvers to keep such
    names on loopback, but a resolver that sends them to DNS can answer any address. Any
    other name is not (a name's address can change after this check)."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if not host.endswith(".localhost"):
        return False
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    addresses = {info[4][0] for info in infos}
    try:
        return bool(addresses) and all(ipaddress.ip_address(str(a).split("%", 1)[0]).is_loopback for a in addresses)
    except ValueError:
        return False


def redact_url(url: str) -> str:
    """``url`` with any userinfo (``user:password@``) replaced by ``***@``: safe to print."""
    if not isinstance(url, str):
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable URL>" if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


def _userinfo(url: str) -> Optional[tuple[str, str]]:
    """The (user, password) of ``url``'s userinfo, percent-decoded; None without userinfo."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return None
    return urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or "")


def resolve_api_key(
    base_url: str,
    api_key: Optional[str],
    *,
    env: str,
    allow_insecure_key: bool = False,
    what: str = "API key",
    opt_in: str = "allow_insecure_key=True",
) -> Optional[str]:
    """The key to send to ``base_url``: ``api_key``, else ``$env``, else ``$OPENAI_API_KEY``
    only when ``base_url`` is OpenAI's own host; None when there is none.

    Raises ``ValueError`` (before anything is sent) rather than send a key in clear text
    over ``http://`` to a host other than this machine, unless ``allow_insecure_key``.
    ``what`` names the key and ``opt_in`` the way to opt in, in that message. Credentials in
    ``base_url``'s userinfo follow the same rule (they are sent as HTTP Basic auth)."""
    parts = urllib.parse.urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if _userinfo(base_url) is not None and parts.scheme == "http" and not allow_insecure_key and not is_loopback(host):
        raise ValueError(
            f"refusing to send the credentials in the URL ({redact_url(base_url)}) in clear text over http to "
            f"{host!r}: use an https:// URL, or opt in with {opt_in}"
        )
    source = "api_key"
    key = api_key
    if key is None and os.environ.get(env):
        key, source = os.environ[env], env
    if key is None and host == OPENAI_HOST and os.environ.get("OPENAI_API_KEY"):
        key, source = os.environ["OPENAI_API_KEY"], "OPENAI_API_KEY"
    if key and parts.scheme == "http" and not is_loopback(host) and not allow_insecure_key:
        raise ValueError(
            f"refusing to send the {what} ({source}) in clear text over http to {host!r}: "
            f"use an https:// URL, or opt in with {opt_in}"
        )
    return key or None


_SECRET_HEADER_WORDS = ("auth", "key", "token", "secret", "cookie", "password")


class JSONPoster:
    """``POST`` JSON bodies to one ``url`` with the module's retry policy.

    ``headers`` are sent with every request (an ``Authorization`` header among them is
    never logged or shown: error messages name only the URL and the status). Userinfo in
    ``url`` is taken out of it and sent as HTTP Basic auth: :attr:`url` is the URL without it,
    safe to print. The secrets (userinfo, the values of headers whose name mentions auth, key,
    token, secret, cookie or password) are replaced by ``***`` in every failure's text
    (:meth:`redact`), so a server that echoes them in an error body does not get them printed.
    Calls return the successful :class:`httpx.Response`; failures raise :class:`HTTPFailure`."""

    def __init__(self, url: str, *, headers: Mapping[str, str]) -> None:
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": USER_AGENT}
        self._headers.update(headers)
        secrets: set[str] = set()
        for name, value in headers.items():
            if any(word in name.lower() for word in _SECRET_HEADER_WORDS) and value:
                secrets.add(value)
                scheme, _, credential = value.partition(" ")
                if credential and scheme.lower() in ("bearer", "basic", "token"):
                    secrets.add(credential.strip())
        self._basic: Optional[tuple[str, str]] = _userinfo(url)
        if self._basic is not None:
            if any(name.lower() == "authorization" for name in headers):
                raise ValueError(
                    f"{redact_url(url)}: give the credentials either in the URL (user:password@) or as an API key "
                    "/ Authorization header, not both (the URL's would replace the header)"
                )
            import base64

            user, password = self._basic
            secrets.update({password, base64.b64encode(f"{user}:{password}".encode()).decode()})
            if not password or len(user) >= 8:  # a token given as the user name; not a short "admin"
                secrets.add(user)
            parts = urllib.parse.urlsplit(url)
            url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        # longest first, so a secret that contains another is replaced whole
        self._secrets = sorted((x for x in secrets if len(x) >= 4), key=len, reverse=True)
        self.url = url
        self._lock = threading.Lock()
        self._client: Optional[httpx.Client] = None
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:  # never the headers: they may hold a key
        return f"JSONPoster({self.url!r})"

    def redact(self, text: str) -> str:
        """``text`` with this poster's secrets (see the class doc) replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _auth(self) -> Any:
        if self._basic is None:
            return None
        import httpx

        return httpx.BasicAuth(*self._basic)

    # -- clients ---------------------------------------------------------------------------
    def _sync_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(headers=self._headers, auth=self._auth(), follow_redirects=False)
            return self._client

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._async_clients.get(loop)
            if client is None:
                import httpx

                client = httpx.AsyncClient(headers=self._headers, auth=self._auth(), follow_redirects=False)
                self._async_clients[loop] = client
            return client

    def close(self) -> None:
        """Close the sync connection pool (async pools close with their event loop's objects)."""
        with self._lock:
            client, self._client = self._client, None
            self._async_clients.clear()
        if client is not None:
            client.close()

    # -- requests --------------------------------------------------------------------------
    def post(self, body: Any, *, timeout: float, retry: RetryPolicy) -> httpx.Response:
        data = json.dumps(body).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._check(self._send(data, timeout), attempt)
            except _Attempt as exc:
                if not exc.retryable or attempt > retry.max_retries:
                    raise self._final(exc, attempt) from None
                time.sleep(retry.delay(attempt, exc.retry_after))

    async def post_async(self, body: Any, *, timeout: float, retry: RetryPolicy) -> httpx.Response:
        data = json.dumps(body).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._check(await self._send_async(data, timeout), attempt)
            except _Attempt as exc:
                if not exc.retryable or attempt > retry.max_retries:
                    raise self._final(exc, attempt) from None
                await asyncio.sleep(retry.delay(attempt, exc.retry_after))

    def _send(self, data: bytes, timeout: float) -> httpx.Response:
        import httpx

        try:
            return self._sync_client().post(self.url, content=data, timeout=httpx.Timeout(timeout))
        except httpx.TransportError as exc:
            raise _network_failure(exc, timeout, self.redact) from None

    async def _send_async(self, data: bytes, timeout: float) -> httpx.Response:
        import httpx

        try:
            return await self._async_client().post(self.url, content=data, timeout=httpx.Timeout(timeout))
        except httpx.TransportError as exc:
            raise _network_failure(exc, timeout, self.redact) from None

    def _check(self, response: httpx.Response, attempt: int) -> httpx.Response:
        status = response.status_code
        if 200 <= status < 300:
            return response
        # the key is replaced in the whole body before it is cut, so a cut cannot leave half of it
        text = self.redact(response.content.decode("utf-8", "replace"))
        detail = error_detail(text.encode("utf-8"))
        reason = self.redact(f"HTTP {status} {response.reason_phrase}".rstrip()) + (f": {detail}" if detail else "")
        body = text[:1000]
        failure = HTTPFailure(reason, status=status, detail=detail, body=body, attempts=attempt)
        if retryable_status(status):
            raise _Attempt(failure, True, parse_retry_after(response.headers.get("Retry-After")))
        raise _Attempt(failure, False)

    @staticmethod
    def _final(exc: _Attempt, attempt: int) -> HTTPFailure:
        failure = exc.failure
        failure.attempts = attempt
        failure.retried = exc.retryable
        return failure


def _network_failure(exc: httpx.TransportError, timeout: float, redact: Any) -> _Attempt:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return _Attempt(HTTPFailure(f"timed out after {timeout:g}s", timed_out=True), True)
    return _Attempt(HTTPFailure(redact(f"connection error: {exc}")), True)
