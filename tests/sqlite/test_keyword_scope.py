"""Scoped keyword search inside the FTS index (schema version 3): the scope tokens of the FTS
rows, the windowed plan (exact against a brute-force reference, with scopes, profiles,
metadata filters, TTL and ties), and the upgrade of version-2 stores."""

from __future__ import annotations

import random
from oramem.sqlite._sqlite import sqlite3

import pytest

from oramem import SchemaPolicy
from oramem.sqlite.engine import SQLiteEngine
from oramem.sqlite.keyword import fts_query, keyword_distance, match_expression, scope_token
from oramem.sqlite.schema import SCHEMA_VERSION

WORDS = ["otter", "river", "stone", "maple", "cloud", "ember"]
THREADS = ["t1", "t2", "t é 3", "t1x", None]  # "t1" is a prefix of "t1x"
USERS = ["u1", "u2", 'u "3"', None]
AGENTS = ["a1", "a2", None]


def _fill(store, rng: random.Random, n: int = 160) -> None:
    """Records over every scope combination, several rows each, repeated texts (ties),
    metadata on some, TTLs on some; profiles for two users and an agent."""
    for i in range(n):
        rows = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 3))]
        if i % 7 == 0:
            rows = ["otter river"]  # identical texts: equal bm25
        store.add(
            [f"record {i}"], record_type="memory" if i % 3 else "fact", record_ids=[f"r{i:03d}"],
            index_texts=[rows], thread_ids=[rng.choice(THREADS)], user_ids=[rng.choice(USERS)],
            agent_ids=[rng.choice(AGENTS)], metadata=[{"topic": rng.choice("ab")} if i % 2 else None],
            ttl_days=[1 if i % 5 == 0 else None],
        )
    store.add_user("u1", "otter profile of user one")
    store.add_user("u2", "river stone profile")
    store.add_agent("a1", "maple otter agent")


def _reference(db_path, store, query, k, thread, user, agent, types, topic, now_iso):
    """Brute force: every matching row (bm25 over the text alone), filters in Python."""
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute(
            'SELECT c.record_seq, bm25("om_KS_fts", 1.0, 0.0) FROM "om_KS_fts" f JOIN "om_KS_chunks" c '
            'ON c.chunk_id = f.rowid WHERE "om_KS_fts" MATCH ?', (f"text : ({fts_query(query)})",)
        ).fetchall()
        records = {
            seq: (rtype, rid, tid, uid, aid, meta, exp)
            for seq, rtype, rid, tid, uid, aid, meta, exp in conn.execute(
                'SELECT seq, record_type, id, thread_id, user_id, agent_id, json_extract(metadata, "$.topic"), '
                'expires_at FROM "om_KS_records"')
        }
    best: dict[int, float] = {}
    for seq, score in rows:
        rtype, rid, tid, uid, aid, meta, exp = records[seq]
        uid = rid if rtype == "user_profile" else uid
        aid = rid if rtype == "agent_profile" else aid
        if rtype not in types or (exp is not None and exp <= now_iso):
            continue
        if any(want != "any" and want != have for want, have in ((thread, tid), (user, uid), (agent, aid))):
            continue
        if topic is not None and meta != topic:
            continue
        best[seq] = min(score, best.get(seq, score))
    ranked = sorted(best, key=lambda s: (best[s], records[s][0], records[s][1]))[:k]
    return [(records[s][0], records[s][1], keyword_distance(best[s])) for s in ranked]


@pytest.mark.parametrize("window", [(4, 32), (1, 1)], ids=["default-window", "tiny-window"])
def test_scoped_keyword_search_is_exact(make, db_path, clock, monkeypatch, window):
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_WINDOW", window[0])
    monkeypatch.setattr(SQLiteEngine, "_KEYWORD_WINDOW_MIN", window[1])
    store = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None)
    rng = random.Random(7)
    _fill(store, rng)
    clock.advance(days=2)  # every record with a 1-day TTL is now expired (not purged)
    now_iso = store._engine._now()
    types = ("memory", "fact", "user_profile", "agent_profile")
    for trial in range(120):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        thread, user, agent = rng.choice(THREADS + ["any"] * 3), rng.choice(USERS + ["any"] * 3), rng.choice(AGENTS + ["any"])
        topic = rng.choice(["a", "b", None, None])
        k = rng.choice([1, 3, 10, 50])
        kwargs = {}
        for name, value in (("thread", thread), ("user", user), ("agent", agent)):
            if value != "any":
                kwargs[f"{name}_id"] = value
                if value is None:
                    kwargs[f"exact_{name}_match"] = True
        if topic is not None:
            kwargs["metadata_filter"] = {"topic": topic}
        got = store.search(query, k=k, strategy="keyword", record_types=set(types), **kwargs)
        want = _reference(db_path, store, query, k, thread, user, agent, types, topic, now_iso)
        assert [(r.record_type, r.id, d) for r, d in got] == want, (trial, query, kwargs, k)


def test_scope_tokens_restrict_the_fts_match_itself(make, db_path):
    store = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None)
    _fill(store, random.Random(3))
    with sqlite3.connect(db_path) as conn:
        def count(scopes):
            expr = match_expression("otter", "english", scopes)
            return conn.execute('SELECT count(*) FROM "om_KS_fts" WHERE "om_KS_fts" MATCH ?', (expr,)).fetchone()[0]

        def truth(condition):
            return conn.execute(
                'SELECT count(*) FROM "om_KS_fts" f JOIN "om_KS_chunks" c ON c.chunk_id = f.rowid JOIN "om_KS_records" r '
                f'ON r.seq = c.record_seq WHERE "om_KS_fts" MATCH \'text : "otter"\' AND {condition}').fetchone()[0]

        assert count([("thread", "t1")]) == truth("r.thread_id = 't1'") > 0
        assert count([("thread", "t é 3")]) == truth("r.thread_id = 't é 3'") > 0
        assert count([("thread", None)]) == truth("r.thread_id IS NULL") > 0
        assert count([("user", 'u "3"'), ("agent", "a2")]) == truth("r.user_id = 'u \"3\"' AND r.agent_id = 'a2'")
        # a profile is in its own actor's scope
        assert count([("user", "u1")]) == truth(
            "(CASE WHEN r.record_type = 'user_profile' THEN r.id ELSE r.user_id END) = 'u1'")
        assert count([]) == truth("1") > count([("user", "u1")])


def test_match_expression_quotes_scope_values():
    assert match_expression('say "hi"', "none", [("thread", 'x" OR "y'), ("agent", None)]) == (
        f'text : ("say" OR "hi") AND scope : "{scope_token("thread", chr(120) + chr(34) + " OR " + chr(34) + "y")}"'
        ' AND scope : "xan0"'
    )
    assert '"' not in scope_token("thread", 'x" OR "y') and scope_token("user", "u") == "xu750"
    assert match_expression("   ", "english", [("user", "u")]) is None
    assert match_expression("otter", "english", [("user", "u")], scoped_index=False) == '"otter"'


def _downgrade_to_v2(db_path: str, store_id: str, secure_delete: bool = True) -> None:
    """Rewrite a store as schema version 2 wrote it: an FTS index of the text alone.
    ``secure_delete``: keep FTS5 secure-delete on the index (version 2 never set it; such an
    index is refused by writable opens that may not upgrade, so the tests of a version-2
    *writer* set it: the schema version and the delete setting are independent checks)."""
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE oramem_stores SET schema_version = 2 WHERE store_id = ?", (store_id,))
        conn.execute(f'DROP TABLE "om_{store_id}_fts"')
        conn.execute(f"CREATE VIRTUAL TABLE \"om_{store_id}_fts\" USING fts5(text, tokenize = "
                     "'porter unicode61 remove_diacritics 2')")
        if secure_delete:
            conn.execute(f'INSERT INTO "om_{store_id}_fts"("om_{store_id}_fts", rank) VALUES (\'secure-delete\', 1)')
        conn.execute(
            f'INSERT INTO "om_{store_id}_fts" (rowid, text) SELECT chunk_id, text FROM "om_{store_id}_chunks" '
            f'WHERE chunk_id NOT IN (SELECT chunk_id FROM "om_{store_id}_fts_pending")'
        )


def _ids(hits):
    return [r.id for r, _ in hits]


def test_version_2_store_is_searched_as_it_is_then_upgraded(make, db_path):
    s = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None, search_index_sync="manual")
    s.add(["otter in thread one", "otter in thread two"], record_type="memory", record_ids=["o1", "o2"],
          thread_ids=["t1", "t2"])
    s.sync_search_index()
    s.add(["pending otter"], record_type="memory", record_ids="p", thread_ids="t1")  # not yet indexed
    s.close()
    _downgrade_to_v2(db_path, "KS")

    old = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None,
               schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    assert _ids(old.search("otter", k=5, thread_id="t1")) == ["o1"]  # scope applied after the match
    old.add(["otter added to version 2"], record_type="memory", record_ids="v2", thread_ids="t1")
    old.sync_search_index()
    assert sorted(_ids(old.search("otter", k=5, thread_id="t1"))) == ["o1", "p", "v2"]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT schema_version FROM oramem_stores").fetchone() == (2,)
    old.close()

    s2 = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None, search_index_sync="manual")
    s2.add(["late otter"], record_type="memory", record_ids="late", thread_ids="t1")  # pending
    assert sorted(_ids(s2.search("otter", k=5, thread_id="t1"))) == ["o1", "p", "v2"]
    s2.sync_search_index()
    assert sorted(_ids(s2.search("otter", k=5, thread_id="t1"))) == ["late", "o1", "p", "v2"]
    assert _ids(s2.search("otter", k=5, thread_id="t2")) == ["o2"]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT schema_version FROM oramem_stores").fetchone() == (SCHEMA_VERSION,)
        (ddl,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'om_KS_fts'").fetchone()
        assert "scope" in ddl
        assert conn.execute('SELECT count(*) FROM "om_KS_fts" WHERE scope IS NULL').fetchone() == (0,)


def test_writer_of_a_version_2_store_follows_an_upgrade_by_another_opener(make, db_path):
    s = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None)
    s.add(["otter one"], record_type="memory", record_ids="o1", thread_ids="t1")
    s.close()
    _downgrade_to_v2(db_path, "KS")
    old = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None,
               schema_policy=SchemaPolicy.REQUIRE_EXISTING)
    new = make(memory_store_id="KS", search_strategy="keyword", vector_dim=None)  # upgrades to version 3
    old.add(["otter two"], record_type="memory", record_ids="o2", thread_ids="t1")  # after the upgrade
    assert sorted(_ids(new.search("otter", k=5, thread_id="t1"))) == ["o1", "o2"]
    assert sorted(_ids(old.search("otter", k=5, thread_id="t1"))) == ["o1", "o2"]
