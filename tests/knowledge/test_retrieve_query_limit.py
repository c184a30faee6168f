"""KC-5.1 (left35 item 1): ``retrieve`` bounds its query. Before, a 600 KB query was embedded,
scanned whole by the first-person readers (``my_phrases``, ~0.4 s alone) and searched; the
store's search sets no length of its own (SC-6.1), so nothing stopped it. Now a query over
``MAX_QUERY_CHARS`` is a ValueError naming the limit, before any embedding, LLM call or store
read; the CLI refuses it with a usage error before it opens the store."""

from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

from oramem.cli.app import cli
from oramem.knowledge.read.run import MAX_QUERY_CHARS

from .helpers import extract


def _spy(km, store, llm, monkeypatch):
    """Counts of what a retrieve did: embeddings, store searches, LLM calls."""
    seen = {"embed": 0, "search": 0}
    embedder = store.embedder
    real_embed = embedder.embed

    def embed(texts, *, is_query=False):
        seen["embed"] += 1
        return real_embed(texts, is_query=is_query)

    monkeypatch.setattr(embedder, "embed", embed)
    for name in ("search", "search_async"):
        real = getattr(store, name)

        def counted(*a, _real=real, **k):
            seen["search"] += 1
            return _real(*a, **k)
        monkeypatch.setattr(store, name, counted)
    llm.calls.clear()
    return seen


def test_a_query_over_the_limit_is_refused_before_anything_runs(make_km, store, llm, monkeypatch):
    km = make_km(enable_reranker=True)
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes tea")]))
    assert km.write("a1", "tea", "Pedro").success
    seen = _spy(km, store, llm, monkeypatch)
    too_long = "what does Ana like " + "x" * MAX_QUERY_CHARS
    with pytest.raises(ValueError, match=rf"over the limit of {MAX_QUERY_CHARS}.*shorter query"):
        km.retrieve("a1", too_long)
    with pytest.raises(ValueError, match=rf"over the limit of {MAX_QUERY_CHARS}"):
        asyncio.run(km.retrieve_async("a1", too_long))
    with pytest.raises(ValueError, match=rf"over the limit of {MAX_QUERY_CHARS}"):
        km.retrieve("a1", " " * (MAX_QUERY_CHARS + 1))  # even a blank one: the bound comes first
    assert seen == {"embed": 0, "search": 0} and llm.calls == [], (seen, llm.calls)


def test_a_query_at_the_limit_is_answered(make_km, store, llm, monkeypatch):
    km = make_km()
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes tea")]))
    assert km.write("a1", "tea", "Pedro").success
    query = "what does Ana like? "
    query += "x" * (MAX_QUERY_CHARS - len(query))
    assert len(query) == MAX_QUERY_CHARS
    seen = _spy(km, store, llm, monkeypatch)
    r = km.retrieve("a1", query, config_overrides={"min_score": 0.0})
    assert r.config_effective and not any("limit" in w for w in r.warnings), r.warnings
    assert seen["embed"] > 0 and seen["search"] > 0, seen  # the spy sees a retrieve that runs


def test_the_cli_refuses_it_before_opening_the_store(tmp_path):
    db = tmp_path / "none.db"
    res = CliRunner().invoke(cli, ["--db", str(db), "knowledge", "retrieve", "a1", "q" * (MAX_QUERY_CHARS + 1)])
    assert res.exit_code == 2, res.output
    assert f"over the limit of {MAX_QUERY_CHARS}" in res.output, res.output
    assert not db.exists()


def test_the_query_limit_is_exported_where_a_caller_reads_it(make_km):
    """left37 item 4: a caller reads the limit as it reads the store's (``oramem.MAX_LIST_LIMIT``):
    ``oramem.knowledge.MAX_QUERY_CHARS``, listed in ``__all__``, the very bound retrieve applies.
    Before, it was only in the private ``oramem.knowledge.read.run``."""
    import oramem
    import oramem.knowledge as knowledge

    assert "MAX_LIST_LIMIT" in oramem.__all__  # the store's way, followed here
    assert "MAX_QUERY_CHARS" in knowledge.__all__
    assert knowledge.MAX_QUERY_CHARS == MAX_QUERY_CHARS == 20_000
    km = make_km()
    km.retrieve("a1", "x" * knowledge.MAX_QUERY_CHARS)
    with pytest.raises(ValueError, match=rf"over the limit of {knowledge.MAX_QUERY_CHARS}"):
        km.retrieve("a1", "x" * (knowledge.MAX_QUERY_CHARS + 1))
