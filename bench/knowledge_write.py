"""Write overhead of the knowledge layer per message, excluding LLM and embedding time,
on an agent that already holds 10k facts (KC target: ≤ 15 ms).

    python bench/knowledge_write.py [--facts 10000] [--messages 100] [--entities 100] [--db PATH]

Loads ``--facts`` facts (100 per write, over ``--entities`` entities, 100 by default; fewer hold
more facts each, as a user's own entity does) into a fresh SQLite store, then
times ``--messages`` writes of 3 facts, 2 entities and 1 relation each about existing
entities (so alias lookups, entity resolution, store vector search for reconciliation,
the reconcile call, the commit with store records and cascades all run). LLM time (a
ScriptedLLM, wrapped with a timer) and embedding time (a HashEmbedder, wrapped) are
subtracted. Prints one JSON line: wall-clock overhead, and CPU overhead (process CPU time
minus the LLM's and embedder's), which stays meaningful on a loaded machine. The first
write after the load (the process's first store search, which loads the vector cache and
the metadata columns: ~0.2-0.5 s at 10k, once per process and store) is reported on its
own (``first_write_after_load_ms``, LLM and embedding included), not in the samples.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.calibrate import python_loop_ms, trip_us  # noqa: E402
from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory  # noqa: E402
from oramem.testing import HashEmbedder, ScriptedLLM  # noqa: E402


class Timed:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.cpu = 0.0


class TimedEmbedder(HashEmbedder):
    def __init__(self, dim: int, timer: Timed) -> None:
        super().__init__(dim)
        self.timer = timer

    def embed(self, texts, *, is_query=False):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return super().embed(texts, is_query=is_query)
        finally:
            self.timer.seconds += time.perf_counter() - t0
            self.timer.cpu += time.process_time() - c0


class TimedLLM(ScriptedLLM):
    def __init__(self, routes, timer: Timed) -> None:
        super().__init__(routes)
        self.timer = timer

    async def complete_async(self, messages, **kw):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return await super().complete_async(messages, **kw)
        finally:
            self.timer.seconds += time.perf_counter() - t0
            self.timer.cpu += time.process_time() - c0


def time_store(store, timer: Timed) -> None:
    """Wrap the store's record operations so the report can split layer and store cost."""
    for name in ("search", "add_batches", "update", "get"):
        fn = getattr(store, name)

        def wrapped(*a, _fn=fn, **k):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return _fn(*a, **k)
            finally:
                timer.seconds += time.perf_counter() - t0
                timer.cpu += time.process_time() - c0

        setattr(store, name, wrapped)


def add_all(payload):
    return {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in payload["new_facts"]]}


def pool_pairing(km: KnowledgeMemory, enabled: bool):
    """``--paired-pool``: ``mode(i)`` puts call ``i`` of the timed loop on the knowledge layer's
    worker pool when ``i`` is even (the path before round h of bench/results/knowledge_speed.md:
    ``runtime.home`` unset, so ``runs_inline`` is False) and inline otherwise, so both paths run
    in the same process and minutes, alternating; without the flag every call is ``"inline"``."""
    home = km.runtime.home

    def mode(i: int) -> str:
        if not enabled:
            return "inline"
        pooled = i % 2 == 0
        km.runtime.home = None if pooled else home
        return "pool" if pooled else "inline"

    return mode


def paired_summary(by_mode: dict, stat) -> dict:
    """The ``paired_pool`` block of the JSON line: ``stat`` of each path's samples, and their count."""
    return {"calls_each": min(len(v) for v in by_mode.values()),
            **{f"{name}_ms": round(stat(v), 2) for name, v in sorted(by_mode.items())}}


def message(llm, entities, m: int) -> tuple[str, str]:
    i, j = m % len(entities), (m * 7 + 3) % len(entities)
    a, b = entities[i], entities[j if j != i else (j + 1) % len(entities)]
    llm.route("extract", {
        "entities": [{"name": a, "type": "person"}, {"name": b, "type": "person"}],
        "facts": [{"subject": a, "fact": f"{a} met {b} at event {m}", "confidence": 0.9},
                  {"subject": a, "fact": f"{a} enjoys hobby{m}", "confidence": 0.9, "attribute_key": "hobby"},
                  {"subject": b, "fact": f"{b} moved to city{m}", "confidence": 0.9, "attribute_key": "residence"}],
        "relations": [{"source": a, "target": b, "rel_type": "friend"}],
    })
    llm.calls.clear()
    return a, b


def profile(km, llm, entities, n: int, now) -> None:
    import yappi  # not a project dependency (see --profile)

    yappi.set_clock_type("cpu")
    yappi.start(builtins=False, profile_threads=True)
    for m in range(10_000, 10_000 + n):
        a, b = message(llm, entities, m)
        km.write("bench", f"{a} met {b}", "Pedro")
        now[0] += timedelta(minutes=1)
    yappi.stop()
    stats = yappi.get_func_stats()
    for key, title in (("ttot", "inclusive"), ("tsub", "own time")):
        stats.sort(key, "desc")
        print(f"# yappi, CPU ms per write by {title} (inclusive / own / calls), {n} writes", file=sys.stderr)
        for st in list(stats)[:50]:
            print(f"{st.ttot * 1000 / n:8.2f} {st.tsub * 1000 / n:8.2f} {st.ncall / n:8.1f}  "
                  f"{st.module.split('site-packages/')[-1]}:{st.lineno} {st.name}", file=sys.stderr)
    yappi.clear_stats()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--messages", type=int, default=100)
    ap.add_argument("--entities", type=int, default=100, help="entities the loaded facts are spread over (at least 2)")
    ap.add_argument("--db", default=None)
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after the timed writes, profile N more writes with yappi (every thread, CPU clock; yappi is "
                         "not a project dependency: pip install yappi) and print the top functions to stderr")
    ap.add_argument("--paired-pool", action="store_true",
                    help="alternate the timed writes between the worker-pool path and the inline one (round h); the "
                         "usual figures are the inline writes', paired_pool has each path's mean")
    args = ap.parse_args()
    # the store (unless --db names one) and its sidecars live here, removed on the way out
    with tempfile.TemporaryDirectory(prefix="oramem-kg-bench-") as tmp:
        run(args, tmp)


def run(args: argparse.Namespace, tmp: str) -> None:
    path = args.db or os.path.join(tmp, "bench.db")
    now = [datetime(2025, 1, 1, tzinfo=timezone.utc)]
    clock = lambda: now[0]  # noqa: E731
    llm_t, emb_t, store_t = Timed(), Timed(), Timed()
    emb = TimedEmbedder(384, emb_t)
    store = SQLiteMemoryStore(path, embedder=emb, clock=clock)
    llm = TimedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.1, "energy": "low"}, "reconcile": add_all,
                    "resolve_entity": {"match_index": 0}}, llm_t)
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(dedup_similarity=1.01, enable_reranker=False), clock=clock)
    if args.entities < 2:
        raise SystemExit("--entities must be at least 2 (each measured write names two entities)")
    entities = [f"Person {i:03d}" for i in range(args.entities)]

    # -- load
    t_load = time.perf_counter()
    per = 100
    for w in range(args.facts // per):
        subj = entities[w % len(entities)]
        facts = [{"subject": subj, "fact": f"{subj} note {w}-{j} token{w * per + j} item{j}", "confidence": 0.9}
                 for j in range(per)]
        llm.route("extract", {"entities": [{"name": subj, "type": "person"}], "facts": facts})
        km.write("bench", f"load {w}", "Pedro")
        now[0] += timedelta(minutes=1)
    load_s = time.perf_counter() - t_load
    total_facts = len(km.get_all("bench", limit=1_000_000))

    # -- the first write after the load: the process's first store search loads the vector
    # cache and the metadata columns its filters read (once per process and store, not per
    # write); timed and reported on its own, not in the per-write samples
    a, b = message(llm, entities, 99_999)
    t0 = time.perf_counter()
    km.write("bench", f"{a} met {b}", "Pedro")
    first_write_ms = (time.perf_counter() - t0) * 1000.0
    now[0] += timedelta(minutes=1)

    # -- measure
    samples, cpu_samples, store_samples = [], [], []
    by_mode: dict[str, list[float]] = {"inline": [], "pool": []} if args.paired_pool else {"inline": []}
    mode = pool_pairing(km, args.paired_pool)
    time_store(store, store_t)
    for m in range(args.messages):
        lane = mode(m)
        a, b = message(llm, entities, m)
        l0, e0, lc0, ec0, sc0 = llm_t.seconds, emb_t.seconds, llm_t.cpu, emb_t.cpu, store_t.cpu
        t0, c0 = time.perf_counter(), time.process_time()
        r = km.write("bench", f"{a} met {b}", "Pedro")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert r.success and not r.warnings, (r.error, r.warnings)
        overhead = (wall - (llm_t.seconds - l0) - (emb_t.seconds - e0)) * 1000.0
        by_mode[lane].append(overhead)
        now[0] += timedelta(minutes=1)
        if lane != "inline":
            continue
        samples.append(overhead)
        cpu_samples.append((cpu - (llm_t.cpu - lc0) - (emb_t.cpu - ec0)) * 1000.0)
        store_samples.append((store_t.cpu - sc0) * 1000.0)
    if args.profile:
        profile(km, llm, entities, args.profile, now)
    km.close()
    store.close()
    out = {
        "facts_loaded": total_facts, "entities": args.entities,
        "messages": args.messages,
        "overhead_ms_mean": round(statistics.mean(samples), 2),
        "overhead_ms_median": round(statistics.median(samples), 2),
        "overhead_ms_p95": round(sorted(samples)[int(0.95 * (len(samples) - 1))], 2),
        "cpu_overhead_ms_mean": round(statistics.mean(cpu_samples), 2),
        "cpu_overhead_ms_median": round(statistics.median(cpu_samples), 2),
        "of_which_store_api_cpu_ms_mean": round(statistics.mean(store_samples), 2),
        "first_write_after_load_ms": round(first_write_ms, 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        # this machine: interpreter speed and the cost of one worker-pool trip (bench/calibrate.py)
        "python_loop_ms": python_loop_ms(),
        "trip_us": trip_us(),
        "target_ms": 15,
        "load_seconds": round(load_s, 1),
        **({"paired_pool": paired_summary(by_mode, statistics.mean)} if args.paired_pool else {}),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
