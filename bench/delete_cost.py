"""One-record delete and text update on the embedded engine, by store size (issue 26 item 1).

    PYTHONPATH=$PWD python -m bench.delete_cost --sizes 10000 100000 1000000 [--out bench/results/delete_cost.md]

For each size: a fresh hybrid store (HashEmbedder, 64 dims: the vector part is not what a
delete costs) filled with ``size`` records of ~20 words, then ``--samples`` single-record
deletes, text updates and metadata-only updates, each its own transaction (the way
LangGraph ``put``/``delete`` and session ``pop_item`` call it), median and p95 in ms.
``legacy`` repeats delete and text update on the same store with its keyword index switched
back to the pre-secure-delete setting, where every deleting transaction rebuilds the
index (what an older file opened without upgrading costs, and what every store cost
before). ``delete_thread`` deletes a thread of 400 records with 3 caller-owned retrieval
rows each (1,200 keyword rows of 10 tokens, the crash test's shape), added to the store just
before: as the engine chooses (``delete_thread``: one merge of the index when the deleted
tokens D and the index's T satisfy D² ≥ MERGE_FACTOR·T, else FTS5 secure-delete), and forced
each way (``merged``, ``secure``).
The database lives in a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
from oramem.sqlite import mutations
from oramem.sqlite._sqlite import sqlite3

WORDS = [f"w{i:04d}" for i in range(5000)]


def _texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=20)) for _ in range(n)]


def _timed(fn, args: list) -> tuple[float, float]:
    out = []
    for a in args:
        t = time.perf_counter()
        fn(a)
        out.append((time.perf_counter() - t) * 1000)
    out.sort()
    return statistics.median(out), out[max(0, int(len(out) * 0.95) - 1)]


def run(size: int, samples: int, legacy_samples: int, thread_samples: int) -> dict[str, tuple[float, float]]:
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "d.db")
        s = SQLiteMemoryStore(path, embedder=HashEmbedder(64), search_strategy="hybrid")
        ids: list[str] = []
        for start in range(0, size, 5000):
            ids += s.add(_texts(rng, min(5000, size - start)), "memory", user_ids="u")
        rng.shuffle(ids)
        os.sync()  # the bulk load's dirty pages are written back now, not during the timed writes
        pick = iter(ids)
        res = {
            "delete": _timed(lambda rid: s.delete("memory", rid), [next(pick) for _ in range(samples)]),
            "text update": _timed(lambda rid: s.update("memory", rid, text=_texts(rng, 1)[0]),
                                  [next(pick) for _ in range(samples)]),
            "metadata update": _timed(lambda rid: s.update("memory", rid, metadata={"k": 1}),
                                      [next(pick) for _ in range(samples)]),
        }
        # forced secure-delete first: a merge leaves the index as one segment, which makes the
        # deletes after it cheaper, so the order is secure, as chosen, merged
        modes = (("delete_thread secure", 10**18), ("delete_thread", mutations.MERGE_FACTOR),
                 ("delete_thread merged", 0))
        for label, factor in modes:
            times = []
            for t in range(thread_samples):
                tid = f"{label}{t}"
                s.add(_texts(rng, 400), "memory", user_ids="u", thread_ids=tid,
                      index_texts=[[" ".join(rng.choices(WORDS, k=7)) for _ in range(3)] for _ in range(400)])
                saved, mutations.MERGE_FACTOR = mutations.MERGE_FACTOR, factor
                try:
                    start = time.perf_counter()
                    s.delete_thread(tid)
                    times.append((time.perf_counter() - start) * 1000)
                finally:
                    mutations.MERGE_FACTOR = saved
            times.sort()
            res[label] = (statistics.median(times), times[-1])
        if legacy_samples:
            conn = s.engine._db.conn
            with conn:  # what an older oramem's index looks like: no secure-delete setting
                conn.execute("DELETE FROM om_DEFAULT_fts_config WHERE k = 'secure-delete'")
                conn.execute("INSERT INTO om_DEFAULT_fts(om_DEFAULT_fts) VALUES ('rebuild')")
            res["legacy delete"] = _timed(lambda rid: s.delete("memory", rid), [next(pick) for _ in range(legacy_samples)])
            res["legacy text update"] = _timed(lambda rid: s.update("memory", rid, text=_texts(rng, 1)[0]),
                                               [next(pick) for _ in range(legacy_samples)])
        s.close()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 100000])
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--legacy-samples", type=int, default=5, help="0 skips the legacy rows")
    ap.add_argument("--out", help="write a markdown table here")
    ap.add_argument("--thread-samples", type=int, default=3, help="delete_thread samples per mode")
    ap.add_argument("--legacy-max-size", type=int, default=100000, help="no legacy rows above this size")
    a = ap.parse_args()
    loads = [os.getloadavg()[0]]
    results = {}
    for n in a.sizes:
        results[n] = run(n, a.samples, a.legacy_samples if n <= a.legacy_max_size else 0, a.thread_samples)
        loads.append(os.getloadavg()[0])
    ops = list(dict.fromkeys(o for r in results.values() for o in r))
    lines = [
        f"One-record operations, median / p95 ms, {a.samples} samples each; delete_thread (1,200 keyword rows) "
        f"median / max ms of {a.thread_samples}; legacy {a.legacy_samples} samples (up to {a.legacy_max_size:,} records). "
        f"SQLite {sqlite3.sqlite_version} (sqlean.py), hybrid store, HashEmbedder 64 dims; one run, "
        f"load average (1 min) {' -> '.join(f'{x:.1f}' for x in loads)} on {os.cpu_count()} cores.",
        "",
        "| records | " + " | ".join(ops) + " |",
        "|---|" + "---|" * len(ops),
    ]
    for n, r in results.items():
        lines.append(f"| {n:,} | " + " | ".join(f"{r[o][0]:.2f} / {r[o][1]:.2f}" if o in r else "—" for o in ops) + " |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
