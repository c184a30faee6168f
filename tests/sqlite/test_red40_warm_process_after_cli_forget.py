"""red40: Bob's long-lived process, its caches warm, after Alice is erased by another process.

Bob's API worker has searched with every strategy (vector cache, ANN index, type/scope masks,
kept metadata masks, keyword memo all built). The operator's ``oramem forget --user alice``
runs as another process and commits; then a ``oramem add`` of Bob's runs as a third one. Bob's
worker must return no id or text of Alice's from any read (search by each strategy, filtered
and unfiltered, list, get, an export through it) and must not hide Bob's new record behind
its old caches. This held before red40 (no fix here): a pin for the caches of another process,
which tests/sqlite/test_processes.py covers for plain writes only. Sequential steps, no sleeps."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from oramem import SQLiteMemoryStore
from oramem.ann import AnnConfig, available_backends
from oramem.embedders import HashEmbedder
from oramem.jsonl import export_records

ALICE, BOB = "alice-0d41", "bob-93be"


def _cli(db, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORAMEM_")}
    out = subprocess.run([sys.executable, "-m", "oramem", "--db", str(db), *args], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, (out.stdout, out.stderr)
    return out.stdout


@pytest.mark.parametrize("ann", [False, True], ids=["exact", "ann"])
def test_a_warm_process_returns_nothing_of_a_user_another_process_erased(tmp_path, ann):
    if ann and not available_backends():
        pytest.skip("no ANN backend installed")
    db = tmp_path / "shared.db"
    bob = SQLiteMemoryStore(str(db), embedder=HashEmbedder(dim=32), search_strategy="hybrid",
                            approximate_search=AnnConfig(min_rows=0) if ann else None)
    for i in range(40):
        bob.add([f"alice warfarin dose {i} for her heart"], "memory", record_ids=f"a-{i}", user_ids=ALICE,
                thread_ids="shared" if i % 2 else f"alice-t{i}", metadata={"topic": "health", "n": i})
        bob.add([f"bob steam train trip {i}"], "memory", record_ids=f"b-{i}", user_ids=BOB,
                thread_ids="shared" if i % 2 else f"bob-t{i}", metadata={"topic": "travel", "n": i})
    query = "warfarin dose heart"
    calls = [
        dict(strategy="vector"), dict(strategy="keyword"), dict(strategy="hybrid"),
        dict(strategy="vector", metadata_filter={"topic": "health"}),
        dict(strategy="vector", metadata_filter={"n": {"$lt": 30}}),
        dict(strategy="hybrid", thread_id="shared"),
    ]
    for kw in calls:  # warm: every cache built, masks kept (twice)
        for _ in range(2):
            assert any(r.user_id == ALICE for r, _ in bob.search(query, k=10, **kw)), kw
    assert (bob._engine._cache.ann is not None) is ann  # the ANN index answered the warm searches

    _cli(db, "forget", "--user", ALICE, "--yes")
    new_id = _cli(db, "add", "--type", "memory", "--user", BOB, "--thread", "shared",
                  "bob warfarin dose question for his heart").strip()

    for kw in calls:
        hits = bob.search(query, k=80, **kw)
        assert all(r.user_id != ALICE and "alice" not in r.content for r, _ in hits), kw
        if "metadata_filter" not in kw:  # the CLI's record has no metadata
            assert new_id in [r.id for r, _ in hits], kw
    assert bob.get("memory", "a-1") is None and bob.get("memory", "a-2") is None
    listed = bob.list("memory", limit=None)
    assert len(listed) == 41 and all(r.user_id == BOB for r in listed)
    out = io.StringIO()
    export_records(bob, out.write)
    assert ALICE not in out.getvalue() and "warfarin dose 3 " not in out.getvalue()
    bob.close()


def test_a_warm_knowledge_layer_returns_nothing_of_a_user_another_process_erased(tmp_path):
    """The same for Bob's worker's KnowledgeMemory: after the CLI's forget of Alice (another
    process), its retrieve (as her, as Bob, shared only) and entity list hold nothing of hers,
    and Bob's and the shared facts stay."""
    from oramem.knowledge import KnowledgeMemory

    db = tmp_path / "kg.db"
    store = SQLiteMemoryStore(str(db), embedder=HashEmbedder(dim=32), search_strategy="hybrid")
    km = KnowledgeMemory(store, llm=None)
    km.add_fact("ag", "alice", "alice takes warfarin daily", user_id=ALICE)
    km.add_fact("ag", "bob", "bob takes the night train", user_id=BOB)
    km.add_fact("ag", "clinic", "the clinic opens at nine")
    query = "warfarin daily night train clinic"

    def texts(user):
        result = km.retrieve("ag", query, user_id=user)
        events = " ".join(e["text"] for e in result.events) + result.context
        if "alice" in events or "warfarin" in events:
            return ["an event or the context holds her words: " + events]
        return sorted(f.fact_text for f in result.facts)

    warm = km.retrieve("ag", query, user_id=ALICE)
    assert "alice takes warfarin daily" in [f.fact_text for f in warm.facts] and "warfarin" in warm.context
    assert "other:alice" in [e.canonical_key for e in km.entities("ag", user_id=ALICE)]

    _cli(db, "forget", "--user", ALICE, "--yes")

    assert texts(ALICE) == ["the clinic opens at nine"]
    assert texts(BOB) == ["bob takes the night train", "the clinic opens at nine"]
    assert texts(None) == ["the clinic opens at nine"]
    assert [e.canonical_key for e in km.entities("ag", user_id=ALICE)] == ["other:clinic"]
    km.close()
    store.close()
