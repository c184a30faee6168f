"""Retrieve overhead of the knowledge layer per query, excluding LLM and embedding time, on
an agent that holds 10k facts (target: p50 ≤ 30 ms).

    python bench/knowledge_retrieve.py [--facts 10000] [--queries 100] [--db PATH] [--vector-only]
        [--entities N] [--save-db PATH | --from-db PATH] [--dump FILE] [--profile N]

``--save-db PATH`` keeps a copy of the loaded store (and its clock, in ``PATH.json``);
``--from-db PATH`` times on a fresh copy of it instead of loading, so runs before and after a
change read the same rows (fact ids are random per load). ``--dump FILE`` writes, per query,
the returned facts in order with every score (JSON lines), for diffing two versions' results.

Loads ``--facts`` facts (100 per write over ``--entities`` entities, 100 by default, plus one
relation per write so the graph has edges; fewer entities hold more facts each, as a user's own
entity does in agent memory) into a fresh hybrid SQLite store, then times ``--queries`` retrieves
that name an entity (so every signal runs: semantic and keyword store searches with the
visibility metadata filter, graph BFS as one recursive CTE, events, spreading activation,
context compression and the usage-tracking transaction). The reranker is off (it is an LLM
call). Embedding time (a HashEmbedder, wrapped) is subtracted. Prints one JSON line with
wall-clock and CPU overhead percentiles and the share spent inside the store's ``search``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from knowledge_write import Timed, TimedEmbedder, TimedLLM, add_all, paired_summary, pool_pairing  # noqa: E402

from bench.calibrate import python_loop_ms, trip_us  # noqa: E402
from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory  # noqa: E402
from oramem.types import SearchStrategy  # noqa: E402


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def profile(km, entities, n: int) -> None:
    import yappi  # not a project dependency (see --profile)

    yappi.set_clock_type("cpu")
    yappi.start(builtins=False, profile_threads=True)
    for q in range(n):
        km.retrieve("bench", f"what does {entities[(q * 17) % len(entities)]} do with item{q % 100}?")
    yappi.stop()
    stats = yappi.get_func_stats()
    stats.sort("ttot", "desc")
    print(f"# yappi, CPU ms per retrieve (inclusive / own), {n} retrieves", file=sys.stderr)
    for st in list(stats)[:60]:
        print(f"{st.ttot * 1000 / n:8.2f} {st.tsub * 1000 / n:8.2f} {st.ncall / n:8.1f}  {st.module.split('site-packages/')[-1]}:{st.lineno} {st.name}",
              file=sys.stderr)
    stats.sort("tsub", "desc")
    print("# by own time", file=sys.stderr)
    for st in list(stats)[:40]:
        print(f"{st.ttot * 1000 / n:8.2f} {st.tsub * 1000 / n:8.2f} {st.ncall / n:8.1f}  {st.module.split('site-packages/')[-1]}:{st.lineno} {st.name}",
              file=sys.stderr)
    yappi.clear_stats()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--entities", type=int, default=None,
                    help="entities the loaded facts are spread over (at least 2; default 100, or what --from-db's store was loaded with)")
    ap.add_argument("--db", default=None)
    ap.add_argument("--vector-only", action="store_true", help="a vector store (keyword signal off)")
    ap.add_argument("--approximate", action="store_true",
                    help="open the store with approximate_search=AnnConfig() (HNSW; not exact: the answers may differ)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after the timed queries, profile N more retrieves with yappi (every thread, CPU clock; "
                         "yappi is not a project dependency: pip install yappi) and print the top functions to stderr")
    ap.add_argument("--save-db", default=None, metavar="PATH", help="after loading, keep a copy of the store here")
    ap.add_argument("--from-db", default=None, metavar="PATH", help="time on a copy of a --save-db store (no load)")
    ap.add_argument("--dump", default=None, metavar="FILE", help="write each query's returned facts and scores (JSON lines)")
    ap.add_argument("--paired-pool", action="store_true",
                    help="alternate the timed queries between the worker-pool path and the inline one (round h); the "
                         "usual figures are the inline queries', paired_pool has each path's p50")
    args = ap.parse_args()
    # the store (unless --db names one) and its sidecars live here, removed on the way out
    with tempfile.TemporaryDirectory(prefix="oramem-kg-rbench-") as tmp:
        run(args, tmp)


def run(args: argparse.Namespace, tmp: str) -> None:
    path = args.db or os.path.join(tmp, "bench.db")
    now = [datetime(2025, 1, 1, tzinfo=timezone.utc)]
    if args.from_db:
        # the database, its WAL and the vector cache's sidecar (bench.db.<store>.oramem-vectors)
        src_dir, src_name = os.path.split(os.path.abspath(args.from_db))
        for name in os.listdir(src_dir):
            if name.startswith(src_name) and name != src_name + ".json":
                shutil.copyfile(os.path.join(src_dir, name), path + name[len(src_name):])
        with open(args.from_db + ".json") as fh:
            saved = json.load(fh)
        now[0] = datetime.fromisoformat(saved["now"])
        loaded_with = saved.get("entities", 100)  # stores saved before --entities: 100
        if args.entities not in (None, loaded_with):
            raise SystemExit(f"{args.from_db} was loaded over {loaded_with} entities: pass --entities {loaded_with} or leave it out")
        args.entities = loaded_with
    elif args.entities is None:
        args.entities = 100
    clock = lambda: now[0]  # noqa: E731
    llm_t, emb_t, search_t = Timed(), Timed(), Timed()
    emb = TimedEmbedder(384, emb_t)
    strategy = SearchStrategy.VECTOR if args.vector_only else SearchStrategy.HYBRID
    approximate: dict[str, Any] = {}
    if args.approximate:
        from oramem.ann import AnnConfig

        approximate["approximate_search"] = AnnConfig()
    store = SQLiteMemoryStore(path, embedder=emb, clock=clock, search_strategy=strategy, **approximate)
    llm = TimedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.1, "energy": "low"}, "reconcile": add_all,
                    "resolve_entity": {"match_index": 0}}, llm_t)
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(dedup_similarity=1.01, enable_reranker=False,
                                                            enable_informed_extraction=False), clock=clock)
    if args.entities < 2:
        raise SystemExit("--entities must be at least 2 (each write also relates two entities)")
    entities = [f"Person {i:03d}" for i in range(args.entities)]
    t_load = time.perf_counter()
    per = 100
    for w in range(0 if args.from_db else args.facts // per):
        subj = entities[w % len(entities)]
        other = entities[(w * 7 + 3) % len(entities)]
        facts = [{"subject": subj, "fact": f"{subj} note {w}-{j} token{w * per + j} item{j}", "confidence": 0.9}
                 for j in range(per)]
        llm.route("extract", {"entities": [{"name": subj, "type": "person"}, {"name": other, "type": "person"}], "facts": facts,
                              "relations": [{"source": subj, "target": other, "rel_type": "friend"}]})
        km.write("bench", f"load {w}", "Pedro")
        now[0] += timedelta(minutes=1)
    load_s = time.perf_counter() - t_load
    total_facts = len(km.get_all("bench", limit=1_000_000))
    if args.save_db:
        km.close()
        store.close()
        for name in os.listdir(os.path.dirname(path)):
            if name.startswith(os.path.basename(path)):
                shutil.copyfile(os.path.join(os.path.dirname(path), name), args.save_db + name[len(os.path.basename(path)):])
        with open(args.save_db + ".json", "w") as fh:
            json.dump({"now": now[0].isoformat(), "facts": total_facts, "entities": args.entities}, fh)
        store = SQLiteMemoryStore(path, embedder=emb, clock=clock, search_strategy=strategy, **approximate)
        km = KnowledgeMemory(store, llm, config=KnowledgeConfig(dedup_similarity=1.01, enable_reranker=False,
                                                                enable_informed_extraction=False), clock=clock)

    fn = store.search

    legs: dict[str, float] = {}
    spans: list[tuple[float, float]] = []

    def timed_search(*a, **k):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **k)
        finally:
            t1 = time.perf_counter()
            search_t.seconds += t1 - t0
            search_t.cpu += time.process_time() - c0
            leg = f"{k.get('strategy')}:{','.join(k.get('record_types') or [])}"
            legs[leg] = legs.get(leg, 0.0) + t1 - t0
            spans.append((t0, t1))

    def covered() -> float:
        """Wall time inside at least one store search (the semantic and keyword legs run
        concurrently and wait for the store's lock, so their durations overlap)."""
        total, end = 0.0, float("-inf")
        for a, b in sorted(spans):
            if b > end:
                total += b - max(a, end)
                end = b
        return total

    store.search = timed_search
    walls, cpus, searches, nfacts = [], [], [], []
    dumped = []
    steps: dict[str, list[float]] = {}
    by_leg: dict[str, list[float]] = {}
    km.retrieve("bench", "warm up Person 001")
    by_mode: dict[str, list[float]] = {"inline": [], "pool": []} if args.paired_pool else {"inline": []}
    mode = pool_pairing(km, args.paired_pool)
    for q in range(args.queries):
        lane = mode(q)
        a = entities[(q * 13) % len(entities)]
        query = f"what does {a} do with item{q % 100}?"
        e0, ec0 = emb_t.seconds, emb_t.cpu
        legs.clear()
        spans.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        r = km.retrieve("bench", query)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert r.facts and not [w for w in r.warnings if not w.startswith("keyword signal")], r.warnings
        by_mode[lane].append((wall - (emb_t.seconds - e0)) * 1000.0)
        if lane == "inline":  # the usual figures: every query, or the inline half of --paired-pool
            walls.append((wall - (emb_t.seconds - e0)) * 1000.0)
            cpus.append((cpu - (emb_t.cpu - ec0)) * 1000.0)
            searches.append(covered() * 1000.0)
            nfacts.append(len(r.facts))
            for leg, sec in legs.items():
                by_leg.setdefault(leg, []).append(sec * 1000.0)
            for stp in r.stats.steps:
                steps.setdefault(stp.name, []).append(stp.duration_ms)
        if args.dump:
            dumped.append({"query": query, "facts": [[f.fact_id, f.score, f.scores] for f in r.facts],
                           "context": r.context, "total_candidates": r.total_candidates,
                           "graph": [[g["fact_id"], g["hop"], g["score"]] for g in r.graph.facts],
                           "spreading": [r.spreading.hop1_count, r.spreading.hop2_count],
                           "events": [[e["event_id"], e["score"]] for e in r.events]})
        now[0] += timedelta(seconds=10)
    if args.profile:
        profile(km, entities, args.profile)
    km.close()
    store.close()
    if args.dump:
        import hashlib

        from oramem.sqlite._sqlite import sqlite3

        # the usage tracking's writes (KC-5.12): every fact's and edge's counters after the run
        db = sqlite3.connect(path)
        usage = hashlib.sha256(repr((
            db.execute("SELECT id, times_retrieved, last_retrieved_at FROM DEFAULT_KG_FACT ORDER BY id").fetchall(),
            db.execute("SELECT id, last_used_at FROM DEFAULT_KG_RELATIONSHIP ORDER BY id").fetchall(),
        )).encode()).hexdigest()
        db.close()
        with open(args.dump, "w") as fh:
            for d in dumped:
                fh.write(json.dumps(d, sort_keys=True) + "\n")
            fh.write(json.dumps({"usage_sha256": usage}) + "\n")
    print(json.dumps({
        "facts_loaded": total_facts, "entities": args.entities,
        "queries": args.queries,
        "strategy": strategy.value, "approximate": args.approximate,
        "overhead_ms_p50": round(statistics.median(walls), 2),
        "overhead_ms_p95": round(pct(walls, 0.95), 2),
        "cpu_overhead_ms_p50": round(statistics.median(cpus), 2),
        "store_search_ms_p50": round(statistics.median(searches), 2),
        "layer_ms_p50_excluding_store_search": round(statistics.median([w - s for w, s in zip(walls, searches)]), 2),
        "facts_returned_mean": round(statistics.mean(nfacts), 1),
        "store_search_ms_p50_by_leg": {k: round(statistics.median(v), 2) for k, v in by_leg.items()},
        "steps_ms_p50": {k: round(statistics.median(v), 2) for k, v in steps.items()},
        "load_average_1m": round(os.getloadavg()[0], 2),
        # this machine: interpreter speed and the cost of one worker-pool trip (bench/calibrate.py)
        "python_loop_ms": python_loop_ms(),
        "trip_us": trip_us(),
        "target_ms_p50": 30,
        "load_seconds": round(load_s, 1),
        **({"paired_pool": paired_summary(by_mode, statistics.median)} if args.paired_pool else {}),
    }))


if __name__ == "__main__":
    main()
