"""SC-8.6 forget: one user of an agent shared with another user is erased from the store and
the knowledge layer in one transaction; her unique token is then in no table (FTS shadow
tables included), no vector sidecar and no byte of the database files, and the other
user's data is intact (issue 13, feature-checks row 32)."""

from __future__ import annotations

import glob
from oramem.sqlite._sqlite import sqlite3

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.errors import StoreError
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock, extract

ALICE_TOKEN = "qqalicetokenzz"
BOB_TOKEN = "wwbobtokenyy"
#: FTS5 stores terms prefix-compressed, so the bytes check looks for an inner part
ALICE_INNER = b"alicetoken"
BOB_INNER = b"bobtoken"
ALICE = "u-alice"


def _llm() -> ScriptedLLM:
    return ScriptedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}})


def _populate(store: SQLiteMemoryStore, km: KnowledgeMemory, llm: ScriptedLLM) -> None:
    for user, name, token, city in ((ALICE, "Alice", ALICE_TOKEN, "Oporto"), ("u-bob", "Bob", BOB_TOKEN, "Lima")):
        store.add([f"{name} keeps the word {token}"], "memory", user_ids=user)
        store.add([f"hello, my word is {token}"], "message", user_ids=user, thread_ids=f"t-{user}", roles="user")
        km.add_entity("shared", name, type="person", user_id=user)
        km.add_fact("shared", name, f"{name}'s code word is {token}", subject_type="person", user_id=user)
        llm.route(
            "extract",
            extract(
                [(name, "person"), (city, "place")],
                [(name, f"{name} hides {token} in {city}", "hiding_place")],
                [(name, city, "visits")],
                intentions=[{"trigger_type": "event", "trigger_condition": f"asks about {token}", "intended_action": "remind"}],
                observations=[{"content": f"{name} talks about {token}", "topic": "secrets"}],
            ),
        )
        km.write("shared", f"I hide {token} in {city}", name, session_id=f"s-{user}", user_id=user)
        # two queued background writes of hers (issue 16: the job table; KC-3.10: found by user_id)
        km.write("shared", f"later: {token} moved", name, session_id="s-other", background=True, user_id=user)
        km.write("shared", f"also {token}", "Someone", session_id=f"t-{user}", background=True, user_id=user)


def _table_hits(path: str, needle: str) -> dict[str, int]:
    """Rows per table (every table, FTS shadow tables included) whose any column holds needle."""
    conn = sqlite3.connect(path)
    try:
        hits = {}
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            try:
                rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
            except sqlite3.OperationalError:
                continue
            n = 0
            for row in rows:
                for v in row:
                    if isinstance(v, str) and needle in v or isinstance(v, bytes) and needle.encode() in v:
                        n += 1
                        break
            if n:
                hits[name] = n
        return hits
    finally:
        conn.close()


def _file_bytes(path: str) -> bytes:
    out = b""
    for name in sorted(glob.glob(path + "*")):
        with open(name, "rb") as fh:
            out += fh.read()
    return out


@pytest.fixture
def setup(tmp_path):
    path = str(tmp_path / "forget.db")
    clock = Clock()
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(384), clock=clock, search_strategy="hybrid")
    llm = _llm()
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    _populate(store, km, llm)
    # the vector sidecar holds the vectors (and scope columns) of every record
    store.search("word", k=5, strategy="vector")
    yield path, store, km
    km.close()
    store.close()


def test_forget_user_on_shared_agent_leaves_no_trace(setup):
    path, store, km = setup
    assert _table_hits(path, ALICE_TOKEN) and _table_hits(path, BOB_TOKEN)
    bob_before = _table_hits(path, BOB_TOKEN)
    counts = km.forget(user_id=ALICE)
    assert counts["om_DEFAULT_records"] >= 6  # memory, message, thread, 2 facts + event records
    assert counts["om_DEFAULT_fts"] >= 5
    for table in ("EVENT", "FACT", "ENTITY", "RELATIONSHIP", "FACT_ENTITY_LINK", "SESSION_OBSERVATION", "INTENTION"):
        assert counts[f"DEFAULT_KG_{table}"] >= 1, table
    # the other user's data is intact, in the store and in the knowledge layer
    assert _table_hits(path, BOB_TOKEN) == bob_before
    assert counts["DEFAULT_KG_JOB"] == 2 and len(km.jobs("shared")) == 2  # Bob's two stay
    assert [e.canonical_key for e in km.entities("shared", user_id="u-bob")]
    assert "person:alice" not in {e.canonical_key for e in km.entities("shared", user_id=ALICE)}
    assert "person:bob" in {e.canonical_key for e in km.entities("shared", user_id="u-bob")}
    assert any(BOB_TOKEN in f.fact_text for f in km.get_all("shared", user_id="u-bob"))
    assert not any(ALICE_TOKEN in f.fact_text for f in km.get_all("shared", user_id=ALICE))
    assert store.search(BOB_TOKEN, k=3, strategy="keyword")
    assert store.search(ALICE_TOKEN, k=3, strategy="keyword") == []
    assert _table_hits(path, ALICE_TOKEN) == {}
    assert _table_hits(path, ALICE) == {}
    km.close()
    store.close()
    data = _file_bytes(path)
    assert ALICE_INNER not in data and ALICE.encode() not in data
    assert BOB_INNER in data  # the bytes check does see a token that is there


def test_forget_agent_erases_all_its_knowledge(setup):
    path, store, km = setup
    counts = km.forget(agent_id="shared")
    assert counts["DEFAULT_KG_FACT"] >= 4 and counts["DEFAULT_KG_ENTITY"] >= 4
    assert km.get_all("shared") == [] and km.entities("shared") == []
    t = km._tables
    with km._backend.read() as c:
        for table in t.all_agent_tables() + [t.agent, t.job]:
            assert c.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 0, table.name
    # user-scoped store records without the agent stay
    assert {r.user_id for r in store.list("memory")} == {ALICE, "u-bob"}


def _reopened_without_knowledge_memory(tmp_path):
    """A store file holding Alice's knowledge (a fact of agent "a"), reopened without
    KnowledgeMemory: no deletion hook erases its knowledge tables."""
    path = str(tmp_path / "k.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(384))
    km = KnowledgeMemory(store, None)
    km.add_fact("a", "Alice", "Alice likes tea", subject_type="person", user_id="alice")
    km.close()
    store.close()
    return SQLiteMemoryStore(path, embedder=HashEmbedder(384))


def test_store_forget_refuses_when_knowledge_tables_are_not_erased(tmp_path):
    store = _reopened_without_knowledge_memory(tmp_path)
    store.add(["x"], "memory", user_ids="alice")
    with pytest.raises(StoreError, match="knowledge tables"):
        store.forget(user_id="alice")
    assert len(store.list("memory")) == 1  # nothing was deleted
    km = KnowledgeMemory(store, None)
    counts = km.forget(user_id="alice")
    assert counts["om_DEFAULT_records"] >= 1 and counts["DEFAULT_KG_FACT"] == 1
    km.close()
    store.close()


def test_forget_arguments(tmp_path):
    with SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashEmbedder(16)) as store:
        with pytest.raises(ValueError, match="exactly one"):
            store.forget()
        with pytest.raises(ValueError, match="exactly one"):
            store.forget(user_id="a", agent_id="b")
        # names are never matched (SC-13.3): refused, not silently ignored
        for kwargs in ({"agent_id": "b", "names": ["B"]}, {"user_id": "a", "names": ["A"]}, {"user_id": "a", "names": []}):
            with pytest.raises(ValueError, match="no longer matches names"):
                store.forget(**kwargs)
        assert set(store.forget(user_id="nobody").values()) == {0}


def test_a_user_profile_cascade_refuses_when_knowledge_tables_are_not_erased(tmp_path):
    """SC-13.3: ``delete("user_profile", U, cascade=True)`` erases U as forget does. On a store
    with knowledge tables opened without KnowledgeMemory no deletion hook erases her knowledge:
    her facts stayed after her erasure (and so did the shared observations citing them, which
    Bob reads). It is refused before anything is deleted, as forget is (red team 17; the
    Oracle engine's twin is in tests/oracle/test_colour_parity_fake.py). Bob's cascade on a
    store without knowledge tables, and hers with KnowledgeMemory open, run as before."""
    store = _reopened_without_knowledge_memory(tmp_path)
    store.add_user("alice", "Alice")
    store.add(["x"], "memory", user_ids="alice")
    with pytest.raises(StoreError, match="nothing was deleted"):
        store.delete("user_profile", "alice", cascade=True)
    assert len(store.list("memory", user_id="alice")) == 1 and store.get("user_profile", "alice") is not None
    assert store.delete("user_profile", "alice") == 1  # her profile alone is no erasure
    km = KnowledgeMemory(store, None)
    assert [f.user_id for f in km.get_all("a", user_id="alice")] == ["alice"]
    assert store.delete("user_profile", "alice", cascade=True) == 0
    assert km.get_all("a", user_id="alice") == [] and store.list("memory", user_id="alice") == []
    km.close()
    store.close()
    plain = SQLiteMemoryStore(str(tmp_path / "plain.db"), embedder=HashEmbedder(384))
    plain.add_user("bob", "Bob")
    assert plain.delete("user_profile", "bob", cascade=True) == 1
    plain.close()


def test_bobs_erasure_counts_only_the_rows_his_erasure_removed(tmp_path, monkeypatch):
    """SC-14.1 / KC-3.10: the knowledge rows of a receipt were the difference of whole-table
    counts taken before and after the erasure. On Oracle (read committed) the two counts are
    separate statements, so another session's commit between them (Alice's write, her job,
    her own erasure) landed in Bob's receipt, which his MCP client reads: it told him what
    other users did meanwhile, and it was not what his erasure removed. Simulated here by a
    delete of Alice's rows that another session commits in the middle of Bob's erasure (raw
    driver SQL on the same connection: SQLite's write lock keeps real sessions out). The
    counts are now the erasure's own DELETE statements' row counts."""
    from oramem.knowledge import deletes

    def receipt(alice_meanwhile: bool) -> dict:
        clock = Clock()
        store = SQLiteMemoryStore(str(tmp_path / f"m{int(alice_meanwhile)}.db"), embedder=HashEmbedder(64), clock=clock)
        km = KnowledgeMemory(store, None, clock=clock)
        try:
            for user in ("bob", "alice"):
                km.add_knowledge("desk", facts=[{"subject": user.title(), "fact": f"{user.title()} likes tea"},
                                                {"subject": "Porto", "fact": f"Porto is where {user} works",
                                                 "subject_type": "place"}], user_id=user, session_id=f"{user}-chat")
            clock.advance(minutes=1)
            real = deletes._erase_user

            def with_alice(conn, t, event, purge_facts, **kw):
                out = real(conn, t, event, purge_facts, **kw)
                if alice_meanwhile:  # another session's commit, landing between the two counts
                    conn.exec_driver_sql(f"DELETE FROM {t.link.name} WHERE user_id = 'alice'")
                    conn.exec_driver_sql(f"DELETE FROM {t.alias.name} WHERE user_id = 'alice'")
                return out

            monkeypatch.setattr(deletes, "_erase_user", with_alice)
            return {k: v for k, v in km.forget(user_id="bob").items() if v}
        finally:
            km.close()
            store.close()

    without, meanwhile = receipt(False), receipt(True)
    assert without == meanwhile
    assert without  # his rows were counted
