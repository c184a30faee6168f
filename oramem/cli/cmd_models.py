"""The ``models`` group: fetch a sentence-embedding model ahead of time, list the cache."""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from ..embedders import hub
from ..embedders.onnx import ModelNotAvailable, default_cache_dir

from .app import cli
from .group import CLIError, one_line
from .output import emit_json, render_table
from .state import State, pass_state


@cli.group(short_help="Fetch (pull) or list the local embedding models.")
def models() -> None:
    """The local sentence-embedding models, in the model cache ($ORAMEM_MODEL_CACHE, else
    $XDG_CACHE_HOME/oramem/models, else ~/.cache/oramem/models). A new store with no embedder uses the default model
    (sentence-transformers/all-MiniLM-L6-v2) and fetches it on first use; `pull` does it
    ahead of time. The server is $HF_ENDPOINT (default https://huggingface.co, any mirror
    with the Hub's file layout works); HF_HUB_OFFLINE=1 never uses the network."""


@models.command(name="pull")
@click.argument("name", required=False)
@pass_state
def models_pull(state: State, name: Optional[str]) -> None:
    """Fetch NAME (default: the default model) into the model cache, checking every file's
    SHA-256; a no-op when it is already there. NAME is a repository id (owner/name; the
    models oramem pins are fetched at their pinned revision, others at main)."""
    try:
        spec = hub.resolve(name)
    except ValueError as exc:
        raise CLIError(str(exc), 2) from None
    before = hub.is_complete(hub.model_dir(spec))
    try:
        path = hub.pull(spec, progress=sys.stderr)
    except ModelNotAvailable as exc:
        raise CLIError(one_line(exc), 1) from None
    manifest = hub.read_manifest(path) or {}
    files: dict[str, Any] = manifest.get("files") or {}
    if state.json:
        emit_json({"model": spec.repo, "revision": manifest.get("revision"), "path": str(path),
                   "already_cached": before, "files": files})
        return
    size = sum(int(f.get("size") or 0) for f in files.values())
    checked: dict[str, int] = {}
    for f in files.values():
        key = str(f.get("checked"))
        checked[key] = checked.get(key, 0) + 1
    how = ", ".join(f"{n} {k}" for k, n in sorted(checked.items()))
    verb = "already in the cache" if before else "pulled"
    click.echo(
        f"{spec.repo}@{str(manifest.get('revision'))[:12]} {verb}: {path} ({len(files)} files, {size / 1e6:.1f} MB; "
        f"SHA-256: {how})"
    )


@models.command(name="list")
@pass_state
def models_list(state: State) -> None:
    """The models in the model cache (pulled, or put there by hand)."""
    entries = hub.cached_models()
    if state.json:
        emit_json(entries)
        return
    if not entries:
        click.echo(f"no models in {default_cache_dir()} (fetch the default with `oramem models pull`)")
        return
    rows = []
    for e in entries:
        status = "ready" if e["complete"] else ("incomplete" if e["complete"] is False else "by hand")
        rows.append([e["model"], (e["revision"] or "-")[:12], status, f"{e['bytes'] / 1e6:.1f} MB", e["path"]])
    click.echo(render_table(["model", "revision", "status", "size", "path"], rows, flex=4))
