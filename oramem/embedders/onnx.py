"""Local sentence embeddings on ONNX Runtime (a dependency of oramem, no torch).

:class:`ONNXEmbedder` runs a sentence-embedding model in process, with no service:

- **A model directory** laid out as sentence-transformers / Hugging Face repositories ship
  it: ``model.onnx`` (or ``onnx/model.onnx``), ``tokenizer.json``, and optionally
  ``1_Pooling/config.json`` (pooling mode), ``modules.json`` (a ``Normalize`` module means
  unit vectors) and ``sentence_bert_config.json`` (``max_seq_length``).
- **A model id** (``"sentence-transformers/all-MiniLM-L6-v2"``): looked up in the cache
  directory (``cache_dir``, else ``$ORAMEM_MODEL_CACHE``, else ``$XDG_CACHE_HOME/oramem/models``, else
  ``~/.cache/oramem/models``)
  and, when missing, downloaded there once from the Hugging Face Hub layout
  (:mod:`oramem.embedders.hub`: ``$HF_ENDPOINT``, pinned revision and digests for the
  models oramem knows, atomic, resumable). Offline, the error says where to put the files.
- **An "augmented" ONNX file** (tokenizer, pooling and normalisation inside the graph, a
  string input), as Oracle's ``DBMS_VECTOR.LOAD_ONNX_MODEL`` takes it: detected from the
  graph's input type and run with the custom operators of ``onnxruntime-extensions`` when
  that package is installed, so a store gets the same vectors as the database computes.

Pooling is the model's (mean, CLS or max token pooling from ``1_Pooling/config.json``;
mean when there is no such file; none when the graph already outputs one vector per
text). Normalisation is the model's too (the ``Normalize`` module), unless ``normalize``
is given.

Speed (issue 26 item 3; ``bench/semantic.py``): one session per embedder, built once. A call's
texts are tokenized together, sorted by token count and embedded ``batch_size`` at a time,
each batch padded only to its own longest text (vectors come back in the caller's order).
``intra_op_threads`` sets ONNX Runtime's intra-op pool: default the machine's physical cores
(``$ORAMEM_ONNX_THREADS`` overrides; ``0`` means ONNX Runtime's own choice);
``inter_op_threads`` defaults to 1 (the graph runs sequentially). Query texts
(``is_query=True``) are cached: the last ``query_cache_size`` (default 256; 0 turns the cache
off) query texts map to their vector, per embedder instance, so a cache is never shared between
models; a hit returns a copy.
``query_prefix`` / ``passage_prefix`` are prepended for models trained with
instructions (e5: ``"query: "`` / ``"passage: "``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..errors import Error
from .base import IEmbedder, InputWindow, texts_argument

__all__ = ["ONNXEmbedder", "ModelNotAvailable", "default_cache_dir", "physical_cores", "POOLING_MODES"]

#: Pooling modes understood (sentence-transformers' names without the ``pooling_mode_`` prefix).
POOLING_MODES = ("mean", "cls", "max")
_DEFAULT_MAX_LENGTH = 512
_MODEL_FILES = ("model.onnx", "onnx/model.onnx")
#: Files besides the graph whose content changes the vectors (recorded in the identity).
_CONFIG_FILES = ("tokenizer.json", "1_Pooling/config.json", "modules.json", "sentence_bert_config.json")
_INSTALL_HINT = "pip install onnxruntime tokenizers (dependencies of oramem)"


class ModelNotAvailable(Error, RuntimeError):
    """The model could not be found or fetched; the message says what to do."""


def default_cache_dir() -> Path:
    """Where model ids are cached: ``$ORAMEM_MODEL_CACHE``, else ``$XDG_CACHE_HOME/oramem/models``,
    else ``~/.cache/oramem/models``."""
    env = os.environ.get("ORAMEM_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "oramem" / "models"


def physical_cores() -> int:
    """Physical cores this process may run on (what ``intra_op_threads`` defaults to)."""
    logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        import psutil  # type: ignore[import-untyped]

        physical: Optional[int] = psutil.cpu_count(logical=False)
    except Exception:  # psutil missing or unable to tell
        physical = None
    total = os.cpu_count() or logical
    if physical and total and physical < total:
        # hyper-threads: scale the allowed logical CPUs by cores per logical CPU
        return max(1, (logical * physical) // total)
    return max(1, logical)


def _default_threads() -> int:
    env = os.environ.get("ORAMEM_ONNX_THREADS", "").strip()
    if env:
        if not env.isdigit():
            raise ValueError(f"ORAMEM_ONNX_THREADS must be an int >= 0 (0: ONNX Runtime's default), got {env!r}")
        return int(env)
    return physical_cores()


def _import_runtime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise ImportError(f"ONNXEmbedder needs ONNX Runtime: {_INSTALL_HINT}") from None
    return onnxruntime


def _cache_name(model_id: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?", model_id) or ".." in model_id:
        raise ValueError(
            f"model {model_id!r} is neither an existing directory or .onnx file nor a model id like "
            "'sentence-transformers/all-MiniLM-L6-v2'"
        )
    return model_id.replace("/", "--")


def _find_model_file(directory: Path) -> Optional[Path]:
    for name in _MODEL_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class ONNXEmbedder(IEmbedder):
    """``ONNXEmbedder(model, *, cache_dir=None, batch_size=32, ...)``; see the module docstring.

    ``model`` is a model directory, an ``.onnx`` file (a directory's ``model.onnx`` with a
    ``tokenizer.json`` beside it, or an augmented model with a string input) or a model id.
    ``pooling`` (``"mean"``, ``"cls"``, ``"max"``) and ``normalize`` override what the model
    directory says; ``max_length`` caps the tokens per text (longer texts are truncated).
    ``download=False`` never touches the network for a model id.
    """

    computes_locally = True  # IEmbedder.computes_locally

    def __init__(
        self,
        model: Union[str, "os.PathLike[str]"],
        *,
        cache_dir: Union[str, "os.PathLike[str]", None] = None,
        batch_size: int = 32,
        max_length: Optional[int] = None,
        pooling: Optional[str] = None,
        normalize: Optional[bool] = None,
        intra_op_threads: Optional[int] = None,
        inter_op_threads: Optional[int] = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        download: bool = True,
        query_cache_size: int = 256,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1):
            raise ValueError(f"max_length must be an int >= 1 or None, got {max_length!r}")
        if pooling is not None and pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {', '.join(POOLING_MODES)}, got {pooling!r}")
        if normalize is not None and not isinstance(normalize, bool):
            raise TypeError(f"normalize must be True, False or None, got {normalize!r}")
        for name, value in (("intra_op_threads", intra_op_threads), ("inter_op_threads", inter_op_threads)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be an int >= 0 (0: ONNX Runtime's default) or None, got {value!r}")
        for name, prefix in (("query_prefix", query_prefix), ("passage_prefix", passage_prefix)):
            if not isinstance(prefix, str):
                raise TypeError(f"{name} must be a str, got {type(prefix).__name__}")
        if isinstance(query_cache_size, bool) or not isinstance(query_cache_size, int) or query_cache_size < 0:
            raise ValueError(f"query_cache_size must be an int >= 0 (0: no cache), got {query_cache_size!r}")
        ort = _import_runtime()
        self.query_cache_size = query_cache_size
        self._query_cache: "OrderedDict[str, np.ndarray]" = OrderedDict()
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._lock = threading.Lock()
        self._digest: Optional[str] = None
        self._window: Optional[InputWindow] = None

        self.model_path, self.model_id = self._resolve(model, cache_dir, download)
        #: the local path the caller gave (None for a model id): shown in advice, not compared
        self.source_path = str(Path(model).expanduser().resolve()) if Path(model).expanduser().exists() else None
        directory = self.model_path.parent
        if self.model_path.parent.name == "onnx" and not (directory / "tokenizer.json").is_file():
            directory = directory.parent
        self.model_dir = directory

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        #: the intra-op thread count asked of ONNX Runtime (0: its own choice)
        self.intra_op_threads = _default_threads() if intra_op_threads is None else intra_op_threads
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = 1 if inter_op_threads is None else inter_op_threads
        self._session = self._new_session(ort, options)
        self._files: Optional[dict[str, str]] = None
        inputs = self._session.get_inputs()
        self.augmented = any(i.type == "tensor(string)" for i in inputs)
        self._input_names = [i.name for i in inputs]
        self._output = self._pick_output()

        if self.augmented:
            if len(inputs) != 1:
                raise ValueError(
                    f"{self.model_path}: a string-input (augmented) model must have exactly one input, "
                    f"it has {len(inputs)}: {', '.join(self._input_names)}"
                )
            if pooling is not None:
                raise ValueError(f"{self.model_path} pools inside its graph (string input); do not pass pooling")
            #: the tokenizers.Tokenizer (None for a string-input model)
            self.tokenizer: Any = None
            self.pooling: Optional[str] = None
            self.normalize = bool(normalize)
            self.max_length: Optional[int] = None
        else:
            self.tokenizer = self._load_tokenizer(max_length)
            # the same tokenizer without padding: embed() pads each length-sorted batch itself
            from tokenizers import Tokenizer

            self._encoder: Any = Tokenizer.from_str(self.tokenizer.to_str())
            self._encoder.no_padding()
            padding = self.tokenizer.padding or {}
            self._pad_id = int(padding.get("pad_id", 0))
            self._pad_type_id = int(padding.get("pad_type_id", 0))
            rank = len(self._output.shape or [])
            self.pooling = None if rank == 2 else (pooling or self._config_pooling())
            if rank == 2 and pooling is not None:
                raise ValueError(f"{self.model_path} already outputs one vector per text; do not pass pooling")
            self.normalize = self._config_normalize() if normalize is None else normalize
            missing = [n for n in self._input_names if n not in ("input_ids", "attention_mask", "token_type_ids")]
            if missing or "input_ids" not in self._input_names:
                raise ValueError(
                    f"{self.model_path}: expected inputs input_ids[, attention_mask, token_type_ids], the graph has "
                    f"{', '.join(self._input_names)}"
                )
        last = (self._output.shape or [None])[-1]
        self._dimension: Optional[int] = last if isinstance(last, int) and last > 0 else None

    # -- loading -----------------------------------------------------------------------------
    def _resolve(self, model: Any, cache_dir: Any, download: bool) -> tuple[Path, str]:
        if not isinstance(model, (str, os.PathLike)) or not str(model).strip():
            raise TypeError("model must be a model directory, an .onnx file or a model id (non-empty str)")
        path = Path(model).expanduser()
        if path.is_file():
            path = path.resolve()
            return path, (path.parent.parent.name if path.parent.name == "onnx" else path.stem)
        if path.is_dir():
            found = _find_model_file(path)
            if found is None:
                raise ModelNotAvailable(f"{path} has no model.onnx (nor onnx/model.onnx); export the model to ONNX there")
            return found.resolve(), path.resolve().name
        text = str(model)
        if text.endswith(".onnx") or text.startswith((".", "~", "/", os.sep)) or text.count("/") > 1 or "\\" in text:
            raise ModelNotAvailable(f"no model file or directory at {text}")
        cached = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        target = cached / _cache_name(text)
        found = _find_model_file(target) if target.is_dir() else None
        if found is None:
            if not download:
                raise ModelNotAvailable(f"model {text!r} is not in the cache {target} and download=False")
            target = self._download(text, target)
            found = _find_model_file(target)
            if found is None:
                raise ModelNotAvailable(
                    f"model {text!r} has no ONNX export (onnx/model.onnx) on the hub; export it "
                    f"(e.g. with optimum) into {target} or pass a local model directory"
                )
        return found.resolve(), text

    @staticmethod
    def _download(model_id: str, target: Path) -> Path:
        """Fetch a model id into ``target`` (its cache directory) with :func:`oramem.embedders.hub.pull`."""
        from . import hub

        if target.exists() and not hub.is_complete(target):
            raise ModelNotAvailable(
                f"{target} exists but holds no model.onnx; put model.onnx and tokenizer.json of {model_id} there, "
                "or remove it and let oramem download the model"
            )
        try:
            spec = hub.resolve(model_id)
        except ValueError as exc:
            raise ModelNotAvailable(str(exc)) from None
        return hub.pull(spec, cache_dir=target.parent, progress=sys.stderr)

    def _new_session(self, ort: Any, options: Any) -> Any:
        try:
            return ort.InferenceSession(str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as first:
            # an augmented model's tokenizer needs onnxruntime-extensions' custom operators
            try:
                import onnxruntime_extensions
            except ImportError:
                raise ValueError(
                    f"ONNX Runtime cannot load {self.model_path}: {' '.join(str(first).split())[:300]}"
                    " (a model with its tokenizer inside the graph also needs: pip install onnxruntime-extensions)"
                ) from None
            options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
            try:
                return ort.InferenceSession(str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise ValueError(f"ONNX Runtime cannot load {self.model_path}: {' '.join(str(exc).split())[:300]}") from None

    def _pick_output(self) -> Any:
        outputs = self._session.get_outputs()
        by_name = {o.name: o for o in outputs}
        for name in ("sentence_embedding", "embedding", "embeddings", "last_hidden_state", "token_embeddings"):
            if name in by_name:
                chosen = by_name[name]
                break
        else:
            chosen = outputs[0]
        rank = len(chosen.shape or [])
        if rank not in (2, 3):
            raise ValueError(
                f"{self.model_path}: output {chosen.name!r} has rank {rank}; expected token embeddings "
                "(batch, tokens, dim) or sentence embeddings (batch, dim)"
            )
        return chosen

    def _load_tokenizer(self, max_length: Optional[int]) -> Any:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ImportError(f"ONNXEmbedder needs the tokenizers package: {_INSTALL_HINT}") from None
        path = self.model_dir / "tokenizer.json"
        if not path.is_file():
            raise ModelNotAvailable(f"{self.model_dir} has no tokenizer.json (the model's fast-tokenizer file)")
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:
            raise ValueError(f"cannot load {path}: {' '.join(str(exc).split())[:300]}") from None
        if max_length is None:
            config = self.model_dir / "sentence_bert_config.json"
            value = _read_json(config).get("max_seq_length") if config.is_file() else None
            max_length = value if isinstance(value, int) and value > 0 else None
        if max_length is None and tokenizer.truncation:
            max_length = tokenizer.truncation.get("max_length")
        self.max_length = truncate_at = int(max_length or _DEFAULT_MAX_LENGTH)
        tokenizer.enable_truncation(truncate_at)
        padding = tokenizer.padding or {}
        tokenizer.enable_padding(pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]"))
        return tokenizer

    def _config_pooling(self) -> str:
        config = self.model_dir / "1_Pooling" / "config.json"
        if not config.is_file():
            return "mean"
        data = _read_json(config)
        chosen = [m for m in POOLING_MODES if data.get(f"pooling_mode_{m}_token" if m == "cls" else f"pooling_mode_{m}_tokens")]
        unsupported = [k for k, v in data.items() if k.startswith("pooling_mode_") and v and not any(
            k in (f"pooling_mode_{m}_tokens", f"pooling_mode_{m}_token") for m in POOLING_MODES)]
        if unsupported or len(chosen) != 1:
            raise ValueError(
                f"{config}: pooling {', '.join(unsupported + chosen) or 'none'} is not supported; "
                "ONNXEmbedder pools by exactly one of mean, cls, max (pass pooling=...)"
            )
        return chosen[0]

    def _config_normalize(self) -> bool:
        modules = self.model_dir / "modules.json"
        if not modules.is_file():
            return True  # sentence embeddings are compared by cosine; unit vectors by default
        data = _read_json(modules)
        return any(isinstance(m, dict) and str(m.get("type", "")).endswith("Normalize") for m in data)

    # -- identity --------------------------------------------------------------------------
    @property
    def weights_digest(self) -> str:
        """SHA-256 of the ONNX file (computed once)."""
        if self._digest is None:
            self._digest = _file_digest(self.model_path)
        return self._digest

    @property
    def embedder_identity(self) -> dict[str, Any]:
        """What built a store's vectors: kind, model, weights digest, dimension, normalisation, pooling."""
        return {
            "kind": "onnx",
            "model": self.model_id,
            "path": self.source_path,
            "digest": "sha256:" + self.weights_digest[:16],
            "dimension": self.embedding_dimension,
            "normalize": self.normalize,
            "pooling": self.pooling or "in-graph",
            "prefixes": [self.query_prefix, self.passage_prefix] if (self.query_prefix or self.passage_prefix) else None,
            "files": self.file_digests,
        }

    @property
    def file_digests(self) -> dict[str, str]:
        """SHA-256 of every file that decides the vectors: the graph (as ``model.onnx``), the
        tokenizer and the sentence-transformers configuration files present (computed once)."""
        if self._files is None:
            files = {"model.onnx": self.weights_digest}
            if not self.augmented:
                for name in _CONFIG_FILES:
                    path = self.model_dir / name
                    if path.is_file():
                        files[name] = _file_digest(path)
            self._files = files
        return dict(self._files)

    def __repr__(self) -> str:
        return f"ONNXEmbedder(model={self.model_id!r}, dimension={self._dimension}, pooling={self.pooling!r}, normalize={self.normalize})"

    @property
    def input_window(self) -> Optional[InputWindow]:
        """What the model reads per text (issue 28): ``max_length`` tokens less the special
        tokens the tokenizer adds, counted with the model's own tokenizer; None for a model
        that tokenizes inside its graph (its window is not known here)."""
        if self.tokenizer is None:
            return None
        if self._window is None:
            from tokenizers import Tokenizer

            counter = Tokenizer.from_str(self.tokenizer.to_str())
            counter.no_truncation()
            counter.no_padding()
            special = len(counter.encode("").ids)
            assert self.max_length is not None
            tokens = max(1, self.max_length - special)

            def spans(text: str) -> list[tuple[int, int]]:
                return list(counter.encode(text, add_special_tokens=False).offsets)

            digest = "sha256:" + _file_digest(self.model_dir / "tokenizer.json")[:16]
            self._window = InputWindow(max_tokens=tokens, tokenizer=digest, spans=spans)
        return self._window

    # -- IEmbedder ---------------------------------------------------------------------------
    @property
    def embedding_dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        texts = texts_argument(texts)
        prefix = self.query_prefix if is_query else self.passage_prefix
        if prefix:
            texts = [prefix + t for t in texts]
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        cached: dict[int, np.ndarray] = {}
        if is_query and self.query_cache_size:
            with self._lock:
                for i, text in enumerate(texts):
                    hit = self._query_cache.get(text)
                    if hit is not None:
                        self._query_cache.move_to_end(text)
                        cached[i] = hit
        todo = [i for i in range(len(texts)) if i not in cached]
        fresh = self._embed_all([texts[i] for i in todo]) if todo else None
        if fresh is not None and not cached:
            out = fresh
        else:
            first = fresh if fresh is not None else next(iter(cached.values()))[None, :]
            out = np.empty((len(texts), first.shape[1]), dtype=np.float32)
            for i, vector in cached.items():
                out[i] = vector
            if fresh is not None:
                out[todo] = fresh
        with self._lock:
            if self._dimension is None:
                self._dimension = int(out.shape[1])
            if is_query and self.query_cache_size and fresh is not None:
                for row, i in enumerate(todo):
                    self._query_cache[texts[i]] = fresh[row].copy()
                    self._query_cache.move_to_end(texts[i])
                while len(self._query_cache) > self.query_cache_size:
                    self._query_cache.popitem(last=False)
        return out

    def clear_query_cache(self) -> None:
        """Forget every cached query vector."""
        with self._lock:
            self._query_cache.clear()

    def _embed_all(self, texts: list[str]) -> np.ndarray:
        """Vectors for ``texts`` in order: tokenized once, sorted by length, batched."""
        if self.augmented:
            parts = [self._embed_strings(texts[s : s + self.batch_size]) for s in range(0, len(texts), self.batch_size)]
            return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]
        encodings = self._encoder.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out: Optional[np.ndarray] = None
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            vectors = self._embed_encoded([encodings[i] for i in chosen])
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[chosen] = vectors
        assert out is not None
        return out

    def _embed_encoded(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.full((len(encodings), width), self._pad_type_id, dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = e.attention_mask
            types[row, :n] = e.type_ids
        feed = {"input_ids": ids}
        if "attention_mask" in self._input_names:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = types
        (result,) = self._session.run([self._output.name], feed)
        hidden = np.asarray(result, dtype=np.float64)
        if self.pooling is None:
            vectors = hidden
        elif self.pooling == "cls":
            vectors = hidden[:, 0, :]
        elif self.pooling == "max":
            masked = np.where(mask[:, :, None] > 0, hidden, -np.inf)
            vectors = masked.max(axis=1)
        else:
            weights = mask[:, :, None].astype(np.float64)
            vectors = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return self._finish(vectors)

    def _embed_strings(self, texts: list[str]) -> np.ndarray:
        (result,) = self._session.run([self._output.name], {self._input_names[0]: np.array(texts, dtype=object)})
        vectors = np.asarray(result, dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(
                f"{self.model_path}: output {self._output.name!r} has shape {vectors.shape} for {len(texts)} texts"
            )
        return self._finish(vectors)

    def _finish(self, vectors: np.ndarray) -> np.ndarray:
        if self.normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.clip(norms, 1e-12, None)
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise ValueError(f"{self.model_path} returned {vectors.shape[1]}-d vectors, expected {self._dimension}")
        return vectors.astype(np.float32)
