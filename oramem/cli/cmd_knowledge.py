"""``oramem knowledge …``: the knowledge layer on the embedded SQLite store.

A click group meant to be registered on the top-level ``oramem`` group (``oramem/cli/app.py``),
whose context object (``State``) carries ``--db``, ``--store``, ``--json`` and the embedder
options; the store is opened through it, so the knowledge tables live in the same file and
store id.

LLM endpoint (``write`` only): ``--llm-base-url``/``--llm-model`` or the environment
variables ``ORAMEM_LLM_BASE_URL`` and ``ORAMEM_LLM_MODEL``; the key comes from
``ORAMEM_LLM_API_KEY`` (else ``OPENAI_API_KEY``, for ``api.openai.com`` only) and may be absent
for local servers. It is never accepted on the command line, so it does not land in shell
history, and never sent over plain http to another machine unless ``--llm-allow-http-key`` is given.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Optional

import click

__all__ = ["knowledge", "kg", "job_names", "run_jobs", "DETERMINISTIC_JOBS"]

NO_LLM = (
    "no LLM endpoint configured: set ORAMEM_LLM_BASE_URL and ORAMEM_LLM_MODEL "
    "(or pass --llm-base-url and --llm-model); any OpenAI-compatible /chat/completions server works "
    "(OpenAI, vLLM, llama.cpp server, Ollama /v1, LM Studio); the key is read from ORAMEM_LLM_API_KEY"
)

#: the KnowledgeConfig timeouts of the LLM steps (KC-1.7, KC-7.2), which --llm-timeout sets
LLM_STEP_TIMEOUTS = ("extraction_timeout_sec", "resolution_timeout_sec", "reconcile_timeout_sec",
                     "reranker_timeout_sec", "job_llm_timeout_sec")

#: shared by every command that talks to an LLM endpoint. Each step passes its own timeout
#: to the provider, so a provider timeout alone bounded nothing (trial32 F2): the flag sets
#: every step's timeout and bounds each request.
_LLM_TIMEOUT = click.option(
    "--llm-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
    help="Seconds an LLM call may take (each request, and the call with its retries): every step's "
         "timeout. Default: each step's own (extraction 30, reconcile and jobs 15, entity resolution and reranker 5).",
)

#: shared by every command that talks to an LLM endpoint
_LLM_ALLOW_HTTP_KEY = click.option(
    "--llm-allow-http-key", "llm_allow_http_key", is_flag=True,
    help="Allow sending the LLM API key ($ORAMEM_LLM_API_KEY; $OPENAI_API_KEY only goes to api.openai.com) "
         "over plain http to a non-loopback --llm-base-url.",
)


def _state(ctx: click.Context) -> Any:
    state = ctx.obj
    if state is None or not hasattr(state, "open"):
        raise click.UsageError("the knowledge commands run under the oramem command (oramem knowledge …)")
    return state


def _worker_command(state: Any) -> str:
    """The ``oramem kg worker`` command line that drains this invocation's queue."""
    return _command(state, "kg", "worker")


def _command(state: Any, *args: str) -> str:
    """An ``oramem`` command line on this invocation's file and store (``--db``/``--store``)."""
    import shlex

    words = ["oramem"]
    if getattr(state, "db_given", False):
        words += ["--db", state.db]
    if getattr(state, "store_id", None):
        words += ["--store", state.store_id]
    return " ".join(shlex.quote(w) for w in words + list(args))


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):  # config_effective's frozensets (extra_attribute_keys, ...)
        return sorted((_jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if hasattr(value, "value") and isinstance(getattr(value, "value"), str):
        return value.value
    return value


def _open_km(state: Any, *, create: bool, llm: Any = None, config: Any = None) -> Any:
    from ..knowledge import KnowledgeMemory
    from ..knowledge import BaseLLMProvider

    class _NoLLM(BaseLLMProvider):
        async def complete_async(self, messages, **kw):  # pragma: no cover - read commands never call it
            raise click.ClickException(NO_LLM)

    store = state.open(create=create)
    return _knowledge_memory(KnowledgeMemory, store, llm or _NoLLM(), oracle=False, config=config)


def _in_cli_words(exc: BaseException) -> str:
    """An error of the knowledge API in the running command's words: its flags and arguments
    (``as_of`` -> ``--as-of``, ``agent_id`` -> ``AGENT_ID``), as the root group says others."""
    from .group import command_flags, in_cli_words

    flags = {"speaker_name": "--speaker", **command_flags(click.get_current_context().command)}
    return in_cli_words(str(exc), flags)


def _knowledge_memory(km_class: Any, store: Any, llm: Any, *, oracle: bool, config: Any = None) -> Any:
    """``KnowledgeMemory(store, llm)``; a store without knowledge tables (a reading command
    never creates them) is refused with the command that does, not the Python policy."""
    from ..knowledge.db.schema import KnowledgeTablesMissing

    try:
        return km_class(store, llm, config=config)
    except KnowledgeTablesMissing as exc:
        store.close()
        shown = ", ".join(exc.missing[:3]) + (f" and {len(exc.missing) - 3} more" if len(exc.missing) > 3 else "")
        how = (f"`oramem db install --knowledge-store {exc.store_id} --vector-dim N` or `oramem knowledge write` "
               "creates them" if oracle else "`oramem knowledge write` creates them")
        raise click.ClickException(
            f"store {exc.store_id} has no knowledge layer yet (missing {shown}): nothing was written with "
            f"`oramem knowledge write` there; {how}, reading commands never do") from None


def _emit(state: Any, payload: Any, human: str) -> None:
    if getattr(state, "json", False):
        click.echo(json.dumps(_jsonable(payload), ensure_ascii=False, sort_keys=True))
    else:
        click.echo(human)


@click.group("knowledge")
def knowledge() -> None:
    """Knowledge graph over the store: write messages, list facts, entities and history."""


@knowledge.command("write")
@click.argument("agent_id")
@click.argument("message")
@click.option("--speaker", required=True, help="Who said the message (first person means this speaker).")
@click.option("--session", "session_id", default=None, help="Session (thread) id (default: the thread of the agent and user).")
@click.option("--user", "user_id", default=None, help="The user whose knowledge this is (KC-3.7); default: the agent's shared knowledge.")
@click.option("--occurred-at", default=None, help="ISO-8601 time the message refers to (default: now).")
@click.option("--dry-run", is_flag=True, help="Run every step, LLM included, and store nothing.")
@click.option("--background", is_flag=True, help="Queue the message for `oramem kg worker` and return at once "
                                                  "(no LLM endpoint needed here).")
@click.option("--llm-base-url", envvar="ORAMEM_LLM_BASE_URL", show_envvar=True, help="OpenAI-compatible API root.")
@click.option("--llm-model", envvar="ORAMEM_LLM_MODEL", show_envvar=True, help="Chat model name.")
@_LLM_TIMEOUT
@_LLM_ALLOW_HTTP_KEY
@click.pass_context
def write_cmd(ctx, agent_id, message, speaker, session_id, user_id, occurred_at, dry_run, background, llm_base_url, llm_model,
              llm_timeout, llm_allow_http_key) -> None:
    """Extract knowledge from MESSAGE for AGENT_ID."""
    from ..knowledge import KnowledgeMemory

    state = _state(ctx)
    if not message.strip():  # KC-4.1 makes it a no-op; said as "queued job -" it read as queued
        raise click.UsageError("MESSAGE is empty or blank; give the text of the message (nothing was written)")
    if background:
        if dry_run:
            raise click.UsageError("--dry-run runs the extraction now; it does not go with --background")
        if llm_timeout is not None:  # nothing calls the LLM here: the flag would be ignored
            raise click.UsageError("--llm-timeout bounds the extraction, which the worker runs for a queued message: "
                                   f"pass it to `{_worker_command(state)}`, not to --background")
        km = KnowledgeMemory(state.open(create=True), None)
        try:  # a bad argument: the root group says it in flags (exit 2)
            r = km.write(agent_id, message, speaker, session_id=session_id, occurred_at=occurred_at, background=True,
                         user_id=user_id)
        finally:
            km.close()
        _emit(state, r, f"queued    job {r.job_id or '-'}  event {r.event_id or '-'} (run `{_worker_command(state)}` to extract it)")
        return
    if not llm_base_url or not llm_model:
        raise click.UsageError(NO_LLM)
    llm = _llm(llm_base_url, llm_model, llm_timeout, llm_allow_http_key)
    km = _open_km(state, create=True, llm=llm, config=timeout_config(llm_timeout))
    try:
        r = km.write(agent_id, message, speaker, session_id=session_id, occurred_at=occurred_at, dry_run=dry_run,
                     user_id=user_id)
    finally:
        km.close()
    _report_write(ctx, state, r, agent_id, user_id, kept=not dry_run)


def _report_write(ctx: click.Context, state: Any, r: Any, agent_id: str, user_id: Optional[str], *, kept: bool) -> None:
    """A write's (or reprocess's) result, one line per fact, relation, degraded step and
    warning; exit 1 when it failed. A failed extraction keeps its event (KC-7.3,
    on_extraction_failure "keep_event"): the output says so and how to complete it."""
    lines = [f"event {r.event_id or '-'}  success={r.success}" + (f"  error={r.error}" if r.error else "")]
    for label, items in (("added", r.facts_added), ("updated", r.facts_updated), ("unchanged", r.facts_unchanged),
                         ("deleted", r.facts_deleted)):
        for f in items:
            lines.append(f"{label:9s} {f['fact_id'] or '(dry run)'}  {f['entity_key']}  {f['fact_text']}")
    for rel in r.relations:
        lines.append(f"relation  {rel['source_entity_key']} -{rel['rel_type']}-> {rel['target_entity_key']} ({rel['action']})")
    if r.degraded:
        lines.append(f"degraded  {', '.join(r.degraded)} fell back to deterministic rules (the LLM failed; see warnings)")
    for w in r.warnings:
        lines.append(f"warning   {w}")
    lines.append(f"tokens    {r.tokens_used.total_tokens}")
    if not r.success and kept and r.event_id:
        user = ["--user", user_id] if user_id is not None else []
        lines.append(f"kept      event {r.event_id} (extraction failed, nothing learned from it): complete it with "
                     f"`{_command(state, 'knowledge', 'reprocess', agent_id, r.event_id, *user)}` once the LLM answers")
    _emit(state, r, "\n".join(lines))
    if not r.success:
        ctx.exit(1)


@knowledge.command("reprocess")
@click.argument("agent_id")
@click.argument("event_id")
@click.option("--user", "user_id", default=None, help="The user whose event it is (KC-3.7); default: the agent's shared knowledge.")
@click.option("--llm-base-url", envvar="ORAMEM_LLM_BASE_URL", show_envvar=True, help="OpenAI-compatible API root.")
@click.option("--llm-model", envvar="ORAMEM_LLM_MODEL", show_envvar=True, help="Chat model name.")
@_LLM_TIMEOUT
@_LLM_ALLOW_HTTP_KEY
@click.pass_context
def reprocess_cmd(ctx, agent_id, event_id, user_id, llm_base_url, llm_model, llm_timeout, llm_allow_http_key) -> None:
    """Complete EVENT_ID, whose extraction failed (`knowledge write` printed "kept event ..."):
    extract it again and store what it teaches, on the event (KC-7.3)."""
    state = _state(ctx)
    if not llm_base_url or not llm_model:
        raise click.UsageError(NO_LLM)
    llm = _llm(llm_base_url, llm_model, llm_timeout, llm_allow_http_key)
    km = _open_km(state, create=False, llm=llm, config=timeout_config(llm_timeout))
    try:
        r = km.reprocess_event(agent_id, event_id, user_id=user_id)
    except ValueError as exc:  # no such event of the scope, or not a failed one
        hint = " (a user's event is reprocessed with --user ID)" if user_id is None and str(exc).startswith("no event") else ""
        raise click.UsageError(_in_cli_words(exc) + hint) from None
    finally:
        km.close()
    _report_write(ctx, state, r, agent_id, user_id, kept=True)


def _none_shared(what: str, user_id: Optional[str]) -> str:
    """The empty answer; without --user it says that a user's knowledge is read with --user
    (KC-3.8: a read without a user sees the agent's shared knowledge only, and a newcomer
    whose facts were written with user_id saw "(no facts)" and thought the write failed)."""
    if user_id is not None:
        return f"(no {what})"
    return f"(no shared {what}; a user's own {what} are listed with --user ID)"


@knowledge.command("facts")
@click.argument("agent_id")
@click.option("--entity", "entity_keys", multiple=True, help="Only facts linked to this entity key (repeatable).")
@click.option("--all", "include_inactive", is_flag=True, help="Include closed, invalidated and expired facts.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--user", "user_id", default=None, help="Read as this user: her knowledge plus the agent's shared knowledge (KC-3.8); default: shared only.")
@click.pass_context
def facts_cmd(ctx, agent_id, entity_keys, include_inactive, limit, user_id) -> None:
    """List the agent's current facts (newest first)."""
    state = _state(ctx)
    km = _open_km(state, create=False)
    try:
        rows = km.get_all(agent_id, limit=limit, entity_keys=list(entity_keys) or None, include_inactive=include_inactive,
                          user_id=user_id)
    finally:
        km.close()
    human = "\n".join(f"{f.fact_id}  {f.status:11s} {f.entity_key}  {f.fact_text}" for f in rows) or _none_shared("facts", user_id)
    _emit(state, rows, human)


@knowledge.command("entities")
@click.argument("agent_id")
@click.option("--all", "include_inactive", is_flag=True, help="Include inactive (merged) entities.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--user", "user_id", default=None, help="Read as this user: her knowledge plus the agent's shared knowledge (KC-3.8); default: shared only.")
@click.pass_context
def entities_cmd(ctx, agent_id, include_inactive, limit, user_id) -> None:
    """List the agent's entities (most recently seen first)."""
    state = _state(ctx)
    km = _open_km(state, create=False)
    try:
        rows = km.entities(agent_id, limit=limit, include_inactive=include_inactive, user_id=user_id)
    finally:
        km.close()
    human = "\n".join(
        f"{e.canonical_key:32s} {e.display_name or '':24s} facts={e.fact_count}" + (f"  aliases={', '.join(e.aliases)}" if e.aliases else "")
        for e in rows
    ) or _none_shared("entities", user_id)
    _emit(state, rows, human)


@knowledge.command("history")
@click.argument("agent_id")
@click.argument("fact_id")
@click.option("--user", "user_id", default=None, help="Read as this user: her knowledge plus the agent's shared knowledge (KC-3.8); default: shared only.")
@click.pass_context
def history_cmd(ctx, agent_id, fact_id, user_id) -> None:
    """The version chain of FACT_ID, oldest first."""
    state = _state(ctx)
    km = _open_km(state, create=False)
    try:
        rows = km.history(agent_id, fact_id, user_id=user_id)
    except ValueError as exc:  # a blank FACT_ID names no fact (SC-2.2), as a blank AGENT_ID names no agent
        raise click.UsageError(_in_cli_words(exc)) from None
    finally:
        km.close()
    if not rows:  # without --user only shared facts are read (KC-3.8): say so, as `facts` does
        hint = "" if user_id is not None else " in the shared knowledge (a user's facts are read with --user ID)"
        raise click.ClickException(f"no fact {fact_id} for agent {agent_id}{hint}")
    human = "\n".join(
        f"{f.fact_id}  {f.status:11s} valid {f.valid_from.isoformat()} .. {f.valid_to.isoformat() if f.valid_to else 'now'}  {f.fact_text}"
        for f in rows
    )
    _emit(state, rows, human)


def _llm(llm_base_url: Any, llm_model: Any, timeout: Optional[float], allow_http_key: bool) -> Any:
    """The OpenAI-compatible provider of the --llm-* options; a refused key is a usage error."""
    from ..knowledge import OpenAICompatibleProvider

    try:
        return OpenAICompatibleProvider(llm_base_url, llm_model, timeout=timeout, allow_insecure_key=allow_http_key)
    except ValueError as exc:
        raise click.UsageError(str(exc).replace("allow_insecure_key=True (CLI: --llm-allow-http-key)", "--llm-allow-http-key")) from None


def timeout_config(llm_timeout: Optional[float]) -> Any:
    """The ``KnowledgeConfig`` of ``--llm-timeout``: every LLM step's timeout set to it (None:
    the defaults). The provider gets it too, as the bound of each request."""
    if llm_timeout is None:
        return None
    from ..knowledge import KnowledgeConfig

    values: dict[str, Any] = {name: float(llm_timeout) for name in LLM_STEP_TIMEOUTS}
    return KnowledgeConfig(**values)


def _optional_llm(llm_base_url: Any, llm_model: Any, timeout: Optional[float], allow_http_key: bool = False) -> Any:
    if llm_base_url and llm_model:
        return _llm(llm_base_url, llm_model, timeout, allow_http_key)
    return None


@knowledge.command("retrieve")
@click.argument("agent_id")
@click.argument("query")
@click.option("--session", "session_id", default=None, help="Session whose notes enter the context.")
@click.option("--entity", "entity_keys", multiple=True, help="Restrict to facts linked to this entity (key, alias or slug; repeatable).")
@click.option("--as-of", default=None, help="ISO-8601: what was valid at this time.")
@click.option("--known-at", default=None, help="ISO-8601: what was known (ingested, not invalidated) at this time.")
@click.option("--directives", "include_directives", is_flag=True, help="Add the behavioural directives block (LLM).")
@click.option("--user", "user_id", default=None, help="Read as this user: her knowledge plus the agent's shared knowledge (KC-3.8); default: shared only.")
@click.option("--llm-base-url", envvar="ORAMEM_LLM_BASE_URL", show_envvar=True, help="OpenAI-compatible API root (reranker).")
@click.option("--llm-model", envvar="ORAMEM_LLM_MODEL", show_envvar=True, help="Chat model name (reranker).")
@_LLM_TIMEOUT
@_LLM_ALLOW_HTTP_KEY
@click.pass_context
def retrieve_cmd(ctx, agent_id, query, session_id, entity_keys, as_of, known_at, include_directives, user_id, llm_base_url, llm_model,
                 llm_timeout, llm_allow_http_key) -> None:
    """Ranked facts and the compressed context for QUERY (KC-5). Without an LLM endpoint the
    reranker is off."""
    from ..knowledge.read.run import check_query

    try:  # KC-5.1: an over-long query is refused before the store is opened
        check_query(query)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    state = _state(ctx)
    llm = _optional_llm(llm_base_url, llm_model, llm_timeout, llm_allow_http_key)
    if include_directives and llm is None:
        raise click.UsageError(NO_LLM)
    if llm_timeout is not None and llm is None:  # the reranker is off: nothing would use it
        raise click.UsageError(f"--llm-timeout bounds the reranker's LLM calls; without an LLM endpoint there are none ({NO_LLM})")
    km = _open_km(state, create=False, llm=llm, config=timeout_config(llm_timeout))
    try:
        r = km.retrieve(agent_id, query, session_id=session_id, entity_keys=list(entity_keys) or None, as_of=as_of,
                        known_at=known_at, include_directives=include_directives,
                        config_overrides=None if llm is not None else {"enable_reranker": False}, user_id=user_id)
    except ValueError as exc:  # in flags and arguments (``as_of must be`` -> ``--as-of must be``)
        raise click.UsageError(_in_cli_words(exc)) from None
    finally:
        km.close()
    lines = [f"{f.score:.3f}  {f.fact_id}  {f.entity_key}  {f.fact_text}" for f in r.facts] or ["(no facts)"]
    if r.context:
        lines += ["", r.context]
    lines += [f"warning   {w}" for w in r.warnings]
    _emit(state, r, "\n".join(lines))


@knowledge.command("jobs")
@click.argument("agent_id", required=False)
@click.option("--all-agents", is_flag=True, help="Run for every agent that has knowledge rows.")
@click.option("--jobs", "job_list", default=None,
              help="Comma-separated subset of: entity_importance, summary_refresh, clustering, community_detection, "
                   "consolidation, emotional_trends, memify (default: all with an LLM endpoint, else the deterministic ones).")
@click.option("--llm-base-url", envvar="ORAMEM_LLM_BASE_URL", show_envvar=True, help="OpenAI-compatible API root.")
@click.option("--llm-model", envvar="ORAMEM_LLM_MODEL", show_envvar=True, help="Chat model name.")
@_LLM_TIMEOUT
@_LLM_ALLOW_HTTP_KEY
@click.pass_context
def jobs_cmd(ctx, agent_id, all_agents, job_list, llm_base_url, llm_model, llm_timeout, llm_allow_http_key) -> None:
    """Run the background jobs (KC-6) for AGENT_ID or --all-agents; one JSON object per agent
    and scope (its shared knowledge, then each user's, KC-6.0), naming both.
    Exit code 0 when every job succeeded, 1 when some failed, 2 on bad arguments."""
    state = _state(ctx)
    if bool(agent_id) == bool(all_agents):
        raise click.UsageError("pass exactly one of AGENT_ID or --all-agents")
    llm = _optional_llm(llm_base_url, llm_model, llm_timeout, llm_allow_http_key)
    names = job_names(job_list, llm is not None)
    if llm_timeout is not None and llm is None:
        raise click.UsageError(f"--llm-timeout bounds the jobs' LLM calls; without an LLM endpoint only the deterministic "
                               f"jobs run, which make none ({NO_LLM})")
    km = _open_km(state, create=False, llm=llm, config=timeout_config(llm_timeout))
    try:
        failed = run_jobs(km, None if all_agents else agent_id, names)
    finally:
        km.close()
    if failed:
        ctx.exit(1)


#: The jobs that make no LLM call (KC-6.8): the default without an LLM endpoint, and the
#: work the PL/SQL package oramem_kg_jobs runs on Oracle.
DETERMINISTIC_JOBS = ("entity_importance", "emotional_trends", "memify")


def job_names(job_list: Any, have_llm: bool) -> list:
    """The jobs to run: the comma-separated ``job_list`` checked against ``JOB_ORDER``
    (unknown name -> ``click.UsageError``, exit 2), else every job with an LLM endpoint and
    the deterministic ones without."""
    from ..knowledge.jobs.run import JOB_ORDER

    if job_list:
        names = [j.strip() for j in job_list.split(",") if j.strip()]
        unknown = sorted(set(names) - set(JOB_ORDER))
        if unknown or not names:
            raise click.UsageError(f"unknown job(s): {', '.join(unknown) or repr(job_list)}; known: {', '.join(JOB_ORDER)}")
        return names
    return list(JOB_ORDER) if have_llm else list(DETERMINISTIC_JOBS)


def run_jobs(km: Any, agent_id: Any, names: list) -> bool:
    """Run ``names`` through ``km.run_background`` for ``agent_id`` (None: every agent with
    an event or entity row, sorted), once per scope of the agent (KC-6.0), and print one JSON
    object per agent and scope. True when some job
    failed. Shared by ``oramem knowledge jobs`` and ``oramem kg run-jobs``."""
    import sqlalchemy as sa

    failed = False
    try:
        if agent_id is None:
            t = km.runtime.tables
            with km.runtime.backend.read() as conn:
                agents = sorted({r[0] for tab in (t.event, t.entity) for r in conn.execute(sa.select(tab.c.agent_id).distinct())})
        else:
            agents = [agent_id]
        for a in agents:
            # KC-6.0: once per scope (the shared knowledge, then each user's)
            for u in km.scopes(a):
                r = km.run_background(a, jobs=names, user_id=u)
                failed = failed or bool(r.errors)
                click.echo(json.dumps({"agent_id": a, "user_id": u, **_jsonable(r)}, ensure_ascii=False, sort_keys=True))
    except ValueError as exc:
        raise click.UsageError(_in_cli_words(exc)) from None
    return failed


# ----------------------------------------------------------------------------- oramem kg (KC-6.8)
def _check_store_id(store_id: str) -> str:
    from ..normalize import validate_store_id

    try:
        return validate_store_id(store_id)
    except ValueError as exc:  # "memory_store_id 'x' is invalid" is the flag's own value here
        raise click.BadParameter(str(exc).replace("memory_store_id ", "", 1), param_hint="--store-id") from None


def _password(password_stdin: bool) -> str:
    """The Oracle password: the first line of stdin with ``--password-stdin``, else
    ``ORAMEM_PASSWORD``; never an option value (it would land in shell history)."""
    import os
    import sys

    if password_stdin:
        line = sys.stdin.readline()
        if not line:
            raise click.UsageError("--password-stdin given but stdin is empty")
        return line.rstrip("\r\n")
    pw = os.environ.get("ORAMEM_PASSWORD")
    if pw is None:
        raise click.UsageError("no password: set ORAMEM_PASSWORD or pass --password-stdin (the password is never an option)")
    return pw


def _check_target(dsn: Any, user: Any, sqlite: Any, password_stdin: bool) -> None:
    if dsn and sqlite:
        raise click.UsageError("pass exactly one of --dsn (Oracle) or --sqlite PATH, not both")
    if dsn and not user:
        raise click.UsageError("--dsn needs --user")
    if not dsn and (user or password_stdin):
        raise click.UsageError("--user and --password-stdin go with --dsn, not a SQLite file")
    if dsn:
        from ..oracle_logon import dsn_credentials_problem

        problem = dsn_credentials_problem(dsn)
        if problem:  # refused before a password is read (dba33 F1)
            raise click.UsageError(problem)


def _target_defaults(dsn: Any, sqlite: Any, store_id: Any) -> tuple:
    """(sqlite path, store id) with the root group's defaults filled in, as every other
    command has them: without --dsn or --sqlite the SQLite file is ``oramem --db``
    (``$ORAMEM_DB``, else ./oramem.db), and without --store-id the store is ``oramem
    --store`` (``$ORAMEM_STORE``), else the default store."""
    from ..normalize import DEFAULT_STORE_ID

    ctx = click.get_current_context(silent=True)
    state = ctx.find_root().obj if ctx is not None else None
    if not dsn and not sqlite and state is not None and getattr(state, "db", None):
        sqlite = state.db
    if store_id is None:
        store_id = getattr(state, "store_id", None) or DEFAULT_STORE_ID
    return sqlite, store_id


def _embedder(embed_url: Any, embed_model: Any, dim: Any) -> Any:
    """The store's embedder: the OpenAI-compatible service when given, else HashEmbedder of
    the store's dimension (the deterministic jobs never embed)."""
    from ..embedders import HashEmbedder, OpenAICompatibleEmbedder

    if embed_url or embed_model:
        if not (embed_url and embed_model):
            raise click.UsageError("--embed-url and --embed-model go together")
        return OpenAICompatibleEmbedder(embed_model, base_url=embed_url, dimension=dim)
    return HashEmbedder(dim or 256)


def _open_sqlite_store(path: str, sid: str, embed_url: Any, embed_model: Any) -> Any:
    import os

    from .. import SQLiteMemoryStore
    from ..sqlite import admin as sqlite_admin
    from ..types import SchemaPolicy

    if path == ":memory:" or not os.path.exists(path):
        raise click.UsageError(f"no database at {path} (name the SQLite file with oramem --db PATH or --sqlite PATH, "
                               "or an Oracle schema with --dsn and --user)")
    row = sqlite_admin.list_stores(path).get(sid)
    if row is None:
        raise click.UsageError(f"no store {sid!r} in {path} (stores: {', '.join(sorted(sqlite_admin.list_stores(path))) or 'none'}; "
                               "name one with --store-id or oramem --store)")
    if not sqlite_admin.knowledge_tables_exist(path, sid):
        from .group import CLIError

        raise CLIError(f"store {sid} in {path} has no knowledge layer yet: nothing was written with "
                       "`oramem knowledge write` (or KnowledgeMemory) there")
    embedder = None
    if not (embed_url or embed_model):
        # the embedder the store records it was written with (a worker embeds messages)
        from ..embedders.defaults import embedder_for
        from ..embedders.identity import decode_identity

        embedder = embedder_for(decode_identity(row.get("embedder")))
    return SQLiteMemoryStore(path, embedder=embedder or _embedder(embed_url, embed_model, row.get("vector_dim")),
                             schema_policy=SchemaPolicy.REQUIRE_EXISTING, search_strategy=row["capability"],
                             memory_store_id=sid)


def _oracle_pool(dsn: str, user: str, password: str) -> Any:
    """A thin-mode python-oracledb pool (no Instant Client), logged on once here so that a failed
    logon is one line saying what to do (dba33 F3: it was python-oracledb's traceback, exit 1)."""
    import oracledb

    from ..oracle_logon import logon_failure
    from .group import CLIError

    try:
        pool = oracledb.create_pool(user=user, password=password, dsn=dsn, min=1, max=2, increment=1)
    except Exception as exc:
        raise CLIError(logon_failure(exc, user, dsn, password), 1) from None
    try:
        pool.acquire().close()
    except Exception as exc:
        pool.close(force=True)
        raise CLIError(logon_failure(exc, user, dsn, password), 1) from None
    return pool


def _open_oracle_store(pool: Any, sid: str, embed_url: Any, embed_model: Any) -> Any:
    from ..oracle.admin import ADMIN_CALLS
    from ..oracle.admin import call_plsql as _call
    from ..store import OracleDBMemoryStore
    from ..types import SchemaPolicy

    with pool.acquire() as conn:
        stores = {s["memory_store_id"]: s for s in json.loads(_call(conn, ADMIN_CALLS["list_stores"]) or "[]")}
    row = stores.get(sid)
    if row is None:
        raise click.UsageError(f"--store-id: no store {sid!r} in this schema (stores: {', '.join(sorted(stores)) or 'none'})")
    # a hybrid store answers a vector open (no in-database model needed for the jobs)
    strategy = "keyword" if row.get("vector_dim") is None else "vector"
    return OracleDBMemoryStore(_embedder(embed_url, embed_model, row.get("vector_dim")), pool,
                               schema_policy=SchemaPolicy.REQUIRE_EXISTING, search_strategy=strategy,
                               memory_store_id=sid)


@click.group("kg")
def kg() -> None:
    """Knowledge-graph maintenance on a store named by --store-id (default: oramem --store,
    else the default store; install-scheduler has no default and needs it), on Oracle (--dsn/--user; password from ORAMEM_PASSWORD or
    --password-stdin) or on a SQLite file (--sqlite, default: oramem --db)."""


_TARGET = [
    click.option("--dsn", default=None, help="Oracle connect string (thin mode), e.g. host:1521/FREEPDB1."),
    click.option("--user", default=None, help="Oracle user (with --dsn)."),
    click.option("--password-stdin", is_flag=True, help="Read the Oracle password from the first line of stdin "
                                                       "(else ORAMEM_PASSWORD)."),
]


def _target(fn: Any) -> Any:
    for opt in reversed(_TARGET):
        fn = opt(fn)
    return fn


@kg.command("run-jobs")
@_target
@click.option("--sqlite", "sqlite_path", default=None, help="SQLite database file holding the store (default: oramem --db).")
@click.option("--store-id", default=None, help="Id of the store (its tables are <ID>_KG_*; default: oramem --store, else the default store).")
@click.option("--agent-id", default=None, help="Run for this agent.")
@click.option("--all-agents", is_flag=True, help="Run for every agent that has an event or entity row.")
@click.option("--jobs", "job_list", default=None,
              help="Comma-separated subset of: entity_importance, summary_refresh, clustering, community_detection, "
                   "consolidation, emotional_trends, memify (default: all with an LLM endpoint, else the deterministic ones).")
@click.option("--llm-base-url", default=None, help="OpenAI-compatible API root (with --llm-model).")
@click.option("--llm-model", default=None, help="Chat model name (with --llm-base-url).")
@_LLM_TIMEOUT
@_LLM_ALLOW_HTTP_KEY
@click.option("--embed-url", default=None, help="OpenAI-compatible embedding service the store was written with.")
@click.option("--embed-model", default=None, help="Embedding model (with --embed-url).")
@click.pass_context
def run_jobs_cmd(ctx, dsn, user, password_stdin, sqlite_path, store_id, agent_id, all_agents, job_list, llm_base_url,
                 llm_model, llm_timeout, llm_allow_http_key, embed_url, embed_model) -> None:
    """Run the background jobs (KC-6) on one store; one JSON object per agent and scope (its
    shared knowledge, then each user's, KC-6.0) on stdout.
    Exit code 0 when every job succeeded, 1 when some job failed, 2 on bad arguments."""
    _check_target(dsn, user, sqlite_path, password_stdin)
    sqlite_path, store_id = _target_defaults(dsn, sqlite_path, store_id)
    sid = _check_store_id(store_id)
    if bool(agent_id) == bool(all_agents):
        raise click.UsageError("pass exactly one of --agent-id A or --all-agents")
    if bool(llm_base_url) != bool(llm_model):
        raise click.UsageError("--llm-base-url and --llm-model go together")
    llm = _optional_llm(llm_base_url, llm_model, llm_timeout, llm_allow_http_key)
    names = job_names(job_list, llm is not None)
    if llm is None:
        needs = [n for n in names if n not in DETERMINISTIC_JOBS]
        if needs:
            raise click.UsageError(f"job(s) {', '.join(needs)} call an LLM: pass --llm-base-url and --llm-model")
        if llm_timeout is not None:
            raise click.UsageError("--llm-timeout bounds the jobs' LLM calls; without --llm-base-url and --llm-model only "
                                   "the deterministic jobs run, which make none")
    failed = _with_km(dsn, user, password_stdin, sqlite_path, sid,
                      lambda km: run_jobs(km, None if all_agents else agent_id, names),
                      llm=llm or _open_km_nollm(), embed_url=embed_url, embed_model=embed_model,
                      config=timeout_config(llm_timeout))
    if failed:
        ctx.exit(1)


def _open_km_nollm() -> Any:
    from ..knowledge import BaseLLMProvider

    class _NoLLM(BaseLLMProvider):
        async def complete_async(self, messages, **kw):  # pragma: no cover - deterministic jobs never call it
            raise click.ClickException(NO_LLM)

    return _NoLLM()


#: ORA- codes meaning "no CREATE JOB privilege" (SC-5.5: warn and continue).
_NO_JOB_PRIVILEGE = (1031, 27486)


@kg.command("install-scheduler")
@_target
@click.option("--store-id", required=True, help="Id of the store (its tables are <ID>_KG_*); required: this command has no default store.")
@click.option("--every-hours", type=click.IntRange(1, 168), default=4, show_default=True,
              help="Run the deterministic jobs every N hours.")
@click.pass_context
def install_scheduler_cmd(ctx, dsn, user, password_stdin, store_id, every_hours) -> None:
    """Create (or replace) the DBMS_SCHEDULER job that runs oramem_kg_jobs.run_deterministic
    (entity importance, memify steps 1-3 and 5, emotional trends) for every agent of the
    store. Oracle only. Without the CREATE JOB privilege it warns and exits 0 (SC-5.5)."""
    import oracledb

    from ..oracle.admin import call_plsql as _call
    from ..oracle.calls import KG_JOB_CALLS

    if not dsn or not user:
        raise click.UsageError("install-scheduler runs on Oracle: pass --dsn and --user")
    sid = _check_store_id(store_id)
    password = _password(password_stdin)
    conn = oracledb.connect(user=user, password=password, dsn=dsn)
    try:
        try:
            _call(conn, KG_JOB_CALLS["install_scheduler"], in_store_id=sid, in_every_hours=every_hours)
        except Exception as exc:  # noqa: BLE001 - only the missing-privilege codes are swallowed
            code = getattr(exc, "oracle_code", None)
            if code in _NO_JOB_PRIVILEGE:
                click.echo(f"Warning: no scheduler job for store {sid}: the CREATE JOB privilege is missing "
                           f"(ORA-{code:05d}); run `oramem kg run-jobs` from cron instead", err=True)
                return
            raise
    finally:
        conn.close()
    click.echo(json.dumps({"store_id": sid, "job_name": scheduler_job_name(sid), "every_hours": every_hours}, sort_keys=True))


def scheduler_job_name(store_id: str) -> str:
    """Name of the store's scheduler job, as oramem_kg_jobs.install_scheduler creates it."""
    return f"ORAMEM_KG_{store_id.upper()}"


# ----------------------------------------------------------------------------- the extraction queue
def _open_target(dsn: Any, user: Any, password_stdin: bool, sqlite_path: Any, store_id: str, embed_url: Any = None,
                 embed_model: Any = None) -> tuple:
    """(store, pool or None) of ``--dsn/--user`` or ``--sqlite`` and ``--store-id``."""
    _check_target(dsn, user, sqlite_path, password_stdin)
    sqlite_path, store_id = _target_defaults(dsn, sqlite_path, store_id)
    sid = _check_store_id(store_id)
    if dsn:
        pool = _oracle_pool(dsn, user, _password(password_stdin))
        try:
            return _open_oracle_store(pool, sid, embed_url, embed_model), pool
        except BaseException:
            pool.close()
            raise
    return _open_sqlite_store(sqlite_path, sid, embed_url, embed_model), None


def _with_km(dsn, user, password_stdin, sqlite_path, store_id, fn, *, llm=None, embed_url=None, embed_model=None,
             config=None):
    from ..knowledge import KnowledgeMemory

    store, pool = _open_target(dsn, user, password_stdin, sqlite_path, store_id, embed_url, embed_model)
    try:
        km = _knowledge_memory(KnowledgeMemory, store, llm, oracle=pool is not None, config=config)
        try:
            return fn(km)
        finally:
            km.close()
    finally:
        store.close()
        if pool is not None:
            pool.close()


_QUEUE_TARGET = [
    click.option("--sqlite", "sqlite_path", default=None, help="SQLite database file holding the store (default: oramem --db)."),
    click.option("--store-id", default=None, help="Id of the store (its queue is <ID>_KG_JOB; default: oramem --store, else the default store)."),
]


def _queue_target(fn: Any) -> Any:
    for opt in reversed(_QUEUE_TARGET):
        fn = opt(fn)
    return _target(fn)


def _agent_option(agent_id: Any) -> Any:
    from ..knowledge.text import validate_agent_id

    if agent_id is None:
        return None
    try:
        validate_agent_id(agent_id)
    except (TypeError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="--agent-id") from None
    return agent_id


def _job_line(j: Any) -> str:
    err = f"  error: {j.last_error}" if j.last_error else ""
    user = j.user_id if j.user_id is not None else "(shared)"  # whose write: trial32 F4
    return f"{j.id}  {j.status:7s}  agent={j.agent_id}  user={user}  attempts={j.attempts}/{j.max_attempts}  created={j.created_at.isoformat()}{err}"


@kg.command("worker")
@_queue_target
@click.option("--llm-base-url", envvar="ORAMEM_LLM_BASE_URL", show_envvar=True, help="OpenAI-compatible API root.")
@click.option("--llm-model", envvar="ORAMEM_LLM_MODEL", show_envvar=True, help="Chat model name.")
@_LLM_TIMEOUT
@_LLM_ALLOW_HTTP_KEY
@click.option("--embed-url", default=None, help="OpenAI-compatible embedding service the store was written with "
                                                "(default: the embedder the store records).")
@click.option("--embed-model", default=None, help="Embedding model (with --embed-url).")
@click.option("--once", is_flag=True, help="Process the jobs that are due, then exit (else run until SIGINT/SIGTERM).")
@click.option("--max-jobs", type=click.IntRange(min=1), default=None, help="Exit after this many jobs.")
@click.option("--lease-seconds", type=click.FloatRange(min=1.0), default=300.0, show_default=True,
              help="A job whose worker stops is taken over by another worker after this long (renewed while it runs).")
@click.option("--poll-interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Seconds between looks at an empty queue.")
@click.option("--backoff-base", type=click.FloatRange(min=0.01), default=2.0, show_default=True,
              help="A failed attempt is retried after min(base * 2^(attempt-1), --backoff-max) seconds.")
@click.option("--backoff-max", type=click.FloatRange(min=0.01), default=300.0, show_default=True)
@click.pass_context
def worker_cmd(ctx, dsn, user, password_stdin, sqlite_path, store_id, llm_base_url, llm_model, llm_timeout,
               llm_allow_http_key, embed_url, embed_model, once, max_jobs, lease_seconds, poll_interval, backoff_base, backoff_max) -> None:
    """Extract the messages queued by write(..., background=True) / `oramem knowledge write
    --background`. Prints one JSON object (what it did) when it stops; exit 0, or 1 when a
    job failed for good in this run."""
    import signal

    from ..knowledge.jobs.queue import StopFlag

    if not llm_base_url or not llm_model:
        raise click.UsageError(NO_LLM)
    llm = _llm(llm_base_url, llm_model, llm_timeout, llm_allow_http_key)
    flag = None if once else StopFlag(poll_interval)

    def run(km: Any) -> Any:
        if flag is not None:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: flag.stopping.set())
        # the sync twin: the jobs run on the instance's own loop (no loop of the command's own)
        return km.process_jobs(max_jobs=max_jobs, lease_seconds=lease_seconds, backoff_base=backoff_base,
                               backoff_max=backoff_max, _stop=flag)

    report = _with_km(dsn, user, password_stdin, sqlite_path, store_id, run, llm=llm, embed_url=embed_url,
                      embed_model=embed_model, config=timeout_config(llm_timeout))
    click.echo(json.dumps(_jsonable(report), sort_keys=True))
    if report.failed:
        ctx.exit(1)


@kg.group("jobs")
def jobs_group() -> None:
    """The background extraction queue: status, list, retry."""


@jobs_group.command("status")
@_queue_target
@click.option("--agent-id", default=None, help="Only this agent's jobs.")
@click.option("--errors", type=click.IntRange(min=0), default=5, show_default=True, help="How many recent errors to show.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def jobs_status_cmd(dsn, user, password_stdin, sqlite_path, store_id, agent_id, errors, as_json) -> None:
    """Jobs by state, the oldest pending one, and the last errors."""
    agent = _agent_option(agent_id)
    st = _with_km(dsn, user, password_stdin, sqlite_path, store_id, lambda km: km.job_status(agent, errors=errors))
    if as_json:
        click.echo(json.dumps(_jsonable(st), sort_keys=True))
        return
    lines = ["  ".join(f"{k}={v}" for k, v in st.counts.items())]
    if st.oldest_pending_at is not None:
        lines.append(f"oldest pending: {st.oldest_pending_at.isoformat()} ({st.oldest_pending_age_s:.0f} s ago)")
    for j in st.last_errors:
        lines.append(_job_line(j))
    click.echo("\n".join(lines))


@jobs_group.command("list")
@_queue_target
@click.option("--agent-id", default=None, help="Only this agent's jobs.")
@click.option("--status", "state", type=click.Choice(["pending", "running", "done", "failed"]), default=None)
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON array.")
def jobs_list_cmd(dsn, user, password_stdin, sqlite_path, store_id, agent_id, state, limit, as_json) -> None:
    """Jobs, oldest first (the message text is not shown)."""
    agent = _agent_option(agent_id)
    rows = _with_km(dsn, user, password_stdin, sqlite_path, store_id, lambda km: km.jobs(agent, status=state, limit=limit))
    if as_json:
        click.echo(json.dumps([_jsonable(j) for j in rows], sort_keys=True))
        return
    click.echo("\n".join(_job_line(j) for j in rows) if rows else "no jobs")


@jobs_group.command("retry")
@_queue_target
@click.option("--job-id", "job_ids", multiple=True, help="A failed job to put back to pending (repeatable).")
@click.option("--all-failed", is_flag=True, help="Every failed job (of --agent-id, if given).")
@click.option("--agent-id", default=None, help="With --all-failed: only this agent's jobs.")
def jobs_retry_cmd(dsn, user, password_stdin, sqlite_path, store_id, job_ids, all_failed, agent_id) -> None:
    """Put failed jobs back to pending with a fresh set of attempts; prints how many."""
    if bool(job_ids) == bool(all_failed):
        raise click.UsageError("pass --job-id ID (repeatable) or --all-failed")
    if agent_id and not all_failed:
        raise click.UsageError("--agent-id goes with --all-failed")
    agent = _agent_option(agent_id)
    n = _with_km(dsn, user, password_stdin, sqlite_path, store_id,
                 lambda km: km.retry_jobs(list(job_ids) if job_ids else None, agent_id=agent))
    click.echo(json.dumps({"retried": n}))
