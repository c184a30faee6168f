"""Knowledge retrieval quality on first-person questions (KC-5.4 [ext]): does reading "I" as
the reader help, and hurt nowhere?

    PYTHONPATH=<code to measure> python bench/knowledge_quality.py [--model DIR] [--data FILE]
        [--strategy vector|hybrid ...] [--label NAME] [--dump FILE] [--latency ROUNDS]

Loads ``bench/knowledge_questions.jsonl`` (hand-written for this bench: 8 users x 10 one-fact
writes, each message in the first person and its fact in the third person as KC-4.3 says, some
facts about the user, some about people/things in her life with their own entities and
relations; 104 questions) into a fresh SQLite store per strategy, each write through
``km.write`` with the extraction scripted by ``oramem.testing.ScriptedLLM`` (so the extraction
is exact and only retrieval is measured), every user in her own scope (``user_id``). Then asks
each question as its user (``km.retrieve(..., user_id=user)``, reranker off, default config)
and reports, per question kind, recall@1, recall@5 and MRR of the answer fact (rank among the
returned facts; absent = 0). Kinds: ``first_person_self`` ("where do I live?"),
``first_person_other`` ("what does my sister do?" -> "Dana works as a teacher"),
``third_person`` ("where does Carol live?"), ``first_person_relation`` / ``third_person_relation``
("who is my daughter?", "who is Carol's father?": the answer is a relation's mirror fact, KC-4.14,
written ``{"relation": [source, target]}``: any returned fact that no write scripted and that
names both ends, whatever words the code puts around them) and
``isolation`` (the answer is ANOTHER user's fact: it must never come back; reported as leaks). ``foreign`` counts, over all questions, the
returned facts that belong to another user (must be 0).

Which code is measured is whatever ``oramem`` the interpreter imports: set PYTHONPATH to a
checkout (for example ``git archive <rev> | tar -x -C DIR``). The embedder is ONNXEmbedder over
all-MiniLM-L6-v2 (``--model``). Prints one markdown table; ``--dump`` writes per question the
answer's rank and the first three facts (JSON lines) for diffing two versions. ``--latency``
times each first-person question's retrieve with and without the first-person reader, in the
same run (alternating), and prints a second table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("first_person_self", "first_person_other", "first_person_relation", "third_person", "third_person_relation",
         "isolation")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def add_all(payload: dict[str, Any]) -> dict[str, Any]:
    return {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in payload["new_facts"]]}


def load(path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    writes = [r for r in rows if r["type"] == "write"]
    questions = [r for r in rows if r["type"] == "question"]
    owner: dict[str, str] = {}
    for w in writes:
        for _, fact in w["facts"]:
            if owner.setdefault(fact, w["user"]) != w["user"]:
                raise SystemExit(f"{path}: fact {fact!r} is written by two users; make fact texts unique per user")
    rel_owner = relation_owners(writes)
    for q in questions:
        if q["kind"] not in KINDS:
            raise SystemExit(f"{path}: question kind {q['kind']!r} is not one of {KINDS}")
        if isinstance(q["answer"], dict):
            pair = tuple(q["answer"]["relation"])
            if pair not in rel_owner:
                raise SystemExit(f"{path}: answer {q['answer']!r} of {q['query']!r} is no written relation")
            who = rel_owner[pair]
        elif q["answer"] not in owner:
            raise SystemExit(f"{path}: answer {q['answer']!r} of {q['query']!r} is no written fact")
        else:
            who = owner[q["answer"]]
        if (who == q["user"]) == (q["kind"] == "isolation"):
            raise SystemExit(f"{path}: {q['query']!r} ({q['kind']}) as {q['user']}: its answer belongs to {who}")
    return writes, questions


def relation_owners(writes: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for w in writes:
        for src, tgt, _ in w["relations"]:
            if out.setdefault((src, tgt), w["user"]) != w["user"]:
                raise SystemExit(f"relation {src!r} -> {tgt!r} is written by two users; make names unique per user")
    return out


def is_mirror(fact: str, pair: tuple[str, str], written: dict[str, str]) -> bool:
    """``fact`` is the relation ``pair``'s mirror fact: no write scripted it and it names both
    ends (whatever the code writes around them)."""
    src, tgt = pair
    return fact not in written and all(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", fact) for name in pair)


def answer_rank(facts: list[str], answer: Any, written: dict[str, str]) -> int:
    for i, fact in enumerate(facts, 1):
        if fact == answer if isinstance(answer, str) else is_mirror(fact, tuple(answer["relation"]), written):
            return i
    return 0


def fact_owner(fact: str, written: dict[str, str], rel_owner: dict[tuple[str, str], str]) -> Optional[str]:
    if fact in written:
        return written[fact]
    return next((user for pair, user in rel_owner.items() if is_mirror(fact, pair, written)), None)


def first_person_cost(km: Any, questions: list[dict[str, Any]], rounds: int) -> dict[str, list[float]]:
    """Retrieve latency (ms) of the first-person questions with the first-person reader (KC-5.4
    [ext]: the reader's name, her relatives, the extra searches) and without it
    (``reader_name`` answering None, so the query is searched only as spoken), in the same
    store and process, alternating per question so both see the same caches and load. The
    answers were all asked once before (warm)."""
    import time

    from oramem.knowledge.read import run as read_run

    real = read_run.reader_name
    ask = [q for q in questions if q["kind"].startswith("first_person")]
    out: dict[str, list[float]] = {"with": [], "without": []}
    for i in range(rounds):
        for q in ask:
            for mode in (("with", "without") if i % 2 == 0 else ("without", "with")):
                read_run.reader_name = real if mode == "with" else (lambda st, conn: None)  # type: ignore[assignment]
                try:
                    t0 = time.perf_counter()
                    km.retrieve("bench", q["query"], user_id=q["user"])
                    out[mode].append((time.perf_counter() - t0) * 1000.0)
                finally:
                    read_run.reader_name = real
    return out


def run(strategy: str, model: str, writes: list[dict[str, Any]], questions: list[dict[str, Any]], tmp: str,
        latency: int = 0) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    from oramem import SQLiteMemoryStore
    from oramem.embedders.onnx import ONNXEmbedder
    from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
    from oramem.testing import ScriptedLLM

    clock = Clock()
    llm = ScriptedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.2, "energy": "medium"},
                       "reconcile": add_all, "resolve_entity": {"match_index": 0}})
    store = SQLiteMemoryStore(os.path.join(tmp, f"{strategy}.db"), embedder=ONNXEmbedder(model), clock=clock,
                              search_strategy=strategy)
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False), clock=clock)
    owner = {fact: w["user"] for w in writes for _, fact in w["facts"]}
    rel_owner = relation_owners(writes)
    out = []
    try:
        for w in writes:
            llm.route("extract", {
                "entities": [{"name": n, "type": t} for n, t in w["entities"]],
                "facts": [{"subject": s, "fact": f, "confidence": "explicit_statement"} for s, f in w["facts"]],
                "relations": [{"source": s, "target": t, "rel_type": r} for s, t, r in w["relations"]],
                "intentions": [], "observations": []})
            km.write("bench", w["message"], w["speaker"], user_id=w["user"])
            clock.now += timedelta(minutes=1)
        for q in questions:
            facts = [f.fact_text for f in km.retrieve("bench", q["query"], user_id=q["user"]).facts]
            rank = answer_rank(facts, q["answer"], owner)
            foreign = [f for f in facts if fact_owner(f, owner, rel_owner) not in (None, q["user"])]
            out.append({**q, "strategy": strategy, "rank": rank, "foreign": foreign, "top3": facts[:3]})
        cost = first_person_cost(km, questions, latency) if latency else {}
    finally:
        km.close()
        store.close()
    return out, cost


def cost_table(costs: dict[str, dict[str, list[float]]], label: str) -> str:
    lines = ["| code | store | retrieves | with reader: median / p95 ms | without: median / p95 ms | median added |",
             "|---|---|---|---|---|---|"]
    for strategy, cost in costs.items():
        def q(xs: list[float], p: float) -> float:
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(p * len(xs)))]
        w, wo = cost["with"], cost["without"]
        lines.append(f"| {label} | {strategy} | {len(w)} + {len(wo)} | {q(w, .5):.2f} / {q(w, .95):.2f} | "
                     f"{q(wo, .5):.2f} / {q(wo, .95):.2f} | {q(w, .5) - q(wo, .5):+.2f} |")
    return "\n".join(lines)


def table(results: list[dict[str, Any]], label: str) -> str:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        groups[(r["strategy"], r["kind"])].append(r)
    lines = ["| code | store | kind | n | recall@1 | recall@5 | MRR | leaks / foreign facts |", "|---|---|---|---|---|---|---|---|"]
    for (strategy, kind), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], KINDS.index(kv[0][1]))):
        n = len(rs)
        foreign = sum(len(r["foreign"]) for r in rs)
        if kind == "isolation":
            leaks = sum(r["rank"] > 0 for r in rs)
            lines.append(f"| {label} | {strategy} | {kind} | {n} | - | - | - | {leaks} / {foreign} |")
            continue
        r1 = sum(0 < r["rank"] <= 1 for r in rs) / n
        r5 = sum(0 < r["rank"] <= 5 for r in rs) / n
        mrr = sum(1 / r["rank"] for r in rs if r["rank"]) / n
        lines.append(f"| {label} | {strategy} | {kind} | {n} | {r1:.3f} | {r5:.3f} | {mrr:.3f} | - / {foreign} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="/work/models/all-MiniLM-L6-v2", help="all-MiniLM-L6-v2 ONNX directory")
    ap.add_argument("--data", default=os.path.join(HERE, "knowledge_questions.jsonl"))
    ap.add_argument("--strategy", action="append", choices=("vector", "hybrid"), help="default: both")
    ap.add_argument("--label", default="", help="the name of the measured code in the table")
    ap.add_argument("--dump", default=None, help="write per-question ranks here (JSON lines)")
    ap.add_argument("--latency", type=int, default=0, metavar="ROUNDS",
                    help="also time every first-person question's retrieve ROUNDS times with and without the reader")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.model, "model.onnx")):
        raise SystemExit(f"--model {args.model}: no model.onnx there; give the all-MiniLM-L6-v2 ONNX export's directory")
    import oramem

    print(f"# oramem from {os.path.dirname(oramem.__file__)}", file=sys.stderr)
    writes, questions = load(args.data)
    results: list[dict[str, Any]] = []
    costs: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in args.strategy or ["vector", "hybrid"]:
            found, cost = run(strategy, args.model, writes, questions, tmp, args.latency)
            results += found
            if cost:
                costs[strategy] = cost
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as fh:
            for r in results:
                fh.write(json.dumps(r) + "\n")
    print(table(results, args.label or "?"))
    if costs:
        print()
        print(cost_table(costs, args.label or "?"))


if __name__ == "__main__":
    main()
