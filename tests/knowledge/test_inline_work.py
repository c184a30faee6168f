"""Where the knowledge layer's blocking work runs (``KnowledgeRuntime.runs_inline``; round h of
``bench/results/knowledge_speed.md``).

A sync call on the embedded SQLite store runs its database work, and a model computed in this
process, on the instance's own loop thread: the store does one database call at a time, so a
worker thread would only add two hand-offs per call. An embedder that is not local (a service,
the database's model) still runs on the worker pool, where other writes overlap it; an async
caller's event loop never runs any of it; and a backend whose calls can overlap (Oracle's pool)
keeps the worker pool."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from oramem.embedders import HashEmbedder
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.oracle.sql_access import OracleAccess
from oramem.sql_access import SQLAccess
from oramem.sqlite.sql_access import SQLiteAccess

from .helpers import extract


class RecordingEmbedder(HashEmbedder):
    """A HashEmbedder that says whether it computes locally and records the threads it ran on
    (``threads``: every call; ``query_threads``: the calls for a search query)."""

    def __init__(self, local: bool) -> None:
        super().__init__(384)
        self.computes_locally = local
        self.threads: list[threading.Thread] = []
        self.query_threads: list[threading.Thread] = []

    def embed(self, texts, *, is_query=False):
        (self.query_threads if is_query else self.threads).append(threading.current_thread())
        return super().embed(texts, is_query=is_query)


@pytest.fixture
def make(store, llm, clock, monkeypatch):
    """``make(local)``: a KnowledgeMemory over a RecordingEmbedder, and the list of threads its
    database work ran on (the knowledge backend's reads and writes, the store's searches)."""
    made = []

    def factory(local: bool) -> tuple[KnowledgeMemory, RecordingEmbedder, list[threading.Thread]]:
        emb = RecordingEmbedder(local)
        km = KnowledgeMemory(store, llm, emb, config=KnowledgeConfig(enable_reranker=False), clock=clock)
        made.append(km)
        db_threads: list[threading.Thread] = []
        backend = km.runtime.backend

        def recorded(fn):
            def call(*args, **kwargs):
                db_threads.append(threading.current_thread())
                return fn(*args, **kwargs)
            return call

        for name in ("read", "write", "try_write"):
            monkeypatch.setattr(backend, name, recorded(getattr(backend, name)))
        monkeypatch.setattr(store, "search", recorded(store.search))
        return km, emb, db_threads

    yield factory
    for km in made:
        km.close()


def _exercise(km: KnowledgeMemory, llm) -> None:
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes green tea")]))
    assert km.write("a1", "Ana likes green tea", "Pedro").success
    assert km.retrieve("a1", "what does Ana like?").facts


def _home_thread(km: KnowledgeMemory) -> threading.Thread:
    thread = km._loop_runner._thread
    assert thread is not None
    return thread


@pytest.mark.parametrize("local", [True, False], ids=["local model", "service"])
def test_a_sync_call_on_sqlite_runs_database_work_on_the_instances_loop_and_a_service_on_the_pool(make, llm, engine,
                                                                                                   local):
    if engine != "sqlite":
        pytest.skip("the inline path is the serial (SQLite) store's")
    km, emb, db_threads = make(local=local)
    _exercise(km, llm)
    home = _home_thread(km)
    assert db_threads and set(db_threads) == {home}
    assert emb.threads and emb.query_threads
    if local:  # a model computed in this process: inline too
        assert set(emb.threads) == {home}
    else:  # a service (or the database's model): the worker pool, where other writes overlap it
        assert all(t.name.startswith("oramem-kg_") for t in emb.threads), [t.name for t in emb.threads]
    # retrieve embeds its query beside its first reads: on the pool either way
    assert all(t.name.startswith("oramem-kg_") for t in emb.query_threads), [t.name for t in emb.query_threads]


def test_retrieve_embeds_its_query_while_its_first_reads_run(make, llm, engine, monkeypatch):
    """The query's embedding is not serialised behind the reads that run inline: a slow query
    embedding is still running when a read starts."""
    if engine != "sqlite":
        pytest.skip("the inline path is the serial (SQLite) store's")
    km, emb, _ = make(local=True)
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes green tea")]))
    assert km.write("a1", "Ana likes green tea", "Pedro").success
    embedding = threading.Event()
    overlapped: list[bool] = []
    embed, read = emb.embed, km.runtime.backend.read

    def slow_embed(texts, *, is_query=False):
        if not is_query:
            return embed(texts, is_query=is_query)
        embedding.set()
        try:
            time.sleep(0.3)
            return embed(texts, is_query=is_query)
        finally:
            embedding.clear()

    def watched_read(*args, **kwargs):
        overlapped.append(embedding.is_set())
        return read(*args, **kwargs)

    monkeypatch.setattr(emb, "embed", slow_embed)
    monkeypatch.setattr(km.runtime.backend, "read", watched_read)
    assert km.retrieve("a1", "what does Ana like?").facts
    assert any(overlapped), overlapped


def test_a_backend_whose_calls_can_overlap_keeps_the_worker_pool(make, llm, monkeypatch):
    km, emb, db_threads = make(local=True)
    monkeypatch.setattr(km.runtime.backend, "serial", False)
    _exercise(km, llm)
    home = _home_thread(km)
    assert db_threads and home not in db_threads and home not in emb.threads
    assert all(t.name.startswith("oramem-kg_") for t in db_threads + emb.threads)


def test_only_the_embedded_store_says_its_calls_never_overlap():
    assert SQLiteAccess.serial is True
    assert OracleAccess.serial is False and SQLAccess.serial is False
    assert HashEmbedder.computes_locally is True


async def test_an_async_callers_loop_never_runs_blocking_work(make, llm):
    km, emb, db_threads = make(local=True)
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes green tea")]))
    caller = threading.current_thread()
    assert (await km.write_async("a1", "Ana likes green tea", "Pedro")).success
    assert (await km.retrieve_async("a1", "what does Ana like?")).facts
    assert db_threads and emb.threads
    assert caller not in db_threads and caller not in emb.threads
    # nor the instance's loop (an async call never starts it): the worker pool
    assert all(t.name.startswith("oramem-kg_") for t in db_threads + emb.threads)
    assert km.runtime.runs_inline() is False


def test_concurrent_sync_calls_of_two_users_in_one_thread_keep_their_scopes(make, llm):
    """Alice's and Bob's sync calls run through one instance at once, in one shared session of one
    agent: the inline work of one call and the LLM waits of the others share the instance's loop
    without a deadlock, each user's facts land in her scope only, and Bob's erasure leaves
    every fact of Alice's."""
    km, _, _ = make(local=True)

    def extract_reply(payload):
        item = str(payload.get("message", payload) if isinstance(payload, dict) else payload).rsplit(" ", 1)[-1]
        return extract([("Ana", "person")], [("Ana", f"Ana owns {item}")])

    llm.route("extract", extract_reply)
    llm.route("reconcile", lambda p: {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in p["new_facts"]]})
    users = {w: ("alice", "bob")[w % 2] for w in range(4)}

    def calls(w: int) -> None:
        for i in range(5):
            result = km.write("a1", f"note from writer {w} item{w}{i}", "Pedro", user_id=users[w], session_id="shared")
            assert result.success, result.error
            km.retrieve("a1", f"item{w}{i}", user_id=users[w])

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(calls, w) for w in range(4)]:
            future.result(timeout=60)

    def facts(user: str) -> set[str]:
        return {f.fact_text for f in km.get_all("a1", limit=100, user_id=user) if f.user_id == user}

    wanted = {user: {f"Ana owns item{w}{i}" for w in range(4) for i in range(5) if users[w] == user}
              for user in ("alice", "bob")}
    alice = facts("alice")
    assert alice == wanted["alice"] and facts("bob") == wanted["bob"]
    assert not {f.fact_text for f in km.get_all("a1", limit=100, user_id="alice")} & wanted["bob"]
    km.forget(user_id="bob")
    assert facts("bob") == set() and facts("alice") == alice
