"""A compiled metadata mask is kept across this process's writes and extended over the rows
they append (oramem.sqlite.vectors.VectorCache.metadata_mask): after adds, metadata updates,
re-embeddings, deletes, TTL expiry and purges it answers exactly what a freshly compiled
mask answers, and a search returns exactly (ids, order, distances) what a store object that
loaded the same file afresh returns. Users A and B share one agent and one thread; the
knowledge layer scopes facts by the ``kg_user`` metadata key, so a stale mask would show B
records of A: B never sees one."""

from __future__ import annotations

import numpy as np
import pytest

from oramem.sqlite.metamask import compile_mask, mask_key

from .conftest import DIM

FILTERS = [
    {"kg_user": "A"},
    {"kg_user": "B"},
    {"kg_user": {"$exists": False}},
    {"$and": [{"kg_user": "B"}, {"topic": {"$in": ["x", "z"]}}]},
    {"n": {"$gte": 2}},
    {"$or": [{"flag": True}, {"topic": {"$gt": "x"}}]},
    {"topic": {"$ne": "y"}, "n": {"$exists": True}},
    {"kg_user": {"$nin": ["A"]}, "topic": {"$lte": "y"}},
]
SCOPES = [{}, {"user_id": "B"}, {"user_id": "A"}, {"agent_id": "ag"}, {"thread_id": "th", "user_id": "B"}]


def _metadata(rng: np.random.Generator, user, fresh_texts: list) -> dict:
    md: dict = {}
    if user is not None:
        md["kg_user"] = user
    topic = rng.choice(["x", "y", "z", "new"])
    if topic == "new":  # a text the column has not seen: ranks move
        fresh_texts.append(f"t{len(fresh_texts):03d}"[::-1])
        topic = fresh_texts[-1]
    md["topic"] = str(topic)
    n = rng.integers(0, 5)
    if n == 1:
        md["n"] = 1
    elif n == 2:
        md["n"] = 2.5
    elif n == 3:
        md["n"] = None
    elif n == 4:
        md["n"] = int(rng.integers(0, 4))
    if rng.random() < 0.5:
        md["flag"] = bool(rng.random() < 0.5)
    return md


def _results(store, query, flt, scope, k=6):
    return [(r.id, r.user_id, (r.metadata or {}).get("kg_user"), d)
            for r, d in store.search(query_vector=query, k=k, metadata_filter=flt, **scope)]


def _check_masks_equal_fresh(store) -> int:
    """Every kept mask covering all rows equals a fresh compile on the live rows."""
    cache = store._engine._cache
    live = cache._live[: cache.size]
    checked = 0
    for flt in FILTERS:
        entry = cache._masks.entry(mask_key(flt, cache._metadata))
        if entry is None:
            continue
        kept, rows = entry
        assert rows == cache.size  # every search extended the masks it used
        full = np.zeros(rows, dtype=bool)
        full[kept] = True if kept.dtype != np.bool_ else kept[kept]
        fresh = compile_mask(flt, cache._metadata)
        assert np.array_equal(full & live, fresh & live), flt
        checked += 1
    return checked


@pytest.mark.parametrize("seed", range(6))
def test_kept_masks_follow_writes_exactly(make, clock, seed):
    rng = np.random.default_rng(seed)
    store = make()
    fresh_texts: list = []
    users: dict[str, object] = {}
    counter = 0

    def add(count: int) -> None:
        nonlocal counter
        ids, vecs, mds, owners, ttls = [], [], [], [], []
        for _ in range(count):
            rid = f"r{counter:04d}"
            counter += 1
            user = rng.choice(["A", "B", "none"])
            user = None if user == "none" else str(user)
            ids.append(rid)
            vecs.append(rng.normal(size=DIM).tolist())
            mds.append(_metadata(rng, user, fresh_texts))
            owners.append(user)
            ttls.append(1 if rng.random() < 0.15 else None)
            users[rid] = user
        store.add([f"text {rid}" for rid in ids], "memory", record_ids=ids, embeddings=vecs, metadata=mds,
                  user_ids=owners, agent_ids="ag", thread_ids="th", ttl_days=ttls)

    add(60)
    # every filter asked twice: the first ask of a key goes through SQL, then masks are kept
    for flt in FILTERS:
        for _ in range(2):
            _results(store, rng.normal(size=DIM).tolist(), flt, {})
    assert _check_masks_equal_fresh(store) == len(FILTERS)

    for step in range(40):
        action = rng.choice(["add", "update", "revector", "delete", "expire", "purge"], p=[.35, .25, .1, .15, .1, .05])
        alive = sorted(users)
        if action == "add" or not alive:
            add(int(rng.integers(1, 5)))
        elif action == "update":
            rid = str(rng.choice(alive))
            # the metadata may move the record from A to B (or out of both)
            user = rng.choice(["A", "B", "none"])
            store.update("memory", rid, metadata=_metadata(rng, None if user == "none" else str(user), fresh_texts))
        elif action == "revector":
            store.update("memory", str(rng.choice(alive)), embedding=rng.normal(size=DIM).tolist())
        elif action == "delete":
            rid = str(rng.choice(alive))
            store.delete("memory", rid)
            del users[rid]
        elif action == "expire":
            clock.advance(days=1)
        else:
            store.purge_expired()
        reference = make(vector_sidecar=False)  # loads the file afresh: fresh masks
        query = rng.normal(size=DIM).tolist()
        for flt in FILTERS:
            for scope in SCOPES:
                got = _results(store, query, flt, scope)
                for _ in range(2):  # SQL path on the first ask of a key, then a fresh in-memory mask
                    assert got == _results(reference, query, flt, scope), (step, action, flt, scope)
                if scope.get("user_id") == "B":
                    assert all(owner == "B" for _, owner, _, _ in got)
                if flt == {"kg_user": "B"}:
                    assert all(tag == "B" for _, _, tag, _ in got)
        reference.close()
        assert _check_masks_equal_fresh(store) == len(FILTERS)


def test_b_never_sees_a_record_moved_to_a_through_a_kept_mask(make):
    store = make()
    rng = np.random.default_rng(3)
    near = rng.normal(size=DIM)
    store.add(["b1", "b2", "a1"], "memory", record_ids=["b1", "b2", "a1"],
              embeddings=[near.tolist(), rng.normal(size=DIM).tolist(), rng.normal(size=DIM).tolist()],
              metadata=[{"kg_user": "B"}, {"kg_user": "B"}, {"kg_user": "A"}], agent_ids="ag", thread_ids="th",
              user_ids=["B", "B", "A"])
    flt = {"kg_user": "B"}
    for _ in range(2):
        assert {r.id for r, _ in store.search(query_vector=near.tolist(), k=5, metadata_filter=flt)} == {"b1", "b2"}
    # b1 now belongs to A (same vector, same rows' position before the write)
    assert store.update("memory", "b1", metadata={"kg_user": "A"}) == 1
    got = store.search(query_vector=near.tolist(), k=5, metadata_filter=flt)
    assert [r.id for r, _ in got] == ["b2"]
    # A adds a record right next to B's query: B's kept mask grows, without it
    store.add(["a2"], "memory", record_ids="a2", embeddings=[near.tolist()], metadata={"kg_user": "A"},
              agent_ids="ag", thread_ids="th", user_ids="A")
    got = store.search(query_vector=near.tolist(), k=5, metadata_filter=flt)
    assert [r.id for r, _ in got] == ["b2"]
    got = store.search(query_vector=near.tolist(), k=5, metadata_filter={"kg_user": "A"})
    assert {r.id for r, _ in got} == {"a1", "a2", "b1"}


def test_a_kept_mask_goes_back_to_sql_when_an_append_makes_a_column_inexact(make):
    store = make()
    rng = np.random.default_rng(5)
    store.add([f"t{i}" for i in range(20)], "memory", record_ids=[f"r{i}" for i in range(20)],
              embeddings=[rng.normal(size=DIM).tolist() for _ in range(20)], metadata=[{"n": i} for i in range(20)])
    flt = {"n": {"$gte": 10}}
    for _ in range(2):
        store.search(query_vector=rng.normal(size=DIM).tolist(), k=30, metadata_filter=flt)
    cache = store._engine._cache
    assert cache._masks.entry(mask_key(flt, cache._metadata)) is not None
    store.add(["big"], "memory", record_ids="big", embeddings=[rng.normal(size=DIM).tolist()],
              metadata={"n": 2**60 + 1})
    got = {r.id for r, _ in store.search(query_vector=rng.normal(size=DIM).tolist(), k=30, metadata_filter=flt)}
    assert got == {f"r{i}" for i in range(10, 20)} | {"big"}
    assert cache._masks.entry(mask_key(flt, cache._metadata)) is None  # dropped: the SQL path answered


@pytest.mark.parametrize("seed", range(4))
def test_mask_rows_is_restrict_of_mask(seed):
    """The type, scope and TTL tests over a selective metadata mask's rows only
    (VectorCache.mask_rows) give exactly restrict(mask(...), rows)."""
    from oramem.requests import Scope, ScopeMatch
    from oramem.sqlite.timefmt import epoch_micros
    from oramem.sqlite.vectors import VectorCache

    rng = np.random.default_rng(seed)
    types = ["fact", "memory", "message", "user_profile"]
    expiries = [None, "2030-01-01T00:00:00.000000+00:00", "2031-01-01T00:00:00.000000+00:00"]

    def rows(start, n):
        out = []
        for i in range(start, start + n):
            rtype = str(rng.choice(types))
            out.append((i, i, rng.normal(size=DIM).astype("<f4").tobytes(), rtype, f"id{i}",
                        rng.choice(["th", None]), rng.choice(["A", "B", None]), rng.choice(["ag", "other", None]),
                        expiries[int(rng.integers(0, 3))], 0))
        return out

    cache = VectorCache(DIM)
    cache.load(rows(0, 200), ("g", 0))
    cache.patch(("g", 0), ("g", 1), [int(s) for s in rng.choice(200, 30, replace=False)], rows(200, 20))
    now = epoch_micros("2030-06-01T00:00:00.000000+00:00")
    scope_choices = [Scope.any(), Scope(ScopeMatch.IS_NULL), Scope(ScopeMatch.EQUALS, "A"), Scope(ScopeMatch.EQUALS, "B"),
                     Scope(ScopeMatch.EQUALS, "th"), Scope(ScopeMatch.EQUALS, "ag"), Scope(ScopeMatch.EQUALS, "nobody")]
    for _ in range(60):
        wanted = tuple(sorted(set(rng.choice(types, int(rng.integers(1, 5))).tolist())))
        scopes = tuple(scope_choices[int(i)] for i in rng.integers(0, len(scope_choices), 3))
        selected = np.flatnonzero(rng.random(cache.size) < 0.2).astype(np.int32)
        want = cache.restrict(cache.mask(wanted, scopes, now, None), selected)
        got = cache.mask_rows(selected, wanted, scopes, now)
        assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(4))
def test_kept_type_and_scope_tests_equal_a_fresh_test_after_writes(seed):
    """VectorCache.mask keeps its type and scope tests per (types, scopes) and tests only
    appended rows again: after this process's writes (records dropped, rows appended, a
    scope value first seen in them), across expiry, its mask is exactly the rows a test of
    every row passes; user A's mask never holds a row of user B."""
    from oramem.requests import Scope, ScopeMatch
    from oramem.sqlite.timefmt import epoch_micros
    from oramem.sqlite.vectors import VectorCache

    rng = np.random.default_rng(seed)
    types = ["fact", "memory", "message", "user_profile"]
    expiries = [None, "2030-01-01T00:00:00.000000+00:00", "2031-01-01T00:00:00.000000+00:00"]
    users = ["A", "B", None]
    table: list[tuple] = []  # (seq, type, thread, user, agent, expiry micros) per cache row
    dead: set[int] = set()

    def rows(start, n):
        out = []
        for i in range(start, start + n):
            rtype = str(rng.choice(types))
            row = (i, i, rng.normal(size=DIM).astype("<f4").tobytes(), rtype, f"id{i}", rng.choice(["th", None]),
                   users[int(rng.integers(0, len(users)))], rng.choice(["ag", "other", None]),
                   expiries[int(rng.integers(0, len(expiries)))], 0)
            out.append(row)
            user = f"id{i}" if rtype == "user_profile" else row[6]
            table.append((i, rtype, row[5], user, row[7], epoch_micros(row[8])))
        return out

    cache = VectorCache(DIM)
    cache.load(rows(0, 150), ("g", 0))
    scope_choices = [Scope.any(), Scope(ScopeMatch.IS_NULL), Scope(ScopeMatch.EQUALS, "A"), Scope(ScopeMatch.EQUALS, "B"),
                     Scope(ScopeMatch.EQUALS, "C"), Scope(ScopeMatch.EQUALS, "th"), Scope(ScopeMatch.EQUALS, "ag")]

    def passes(row, wanted, scopes, now):
        seq, rtype, *values, expires = row
        if seq in dead or rtype not in wanted or expires <= now:
            return False
        for scope, value in zip(scopes, values):
            if scope.match == ScopeMatch.IS_NULL and value is not None:
                return False
            if scope.match == ScopeMatch.EQUALS and value != scope.value:
                return False
        return True

    asks = [(tuple(sorted(set(rng.choice(types, int(rng.integers(1, 5))).tolist()))),
             tuple(scope_choices[int(i)] for i in rng.integers(0, len(scope_choices), 3))) for _ in range(12)]
    asks.append((("fact", "memory"), (Scope.any(), Scope(ScopeMatch.EQUALS, "A"), Scope.any())))
    version = 0
    for step in range(8):
        now = epoch_micros(["2029-01-01T00:00:00.000000+00:00", "2030-06-01T00:00:00.000000+00:00",
                            "2032-01-01T00:00:00.000000+00:00"][step % 3])
        for wanted, scopes in asks:
            got = cache.mask(wanted, scopes, now, None)
            want = np.array([passes(row, wanted, scopes, now) for row in table])
            assert np.array_equal(got, want), (step, wanted, scopes)
            if scopes[1].match == ScopeMatch.EQUALS:
                assert all(table[i][3] == scopes[1].value for i in np.flatnonzero(got))
        gone = [int(s) for s in rng.choice(len(table), 10, replace=False)]
        dead.update(gone)
        if step == 3:
            users.append("C")  # a scope value the cache first sees in appended rows
        if step == 4:  # rows that expire before any row so far (and before the next clock)
            expiries.append("2028-06-01T00:00:00.000000+00:00")
        cache.patch(("g", version), ("g", version + 1), gone, rows(len(table), int(rng.integers(1, 20))))
        version += 1


def _at(minute: int) -> str:
    return f"2026-01-01T{minute // 60:02d}:{minute % 60:02d}:00+00:00"


def _visible(now: str, user: str) -> dict:
    """A filter shaped like the knowledge layer's visibility: time bounds that move with the
    clock, and the user's scope."""
    return {"$and": [{"at": {"$lte": now}}, {"$or": [{"until": {"$exists": False}}, {"until": {"$gt": now}}]},
                     {"kg_user": user}]}


@pytest.mark.parametrize("seed", range(4))
def test_moving_time_bounds_share_a_kept_mask_and_stay_exact(make, seed):
    """A string range bound stands for the stored text it comes to (metamask.mask_key), so
    searches whose clock moved past no stored time share one kept mask, and a time stored
    between two clocks (or a write that adds one) gives the right answer at once. A and B
    share the agent and the thread: neither ever gets the other's record."""
    rng = np.random.default_rng(seed)
    store = make()
    counter = 0

    def add(count: int, around: int) -> None:
        nonlocal counter
        ids, mds, owners = [], [], []
        for _ in range(count):
            rid = f"r{counter:04d}"
            counter += 1
            user = str(rng.choice(["A", "B"]))
            md = {"at": _at(int(around + rng.integers(-30, 30))), "kg_user": user}
            if rng.random() < 0.3:
                md["until"] = _at(int(around + rng.integers(-10, 60)))
            ids.append(rid)
            mds.append(md)
            owners.append(user)
        store.add([f"text {rid}" for rid in ids], "memory", record_ids=ids, metadata=mds, user_ids=owners,
                  embeddings=[rng.normal(size=DIM).tolist() for _ in ids], agent_ids="ag", thread_ids="th")

    add(80, 120)
    minute = 120
    for step in range(30):
        minute += int(rng.integers(0, 7))
        if rng.random() < 0.4:
            add(int(rng.integers(1, 4)), minute)
        elif rng.random() < 0.2:
            rid = f"r{int(rng.integers(0, counter)):04d}"
            store.update("memory", rid, metadata={"at": _at(minute + int(rng.integers(-3, 4))), "kg_user": str(rng.choice(["A", "B"]))})
        query = rng.normal(size=DIM).tolist()
        reference = make(vector_sidecar=False)
        # now, or a view of the past (an as-of read): kept masks of many bounds live side by side
        seen = minute if rng.random() < 0.5 else minute - int(rng.integers(0, 60))
        for user in ("A", "B"):
            flt = _visible(_at(seen) if rng.random() < 0.5 else _at(seen)[:-6] + ".5+00:00", user)
            got = _results(store, query, flt, {}, k=8)
            for _ in range(2):  # the reference: SQL on the first ask, then a fresh mask
                assert got == _results(reference, query, flt, {}, k=8), (step, user)
            assert all(tag == user for _, _, tag, _ in got)
        reference.close()
        cache = store._engine._cache
        live = cache._live[: cache.size]
        for user in ("A", "B"):
            flt = _visible(_at(seen), user)
            entry = cache._masks.entry(mask_key(flt, cache._metadata))
            if entry is not None and entry[1] == cache.size:
                kept = np.zeros(cache.size, dtype=bool)
                kept[entry[0]] = True if entry[0].dtype != np.bool_ else entry[0][entry[0]]
                assert np.array_equal(kept & live, compile_mask(flt, cache._metadata) & live)


def test_a_clock_that_passes_no_stored_time_compiles_nothing(make, monkeypatch):
    store = make()
    rng = np.random.default_rng(2)
    times = [_at(m) for m in (10, 20, 30)]
    store.add(["a", "b", "c"], "memory", record_ids=["a", "b", "c"], embeddings=[rng.normal(size=DIM).tolist() for _ in range(3)],
              metadata=[{"at": t, "kg_user": "B"} for t in times])
    query = rng.normal(size=DIM).tolist()

    def found(minute: int) -> set:
        return {r.id for r, _ in store.search(query_vector=query, k=5, metadata_filter=_visible(_at(minute), "B"))}

    assert found(21) == {"a", "b"}  # SQL: the first ask of these keys
    assert found(22) == {"a", "b"}  # columns built: compiled and kept
    compiled: list = []
    real = compile_mask
    monkeypatch.setattr("oramem.sqlite.vectors.compile_mask", lambda flt, cols: compiled.append(flt) or real(flt, cols))
    assert [found(m) for m in (23, 25, 29)] == [{"a", "b"}] * 3
    assert compiled == []  # the bound moved past no stored time: the kept mask answers
    assert found(30) == {"a", "b", "c"} and len(compiled) == 1  # it reached one: compiled again
    store.add(["d"], "memory", record_ids="d", embeddings=[query], metadata={"at": _at(31), "kg_user": "A"})
    # a time now stored between the last clock and the next: a new key, compiled afresh
    assert found(32) == {"a", "b", "c"} and len(compiled) == 2
    store.add(["e"], "memory", record_ids="e", embeddings=[query], metadata={"at": _at(31), "kg_user": "B"})
    # no new text: the kept mask is extended over the appended row only
    assert found(33) == {"a", "b", "c", "e"}
    assert len(compiled) == 3 and compiled[-1] == _visible(_at(33), "B")


@pytest.mark.parametrize(
    "a, b, same",
    [
        ({"t": {"$lte": "b"}}, {"t": {"$lte": "bz"}}, True),   # no text in (b, bz]
        ({"t": {"$lte": "b"}}, {"t": {"$lte": "c"}}, False),   # "c" is stored
        ({"t": {"$lt": "c"}}, {"t": {"$lte": "b"}}, True),     # both: texts <= "b"
        ({"t": {"$gt": "a"}}, {"t": {"$gte": "b"}}, True),     # both: texts >= "b"
        ({"t": {"$gt": "b"}}, {"t": {"$gte": "b"}}, False),
        ({"t": {"$gt": "c"}}, {"t": {"$gt": "zz"}}, True),     # no text above: nothing passes
        ({"t": {"$not": {"$lte": "b"}}}, {"t": {"$not": {"$lte": "bb"}}}, True),
        ({"t": {"$lte": "b"}}, {"t": {"$gte": "b"}}, False),
        ({"t": {"$lte": 2}}, {"t": {"$lte": 3}}, False),       # numbers keep their values
        ({"t": "b"}, {"t": "bb"}, False),
    ],
)
def test_mask_key_is_the_boundary_text(a, b, same):
    from oramem.sqlite.metamask import Column

    class Cols:
        row_seqs = np.arange(3)

        def column(self, key):
            return Column(np.full(3, 5, dtype=np.int8), np.full(3, np.nan), np.arange(3), ["a", "b", "c"], True)

    assert (mask_key(a, Cols()) == mask_key(b, Cols())) is same
    assert mask_key(a, Cols()) is not None and mask_key(b, Cols()) is not None


def test_mask_key_refuses_what_is_never_kept():
    class Cols:
        def column(self, key):
            raise AssertionError("not read")

    assert mask_key({"t": {"$lte": "a\x00b"}}, Cols()) is None  # the SQL path answers it
    assert mask_key({"t": {"$in": ("a",)}}, Cols()) is None  # a tuple is not a JSON document
