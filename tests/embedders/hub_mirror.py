"""A loopback HTTP server with the Hugging Face Hub's file layout and headers, serving a tiny
ONNX model the test builds itself (``onnx_models.build_model_dir``); nothing is downloaded
from anywhere else.

What the Hub sends, reproduced here: ``HEAD/GET {repo}/resolve/{revision}/{file}`` answers a
regular (git) file with 200, ``ETag`` (the git blob id), ``Content-Length`` and
``X-Repo-Commit``; an LFS file (the ONNX graph) with a 302 whose ``Location`` points at the
content server, ``X-Linked-Etag`` (the object's SHA-256), ``X-Linked-Size`` and
``X-Repo-Commit``. The content server honours ``Range`` (206). Knobs make it misbehave:
``interrupt`` (send part of a body, then drop the connection), ``ignore_range``,
``lie_lfs_etag`` (announce another SHA-256 than the bytes served).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from pathlib import Path
from typing import Optional

from .onnx_models import build_model_dir

LFS = {"onnx/model.onnx"}
COMMIT = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"


def model_files(root: Path) -> dict[str, bytes]:
    """The repository files of a tiny model, as the Hub lays them out."""
    src = build_model_dir(root)
    return {
        "onnx/model.onnx": (src / "model.onnx").read_bytes(),
        "tokenizer.json": (src / "tokenizer.json").read_bytes(),
        "1_Pooling/config.json": (src / "1_Pooling" / "config.json").read_bytes(),
        "modules.json": (src / "modules.json").read_bytes(),
        "sentence_bert_config.json": json.dumps({"max_seq_length": 128, "do_lower_case": False}).encode(),
        "config.json": json.dumps({"model_type": "bert", "hidden_size": 6}).encode(),
    }


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Mirror:
    def __init__(self, repo: str, files: dict[str, bytes], revision: str = COMMIT) -> None:
        self.repo = repo
        self.files = files
        self.revision = revision
        self.requests: list[tuple[str, str, Optional[str]]] = []
        self.interrupt: dict[str, int] = {}  # file -> how many more GETs to cut off half-way
        self.ignore_range = False
        self.lie_lfs_etag: Optional[str] = None
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                mirror._answer(self, body=False)

            def do_GET(self) -> None:
                mirror._answer(self, body=True)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def gets(self, name: str) -> list[Optional[str]]:
        """The Range header of every GET of ``name``'s bytes (None: no range)."""
        return [rng for method, path, rng in self.requests if method == "GET" and path.endswith("/" + name) and
                (name not in LFS or path.startswith("/cdn/"))]

    def _answer(self, h: http.server.BaseHTTPRequestHandler, *, body: bool) -> None:
        self.requests.append((h.command, h.path, h.headers.get("Range")))
        prefix = f"/{self.repo}/resolve/{self.revision}/"
        if h.path.startswith("/cdn/"):
            name = h.path[len("/cdn/"):]
            return self._content(h, name, body)
        if not h.path.startswith(prefix) or h.path[len(prefix):] not in self.files:
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.send_header("X-Error-Code", "EntryNotFound")
            h.end_headers()
            return
        name = h.path[len(prefix):]
        data = self.files[name]
        if name in LFS:
            h.send_response(302)
            h.send_header("Location", f"{self.url}/cdn/{name}")
            h.send_header("X-Linked-Etag", f'"{self.lie_lfs_etag or sha256(data)}"')
            h.send_header("X-Linked-Size", str(len(data)))
            h.send_header("X-Repo-Commit", self.revision)
            h.send_header("ETag", '"' + hashlib.sha1(data).hexdigest() + '"')
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        extra = {"X-Repo-Commit": self.revision, "ETag": '"' + hashlib.sha1(data).hexdigest() + '"'}
        self._body(h, name, data, body, h.headers.get("Range"), extra)

    def _content(self, h: http.server.BaseHTTPRequestHandler, name: str, body: bool) -> None:
        if name not in self.files:
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        self._body(h, name, self.files[name], body, h.headers.get("Range"), {})

    def _body(self, h: http.server.BaseHTTPRequestHandler, name: str, data: bytes, body: bool, rng: Optional[str],
              extra: dict[str, str]) -> None:
        start = 0
        if rng and not self.ignore_range and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes="):-1])
        h.send_response(206 if start else 200)
        for key, value in extra.items():
            h.send_header(key, value)
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        chunk = data[start:]
        h.send_header("Content-Length", str(len(chunk)))
        h.send_header("Accept-Ranges", "bytes")
        h.end_headers()
        if not body:
            return
        if self.interrupt.get(name, 0) > 0:
            self.interrupt[name] -= 1
            h.wfile.write(chunk[: max(1, len(chunk) // 2)])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
            return
        h.wfile.write(chunk)
