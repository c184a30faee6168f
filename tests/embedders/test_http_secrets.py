"""Secrets of the HTTP clients (reliability-security review finding 17): credentials in a URL's
userinfo and keys echoed back by a server never reach a message or a repr; userinfo is refused
over plain http to another machine like a key; ``*.localhost`` is this machine only when it
resolves to loopback. Against a real HTTP server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import threading
from typing import Any

import pytest

from oramem import _http
from oramem.embedders import EmbeddingServiceError, OpenAICompatibleEmbedder
from oramem.knowledge.llm.providers import OpenAICompatibleProvider
from oramem.knowledge.errors import LLMError

SECRET = "s3cr3t-Pa55word"
KEY = "sk-embed-0123456789abcdef"


class EchoServer:
    """Answers every POST with ``status`` and a body that echoes the request's credentials."""

    def __init__(self, status: int = 401) -> None:
        self.status = status
        self.seen: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.seen.append((self.path, dict(self.headers)))
                auth = self.headers.get("Authorization", "")
                echoed = f"invalid key {auth}; api-key={self.headers.get('api-key', '')}"
                body = json.dumps({"error": {"message": echoed}}).encode() if outer.status != 200 else b"not json " + auth.encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = EchoServer()
    yield s
    s.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_userinfo_is_never_shown_in_a_repr_or_a_message_and_goes_as_basic_auth(server):
    url = f"http://user:{SECRET}@127.0.0.1:{server.port}/v1"
    embedder = OpenAICompatibleEmbedder("m", base_url=url, max_retries=0, dimension=4)
    llm = OpenAICompatibleProvider(url, "m", max_retries=0)
    for shown in (repr(embedder), embedder.base_url, embedder.url, repr(llm), llm.base_url, llm.url):
        assert SECRET not in shown and "user:" not in shown and "***@127.0.0.1" in shown
    with pytest.raises(EmbeddingServiceError) as rejected:
        embedder.embed(["x"])
    with pytest.raises(LLMError) as llm_rejected:
        llm.complete([{"role": "user", "content": "hi"}])
    basic = base64.b64encode(f"user:{SECRET}".encode()).decode()
    for error in (rejected.value, llm_rejected.value):
        text = f"{error} {error!r} {getattr(error, 'url', '')}"
        assert SECRET not in text and basic not in text and "HTTP 401" in text and "***" in text
    # the credentials still reach the server, as HTTP Basic auth, and not in the request line
    assert [(path, headers["Authorization"]) for path, headers in server.seen] == [
        ("/v1/embeddings", f"Basic {basic}"), ("/v1/chat/completions", f"Basic {basic}")]
    # a token given as the user name (https://TOKEN@host) is a secret too
    token_user = OpenAICompatibleEmbedder("m", base_url=f"http://{KEY}@127.0.0.1:{server.port}/v1", max_retries=0, dimension=4)
    with pytest.raises(EmbeddingServiceError) as token_rejected:
        token_user.embed(["x"])
    assert KEY not in f"{token_rejected.value} {token_user!r}"
    assert base64.b64encode(f"{KEY}:".encode()).decode() not in str(token_rejected.value)
    # a connection failure names the URL without them
    down = OpenAICompatibleEmbedder("m", base_url=f"http://user:{SECRET}@127.0.0.1:{closed_port()}/v1",
                                    max_retries=0, timeout=5, dimension=4)
    with pytest.raises(EmbeddingServiceError) as failed:
        down.embed(["x"])
    assert SECRET not in str(failed.value) and "connection error" in str(failed.value)


def test_userinfo_is_refused_in_clear_text_to_another_machine_like_a_key():
    for make in (lambda url, **kw: OpenAICompatibleEmbedder("m", base_url=url, **kw),
                 lambda url, **kw: OpenAICompatibleProvider(url, "m", **kw)):
        with pytest.raises(ValueError, match="in clear text over http") as refused:
            make(f"http://user:{SECRET}@10.255.255.1/v1")
        assert SECRET not in str(refused.value) and "***@10.255.255.1" in str(refused.value)
        make(f"https://user:{SECRET}@10.255.255.1/v1")  # https: fine
        make(f"http://user:{SECRET}@10.255.255.1/v1", allow_insecure_key=True)  # explicit opt-in
    with pytest.raises(ValueError, match="either in the URL") as both:
        OpenAICompatibleEmbedder("m", base_url=f"https://user:{SECRET}@h.example/v1", api_key=KEY)
    assert SECRET not in str(both.value) and KEY not in str(both.value)
    with pytest.raises(ValueError) as bad_scheme:
        OpenAICompatibleEmbedder("m", base_url=f"ftp://user:{SECRET}@h.example/v1")
    assert SECRET not in str(bad_scheme.value)


def test_a_key_echoed_in_an_error_body_is_redacted(server):
    embedder = OpenAICompatibleEmbedder("m", base_url=f"http://127.0.0.1:{server.port}/v1", api_key=KEY, max_retries=0,
                                        dimension=4, extra_headers={"api-key": "azure-key-9876543210"})
    with pytest.raises(EmbeddingServiceError) as rejected:
        embedder.embed(["x"])
    message = str(rejected.value)
    assert "HTTP 401" in message and "invalid key ***" in message
    assert KEY not in message and "azure-key-9876543210" not in message
    llm = OpenAICompatibleProvider(f"http://127.0.0.1:{server.port}/v1", "m", api_key=KEY, max_retries=0)
    with pytest.raises(LLMError) as llm_rejected:
        llm.complete([{"role": "user", "content": "hi"}])
    assert KEY not in str(llm_rejected.value) and "***" in str(llm_rejected.value)
    # a 200 that is not JSON and echoes the key: the message quoting the reply hides it too
    server.status = 200
    with pytest.raises(EmbeddingServiceError) as garbled:
        embedder.embed(["x"])
    with pytest.raises(LLMError) as llm_garbled:
        llm.complete([{"role": "user", "content": "hi"}])
    assert "is not JSON" in str(garbled.value) and "unexpected reply" in str(llm_garbled.value)
    for error in (garbled.value, llm_garbled.value):
        assert KEY not in str(error) and "***" in str(error)


def test_failure_fields_are_redacted_too(server):
    poster = _http.JSONPoster(f"http://127.0.0.1:{server.port}/v1/x", headers={"Authorization": f"Bearer {KEY}"})
    with pytest.raises(_http.HTTPFailure) as failure:
        poster.post({}, timeout=5, retry=_http.RetryPolicy(max_retries=0))
    for text in (failure.value.reason, failure.value.detail, failure.value.body, str(failure.value)):
        assert KEY not in text
    assert "invalid key ***" in failure.value.body
    poster.close()


def test_dot_localhost_is_loopback_only_when_it_resolves_to_loopback(monkeypatch):
    answers = {"evil.localhost": ["203.0.113.7"], "mixed.localhost": ["127.0.0.1", "203.0.113.7"],
               "good.localhost": ["127.0.0.1", "::1"]}

    def fake_getaddrinfo(host, *args, **kwargs):
        if host not in answers:
            raise socket.gaierror("no such name")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in answers[host]]

    monkeypatch.setattr(_http.socket, "getaddrinfo", fake_getaddrinfo)
    assert not _http.is_loopback("evil.localhost") and not _http.is_loopback("mixed.localhost")
    assert not _http.is_loopback("unknown.localhost")
    assert _http.is_loopback("good.localhost") and _http.is_loopback("GOOD.localhost.")
    assert _http.is_loopback("localhost") and _http.is_loopback("127.0.0.2") and _http.is_loopback("::1")
    assert not _http.is_loopback("localhost.example.com")
    with pytest.raises(ValueError, match="clear text"):
        OpenAICompatibleEmbedder("m", base_url="http://evil.localhost:8000/v1", api_key=KEY)
    OpenAICompatibleEmbedder("m", base_url="http://good.localhost:8000/v1", api_key=KEY)


def test_redact_url():
    assert _http.redact_url("https://u:p@h.example:8443/v1?q=1") == "https://***@h.example:8443/v1?q=1"
    assert _http.redact_url("https://token@h.example/v1") == "https://***@h.example/v1"
    assert _http.redact_url("https://h.example/v1") == "https://h.example/v1"
    assert _http.redact_url("http://u:p@w@[::1]:80/") == "http://***@[::1]:80/"
