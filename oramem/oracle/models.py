"""``oramem db load-model FILE --name NAME``: load an ONNX embedding model into the schema
with ``DBMS_VECTOR.LOAD_ONNX_MODEL`` (the BLOB form), so that :class:`OracleDBEmbedder` and
HYBRID stores can embed in the database.

What Oracle's documentation says (AI Vector Search User's Guide, "LOAD_ONNX_MODEL",
"JSON Metadata Parameters for ONNX Models", and the LOAD_ONNX_MODEL_CLOUD usage notes):

- ``DBMS_VECTOR.LOAD_ONNX_MODEL(model_name IN VARCHAR2, model_data IN BLOB, metadata IN JSON)``;
  the BLOB holds the same bytes as the ``.onnx`` file; ``model_name`` is ``[schema.]name``;
- the only required metadata field is ``function``; the documented default for an
  embedding model is ``{"function": "embedding", "embeddingOutput": "embedding",
  "input": {"input": ["DATA"]}}``;
- a model name has at most 123 characters (a schema name at most 128) and follows the rules
  of unquoted identifiers (letters, digits, ``_ $ #``, starting with a letter);
  the model size is limited to 1 GB;
- an in-database embedding model must include tokenization and post-processing (an
  "augmented" / ONNX pipeline model), a bare transformer graph is not enough.

The file is streamed into a temporary BLOB in 8 MB pieces (never read whole into memory),
the call binds name, BLOB and metadata (no SQL is built from user text), and the loaded
model is verified by embedding one word (its dimension is printed).
Static-checked, not run against Oracle.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Optional

__all__ = ["DEFAULT_METADATA", "MAX_MODEL_BYTES", "check_model_name", "check_model_file", "parse_metadata",
           "load_model", "LOAD_SQL", "DROP_SQL"]

#: the documented default metadata of an embedding model
DEFAULT_METADATA: dict[str, Any] = {"function": "embedding", "embeddingOutput": "embedding",
                                    "input": {"input": ["DATA"]}}
MAX_MODEL_BYTES = 1 << 30
_CHUNK = 8 << 20
_FUNCTIONS = ("embedding", "regression", "classification", "clustering")
_NAME = re.compile(r"^(?:([A-Za-z][A-Za-z0-9_$#]{0,127})\.)?([A-Za-z][A-Za-z0-9_$#]{0,122})$")

LOAD_SQL = ("BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL(model_name => :model_name, model_data => :model_data, "
            "metadata => JSON(:metadata)); END;")
DROP_SQL = "BEGIN DBMS_VECTOR.DROP_ONNX_MODEL(model_name => :model_name, force => TRUE); END;"
_EXISTS_SQL = ("select count(*) from all_mining_models "
               "where owner = nvl(:owner, sys_context('USERENV', 'CURRENT_SCHEMA')) and model_name = :name")


def check_model_name(name: Any) -> str:
    """``[schema.]name`` upper-cased, or ``ValueError`` saying what a valid name is."""
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        raise ValueError(
            f"{name!r} is not a valid model name: use [schema.]name, letters, digits, _ $ # only, starting "
            "with a letter, at most 123 characters (schema at most 128), e.g. ALL_MINILM_L12_V2"
        )
    return name.strip().upper()


def check_model_file(path: Any) -> Path:
    """The ONNX file to load; ``FileNotFoundError``/``ValueError`` with what to do."""
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file; pass the path of an .onnx model file")
    if not p.is_file():
        raise ValueError(f"{p} is not a file; pass the path of an .onnx model file")
    size = p.stat().st_size
    if size == 0:
        raise ValueError(f"{p} is empty")
    if size > MAX_MODEL_BYTES:
        raise ValueError(f"{p} is {size / (1 << 30):.2f} GB; Oracle limits an ONNX model to 1 GB "
                         "(quantize it, or export it with external data)")
    with p.open("rb") as f:
        head = f.read(4)
    if head == b"PK\x03\x04":
        raise ValueError(f"{p} is a zip archive: unzip it and pass the .onnx file inside")
    return p


def parse_metadata(text: Optional[str]) -> dict[str, Any]:
    """The metadata JSON object (default: :data:`DEFAULT_METADATA`)."""
    if text is None:
        return dict(DEFAULT_METADATA)
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"--metadata is not valid JSON: {e}") from None
    if not isinstance(meta, dict):
        raise ValueError("--metadata must be a JSON object, e.g. " + json.dumps(DEFAULT_METADATA))
    if meta.get("function") not in _FUNCTIONS:
        raise ValueError(f"--metadata needs \"function\" (one of {', '.join(_FUNCTIONS)}); "
                         f"for an embedding model: {json.dumps(DEFAULT_METADATA)}")
    return meta


def load_model(conn: Any, path: Any, name: Any, *, metadata: Optional[str] = None, replace: bool = False,
               echo: Callable[[str], None] = lambda s: None) -> Optional[int]:
    """Load ``path`` as model ``name``; returns the embedding dimension (None for a model
    whose function is not ``embedding``). Everything is checked before the database is
    touched; an existing model is an error unless ``replace``."""
    import oracledb

    from .embedder import OracleDBEmbedder

    model = check_model_name(name)
    p = check_model_file(path)
    meta = parse_metadata(metadata)
    owner, _, bare = model.rpartition(".")
    with conn.cursor() as cur:
        cur.execute(_EXISTS_SQL, owner=owner or None, name=bare)
        (n,) = cur.fetchone()
        if n and not replace:
            raise RuntimeError(f"model {model} already exists: pass --replace to drop and reload it")
        if n:
            users = _stores_using(conn, model, bare)
            if users:
                raise RuntimeError(
                    f"model {model} embeds the text of store(s) {', '.join(users)} (a HYBRID store's index, or "
                    "the store's recorded OracleDBEmbedder): another model under its name would mix two models' "
                    "vectors in them (and dropping it breaks their writes). Load the new model under another name "
                    "and move the stores to it (a new store with that model; oramem migrate); nothing was changed")
        lob = conn.createlob(oracledb.DB_TYPE_BLOB)
        offset = 1
        with p.open("rb") as f:
            while True:
                piece = f.read(_CHUNK)
                if not piece:
                    break
                lob.write(piece, offset)
                offset += len(piece)
        if n:
            # dba33 F10: --replace dropped the old model before loading the file, so a file the
            # database refuses (not a pipeline model, wrong metadata) left no model at all. The
            # file is loaded (and probed) under a scratch name first; the old one goes only after.
            _try_load(conn, cur, lob, f"{owner}.{_scratch_name()}" if owner else _scratch_name(), meta, echo)
            echo(f"dropping model {model}")
            cur.execute(DROP_SQL, model_name=model)
        echo(f"loading {p} ({offset - 1} bytes) as {model}")
        cur.execute(LOAD_SQL, model_name=model, model_data=lob, metadata=json.dumps(meta))
    if meta["function"] != "embedding":
        return None
    return OracleDBEmbedder(conn, model).verify()


def _scratch_name() -> str:
    import secrets

    return f"OMNEW_{secrets.token_hex(6).upper()}"


def _try_load(conn: Any, cur: Any, lob: Any, scratch: str, meta: dict[str, Any],
              echo: Callable[[str], None]) -> None:
    """Load ``lob`` as ``scratch``, embed one word with it (an embedding model), and drop it
    again; raises what the database said, with the old model untouched."""
    from .embedder import OracleDBEmbedder

    echo(f"checking the file: loading it as {scratch} first")
    cur.execute(LOAD_SQL, model_name=scratch, model_data=lob, metadata=json.dumps(meta))
    try:
        if meta["function"] == "embedding":
            OracleDBEmbedder(conn, scratch).verify()
    finally:
        cur.execute(DROP_SQL, model_name=scratch)


def _stores_using(conn: Any, model: str, bare: str) -> list[str]:
    """Ids of the stores whose recorded ``embedding_model`` (a HYBRID store's index) or
    ``oracle-db`` embedder identity names ``model`` (none when oramem's packages are not
    installed in this schema)."""
    import oracledb

    from ..errors import SchemaError
    from .admin import list_stores

    try:
        stores = list_stores(conn)
    except (oracledb.DatabaseError, SchemaError):
        return []
    names = {model, bare}

    def uses(s: dict[str, Any]) -> bool:
        raw = s.get("embedder")
        identity: dict[str, Any] = raw if isinstance(raw, dict) else {}
        recorded = identity.get("model") if identity.get("kind") == "oracle-db" else None
        return any(str(m or "").upper() in names for m in (s.get("embedding_model"), recorded))

    return sorted(str(s.get("memory_store_id")) for s in stores if uses(s))
