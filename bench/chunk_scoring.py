"""How a record's vector score is made from its chunks (issue 28): offline comparison of
aggregation rules over the same cached vectors as ``bench.quality``, on several sets at once.

    python -m bench.chunk_scoring --sets paraphrase,memories,longtext,dev-full

For each record the store's chunks (the embedder's window, ``oramem.chunking.policy_for``)
are embedded (cached); a question scores each record by a rule over its chunk cosines:

- ``whole``: the whole text embedded once, truncated by the model (issue 28's baseline);
- ``max``: the best chunk (the store before this change);
- ``lead-d``: ``max(lead, best tail - d)``: the first chunk (the text as the model reads it
  first) at full weight, later chunks handicapped by ``d``;
- ``tailw-w``: ``lead + w * max(0, best tail - lead)``.

``--lead`` says what a record's lead is: its first chunk (the store's rule), the whole text
as the model reads it (``whole``: every chunk is then a tail), or ``blend``: ``(1 - b) *
whole + b * first chunk`` (``--blend b``), the first chunk's focus mixed with the model's
whole window, later chunks the tails.

dev-full keeps only the questions whose haystack is fully in the embedding cache.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

import numpy as np

from . import quality as Q

#: ``--lead whole``: the lead is the whole text as the model reads it (its first window)
#: and every chunk counts as a tail; default: the store's first chunk is the lead
EXACT_LEAD = False
#: ``--lead blend``: the share of the first chunk in a lead blended with the whole text
#: (None: no blending)
BLEND: "float | None" = None


def rules() -> dict[str, Callable[[float, float], float]]:
    out: dict[str, Callable[[float, float], float]] = {"max": lambda lead, tail: max(lead, tail)}
    for d in (0.04, 0.08, 0.10, 0.12, 0.14, 0.16, 0.20, 0.25):
        out[f"lead-{d:.2f}"] = lambda lead, tail, d=d: max(lead, tail - d)
    for g in (0.03, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20):
        out[f"gate-{g:.2f}"] = lambda lead, tail, g=g: tail if tail - lead > g else lead
    for d in (0.12,):
        out[f"mult-{d:.2f}"] = lambda lead, tail, d=d: max(lead, 1 - (1 - tail) * (1 + 2 * d))
    for w in (0.25, 0.5):
        out[f"tailw-{w:.2f}"] = lambda lead, tail, w=w: lead + w * max(0.0, tail - lead)
    for d in (0.03, 0.05, 0.07):
        out[f"logn-{d:.2f}"] = lambda lead, tail, n=0, d=d: max(lead, tail - d * np.log2(1 + n))
    for h in (0.06, 0.08, 0.10, 0.12):
        for g in (0.10, 0.12, 0.15):
            out[f"gh-{h:.2f}-{g:.2f}"] = lambda lead, tail, h=h, g=g: tail if tail - lead > g else max(lead, tail - h)
    out["lead-only"] = lambda lead, tail: lead
    return out


def evaluate(questions: list, embedder: Q.CachedEmbedder) -> dict[str, dict[str, float]]:
    names = ["whole"] + list(rules())
    acc: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    by_type: dict[str, dict[str, list[float]]] = {}
    cache_key = None
    for q in questions:
        key = id(q.docs)
        if key != cache_key:
            ids = [d for d, _ in q.docs]
            texts = [t for _, t in q.docs]
            whole = embedder.embed(texts)
            chunks = [embedder.store_chunks(t) for t in texts]
            flat = [c for cs in chunks for c in cs]
            vecs = embedder.embed(flat) if flat else np.zeros((0, embedder.embedding_dimension), np.float32)
            owner = np.repeat(np.arange(len(texts)), [len(cs) for cs in chunks])
            first = np.zeros(len(flat), dtype=bool)
            starts = np.cumsum([0] + [len(cs) for cs in chunks])[:-1]
            first[starts[[len(cs) > 0 for cs in chunks]]] = True
            ntail = np.array([max(0, len(cs) - 1) for cs in chunks])
            cache_key = key
        qv = embedder.embed([q.question], is_query=True)[0]
        sims = vecs @ qv
        lead = np.full(len(texts), -2.0)
        tail = np.full(len(texts), -2.0)
        np.maximum.at(lead, owner[first], sims[first])
        if EXACT_LEAD:
            lead = whole @ qv
        elif BLEND is not None:
            # a text of one chunk is its own first chunk: the blend leaves it as it is
            lead = np.where(ntail > 0, (1 - BLEND) * (whole @ qv) + BLEND * lead, lead)
        if EXACT_LEAD:
            np.maximum.at(tail, owner, sims)  # every chunk is a tail; the lead is the whole text
        else:
            np.maximum.at(tail, owner[~first], sims[~first])
        scores = {"whole": whole @ qv}
        for name, rule in rules().items():
            if name.startswith("logn"):
                scores[name] = np.array([rule(a, b, c) for a, b, c in zip(lead, tail, ntail)])
            else:
                scores[name] = np.array([rule(a, b) for a, b in zip(lead, tail)])
        for name, s in scores.items():
            order = np.argsort(-s, kind="stable")[: Q.DEPTH]
            m = Q.score([ids[i] for i in order], q.evidence)
            for metric in Q.GATE:
                acc[name].setdefault(metric, []).append(m[metric])
                by_type.setdefault(f"{name}|{q.qtype}", {}).setdefault(metric, []).append(m[metric])
    out = {n: {m: float(np.mean(v)) for m, v in d.items()} for n, d in acc.items()}
    out["_types"] = {k: {m: float(np.mean(v)) for m, v in d.items()} for k, d in by_type.items()}  # type: ignore[assignment]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chunk_scoring")
    parser.add_argument("--sets", default="paraphrase,memories,longtext,dev-full")
    parser.add_argument("--model", default=Q.DEFAULT_MODEL)
    parser.add_argument("--types", action="store_true", help="also print per question type")
    parser.add_argument("--lead", choices=("first-chunk", "whole", "blend"), default="first-chunk",
                        help="what the lead of a record is (see EXACT_LEAD and BLEND)")
    parser.add_argument("--blend", type=float, default=0.3,
                        help="--lead blend: the first chunk's share of the lead, in [0, 1] (default 0.3)")
    args = parser.parse_args(argv)
    if not 0.0 <= args.blend <= 1.0:
        parser.error(f"--blend must be in [0, 1], got {args.blend}")
    global EXACT_LEAD, BLEND
    EXACT_LEAD = args.lead == "whole"
    BLEND = args.blend if args.lead == "blend" else None
    embedder = Q.CachedEmbedder(args.model)
    loaders = {"paraphrase": Q.load_paraphrase, "memories": Q.load_memories, "longtext": Q.load_longtext,
               "dev-full": lambda: Q.load_dev(Q.DEFAULT_DEV, None, 0)}
    results = {}
    for name in args.sets.split(","):
        questions = loaders[name]()
        if name == "dev-full":
            questions = [q for q in questions
                         if all(embedder._key(t) in embedder._mem for t in Q.haystack_texts(q, embedder))]
        results[name] = (len(questions), evaluate(questions, embedder))
    embedder.flush()
    for name, (n, res) in results.items():
        print(f"\n## {name} ({n} questions)  recall@1 / @5 / @10 / MRR; margin vs whole")
        base = res["whole"]
        for rule, m in res.items():
            if rule == "_types":
                continue
            worst = min(m[k] - base[k] for k in Q.GATE)
            print(f"{rule:12s} " + " ".join(f"{m[k]:.3f}" for k in Q.GATE) + f"   worst {worst:+.3f}")
        if args.types:
            for key, m in sorted(res["_types"].items()):
                print(f"   {key:28s} " + " ".join(f"{m[k]:.3f}" for k in Q.GATE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
