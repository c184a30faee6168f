"""The CLI with --embed-url/--embed-model against a loopback OpenAI-compatible server."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
from click.testing import CliRunner

from oramem.cli import cli
from oramem.embedders import HashEmbedder

_LEXICAL = HashEmbedder(8, seed=3)


@pytest.fixture
def server():
    calls: list[dict] = []
    fail = {"status": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(payload)
            if fail["status"]:
                status, body = fail["status"], json.dumps({"error": {"message": "bad model"}}).encode()
            else:
                vectors = _LEXICAL.embed(payload["input"]).tolist()
                status = 200
                body = json.dumps({"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", calls, fail
    httpd.shutdown()
    httpd.server_close()


def test_add_and_search_use_the_remote_embedder(server, tmp_path, monkeypatch):
    url, calls, _ = server
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = ["--db", str(tmp_path / "r.db"), "--embed-url", url, "--embed-model", "tiny", "--json"]
    runner = CliRunner()
    res = runner.invoke(cli, base + ["add", "--id", "a", "alpha beta"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    runner.invoke(cli, base + ["add", "--id", "g", "gamma delta"], catch_exceptions=False)
    res = runner.invoke(cli, base + ["search", "alpha beta", "--strategy", "vector", "-k", "1"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert [h["record"]["id"] for h in json.loads(res.stdout)] == ["a"]
    assert calls and all(c["model"] == "tiny" for c in calls)
    assert ["alpha beta"] in [c["input"] for c in calls]


def test_service_errors_are_one_line_exit_1(server, tmp_path):
    url, _, fail = server
    fail["status"] = 400
    res = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "r.db"), "--embed-url", url, "--embed-model", "tiny", "add", "x"]
    )
    assert res.exit_code == 1
    assert res.stderr.startswith("Error: embedding request to") and "HTTP 400" in res.stderr and "bad model" in res.stderr
    assert "Traceback" not in res.output


def test_embed_url_needs_a_model(tmp_path):
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "r.db"), "--embed-url", "http://127.0.0.1:9/v1", "add", "x"])
    assert res.exit_code == 2 and "--embed-url and --embed-model go together" in res.stderr
