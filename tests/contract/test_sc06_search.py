"""SC-6: search."""

from __future__ import annotations

import math

import pytest

from oramem import SearchStrategy

from ._support import hit_ids, vec


# ---------------------------------------------------------------- SC-6.1 arguments / ordering
def test_sc_6_1_query_and_vector_both_rejected(store):
    store.add(["a"], record_type="memory", embeddings=[vec(1)])
    with pytest.raises(ValueError):
        store.search("a", query_vector=vec(1))


def test_sc_6_1_neither_query_nor_vector_rejected(store):
    with pytest.raises(ValueError):
        store.search()
    with pytest.raises(ValueError):
        store.search(None, k=3)


@pytest.mark.parametrize("k", [0, -1])
def test_sc_6_1_k_below_one_rejected(store, k):
    store.add(["a"], record_type="memory")
    with pytest.raises(ValueError):
        store.search("a", k=k)
    with pytest.raises(ValueError):
        store.search(query_vector=vec(1), k=k)


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_sc_6_1_blank_query_rejected(store, blank):
    """Vendor doc: a blank query is a ValueError (the contract is silent)."""
    with pytest.raises(ValueError):
        store.search(blank, k=3)


def test_sc_6_1_bad_query_vector_rejected(store):
    store.add(["a"], record_type="memory", embeddings=[vec(1)])
    bad = vec(1)
    bad[3] = math.nan
    for qv in ([], vec(1, dim=32), bad, [[0.1] * 64]):
        with pytest.raises(ValueError):
            store.search(query_vector=qv, k=1)


@pytest.fixture
def geo(store):
    """Records at known cosine distances from e0."""
    store.add(
        ["near", "mid", "far", "opposite"],
        record_type="memory",
        record_ids=["near", "mid", "far", "opp"],
        embeddings=[vec((0, 1.0), (1, 0.1)), vec((0, 1.0), (1, 1.0)), vec(1), [-x for x in vec(0)]],
    )
    return store


def test_sc_6_1_ascending_distance_at_most_k(geo):
    res = geo.search(query_vector=vec(0), k=3)
    assert hit_ids(res) == ["near", "mid", "far"]
    d = [x for _, x in res]
    assert d == sorted(d)
    assert d[0] == pytest.approx(1 - 1 / math.sqrt(1.01), abs=1e-4)
    assert d[1] == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-4)
    assert d[2] == pytest.approx(1.0, abs=1e-4)
    full = geo.search(query_vector=vec(0), k=10)
    assert hit_ids(full) == ["near", "mid", "far", "opp"]
    assert full[3][1] == pytest.approx(2.0, abs=1e-4)


def test_sc_6_1_k_one(geo):
    assert hit_ids(geo.search(query_vector=vec(0), k=1)) == ["near"]


def test_sc_6_1_ties_broken_by_type_then_id(store):
    v = vec(7)
    store.add(["x", "x"], record_type="memory", record_ids=["b", "a"], embeddings=[v, v])
    store.add(["x"], record_type="fact", record_ids="c", embeddings=[v])
    store.add(["x"], record_type="preference", record_ids="0", embeddings=[v])
    res = store.search(query_vector=v, k=10)
    assert [(r.record_type, r.id) for r, _ in res] == [("fact", "c"), ("memory", "a"), ("memory", "b"),
                                                        ("preference", "0")]
    res2 = store.search(query_vector=v, k=2)
    assert [(r.record_type, r.id) for r, _ in res2] == [("fact", "c"), ("memory", "a")]


def test_sc_6_1_record_once_best_chunk(store):
    store.add(["multi"], record_type="memory", record_ids="m", index_texts=[["c1", "c2", "c3"]],
              embeddings=[[vec(1), vec(2), vec((2, 1.0), (3, 1.0))]])
    store.add(["single"], record_type="memory", record_ids="s", embeddings=[vec((2, 1.0), (4, 0.5))])
    res = store.search(query_vector=vec(2), k=5)
    assert hit_ids(res) == ["m", "s"]
    assert res[0][1] == pytest.approx(0.0, abs=1e-5)


def test_sc_6_1_results_are_full_records(store):
    store.add(["content here"], record_type="message", record_ids="x", thread_ids="t", user_ids="u", roles="user",
              metadata={"a": 1}, embeddings=[vec(1)])
    (rec, dist), = store.search(query_vector=vec(1), k=1)
    assert (rec.id, rec.record_type, rec.content, rec.thread_id, rec.user_id, rec.metadata, rec.role) == (
        "x", "message", "content here", "t", "u", {"a": 1}, "user")


# ---------------------------------------------------------------- SC-6.2 scope
@pytest.fixture
def scoped(store):
    v = vec(1)
    store.add(["a", "b", "c", "d"], record_type="memory", record_ids=["m1", "m2", "m3", "m4"],
              thread_ids=["t1", "t2", None, "t1"], user_ids=["u1", "u1", None, "u2"],
              agent_ids=[None, "a1", "a1", None], embeddings=[v, v, v, v])
    store.add_user("u1", "profile one")
    store.add_user("u2", "profile two")
    store.add_agent("a1", "agent one")
    return store


def _s(store, **kw):
    return sorted(hit_ids(store.search(query_vector=vec(1), k=20, record_types={"memory"}, **kw)))


def test_sc_6_2_equality_filters(scoped):
    assert _s(scoped, thread_id="t1") == ["m1", "m4"]
    assert _s(scoped, user_id="u1") == ["m1", "m2"]
    assert _s(scoped, agent_id="a1") == ["m2", "m3"]
    assert _s(scoped, thread_id="t1", user_id="u2") == ["m4"]
    assert _s(scoped, thread_id="t1", exact_thread_match=True) == ["m1", "m4"]


def test_sc_6_2_none_without_flag_is_unconstrained(scoped):
    assert _s(scoped, thread_id=None, user_id=None, agent_id=None) == ["m1", "m2", "m3", "m4"]


def test_sc_6_2_none_with_exact_flag_means_null(scoped):
    assert _s(scoped, thread_id=None, exact_thread_match=True) == ["m3"]
    assert _s(scoped, user_id=None, exact_user_match=True) == ["m3"]
    assert _s(scoped, agent_id=None, exact_agent_match=True) == ["m1", "m4"]
    assert _s(scoped, user_id="u1", agent_id=None, exact_agent_match=True) == ["m1"]


def test_sc_6_2_profiles_match_by_actor_id(scoped):
    res = scoped.search(query_vector=vec(1), k=20, user_id="u1", record_types={"user_profile", "memory"})
    got = sorted((r.record_type, r.id) for r, _ in res)
    assert ("user_profile", "u1") in got
    assert ("user_profile", "u2") not in got
    assert [g for g in got if g[0] == "memory"] == [("memory", "m1"), ("memory", "m2")]
    res = scoped.search("agent one", k=20, agent_id="a1", record_types={"agent_profile"})
    assert hit_ids(res) == ["a1"]
    res = scoped.search("profile", k=20, user_id="u2", record_types={"user_profile"})
    assert hit_ids(res) == ["u2"]


# ---------------------------------------------------------------- SC-6.3 record types
def test_sc_6_3_record_types_restrict(store):
    v = vec(3)
    store.add(["m"], record_type="memory", record_ids="m", embeddings=[v])
    store.add(["f"], record_type="fact", record_ids="f", embeddings=[v])
    store.add(["g"], record_type="guideline", record_ids="g", embeddings=[v])
    store.add(["x"], record_type="message", record_ids="x", thread_ids="t", embeddings=[v])
    assert sorted(hit_ids(store.search(query_vector=v, k=10, record_types={"fact", "guideline"}))) == ["f", "g"]
    assert hit_ids(store.search(query_vector=v, k=10, record_types={"message"})) == ["x"]
    assert sorted(hit_ids(store.search(query_vector=v, k=10))) == ["f", "g", "m", "x"]


def test_sc_6_3_unknown_record_type_rejected(store):
    with pytest.raises(ValueError) as ei:
        store.search("x", record_types={"memory", "bogus"})
    assert "bogus" in str(ei.value)


# ---------------------------------------------------------------- SC-6.4 strategies
def test_sc_6_4_vector_cosine_distance(store):
    store.add(["a"], record_type="memory", record_ids="a", embeddings=[vec((0, 3.0), (1, 4.0))])
    (_, d), = store.search(query_vector=vec(0), k=1)
    assert d == pytest.approx(1 - 0.6, abs=1e-5)


def test_sc_6_4_keyword_without_embedder(kw_store):
    kw_store.add(["the zebra grazes", "a lion sleeps", "zebra and lion"], record_type="memory",
                 record_ids=["z", "l", "zl"])
    res = kw_store.search("zebra", k=10)
    assert sorted(hit_ids(res)) == ["z", "zl"]
    for _, d in res:
        assert 0.0 <= d <= 1.0
    assert kw_store.search("giraffe", k=10) == []


def test_sc_6_4_keyword_ranks_better_match_first(kw_store):
    kw_store.add(["zebra zebra zebra stripes", "one zebra among many other different animals here"],
                 record_type="memory", record_ids=["strong", "weak"])
    res = kw_store.search("zebra stripes", k=2)
    assert hit_ids(res)[0] == "strong"
    assert res[0][1] <= res[-1][1]


def test_sc_6_4_keyword_rejects_query_vector(kw_store):
    kw_store.add(["zebra"], record_type="memory")
    with pytest.raises(ValueError):
        kw_store.search(query_vector=vec(1), k=1)


METACHAR_QUERIES = [
    "zebra AND", "zebra OR", "NOT zebra", "zebra NEAR", '"zebra', 'zebra"', "zebra*", "(zebra", "zebra)",
    "zebra-", "-zebra", "zebra:", "zebra^near", "{zebra}", "zebra%", "zebra'", "zebra;", "zebra\\", "zebra$",
    "zebra!", "zebra?", "zebra~", "zebra=", "zebra,", "zebra & near", "zebra | near", "zebra AND NOT near",
    "zebra'; DROP TABLE near; --", "NEAR(zebra, near)", "zebra + near", "zebra@near", "ABOUT(zebra)", "zebra #",
    "zebra ~near", "[zebra]", "zebra.", "zebra/near",
]


@pytest.mark.parametrize("query", METACHAR_QUERIES)
def test_sc_6_4_keyword_query_is_plain_words(kw_store, query):
    """FTS5 / Oracle Text syntax characters and operators in the user's query are plain
    words: no error, and the record holding every word of the query is found, while a
    record without 'zebra' is not."""
    kw_store.add(["zebra and or not near about drop table", "lion only"], record_type="memory", record_ids=["z", "l"])
    res = kw_store.search(query, k=5)
    assert hit_ids(res) == ["z"]


def test_sc_6_4_hybrid_distances_in_unit_interval(make_store, hybrid_capable):
    s = make_store(search_strategy=SearchStrategy.HYBRID)
    s.add(["pizza with cheese", "salad with tomato", "pizza dough recipe", "car engine repair"],
          record_type="memory", record_ids=["p1", "s", "p2", "c"])
    res = s.search("pizza", k=4)
    assert len(res) >= 2
    assert set(hit_ids(res)[:2]) == {"p1", "p2"}
    for _, d in res:
        assert type(d) is float and 0.0 <= d <= 1.0
    d = [x for _, x in res]
    assert d == sorted(d)


def test_sc_6_4_unsupported_strategy_fails_at_open(make_store):
    """A VECTOR store reopened as KEYWORD under REQUIRE_EXISTING: it fails on open."""
    from oramem import SchemaError, SchemaPolicy

    make_store().add(["x"], record_type="memory")
    with pytest.raises(SchemaError):
        make_store(search_strategy=SearchStrategy.KEYWORD, schema_policy=SchemaPolicy.REQUIRE_EXISTING)


# ---------------------------------------------------------------- SC-6.5 filters before top-k
@pytest.fixture
def crowded(store):
    n = 200
    near = vec((0, 1.0), (1, 0.05))
    store.add([f"crowd {i}" for i in range(n)], record_type="memory", record_ids=[f"c{i:03d}" for i in range(n)],
              thread_ids="busy", user_ids="u-crowd", metadata={"grp": "crowd"}, embeddings=[near] * n)
    store.add([f"rare {i}" for i in range(5)], record_type="memory", record_ids=[f"r{i}" for i in range(5)],
              thread_ids="quiet", user_ids="u-rare", metadata={"grp": "rare", "tags": ["x"]},
              embeddings=[vec((1, 1.0), (2, 0.1 * i)) for i in range(5)])
    store.add(["rare fact"], record_type="fact", record_ids="f-rare", embeddings=[vec(3)])
    return store


RARE = [f"r{i}" for i in range(5)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"metadata_filter": {"grp": "rare"}},
        {"metadata_filter": {"tags": {"$array_contains": "x"}}},
        {"thread_id": "quiet"},
        {"user_id": "u-rare"},
        {"thread_id": "quiet", "exact_thread_match": True, "metadata_filter": {"grp": {"$ne": "crowd"}}},
    ],
    ids=["meta-eq", "meta-array", "thread", "user", "combined"],
)
def test_sc_6_5_filters_apply_before_top_k(crowded, kwargs):
    res = crowded.search(query_vector=vec(0), k=5, **kwargs)
    assert sorted(hit_ids(res)) == RARE


def test_sc_6_5_record_types_apply_before_top_k(crowded):
    assert hit_ids(crowded.search(query_vector=vec(0), k=1, record_types={"fact"})) == ["f-rare"]


def test_sc_6_5_keyword_filters_before_top_k(kw_store):
    n = 200
    kw_store.add(["pizza pizza pizza"] * n, record_type="memory", record_ids=[f"c{i:03d}" for i in range(n)],
                 metadata={"grp": "crowd"})
    kw_store.add(["pizza among many other words in a long sentence about food"] * 5, record_type="memory",
                 record_ids=RARE, metadata={"grp": "rare"})
    res = kw_store.search("pizza", k=5, metadata_filter={"grp": "rare"})
    assert sorted(hit_ids(res)) == RARE


# ---------------------------------------------------------------- SC-6.6 per-call strategy
def test_sc_6_6_vector_store_only_answers_vector(store):
    store.add(["zebra"], record_type="memory", record_ids="z")
    assert hit_ids(store.search("zebra", k=1, strategy=SearchStrategy.VECTOR)) == ["z"]
    assert hit_ids(store.search("zebra", k=1, strategy="vector")) == ["z"]
    for bad in (SearchStrategy.KEYWORD, SearchStrategy.HYBRID, "keyword"):
        with pytest.raises(ValueError):
            store.search("zebra", k=1, strategy=bad)


def test_sc_6_6_keyword_store_without_vectors_rejects_vector(kw_store):
    kw_store.add(["zebra"], record_type="memory", record_ids="z")
    assert hit_ids(kw_store.search("zebra", k=1, strategy=SearchStrategy.KEYWORD)) == ["z"]
    with pytest.raises(ValueError):
        kw_store.search("zebra", k=1, strategy=SearchStrategy.VECTOR)
    with pytest.raises(ValueError):
        kw_store.search("zebra", k=1, strategy=SearchStrategy.HYBRID)


def test_sc_6_6_hybrid_store_answers_all(make_store, hybrid_capable):
    s = make_store(search_strategy=SearchStrategy.HYBRID)
    s.add(["zebra stripes"], record_type="memory", record_ids="z", embeddings=[vec(1)])
    s.add(["lion mane"], record_type="memory", record_ids="l", embeddings=[vec(2)])
    # keyword: only the text match
    assert hit_ids(s.search("zebra", k=5, strategy=SearchStrategy.KEYWORD)) == ["z"]
    # vector: ranks by vectors only
    assert hit_ids(s.search(query_vector=vec(2), k=2, strategy=SearchStrategy.VECTOR)) == ["l", "z"]
    # hybrid: a record that both legs rank first comes first (embedded by the store's
    # embedder, so its vector is near the query's; "zebra" is its word too). The explicit
    # vectors above are unrelated to their texts: under the default score fusion (issue 23)
    # their order is the vector leg's, as a lone keyword match does not overturn it
    s.add(["zebra crossing"], record_type="memory", record_ids="z2")
    res = s.search("zebra", k=3, strategy="hybrid")
    assert hit_ids(res)[0] == "z2" and set(hit_ids(res)) == {"z", "z2", "l"}
    with pytest.raises(ValueError):
        s.search("zebra", k=1, strategy="semantic")


# ---------------------------------------------------------------- SC-6.7 float distances
def test_sc_6_7_distances_are_python_floats_vector(store):
    store.add(["a", "b"], record_type="memory", embeddings=[vec(1), vec(2)])
    res = store.search(query_vector=vec(1), k=2) + store.search("a", k=2)
    assert res and all(type(d) is float for _, d in res)


def test_sc_6_7_distances_are_python_floats_keyword(kw_store):
    kw_store.add(["zebra", "zebra lion"], record_type="memory")
    res = kw_store.search("zebra", k=2)
    assert len(res) == 2 and all(type(d) is float for _, d in res)


def test_sc_6_3_default_types_include_messages_memories_profiles(store):
    v = vec(11)
    store.add(["m"], record_type="message", record_ids="x", thread_ids="t", embeddings=[v])
    store.add(["p"], record_type="preference", record_ids="p", embeddings=[v])
    store.add_user("u1", "zebra keeper")
    store.add_agent("a1", "zebra keeper")
    got = {(r.record_type, r.id) for r, _ in store.search("zebra keeper", k=10)}
    assert {("user_profile", "u1"), ("agent_profile", "a1")} <= got
    got = {(r.record_type, r.id) for r, _ in store.search(query_vector=v, k=10)}
    assert {("message", "x"), ("preference", "p")} <= got


def test_sc_6_1_k_larger_than_matches(store):
    store.add(["a", "b"], record_type="memory", record_ids=["a", "b"], embeddings=[vec(1), vec(2)])
    assert sorted(hit_ids(store.search(query_vector=vec(1), k=50))) == ["a", "b"]


def test_sc_6_2_thread_scope_excludes_profiles(store):
    store.add_user("u1", "zebra")
    store.add(["zebra"], record_type="memory", record_ids="m", thread_ids="t1", user_ids="u1")
    got = hit_ids(store.search("zebra", k=10, thread_id="t1"))
    assert got == ["m"]


def test_sc_6_1_identical_vectors_tie_exactly(make_store):
    """Records with the SAME stored vector are at the same distance from any query, so they
    are ordered by record type then id - not by floating-point noise of the computation
    (rows at different positions of a float32 matrix product can differ in the last bit)."""
    import numpy as np

    rng = np.random.default_rng(3)
    s = make_store(embedder=None, vector_dim=8)
    shared = [float(x) for x in rng.normal(size=8)]
    tied_ids = []
    for block in range(12):
        filler = [[float(x) for x in rng.normal(size=8)] for _ in range(1 + block * 3)]
        s.add([""] * len(filler), record_type="memory", record_ids=[f"f{block:02d}_{j:02d}" for j in range(len(filler))],
              index_texts=["x"] * len(filler), embeddings=filler)
        rtype = ["fact", "message", "guideline"][block % 3]
        rid = f"t{(block * 7) % 12:02d}"
        s.add(["tie"], record_type=rtype, record_ids=rid, thread_ids="t", embeddings=[shared])
        tied_ids.append((rtype, rid))
    for seed in range(20):
        q = [float(x) for x in np.random.default_rng(100 + seed).normal(size=8)]
        res = s.search(query_vector=q, k=500)
        tied = [(r.record_type, r.id) for r, _ in res if r.id.startswith("t")]
        assert tied == sorted(tied_ids), (seed, tied)
        dists = {d for r, d in res if r.id.startswith("t")}
        assert len(dists) == 1, (seed, sorted(dists))


def test_sc_6_4_text_query_on_vector_store_without_embedder(make_store):
    s = make_store(embedder=None, vector_dim=64)
    s.add(["a"], record_type="memory", record_ids="a", embeddings=[vec(1)])
    with pytest.raises(ValueError):
        s.search("a", k=1)
    assert hit_ids(s.search(query_vector=vec(1), k=1)) == ["a"]
