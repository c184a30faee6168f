"""FTS5 keyword search: user text is plain words (never query syntax), OR semantics
ranked by bm25, distances in (0, 1], MANUAL sync, hybrid fusion."""

from __future__ import annotations

from oramem.sqlite._sqlite import sqlite3

import pytest

from oramem.sqlite import HybridConfig
from oramem.sqlite.keyword import fts_query, fuse

from .conftest import vec

HOSTILE = [
    '"', '""', "'", "AND", "OR", "NOT", "NEAR", "NEAR(a b)", "a AND", "OR b", "*", "wal*", "text:walrus",
    "(walrus", "walrus)", "-walrus", "^walrus", "+", "{text}: walrus", '"unterminated', "a\"b", ":", "()",
    "walrus NEAR/2 sings", "\\", "%", "\x00",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_query_syntax_is_never_interpreted(kw_store, query):
    kw_store.add(["the walrus sings AND dances", "a NEAR b text"], record_type="memory", record_ids=["w", "n"])
    hits = kw_store.search(query, k=5) if query.strip() else []
    for record, distance in hits:
        assert 0.0 < distance <= 1.0 and isinstance(distance, float)


def test_operators_are_matched_as_words(kw_store):
    kw_store.add(["the walrus sings", "near the shore", "and so on"], record_type="memory",
                 record_ids=["w", "s", "a"])
    assert [r.id for r, _ in kw_store.search("NEAR", k=5)] == ["s"]
    assert [r.id for r, _ in kw_store.search("AND", k=5)] == ["a"]
    assert [r.id for r, _ in kw_store.search("-walrus", k=5)] == ["w"]
    assert [r.id for r, _ in kw_store.search('text:"walrus*"', k=5)] == ["w"]
    assert kw_store.search("wal*", k=5) == []  # no prefix search: 'wal' is a word of its own


def test_fts_query_quotes_every_term():
    assert fts_query('say "hi" AND (bye) - now*', "none") == '"say" OR "hi" OR "and" OR "bye" OR "now"'
    assert fts_query("  ** :: () ") is None


def test_or_semantics_ranks_full_matches_first(kw_store):
    kw_store.add(["red apple pie", "red car", "green apple", "blue sky"], record_type="memory",
                 record_ids=["pie", "car", "green", "sky"])
    hits = kw_store.search("red apple", k=10)
    ids = [r.id for r, _ in hits]
    assert ids[0] == "pie" and set(ids) == {"pie", "car", "green"}
    distances = [d for _, d in hits]
    assert distances == sorted(distances) and all(0 < d <= 1 for d in distances)


def test_each_record_once_with_its_best_chunk(kw_store):
    kw_store.add(["doc"], record_type="memory", record_ids="m", index_texts=[["otter", "otter otter river", "x"]])
    kw_store.add(["other"], record_type="memory", record_ids="o", index_texts=[["otter"]])
    assert sorted(r.id for r, _ in kw_store.search("otter river", k=5)) == ["m", "o"]


def test_manual_sync_defers_visibility(make, db_path):
    s = make(memory_store_id="MAN", search_strategy="keyword", vector_dim=None, search_index_sync="manual")
    s.add(["pending heron"], record_type="memory", record_ids="h")
    assert s.search("heron", k=3) == []
    s.sync_search_index()
    assert [r.id for r, _ in s.search("heron", k=3)] == ["h"]
    s.add(["second heron"], record_type="memory", record_ids="h2")
    s.delete("memory", "h2")  # deleted while pending: nothing left to index
    s.sync_search_index()
    assert [r.id for r, _ in s.search("heron", k=3)] == ["h"]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute('SELECT count(*) FROM "om_MAN_fts_pending"').fetchone()[0] == 0
        assert conn.execute('SELECT count(*) FROM "om_MAN_fts"').fetchone()[0] == 1


def test_update_in_manual_mode_removes_old_text_at_once(make):
    s = make(memory_store_id="MAN", search_strategy="keyword", vector_dim=None, search_index_sync="manual")
    s.add(["old words"], record_type="memory", record_ids="m")
    s.sync_search_index()
    s.update("memory", "m", text="new words")
    assert s.search("old", k=3) == []
    s.sync_search_index()
    assert [r.id for r, _ in s.search("new", k=3)] == ["m"]


def test_fuse_distances_in_unit_interval():
    rrf = HybridConfig(fusion="rrf")
    fused = dict(fuse([1, 2, 3], [3, 1], rrf))
    assert fused[1] == min(fused.values())
    assert all(0.0 <= d <= 1.0 for d in fused.values())
    assert dict(fuse([7], [7], rrf))[7] == 0.0
    scored = dict(fuse([(1, 0.1), (2, 0.3), (3, 0.5)], [(3, 0.2), (1, 0.4)]))
    assert all(0.0 <= d <= 1.0 for d in scored.values())
    assert dict(fuse([(7, 0.2)], [(7, 0.5)]))[7] == 0.0


def test_hybrid_fuses_both_rankings(make):
    s = make(memory_store_id="HY", search_strategy="hybrid")
    s.add(["zebra crossing", "nothing alike", "zebra"], record_type="memory", record_ids=["a", "b", "c"],
          embeddings=[vec(1), vec(0), vec(2)])
    # engine level: the public API embeds the text itself, here the vector is chosen
    hits = s._engine.search(_hybrid_request("zebra crossing", vec(1)))
    ids = [r.id for r, _ in hits]
    assert ids[0] == "a"  # first in both rankings
    assert all(0.0 <= d <= 1.0 for _, d in hits)


def _hybrid_request(text, vector):
    import numpy as np

    from oramem.requests import Scope, SearchRequest
    from oramem.types import SearchStrategy

    return SearchRequest(SearchStrategy.HYBRID, 3, text, np.asarray(vector, dtype=np.float32), Scope.any(),
                         Scope.any(), Scope.any(), ("memory",), None)
