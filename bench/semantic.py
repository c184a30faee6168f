"""The semantic default end to end: oramem + ONNXEmbedder (all-MiniLM-L6-v2) against chromadb
with its default embedding function (the same model on ONNX Runtime), plus raw ONNX Runtime on
the same texts (issue 26 item 3; results in bench/results/semantic.md).

    python -m bench.semantic [--model DIR] [--batch N] [--small N] [--queries N] [--rounds N]

``--model`` is a local sentence-transformers export of all-MiniLM-L6-v2 (``model.onnx``,
``tokenizer.json``; default ``$ORAMEM_BENCH_MODEL`` or /work/models/all-MiniLM-L6-v2). Nothing
touches the network: chromadb's ``ONNXMiniLM_L6_V2`` looks for its files in
``DOWNLOAD_PATH/onnx/`` and downloads only when one of its six files is missing, so the bench
points ``DOWNLOAD_PATH`` at a temporary directory it fills with links to the same model files
(plus the three small tokenizer side files chromadb checks for but does not read). Both systems
therefore run the very same graph. The model is never copied into the repository.

Measured, per round, systems interleaved (oramem, chroma, raw, then the reverse order next
round), each in a fresh on-disk store in a temporary directory:
- ``batch``: one ``add`` of ``--batch`` texts (records/s);
- ``small``: ``--small`` ``add`` calls of one text each (records/s);
- ``query``: p50 of ``--queries`` distinct query texts, text in, 10 ids out (the oramem query
  cache never hits: every query text is new);
- raw ONNX Runtime: tokenize + ``session.run`` on the batch texts, 32 per run, length-sorted,
  intra-op threads = physical cores (the physical limit: no pooling, no store).
Texts are generated agent memories of realistic length (one to three sentences, 12-60 words),
not the dev set. The median over rounds is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_SUBJECTS = ["The user", "She", "He", "My manager", "The customer", "Our team", "The client", "Alex", "Priya", "Tom"]
_FACTS = [
    "prefers aisle seats on long-haul flights and always books through the corporate portal",
    "is allergic to peanuts and shellfish, so restaurant suggestions must avoid them",
    "asked to move the quarterly budget review to the second Thursday of next month",
    "drives a red hatchback that needs its annual inspection before the end of March",
    "wants weekly summaries of open support tickets sent every Monday at nine",
    "is learning Spanish and practises for twenty minutes every evening after dinner",
    "keeps the production database credentials in the team vault, never in chat",
    "mentioned that the garden hose leaks near the tap and needs a new washer",
    "reported that invoice 4471 was charged twice and expects a refund this week",
    "likes jazz playlists while coding and dislikes notifications during focus time",
    "has a dentist appointment on Friday afternoon and will be offline from two",
    "is planning a hiking trip to the Dolomites in late June with two friends",
    "needs the onboarding checklist updated with the new laptop security policy",
    "said the kids' school starts at eight fifteen, so morning meetings should start later",
    "switched the home internet provider and the router password changed yesterday",
    "prefers vegetarian recipes with less than thirty minutes of preparation",
]
_TAILS = [
    "", "This came up in yesterday's conversation.", "Remember this for future planning.",
    "It was repeated twice, so it matters to them.", "Follow up if nothing changes by next week.",
    "They were quite firm about it.", "Confirmed again during the last call, with no exceptions.",
]


def make_texts(n: int, seed: int) -> list[str]:
    """``n`` distinct memory-like texts (12-60 words)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        parts = [f"{rnd.choice(_SUBJECTS)} {rnd.choice(_FACTS)}."]
        for _ in range(rnd.randint(0, 2)):
            parts.append(f"Also, {rnd.choice(_SUBJECTS).lower()} {rnd.choice(_FACTS)}.")
        parts.append(rnd.choice(_TAILS))
        parts.append(f"(note {seed}-{i})")
        out.append(" ".join(p for p in parts if p))
    return out


def make_queries(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return [f"what does {rnd.choice(_SUBJECTS).lower()} {' '.join(rnd.choice(_FACTS).split()[:rnd.randint(3, 8)])} ({i})" for i in range(n)]


# -- chromadb without network ------------------------------------------------------------------
_CHROMA_FILES = ("config.json", "model.onnx", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json", "vocab.txt")


def chroma_model_dir(model: Path, root: Path) -> Path:
    """A directory laid out as chromadb's ONNXMiniLM_L6_V2 expects (``<root>/onnx/<6 files>``),
    its files links to ``model``'s; the side files it checks for but never reads are written."""
    onnx = root / "onnx"
    onnx.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "model.onnx", "tokenizer.json"):
        (onnx / name).symlink_to((model / name).resolve())
    tok = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
    (onnx / "vocab.txt").write_text("".join(w + "\n" for w, _ in vocab), encoding="utf-8")
    (onnx / "special_tokens_map.json").write_text(json.dumps(
        {"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]", "unk_token": "[UNK]"}))
    (onnx / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "model_max_length": 512}))
    return root


class Chroma:
    """chromadb's default embedding function (``DefaultEmbeddingFunction`` builds a new
    ``ONNXMiniLM_L6_V2``, hence a new ONNX Runtime session, on every call: what a user gets
    without choosing) or, with ``reuse``, one ``ONNXMiniLM_L6_V2`` instance passed explicitly
    (its session is built once: the stronger peer)."""

    def __init__(self, model: Path, work: Path, reuse: bool = False) -> None:
        import chromadb
        from chromadb.config import Settings
        from chromadb.utils.embedding_functions import DefaultEmbeddingFunction
        from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

        root = work / "chroma-model"
        if not (root / "onnx").exists():
            chroma_model_dir(model, root)
        ONNXMiniLM_L6_V2.DOWNLOAD_PATH = root  # class attribute read by every instance
        ONNXMiniLM_L6_V2.MODEL_DOWNLOAD_URL = "http://127.0.0.1:9/never-downloaded"  # fail loudly, never fetch
        self.client = chromadb.PersistentClient(path=str(work / "chroma-db"), settings=Settings(anonymized_telemetry=False))
        self.ef: Any = ONNXMiniLM_L6_V2() if reuse else DefaultEmbeddingFunction()
        self.name = "chromadb-reused" if reuse else "chromadb"
        self.version = chromadb.__version__
        self.n = 0

    def fresh(self, label: str) -> Any:
        return self.client.create_collection(f"bench{label}-{self.name}", embedding_function=self.ef, metadata={"hnsw:space": "cosine"})

    def add(self, coll: Any, texts: list[str]) -> None:
        ids = [f"r{self.n + i}" for i in range(len(texts))]
        self.n += len(texts)
        coll.add(ids=ids, documents=texts)

    def query(self, coll: Any, text: str) -> list[str]:
        return coll.query(query_texts=[text], n_results=10)["ids"][0]


class Oramem:
    name = "oramem"

    def __init__(self, model: Path, work: Path) -> None:
        from oramem import SQLiteMemoryStore
        from oramem.embedders import ONNXEmbedder

        self.embedder = ONNXEmbedder(model)
        self.store_cls = SQLiteMemoryStore
        self.work = work

    def fresh(self, label: str) -> Any:
        return self.store_cls(str(self.work / f"oramem-{label}.db"), embedder=self.embedder)

    def add(self, store: Any, texts: list[str]) -> None:
        store.add(texts, "memory", user_ids="u1")

    def query(self, store: Any, text: str) -> list[str]:
        return [r.id for r, _ in store.search(text, 10, user_id="u1")]


def raw_ort(model: Path, texts: list[str], threads: int) -> float:
    """records/s of tokenize + session.run alone, 32 length-sorted texts per run."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(model / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.enable_truncation(256)
    tok.no_padding()
    session.run(None, _feed(np, tok.encode_batch(texts[:4])))  # warm
    t0 = time.perf_counter()
    enc = tok.encode_batch(texts)
    enc.sort(key=lambda e: len(e.ids))
    for s in range(0, len(enc), 32):
        session.run(None, _feed(np, enc[s : s + 32]))
    return len(texts) / (time.perf_counter() - t0)


def _feed(np: Any, enc: list[Any]) -> dict[str, Any]:
    width = max(len(e.ids) for e in enc)
    ids = np.zeros((len(enc), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, e in enumerate(enc):
        ids[i, : len(e.ids)] = e.ids
        mask[i, : len(e.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def run_system(sys_: Any, label: str, batch: list[str], small: list[str], queries: list[str]) -> dict[str, float]:
    coll = sys_.fresh(label)
    sys_.add(coll, ["warm up the session"])  # session load is not timed
    t0 = time.perf_counter()
    sys_.add(coll, batch)
    batch_rps = len(batch) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for text in small:
        sys_.add(coll, [text])
    small_rps = len(small) / (time.perf_counter() - t0)
    lat = []
    for q in queries:
        t = time.perf_counter()
        ids = sys_.query(coll, q)
        lat.append(time.perf_counter() - t)
        assert len(ids) == 10, ids
    return {"batch_rps": batch_rps, "small_rps": small_rps, "query_p50_ms": statistics.median(lat) * 1000}


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.environ.get("ORAMEM_BENCH_MODEL", "/work/models/all-MiniLM-L6-v2"))
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the raw per-round numbers here")
    args = ap.parse_args(argv)
    model = Path(args.model)
    if not (model / "model.onnx").is_file() or not (model / "tokenizer.json").is_file():
        ap.error(f"--model {model} needs model.onnx and tokenizer.json (a local all-MiniLM-L6-v2 export)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from oramem.embedders.onnx import physical_cores

    rows: dict[str, list[dict[str, float]]] = {"oramem": [], "chromadb": [], "chromadb-reused": [], "raw": []}
    loads = [_load()]
    with tempfile.TemporaryDirectory(prefix="oramem-semantic-") as tmp:
        work = Path(tmp)
        chroma = Chroma(model, work)
        systems: list[Any] = [Oramem(model, work), chroma, Chroma(model, work, reuse=True)]
        for r in range(args.rounds):
            batch = make_texts(args.batch, seed=1000 + r)
            small = make_texts(args.small, seed=2000 + r)
            queries = make_queries(args.queries, seed=3000 + r)
            order = systems if r % 2 == 0 else systems[::-1]
            for s in order:
                rows[s.name].append(run_system(s, f"{r}", batch, small, queries))
                print(f"round {r} {s.name}: {rows[s.name][-1]}", file=sys.stderr, flush=True)
            rows["raw"].append({"batch_rps": raw_ort(model, batch, physical_cores())})
            print(f"round {r} raw: {rows['raw'][-1]}", file=sys.stderr, flush=True)
            loads.append(_load())
        chroma_version = chroma.version

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in rows[name])

    o = "oramem"
    raw = med("raw", "batch_rps")
    import onnxruntime

    print(f"# semantic default, {args.rounds} rounds interleaved, medians; batch={args.batch} small={args.small} queries={args.queries}")
    print(f"# python {platform.python_version()}, onnxruntime {onnxruntime.__version__}, chromadb {chroma_version}, "
          f"{os.cpu_count()} logical CPUs, intra-op threads {physical_cores()}; loadavg per round: {' | '.join(loads)}")
    for c in ("chromadb", "chromadb-reused"):
        print(f"\n**oramem vs {c}**\n")
        print(f"| measure | oramem | {c} | oramem / {c} | target | raw ONNX Runtime | oramem / raw | {c} / raw |")
        print("|---|---|---|---|---|---|---|---|")
        for key, label, target, higher in (("batch_rps", "add, one batch (records/s)", "≥ 1×", True),
                                            ("small_rps", "add, 1-record calls (records/s)", "≥ 1×", True),
                                            ("query_p50_ms", "query p50 (ms, text in, 10 ids out)", "≤ 1×", False)):
            ov, cv = med(o, key), med(c, key)
            ratio = ov / cv
            met = (ratio >= 1) if higher else (ratio <= 1)
            rawcols = f"{raw:.0f} | {ov / raw:.2f} | {cv / raw:.2f}" if key == "batch_rps" else "— | — | —"
            print(f"| {label} | {ov:.1f} | {cv:.1f} | {ratio:.2f}× ({'met' if met else 'MISSED'}) | {target} | {rawcols} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "loads": loads}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
