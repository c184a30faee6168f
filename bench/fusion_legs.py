"""Dev tool (not run in CI): collect each question's VECTOR and KEYWORD legs (ids with
distances, ``--depth`` deep) through the store, so fusion rules can be compared offline
over several sets at once (``bench/fusion_tune.py``), and ``coverage``: how many of the
question's words the keyword leg's first record holds, as the store counts them for
gated-rrf's coverage gate (``(held, terms)``, None when the keyword leg is empty). Uses the embedding cache of
``bench.quality``; writes a pickle outside the repository.

    python -m bench.fusion_legs --sets paraphrase,memories,dev --out /tmp/legs.pkl [--cached-only]
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace

from oramem.sqlite.engine import SQLiteEngine

from . import quality as Q


#: the set written for issue 23 item 2 before any tuning of the fusion rule: short personal
#: memories whose questions hinge on a rare name, code, number or product name, mixed with
#: questions worded differently from their memory, plus distractors sharing everyday words
KEYED = Q.HERE / "keyed.jsonl"


def load_keyed(path: Path = KEYED) -> list:
    """``bench/keyed.jsonl`` (same layout as ``bench/memories.jsonl``): one shared haystack."""
    out = Q.load_memories(path)
    for q in out:
        q.qid = "k" + q.qid
    return out


def load_set(name: str) -> list:
    if name == "paraphrase":
        return Q.load_paraphrase()
    if name == "memories":
        return Q.load_memories()
    if name == "keyed":
        return load_keyed()
    if name == "longtext":
        return Q.load_longtext()
    if name == "chat":
        return Q.load_chat()
    if name == "chat2":
        return Q.load_chat(Q.CHAT2)
    if name == "chat3":
        return Q.load_chat(Q.CHAT3)
    if name == "dev":
        return Q.load_dev(Q.DEFAULT_DEV, None, 6)
    if name == "dev-full":
        return Q.load_dev(Q.DEFAULT_DEV, None, 0)
    raise SystemExit(f"--sets: unknown set {name!r} (paraphrase, memories, keyed, longtext, chat, chat2, chat3, dev, dev-full)")


def collect(questions, embedder, depth: int = 200, shared: bool = False) -> list[dict]:
    """Each question's legs; ``shared``: every question searches one haystack (the set's)."""
    system = Q.OramemSystem(embedder)
    out = []
    for q in questions:
        key = "shared" if shared else q.qid
        system.load(key, q.docs)
        legs = {}
        first = None
        for strategy in ("vector", "keyword"):
            results = system._store.search(q.question, k=depth, strategy=strategy)
            legs[strategy] = [(system._ids[r.id], float(d)) for r, d in results]
            if strategy == "keyword" and results:
                first = results[0][0]
        out.append({"qid": q.qid, "qtype": q.qtype, "question": q.question, "evidence": q.evidence,
                    "n_docs": len(q.docs), "coverage": None if first is None else _coverage(system, q.question, first),
                    **legs})
    system.close()
    return out


def _coverage(system, question: str, record) -> tuple[int, int]:
    """The store's own count for gated-rrf's coverage gate (``SQLiteEngine._terms_held``)."""
    engine = system._store._engine
    with engine._read("search") as (conn, t, catalog):
        (seq,) = conn.execute(f"SELECT seq FROM {t.records} WHERE record_type = ? AND id = ?",
                              (record.record_type, record.id)).fetchone()
        return SQLiteEngine._terms_held(conn, t, seq, SimpleNamespace(query_text=question), catalog)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="paraphrase,memories,dev")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--cached-only", action="store_true")
    parser.add_argument("--model", default=Q.DEFAULT_MODEL)
    args = parser.parse_args()
    embedder = Q.CachedEmbedder(args.model)
    data = {}
    for name in args.sets.split(","):
        qs = load_set(name)
        if args.cached_only:
            qs = [q for q in qs if all(embedder._key(t) in embedder._mem for t in Q.haystack_texts(q, embedder))]
        print(f"{name}: {len(qs)} questions", file=sys.stderr)
        data[name] = collect(qs, embedder, args.depth, shared=name in ("paraphrase", "memories", "keyed", "longtext", "chat", "chat2", "chat3"))
    embedder.flush()
    args.out.write_bytes(pickle.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
