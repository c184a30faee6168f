"""Issue 28: chunks fit the embedder's window. A long record whose only relevant sentence
sits at its start, middle or end is found by vector search in each case, with a tiny test
model of a short window and, where the environment has one, with all-MiniLM-L6-v2."""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.sqlite._sqlite import sqlite3  # noqa: E402  (the engine's SQLite: one copy per process)
from oramem.chunking import ChunkPolicy, chunk_tokens, policy_for, store_chunker  # noqa: E402
from oramem.embedders import HashEmbedder, ONNXEmbedder  # noqa: E402
from oramem.embedders.base import input_window  # noqa: E402
from oramem.embedders.identity import identity_of, same_identity  # noqa: E402

from .onnx_models import build_model_dir  # noqa: E402

WINDOW = 8  # tokens the tiny model reads, [CLS] included
FILLER = "blue car " * 30  # far from the query in the tiny model's space


def _long(where: str, fact: str) -> str:
    if where == "start":
        return f"{fact} {FILLER}"
    if where == "end":
        return f"{FILLER}{fact}"
    half = FILLER.split()
    return " ".join(half[: len(half) // 2] + fact.split() + half[len(half) // 2:])


@pytest.fixture
def tiny(tmp_path) -> ONNXEmbedder:
    return ONNXEmbedder(build_model_dir(tmp_path / "tiny"), max_length=WINDOW)


def test_onnx_embedder_reports_its_window(tiny):
    window = input_window(tiny)
    assert window is not None and window.max_tokens == WINDOW - 1  # [CLS] is the model's, not the text's
    assert [tuple(s) for s in window.spans("hello  world")] == [(0, 5), (7, 12)]
    assert input_window(HashEmbedder(16)) is None


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_long_record_found_wherever_its_fact_is_tiny_model(tiny, where):
    store = SQLiteMemoryStore(":memory:", embedder=tiny, search_strategy="vector")
    # "red drive" and "i" lie nearer the query than the filler does, farther than any chunk with the fact
    store.add([_long(where, "peanut allergy"), "red drive", "i"], "memory", record_ids=["long", "a", "b"])
    hits = store.search("peanut allergy", k=1, strategy="vector")
    assert [r.id for r, _ in hits] == ["long"]


def test_every_chunk_fits_the_window_and_all_text_is_covered(tiny):
    window = input_window(tiny)
    assert window is not None
    text = _long("middle", "peanut allergy") + " i drive a red car"
    chunks = policy_for(window).split(text, window.spans)
    assert len(chunks) > 1
    assert all(len(window.spans(c)) <= window.max_tokens for c in chunks)
    words = text.split()
    covered = " ".join(chunks).split()
    assert set(words) <= set(covered)
    # every word of the text sits inside some chunk: walk the text through the chunks in order
    pos = 0
    for chunk in chunks:
        found = text.find(chunk, max(0, pos - len(chunk)))
        assert found != -1
        pos = max(pos, found + len(chunk))
    assert pos >= len(text.rstrip())


def test_chunk_tokens_overlaps_and_never_splits_a_word():
    text = " ".join(f"w{i}" for i in range(40))

    def spans(t):
        out, i = [], 0
        for word in t.split(" "):
            out.append((i, i + len(word)))
            i += len(word) + 1
        return out

    chunks = chunk_tokens(text, spans, max_tokens=10, overlap=2)
    assert all(len(c.split()) <= 10 for c in chunks)
    assert all(set(c.split()) <= set(text.split()) for c in chunks)
    assert chunks[0].split()[-2:] == chunks[1].split()[:2]  # two tokens of overlap
    assert chunk_tokens("short text", spans, 10, 2) == ["short text"]
    assert chunk_tokens("   ", spans, 10, 2) == []
    with pytest.raises(ValueError):
        chunk_tokens(text, spans, 10, 10)


def test_policy_is_recorded_and_reopened_store_chunks_the_same_way(tiny, tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    chunking = store.settings.embedder["chunking"]
    assert chunking["unit"] == "tokens" and chunking["size"] == WINDOW - 1
    store.add([_long("end", "peanut allergy")], "memory", record_ids=["long"])
    store.close()
    again = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    assert again.settings.embedder["chunking"] == chunking
    again.add([_long("start", "peanut allergy")], "memory", record_ids=["long2"])
    assert {r.id for r, _ in again.search("peanut allergy", k=2, strategy="vector")} == {"long", "long2"}


def test_store_without_recorded_chunking_keeps_legacy_chunks(tiny):
    legacy = {k: v for k, v in identity_of(tiny).items() if k != "chunking"}
    assert same_identity(legacy, identity_of(tiny))  # chunking does not decide the vector space
    chunker = store_chunker(legacy, tiny)
    text = "word " * 500
    assert chunker(text) == ChunkPolicy().split(text)  # 2,000 characters, as before issue 28


def test_caller_chunks_are_never_resplit(tiny, tmp_path):
    path = tmp_path / "c.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="vector")
    long_chunk = "peanut allergy " + FILLER
    store.add(["doc"], "memory", record_ids=["m"], index_texts=[[long_chunk, "red car"]])
    store.add(["x " + FILLER], "memory", record_ids=["s"])
    store.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        rows = conn.execute('SELECT r.id, c.text FROM "om_DEFAULT_chunks" c JOIN "om_DEFAULT_records" r '
                            "ON r.seq = c.record_seq ORDER BY r.id, c.chunk_index").fetchall()
    assert [t for rid, t in rows if rid == "m"] == [long_chunk, "red car"]
    assert len([t for rid, t in rows if rid == "s"]) > 1  # the store's own chunks are sized to the window


def test_token_policy_without_tokenizer_is_a_safe_character_bound():
    policy = {"kind": "x", "chunking": {"unit": "tokens", "size": 20, "overlap": 2, "max_chars": 2000}}
    chunks = store_chunker(policy, None)("abcdefghij " * 40)
    assert chunks and all(len(c) <= 20 for c in chunks)


def _real_model() -> Path | None:
    for candidate in (os.environ.get("ORAMEM_TEST_ONNX_MODEL"), "/work/models/all-MiniLM-L6-v2"):
        if candidate and (Path(candidate) / "model.onnx").is_file():
            return Path(candidate)
    return None


PASSPORT = "My passport is kept in the locked drawer of the oak desk in the study."
CHATTER = " ".join(
    f"We talked about the weather, the football results and the price of bread in sentence {i}." for i in range(18)
)


@pytest.mark.skipif(_real_model() is None, reason="no all-MiniLM-L6-v2 ONNX export here (ORAMEM_TEST_ONNX_MODEL)")
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_long_record_found_wherever_its_fact_is_real_model(where):
    embedder = ONNXEmbedder(str(_real_model()))
    half = len(CHATTER) // 2
    long = {"start": f"{PASSPORT} {CHATTER}", "end": f"{CHATTER} {PASSPORT}",
            "middle": f"{CHATTER[:half]} {PASSPORT} {CHATTER[half:]}"}[where]
    assert len(long) > 1600  # past MiniLM's 256-token window as one text
    notes = [f"Note {i}: I bought groceries and cleaned the kitchen on day {i}." for i in range(30)]
    store = SQLiteMemoryStore(":memory:", embedder=embedder, search_strategy="vector")
    store.add(notes + [long], "message", record_ids=[f"n{i}" for i in range(30)] + ["long"])
    hits = store.search("where is my passport kept?", k=5, strategy="vector")
    assert "long" in [r.id for r, _ in hits]


def test_reembed_adopts_the_new_chunking(tiny, tmp_path):
    from oramem.sqlite import reembed_store

    path = tmp_path / "old.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    store.close()
    # a store built before issue 28: its identity records no chunking (2,000-character chunks)
    with closing(sqlite3.connect(path)) as conn, conn:
        (raw,) = conn.execute("SELECT embedder FROM oramem_stores").fetchone()
        import json

        legacy = {k: v for k, v in json.loads(raw).items() if k != "chunking"}
        conn.execute("UPDATE oramem_stores SET embedder = ?", (json.dumps(legacy),))
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    assert "chunking" not in store.settings.embedder
    store.add([_long("end", "peanut allergy"), "red drive", "i"], "memory", record_ids=["long", "a", "b"])
    store.add(["own"], "memory", record_ids=["own"], index_texts=[["peanut " + FILLER]])
    assert [r.id for r, _ in store.search("peanut allergy", k=1, strategy="vector")] != ["long"]  # legacy chunks
    store.close()
    result = reembed_store(path, tiny)
    assert result.rechunked == 1 and result.embedder["chunking"]["unit"] == "tokens"
    assert result.kept == 1  # the caller's own chunk is never re-split
    again = SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid")
    assert [r.id for r, _ in again.search("peanut allergy", k=1, strategy="vector")] == ["long"]
    assert [r.id for r, _ in again.search("allergy", k=1, strategy="keyword")] == ["long"]
    assert again.get("memory", "long").content == _long("end", "peanut allergy")


def test_tail_windows_rank_with_the_handicap_within_each_users_scope(tiny, tmp_path):
    """A tail-window store (the tiny model's policy) ranks later rows with the handicap, on
    a fresh cache and on one loaded from the vector sidecar, and user B never sees user A's
    long record however well its tail matches."""
    from oramem.chunking import TAIL_HANDICAP

    path = tmp_path / "t.db"
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="vector")
    # one shared thread and one shared agent: only the user scope keeps them apart
    store.add([_long("end", "peanut allergy")], "message", record_ids=["long"], user_ids="A", thread_ids="t",
              agent_ids="g")
    store.add(["red drive", "i"], "message", record_ids=["b1", "b2"], user_ids="B", thread_ids="t", agent_ids="g")
    mine = store.search("peanut allergy", k=5, user_id="A", strategy="vector")
    theirs = store.search("peanut allergy", k=5, user_id="B", strategy="vector")
    assert [r.id for r, _ in mine] == ["long"] and {r.id for r, _ in theirs} == {"b1", "b2"}
    shared = store.search("peanut allergy", k=5, user_id="B", thread_id="t", agent_id="g", strategy="vector")
    assert {r.id for r, _ in shared} == {"b1", "b2"}
    # without a user scope the shared thread holds both users' records, and A's long one ranks first
    assert store.search("peanut allergy", k=1, thread_id="t", strategy="vector")[0][0].id == "long"
    # the fact is in a later row: its distance carries the handicap (the first row is filler)
    assert mine[0][1] >= TAIL_HANDICAP
    store.close()
    again = SQLiteMemoryStore(path, embedder=tiny, search_strategy="vector")
    assert again.search("peanut allergy", k=5, user_id="A", strategy="vector") == mine
    assert again.search("peanut allergy", k=5, user_id="B", strategy="vector") == theirs
    again.close()


def test_a_store_recorded_before_tail_windows_keeps_its_chunking_until_reembed(tiny, tmp_path):
    """A store whose recorded token policy has no tail windows (built before them) chunks
    and ranks as it did (same-size windows, best chunk, no handicap); ``oramem reembed``
    adopts the tail windows and the handicap."""
    import json

    from oramem.chunking import TAIL_HANDICAP
    from oramem.sqlite import reembed_store

    path = tmp_path / "pre_tail.db"
    SQLiteMemoryStore(path, embedder=tiny, search_strategy="vector").close()
    with closing(sqlite3.connect(path)) as conn, conn:
        (raw,) = conn.execute("SELECT embedder FROM oramem_stores").fetchone()
        ident = json.loads(raw)
        assert "tail_size" in ident["chunking"]  # a new store records its tail windows
        ident["chunking"].pop("tail_size")
        conn.execute("UPDATE oramem_stores SET embedder = ?", (json.dumps(ident),))
    store = SQLiteMemoryStore(path, embedder=tiny, search_strategy="vector")
    assert "tail_size" not in store.settings.embedder["chunking"]
    request, _ = store._n().search_plan("x", 1, None, None, None, None, False, False, False, None, None, None)
    assert request.tail_handicap == 0.0
    store.add([_long("end", "peanut allergy")], "memory", record_ids=["long"])
    (hit,) = store.search("peanut allergy", k=1, strategy="vector")
    store.close()
    result = reembed_store(path, tiny)
    # the tiny model's window (7 tokens) is below the tail size, so its chunks stay as they
    # were; the recorded policy now has tail windows, and ranking adds the handicap
    assert result.embedder["chunking"]["tail_size"] == result.embedder["chunking"]["size"] == WINDOW - 1
    again = SQLiteMemoryStore(path, embedder=tiny, search_strategy="vector")
    request, _ = again._n().search_plan("x", 1, None, None, None, None, False, False, False, None, None, None)
    assert request.tail_handicap == TAIL_HANDICAP
    (moved,) = again.search("peanut allergy", k=1, strategy="vector")
    # the fact sits in a later row (the text starts with filler): the same row, now handicapped
    assert moved[0].id == "long" and moved[1] == pytest.approx(hit[1] + TAIL_HANDICAP, abs=1e-6)
    again.close()


def test_reembed_rechunk_does_not_write_an_erased_users_text_into_anothers_record(tiny, tmp_path, monkeypatch):
    """The re-chunk after a reembed reads the records, then updates each one's index text
    with the content it read. Alice's ``forget`` committed in between, and Bob then stored a
    record under the id her record had (ids are the caller's, SC-4.3): the update must not give
    Bob's record her erased text as its index text (searchable, in his scope). Deterministic:
    the old chunking, run on her content during the read, erases her and adds Bob's record."""
    import json

    import oramem.chunking
    from oramem.sqlite import reembed_store

    path = tmp_path / "old.db"
    SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid").close()
    with closing(sqlite3.connect(path)) as conn, conn:  # a store recorded before issue 28, as above
        (raw,) = conn.execute("SELECT embedder FROM oramem_stores").fetchone()
        conn.execute("UPDATE oramem_stores SET embedder = ?",
                     (json.dumps({k: v for k, v in json.loads(raw).items() if k != "chunking"}),))
    with SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid") as store:
        store.add([_long("end", "peanut allergy")], "memory", record_ids=["long"], user_ids="alice")
    real = oramem.chunking.store_chunker

    def chunker(previous, embedder):
        old = real(previous, embedder)

        def chunk(content):
            if "peanut" in content:
                with SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid") as other:
                    if other.get("memory", "long") is not None and other.get("memory", "long").user_id == "alice":
                        other.forget(user_id="alice")
                        other.add(["bob likes tea"], "memory", record_ids=["long"], user_ids="bob")
            return old(content)
        return chunk

    monkeypatch.setattr(oramem.chunking, "store_chunker", chunker)
    reembed_store(path, tiny)
    with SQLiteMemoryStore(path, embedder=tiny, search_strategy="hybrid") as store:
        assert store.get("memory", "long").content == "bob likes tea"
        assert store.search("peanut allergy", k=5, strategy="keyword", user_id="bob") == []
    with closing(sqlite3.connect(path)) as conn:
        assert not [t for (t,) in conn.execute('SELECT text FROM "om_DEFAULT_chunks"') if "peanut" in t]
