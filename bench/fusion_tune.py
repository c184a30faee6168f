"""Dev tool (not run in CI): evaluate fusion rules over the legs ``bench/fusion_legs.py``
collected, on every set at once; the objective is the worst margin HYBRID − max(VECTOR,
KEYWORD) over sets × (recall@1, recall@5, recall@10, MRR).

    python -m bench.fusion_tune /tmp/legs_small.pkl /tmp/legs_dev.pkl [--grid]
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from pathlib import Path
from typing import Callable, Optional

from oramem.sqlite import keyword as K
from oramem.sqlite.keyword import HybridConfig, fuse

METRICS = ("recall@1", "recall@5", "recall@10", "mrr")


def metrics(ranked: list, evidence: list) -> dict:
    ev = set(evidence)
    out = {f"recall@{k}": len(ev.intersection(ranked[:k])) / len(ev) for k in (1, 5, 10)}
    out["mrr"] = next((1.0 / r for r, d in enumerate(ranked[:10], start=1) if d in ev), 0.0)
    return out


def mean(rows: list) -> dict:
    return {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}


def _index(leg: list) -> tuple[list, dict]:
    ids = sorted({d for d, _ in leg})
    return ids, {d: i for i, d in enumerate(ids)}


def run(data: dict, rule: Callable[[list, list, Optional[tuple]], list]) -> dict:
    """Per set: mean metrics of ``rule(vector, keyword, coverage) -> ranked doc ids``
    (``coverage``: the legs' ``(held, terms)``, None in legs collected before it existed)."""
    return {name: mean([metrics(rule(q["vector"], q["keyword"], q.get("coverage")), q["evidence"]) for q in qs])
            for name, qs in data.items()}


def config_rule(config: HybridConfig) -> Callable[[list, list, Optional[tuple]], list]:
    """The store's fusion (oramem.sqlite.keyword.fuse) over doc-id legs, with the coverage
    gate when the legs carry it; ties by id."""
    def rule(vector: list, keyword: list, coverage: Optional[tuple] = None) -> list:
        ids = sorted({d for d, _ in vector} | {d for d, _ in keyword})
        num = {d: i for i, d in enumerate(ids)}
        fused = fuse([(num[d], x) for d, x in vector], [(num[d], x) for d, x in keyword], config,
                     None if coverage is None else (lambda: coverage))
        fused.sort(key=lambda item: (item[1], ids[item[0]]))
        return [ids[i] for i, _ in fused]
    return rule


def legs(data: dict) -> dict:
    return {"vector": run(data, lambda v, k, c: [d for d, _ in v]), "keyword": run(data, lambda v, k, c: [d for d, _ in k])}


def margins(data: dict, result: dict, base: dict) -> tuple[float, dict]:
    out = {}
    for name in data:
        for m in METRICS:
            out[(name, m)] = result[name][m] - max(base["vector"][name][m], base["keyword"][name][m])
    return min(out.values()), out


def table(data: dict, rows: dict, base: dict) -> str:
    lines = ["| set | q | metric | VECTOR | KEYWORD | " + " | ".join(rows) + " |",
             "|---|---:|---|---:|---:|" + "---:|" * len(rows)]
    for name, qs in data.items():
        for m in METRICS:
            best = max(base["vector"][name][m], base["keyword"][name][m])
            cells = [f"{r[name][m]:.3f} ({r[name][m] - best:+.3f})" for r in rows.values()]
            lines.append(f"| {name} | {len(qs)} | {m} | {base['vector'][name][m]:.3f} | {base['keyword'][name][m]:.3f} | "
                         + " | ".join(cells) + " |")
    lines.append("| worst margin | | | | | " + " | ".join(f"{margins(data, r, base)[0]:+.3f}" for r in rows.values()) + " |")
    return "\n".join(lines)


def load(paths: list[Path]) -> dict:
    data: dict = {}
    for path in paths:
        data.update(pickle.loads(path.read_bytes()))
    return data


def grid(data: dict, base: dict) -> list[tuple[float, float, tuple]]:
    """gated-rrf over rrf_k x keyword weight x gate floor x gate span: (worst margin, mean
    margin, constants), best first."""
    floor, span = K.GATED_Z_FLOOR, K.GATED_Z_SPAN
    out = []
    try:
        for rrf_k, wk, z_floor, z_span in itertools.product((0.5, 1, 2, 3, 5, 10), (1, 1.5, 2, 3, 4, 5, 8),
                                                            (1, 1.5, 2, 2.5, 3), (0.5, 1, 2, 4)):
            K.GATED_Z_FLOOR, K.GATED_Z_SPAN = z_floor, z_span
            result = run(data, config_rule(HybridConfig(keyword_weight=wk, rrf_k=rrf_k)))
            worst, each = margins(data, result, base)
            out.append((round(worst, 4), round(sum(each.values()) / len(each), 4), (rrf_k, wk, z_floor, z_span)))
    finally:
        K.GATED_Z_FLOOR, K.GATED_Z_SPAN = floor, span
    return sorted(out, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("legs", nargs="+", type=Path)
    parser.add_argument("--grid", action="store_true", help="also the gated-rrf grid (worst, mean margin, constants)")
    args = parser.parse_args()
    data = load(args.legs)
    base = legs(data)
    if args.grid:
        ranked = grid(data, base)
        print(f"{sum(1 for r in ranked if r[0] >= 0)} of {len(ranked)} configurations have worst margin >= 0")
        for row in ranked[:20]:
            print(row)
    rows = {"rrf (before issue 23)": run(data, config_rule(HybridConfig(fusion="rrf"))),
            "score (old default)": run(data, config_rule(HybridConfig(fusion="score"))),
            "gated-rrf (new default)": run(data, config_rule(HybridConfig()))}
    print(table(data, rows, base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
