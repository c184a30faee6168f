"""``OracleDBEmbedder``: embeddings computed inside Oracle AI Database by an ONNX model
loaded with ``DBMS_VECTOR.LOAD_ONNX_MODEL`` (ORACLE_NOTES 6.1-6.2).

``VECTOR_EMBEDDING(model USING expr AS data)`` takes the model as an **identifier**, not a
bind, so the name is validated strictly (``[schema.]name`` of plain identifiers, upper-cased
and double-quoted in the SQL text) before any round trip, and checked to exist in
``ALL_MINING_MODELS`` on first use. Texts are always bound: all texts of one ``embed`` call
go in one round trip as a JSON array unpacked with ``JSON_TABLE``.

The dimension is probed once with ``VECTOR_DIMENSION_COUNT(VECTOR_EMBEDDING(...))`` (the
model's metadata decides it), unless given as ``embedding_dimension=``.

Works with a python-oracledb ``Connection``/``ConnectionPool`` (``embed``) or an
``AsyncConnection``/``AsyncConnectionPool`` (``embed_async``, native asyncio). With an async
source, ``embedding_dimension`` is available after ``await embedder.verify_async()`` (or
when passed to the constructor). Texts longer than 4000 bytes are cut to 4000 bytes: the
SQL ``VARCHAR2`` limit under ``MAX_STRING_SIZE=STANDARD``, far above a model's token window.
``is_query`` is ignored: in-database ONNX models embed queries and passages alike.

Static-checked, not run against Oracle here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import oracledb

from ..embedders.base import IEmbedder, InputWindow

__all__ = ["OracleDBEmbedder", "validate_model_name"]

_IDENT = r"[A-Za-z][A-Za-z0-9_$#]{0,127}"
_MODEL_RE = re.compile(rf"^({_IDENT})(?:\.({_IDENT}))?$")
_MAX_TEXT_BYTES = 4000
#: characters that always fit _MAX_TEXT_BYTES (UTF-8 takes at most 4 bytes per character)
_MAX_TEXT_CHARS = _MAX_TEXT_BYTES // 4
#: characters per model token assumed without the model's tokenizer (as for services)
_CHARS_PER_TOKEN = 2

_EXISTS_SQL = (
    "select count(*) from all_mining_models "
    "where owner = nvl(:owner, sys_context('USERENV', 'CURRENT_SCHEMA')) and model_name = :name"
)


def validate_model_name(name: Any) -> str:
    """``[schema.]model`` upper-cased; ``ValueError``/``TypeError`` for anything else."""
    if not isinstance(name, str):
        raise TypeError(f"model_name must be a str, got {type(name).__name__}")
    m = _MODEL_RE.match(name.strip())
    if not m:
        raise ValueError(
            f"model_name {name!r} is not a valid in-database model name: use [schema.]name of letters, digits, "
            "_ $ # (starting with a letter, at most 128 characters each), e.g. ORAMEM_EMBED"
        )
    return name.strip().upper()


def _split(name: str) -> tuple[Optional[str], str]:
    if "." in name:
        owner, model = name.split(".", 1)
        return owner, model
    return None, name


def _clip(text: str) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= _MAX_TEXT_BYTES:
        return text
    return raw[:_MAX_TEXT_BYTES].decode("utf-8", errors="ignore")


class OracleDBEmbedder(IEmbedder):
    """In-database ONNX embedder: ``OracleDBEmbedder(conn_or_pool, "ORAMEM_EMBED")``."""

    def __init__(self, conn_or_pool: Any, model_name: str, *, embedding_dimension: Optional[int] = None,
                 max_input_tokens: Optional[int] = None) -> None:
        self.model_name = validate_model_name(model_name)
        if max_input_tokens is not None and (
            isinstance(max_input_tokens, bool) or not isinstance(max_input_tokens, int) or max_input_tokens < 8
        ):
            raise ValueError(f"max_input_tokens must be an int >= 8 or None, got {max_input_tokens!r}")
        self.max_input_tokens = max_input_tokens
        if isinstance(conn_or_pool, (oracledb.AsyncConnectionPool, oracledb.AsyncConnection)):
            self._async = True
        elif isinstance(conn_or_pool, (oracledb.ConnectionPool, oracledb.Connection)):
            self._async = False
        else:
            raise TypeError(
                "OracleDBEmbedder needs a python-oracledb connection or pool, got " + type(conn_or_pool).__name__
            )
        if embedding_dimension is not None and (
            isinstance(embedding_dimension, bool) or not isinstance(embedding_dimension, int)
            or not 1 <= embedding_dimension <= 65535
        ):
            raise ValueError(f"embedding_dimension must be an int in 1..65535, got {embedding_dimension!r}")
        self._source = conn_or_pool
        self._dim = embedding_dimension
        self._verified = False
        owner, model = _split(self.model_name)
        self._owner, self._model = owner, model
        quoted = f'"{owner}"."{model}"' if owner else f'"{model}"'
        # the only text built here: a validated, quoted identifier. :texts is bound as a CLOB:
        # thin mode sends a SQL str bind over the server's max_string_size (4000 bytes under
        # MAX_STRING_SIZE=STANDARD, Oracle Database Free's default) as a LONG, which JSON_TABLE
        # does not take (python-oracledb impl/thin/messages/base.pyx _write_bind_params_row;
        # review F4). JSON_TABLE accepts a CLOB. Static-checked, not run against Oracle.
        self._embed_sql = (
            f"select vector_embedding({quoted} using jt.t as data) "
            "from json_table(:texts, '$[*]' columns (i for ordinality, t varchar2(4000) path '$')) jt "
            "order by jt.i"
        )
        self._dim_sql = f"select vector_dimension_count(vector_embedding({quoted} using 'oramem' as data)) from dual"

    @property
    def input_window(self) -> InputWindow:
        """What one VECTOR_EMBEDDING call here reads (issue 28): the text goes through a
        ``VARCHAR2(4000)`` column, so at most 1,000 characters are sure to arrive whole (4
        bytes per character at worst; longer text is clipped); with ``max_input_tokens`` (the
        model's token window, which Oracle's model metadata does not expose) also at most 2
        characters per token. The store chunks to it, so no indexed text is clipped or lies
        past the model's window."""
        chars = _MAX_TEXT_CHARS
        if self.max_input_tokens is not None:
            chars = min(chars, self.max_input_tokens * _CHARS_PER_TOKEN)
        return InputWindow(max_tokens=self.max_input_tokens, max_chars=chars)

    # -- sync ---------------------------------------------------------------------------
    def _conn(self) -> Any:
        if self._async:
            raise TypeError(
                "this OracleDBEmbedder was given an async pool/connection: use embed_async() and "
                "await verify_async() (or pass embedding_dimension=)"
            )
        if isinstance(self._source, oracledb.ConnectionPool):
            return self._source.acquire()
        return _Borrowed(self._source)

    def verify(self) -> int:
        """Check that the model exists and learn its dimension; returns the dimension."""
        with self._conn() as conn, conn.cursor() as cur:
            cur.execute(_EXISTS_SQL, owner=self._owner, name=self._model)
            (n,) = cur.fetchone()
            self._check_exists(n)
            if self._dim is None:
                cur.execute(self._dim_sql)
                self._dim = int(cur.fetchone()[0])
        self._verified = True
        return self._dim

    @property
    def embedding_dimension(self) -> int:
        if self._dim is None:
            if self._async:
                raise TypeError(
                    "embedding_dimension of an async OracleDBEmbedder is known after `await embedder.verify_async()`"
                    " (or pass embedding_dimension= to the constructor)"
                )
            self.verify()
        return self._dim  # type: ignore[return-value]

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        payload = self._payload(texts)
        if not self._verified:
            self.verify()
        if payload is None:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        with self._conn() as conn, conn.cursor() as cur:
            cur.setinputsizes(texts=oracledb.DB_TYPE_CLOB)  # see _embed_sql (review F4)
            cur.execute(self._embed_sql, texts=payload)
            rows = cur.fetchall()
        return self._matrix(rows, len(texts))

    # -- async --------------------------------------------------------------------------
    def _aconn(self) -> Any:
        if not self._async:
            raise TypeError("this OracleDBEmbedder was given a sync pool/connection")
        if isinstance(self._source, oracledb.AsyncConnectionPool):
            return self._source.acquire()
        return _ABorrowed(self._source)

    async def verify_async(self) -> int:
        """Async twin of :meth:`verify`."""
        async with self._aconn() as conn:
            with conn.cursor() as cur:
                await cur.execute(_EXISTS_SQL, owner=self._owner, name=self._model)
                (n,) = await cur.fetchone()
                self._check_exists(n)
                if self._dim is None:
                    await cur.execute(self._dim_sql)
                    self._dim = int((await cur.fetchone())[0])
        self._verified = True
        return self._dim

    async def embed_async(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        if not self._async:  # sync source: the IEmbedder default (a worker thread) is right
            return await super().embed_async(texts, is_query=is_query)
        payload = self._payload(texts)
        if not self._verified:
            await self.verify_async()
        if payload is None:
            return np.zeros((0, self._dim), dtype=np.float32)  # type: ignore[arg-type]
        async with self._aconn() as conn:
            with conn.cursor() as cur:
                cur.setinputsizes(texts=oracledb.DB_TYPE_CLOB)  # see _embed_sql (review F4)
                await cur.execute(self._embed_sql, texts=payload)
                rows = await cur.fetchall()
        return self._matrix(rows, len(texts))

    # -- shared -------------------------------------------------------------------------
    def _check_exists(self, n: int) -> None:
        if not n:
            raise ValueError(
                f"in-database model {self.model_name} does not exist (or is not visible to this user): load it with "
                "DBMS_VECTOR.LOAD_ONNX_MODEL, check the name in ALL_MINING_MODELS, or grant access to it"
            )

    @staticmethod
    def _payload(texts: Sequence[str]) -> Optional[str]:
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TypeError("texts must be a sequence of str (a list), not " + type(texts).__name__)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"texts[{i}] must be a str, got {type(t).__name__}")
        if not texts:
            return None
        return json.dumps([_clip(t) for t in texts], ensure_ascii=False)

    def _matrix(self, rows: list[Any], expected: int) -> np.ndarray:
        if len(rows) != expected:
            raise RuntimeError(f"VECTOR_EMBEDDING returned {len(rows)} vectors for {expected} texts")
        out = np.asarray([np.asarray(r[0], dtype=np.float32) for r in rows], dtype=np.float32)
        if self._dim is not None and out.shape[1] != self._dim:
            raise RuntimeError(f"model {self.model_name} returned {out.shape[1]} dimensions, expected {self._dim}")
        return out


class _Borrowed:
    """Context manager that lends a caller-owned connection without closing it."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __enter__(self) -> Any:
        return self.conn

    def __exit__(self, *exc: Any) -> None:
        return None


class _ABorrowed:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def __aenter__(self) -> Any:
        return self.conn

    async def __aexit__(self, *exc: Any) -> None:
        return None
