"""Issue 23: properties of HYBRID's fusion rules (the default gated-rrf, and score),
independent of any data set: a clear vector winner is not overtaken by a record that one
everyday keyword links to the query (new-user trial F-3); agreement of both legs wins; a
leg that found nothing leaves the other's order; weights, scale and monotonicity."""

from __future__ import annotations

import numpy as np
import pytest

from oramem.requests import Scope, SearchRequest
from oramem.sqlite import HybridConfig
from oramem.sqlite.keyword import GATE_SAMPLE, GATED_Z_FLOOR, GATED_Z_SPAN, fuse, keyword_distance, keyword_scores
from oramem.types import SearchStrategy

from .conftest import vec

DEFAULT = HybridConfig()


def kw(*pairs):
    """A keyword leg from (key, bm25 score) pairs, as the engine hands it over."""
    return [(key, keyword_distance(-score)) for key, score in pairs]


def vl(*pairs):
    """A vector leg from (key, cosine similarity) pairs."""
    return [(key, 1.0 - sim) for key, sim in pairs]


def order(fused):
    return [key for key, _ in fused]


SCORE = HybridConfig(fusion="score")


def test_default_is_gated_rrf():
    assert DEFAULT.fusion == "gated-rrf" and DEFAULT.vector_weight == 1.0 and DEFAULT.keyword_weight == 3.0
    assert DEFAULT.rrf_k == 1.0
    assert SCORE.keyword_weight == 3.0 and SCORE.rrf_k == 10.0
    assert HybridConfig(fusion="rrf").keyword_weight == 0.7 and HybridConfig(fusion="rrf").rrf_k == 10.0


def test_gated_rrf_with_a_weak_keyword_leg_is_the_vector_ranking():
    # gate 0 (the best keyword match does not stand out): the vector order and distances
    # of plain rrf over the vector leg alone; keyword-only records stay, last, at distance 1
    vector = vl((1, 0.62), (2, 0.40), (3, 0.39))
    weak = kw(*[(k, 2.0 + 0.01 * k) for k in (9, 3, 2)])
    assert keyword_scores(weak)[1] == 0.0
    fused = fuse(vector, weak)
    assert order(fused) == [1, 2, 3, 9]
    assert [d for _, d in fused] == [0.0, round(1 - 2 / 3, 12), 0.5, 1.0]


def test_gated_rrf_with_a_strong_keyword_leg_follows_the_keyword_ranking_and_agreement():
    # a strong gate: the keyword leader comes first, a record both legs rank second beats
    # the vector leg's lone leader
    vector = vl((1, 0.70), (2, 0.69), (4, 0.40), (5, 0.39))
    keyword = kw((3, 8.0), (2, 7.9), *[(10 + i, 1.0) for i in range(60)])
    assert keyword_scores(keyword, GATED_Z_FLOOR, GATED_Z_SPAN)[1] == 1.0
    fused = order(fuse(vector, keyword))
    assert fused[:2] == [3, 2] and fused.index(2) < fused.index(1)
    # score = 1 / (1 + 1) + 3 / (1 + 1) = 2 for a record first in both legs: distance 0
    assert fuse(vector, kw((1, 8.0), *[(10 + i, 1.0) for i in range(60)]))[0] == (1, 0.0)


def test_gated_rrf_gate_scales_between():
    # a middling z gives a gate strictly between 0 and 1, and the keyword weight with it
    vector = vl((1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6))
    keyword = kw((4, 6.0), (3, 3.0), (2, 2.5), (1, 2.0), (5, 2.0), (6, 1.5), (7, 1.5), (8, 1.0))
    gate = keyword_scores(keyword, GATED_Z_FLOOR, GATED_Z_SPAN)[1]
    assert 0.0 < gate < 1.0
    fused = dict(fuse(vector, keyword))
    top = (1.0 + 3.0 * gate) / 2
    assert fused[4] == round(1 - (1 / 5 + 3.0 * gate / 2) / top, 12)


def test_gated_rrf_equal_scores_tie_for_the_caller():
    # symmetric legs with equal weights: equal distances (the store then orders by type, id)
    vector = vl((1, 0.9), (2, 0.8))
    keyword = kw((2, 20.0), (1, 19.0), *[(10 + i, 1.0) for i in range(80)])
    assert keyword_scores(keyword, GATED_Z_FLOOR, GATED_Z_SPAN)[1] == 1.0
    fused = dict(fuse(vector, keyword, HybridConfig(1.0, 1.0)))
    assert fused[1] == fused[2]


def test_gated_rrf_needs_keyword_distances_for_its_gate():
    with pytest.raises(TypeError, match="keyword key, distance"):
        fuse([1, 2], [2, 1])
    # the vector leg may be bare keys (rank fusion reads its order only)
    assert order(fuse([1, 2], [(2, 0.5)])) == [1, 2]


def test_one_shared_everyday_word_does_not_beat_a_clear_vector_winner():
    # F-3: the right memory is the vector leg's clear winner and shares no word with the
    # question; a weaker candidate shares one word and is the keyword leg's only match
    vector = vl((1, 0.62), (2, 0.35), (3, 0.33), (4, 0.31), (5, 0.30), (6, 0.29), (7, 0.28), (8, 0.27), (9, 0.26),
                (10, 0.25), (11, 0.24))
    keyword = kw((3, 2.1))
    assert order(fuse(vector, keyword))[0] == 1
    # rank fusion lets it through: the behaviour the issue reports
    assert order(fuse([k for k, _ in vector], [k for k, _ in keyword], HybridConfig(fusion="rrf")))[0] == 3


def test_a_record_both_legs_rank_first_wins_with_distance_zero():
    vector = vl((1, 0.8), (2, 0.5), (3, 0.4))
    keyword = kw((1, 9.0), (3, 4.0))
    fused = fuse(vector, keyword)
    assert fused[0] == (1, 0.0)
    assert all(0.0 <= d <= 1.0 for _, d in fused)


def test_agreement_beats_either_leg_alone():
    # 2 is second in both legs, 1 is only the vector leg's best, 3 only the keyword leg's;
    # the keyword leg's two best stand out from its many weak matches (a strong leg)
    vector = vl((1, 0.70), (2, 0.69), (4, 0.40), (5, 0.39))
    keyword = kw((3, 8.0), (2, 7.9), *[(10 + i, 1.0) for i in range(20)])
    assert keyword_scores(keyword)[1] > 0.5
    assert order(fuse(vector, keyword, SCORE))[0] == 2


def test_a_weak_keyword_leg_does_not_count():
    # one everyday word that many records share about equally: the best keyword match does
    # not stand out, so the keyword leg adds nothing and the vector order stands
    vector = vl((1, 0.62), (2, 0.40), (3, 0.39), (4, 0.38), (5, 0.37))
    weak = kw(*[(k, 2.0 + 0.01 * k) for k in (5, 4, 3, 2)])
    assert keyword_scores(weak)[1] == 0.0
    assert order(fuse(vector, weak)) == [1, 2, 3, 4, 5]
    # the same records with one distinctive match: that record comes first
    strong = kw((4, 12.0), *[(k, 2.0) for k in (6, 7, 8, 9, 10, 11, 12, 13, 14, 15)])
    assert keyword_scores(strong)[1] > 0.5
    assert order(fuse(vector, strong))[0] == 4


@pytest.mark.parametrize("fusion", ["gated-rrf", "score", "rrf"])
def test_an_empty_leg_leaves_the_other_legs_order(fusion):
    vector = vl((1, 0.9), (2, 0.7), (3, 0.6), (4, 0.2))
    keyword = kw((5, 3.0), (6, 1.0), (7, 0.5))
    cfg = HybridConfig(fusion=fusion)
    assert order(fuse(vector, [], cfg)) == [1, 2, 3, 4]
    assert order(fuse([], keyword, cfg)) == [5, 6, 7]


def test_gated_rrf_an_empty_vector_leg_keeps_the_keyword_distances_apart():
    # the guard: a weak keyword leg (gate 0) is still all there is when the vector leg is
    # empty, so its order is kept in the distances (the store orders ties by type and id,
    # which would lose it)
    keyword = kw((5, 3.0), (6, 1.0), (7, 0.5))
    assert keyword_scores(keyword)[1] == 0.0
    distances = [d for _, d in fuse([], keyword)]
    assert distances == sorted(distances) and len(set(distances)) == 3 and distances[-1] < 1.0


def test_keyword_scale_does_not_matter_only_relative_strength():
    vector = vl((1, 0.8), (2, 0.75), (3, 0.7), (4, 0.3))
    keyword = [(2, 5.0), (3, 2.0), (4, 1.0)]
    base = order(fuse(vector, kw(*keyword)))
    for factor in (0.01, 3.0, 250.0):
        assert order(fuse(vector, kw(*[(k, s * factor) for k, s in keyword]))) == base


def test_vector_shift_does_not_matter_only_the_spread():
    vector = [(k, s) for k, s in ((1, 0.8), (2, 0.75), (3, 0.7), (4, 0.3))]
    keyword = kw((2, 5.0), (3, 2.0))
    base = order(fuse(vl(*vector), keyword))
    assert order(fuse(vl(*[(k, s - 0.2) for k, s in vector]), keyword)) == base


@pytest.mark.parametrize("seed", range(20))
def test_a_better_vector_score_never_lowers_a_record(seed):
    rng = np.random.default_rng(seed)
    sims = sorted(rng.uniform(0.1, 0.9, 30), reverse=True)
    keyword = kw(*zip(rng.permutation(30)[:12].tolist(), sorted(rng.uniform(0.1, 8.0, 12), reverse=True)))
    fused = order(fuse(vl(*enumerate(sims)), keyword))
    target = fused[7]
    boosted = sorted(((k, min(0.99, s + 0.05) if k == target else s) for k, s in enumerate(sims)), key=lambda p: -p[1])
    assert order(fuse(vl(*boosted), keyword)).index(target) <= fused.index(target)


@pytest.mark.parametrize("seed", range(20))
def test_a_better_keyword_score_never_lowers_a_record_of_a_strong_leg(seed):
    rng = np.random.default_rng(seed)
    vector = vl(*enumerate(sorted(rng.uniform(0.1, 0.9, 30), reverse=True)))
    # a strong leg: one standout match and many weak ones; the target is a weak one
    keys = rng.permutation(30).tolist()
    pairs = [(keys[0], 20.0)] + [(k, float(s)) for k, s in zip(keys[1:25], sorted(rng.uniform(0.5, 2.0, 24), reverse=True))]
    target = pairs[10][0]
    boosted = sorted(((k, s + 0.5 if k == target else s) for k, s in pairs), key=lambda p: -p[1])
    assert keyword_scores(kw(*pairs))[1] == 1.0 and keyword_scores(kw(*boosted))[1] == 1.0
    assert order(fuse(vector, kw(*boosted))).index(target) <= order(fuse(vector, kw(*pairs))).index(target)


@pytest.mark.parametrize("fusion", ["gated-rrf", "score", "rrf"])
def test_a_zero_weight_leg_is_ignored(fusion):
    vector = vl((1, 0.9), (2, 0.7), (3, 0.6))
    keyword = kw((3, 5.0), (2, 1.0))
    if fusion == "rrf":
        vector, keyword = [k for k, _ in vector], [k for k, _ in keyword]
    assert order(fuse(vector, keyword, HybridConfig(1.0, 0.0, fusion=fusion))) == [1, 2, 3]
    assert order(fuse(vector, keyword, HybridConfig(0.0, 1.0, fusion=fusion)))[:2] == [3, 2]


def test_score_fusion_needs_distances_and_says_so():
    with pytest.raises(TypeError, match="distance"):
        fuse([1, 2], [(2, 0.5)], SCORE)


def test_rrf_k_only_with_rank_fusion():
    with pytest.raises(ValueError, match="fusion='gated-rrf' or 'rrf'"):
        HybridConfig(rrf_k=60, fusion="score")
    assert HybridConfig(rrf_k=60, fusion="rrf").rrf_k == 60
    assert HybridConfig(rrf_k=60).rrf_k == 60
    # a resolved config round-trips (score's placeholder rrf_k is accepted back)
    assert HybridConfig(**{**SCORE.__dict__}) == SCORE


def test_store_hybrid_keeps_the_vector_winner_against_one_shared_word(make):
    # through the engine: "c" shares the word "live" with the question, "a" is the vector match
    s = make(memory_store_id="F3", search_strategy="hybrid")
    s.add(["my sister resides in Lisbon", "we bought a blue car", "I live with two cats"], record_type="memory",
          record_ids=["a", "b", "c"], embeddings=[vec(1, 2), vec(4), vec(1, 3, 5)])
    query = np.asarray(vec(1, 2), dtype=np.float32)
    request = SearchRequest(SearchStrategy.HYBRID, 3, "where does my sibling live", query, Scope.any(), Scope.any(),
                            Scope.any(), ("memory",), None)
    assert [r.id for r, _ in s._engine.search(request)][0] == "a"


@pytest.mark.parametrize("fusion", ["gated-rrf", "score", "rrf"])
def test_store_hybrid_never_leaves_the_scope(make, fusion):
    # multi-user: user A's records match the query best on both legs (a distinctive keyword
    # match among many weak ones, the nearest vector); user B's search, or a search in
    # B's thread, returns B's records only, whatever the fusion rule
    s = make(memory_store_id="SCOPE", search_strategy="hybrid", hybrid=HybridConfig(fusion=fusion))
    texts = ["the zebra code QX-4471 is alice's locker"] + [f"alice note {i} about the zebra" for i in range(12)]
    s.add(texts, record_type="memory", record_ids=[f"a{i}" for i in range(13)], user_ids="alice", thread_ids="ta",
          embeddings=[vec(1, 2)] * 13)
    s.add(["bob's zebra sticker", "bob likes tea"], record_type="memory", record_ids=["b0", "b1"], user_ids="bob",
          thread_ids="tb", embeddings=[vec(1, 3), vec(5)])
    from oramem.requests import ScopeMatch

    query = np.asarray(vec(1, 2), dtype=np.float32)
    bob, any_ = Scope(ScopeMatch.EQUALS, "bob"), Scope.any()

    def search(thread, user, k=10):
        request = SearchRequest(SearchStrategy.HYBRID, k, "zebra code QX-4471", query, thread, user, any_, ("memory",),
                                None)
        return s._engine.search(request)

    for thread, user in ((any_, bob), (Scope(ScopeMatch.EQUALS, "tb"), any_)):
        hits = search(thread, user)
        assert {r.id for r, _ in hits} == {"b0", "b1"} and all(r.user_id == "bob" for r, _ in hits)
    # unscoped, the distinctive match leads (the rule is live in this store)
    assert search(any_, any_, k=1)[0][0].id == "a0"


def test_the_gate_and_the_top_ranks_do_not_depend_on_the_legs_depth():
    """A search for k = 50 reads 500-deep legs, one for k = 5 200-deep ones: the gate reads the
    keyword leg's first GATE_SAMPLE matches only, so the fused top ranks are the same. (Over
    the whole leg, a long tail of weak matches lowered the mean and the spread and opened the
    gate wider for the deeper search.)"""
    keyword = kw(*[(i, 9.0 - 0.01 * i) for i in range(20)], *[(i, 2.0) for i in range(20, 500)])
    vector = vl(*[(1000 + i, 0.9 - 0.001 * i) for i in range(500)])
    assert GATE_SAMPLE == 200
    deep = keyword_scores(keyword, GATED_Z_FLOOR, GATED_Z_SPAN)[1]
    shallow = keyword_scores(keyword[:GATE_SAMPLE], GATED_Z_FLOOR, GATED_Z_SPAN)[1]
    assert deep == shallow
    assert 0.0 < shallow < 1.0  # a gate partly open: the case where the sample decides the order
    top_deep = [key for key, _ in fuse(vector, keyword, DEFAULT)[:10]]
    top_shallow = [key for key, _ in fuse(vector[:GATE_SAMPLE], keyword[:GATE_SAMPLE], DEFAULT)[:10]]
    assert top_deep == top_shallow
