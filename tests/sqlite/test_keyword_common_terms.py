"""A keyword search whose words include common ones (held by at least half of the index's
rows, which bm25 weighs at its floor IDF) scores only the rows holding a rarer word
(``keyword.SplitMatch``) and returns what scoring every match returns: the same records,
the same order, the same distances to the bit, under scopes (user B in user A's shared
agent and thread), record types, metadata filters, TTL, several rows per record, tiny
windows that must grow, and k larger than the rows a rare word holds (then every match is
scored)."""

from __future__ import annotations

import random

import pytest

from oramem.sqlite.engine import SQLiteEngine
from oramem.types import SchemaPolicy

from .test_keyword_scope import _downgrade_to_v2

COMMON = ["alpha", "beta"]  # in ~85 % and ~60 % of the rows
RARE = ["otter", "river", "stone"]  # ~12 %, ~6 %, ~25 %
TYPES = ["memory", "fact"]
USERS = ["alice", "bob", None]


def _row(rng: random.Random) -> str:
    words = [w for w, p in (("alpha", 0.85), ("beta", 0.6), ("otter", 0.12), ("river", 0.06), ("stone", 0.25)) if rng.random() < p]
    if rng.random() < 0.2:
        words.append(rng.choice(words or ["alpha"]))  # a repeated word: another tf
    return " ".join(words) or "gamma"


def _fill(store, rng: random.Random, n: int = 1500) -> dict:
    """n records (a third with two or three retrieval rows: ~2,250 rows, above the split's
    minimum index size) in one shared agent and two shared threads, owned by alice, bob
    or nobody; few distinct row texts, so most scores tie."""
    owners: dict = {}
    batches: dict = {t: {"ids": [], "rows": [], "users": [], "threads": [], "meta": [], "ttl": []} for t in TYPES}
    ids = [f"{rng.randrange(10**6):06d}-{i}" for i in range(n)]
    for i, rid in enumerate(ids):
        rtype = TYPES[i % 2]
        b = batches[rtype]
        user = rng.choice(USERS)
        b["ids"].append(rid)
        b["rows"].append([_row(rng) for _ in range(1 if i % 3 else rng.randint(2, 3))])
        b["users"].append(user)
        b["threads"].append(rng.choice(["t1", "t2"]))
        b["meta"].append({"topic": rng.choice("ab")})
        b["ttl"].append(1 if i % 11 == 0 else None)
        owners[(rtype, rid)] = user
    for rtype, b in batches.items():
        store.add([f"record {rid}" for rid in b["ids"]], record_type=rtype, record_ids=b["ids"], index_texts=b["rows"],
                  thread_ids=b["threads"], user_ids=b["users"], agent_ids=["a1"] * len(b["ids"]),
                  metadata=b["meta"], ttl_days=b["ttl"])
    return owners


_SPLIT_COMMON = SQLiteEngine._split_common


def _spy_on_splits(monkeypatch) -> list:
    """Installs a spy on the split decision: the returned list gets each search's answer
    (a SplitMatch, or None: every match scored)."""
    splits: list = []

    def spy(self, *args, **kwargs):
        splits.append(_SPLIT_COMMON(self, *args, **kwargs))
        return splits[-1]

    monkeypatch.setattr(SQLiteEngine, "_split_common", spy)
    return splits


def _no_split(monkeypatch) -> None:
    """The reference: every match scored (the search before the split)."""
    monkeypatch.setattr(SQLiteEngine, "_split_common", lambda self, *args, **kwargs: None)


def _mark_words(store) -> None:
    """A search that scores most of the index marks its words for counting: until then a
    word is taken for rare (the split starts with the next search that has it)."""
    engine = store._engine
    assert not engine._keyword_words
    hits = store.search(" ".join(COMMON + RARE), k=5, strategy="keyword")
    assert hits and set(engine._keyword_words) == {f'text : "{w}"' for w in COMMON + RARE}


@pytest.fixture
def store(make, clock):
    store = make(memory_store_id="KC", search_strategy="keyword", vector_dim=None)
    store.owners = _fill(store, random.Random(26))
    clock.advance(days=2)  # records with a 1-day TTL are expired, not purged
    _mark_words(store)
    return store


def test_a_search_that_scores_most_of_the_index_marks_its_words(make, monkeypatch):
    store = make(memory_store_id="KM", search_strategy="keyword", vector_dim=None)
    _fill(store, random.Random(3), n=2000)  # ~3,000 rows: "alpha otter" matches ~2,600
    splits = _spy_on_splits(monkeypatch)
    first = store.search("alpha otter", k=5, strategy="keyword")
    second = store.search("alpha otter", k=5, strategy="keyword")
    assert splits[0] is None and splits[1] is not None  # the first search scored every match and marked the words
    assert [(r.id, d) for r, d in first] == [(r.id, d) for r, d in second]
    # a search of words that match little marks nothing: nothing is counted for it later
    store._engine._keyword_words.clear()
    store.search("river kingfisher", k=5, strategy="keyword")
    assert not store._engine._keyword_words


def _kwargs(rng: random.Random) -> dict:
    kwargs: dict = {}
    user = rng.choice(USERS + ["any"])
    if user != "any":
        kwargs["user_id"] = user
        if user is None:
            kwargs["exact_user_match"] = True
    if rng.random() < 0.5:
        kwargs["agent_id"] = "a1"
    if rng.random() < 0.4:
        kwargs["thread_id"] = rng.choice(["t1", "t2"])
    if rng.random() < 0.3:
        kwargs["metadata_filter"] = {"topic": rng.choice("ab")}
    return kwargs


@pytest.mark.parametrize("window", [(2, 16, 2), (1, 1, 1)], ids=["default-window", "tiny-window"])
def test_split_search_equals_scoring_every_match(store, monkeypatch, window):
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_WINDOW", window[0])
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_WINDOW_MIN", window[1])
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_ROWS", window[2])
    rng = random.Random(7)
    compared = split = 0
    for trial in range(60):
        common = rng.sample(COMMON, rng.randint(1, 2))
        rare = rng.sample(RARE, rng.randint(1, 2))
        words = common + rare
        rng.shuffle(words)
        kwargs = _kwargs(rng)
        types = set(rng.sample(TYPES, rng.randint(1, 2)))
        for k in (1, 3, 10, 40, 400):
            splits = _spy_on_splits(monkeypatch)
            splits.clear()
            got = store.search(" ".join(words), k=k, strategy="keyword", record_types=types, **kwargs)
            assert len(splits) == 1 and splits[0] is not None, (words, splits)
            assert splits[0].full.startswith(f'text : ({" OR ".join(chr(34) + w + chr(34) for w in words if w in COMMON)} OR ')
            if k <= 40:  # a window of at most 80 rows: the rare words hold more (~135 at the least)
                assert splits[0].worth_trying, (words, k)
            split += splits[0].worth_trying
            # the reference scores every match of the same phrases in the same order
            # (common words first, as the split's full MATCH has them)
            _no_split(monkeypatch)
            reference = [w for w in words if w in COMMON] + [w for w in words if w not in COMMON]
            want = store.search(" ".join(reference), k=k, strategy="keyword", record_types=types, **kwargs)
            assert [(r.record_type, r.id, d) for r, d in got] == [(r.record_type, r.id, d) for r, d in want], \
                (trial, words, kwargs, types, k)
            assert all(kwargs.get("user_id", "any") in ("any", store.owners[(r.record_type, r.id)]) for r, _ in got)
            compared += 1
    # k = 400 (a window of 800 rows, or 400): rows holding the rare words are often fewer,
    # so the search scores every match at once (with the split's full MATCH); both happen
    assert compared == 300 and 240 <= split < 300


def test_words_that_are_all_common_or_all_rare_are_not_split(store, monkeypatch):
    splits = _spy_on_splits(monkeypatch)
    for query in ("alpha beta", "otter river stone", "alpha"):
        splits.clear()
        assert store.search(query, k=5, strategy="keyword")
        assert splits == [None], query
    # a word shaped like a scope token ("xt…", "xu…", "xa…") may be counted in the scope
    # column too, so it is never taken for a common word, even in most rows
    store.add(["many rows"], record_type="memory", record_ids=["many"], index_texts=[["xtra"] * 3000])
    splits.clear()
    assert len(store.search("xtra otter", k=5, strategy="keyword")) == 5
    assert splits == [None]


def test_user_b_gets_none_of_user_a_records_through_the_split(store):
    store.add(["alice's otter in the shared thread"], record_type="memory", record_ids=["alice-only"], user_ids="alice",
              thread_ids="t1", agent_ids="a1", index_texts=[["alpha beta otter kingfisher"]])
    for query in ("alpha kingfisher", "beta alpha kingfisher otter"):
        for extra in ({}, {"thread_id": "t1"}, {"agent_id": "a1"}, {"thread_id": "t1", "agent_id": "a1"}):
            hits = store.search(query, k=50, strategy="keyword", user_id="bob", **extra)
            assert hits and all(store.owners.get((r.record_type, r.id)) == "bob" for r, _ in hits), (query, extra)
        assert store.search(query, k=1, strategy="keyword", user_id="alice", thread_id="t1")[0][0].id == "alice-only"


def test_a_word_that_stops_being_common_is_counted_again(store, monkeypatch):
    """Which words are common is kept per state of the index: after writes that bring
    "beta" (~60 % of the rows) under half, the next search counts again and scores every
    match (no stale split), and the answers equal scoring every match at each step."""
    def compare(query: str):
        seen = _spy_on_splits(monkeypatch)
        got = store.search(query, k=10, strategy="keyword", user_id="bob")
        _no_split(monkeypatch)
        want = store.search(query, k=10, strategy="keyword", user_id="bob")
        assert [(r.id, d) for r, d in got] == [(r.id, d) for r, d in want]
        return seen[-1]

    split = compare("beta otter")
    assert split is not None and split.full.startswith('text : ("beta" OR')
    assert compare("beta otter") is not None  # the same index: the kept answer
    store.add([f"filler {i}" for i in range(900)], record_type="memory", record_ids=[f"f{i}" for i in range(900)],
              index_texts=[["stone gamma"] for _ in range(900)], user_ids=["bob"] * 900)
    assert compare("beta otter") is None  # beta is now in fewer than half of the rows


def test_a_scope_in_nearly_every_row_leaves_the_match_and_nothing_else_changes(make, monkeypatch):
    """One agent and one user own nearly every row (a store that serves one person): their
    scope tokens narrow nothing, so the MATCH leaves them out (bm25 counted their rows on
    every search). Answers are the same to the bit, and bob, who owns the other rows in
    the same agent and threads, still gets only his, as alice only hers."""
    store = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None)
    rng = random.Random(11)
    n = 2600
    users = ["bob" if i % 25 == 0 else "alice" for i in range(n)]
    store.add([f"r{i}" for i in range(n)], record_type="memory", record_ids=[f"m{i:05d}" for i in range(n)],
              index_texts=[[_row(rng)] for _ in range(n)], user_ids=users, agent_ids=["a1"] * n,
              thread_ids=[rng.choice(["t1", "t2"]) for _ in range(n)])
    owner = {f"m{i:05d}": users[i] for i in range(n)}
    kept: list = []
    narrow = SQLiteEngine._narrow_scopes

    def spy(self, conn, t, scopes, catalog):
        kept.append(narrow(self, conn, t, scopes, catalog))
        return kept[-1]

    compared = 0
    for query in ("alpha otter", "river", "otter stone beta", "alpha beta otter river stone"):
        for kwargs in ({"user_id": "alice"}, {"user_id": "bob"}, {"agent_id": "a1"}, {"user_id": "alice", "agent_id": "a1"},
                       {"user_id": "bob", "agent_id": "a1", "thread_id": "t1"}):
            for k in (3, 40):
                monkeypatch.setattr(SQLiteEngine, "_narrow_scopes", spy)
                got = store.search(query, k=k, strategy="keyword", **kwargs)
                monkeypatch.setattr(SQLiteEngine, "_narrow_scopes", lambda self, conn, t, scopes, catalog: scopes)
                want = store.search(query, k=k, strategy="keyword", **kwargs)
                assert [(r.id, d) for r, d in got] == [(r.id, d) for r, d in want], (query, kwargs, k)
                if "user_id" in kwargs:
                    assert got and all(owner[r.id] == kwargs["user_id"] for r, _ in got)
                compared += 1
    assert compared == 40
    # alice's and the agent's tokens were left out; bob's (4 % of the rows) and a thread's (~half) kept
    assert [("user", "alice")] not in kept and [("agent", "a1")] not in kept
    assert [] in kept and [("user", "bob")] in kept and [("thread", "t1"), ("user", "bob")] in kept


def test_split_on_a_version_2_index_of_the_text_alone(make, db_path, monkeypatch):
    """A store of schema version 2 opened without upgrading (its FTS index has no scope
    column: plain phrases, scopes applied after the match) splits the same way and answers
    what scoring every match answers."""
    store = make(memory_store_id="KC", search_strategy="keyword", vector_dim=None)
    owners = _fill(store, random.Random(26))
    store.close()
    _downgrade_to_v2(db_path, "KC")
    old = make(memory_store_id="KC", search_strategy="keyword", vector_dim=None, schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    old.search("alpha beta otter river stone", k=5, strategy="keyword")  # marks the words
    assert set(old._engine._keyword_words) == {f'"{w}"' for w in COMMON + RARE}
    for query, reference in (("otter alpha", "alpha otter"), ("river beta stone alpha", "beta alpha river stone")):
        for kwargs in ({}, {"user_id": "bob"}, {"user_id": "alice", "thread_id": "t1"}):
            for k in (3, 30):
                splits = _spy_on_splits(monkeypatch)
                got = old.search(query, k=k, strategy="keyword", **kwargs)
                assert splits[-1] is not None and splits[-1].with_common.startswith('("')
                _no_split(monkeypatch)
                want = old.search(reference, k=k, strategy="keyword", **kwargs)
                assert [(r.id, d) for r, d in got] == [(r.id, d) for r, d in want], (query, kwargs, k)
                if "user_id" in kwargs:
                    assert all(owners[(r.record_type, r.id)] == kwargs["user_id"] for r, _ in got)


def test_forget_drops_what_the_keyword_search_kept(store):
    """After a forget, nothing the keyword search kept in memory names the actor: the
    counted scope tokens (hex of the user id) and the marked query words are gone, as the
    vector cache's ids are."""
    store.search("alpha otter", k=5, strategy="keyword", user_id="alice")
    engine = store._engine
    assert engine._keyword_words and any("xu" in str(key) for key in engine._keyword_memo[1])
    store.forget(user_id="alice")
    assert engine._keyword_words == {} and engine._keyword_memo == (None, {})
    assert all(store.owners[(r.record_type, r.id)] != "alice" for r, _ in store.search("alpha otter", k=50, strategy="keyword"))
