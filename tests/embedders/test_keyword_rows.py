"""Keyword rows of a token-window store: the keyword index gathers a record's consecutive
retrieval rows into passages of about ``KEYWORD_ROW_CHARS`` characters
(``StoreTables.keyword_rows``), so bm25 ranks passages, not the embedder's windows. Checked
on every path that writes the index (add, update, MANUAL sync, a store gaining keyword
search), by the health check, and per user scope; character policies keep one keyword row
per retrieval row."""

from __future__ import annotations

from contextlib import closing

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.chunking import KEYWORD_ROW_CHARS, keyword_row_chars  # noqa: E402
from oramem.embedders import HashEmbedder, ONNXEmbedder  # noqa: E402
from oramem.sqlite._sqlite import sqlite3  # noqa: E402  (the engine's SQLite: one copy per process)
from oramem.sqlite.health import check_file  # noqa: E402

from .onnx_models import build_model_dir  # noqa: E402

WINDOW = 8  # the tiny model reads 7 tokens of text: a window is a few words
FILLER = [f"filler{i}" for i in range(600)]


def _text(*facts: tuple[int, str]) -> str:
    """The filler words with ``facts`` (position, word) put in."""
    words = list(FILLER)
    for position, word in sorted(facts, reverse=True):
        words.insert(position, word)
    return " ".join(words)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> ONNXEmbedder:
    return ONNXEmbedder(build_model_dir(tmp_path_factory.mktemp("tiny") / "tiny"), max_length=WINDOW)


def _rows(path, record_id: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, str]]]:
    """The record's retrieval rows (chunk_id, chunk_index, text) and keyword rows (rowid, text)."""
    with closing(sqlite3.connect(path)) as conn:
        chunks = conn.execute(
            'SELECT c.chunk_id, c.chunk_index, c.text FROM "om_DEFAULT_chunks" c JOIN "om_DEFAULT_records" r '
            "ON r.seq = c.record_seq WHERE r.id = ? ORDER BY c.chunk_index", (record_id,)).fetchall()
        ids = [chunk_id for chunk_id, _, _ in chunks]
        keyword = conn.execute(
            f'SELECT rowid, text FROM "om_DEFAULT_fts" WHERE rowid IN ({",".join("?" * len(ids))}) ORDER BY rowid',
            ids).fetchall()
    return chunks, keyword


def _expected_groups(chunks: list[tuple[int, int, str]]) -> list[tuple[int, str]]:
    """Rows starting in the same stretch of KEYWORD_ROW_CHARS characters (of the rows laid
    end to end) form one keyword row keyed by the first one's chunk_id."""
    groups: dict[int, list[tuple[int, str]]] = {}
    start = 0
    for chunk_id, _, text in chunks:
        groups.setdefault(start // KEYWORD_ROW_CHARS, []).append((chunk_id, text))
        start += len(text)
    return [(rows[0][0], " ".join(text for _, text in rows)) for rows in groups.values()]


def _healthy(path) -> None:
    findings = {f.check: f for f in check_file(str(path))}
    index = findings["DEFAULT keyword index"]
    assert index.ok, index.detail


def test_a_token_policy_groups_rows_and_other_policies_do_not(tiny):
    identity = {"kind": "onnx", "chunking": {"unit": "tokens", "size": 7, "overlap": 0, "max_chars": 2000}}
    assert keyword_row_chars(identity) == KEYWORD_ROW_CHARS
    assert keyword_row_chars({"kind": "x", "chunking": {"unit": "chars", "size": 500, "overlap": 50}}) is None
    assert keyword_row_chars({"kind": "hash", "dimension": 8}) is None and keyword_row_chars(None) is None


def test_a_long_record_is_indexed_as_passages_in_chunk_order(tiny, tmp_path):
    path = tmp_path / "k.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    store.add([_text(), "a short note"], "memory", record_ids=["long", "short"])
    store.close()
    chunks, keyword = _rows(path, "long")
    assert len(chunks) > 50  # the tiny model's windows are a few words each
    assert keyword == _expected_groups(chunks)
    assert 3 <= len(keyword) <= 4 and all(len(text) <= KEYWORD_ROW_CHARS + 100 for _, text in keyword)
    # every retrieval row's text is in its passage, in order
    assert " ".join(text for _, text in keyword) == " ".join(text for _, _, text in chunks)
    short_chunks, short_keyword = _rows(path, "short")
    assert short_keyword == [(short_chunks[0][0], "a short note")]
    _healthy(path)


def test_a_query_whose_words_fall_in_different_windows_ranks_the_passage_that_holds_them(tiny, tmp_path):
    """"zebra", "quokka" and "lemur" sit in three windows of one passage of the long record;
    each distractor is one of the words alone. Ranked by windows, each row of the long record
    holds one word in a longer text than a distractor's, and the distractors come first;
    ranked by passages the record that holds all three comes first."""
    store = SQLiteMemoryStore(tmp_path / "q.db", embedder=tiny, search_strategy="hybrid")
    store.add([_text((40, "zebra"), (60, "quokka"), (80, "lemur")), "zebra", "quokka", "lemur"],
              "memory", record_ids=["long", "d1", "d2", "d3"])
    hits = store.search("zebra quokka lemur", k=4, strategy="keyword")
    assert [r.id for r, _ in hits][0] == "long"
    store.close()


def test_updates_deletes_and_manual_sync_keep_the_passages(tiny, tmp_path):
    path = tmp_path / "m.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid", search_index_sync="manual")
    store.add([_text((500, "walrus"))], "memory", record_ids=["long"])
    assert store.search("walrus", k=1, strategy="keyword") == []  # parked until the sync
    store.sync_search_index()
    assert [r.id for r, _ in store.search("walrus", k=1, strategy="keyword")] == ["long"]
    chunks, keyword = _rows(path, "long")
    assert keyword == _expected_groups(chunks)
    store.close()

    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    assert store.update("memory", "long", text=_text((10, "narwhal"))) == 1
    assert _rows(path, "long")[1] == []  # the new rows are parked, the old ones left the index
    store.sync_search_index()
    chunks, keyword = _rows(path, "long")
    assert keyword == _expected_groups(chunks) and "walrus" not in " ".join(t for _, t in keyword)
    assert [r.id for r, _ in store.search("narwhal", k=1, strategy="keyword")] == ["long"]
    assert store.search("walrus", k=1, strategy="keyword") == []
    _healthy(path)
    store.delete("memory", "long")
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute('SELECT count(*) FROM "om_DEFAULT_fts"').fetchone() == (0,)
    store.close()
    _healthy(path)


def test_a_vector_store_gaining_keyword_search_indexes_passages(tiny, tmp_path):
    path = tmp_path / "g.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="vector")
    store.add([_text((300, "axolotl"))], "memory", record_ids=["long"])
    store.close()
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    assert [r.id for r, _ in store.search("axolotl", k=1, strategy="keyword")] == ["long"]
    store.close()
    chunks, keyword = _rows(path, "long")
    assert keyword == _expected_groups(chunks)
    _healthy(path)


def test_the_health_check_finds_a_missing_passage(tiny, tmp_path):
    path = tmp_path / "h.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    store.add([_text()], "memory", record_ids=["long"])
    store.close()
    _, keyword = _rows(path, "long")
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute('DELETE FROM "om_DEFAULT_fts" WHERE rowid = ?', (keyword[1][0],))
    index = {f.check: f for f in check_file(str(path))}["DEFAULT keyword index"]
    assert not index.ok and index.detail.startswith("1 keyword rows not indexed")


def test_each_user_finds_only_her_own_passages_in_a_shared_thread(tiny, tmp_path):
    """Alice's and Bob's long records share a thread and an agent; the passages carry each
    record's scope, so a user-scoped keyword or hybrid search returns her own only, and Bob
    rewriting or deleting his record leaves Alice's passages as they were."""
    path = tmp_path / "u.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    store.add([_text((100, "okapi"), (130, "tapir"))], "message", record_ids=["alice-long"], user_ids="alice",
              thread_ids="t", agent_ids="g")
    store.add([_text((5, "okapi"))], "message", record_ids=["bob-long"], user_ids="bob", thread_ids="t",
              agent_ids="g")
    for strategy in ("keyword", "hybrid"):
        mine = store.search("okapi tapir", k=5, user_id="alice", thread_id="t", strategy=strategy)
        theirs = store.search("okapi tapir", k=5, user_id="bob", thread_id="t", strategy=strategy)
        assert [r.id for r, _ in mine] == ["alice-long"]
        assert [r.id for r, _ in theirs] == ["bob-long"]
    chunks, alice_rows = _rows(path, "alice-long")
    # Bob rewrites, then deletes, his own record in the shared thread: Alice's passages stay as they were
    assert store.update("message", "bob-long", text=_text((300, "wombat"))) == 1
    assert store.search("wombat", k=5, user_id="alice", strategy="keyword") == []
    assert [r.id for r, _ in store.search("wombat", k=5, user_id="bob", strategy="keyword")] == ["bob-long"]
    assert store.delete("message", "bob-long") == 1
    assert _rows(path, "alice-long") == (chunks, alice_rows) and alice_rows == _expected_groups(chunks)
    assert [r.id for r, _ in store.search("okapi tapir", k=5, thread_id="t", strategy="keyword")] == ["alice-long"]
    store.close()
    _healthy(path)


def test_a_character_policy_store_keeps_one_keyword_row_per_retrieval_row(tmp_path):
    path = tmp_path / "c.db"
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(16), search_strategy="hybrid")
    store.add([_text()], "memory", record_ids=["long"])
    store.close()
    chunks, keyword = _rows(path, "long")
    assert len(chunks) >= 3 and keyword == [(chunk_id, text) for chunk_id, _, text in chunks]
    _healthy(path)


def test_forgetting_a_user_erases_her_passages_to_the_byte_and_keeps_the_others(tiny, tmp_path):
    """Alice's and Bob's long records share a thread and an agent; each has a word of its own
    deep in a later passage. ``forget(user_id="alice")`` leaves no byte of her word in the
    keyword index's shadow tables or the file (after a checkpoint), and Bob's passages stay
    searchable."""
    secret, kept = "zanzibarquux", "quokkamoss"
    path = tmp_path / "f.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    store.add([_text((450, secret))], "message", record_ids=["alice-long"], user_ids="alice", thread_ids="t",
              agent_ids="g")
    store.add([_text((450, kept))], "message", record_ids=["bob-long"], user_ids="bob", thread_ids="t", agent_ids="g")
    assert [r.id for r, _ in store.search(secret, k=5, strategy="keyword")] == ["alice-long"]
    store.forget(user_id="alice")
    assert store.search(secret, k=5, strategy="keyword") == []
    assert [r.id for r, _ in store.search(kept, k=5, user_id="bob", strategy="keyword")] == ["bob-long"]
    store.close()
    with closing(sqlite3.connect(path)) as conn:
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%fts%'")]
        for name in tables:
            for row in conn.execute(f'SELECT * FROM "{name}"'):
                assert not any(secret.encode() in (v if isinstance(v, bytes) else str(v).encode()) for v in row), name
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    assert secret.encode() not in data and kept.encode() in data
    _healthy(path)
