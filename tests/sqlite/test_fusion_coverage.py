"""Issue 23: gated-rrf's coverage gate. The keyword leg's strength gate is weighed by how
many of the query's words the keyword leg's first record holds: a match on one word, however
rare, does not lift a record over the vector leg's winner; a record holding the query's words
does. Counted by the keyword index itself, inside the search's scope (user B's search is never
shaped by user A's records)."""

from __future__ import annotations

import numpy as np
import pytest

from oramem.requests import Scope, ScopeMatch, SearchRequest
from oramem.sqlite import HybridConfig
from oramem.sqlite.engine import SQLiteEngine
from oramem.sqlite.keyword import (
    GATED_COVERAGE_FULL, GATED_Z_FLOOR, GATED_Z_SPAN, coverage_factor, fuse, keyword_scores,
)
from oramem.types import SearchStrategy

from .conftest import vec
from .test_fusion_properties import kw, order, vl


@pytest.mark.parametrize("held, terms, factor", [
    (0, 5, 0.0), (1, 5, 0.0), (2, 5, 1 / 3), (3, 5, 2 / 3), (4, 5, 1.0), (9, 9, 1.0),
    (1, 1, 0.0), (2, 2, 1.0), (2, 3, 0.5), (3, 3, 1.0), (1, 2, 0.0),
])
def test_coverage_factor(held, terms, factor):
    assert GATED_COVERAGE_FULL == 4
    assert coverage_factor(held, terms) == pytest.approx(factor)


# the vector leg's clear winner is 1; the keyword leg's best (3) stands far out of many weak matches
VECTOR = vl((1, 0.70), (2, 0.40), (3, 0.39), (4, 0.38), (5, 0.37))
STRONG = kw((3, 12.0), *[(10 + i, 1.0) for i in range(40)])


def test_one_word_held_closes_the_gate():
    assert keyword_scores(STRONG, GATED_Z_FLOOR, GATED_Z_SPAN)[1] == 1.0
    assert order(fuse(VECTOR, STRONG))[0] == 3  # legs alone: the keyword leader comes first
    fused = fuse(VECTOR, STRONG, coverage=lambda: (1, 4))
    # gate 0: the vector ranking with its rrf distances, the keyword-only records last at 1
    assert fused[:5] == [(key, round(1 - (1 / (1 + rank)) / 0.5, 12)) for rank, key in enumerate([1, 2, 3, 4, 5], start=1)]
    assert fused[5:] == [(10 + i, 1.0) for i in range(40)]


def test_the_query_words_held_open_it_in_steps():
    full = fuse(VECTOR, STRONG)
    assert fuse(VECTOR, STRONG, coverage=lambda: (4, 6)) == full
    assert fuse(VECTOR, STRONG, coverage=lambda: (3, 3)) == full
    half = dict(fuse(VECTOR, STRONG, coverage=lambda: (2, 3)))
    # gate 1/2: record 3 (vector rank 3, keyword rank 1): score 1/4 + 1.5/2, best (1 + 1.5) / 2
    assert half[3] == round(1 - (1 / 4 + 1.5 / 2) / (2.5 / 2), 12)


def test_the_count_is_asked_only_when_it_can_matter():
    def never():
        raise AssertionError("coverage asked for")

    weak = kw(*[(k, 2.0 + 0.01 * k) for k in (5, 4, 3, 2)])
    assert keyword_scores(weak, GATED_Z_FLOOR, GATED_Z_SPAN)[1] == 0.0
    fuse(VECTOR, weak, coverage=never)                       # strength gate closed
    fuse([], STRONG, coverage=never)                         # no vector leg: the keyword ranking as it is
    fuse(VECTOR, STRONG, HybridConfig(0.0, 1.0), coverage=never)
    fuse(VECTOR, [], coverage=never)
    for fusion in ("score", "rrf"):                          # the other rules have no such gate
        legs = (VECTOR, STRONG) if fusion == "score" else ([k for k, _ in VECTOR], [k for k, _ in STRONG])
        fuse(*legs, HybridConfig(fusion=fusion), coverage=never)


def _request(query: str, user: Scope = Scope.any(), k: int = 5) -> SearchRequest:
    vector = np.asarray(vec(1, 2), dtype=np.float32)
    return SearchRequest(SearchStrategy.HYBRID, k, query, vector, Scope.any(), user, Scope.any(), ("memory",), None)


def _fill(store, user: str, prefix: str) -> None:
    # "a": the vector match, no query word; "z": the only record with "passport" (a rare
    # word: a keyword match that stands far out, strength gate 1); 40 weak matches on
    # "kept"; 80 records with neither word
    store.add(["travel papers are in the desk drawer", "passport renewal reminder for march"]
              + [f"I kept the receipt number {i}" for i in range(40)] + [f"a note about groceries number {i}" for i in range(80)],
              record_type="memory",
              record_ids=[f"{prefix}a", f"{prefix}z"] + [f"{prefix}w{i}" for i in range(40)] + [f"{prefix}f{i}" for i in range(80)],
              user_ids=user, thread_ids="shared",
              embeddings=[vec(1, 2), vec(3)] + [vec(4 + i % 4) for i in range(120)])


def test_store_one_rare_word_does_not_beat_the_vector_winner(make):
    s = make(memory_store_id="COV", search_strategy="hybrid")
    _fill(s, "bob", "b")
    hits = [r.id for r, _ in s._engine.search(_request("where is my passport kept"))]
    assert hits[0] == "ba"
    with s._engine._read("search") as (conn, t, catalog):
        (seq,) = conn.execute(f"SELECT seq FROM {t.records} WHERE id = 'bz'").fetchone()
        assert SQLiteEngine._terms_held(conn, t, seq, _request("where is my passport kept"), catalog) == (1, 2)
    # the same record holding both words is a keyword match worth following
    s.add(["my passport is kept in the safe"], record_type="memory", record_ids=["bk"], user_ids="bob",
          thread_ids="shared", embeddings=[vec(6)])
    assert [r.id for r, _ in s._engine.search(_request("where is my passport kept"))][0] == "bk"


def test_store_words_are_counted_by_the_index_tokenizer(make):
    s = make(memory_store_id="COVSTEM", search_strategy="hybrid")
    s.add(["Otters were swimming under the old stone bridges"], record_type="memory", record_ids=["o"],
          embeddings=[vec(1)])
    with s._engine._read("search") as (conn, t, catalog):
        (seq,) = conn.execute(f"SELECT seq FROM {t.records} WHERE id = 'o'").fetchone()
        # porter stems: otter/otters, swims/swimming, bridge/bridges; "river" is not there
        assert SQLiteEngine._terms_held(conn, t, seq, _request("an otter swims to the bridge by the river"),
                                        catalog) == (3, 4)


def test_store_user_b_is_never_shaped_by_user_a(make, tmp_path):
    # alice holds a record with every query word; bob's keyword leg finds only his one-word
    # match. Bob's search gives exactly what it gives in a store without alice's records.
    query = "where is my passport kept"
    bob = Scope(ScopeMatch.EQUALS, "bob")
    alone = make(memory_store_id="ALONE", search_strategy="hybrid")
    _fill(alone, "bob", "b")
    shared = make(memory_store_id="SHARED", search_strategy="hybrid")
    _fill(shared, "bob", "b")
    shared.add(["my passport is kept in the safe, passport kept safe"], record_type="memory", record_ids=["ak"],
               user_ids="alice", thread_ids="shared", embeddings=[vec(6)])
    expected = [(r.id, d) for r, d in alone._engine.search(_request(query, bob, k=122))]
    got = [(r.id, d) for r, d in shared._engine.search(_request(query, bob, k=122))]
    assert got == expected and expected[0][0] == "ba"
    # unscoped, alice's record leads: the count is live and reads the first record of the leg it is given
    assert shared._engine.search(_request(query))[0][0].id == "ak"
