"""Issue 28: tail windows and the tail handicap (SC-6.4).

A long text keeps its first model window as its first chunk and is cut into shorter tail
windows after it; in vector ranking a record counts its first row, or a later row plus the
handicap, whichever is nearer. Only a store whose recorded chunk policy has tail windows
ranks that way: legacy stores, character policies and stores without an embedder keep
"its best chunk counts" (SC-6.1)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from oramem.chunking import (
    TAIL_HANDICAP,
    ChunkPolicy,
    chunk_tokens,
    policy_for,
    policy_of_identity,
    tail_handicap,
)
from oramem.embedders.base import InputWindow
from oramem.oracle.codec import search_json
from oramem.requests import Scope, SearchRequest
from oramem.sqlite.vectors import VectorCache
from oramem.types import SearchStrategy


def words(text: str) -> list[tuple[int, int]]:
    """A whitespace tokenizer's spans (one token per word)."""
    return [m.span() for m in re.finditer(r"\S+", text)]


TEXT = " ".join(f"w{i}" for i in range(300))


def test_a_long_text_keeps_its_first_window_then_tail_windows():
    chunks = chunk_tokens(TEXT, words, 128, 8, tail_tokens=64)
    sizes = [len(words(c)) for c in chunks]
    assert sizes[0] == 128 and all(s <= 64 for s in sizes[1:]) and len(sizes) > 3
    assert chunks[0].split()[0] == "w0" and chunks[-1].split()[-1] == "w299"
    seen = {w for c in chunks for w in c.split()}
    assert seen == set(TEXT.split())  # every word in some window


def test_a_text_within_the_first_window_stays_whole():
    text = " ".join(f"w{i}" for i in range(128))
    assert chunk_tokens(text, words, 128, 8, tail_tokens=64) == [text]


def test_the_policy_records_its_tail_windows_and_old_policies_keep_theirs():
    window = InputWindow(max_tokens=254, spans=words, tokenizer="t")
    policy = policy_for(window)
    assert (policy.size, policy.tail_size, policy.overlap) == (128, 64, 8)
    assert ChunkPolicy.from_json(policy.to_json()) == policy
    assert policy_of_identity({"kind": "onnx", "chunking": json.loads(policy.to_json())}) == policy
    # a store recorded before tail windows chunks (and ranks) as it did
    old = {"kind": "onnx", "chunking": {"unit": "tokens", "size": 128, "overlap": 16, "max_chars": 2000}}
    assert policy_of_identity(old).tail_size is None
    assert [len(words(c)) for c in policy_of_identity(old).split(TEXT, words)][:2] == [128, 128]
    assert tail_handicap(old) == 0.0
    assert tail_handicap({"kind": "onnx", "chunking": json.loads(policy.to_json())}) == TAIL_HANDICAP
    assert tail_handicap(None) == 0.0 and tail_handicap({"kind": "hash", "dimension": 8, "seed": 0}) == 0.0


@pytest.mark.parametrize("bad", [{"tail_size": 0}, {"tail_size": 200}, {"tail_size": 8, "overlap": 8}])
def test_a_bad_tail_size_is_refused(bad):
    fields = {"unit": "tokens", "size": 128, "overlap": 4, **bad}
    with pytest.raises(ValueError, match="tail_size"):
        ChunkPolicy(**fields)


def test_a_character_policy_has_no_tail_size():
    with pytest.raises(ValueError, match="tokens"):
        ChunkPolicy("chars", 2000, 50, 2000, None, tail_size=100)


def _row(chunk_id, seq, vector, rid, index, user="u"):
    blob = np.asarray(vector, dtype="<f4").tobytes()
    return (chunk_id, seq, blob, "memory", rid, None, user, None, None, index)


def _cache(rows) -> VectorCache:
    cache = VectorCache(2)
    cache.load(rows, ("g", 1))
    return cache


# "long": its first row is far from the query, its second row is the query itself;
# "short": one row at cosine distance 1 - 0.95 = 0.05
ROWS = [
    _row(1, 1, [0.0, 1.0], "long", 0),
    _row(2, 1, [1.0, 0.0], "long", 1),
    _row(3, 2, [0.95, np.sqrt(1 - 0.95**2)], "short", 0),
]


def _nearest(cache: VectorCache, handicap: float):
    mask = np.ones(cache.size, dtype=bool)
    return cache.nearest(np.array([1.0, 0.0], dtype=np.float32), mask, 2, handicap=handicap)


def test_a_later_row_ranks_with_the_handicap():
    cache = _cache(ROWS)
    assert [(s, round(d, 6)) for s, d in _nearest(cache, 0.0)] == [(1, 0.0), (2, 0.05)]  # best row
    assert [(s, round(d, 6)) for s, d in _nearest(cache, 0.08)] == [(2, 0.05), (1, 0.08)]
    assert [(s, round(d, 6)) for s, d in _nearest(cache, 0.04)] == [(1, 0.04), (2, 0.05)]
    # the first row is never handicapped
    up = cache.nearest(np.array([0.0, 1.0], dtype=np.float32), np.ones(3, dtype=bool), 2, handicap=0.5)
    assert [(s, round(d, 4)) for s, d in up] == [(1, 0.0), (2, 0.6878)]


def test_the_handicap_follows_rows_through_patches_and_snapshots():
    cache = _cache(ROWS[2:])
    cache.patch(("g", 1), ("g", 2), [1], ROWS[:2])  # the long record written by this process
    assert [s for s, _ in _nearest(cache, 0.08)] == [2, 1]
    columns, matrix, codes = cache.snapshot()
    again = VectorCache(2)
    again.load_snapshot(columns, matrix, codes, ("g", 2))
    assert [(s, round(d, 6)) for s, d in _nearest(again, 0.08)] == [(2, 0.05), (1, 0.08)]


def _request(handicap: float, strategy=SearchStrategy.VECTOR) -> SearchRequest:
    return SearchRequest(strategy, 5, "q" if strategy is not SearchStrategy.VECTOR else None,
                         np.array([1.0, 0.0], dtype=np.float32), Scope.any(), Scope.any(), Scope.any(),
                         ("memory",), None, tail_handicap=handicap)


def test_the_oracle_request_carries_the_handicap_only_when_it_is_set():
    assert "tail_handicap" not in json.loads(search_json(_request(0.0)))
    assert json.loads(search_json(_request(0.08)))["tail_handicap"] == 0.08
    assert json.loads(search_json(_request(0.08, SearchStrategy.HYBRID)))["tail_handicap"] == 0.08
    assert "tail_handicap" not in json.loads(search_json(_request(0.08, SearchStrategy.KEYWORD)))


def test_stores_without_tail_windows_rank_by_the_best_chunk(tmp_path):
    from oramem import SQLiteMemoryStore
    from oramem.embedders import HashEmbedder

    store = SQLiteMemoryStore(tmp_path / "h.db", embedder=HashEmbedder(16), search_strategy="vector")
    request, _ = store._n().search_plan("x", 5, None, None, None, None, False, False, False, None, None, None)
    assert request.tail_handicap == 0.0
    store.close()


def test_plsql_names_the_same_handicap():
    from pathlib import Path

    spec = (Path(__file__).resolve().parents[2] / "plsql" / "oramem_search.pks").read_text()
    m = re.search(r"gc_tail_handicap\s+CONSTANT NUMBER\s+:=\s*([0-9.]+);", spec)
    assert m and float(m.group(1)) == TAIL_HANDICAP
