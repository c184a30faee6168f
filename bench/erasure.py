"""What a verifiable erasure costs (issue 27 item 1, SC-14): ``forget`` of one user with and
without the receipt's verification scan, and ``verify_receipts``, on a SQLite store of N
synthetic memories (N/100 users, 100 records each; HYBRID store, HashEmbedder(64)).

    PYTHONPATH=. python -m bench.erasure --size 10000 --size 100000

Prints a markdown table (development figures: one run, one machine)."""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time

from oramem import SQLiteMemoryStore
from oramem.testing import HashEmbedder
from oramem.trust import erasure

WORDS = [f"w{i:05d}" for i in range(20000)]


def build(path: str, size: int) -> None:
    rng = random.Random(7)
    with SQLiteMemoryStore(path, embedder=HashEmbedder(64), search_strategy="hybrid") as store:
        for start in range(0, size, 2000):
            n = min(2000, size - start)
            texts = [" ".join(rng.choice(WORDS) for _ in range(12)) + f" secret{start + i}" for i in range(n)]
            users = [f"user{(start + i) // 100}" for i in range(n)]
            store.add(texts, "memory", user_ids=users)


def run(size: int) -> tuple[int, float, float, float, int, str]:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "e.db")
        build(path, size)
        mb = os.path.getsize(path) / 1e6
        with SQLiteMemoryStore(path, embedder=HashEmbedder(64)) as store:
            plain = store._engine.forget  # the erasure alone, without receipt (prepare + scan)
            from oramem.requests import ForgetRequest

            t = time.perf_counter()
            plain(ForgetRequest(user_id="user1", names=("user1",)))
            t_plain = time.perf_counter() - t
            t = time.perf_counter()
            receipt = store.forget(user_id="user2")
            t_receipt = time.perf_counter() - t
            t = time.perf_counter()
            checks = erasure.verify_receipts(store)
            t_verify = time.perf_counter() - t
        return size, mb, t_plain, t_receipt, t_verify, receipt.verification["status"] + "/" + str(all(c.ok for c in checks))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, action="append")
    args = parser.parse_args()
    print("| records | DB MB | forget, no receipt (s) | forget with receipt (s) | verify_receipts (s) | scan / re-verify |")
    print("|---:|---:|---:|---:|---:|---|")
    for size in args.size or [10000]:
        n, mb, a, b, c, status = run(size)
        print(f"| {n:,} | {mb:.1f} | {a:.3f} | {b:.3f} | {c:.3f} | {status} |")


if __name__ == "__main__":
    main()
