"""A loopback OpenAI-compatible /chat/completions server driven by a ScriptedLLM, with
scripted HTTP failures, for provider and CLI tests."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LLMServer:
    def __init__(self, scripted: Any) -> None:
        self.scripted = scripted
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.failures: list[tuple[int, str]] = []  # (status, body) served before real replies
        self.reject_response_format = False
        self.delay = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # silence
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if server.delay:
                    import time

                    time.sleep(server.delay)
                if server.failures:
                    status, text = server.failures.pop(0)
                    return self._send(status, text.encode())
                if server.reject_response_format and "response_format" in body:
                    return self._send(400, b'{"error": "unsupported parameter: response_format"}')
                result = asyncio.run(server.scripted.complete_async(body["messages"]))
                payload = {
                    "choices": [{"message": {"role": "assistant", "content": result.text}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                }
                self._send(200, json.dumps(payload).encode())

            def _send(self, status, data):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout tests): no one to answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
