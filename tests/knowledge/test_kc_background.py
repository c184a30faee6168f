"""Durable background extraction (issue 16 item 2): ``write(..., background=True)`` queues a job
and returns; workers process it exactly once, with retries and backoff, resumable after a
crash (a subprocess worker SIGKILLed mid-job), two processes never take the same job; status,
retry, erasure, the CLI, and the Oracle claim over the recording fake."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from oramem import SQLiteMemoryStore
from oramem.cli import cli
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory, LLMError
from oramem.knowledge.jobs import queue as queue_mod
from oramem.knowledge.jobs import worker as worker_mod
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import extract

EMOTION = {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}


def add_all(payload):
    return {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in payload["new_facts"]]}


def by_message(payload):
    """An extract reply derived from the message: "<Name> <verb> <thing>" -> one fact."""
    text = payload["message"]
    name = text.split()[0]
    return extract([(name, "person")], [(name, text)])


@pytest.fixture
def bg_llm():
    return ScriptedLLM({"event_emotion": EMOTION, "reconcile": add_all, "extract": by_message})


@pytest.fixture
def bkm(engine, store, bg_llm, clock):
    km = KnowledgeMemory(store, bg_llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    yield km
    km.close()


def count(km, table, **where):
    t = getattr(km._tables, table)
    with km._backend.read() as c:
        q = sa.select(sa.func.count()).select_from(t)
        for k, v in where.items():
            q = q.where(t.c[k] == v)
        return c.execute(q).scalar()


def test_background_write_queues_and_returns_without_llm_or_rows(bkm, bg_llm, store):
    r = bkm.write("a1", "Ana keeps bees", "Pedro", session_id="s1", background=True)
    assert r.job_id and r.event_id and r.success and not r.facts_added
    assert bg_llm.calls == []  # no LLM call at submit
    assert count(bkm, "event") == 0 and count(bkm, "fact") == 0 and store.get("message", r.event_id) is None
    assert r.stats.steps[0].name == "enqueue" and r.stats.llm_calls == 0
    job = bkm.get_job(r.job_id)
    assert (job.status, job.attempts, job.agent_id, job.session_id, job.event_id) == ("pending", 0, "a1", "s1", r.event_id)
    st = bkm.job_status()
    assert st.counts == {"pending": 1, "running": 0, "done": 0, "failed": 0} and st.oldest_pending_at == job.created_at

    rep = bkm.process_jobs()
    assert (rep.done, rep.retried, rep.failed, rep.job_ids) == (1, 0, 0, (r.job_id,))
    done = bkm.get_job(r.job_id)
    assert done.status == "done" and done.attempts == 1 and done.result["decisions"] == {"ADD": 1}
    assert "message" not in done.result and "message" not in json.dumps(done.result)
    facts = bkm.get_all("a1")
    assert [f.fact_text for f in facts] == ["Ana keeps bees"] and facts[0].source_event_id == r.event_id
    assert store.get("message", r.event_id) is not None
    # the queue keeps no second copy of the message once the event holds it
    with bkm._backend.read() as c:
        payload = c.execute(sa.select(bkm._tables.job.c.payload_json)).scalar()
    assert "message" not in payload and payload["speaker_name"] == "Pedro"
    assert bkm.process_jobs() == queue_mod.WorkerReport()  # nothing due


def test_background_write_validates_like_write_and_rejects_what_does_not_apply(bkm):
    with pytest.raises(ValueError, match="dry_run and verbose"):
        bkm.write("a1", "x y", "Pedro", background=True, dry_run=True)
    with pytest.raises(ValueError, match="dry_run and verbose"):
        bkm.write("a1", "x y", "Pedro", background=True, verbose=True)
    with pytest.raises(TypeError, match="background must be a bool"):
        bkm.write("a1", "x y", "Pedro", background="yes")
    with pytest.raises(ValueError, match="speaker_name"):
        bkm.write("a1", "x y", " ", background=True)
    with pytest.raises(ValueError):
        bkm.write("a1", "x y", "Pedro", background=True, config_overrides={"no_such_key": 1})
    assert count(bkm, "job") == 0
    assert bkm.write("a1", "   ", "Pedro", background=True).job_id is None  # empty message: nothing to queue


def test_queue_without_llm_and_worker_needs_one(engine, store, clock):
    km = KnowledgeMemory(store, None, clock=clock)
    try:
        assert km.write("a1", "Ana keeps bees", "Pedro", background=True).job_id
        with pytest.raises(ValueError, match="LLM"):
            km.process_jobs()
        with pytest.raises(ValueError, match="LLM"):
            km.start_worker()
    finally:
        km.close()


def test_occurred_at_defaults_to_submit_time(bkm, clock):
    r = bkm.write("a1", "Ana keeps bees", "Pedro", background=True)
    submitted = clock.now
    clock.advance(hours=5)
    bkm.process_jobs()
    with bkm._backend.read() as c:
        occurred = c.execute(sa.select(bkm._tables.event.c.occurred_at).where(bkm._tables.event.c.id == r.event_id)).scalar()
    assert occurred == submitted


def test_failed_attempts_back_off_then_fail_visibly_and_retry(bkm, bg_llm, clock):
    bg_llm.route("extract", LLMError("upstream 503"))
    r = bkm.write("a1", "Ana keeps bees", "Pedro", background=True)
    delays = []
    for attempt in range(1, 6):
        rep = bkm.process_jobs()
        job = bkm.get_job(r.job_id)
        assert job.attempts == attempt and "upstream 503" in job.last_error
        if attempt < 5:
            assert rep.retried == 1 and job.status == "pending"
            delays.append((job.available_at - clock.now).total_seconds())
            assert bkm.process_jobs().job_ids == ()  # not due before its backoff
            clock.advance(seconds=delays[-1])
        else:
            assert rep.failed == 1 and job.status == "failed"
    assert delays == [2.0, 4.0, 8.0, 16.0]
    assert count(bkm, "event") == 0 and count(bkm, "fact") == 0  # a failed attempt leaves nothing
    st = bkm.job_status()
    assert st.counts["failed"] == 1 and st.last_errors[0].id == r.job_id and "upstream 503" in st.last_errors[0].last_error
    assert [j.id for j in bkm.jobs(status="failed")] == [r.job_id]
    # fixed upstream: retry puts it back with fresh attempts, and it completes
    bg_llm.route("extract", by_message)
    assert bkm.retry_jobs([r.job_id]) == 1 and bkm.retry_jobs([r.job_id]) == 0
    assert bkm.get_job(r.job_id).status == "pending"
    assert bkm.process_jobs().done == 1
    assert bkm.get_job(r.job_id).status == "done" and [f.fact_text for f in bkm.get_all("a1")] == ["Ana keeps bees"]
    with pytest.raises(TypeError):
        bkm.retry_jobs("not-a-list")
    with pytest.raises(ValueError, match="status must be one of"):
        bkm.jobs(status="weird")


def test_processing_a_job_twice_never_duplicates(bkm):
    r = bkm.write("a1", "Ana keeps bees", "Pedro", background=True)
    bkm.process_jobs()
    before = (count(bkm, "fact"), count(bkm, "entity"), count(bkm, "event"))
    # a duplicate delivery: the job is pending again although its event was committed
    with bkm._backend.write("test", "a1") as c:
        c.execute(sa.update(bkm._tables.job).values(status="pending"))
    rep = bkm.process_jobs()
    assert rep.already_done == 1 and rep.done == 0
    assert (count(bkm, "fact"), count(bkm, "entity"), count(bkm, "event")) == before
    assert bkm.get_job(r.job_id).status == "done"


def test_a_worker_whose_lease_was_taken_over_rolls_back(bkm, store, clock):
    r = bkm.write("a1", "Ana keeps bees", "Pedro", background=True)
    now = clock.now
    job = queue_mod.claim(bkm.runtime, "worker-A", now, now + timedelta(seconds=10))
    assert job["id"] == r.job_id and job["status"] == "running"
    # worker A stalls past its lease; worker B claims the job
    clock.advance(seconds=11)
    job_b = queue_mod.claim(bkm.runtime, "worker-B", clock.now, clock.now + timedelta(seconds=10))
    assert job_b["id"] == r.job_id and job_b["attempts"] == 2 and job_b["last_error"] == queue_mod.LEASE_EXPIRED
    records_before = store.count() if hasattr(store, "count") else None
    import asyncio

    assert asyncio.run(worker_mod.run_job(bkm.runtime, bkm.config, job, "worker-A", 2.0, 300.0)) == "lost"
    assert count(bkm, "event") == 0 and count(bkm, "fact") == 0
    assert store.get("message", r.event_id) is None  # compensated
    if records_before is not None:
        assert store.count() == records_before
    assert asyncio.run(worker_mod.run_job(bkm.runtime, bkm.config, job_b, "worker-B", 2.0, 300.0)) == "done"
    assert count(bkm, "event") == 1 and count(bkm, "fact") == 1


def test_orphan_store_record_of_a_crashed_attempt_is_replaced(bkm, store):
    r = bkm.write("a1", "Ana keeps bees", "Pedro", background=True)
    # what a crash between the store write and the knowledge commit leaves behind: the event's
    # record, of the job's scope, marked as a knowledge event (write/commit.py event_metadata)
    store.add(["Ana keeps bees"], "message", record_ids=[r.event_id], thread_ids="default", agent_ids="a1", roles="user",
              metadata=[{"kg_event": True, "kg_speaker": "Pedro", "kg_source": "conversation"}])
    assert bkm.process_jobs().done == 1
    assert count(bkm, "event") == 1 and store.get("message", r.event_id) is not None


def test_a_record_of_another_scope_under_the_event_id_is_never_deleted(bkm, store):
    """Store ids are caller-chosen: Bob's record planted under the id of Alice's queued event
    is his, not a crashed attempt's leftover. The worker leaves it (the attempt's own write of
    the event record then fails on the id, and the job is retried), and nothing of Alice's
    message reaches his record."""
    r = bkm.write("a1", "Ana keeps bees", "Pedro", user_id="alice", background=True)
    store.add(["bob's words"], "message", record_ids=[r.event_id], user_ids="bob", agent_ids="a1", roles="user",
              metadata=[{"kg_event": True}])
    report = bkm.process_jobs()
    assert report.done == 0 and report.retried + report.failed == 1
    kept = store.get("message", r.event_id)
    assert (kept.user_id, kept.content) == ("bob", "bob's words")
    assert count(bkm, "event") == 0 and count(bkm, "fact") == 0


def test_expired_lease_out_of_attempts_fails_with_the_reason(bkm, clock):
    r = bkm.write("a1", "Ana keeps bees", "Pedro", background=True)
    with bkm._backend.write("test", "a1") as c:
        c.execute(sa.update(bkm._tables.job).values(attempts=5))
    queue_mod.claim(bkm.runtime, "w", clock.now, clock.now + timedelta(seconds=1))  # claimable although attempts=max: pending
    clock.advance(seconds=5)
    assert queue_mod.claim(bkm.runtime, "w2", clock.now, clock.now + timedelta(seconds=1)) is None
    job = bkm.get_job(r.job_id)
    assert job.status == "failed" and job.last_error == queue_mod.LEASE_EXPIRED


def test_in_process_worker_picks_up_background_writes(engine, store, bg_llm):
    km = KnowledgeMemory(store, bg_llm, config=KnowledgeConfig(enable_reranker=False))
    try:
        km.start_worker(poll_interval=5.0, lease_seconds=30.0)
        with pytest.raises(ValueError, match="already runs"):
            km.start_worker()
        ids = [km.write("a1", f"Ana{i} keeps bees", "Pedro", background=True).job_id for i in range(3)]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and km.job_status().counts["done"] < 3:
            time.sleep(0.05)
        assert km.job_status().counts["done"] == 3  # woken by the writes, not by the 5 s poll
        rep = km.stop_worker()
        assert rep.done == 3 and set(rep.job_ids) == set(ids)
        assert km.stop_worker() is None
    finally:
        km.close()


def test_erasure_of_an_agent_removes_its_queued_messages(bkm, store):
    bkm.write("a1", "Ana keeps bees", "Pedro", session_id="s1", background=True)
    bkm.write("a1", "Rui sails boats", "Pedro", session_id="s2", background=True)
    bkm.write("a2", "Eva paints walls", "Pedro", session_id="s3", background=True)
    bkm.delete_all("a1")
    assert count(bkm, "job", agent_id="a1") == 0 and count(bkm, "job") == 1


def test_a_failed_attempt_in_a_new_session_keeps_the_sessions_other_jobs(bkm, bg_llm):
    """The compensation of a failed commit deletes the thread the attempt created; the other
    pending messages of that session stay queued."""
    from oramem.testing import fail_at

    first = bkm.write("a1", "Ana keeps bees", "Pedro", session_id="new", background=True)
    second = bkm.write("a1", "Rui sails boats", "Pedro", session_id="new", background=True)
    with fail_at("facts"):
        rep = bkm.process_jobs(max_jobs=1)
    tried = rep.job_ids[0]
    other = ({first.job_id, second.job_id} - {tried}).pop()
    assert rep.retried == 1 and "injected database error" in bkm.get_job(tried).last_error
    assert bkm.get_job(other).status == "pending" and bkm.get_job(other).attempts == 0
    assert bkm.process_jobs(max_jobs=1).job_ids == (other,)  # the other one is due; the failed one backs off
    assert bkm.get_job(other).status == "done"


def test_operation_stats_on_write_and_retrieve(bkm, bg_llm):
    r = bkm.write("a1", "Ana keeps bees", "Pedro")
    s = r.stats
    assert s.llm_calls == len(bg_llm.calls) == 2  # emotion + extract (no candidates: no reconcile call)
    assert s.tokens == r.tokens_used and s.tokens.total_tokens > 0 and s.tokens_estimated is False
    assert {"classify", "extract", "commit"} <= {x.name for x in s.steps} and s.total_ms == r.duration_ms
    assert s.step_ms("commit") > 0 and s.step_ms("no-such-step") == 0.0
    q = bkm.retrieve("a1", "what does Ana keep?")
    assert q.stats.llm_calls == 0 and q.stats.total_ms == q.duration_ms and "plan" in [x.name for x in q.stats.steps]


def test_tokens_estimated_when_the_provider_reports_no_usage(engine, store, clock):
    from oramem.knowledge import LLMResult
    from oramem.knowledge.llm.providers import BaseLLMProvider

    class NoUsage(BaseLLMProvider):
        async def complete_async(self, messages, **kw):
            task = messages[0]["content"]
            if "event_emotion" in task:
                return LLMResult(json.dumps(EMOTION), None)
            return LLMResult(json.dumps(extract([("Ana", "person")], [("Ana", "Ana keeps bees")])), None)

    km = KnowledgeMemory(store, NoUsage(), config=KnowledgeConfig(enable_reranker=False), clock=clock)
    try:
        r = km.write("a1", "Ana keeps bees", "Pedro")
        assert r.success and r.stats.tokens_estimated is True and r.stats.tokens.total_tokens > 0
    finally:
        km.close()


# ----------------------------------------------------------------------------- processes
WORKER = textwrap.dedent('''
    import sys, time
    from oramem import SQLiteMemoryStore
    from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
    from oramem.knowledge.write import commit as commit_mod
    from oramem.testing import HashEmbedder, ScriptedLLM

    db, pause_at, marker, lease, delay = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])

    def paused(where, text):
        # the kill point: announce, then hang until the test SIGKILLs this process
        if pause_at == where and text.startswith("Msg2 "):
            open(marker, "w").write(where)
            time.sleep(600)

    def extractor(payload):
        text = payload["message"]
        paused("llm", text)
        time.sleep(delay)
        name = text.split()[0]
        return {"entities": [{"name": name, "type": "person"}],
                "facts": [{"subject": name, "fact": text, "confidence": "explicit_statement"}]}

    original = commit_mod._knowledge_tx
    def knowledge_tx(run, *a, **k):
        paused("commit", run.message)  # after the store records, before the knowledge transaction
        return original(run, *a, **k)
    commit_mod._knowledge_tx = knowledge_tx

    llm = ScriptedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.1, "energy": "low"},
                       "reconcile": lambda p: {"decisions": [{"new_fact_index": f["index"], "action": "ADD"}
                                                             for f in p["new_facts"]]},
                       "extract": extractor})
    store = SQLiteMemoryStore(db, embedder=HashEmbedder(64))
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False))
    rep = km.process_jobs(lease_seconds=lease)
    print(rep.done, rep.already_done, rep.retried, rep.failed, rep.lost)
    km.close()
    store.close()
''')


def _queue_db(path, n):
    store = SQLiteMemoryStore(str(path), embedder=HashEmbedder(64))
    km = KnowledgeMemory(store, None)
    ids = [km.write("a1", f"Msg{i} Person{i} likes item{i}", "Pedro", background=True).job_id for i in range(n)]
    km.close()
    store.close()
    return ids


def _final_counts(path):
    store = SQLiteMemoryStore(str(path), embedder=HashEmbedder(64))
    km = KnowledgeMemory(store, None)
    try:
        jobs = km.jobs(limit=1000)
        events = count(km, "event")
        with km._backend.read() as c:
            ev = km._tables.event
            texts = sorted(r[0] for r in c.execute(sa.select(ev.c.text)))
        facts = sorted(f.fact_text for f in km.get_all("a1", limit=1000))
        messages = len(store.search(query="likes", record_types="message", k=1000, strategy="keyword")) \
            if store.search_strategy.value != "vector" else None
        return jobs, events, texts, facts, messages
    finally:
        km.close()
        store.close()


def _spawn(script, db, pause_at, marker, lease, delay=0.0):
    return subprocess.Popen([sys.executable, str(script), str(db), pause_at, str(marker), str(lease), str(delay)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("kill_point", ["llm", "commit"])
def test_sigkill_mid_job_then_restart_processes_every_message_exactly_once(tmp_path, kill_point):
    db, marker, script = tmp_path / "q.db", tmp_path / "paused", tmp_path / "worker.py"
    script.write_text(WORKER)
    n = 4
    _queue_db(db, n)
    lease = 2.0
    first = _spawn(script, db, kill_point, marker, lease)
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), first.communicate()[1][-2000:]
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    # what the killed worker left: Msg0 and Msg1 done, Msg2 running (claimed, lease held)
    jobs, events, *_ = _final_counts(db)
    states = sorted(j.status for j in jobs)
    assert states == ["done", "done", "pending", "running"], states
    time.sleep(lease + 0.5)  # the dead worker's lease expires
    second = _spawn(script, db, "none", marker, lease)
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err[-2000:]
    assert out.split() == ["2", "0", "0", "0", "0"]  # Msg2 (taken over) and Msg3
    jobs, events, texts, facts, _ = _final_counts(db)
    assert [j.status for j in jobs] == ["done"] * n
    assert [j.attempts for j in jobs] == [1, 1, 2, 1]
    assert events == n and texts == sorted(f"Msg{i} Person{i} likes item{i}" for i in range(n))
    assert facts == texts  # one fact per message, none twice


def test_two_worker_processes_never_take_the_same_job(tmp_path):
    db, script = tmp_path / "q.db", tmp_path / "worker.py"
    script.write_text(WORKER)
    n = 12
    _queue_db(db, n)
    procs = [_spawn(script, db, "none", tmp_path / "unused", 60.0, 0.15) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    done = [int(out.split()[0]) for out, _ in outs]
    assert sum(done) == n and [int(x) for out, _ in outs for x in out.split()[1:]] == [0] * 8
    jobs, events, texts, facts, _ = _final_counts(db)
    assert [j.status for j in jobs] == ["done"] * n and [j.attempts for j in jobs] == [1] * n
    assert events == n and facts == texts and len(set(texts)) == n
    assert len({j.worker_id for j in jobs}) == sum(1 for d in done if d)


# ----------------------------------------------------------------------------- CLI
def _invoke(args, **kw):
    return CliRunner().invoke(cli, args, **kw)


def test_cli_write_background_status_list_retry_and_worker(tmp_path, monkeypatch):
    from .llm_server import LLMServer

    path = str(tmp_path / "kg.db")
    base = ["--db", path, "--embed-dim", "64"]
    res = _invoke(base + ["--json", "knowledge", "write", "a1", "Ana keeps bees", "--speaker", "Pedro", "--background"])
    assert res.exit_code == 0, res.output
    queued = json.loads(res.output)
    assert queued["job_id"] and queued["facts_added"] == []
    res = _invoke(base + ["knowledge", "write", "a1", "x", "--speaker", "P", "--background", "--dry-run"])
    assert res.exit_code == 2 and "--dry-run" in res.output

    target = ["--sqlite", path, "--store-id", "DEFAULT"]
    res = _invoke(["kg", "jobs", "status", *target, "--json"])
    assert res.exit_code == 0, res.output
    st = json.loads(res.output)
    assert st["counts"] == {"pending": 1, "running": 0, "done": 0, "failed": 0} and st["oldest_pending_at"]
    res = _invoke(["kg", "jobs", "status", *target])
    assert res.exit_code == 0 and "pending=1" in res.output and "oldest pending" in res.output
    res = _invoke(["kg", "jobs", "list", *target, "--json"])
    listed = json.loads(res.output)
    assert [j["id"] for j in listed] == [queued["job_id"]] and "Ana keeps bees" not in res.output
    res = _invoke(["kg", "jobs", "retry", *target])
    assert res.exit_code == 2 and "--all-failed" in res.output
    res = _invoke(["kg", "jobs", "status", *target, "--agent-id", ""])
    assert res.exit_code == 2
    res = _invoke(["kg", "worker", *target, "--once"], env={"ORAMEM_LLM_BASE_URL": "", "ORAMEM_LLM_MODEL": ""})
    assert res.exit_code == 2 and "ORAMEM_LLM_BASE_URL" in res.output

    scripted = ScriptedLLM({"event_emotion": EMOTION, "reconcile": add_all,
                            "extract": extract([("Ana", "person")], [("Ana", "Ana keeps bees")])})
    server = LLMServer(scripted)
    # emotion tagging fails softly; extraction fails: 2 HTTP 400s per attempt (extract + its one retry)
    server.failures = [(400, '{"error": "model overloaded"}')] * 15
    try:
        llm = ["--llm-base-url", server.base_url, "--llm-model", "m", "--backoff-base", "1", "--backoff-max", "1"]
        reports = []
        for i in range(5):  # every attempt fails (the provider's error), then the job fails for good
            time.sleep(1.05 if i else 0)  # the backoff: a --once run takes only what is due
            res = _invoke(["kg", "worker", *target, "--once", *llm])
            reports.append((res.exit_code, json.loads(res.output.strip().splitlines()[-1])))
        assert [(code, r["retried"], r["failed"]) for code, r in reports] == [(0, 1, 0)] * 4 + [(1, 0, 1)], reports
        st = json.loads(_invoke(["kg", "jobs", "status", *target, "--json"]).output)
        assert st["counts"]["failed"] == 1 and st["last_errors"][0]["last_error"]
        assert "400" in st["last_errors"][0]["last_error"]
        res = _invoke(["kg", "jobs", "retry", *target, "--all-failed"])
        assert res.exit_code == 0 and json.loads(res.output) == {"retried": 1}
        server.failures = []
        res = _invoke(["kg", "worker", *target, "--once", *llm])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["done"] == 1
    finally:
        server.close()
    res = _invoke(base + ["--json", "knowledge", "facts", "a1"])
    assert "Ana keeps bees" in res.output


def test_oracle_deletion_hook_deletes_a_deleted_agents_jobs():
    """Static check of plsql/oramem_kg_jobs.pkb (not run against Oracle): the profile cascade
    of on_store_delete deletes the agent's KG_JOB rows when the store has the queue table."""
    from pathlib import Path

    body = (Path(__file__).resolve().parents[2] / "plsql" / "oramem_kg_jobs.pkb").read_text()
    hook = body[body.index("PROCEDURE on_store_delete"):body.index("END on_store_delete;")]
    assert "table_name = l_sid || '_KG_JOB'" in hook
    assert "sql_for(gc_tpl_hk_del_agent, l_sid, 'JOB')" in hook


def test_deleting_a_thread_removes_its_queued_messages(bkm, store):
    bkm.write("a1", "Ana keeps bees", "Pedro", session_id="s1")  # the thread exists in the store
    bkm.write("a1", "Rui sails boats", "Pedro", session_id="s1", background=True)
    bkm.write("a1", "Eva paints walls", "Pedro", session_id="s2", background=True)
    store.delete_thread("s1")
    assert count(bkm, "job", session_id="s1") == 0 and count(bkm, "job", session_id="s2") == 1
    bkm.process_jobs()
    assert store.list_thread_messages("s1") == []  # nothing of the deleted thread comes back


def test_oracle_deletion_hook_deletes_a_deleted_threads_jobs():
    """Static check of plsql/oramem_kg_jobs.pkb (not run against Oracle): a deleted thread's
    queued background writes are deleted by session id, as the SQLite hook does."""
    from pathlib import Path

    body = (Path(__file__).resolve().parents[2] / "plsql" / "oramem_kg_jobs.pkb").read_text()
    hook = body[body.index("PROCEDURE on_store_delete"):body.index("END on_store_delete;")]
    threads = hook[hook.index("l_arr := l_doc.get_array('thread_ids')"):hook.index("l_arr := l_doc.get_array('agent_ids')")]
    assert "sql_for(gc_tpl_hk_del_session, l_sid, 'JOB')" in threads
    assert hook.index("table_name = l_sid || '_KG_JOB'") < hook.index("l_arr := l_doc.get_array('thread_ids')")
    assert "q'[DELETE FROM #TAB# WHERE session_id = :1]'" in body
    # and, as the SQLite hook does, the thread's session observations and its intentions
    assert "sql_for(gc_tpl_hk_del_session, l_sid, 'SESSION_OBSERVATION')" in threads
    assert "sql_for(gc_tpl_hk_del_session_int, l_sid)" in threads
    assert "q'[DELETE FROM #INT# WHERE source_context = :1]'" in body
