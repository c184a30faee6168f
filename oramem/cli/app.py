"""The root ``oramem`` group (global options, ``State``) and the console-script entry point."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Optional

import click


from .group import HELP_REQUESTED, OramemGroup, show_warning, quiet_stdout
from .state import DEFAULT_DB, State, check_db_path

#: commands that never open --db (Oracle administration, the model cache, migrate's own paths)
_NO_DB_COMMANDS = frozenset({"db", "models", "migrate"})


# ----------------------------------------------------------------------------- group
@click.group(cls=OramemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    default=DEFAULT_DB,
    show_default=True,
    envvar="ORAMEM_DB",
    show_envvar=True,
    help="SQLite database file (':memory:' for a throw-away store); `oramem reembed` also takes an Oracle "
    "store as oracle://USER@HOST:PORT/SERVICE.",
)
@click.option("--store", "store_id", envvar="ORAMEM_STORE", show_envvar=True, help="Store id (the default store when omitted).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.option(
    "--read-only",
    "read_only",
    is_flag=True,
    help="Open the database read-only (search, get, list, export, check); automatic when the file or its directory is not writable.",
)
@click.option("--embed-url", envvar="ORAMEM_EMBED_URL", show_envvar=True, help="OpenAI-compatible API root, e.g. http://localhost:8000/v1.")
@click.option("--embed-model", envvar="ORAMEM_EMBED_MODEL", show_envvar=True, help="Embedding model name for --embed-url.")
@click.option(
    "--embed-allow-http-key",
    is_flag=True,
    help="Allow sending the embedding API key ($ORAMEM_EMBED_API_KEY; $OPENAI_API_KEY only goes to api.openai.com) over plain http to a non-loopback --embed-url.",
)
@click.option(
    "--embed-max-tokens",
    type=click.IntRange(min=8),
    envvar="ORAMEM_EMBED_MAX_TOKENS",
    show_envvar=True,
    help="Tokens the --embed-url model reads per input (OpenAI's models: 8192, known); the store chunks text to fit it.",
)
@click.option("--embed-dim", type=click.IntRange(min=2), envvar="ORAMEM_EMBED_DIM", show_envvar=True, help="Embedding dimension (default: 256 for the hash embedder, probed for --embed-url).")
@click.option(
    "--embed-onnx",
    help="Local ONNX embedding model: a model directory, an .onnx file or a model id. ($ORAMEM_ONNX_MODEL names "
    "the model for new stores only; an existing store keeps the embedder it was built with.)",
)
@click.option(
    "--keyword-language",
    type=click.Choice(["english", "none"], case_sensitive=False),
    envvar="ORAMEM_KEYWORD_LANGUAGE",
    show_envvar=True,
    help="How a new store's keyword index reads text: english (stemming, English stopwords; the default) or "
    "none (no stemming, no stopwords). An existing store keeps its own; giving another is an error.",
)
@click.option(
    "--store-strategy",
    type=click.Choice(["vector", "keyword", "hybrid"], case_sensitive=False),
    default="hybrid",
    show_default=True,
    envvar="ORAMEM_STRATEGY",
    show_envvar=True,
    help="Search strategy the store is opened (and created) with; hybrid can answer all three.",
)
@click.version_option(package_name="oramem")
@click.pass_context
def cli(
    ctx: click.Context,
    db: str,
    store_id: Optional[str],
    as_json: bool,
    read_only: bool,
    embed_url: Optional[str],
    embed_model: Optional[str],
    embed_allow_http_key: bool,
    embed_max_tokens: Optional[int],
    embed_dim: Optional[int],
    embed_onnx: Optional[str],
    keyword_language: Optional[str],
    store_strategy: str,
) -> None:
    """Long-term memory for AI agents: the oramem store on an embedded SQLite file.

    Embedder: --embed-onnx for a local ONNX model, --embed-url and --embed-model for a
    service. Without them an existing store reuses the embedder it was built with (listing,
    reading, exporting and keyword search need none), and a new one uses $ORAMEM_ONNX_MODEL,
    else the default model all-MiniLM-L6-v2 (fetched once: `oramem models pull`), else the
    lexical HashEmbedder(256) with a one-line notice (offline).
    """
    source = ctx.get_parameter_source("db")
    if (ctx.invoked_subcommand not in _NO_DB_COMMANDS and not ctx.meta.get(HELP_REQUESTED)
            and db != ":memory:" and (db == "" or os.path.isdir(db)
                                      or (db.startswith("oracle://") and ctx.invoked_subcommand != "reembed"))):
        # one error for every command that opens --db (reading commands used to say "no database
        # at ", or "not an oramem SQLite database (disk I/O error)" for a directory)
        check_db_path(db, exists=bool(db), create=False)
    state = State(
        db=db,
        store_id=store_id,
        json=as_json,
        embed_url=embed_url,
        embed_model=embed_model,
        embed_dim=embed_dim,
        embed_onnx=embed_onnx,
        embed_allow_http_key=embed_allow_http_key,
        embed_max_tokens=embed_max_tokens,
        read_only=read_only,
        keyword_language=None if keyword_language is None else keyword_language.lower(),
        store_strategy=store_strategy.lower(),
        db_given=source not in (None, click.core.ParameterSource.DEFAULT),
        strategy_given=ctx.get_parameter_source("store_strategy") not in (None, click.core.ParameterSource.DEFAULT),
    )
    ctx.obj = state
    ctx.call_on_close(state.close)
    warnings.showwarning = show_warning



def main() -> None:
    """Console-script entry point: click's standalone handling, except that Ctrl-C exits
    130 without "Aborted!" and a closed stdout (``oramem export | head``) ends quietly with
    status 0 (the reader stopped reading; nothing failed)."""
    try:
        rv = cli.main(prog_name="oramem", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
            sys.exit(130)
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        quiet_stdout()
        sys.exit(0)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_stdout()
    sys.exit(rv if isinstance(rv, int) else 0)
