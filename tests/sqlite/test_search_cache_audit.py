"""Adversarial differential tests of the vector search's caches (kept metadata masks under
``metamask.mask_key``, kept type and scope masks, the TTL skip, ``max_distance`` pruning):
a store whose caches are warm answers every search exactly (ids, order, distances) as a
store object that reads the same file afresh, across this store's writes, another store
object's writes to the same file (another process, as far as the cache can tell), reopens
(the vector sidecar), updates of metadata, text, vector and TTL, deletes and re-adds of
the same id under another user, purges and a moving clock. Metadata mixes JSON types in
one field (string, number, bool, null, object, array, missing), unicode texts whose code
point and UTF-8 orders are compared, dotted keys; filters nest ``$and``/``$or``/``$not``
with ``$in`` lists and string range bounds at, between, below and above stored texts.
Users A and B share the agent and the thread: a search scoped to B (``exact_user_match``)
never returns a record of A."""

from __future__ import annotations

import numpy as np
import pytest

from oramem.sqlite.timefmt import epoch_micros

from .conftest import DIM

TEXTS = ["", "a", "a\x01", "ab", "b", "B", "é", "e\u0301", "ß", "\u00ff", "\u0100", "\uffff", "😀", "\U0010ffff",
         "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00.5+00:00"]
NEAR = ["ab", "b", "é", "😀"]
OTHERS = [0, 1, 1.0, 2.5, -0.0, -3, True, False, None, {"x": 1}, [1, "a"]]
KEYS = ["s", "n", "a.b", "kg_user"]


def _value(rng: np.random.Generator):
    if rng.random() < 0.6:
        return TEXTS[int(rng.integers(0, len(TEXTS)))]
    return OTHERS[int(rng.integers(0, len(OTHERS)))]


def _metadata(rng: np.random.Generator, user):
    md: dict = {}
    for key in ("s", "n", "a.b"):
        if rng.random() < 0.8:
            md[key] = _value(rng)
    if user is not None and rng.random() < 0.9:
        md["kg_user"] = user  # sometimes a record of A claims no user in its metadata
    return md or None


def _scalar(rng: np.random.Generator):
    while True:
        value = _value(rng)
        if not isinstance(value, (dict, list)):
            return value


def _bound(rng: np.random.Generator, texts: list = TEXTS):
    """A range bound: a stored text (half the time), one just above or below it, or a number."""
    if rng.random() < 0.25:
        return [0, 1, 1.0, 2.5, -1][int(rng.integers(0, 5))]
    text = texts[int(rng.integers(0, len(texts)))]
    variant = int(rng.integers(0, 4)) if rng.random() < 0.5 else 0
    if variant == 1:
        return text + "\x01"  # just above the stored text
    if variant == 2:
        return text[:-1]  # below it (a prefix)
    if variant == 3:
        return text + "\U0010ffff"
    return text


def _condition(rng: np.random.Generator, depth: int = 0):
    kind = int(rng.integers(0, 8))
    if kind == 0:
        return _value(rng) if rng.random() < 0.8 else TEXTS[int(rng.integers(0, len(TEXTS)))]
    if kind <= 3:
        cond = {str(rng.choice(["$gt", "$gte", "$lt", "$lte"])): _bound(rng)}
        if rng.random() < 0.4:  # a second bound in the same condition
            cond[str(rng.choice(["$gt", "$gte", "$lt", "$lte"]))] = _bound(rng)
        return cond
    if kind == 4:
        return {str(rng.choice(["$in", "$nin"])): [_scalar(rng) for _ in range(int(rng.integers(1, 4)))]}
    if kind == 5:
        return {"$exists": bool(rng.random() < 0.5)}
    if kind == 6:
        return {str(rng.choice(["$eq", "$ne"])): _scalar(rng)}
    if depth < 1:
        inner = _condition(rng, depth + 1)
        if isinstance(inner, dict) and not all(op.startswith("$") for op in inner):
            inner = [inner]  # a raw object under $not would read as operators: a list value instead
        return {"$not": inner}
    return {"$exists": True}


def _filter(rng: np.random.Generator, depth: int = 0) -> dict:
    if depth < 2 and rng.random() < 0.3:
        return {str(rng.choice(["$and", "$or"])): [_filter(rng, depth + 1) for _ in range(int(rng.integers(1, 4)))]}
    out: dict = {}
    for _ in range(int(rng.integers(1, 3))):
        out[KEYS[int(rng.integers(0, len(KEYS)))]] = _condition(rng)
    return out


def _scope(rng: np.random.Generator) -> dict:
    scope: dict = {}
    user = rng.choice(["A", "B", "none", "any"])
    if user in ("A", "B"):
        scope["user_id"] = str(user)
        scope["exact_user_match"] = bool(rng.random() < 0.5)
    elif user == "none":
        scope["user_id"] = None
        scope["exact_user_match"] = True
    if rng.random() < 0.3:
        scope["thread_id"] = "th"
    if rng.random() < 0.3:
        scope["agent_id"] = "ag"
    if rng.random() < 0.3:
        scope["record_types"] = [str(rng.choice(["memory", "fact", "user_profile"]))]
    return scope


def _answer(store, query, k, flt, scope, bound=None) -> list:
    return [(r.record_type, r.id, r.user_id, d) for r, d in store.search(
        query_vector=query, k=k, metadata_filter=flt, max_distance=bound, strategy="vector", **scope)]


@pytest.mark.parametrize("seed", range(3))
def test_warm_caches_answer_as_a_fresh_store_across_every_kind_of_write(make, clock, seed):
    """Each step: a write by this store or by another store object on the file (or a clock
    move, a purge, a reopen), then searches with random filters, scopes and k, and range tests
    whose bound moves on every search. Each answer equals (ids, order, distances) a fresh store
    object's, asked twice (its first ask of a key runs the filter in SQL, the second compiles a
    mask), and a store object whose filters all run in SQL (the filter, TTL and scope checked
    apart from the cache's masks); no record it returns is expired (a read by key says); a
    bound at a returned distance, and one ulp either side, cuts the answer exactly there."""
    rng = np.random.default_rng(seed)
    warm = make()
    other = make()  # another connection on the same file: its writes must be noticed
    owners: dict[tuple[str, str], object] = {}
    counter = 0
    # vectors from a small pool (duplicates: exact ties) plus random ones
    pool = [rng.normal(size=DIM).tolist() for _ in range(6)]

    def vector():
        return pool[int(rng.integers(0, len(pool)))] if rng.random() < 0.4 else rng.normal(size=DIM).tolist()

    def add(writer, count: int, rid=None) -> None:
        nonlocal counter
        batch: dict = {}  # per record type: one add of several records
        for _ in range(count):
            rtype = str(rng.choice(["memory", "fact"]))
            key = (rtype, rid) if rid is not None else (rtype, f"r{counter:03d}")
            counter += 1
            user = rng.choice(["A", "B", "none"])
            user = None if user == "none" else str(user)
            ttl = int(rng.choice([1, 2])) if rng.random() < 0.3 else None
            batch.setdefault(rtype, []).append((key[1], vector(), _metadata(rng, user), user, ttl))
            owners[key] = user
        for rtype, rows in batch.items():
            rids, vecs, mds, users, ttls = (list(column) for column in zip(*rows))
            writer.add([f"text {r}" for r in rids], rtype, record_ids=rids, embeddings=vecs, metadata=mds,
                       user_ids=users, agent_ids="ag", thread_ids="th", ttl_days=ttls)

    add(warm, 70)  # over 64 rows: the columns are first decoded by the numpy path
    # profiles are in their own actor's scope (user A's profile is A's, whatever its user_id says)
    for actor in ("A", "B"):
        warm.add([f"profile of {actor}"], "user_profile", record_ids=[actor], embeddings=[vector()],
                 metadata=[_metadata(rng, actor)])
    ops = ["$gt", "$gte", "$lt", "$lte"]

    def ranged():
        """A string range test on one field, a new bound (and operator) on every search: the
        kept masks of differing bounds must never be confused (metamask.mask_key)"""
        field = str(rng.choice(["s", "a.b"]))
        test = {str(rng.choice(ops)): _bound(rng, NEAR)}  # a few texts: $lt and $lte at one text meet
        kind = int(rng.integers(0, 4))
        if kind == 0:
            return {field: test}
        if kind == 1:
            return {field: {**test, str(rng.choice(ops)): _bound(rng, NEAR)}}
        if kind == 2:
            return {field: {"$not": test}}
        return {"$and": [{"kg_user": str(rng.choice(["A", "B"]))}, {"$or": [{field: test}, {"n": {"$lt": _bound(rng)}}]}]}

    filters = [_filter(rng) for _ in range(14)] + [None, {"kg_user": "B"}, {"$or": [{"kg_user": {"$exists": False}},
                                                                            {"kg_user": "B"}]}] + [ranged] * 8
    checked = expired_rows = 0
    for step in range(14):
        # the references are opened before the step's write (an open purges expired records:
        # a write after it, or a clock moved after it, leaves expired records for the searches);
        # each loads its cache on its first search, after the write
        reference = make(vector_sidecar=False)
        in_sql = make(vector_sidecar=False)  # every metadata filter in SQL (no in-memory mask)
        in_sql.search(query_vector=vector(), k=1)
        in_sql._engine._cache.metadata_mask = lambda flt, fetch: None  # the same object after reloads
        writer = warm if rng.random() < 0.6 else other
        action = rng.choice(["add", "metadata", "text", "vector", "ttl", "readd", "purge", "clock", "reopen"],
                            p=[.14, .14, .08, .08, .16, .1, .04, .18, .08])
        if step in (6, 10):  # at least one day passes, and a record expires at once, in every run
            action = "clock" if step == 6 else "ttl"
        alive = sorted(owners)
        if action == "add" or not alive:
            add(writer, int(rng.integers(1, 4)))
        elif action == "metadata":
            key = alive[int(rng.integers(0, len(alive)))]
            user = rng.choice(["A", "B", "none"])
            writer.update(key[0], key[1], metadata=_metadata(rng, None if user == "none" else str(user)))
        elif action == "text":
            key = alive[int(rng.integers(0, len(alive)))]
            writer.update(key[0], key[1], text=f"changed {step}", embedding=vector())
        elif action == "vector":
            key = alive[int(rng.integers(0, len(alive)))]
            writer.update(key[0], key[1], embedding=vector())
        elif action == "ttl":
            key = alive[int(rng.integers(0, len(alive)))]
            # 0 days: expired at once (earlier than any expiry so far)
            days = int(rng.choice([0, 0, 1, 3])) if rng.random() < 0.8 else None
            if step == 10:  # this store expires a record at the query, earlier than any row before it
                query = vector()
                warm.update(key[0], key[1], ttl_days=0, embedding=query)
            else:
                writer.update(key[0], key[1], ttl_days=days)
        elif action == "readd":  # the same id again, maybe for the other user
            key = alive[int(rng.integers(0, len(alive)))]
            writer.delete(key[0], key[1])
            del owners[key]
            add(writer, 1, rid=key[1])
        elif action == "purge":
            writer.purge_expired()
            for key in list(owners):
                if warm.get(key[0], key[1]) is None:
                    del owners[key]
        elif action == "clock":
            clock.advance(hours=float(rng.choice([6, 13, 25, 30])) if step != 6 else 30)
        else:
            warm.close()
            warm = make()
        if step != 10:
            query = vector()
        for flt in filters:
            # a moving range test answers with every record it passes: any row a wrong kept
            # mask adds or drops shows
            k = 64 if callable(flt) or rng.random() < 0.25 else int(rng.integers(1, 8))
            flt = flt() if callable(flt) else flt
            scope = _scope(rng)
            got = _answer(warm, query, k, flt, scope)
            assert got == _answer(in_sql, query, k, flt, scope), (step, action, flt, scope)
            for _ in range(2):  # the reference: SQL on the first ask of a key, then a fresh mask
                assert got == _answer(reference, query, k, flt, scope), (step, action, flt, scope)
            if scope.get("exact_user_match") and "user_id" in scope:
                # (a profile is in its own actor's scope)
                assert all((rid if rtype == "user_profile" else user) == scope["user_id"]
                           for rtype, rid, user, _ in got), (flt, scope)
            # no expired record (a read by key hides one): checked apart from every cache
            assert all(reference.get(rtype, rid) is not None for rtype, rid, _, _ in got), (step, action)
            if got and rng.random() < 0.5:  # a bound equal to a returned distance, and just around it
                at = got[int(rng.integers(0, len(got)))][3]
                for bound in (at, max(0.0, float(np.nextafter(at, -1.0))), float(np.nextafter(at, 3.0))):
                    bounded = _answer(warm, query, k, flt, scope, bound)
                    assert bounded == [row for row in got if row[3] <= bound], (flt, scope, bound)
                    assert bounded == _answer(reference, query, k, flt, scope, bound)
                    assert bounded == _answer(in_sql, query, k, flt, scope, bound)
            checked += 1
        in_sql.close()
        cache = warm._engine._cache
        now = epoch_micros(clock.now.isoformat())
        expired_rows += int((cache._live[: cache.size] & (cache._expires[: cache.size] <= now)).sum())
        reference.close()
    assert checked == 14 * len(filters)
    assert expired_rows > 0  # searches ran while expired, unpurged records were in the cache


def _cache_rows(rng: np.random.Generator, dim: int, records: int):
    """Cache rows of ``records`` records with 1-3 rows each (later rows flagged): vectors from a
    small pool (exact duplicates), scaled copies, zero vectors and random ones."""
    pool = [rng.normal(size=dim) for _ in range(3)]
    rows, chunk = [], 0
    for seq in range(records):
        for index in range(int(rng.integers(1, 4))):
            kind = rng.random()
            if kind < 0.35:
                v = pool[int(rng.integers(0, len(pool)))]
            elif kind < 0.45:
                v = pool[int(rng.integers(0, len(pool)))] * float(rng.choice([1e-30, 3.0, 1e30]))
            elif kind < 0.5:
                v = np.zeros(dim)
            else:
                v = rng.normal(size=dim)
            rows.append((chunk, seq, np.asarray(v, dtype="<f4").tobytes(), "memory", f"id{seq}", "th",
                         str(rng.choice(["A", "B"])), "ag", None, index))
            chunk += 1
    return rows, pool


@pytest.mark.parametrize("dim", [1, 2, 3, 8, 64])
def test_a_bounded_nearest_is_the_unbounded_one_cut_at_the_bound(dim):
    """VectorCache.nearest(within=b) drops rows whose float32 distance exceeds b by more than
    the product's error bound before the exact rescoring: its answer is exactly the
    unbounded answer's records at most b away (ids, order, distances), at bounds equal to a
    record's exact distance and one ulp either side, with duplicated, zero, tiny and huge
    vectors, several rows per record with and without the tail handicap, boolean masks and
    row positions, and the lazy accept path."""
    from oramem.sqlite.vectors import GaveUp, VectorCache

    rng = np.random.default_rng(dim)
    rows, pool = _cache_rows(rng, dim, 60)
    cache = VectorCache(dim)
    cache.load(rows, ("g", 0))
    compared = 0
    for _ in range(40):
        query = pool[int(rng.integers(0, len(pool)))] if rng.random() < 0.5 else rng.normal(size=dim)
        handicap = float(rng.choice([0.0, 0.05]))
        selected = rng.random(cache.size) < rng.choice([0.3, 1.0])
        mask = selected if rng.random() < 0.5 else np.flatnonzero(selected).astype(np.int32)
        allowed = {int(s) for s in rng.choice(60, 40, replace=False)}
        accept = (lambda seqs: {s for s in seqs if s in allowed}) if rng.random() < 0.3 else None
        full = cache.nearest(query, np.flatnonzero(selected & np.isin(cache._seqs[: cache.size], list(allowed)))
                             if accept else mask, None, handicap=handicap)
        if not full:
            continue
        at = full[int(rng.integers(0, len(full)))][1]
        for bound in (at, max(0.0, float(np.nextafter(at, -1.0))), float(np.nextafter(at, 3.0)), 0.0, 2.0):
            for k in (1, 2, 5, None):
                try:
                    unbounded = cache.nearest(query, mask, k, accept, handicap=handicap)
                    bounded = cache.nearest(query, mask, k, accept, handicap=handicap, within=bound)
                except GaveUp:
                    continue
                assert bounded == [(s, d) for s, d in unbounded if d <= bound], (bound, k, handicap)
                if k is None:
                    assert unbounded == full
                compared += 1
    assert compared > 300


class _Undo(Exception):
    pass


@pytest.mark.parametrize("seed", range(4))
def test_rolled_back_block_writes_leave_no_trace_in_the_caches(make, seed):
    """Writes inside ``store.transaction()`` patch the cache with state that a rollback (of
    the block, or of a nested savepoint in a block that then commits) takes back. The change
    counter goes back with it, so another connection's writes can bring it to the very
    version the cache held inside the rolled-back part: the rollback must have dropped the
    cache, and searches answer as a fresh store object. B never gets A's records, nor B's
    records that the rolled-back writes moved to A."""
    rng = np.random.default_rng(100 + seed)
    store = make()
    other = make()
    near = rng.normal(size=DIM)
    ids = [f"r{i:02d}" for i in range(30)]
    users = [str(rng.choice(["A", "B"])) for _ in ids]
    store.add(ids, "memory", record_ids=ids, embeddings=[(near + 0.3 * rng.normal(size=DIM)).tolist() for _ in ids],
              metadata=[{"kg_user": u, "at": f"t{i:02d}"} for i, u in enumerate(users)], user_ids=users,
              agent_ids="ag", thread_ids="th")
    filters = [{"kg_user": "B"}, {"at": {"$lte": "t15"}}, {"$and": [{"kg_user": "B"}, {"at": {"$gt": "t05"}}]}]
    scopes = [{}, {"user_id": "B", "exact_user_match": True}]

    def answers(st):
        return [[(r.id, r.user_id, d) for r, d in st.search(query_vector=near.tolist(), k=8, metadata_filter=flt, **scope)]
                for flt in filters for scope in scopes]

    for _ in range(2):  # columns built, masks kept
        answers(store)
    b_ids = [i for i, u in zip(ids, users) if u == "B"]
    writes = 0

    def scramble():
        """Move B's records to A next to the query, add A's records claiming B with new texts."""
        nonlocal writes
        for rid in b_ids[:3]:
            store.update("memory", rid, metadata={"kg_user": "A", "at": "t00"}, embedding=near.tolist())
            writes += 1
        extra = [f"x{writes}{j}" for j in range(3)]
        store.add(extra, "memory", record_ids=extra, embeddings=[near.tolist()] * 3,
                  metadata=[{"kg_user": "B", "at": "t10a"}] * 3, user_ids="A", agent_ids="ag", thread_ids="th")
        writes += 1
        answers(store)  # the caches follow the block's writes
        answers(store)

    with store.transaction():
        if seed % 2:
            try:
                with store.transaction():  # a savepoint; the block commits
                    scramble()
                    raise _Undo
            except _Undo:
                pass
        else:
            scramble()
    if seed % 2 == 0:
        with pytest.raises(_Undo):
            with store.transaction():
                scramble()
                raise _Undo
        writes //= 2  # the first scramble committed: only the second one's writes are undone
    if seed >= 2:
        answers(store)  # a search between the rollback and the other connection's writes
    for i in range(writes):  # another connection brings the counter to the rolled-back version
        other.update("memory", ids[i], metadata={"kg_user": users[i], "at": f"t{i:02d}", "w": i})
    got = answers(store)
    reference = make(vector_sidecar=False)
    for _ in range(2):  # SQL on the first ask of a key, then a fresh mask
        assert got == answers(reference)
    for (flt, scope), rows in zip([(f, s) for f in filters for s in scopes], got):
        if scope:
            assert all(user == "B" for _, user, _ in rows)


def test_filters_that_share_a_mask_key_pass_the_same_rows_and_answer_as_sql(make):
    """Every string range test (each operator, and under ``$not``) at every stored text, just
    above and below each, and at texts no record holds, next to number bounds: filters whose
    metamask.mask_key is one pass exactly the same rows (a kept mask answers for all of them),
    and every compiled mask passes exactly the records the SQL filter selects. The column mixes
    JSON types and texts whose UTF-16 order differs from their code point (and UTF-8) order."""
    from oramem.sqlite.filters_sql import compile_filter
    from oramem.sqlite.metamask import compile_mask, mask_key

    store = make()
    rng = np.random.default_rng(7)
    values = TEXTS + OTHERS + ["\ud7ff", "\ue000", "\U00010000"]
    ids = [f"r{i:02d}" for i in range(len(values) + 1)]
    metadata = [{"s": v} for v in values] + [{"other": 1}]  # and one record without the field
    store.add(ids, "memory", record_ids=ids, embeddings=[rng.normal(size=DIM).tolist() for _ in ids], metadata=metadata)
    for _ in range(2):  # the first ask reads through SQL, the second builds the column
        store.search(query_vector=rng.normal(size=DIM).tolist(), k=3, metadata_filter={"s": {"$lte": "b"}})
    cache = store._engine._cache
    cols = cache._metadata
    live = cache._live[: cache.size]
    texts = sorted({v for v in values if isinstance(v, str)})
    bounds = [b for t in texts + ["\U0010ffff\U0010ffff", "c", "A"] for b in (t, t + "\x01", t[:-1], t + "\U0010ffff")]
    bounds += [0, 1, 2.5, -1, 1e300]
    groups: dict = {}
    conn = store._engine.database.conn
    table = store._engine._tables.records
    for op in ("$gt", "$gte", "$lt", "$lte"):
        for bound in bounds:
            for flt in ({"s": {op: bound}}, {"s": {"$not": {op: bound}}}):
                mask = compile_mask(flt, cols) & live
                key = mask_key(flt, cols)
                assert key is not None
                groups.setdefault(key, []).append((flt, mask))
                sql, params = compile_filter(flt)
                want = {seq for (seq,) in conn.execute(f"SELECT r.seq FROM {table} r WHERE {sql}", params)}
                got = set(cache.seqs_of(mask).tolist())
                assert got == want & set(cache.seqs.tolist()), flt
    shared = 0
    for key, members in groups.items():
        first_flt, first = members[0]
        for flt, mask in members[1:]:
            assert np.array_equal(mask, first), (key, first_flt, flt)
            shared += 1
    assert shared > 50  # many filters do share keys


def test_a_reembed_by_another_connection_reaches_warm_caches(tmp_path):
    """``reembed_store`` (another connection: the CLI's ``oramem reembed``) swaps every vector
    of the file: a store whose vector cache, kept metadata masks and type and scope masks are
    warm answers, after it, exactly as a store opened afresh on the re-embedded file, and B's
    scoped searches never return A's records."""
    from oramem import SQLiteMemoryStore
    from oramem.embedders import HashEmbedder
    from oramem.sqlite import reembed_store

    path = str(tmp_path / "r.db")
    old, new = HashEmbedder(16), HashEmbedder(16, seed=5)
    rng = np.random.default_rng(11)
    texts = [f"note {i} about {rng.choice(['hotel', 'bistro', 'train'])} {rng.choice(['rain', 'sun'])}" for i in range(40)]
    users = [str(rng.choice(["A", "B"])) for _ in texts]
    warm = SQLiteMemoryStore(path, embedder=old)
    warm.add(texts, "memory", record_ids=[f"r{i:02d}" for i in range(40)], user_ids=users, agent_ids="ag",
             thread_ids="th", metadata=[{"kg_user": u, "n": i} for i, u in enumerate(users)])
    queries = [new.embed(["hotel rain"])[0].tolist(), new.embed(["train sun"])[0].tolist()]
    filters = [None, {"kg_user": "B"}, {"n": {"$lt": 20}}]
    scopes = [{}, {"user_id": "B", "exact_user_match": True}]

    def answers(store):
        return [[(r.id, r.user_id, d) for r, d in store.search(query_vector=q, k=6, metadata_filter=f, **s)]
                for q in queries for f in filters for s in scopes]

    try:
        for _ in range(2):  # columns built, masks kept
            before = answers(warm)
        reembed_store(path, new)
        got = answers(warm)
        fresh = SQLiteMemoryStore(path, embedder=new, vector_sidecar=False)
        try:
            assert got == answers(fresh) and got == answers(fresh)
        finally:
            fresh.close()
        assert got != before  # the vectors did change
        for rows, (f, s) in zip(got, [(f, s) for _ in queries for f in filters for s in scopes]):
            if s:
                assert all(user == "B" for _, user, _ in rows)
    finally:
        warm.close()
