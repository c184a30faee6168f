"""Shared pieces of the read-side and jobs tests: a hybrid store (so the keyword signal is
available), and small writers."""

from __future__ import annotations

from oramem import SQLiteMemoryStore
from oramem.testing import HashEmbedder
from oramem.types import SearchStrategy

from .helpers import extract


def hybrid_store(tmp_path, clock):
    return SQLiteMemoryStore(str(tmp_path / "kg.db"), embedder=HashEmbedder(384), clock=clock,
                             search_strategy=SearchStrategy.HYBRID)


def write_facts(km, llm, entities, facts, relations=(), agent="a1", message=None, **kw):
    llm.route("extract", extract(entities, facts, relations))
    return km.write(agent, message or "; ".join(f[1] for f in facts) or "hello there", "Pedro", **kw)


def ids_of(result) -> list[str]:
    return [f.fact_id for f in result.facts]
