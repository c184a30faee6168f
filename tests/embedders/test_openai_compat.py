"""OpenAICompatibleEmbedder against a real HTTP server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Any, Callable

import numpy as np
import pytest

from oramem.embedders import EmbeddingServiceError, OpenAICompatibleEmbedder

DIM = 4


def vector_for(text: str) -> list[float]:
    """A deterministic vector the test can predict for each input text."""
    n = float(len(text))
    return [n, n + 0.5, 1.0, -n]


class FakeServer:
    """Answers POST /v1/embeddings; ``script`` is a list of per-request behaviours
    (callables returning (status, headers, body)); after it runs out, requests succeed."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: list[Callable[[dict], tuple[int, dict, bytes]]] = []
        self.dim = DIM
        self.reverse = False
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                outer.requests.append(payload)
                outer.headers.append(dict(self.headers))
                if self.path != "/v1/embeddings":
                    status, headers, body = 404, {}, b'{"error": {"message": "no such route"}}'
                elif outer.script:
                    status, headers, body = outer.script.pop(0)(payload)
                else:
                    status, headers, body = 200, {}, outer.success(payload)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def success(self, payload: dict) -> bytes:
        data = [
            {"object": "embedding", "index": i, "embedding": vector_for(t)[: self.dim] + [0.0] * (self.dim - DIM)}
            for i, t in enumerate(payload["input"])
        ]
        if self.reverse:
            data.reverse()
        return json.dumps({"object": "list", "data": data, "model": payload["model"]}).encode()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def make(server: FakeServer, **kw: Any) -> OpenAICompatibleEmbedder:
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("timeout", 5.0)
    return OpenAICompatibleEmbedder("test-model", base_url=server.base_url, **kw)


def expected(texts: list[str]) -> np.ndarray:
    return np.asarray([vector_for(t) for t in texts], dtype=np.float32)


def test_success_sends_model_input_and_auth(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    e = make(server, api_key="sk-test", extra_headers={"X-Tenant": "acme"})
    out = e.embed(["a", "bbb"])
    assert out.dtype == np.float32 and out.shape == (2, DIM)
    np.testing.assert_array_equal(out, expected(["a", "bbb"]))
    assert server.requests == [{"model": "test-model", "input": ["a", "bbb"]}]
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    assert server.headers[0]["X-Tenant"] == "acme"


def test_api_key_falls_back_to_env_and_is_optional(server, monkeypatch):
    monkeypatch.delenv("ORAMEM_EMBED_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    make(server).embed(["x"])  # OpenAI's key goes to OpenAI's host only
    assert "Authorization" not in server.headers[-1]
    monkeypatch.setenv("ORAMEM_EMBED_API_KEY", "sk-env")
    make(server).embed(["x"])
    assert server.headers[-1]["Authorization"] == "Bearer sk-env"
    monkeypatch.delenv("ORAMEM_EMBED_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY")
    make(server).embed(["x"])
    assert "Authorization" not in server.headers[-1]


def test_key_scoping_and_clear_text_refusal(monkeypatch):
    from oramem.embedders.openai_compat import resolve_api_key

    monkeypatch.delenv("ORAMEM_EMBED_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert resolve_api_key("https://api.openai.com/v1", None) == "sk-openai"
    assert resolve_api_key("https://example.com/v1", None) is None
    assert resolve_api_key("http://10.0.0.5:8000/v1", None) is None  # no key, nothing to protect
    for loopback in ("http://127.0.0.1:9/v1", "http://localhost:9/v1", "http://[::1]:9/v1"):
        assert resolve_api_key(loopback, "k") == "k"
    with pytest.raises(ValueError, match="refusing to send the embedding API key .api_key. in clear text over http to '10.0.0.5'"):
        resolve_api_key("http://10.0.0.5:8000/v1", "k")
    monkeypatch.setenv("ORAMEM_EMBED_API_KEY", "sk-mine")
    with pytest.raises(ValueError, match="ORAMEM_EMBED_API_KEY.*--embed-allow-http-key"):
        OpenAICompatibleEmbedder("m", base_url="http://embed.example.com/v1")
    assert resolve_api_key("http://embed.example.com/v1", None, allow_insecure_key=True) == "sk-mine"
    assert resolve_api_key("https://embed.example.com/v1", None) == "sk-mine"


def test_results_are_reordered_by_index(server):
    server.reverse = True
    texts = ["one", "three", "fiftyfive"]
    np.testing.assert_array_equal(make(server).embed(texts), expected(texts))


def test_batching_splits_requests_and_keeps_order(server):
    texts = ["t" * (i + 1) for i in range(7)]
    out = make(server, batch_size=3).embed(texts)
    assert [len(r["input"]) for r in server.requests] == [3, 3, 1]
    np.testing.assert_array_equal(out, expected(texts))


def test_dimension_probe_is_lazy_and_once(server):
    e = make(server)
    assert server.requests == []
    assert e.embedding_dimension == DIM
    assert e.embedding_dimension == DIM
    assert len(server.requests) == 1
    # an empty call needs no request once the dimension is known
    assert e.embed([]).shape == (0, DIM)
    assert len(server.requests) == 1


def test_dimension_given_skips_probe(server):
    e = make(server, dimension=DIM)
    assert e.embedding_dimension == DIM
    assert server.requests == []


def test_dimension_mismatch_is_a_value_error(server):
    e = make(server, dimension=8)
    with pytest.raises(ValueError, match=r"returned 4-dimensional vectors, expected dimension=8"):
        e.embed(["x"])


def test_dimension_change_between_calls_is_detected(server):
    e = make(server)
    e.embed(["x"])
    server.dim = DIM + 2
    with pytest.raises(ValueError, match="expected dimension=4"):
        e.embed(["y"])


def test_retry_then_success_on_429_and_5xx(server):
    server.script = [
        lambda p: (503, {}, b'{"error": {"message": "overloaded"}}'),
        lambda p: (429, {}, b'{"error": {"message": "slow down"}}'),
    ]
    out = make(server, max_retries=3).embed(["ok"])
    np.testing.assert_array_equal(out, expected(["ok"]))
    assert len(server.requests) == 3


def test_retry_after_is_honoured(server):
    server.script = [lambda p: (429, {"Retry-After": "0.4"}, b"{}")]
    start = time.monotonic()
    make(server, backoff_base=0.0).embed(["ok"])
    assert time.monotonic() - start >= 0.4
    assert len(server.requests) == 2


def test_retries_exhausted_names_endpoint_and_status(server):
    server.script = [lambda p: (500, {}, b'{"error": {"message": "boom"}}')] * 3
    with pytest.raises(EmbeddingServiceError) as info:
        make(server, max_retries=2).embed(["x"])
    err = info.value
    assert err.status == 500 and err.attempts == 3
    assert server.base_url + "/embeddings" in str(err) and "HTTP 500" in str(err) and "boom" in str(err)
    assert len(server.requests) == 3


def test_400_is_not_retried(server):
    server.script = [lambda p: (400, {}, b'{"error": {"message": "input too long"}}')]
    with pytest.raises(EmbeddingServiceError, match=r"rejected: HTTP 400.*input too long") as info:
        make(server, max_retries=3).embed(["x"])
    assert info.value.status == 400
    assert len(server.requests) == 1


def test_wrong_path_404_names_endpoint(server):
    e = OpenAICompatibleEmbedder("m", base_url=server.base_url.replace("/v1", "/v2"), backoff_base=0.01)
    with pytest.raises(EmbeddingServiceError, match=r"/v2/embeddings.*HTTP 404"):
        e.embed(["x"])
    assert len(server.requests) == 1


def test_timeout_is_retried_then_reported(server):
    def slow(payload: dict) -> tuple[int, dict, bytes]:
        time.sleep(0.6)
        return 200, {}, server.success(payload)

    server.script = [slow, slow]
    e = make(server, timeout=0.2, max_retries=1)
    with pytest.raises(EmbeddingServiceError, match="timed out after 0.2s") as info:
        e.embed(["x"])
    assert info.value.attempts == 2


def test_timeout_then_success(server):
    def slow(payload: dict) -> tuple[int, dict, bytes]:
        time.sleep(0.6)
        return 200, {}, server.success(payload)

    server.script = [slow]
    np.testing.assert_array_equal(make(server, timeout=0.2, max_retries=2).embed(["abc"]), expected(["abc"]))


def test_connection_refused_is_retried_and_reported():
    free = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    port = free.server_address[1]
    free.server_close()  # nothing listens on this port now
    e = OpenAICompatibleEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.01)
    with pytest.raises(EmbeddingServiceError, match="connection error") as info:
        e.embed(["x"])
    assert info.value.attempts == 2 and info.value.status is None


@pytest.mark.parametrize(
    "body, message",
    [
        (b"not json", "not JSON"),
        (b'{"nope": 1}', "no 'data' list"),
        (b'{"data": []}', "0 embeddings for 1 inputs"),
        (b'{"data": [{"index": 3, "embedding": [1.0]}]}', "out-of-range index 3"),
        (b'{"data": [{"index": 0, "embedding": ["a"]}]}', "non-numeric"),
    ],
)
def test_malformed_responses_are_clear_errors(server, body, message):
    server.script = [lambda p: (200, {}, body)]
    with pytest.raises(EmbeddingServiceError, match=message):
        make(server).embed(["x"])
    assert len(server.requests) == 1


async def test_embed_async(server):
    out = await make(server).embed_async(["qq"], is_query=True)
    np.testing.assert_array_equal(out, expected(["qq"]))
    assert server.requests == [{"model": "test-model", "input": ["qq"]}]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "localhost:8000/v1"},
        {"base_url": "http://x/v1", "dimension": 0},
        {"base_url": "http://x/v1", "timeout": 0},
        {"base_url": "http://x/v1", "max_retries": -1},
        {"base_url": "http://x/v1", "batch_size": 0},
    ],
)
def test_bad_construction(kwargs):
    with pytest.raises(ValueError):
        OpenAICompatibleEmbedder("m", **kwargs)


def test_single_string_is_rejected(server):
    with pytest.raises(TypeError, match="single string"):
        make(server).embed("x")
    assert server.requests == []


def test_one_retry_policy_with_the_llm_provider(server):
    """The embedder and the LLM provider share oramem/_http.py: 408 and 409 are retried here
    too, and the backoff is capped (a huge backoff_base does not wait minutes)."""
    from oramem import _http

    server.script = [lambda p: (408, {}, b"{}"), lambda p: (409, {}, b"{}")]
    make(server, max_retries=2).embed(["ok"])
    assert len(server.requests) == 3
    policy = _http.RetryPolicy(max_retries=5, backoff_base=1000.0)
    assert all(_http.BACKOFF_CAP / 2 <= policy.delay(n, None) <= _http.BACKOFF_CAP for n in range(1, 6))
    assert policy.delay(1, 30.0) == 30.0  # Retry-After wins when longer
    assert _http.parse_retry_after("9999") == _http.MAX_RETRY_AFTER


def test_close_releases_connections_and_the_embedder_reconnects(server):
    e = make(server)
    e.embed(["a"])
    e.close()
    np.testing.assert_array_equal(e.embed(["bb"]), expected(["bb"]))
