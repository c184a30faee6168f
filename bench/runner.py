"""The harness: builds the corpus once per size, runs every system in its own worker
processes (one to insert and query, a fresh one to time the cold open), and writes one
summary JSON per size.

Each system runs in a separate process so that memory deltas and cold-start times are its
own, not inflated or hidden by another library loaded earlier; the corpus, queries and
ground truth are pickled once by the parent, so every system sees the same bytes. All
systems of one size run back to back in the same ``run`` invocation, so their ratios are
measured under the same machine conditions.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import time
import traceback
from typing import Any, Optional

import numpy as np

from .adapters import ADAPTERS
from .adapters.base import NotMeasured, Unsupported
from .corpus import TOPICS, Corpus, Queries, make_corpus, make_queries

MODES = ("search", "search_user", "search_meta", "keyword")
VECTOR_MODES = ("search", "search_user", "search_meta")
WARMUP = 3
#: a mode of a slow system stops after its time budget, with at least this many queries
MIN_QUERIES = 50


# -- machine -------------------------------------------------------------------------------
def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = round(int(f.readline().split()[1]) / 1024**2, 1)
    except OSError:
        pass
    blas: Any = None
    try:
        from threadpoolctl import threadpool_info

        blas = [
            {k: info.get(k) for k in ("internal_api", "version", "num_threads", "architecture", "threading_layer")}
            for info in threadpool_info()
        ]
    except Exception as exc:  # threadpoolctl is in the bench extra; the run still works without it
        blas = f"threadpoolctl unavailable: {exc}"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gib": mem,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas,
        "openblas_env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS")},
        "platform": platform.platform(),
    }


def code_state() -> dict[str, Any]:
    """The commit measured, and whether oramem/ had uncommitted changes at the time."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "oramem"], cwd=root, capture_output=True,
                               text=True).stdout.split("\n")
        return {"commit": head or None, "oramem_uncommitted": [line[3:] for line in dirty if line.strip()]}
    except OSError as exc:
        return {"commit": None, "error": str(exc)}


# -- ground truth -------------------------------------------------------------------------
def ground_truth(corpus: Corpus, queries: Queries, k: int) -> dict[str, list[list[int]]]:
    """Exact top-k (float64 dot products of the unit vectors) for each vector mode."""
    m = corpus.vectors.astype(np.float64)
    scores = queries.vectors.astype(np.float64) @ m.T
    truth: dict[str, list[list[int]]] = {"search": [], "search_user": [], "search_meta": []}
    for i in range(len(queries)):
        s = scores[i]
        truth["search"].append(_top(s, np.arange(corpus.size), k))
        rows = np.flatnonzero(corpus.user_codes == queries.users[i])
        truth["search_user"].append(_top(s[rows], rows, k))
        rows = np.flatnonzero((corpus.topic_codes == queries.topics[i]) & (corpus.priorities >= queries.min_priority[i]))
        truth["search_meta"].append(_top(s[rows], rows, k))
    return truth


def _top(scores: np.ndarray, rows: np.ndarray, k: int) -> list[int]:
    order = np.argsort(-scores, kind="stable")[:k]
    return rows[order].tolist()


# -- worker (runs in a child process) -----------------------------------------------------
def _call(adapter, mode: str, queries: Queries, i: int, k: int):
    q = queries.vectors[i]
    if mode == "search":
        return adapter.search(q, k)
    if mode == "search_user":
        return adapter.search_user(q, k, int(queries.users[i]))
    if mode == "search_meta":
        return adapter.search_meta(q, k, TOPICS[int(queries.topics[i])], int(queries.min_priority[i]))
    return adapter.keyword(queries.keywords[i], k)


def _stats(ns: list[int]) -> dict[str, float]:
    a = np.asarray(ns, dtype=np.float64) / 1e6
    return {
        "p50_ms": round(float(np.percentile(a, 50)), 4),
        "p95_ms": round(float(np.percentile(a, 95)), 4),
        "mean_ms": round(float(a.mean()), 4),
        "n": int(a.size),
    }


def worker(phase: str, system: str, data_path: str, workdir: str, out_path: str, k: int,
           budget_s: float = 20.0) -> None:
    with open(data_path, "rb") as f:
        data = pickle.load(f)
    corpus: Corpus = data["corpus"]
    queries: Queries = data["queries"]
    truth = data["truth"]
    adapter = ADAPTERS[system](workdir, corpus.dim)
    result: dict[str, Any] = {"system": system, "phase": phase, "description": adapter.description}
    raw: dict[str, list[int]] = {}
    try:
        adapter.check()
        result["version"] = getattr(adapter, "version", None)
        try:
            from threadpoolctl import threadpool_info

            result["blas_threads"] = {i.get("internal_api"): i.get("num_threads") for i in threadpool_info()}
        except Exception:
            pass
        result["description"] = adapter.description
        if phase == "build":
            _build(adapter, corpus, queries, truth, k, result, raw, budget_s)
        else:
            _open(adapter, queries, k, result)
        result["status"] = "ok"
    except NotMeasured as exc:
        result["status"] = f"not measured: {exc}"
    except Exception as exc:
        result["status"] = f"not measured: {type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
    with open(out_path, "w") as f:
        json.dump({"summary": result, "raw_ns": raw}, f)


def _build(adapter, corpus, queries, truth, k, result, raw, budget_s) -> None:
    gc.collect()
    rss0 = rss_bytes()
    adapter.create()
    t0 = time.perf_counter()
    adapter.insert(corpus)
    seconds = time.perf_counter() - t0
    gc.collect()
    result["insert"] = {
        "seconds": round(seconds, 3),
        "records_per_s": round(corpus.size / seconds, 1),
        "rss_delta_mib": round((rss_bytes() - rss0) / 2**20, 1),
    }
    result["queries"] = {}
    ref = None
    if adapter.paired_reference:
        from .adapters.numpy_bf import NumpyBruteForce

        ref = NumpyBruteForce(adapter.workdir, corpus.dim)
        ref.load_memory(corpus)
    for mode in MODES:
        paired = ref is not None and mode in VECTOR_MODES
        try:
            for i in range(WARMUP):
                _call(adapter, mode, queries, i, k)
                if paired:
                    _call(ref, mode, queries, i, k)
            times, found, ref_times = [], [], []
            deadline = time.perf_counter() + budget_s
            for i in range(len(queries)):
                if paired and i % 2:
                    t = time.perf_counter_ns()
                    _call(ref, mode, queries, i, k)
                    ref_times.append(time.perf_counter_ns() - t)
                t = time.perf_counter_ns()
                rows = _call(adapter, mode, queries, i, k)
                times.append(time.perf_counter_ns() - t)
                found.append(rows)
                if paired and not i % 2:
                    t = time.perf_counter_ns()
                    _call(ref, mode, queries, i, k)
                    ref_times.append(time.perf_counter_ns() - t)
                # slow systems: stop at the time budget, but never below MIN_QUERIES
                if len(times) >= MIN_QUERIES and time.perf_counter() > deadline:
                    break
        except Unsupported as exc:
            result["queries"][mode] = {"status": f"n/a: {exc}"}
            continue
        except Exception as exc:
            result["queries"][mode] = {"status": f"failed: {type(exc).__name__}: {exc}"}
            continue
        entry: dict[str, Any] = {"status": "ok", **_stats(times)}
        if ref_times:
            # numpy brute force on the same queries, interleaved with this system's
            entry["paired_numpy"] = _stats(ref_times)
        if mode in truth:
            recalls = [
                len(set(got[:k]) & set(exp)) / max(1, min(k, len(exp)))
                for got, exp in zip(found, truth[mode])
            ]
            entry["recall_at_k"] = round(float(np.mean(recalls)), 4)
        else:
            entry["mean_hits"] = round(float(np.mean([len(r) for r in found])), 2)
        result["queries"][mode] = entry
        raw[mode] = times
    if getattr(adapter, "notes", None):
        result["notes"] = adapter.notes
    adapter.close()
    result["disk_mib"] = round(adapter.footprint_bytes() / 2**20, 1)


def _open(adapter, queries, k, result) -> None:
    import tracemalloc

    gc.collect()
    rss0 = rss_bytes()
    t0 = time.perf_counter()
    adapter.open()
    t1 = time.perf_counter()
    adapter.search(queries.vectors[0], k)
    t2 = time.perf_counter()
    gc.collect()
    rss1 = rss_bytes()
    adapter.close()
    adapter.__dict__.pop("store", None)
    gc.collect()
    # a second open, traced: Python and numpy allocations the opened store holds
    # (native allocations of C/Rust libraries are invisible to tracemalloc)
    tracemalloc.start()
    adapter.open()
    adapter.search(queries.vectors[1], k)
    traced = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    adapter.close()
    result["open"] = {
        "open_s": round(t1 - t0, 4),
        "first_query_s": round(t2 - t1, 4),
        "open_plus_first_query_s": round(t2 - t0, 4),
        "rss_delta_mib": round((rss1 - rss0) / 2**20, 1),
        "traced_mib": round(traced / 2**20, 1),
    }


# -- parent ------------------------------------------------------------------------------
def _spawn(phase, system, data_path, workdir, out_path, k, timeout, env=None, budget_s=20.0) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench", "_worker", "--phase", phase, "--system", system, "--data", data_path,
           "--workdir", workdir, "--result", out_path, "--k", str(k), "--budget", str(budget_s)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return {"summary": {"system": system, "status": f"not measured: {phase} exceeded {timeout}s"}, "raw_ns": {}}
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not os.path.exists(out_path):
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
        return {"summary": {"system": system, "status": f"not measured: worker exited {proc.returncode}: {' | '.join(tail)}"},
                "raw_ns": {}}
    with open(out_path) as f:
        out = json.load(f)
    out["summary"]["worker_wall_s"] = round(wall, 1)
    return out


def run(sizes: list[int], dim: int, out_dir: str, systems: list[str], n_queries: int, k: int,
        timeout: int, keep: bool = False, log=print, blas_threads: Optional[int] = None,
        budget_s: float = 20.0) -> list[str]:
    env = None
    if blas_threads is not None:
        # only the worker processes: every system's BLAS/OpenMP pool gets the same size
        env = dict(os.environ)
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(blas_threads)
    raw_dir = os.path.join(out_dir, "raw")
    os.makedirs(raw_dir, exist_ok=True)
    written = []
    for size in sizes:
        started = time.time()
        load_before = loadavg()
        t0 = time.perf_counter()
        corpus = make_corpus(size, dim)
        queries = make_queries(corpus, n_queries)
        truth = ground_truth(corpus, queries, k)
        log(f"[{size}] corpus, {n_queries} queries and ground truth in {time.perf_counter() - t0:.1f}s")
        base = os.path.join(raw_dir, f"{size}x{dim}")
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        data_path = os.path.join(base, "data.pkl")
        with open(data_path, "wb") as f:
            pickle.dump({"corpus": corpus, "queries": queries, "truth": truth}, f, protocol=pickle.HIGHEST_PROTOCOL)
        del corpus, truth
        gc.collect()
        results = []
        raw_all = {}
        for system in systems:
            workdir = os.path.join(base, "stores", system)
            build = _spawn("build", system, data_path, workdir, os.path.join(base, f"{system}.build.json"), k, timeout, env, budget_s)
            summary = build["summary"]
            raw_all[system] = build.get("raw_ns", {})
            if summary.get("status") == "ok":
                opened = _spawn("open", system, data_path, workdir, os.path.join(base, f"{system}.open.json"), k, timeout, env)
                if opened["summary"].get("status") == "ok":
                    summary["open"] = opened["summary"]["open"]
                else:
                    summary["open"] = {"status": opened["summary"].get("status")}
            results.append(summary)
            log(f"[{size}] {system}: {_one_line(summary)}")
            if not keep:
                shutil.rmtree(workdir, ignore_errors=True)
        for system in ADAPTERS:
            if system not in systems:
                results.append({"system": system, "description": ADAPTERS[system].description,
                                "status": "not measured: not selected for this run (--systems)"})
        with open(os.path.join(base, "raw_timings_ns.json"), "w") as f:
            json.dump(raw_all, f)
        if not keep:
            os.remove(data_path)
        doc = {
            "size": size,
            "dim": dim,
            "k": k,
            "queries_per_measurement": n_queries,
            "mode_budget_s": budget_s,
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "wall_s": round(time.time() - started, 1),
            "loadavg_before": load_before,
            "loadavg_after": loadavg(),
            "machine": machine(),
            "blas_threads_forced": blas_threads,
            "code": code_state(),
            "systems": results,
        }
        path = os.path.join(out_dir, f"summary-{size}x{dim}.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        written.append(path)
        log(f"[{size}] done in {doc['wall_s']}s -> {path}")
    return written


def _one_line(s: dict[str, Any]) -> str:
    if s.get("status") != "ok":
        return s.get("status", "?")
    parts = [f"insert {s['insert']['records_per_s']:.0f} rec/s"]
    for mode, q in s.get("queries", {}).items():
        if q.get("status") == "ok":
            r = f" r@k={q['recall_at_k']}" if "recall_at_k" in q else ""
            parts.append(f"{mode} p50 {q['p50_ms']:.3f}ms{r}")
        else:
            parts.append(f"{mode} {q.get('status')}")
    op = s.get("open", {})
    if "open_plus_first_query_s" in op:
        parts.append(f"open+q {op['open_plus_first_query_s']:.3f}s rss {op['rss_delta_mib']}MiB")
    return "; ".join(parts)
