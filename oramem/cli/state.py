"""Per-invocation state (``State``, passed to every command) and the checks on ``--db``
before SQLite is asked."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Any, Optional

import click

from ..embedders import HashEmbedder, OpenAICompatibleEmbedder
from ..embedders.defaults import default_embedder, embedder_for
from ..embedders.identity import decode_identity, describe_identity
from ..errors import StoreError, StoreSettingsMismatch
from ..normalize import DEFAULT_STORE_ID, validate_store_id
from ..sqlite import admin as sqlite_admin

from .group import CLIError, one_line


DEFAULT_DB = "./oramem.db"
#: Dimension of the default HashEmbedder the CLI uses.
HASH_DIM = 256


# ----------------------------------------------------------------------------- catalog
def read_catalog(path: str) -> dict[str, dict[str, Any]]:
    """Catalog rows of an existing database file, by store id ({} for a non-oramem file)."""
    try:
        return sqlite_admin.list_stores(path)
    except StoreError as exc:
        raise CLIError(str(exc)) from None


# ----------------------------------------------------------------------------- state
@dataclass
class State:
    db: str
    store_id: Optional[str]
    json: bool
    embed_url: Optional[str]
    embed_model: Optional[str]
    embed_dim: Optional[int]
    store_strategy: str
    db_given: bool
    embed_onnx: Optional[str] = None
    strategy_given: bool = False
    embed_allow_http_key: bool = False
    embed_max_tokens: Optional[int] = None
    read_only: bool = False
    keyword_language: Optional[str] = None
    hybrid: Any = None
    #: the embedder a NEW store gets instead of the default (import of a with-vectors backup)
    new_store_embedder: Any = None
    #: what to say when the opened store needs its embedder and it could not be rebuilt here
    embedder_hint: Optional[str] = None
    _store: Any = None

    def adopt_for_new_store(self, identity: Optional[dict[str, Any]]) -> None:
        """A new store (only; and only without --embed-* options) takes the embedder ``identity``
        names when it can be rebuilt here: a with-vectors backup restores into a fresh file as is."""
        if identity and not (self.embed_onnx or self.embed_url or self.embed_model or self.embed_dim is not None):
            self.new_store_embedder = embedder_for(identity)

    def embedder(self, row: Optional[dict[str, Any]] = None) -> Any:
        """The embedder the --embed-* options select; with none of them, the one the existing
        store's recorded identity names (``row``; None when it cannot be rebuilt here: the
        store then serves everything but text-to-vector work), else for a new store the
        semantic default (``$ORAMEM_ONNX_MODEL``, the default model, else HashEmbedder(256)
        with a notice)."""
        if self.embed_max_tokens is not None and not self.embed_url:
            raise click.UsageError("--embed-max-tokens applies to an --embed-url model; give --embed-url and --embed-model")
        if self.embed_onnx:
            if self.embed_url or self.embed_model:
                raise click.UsageError("--embed-onnx and --embed-url/--embed-model are alternatives; give one")
            from ..embedders import ONNXEmbedder

            try:
                onnx = ONNXEmbedder(self.embed_onnx)
            except ImportError as exc:
                raise CLIError(str(exc), 2) from None
            except RuntimeError as exc:  # ModelNotAvailable
                raise CLIError(one_line(exc), 1) from None
            if self.embed_dim is not None and self.embed_dim != onnx.embedding_dimension:
                raise click.UsageError(
                    f"--embed-dim {self.embed_dim} differs from the ONNX model's dimension {onnx.embedding_dimension}; omit it"
                )
            return onnx
        if self.embed_url or self.embed_model:
            if not (self.embed_url and self.embed_model):
                raise click.UsageError("--embed-url and --embed-model go together")
            return OpenAICompatibleEmbedder(
                self.embed_model, base_url=self.embed_url, dimension=self.embed_dim, allow_insecure_key=self.embed_allow_http_key,
                max_input_tokens=self.embed_max_tokens,
            )
        if self.embed_dim is not None:
            return HashEmbedder(self.embed_dim)
        if row is not None:
            identity = decode_identity(row.get("embedder"))
            rebuilt = embedder_for(identity)
            if rebuilt is not None:
                return rebuilt
            if identity is None and row.get("vector_dim") == HASH_DIM and row.get("capability") != "keyword":
                return HashEmbedder(HASH_DIM)  # a store the CLI built before identities were recorded
            return None  # reads, exports and keyword search need no embedder; the store says when one is needed
        if self.new_store_embedder is not None:
            return self.new_store_embedder
        try:
            return default_embedder()
        except ImportError as exc:
            raise CLIError(str(exc), 2) from None
        except RuntimeError as exc:  # ModelNotAvailable for a bad $ORAMEM_ONNX_MODEL
            raise CLIError(one_line(exc), 1) from None

    def store_key(self) -> str:
        """The upper-cased memory_store_id this invocation addresses."""
        if self.store_id == "":
            raise CLIError("--store is empty; give a store id, or leave it out for the default store", 2)
        if not self.store_id:
            return DEFAULT_STORE_ID
        return validate_store_id(self.store_id)

    def open(self, *, create: bool, path: Optional[str] = None, policy: Any = None, reading: bool = False) -> Any:
        """Open (and remember) the store.

        An existing store is opened with the strategy it supports unless --store-strategy
        was given, so the CLI never upgrades a store by accident; a new store is created
        (only when ``create``) with --store-strategy (default hybrid). Commands that need
        an existing store (``create=False``) refuse a missing file or store instead of
        creating one. Commands that only read (``reading``) open the file read-only with
        --read-only, or when the file or its directory is not writable here.
        """
        if self._store is not None:
            return self._store
        from .. import SQLiteMemoryStore
        from ..types import SchemaPolicy

        path = path or self.db
        sid = self.store_key()
        exists = path != ":memory:" and os.path.exists(path)
        if not create and path != ":memory:" and not exists:
            raise CLIError(
                f"no database at {path}; add records first (oramem add / oramem import) or point --db / ORAMEM_DB at one"
            )
        if self.read_only and not reading:
            raise CLIError("--read-only allows only reading commands (search, get, list, export, check)", 2)
        read_only = self.read_only
        if path != ":memory:":
            read_only = check_db_path(path, exists=exists, create=create, reading=reading) or read_only
        catalog = read_catalog(path) if exists else {}
        row = catalog.get(sid)
        if row is None and not create:
            known = ", ".join(sorted(catalog)) or "none"
            raise CLIError(f"no store {sid!r} in {path} (stores there: {known}); pick one with --store")
        strategy = self.store_strategy
        if row is not None and not self.strategy_given:
            strategy = row["capability"]
        # a new keyword store needs no embedder (as from Python): resolving the default would
        # load, fetch or warn about a model the store never uses
        bare_keyword = row is None and strategy == "keyword" and not self._embedder_flags() and self.new_store_embedder is None
        # a keyword store given vectors (an upgrade, possible while it is empty) gets them as a new store would
        gains_vectors = row is not None and row["capability"] == "keyword" and strategy != "keyword"
        if gains_vectors and path != ":memory:" and sqlite_admin.unvectored_rows(path, sid):
            # refused by the open anyway: say so before a model is loaded (or fetched) for it
            raise CLIError(self._strategy_advice(path, "keyword", strategy, upgradable=False))
        kwargs: dict[str, Any] = {
            "embedder": None if bare_keyword else self.embedder(None if gains_vectors else row),
            "schema_policy": policy or (SchemaPolicy.CREATE_IF_NECESSARY if create else SchemaPolicy.REQUIRE_EXISTING),
            "search_strategy": strategy,
        }
        if self.keyword_language is not None:
            stored = None if row is None else (row.get("keyword_language") or "legacy")
            if stored is not None and stored != self.keyword_language:
                raise CLIError(
                    f"--keyword-language {self.keyword_language}: store {sid!r} indexes text as {stored!r} "
                    "(a store setting fixed at creation); omit --keyword-language, or use another --store", 2
                )
            if stored is None:
                kwargs["keyword_language"] = self.keyword_language
        if self.hybrid is not None:
            kwargs["hybrid"] = self.hybrid
        if self.store_id:
            kwargs["memory_store_id"] = self.store_id
        if path != ":memory:":
            kwargs["read_only"] = read_only
        identity = None if row is None else decode_identity(row.get("embedder"))
        try:
            self._store = SQLiteMemoryStore(path, **kwargs)
        except StoreSettingsMismatch as exc:
            if exc.upgradable is not None and row is not None:
                raise CLIError(self._strategy_advice(path, row["capability"], strategy, upgradable=exc.upgradable)) from None
            given = self._embedder_flags()
            text = one_line(exc)
            cut = text.find("vectors of different embedders are not comparable.")
            if not given or identity is None or cut < 0:
                raise
            # the Python advice ("open it with embedder=...") in the CLI's words
            raise CLIError(
                f"{text[:cut]}vectors of different embedders are not comparable. Leave out {given} (the store's "
                f"recorded embedder is then used; to name it: {_cli_embedder_options(identity)}), or move the store to the embedder {given} selects with "
                f"`oramem --db {shlex.quote(path)}{'' if not self.store_id else ' --store ' + shlex.quote(self.store_id)} "
                f"{given} reembed`"
            ) from None
        if self._store.embedder is None and identity is not None:
            self.embedder_hint = (
                f"store {sid!r} was built with {describe_identity(identity)}, which cannot be loaded here: give it "
                f"with {_cli_embedder_options(identity)}; listing, reading, exporting and --strategy keyword "
                "searches work without it"
            )
        return self._store

    def _strategy_advice(self, path: str, capability: str, wanted: str, *, upgradable: bool) -> str:
        """--store-strategy asks for search the existing store was not built for, in the CLI's words."""
        head = f"--store-strategy {wanted}: store {self.store_key()!r} was built for {capability} search"
        if upgradable:
            return (
                f"{head}; leave out --store-strategy to use it as it is, or give --store-strategy {wanted} to a "
                "command that writes (oramem add, oramem import), which upgrades the store"
            )
        db = f"oramem --db {shlex.quote(path)}"
        source = "" if not self.store_id else f" --store {shlex.quote(self.store_id)}"
        return (
            f"{head} and holds records whose retrieval rows have no vectors, so no open can make it {wanted}; "
            f"leave out --store-strategy to search it by keywords, or copy its records into a new {wanted} store, "
            f"which embeds them: `{db}{source} export --out FILE`, then `{db} --store NEW --store-strategy {wanted} import FILE`"
        )

    def _embedder_flags(self) -> str:
        """The --embed-* options given (flag or environment), as the user would type them."""
        if self.embed_onnx:
            return f"--embed-onnx {shlex.quote(self.embed_onnx)}"
        if self.embed_url or self.embed_model:
            return f"--embed-url {shlex.quote(self.embed_url or 'URL')} --embed-model {shlex.quote(self.embed_model or 'NAME')}"
        if self.embed_dim is not None:
            return f"--embed-dim {self.embed_dim}"
        return ""

    def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            store.close()


pass_state = click.make_pass_decorator(State)


def _cli_embedder_options(identity: dict[str, Any]) -> str:
    kind = identity.get("kind")
    if kind == "onnx":
        return f"--embed-onnx {identity.get('path') or identity.get('model')} (the same weights)"
    if kind == "openai-compatible":
        return f"--embed-url URL --embed-model {identity.get('model')}"
    if kind == "hash":
        return f"--embed-dim {identity.get('dimension')}"
    return "the Python API and the embedder that built it"


def check_db_path(path: str, *, exists: bool, create: bool, reading: bool = False) -> bool:
    """One clear error for a --db that cannot work, before SQLite is asked; True when an
    existing file can only be read here and the command only reads (open it read-only)."""
    if path.startswith("oracle://"):
        rest = path[len("oracle://"):]
        user = rest.rsplit("@", 1)[0] if "@" in rest else ""
        # oracle://app:pw@host/svc: not repeated (red33, dba33 F1: no secret is printed); the
        # password is refused as oramem reembed and migrate refuse it
        secret = ":" in user or "/" in user
        shown = "oracle://USER:***@..." if secret else path
        why = (" (and an Oracle location holds no password: give it in ORAMEM_PASSWORD or at the prompt; a password "
               "on the command line is visible to every user of this machine)") if secret else ""
        raise CLIError(
            f"--db {shown} names an Oracle store: only `oramem reembed` takes one (and `oramem migrate` its "
            "SOURCE/TARGET); the other commands run on an embedded SQLite file. Use an Oracle store from Python "
            f"(OracleDBMemoryStore) or PL/SQL, and maintain it with `oramem db --dsn` and `oramem kg run-jobs --dsn`{why}", 2)
    if path == "" or os.path.isdir(path):
        raise CLIError(f"--db {path!r} is {'empty' if not path else 'a directory'}; give a database file path", 2)
    where = os.path.dirname(os.path.abspath(path))
    if not exists:
        if not os.path.isdir(where):
            raise CLIError(f"cannot create {path}: directory {where} does not exist (create it, or point --db elsewhere)")
        if create and not os.access(where, os.W_OK | os.X_OK):
            raise CLIError(f"cannot create {path}: directory {where} is not writable")
        return False
    if not os.access(path, os.R_OK):
        raise CLIError(f"cannot read {path}: permission denied")
    if not os.access(path, os.W_OK) or not os.access(where, os.W_OK | os.X_OK):
        if reading:
            return True
        raise CLIError(
            f"{path} is read-only here: this command writes, which needs write access to the file and its "
            "directory (WAL journal); reading commands (search, get, list, export, check) work on it"
        )
    return False
