"""The ``search`` command."""

from __future__ import annotations

from typing import Any, Optional

import click

from ..types import NOT_SET

from .app import cli
from .group import CLIError
from .output import parse_json_option, split_types, record_to_dict, emit_json, results_table, full_option, scope_options
from .state import State, pass_state


# ----------------------------------------------------------------------------- search
#: how people coming from other memory libraries write the result count (mem0 ``limit``,
#: Chroma ``n_results``, LangChain ``k``/``top_k``); ``--limit`` is an alias of -k, the others
#: are refused with the flag to use (click suggested ``--rrf-k`` for ``--k``)
_COUNT_SPELLINGS = ("--k", "--top-k", "--top_k", "--topk", "--n-results", "--n_results", "-n")


class SearchCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if exc.option_name.split("=", 1)[0] not in _COUNT_SPELLINGS:
                raise
            raise click.NoSuchOption(
                exc.option_name, f"No such option '{exc.option_name}': the number of results is -k N (or --limit N).",
                ctx=ctx) from None


@cli.command(cls=SearchCommand, short_help="Search (vector, keyword or hybrid).")
@click.argument("query")
@click.option("-k", "--limit", "k", default=10, show_default=True, type=click.IntRange(min=1), help="Number of results.")
@click.option("--strategy", type=click.Choice(["vector", "keyword", "hybrid"], case_sensitive=False), help="Per-call strategy (default: the store's).")
@scope_options
@click.option("--exact-thread", is_flag=True, help="Without --thread: only records with no thread.")
@click.option("--exact-user", is_flag=True, help="Without --user: only records with no user.")
@click.option("--exact-agent", is_flag=True, help="Without --agent: only records with no agent.")
@click.option("--types", multiple=True, help="Record types to search (comma-separated or repeated).")
@click.option("--filter", "metadata_filter", help="Metadata filter as a JSON object.")
@full_option
@click.option("--fusion", type=click.Choice(["gated-rrf", "score", "rrf"], case_sensitive=False),
              help="Hybrid fusion rule: gated-rrf (default; reciprocal-rank fusion whose keyword weight counts only "
                   "when the keyword leg's best match stands out and holds several of the query's words), score "
                   "(relative score fusion) or rrf (reciprocal-rank fusion without the gate).")
@click.option("--vector-weight", type=click.FloatRange(min=0), help="Hybrid fusion: weight of the vector leg (default 1.0).")
@click.option("--keyword-weight", type=click.FloatRange(min=0), help="Hybrid fusion: weight of the keyword leg (default 3.0 for gated-rrf and score, 0.7 for rrf).")
@click.option("--rrf-k", type=click.FloatRange(min=0, min_open=True), help="Hybrid fusion gated-rrf or rrf: reciprocal-rank constant (default 1 for gated-rrf, 10 for rrf; larger flattens the ranks).")
@click.option("--fusion-depth", type=click.IntRange(min=1), help="Hybrid fusion: candidates per ranking (default max(10*k, 200)).")
@click.option("--max-distance", type=click.FloatRange(min=0), help="Vector search only: leave out records farther than "
              "this cosine distance (0 to 2, e.g. 0.5); fewer than -k may come back.")
@pass_state
def search(
    state: State,
    query: str,
    k: int,
    strategy: Optional[str],
    thread_id: Optional[str],
    user_id: Optional[str],
    agent_id: Optional[str],
    exact_thread: bool,
    exact_user: bool,
    exact_agent: bool,
    types: tuple[str, ...],
    metadata_filter: Optional[str],
    full: bool,
    fusion: Optional[str],
    vector_weight: Optional[float],
    keyword_weight: Optional[float],
    rrf_k: Optional[float],
    fusion_depth: Optional[int],
    max_distance: Optional[float],
) -> None:
    """Search the store for QUERY; prints rank, distance, type, scope and content.

    Hybrid search fuses the best fusion-depth candidates of the vector and keyword legs. By
    default (--fusion gated-rrf) it sums vector-weight / (rrf-k + vector rank) + gate *
    keyword-weight / (rrf-k + keyword rank), the gate in [0, 1] growing with how far the
    keyword leg's best match stands out from its other matches and with how many of the
    query's words it holds (one word: 0; four, or all of a shorter query's: full; 0 leaves
    the vector order as it is). --fusion score puts each leg's scores on [0, 1] for the query (vector similarity
    relative to its best and 20th candidate, keyword score relative to its best) and sums
    them with the weights (the keyword one gated the same way); --fusion rrf is the ungated
    reciprocal-rank sum."""
    flt = parse_json_option(metadata_filter, "--filter", allow_null=False)
    options: dict[str, Any] = {"fusion": fusion.lower() if fusion else None, "vector_weight": vector_weight,
                               "keyword_weight": keyword_weight, "rrf_k": rrf_k, "depth": fusion_depth}
    given = {name: value for name, value in options.items() if value is not None}
    if rrf_k is not None and (fusion or "gated-rrf").lower() == "score":
        raise CLIError("--rrf-k applies to --fusion gated-rrf or rrf only; use one of those or drop --rrf-k", 2)
    if given:
        from ..sqlite import HybridConfig

        if given.get("vector_weight", 1.0) == 0 and given.get("keyword_weight", 0.5) == 0:
            raise CLIError("--vector-weight and --keyword-weight are both 0; use --strategy vector or keyword instead", 2)
        state.hybrid = HybridConfig(**given)
    store = state.open(create=False, reading=True)
    effective = (strategy or store.search_strategy.value).lower()
    if given and effective != "hybrid":
        flags = ", ".join("--fusion-depth" if name == "depth" else f"--{name.replace('_', '-')}" for name in given)
        one = len(given) == 1
        raise CLIError(f"{flags} {'applies' if one else 'apply'} only to hybrid search, and this search is {effective}; "
                       f"add --strategy hybrid or drop {'it' if one else 'them'}", 2)
    if max_distance is not None and effective != "vector":
        raise CLIError(f"--max-distance bounds vector distances, and this search is {effective} (keyword and hybrid "
                       "distances rank results within one search); add --strategy vector or drop --max-distance", 2)
    kwargs: dict[str, Any] = dict(
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        exact_thread_match=exact_thread,
        exact_user_match=exact_user,
        exact_agent_match=exact_agent,
        record_types=split_types(types),
        metadata_filter=None if flt is NOT_SET else flt,
    )
    if strategy:
        kwargs["strategy"] = strategy.lower()
    if max_distance is not None:
        kwargs["max_distance"] = max_distance
    results = store.search(query, k, **kwargs)
    if state.json:
        emit_json([{"rank": i, "distance": d, "record": record_to_dict(r)} for i, (r, d) in enumerate(results, 1)])
    elif not results:
        click.echo("no results")
    else:
        click.echo(results_table(results, with_id=True, full=full))
