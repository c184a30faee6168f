"""One-record delete and text update on the embedded engine, by store size (issue 26 item 1).

    PYTHONPATH=$PWD python -m bench.delete_cost --sizes 2000 20000 100000 [--out bench/results/delete_cost.md]

For each size: a fresh hybrid store (HashEmbedder, 64 dims: the vector part is not what a
delete costs) filled with ``size`` records of ~20 words, then ``--samples`` single-record
deletes, text updates and metadata-only updates, each its own transaction (the way
LangGraph ``put``/``delete`` and session ``pop_item`` call it), median and p95 in ms.
``legacy`` repeats delete and text update on the same store with its keyword index switched
back to the pre-secure-delete setting, where every deleting transaction rebuilds the
index (what an older file opened without upgrading costs, and what every store cost
before). The database lives in a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from oramem import SQLiteMemoryStore
from oramem.embedders import HashEmbedder
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


def run(size: int, samples: int, legacy_samples: int) -> dict[str, tuple[float, float]]:
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "d.db")
        s = SQLiteMemoryStore(path, embedder=HashEmbedder(64), search_strategy="hybrid")
        ids: list[str] = []
        for start in range(0, size, 5000):
            ids += s.add(_texts(rng, min(5000, size - start)), "memory", user_ids="u")
        rng.shuffle(ids)
        pick = iter(ids)
        res = {
            "delete": _timed(lambda rid: s.delete("memory", rid), [next(pick) for _ in range(samples)]),
            "text update": _timed(lambda rid: s.update("memory", rid, text=_texts(rng, 1)[0]),
                                  [next(pick) for _ in range(samples)]),
            "metadata update": _timed(lambda rid: s.update("memory", rid, metadata={"k": 1}),
                                      [next(pick) for _ in range(samples)]),
        }
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
    a = ap.parse_args()
    results = {n: run(n, a.samples, a.legacy_samples) for n in a.sizes}
    ops = list(next(iter(results.values())))
    lines = [
        f"One-record operations, median / p95 ms, {a.samples} samples each ({a.legacy_samples} for legacy); "
        f"SQLite {sqlite3.sqlite_version} (sqlean.py), hybrid store, HashEmbedder 64 dims.",
        "",
        "| records | " + " | ".join(ops) + " |",
        "|---|" + "---|" * len(ops),
    ]
    for n, r in results.items():
        lines.append(f"| {n:,} | " + " | ".join(f"{r[o][0]:.2f} / {r[o][1]:.2f}" for o in ops) + " |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
