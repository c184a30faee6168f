"""Child process of the crash-safety test: runs large writes forever, announcing each
one on stdout (``BEGIN <op> <batch>`` / ``END <op> <batch> <seconds>``) so the parent can
SIGKILL it in the middle of one. Usage: ``python _crash_child.py DB FIRST_BATCH SEED``."""

from __future__ import annotations

import random
import sys
import time

import numpy as np

from oramem import PendingRecordBatch, SearchStrategy, SQLiteMemoryStore

DIM = 16
RECORDS = 400  # records per batch
CHUNKS = 3  # caller-owned retrieval rows per record


def batch_rows(batch: int):
    ids = [f"B{batch}-{i}" for i in range(RECORDS)]
    texts = [f"batch {batch} record {i} " + "lorem ipsum " * 40 for i in range(RECORDS)]
    index = [[f"b{batch} r{i} part {j} words" for j in range(CHUNKS)] for i in range(RECORDS)]
    rng = np.random.default_rng(batch)
    vectors = [[list(map(float, rng.standard_normal(DIM))) for _ in range(CHUNKS)] for _ in range(RECORDS)]
    return ids, texts, index, vectors


def main() -> None:
    path, batch, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    store = SQLiteMemoryStore(path, vector_dim=DIM, search_strategy=SearchStrategy.HYBRID)
    print("READY", flush=True)
    while True:
        threads = [t.id for t in store.list("thread", limit=None) if t.id.startswith("th")]
        roll = rng.random()
        op = "delete_thread" if threads and roll < 0.3 else ("add_batches" if roll < 0.65 else "add")
        if op == "delete_thread":
            victim = rng.choice(threads)
            print(f"BEGIN {op} {victim[2:]}", flush=True)
            start = time.perf_counter()
            store.delete_thread(victim)
            print(f"END {op} {victim[2:]} {time.perf_counter() - start:.4f}", flush=True)
            continue
        ids, texts, index, vectors = batch_rows(batch)
        print(f"BEGIN {op} {batch}", flush=True)
        start = time.perf_counter()
        if op == "add":
            store.add(texts, "memory", record_ids=ids, index_texts=index, embeddings=vectors,
                      thread_ids=f"th{batch}", user_ids="u", metadata={"batch": batch}, batch_size=8)
        else:
            half = RECORDS // 2
            batches = [
                PendingRecordBatch(texts=texts[:half], record_type="fact", record_ids=ids[:half],
                                   index_texts=index[:half], embeddings=vectors[:half], thread_ids=f"th{batch}",
                                   metadata={"batch": batch}),
                PendingRecordBatch(texts=texts[half:], record_type="message", record_ids=ids[half:],
                                   index_texts=index[half:], embeddings=vectors[half:], thread_ids=f"th{batch}",
                                   roles="user", metadata={"batch": batch}),
            ]
            store.add_batches(batches, batch_size=8)
        print(f"END {op} {batch} {time.perf_counter() - start:.4f}", flush=True)
        batch += 1


if __name__ == "__main__":
    main()
