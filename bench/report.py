"""Turn ``summary-*.json`` into ``results.json`` (all sizes), ``results.md`` (absolute
numbers, oramem ÷ peer ratios and the targets) and PNG charts."""

from __future__ import annotations

import glob
import json
import os
from typing import Any, Optional

MODE_LABEL = {
    "search": "vector search, unfiltered",
    "search_user": "vector search, user scope (~10 %)",
    "search_meta": "vector search, metadata filter (topic & priority)",
    "keyword": "keyword search",
}
OURS = "oramem"


def load(out_dir: str) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(glob.glob(os.path.join(out_dir, "summary-*.json"))):
        with open(path) as f:
            docs.append(json.load(f))
    docs.sort(key=lambda d: (d["dim"], d["size"]))
    return docs


def _sys(doc: dict, name: str) -> Optional[dict]:
    for s in doc["systems"]:
        if s.get("system") == name:
            return s
    return None


def _q(s: Optional[dict], mode: str, key: str = "p50_ms") -> Optional[float]:
    if not s or s.get("status") != "ok":
        return None
    q = s.get("queries", {}).get(mode, {})
    return q.get(key) if q.get("status") == "ok" else None


def _paired(s: Optional[dict], mode: str) -> Optional[float]:
    if not s or s.get("status") != "ok":
        return None
    q = s.get("queries", {}).get(mode, {})
    return (q.get("paired_numpy") or {}).get("p50_ms")


def _ins(s: Optional[dict]) -> Optional[float]:
    if not s or s.get("status") != "ok":
        return None
    return s["insert"]["records_per_s"]


def _fmt(x: Optional[float], digits: int = 2) -> str:
    if x is None:
        return "—"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def targets(doc: dict) -> list[tuple[str, str, Optional[float], Optional[bool]]]:
    """(target, how measured, value, met?) for one size."""
    o, npy = _sys(doc, OURS), _sys(doc, "numpy")
    ann = _sys(doc, "oramem-ann")
    rows = []

    def row(name, how, value, ok):
        rows.append((name, how, value, None if value is None else ok(value)))

    # issue 14's goals (embedded engine against the best SQLite peer and numpy, one run)
    sv = _sys(doc, "sqlite-vec")

    def cold(s: Optional[dict]) -> Optional[float]:
        return s["open"].get("open_plus_first_query_s") if s and s.get("status") == "ok" and "open" in s else None

    row("(issue 14) open + first query ≤ 2× sqlite-vec", "oramem open + 1st query s ÷ sqlite-vec's",
        _ratio(cold(o), cold(sv)), lambda v: v <= 2)
    row("(issue 14) keyword p50 ≤ 1.5× sqlite-vec FTS5", "oramem keyword p50 ÷ sqlite-vec keyword p50",
        _ratio(_q(o, "keyword"), _q(sv, "keyword")), lambda v: v <= 1.5)
    row("(issue 14) metadata-filtered p50 ≤ 2× numpy over the same rows", "oramem p50 ÷ numpy p50 (metadata filter), paired",
        _ratio(_q(o, "search_meta"), _paired(o, "search_meta")), lambda v: v <= 2)
    row("(issue 14) insert ≥ 1× sqlite-vec", "oramem rec/s ÷ sqlite-vec rec/s", _ratio(_ins(o), _ins(sv)),
        lambda v: v >= 1)
    row("(issue 14) exact search p50 ≤ 1.2× numpy", "oramem p50 ÷ numpy p50, paired",
        _ratio(_q(o, "search"), _paired(o, "search")), lambda v: v <= 1.2)

    for mode, name in (("search", "exact search p50 ≤ 1.3× numpy"),
                       ("search_user", "10 % scope filter p50 ≤ 1.3× numpy over the filtered rows")):
        row(name, "oramem p50 ÷ numpy p50, paired (same process, queries interleaved)",
            _ratio(_q(o, mode), _paired(o, mode)), lambda v: v <= 1.3)
        row(f"(info) {name.split(' p50')[0]}, separate processes", "oramem p50 ÷ numpy worker's p50",
            _ratio(_q(o, mode), _q(npy, mode)), lambda v: v <= 1.3)
    row("bulk insert ≥ 5× sqlite-vec", "oramem rec/s ÷ sqlite-vec rec/s", _ratio(_ins(o), _ins(_sys(doc, "sqlite-vec"))),
        lambda v: v >= 5)
    row("(info) VECTOR-only store insert vs sqlite-vec", "oramem-vec rec/s ÷ sqlite-vec rec/s",
        _ratio(_ins(_sys(doc, "oramem-vec")), _ins(_sys(doc, "sqlite-vec"))), lambda v: v >= 5)
    row("bulk insert ahead of chromadb", "oramem rec/s ÷ chromadb rec/s", _ratio(_ins(o), _ins(_sys(doc, "chromadb"))),
        lambda v: v > 1)
    row("bulk insert ahead of lancedb", "oramem rec/s ÷ lancedb rec/s", _ratio(_ins(o), _ins(_sys(doc, "lancedb"))),
        lambda v: v > 1)
    row("keyword search p50 ≤ 10 ms", "oramem keyword p50 (ms)", _q(o, "keyword"), lambda v: v <= 10)
    row("ANN p50 ≤ 1 ms", "oramem-ann unfiltered p50 (ms)", _q(ann, "search"), lambda v: v <= 1)
    row("ANN recall@10 ≥ 0.95", "oramem-ann unfiltered recall@10", _q(ann, "search", "recall_at_k"),
        lambda v: v >= 0.95)
    approx = _sys(doc, "oramem-approx")
    row("(engine) approximate_search p50 ≤ 1 ms", "oramem-approx unfiltered p50 (ms), public API", _q(approx, "search"),
        lambda v: v <= 1)
    row("(engine) approximate_search recall@10 ≥ 0.95", "oramem-approx unfiltered recall@10", _q(approx, "search", "recall_at_k"),
        lambda v: v >= 0.95)
    row("(info) metadata-filtered search vs numpy", "oramem p50 ÷ numpy p50 (metadata filter), paired",
        _ratio(_q(o, "search_meta"), _paired(o, "search_meta")), lambda v: v <= 1.3)
    return rows


def markdown(docs: list[dict]) -> str:
    out = ["# oramem benchmark results", ""]
    if not docs:
        return "\n".join(out + ["No summary-*.json found: run `python -m bench run` first.", ""])
    m = docs[-1]["machine"]
    out += [
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM; Python {m['python']}, numpy {m['numpy']}; "
        f"BLAS: {_blas(m)}; OPENBLAS env: {m.get('openblas_env')}.",
        "",
        "Ratios are oramem ÷ peer, measured in the same run: for latencies below 1 means oramem is faster; "
        "for insert throughput above 1 means oramem is faster. `—` means not measured or not applicable "
        "(see the status lines).",
        "",
    ]
    for doc in docs:
        size, dim, k = doc["size"], doc["dim"], doc["k"]
        out += [f"## {size:,} records × {dim} dims, k = {k}", "",
                f"Run started {doc['started_utc']}, {doc['wall_s']} s wall; load average before "
                f"{doc['loadavg_before']}, after {doc['loadavg_after']}; {doc['queries_per_measurement']} timed "
                f"queries per measurement after 3 warm-up queries (a system slower than {doc.get('mode_budget_s', '—')} s "
                "per mode stops there, with at least 50: see `n` in the JSON); BLAS threads per worker "
                f"{doc.get('blas_threads_forced') or 'inherited'}; oramem commit {(doc.get('code') or {}).get('commit', '?')[:10]}"
                f"{' + uncommitted engine changes' if _engine_dirty(doc) else ''}.", ""]
        out += ["### Targets", "", "| target | measured as | value | met |", "|---|---|---|---|"]
        for name, how, value, ok in targets(doc):
            out.append(f"| {name} | {how} | {_fmt(value)} | {'—' if ok is None else ('yes' if ok else '**no**')} |")
        out += ["", "### Absolute numbers", "",
                "| system | insert rec/s | search p50 / p95 ms | recall@10 | user-scope p50 ms | recall@10 | "
                "metadata p50 ms | recall@10 | keyword p50 ms | open + 1st query s | RSS after open MiB | disk MiB |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in doc["systems"]:
            name = s.get("system")
            if s.get("status") != "ok":
                out.append(f"| {name} | {s.get('status')} |" + " |" * 11)
                continue
            op = s.get("open", {})
            out.append(
                f"| {name} | {_fmt(_ins(s))} | {_fmt(_q(s, 'search'), 3)} / {_fmt(_q(s, 'search', 'p95_ms'), 3)} | "
                f"{_fmt(_q(s, 'search', 'recall_at_k'), 3)} | {_fmt(_q(s, 'search_user'), 3)} | "
                f"{_fmt(_q(s, 'search_user', 'recall_at_k'), 3)} | {_fmt(_q(s, 'search_meta'), 3)} | "
                f"{_fmt(_q(s, 'search_meta', 'recall_at_k'), 3)} | {_fmt(_q(s, 'keyword'), 3)} | "
                f"{_fmt(op.get('open_plus_first_query_s'), 3)} | {_fmt(op.get('rss_delta_mib'), 1)} | "
                f"{_fmt(s.get('disk_mib'), 1)} |"
            )
        ours = _sys(doc, OURS)
        peers = [s for s in doc["systems"] if s.get("system") != OURS]
        out += ["", "### Ratios oramem ÷ peer", "",
                "| metric | " + " | ".join(s["system"] for s in peers) + " |",
                "|---|" + "---|" * len(peers)]
        metrics = [("insert rec/s (>1: oramem faster)", lambda s: _ins(s))]
        for mode in ("search", "search_user", "search_meta", "keyword"):
            metrics.append((f"{MODE_LABEL[mode]} p50 (<1: oramem faster)", lambda s, mode=mode: _q(s, mode)))
            metrics.append((f"{MODE_LABEL[mode]} p95", lambda s, mode=mode: _q(s, mode, "p95_ms")))
        metrics.append(("open + first query (<1: oramem faster)",
                        lambda s: (s or {}).get("open", {}).get("open_plus_first_query_s") if s and s.get("status") == "ok" else None))
        metrics.append(("RSS after open (<1: oramem smaller)",
                        lambda s: (s or {}).get("open", {}).get("rss_delta_mib") if s and s.get("status") == "ok" else None))
        for label, get in metrics:
            cells = [_fmt(_ratio(get(ours), get(p))) for p in peers]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out += ["", "### Status and what was measured", ""]
        for s in doc["systems"]:
            line = f"- **{s.get('system')}**: {s.get('status')}"
            if s.get("description"):
                line += f" — {s['description']}"
            if s.get("version"):
                line += f" ({s['version']})"
            if s.get("notes"):
                line += "; " + ", ".join(f"{k} {v}" for k, v in s["notes"].items())
            notes = [f"{mode}: {q['status']}" for mode, q in s.get("queries", {}).items() if q.get("status") != "ok"]
            if notes:
                line += "; " + "; ".join(notes)
            if "keyword" in s.get("queries", {}) and "mean_hits" in s["queries"]["keyword"]:
                line += f"; keyword mean hits {s['queries']['keyword']['mean_hits']}"
            out.append(line)
        out.append("")
    return "\n".join(out)


def _engine_dirty(doc: dict) -> bool:
    """Uncommitted changes to code a measurement runs through (not docs, not the knowledge layer)."""
    paths = (doc.get("code") or {}).get("oramem_uncommitted") or []
    return any(p.startswith("oramem/sqlite/") or (p.count("/") == 1 and p.endswith(".py")) for p in paths)


def _blas(m: dict) -> str:
    blas = m.get("blas")
    if isinstance(blas, list):
        return ", ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('architecture')}, {b.get('num_threads')} threads)"
                         for b in blas) or "none found"
    return str(blas)


def charts(docs: list[dict], out_dir: str) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return []
    paths = []
    names = []
    for doc in docs:
        for s in doc["systems"]:
            if s.get("system") not in names:
                names.append(s.get("system"))
    dims = sorted({d["dim"] for d in docs})
    dim = dims[-1]
    by_dim = [d for d in docs if d["dim"] == dim]
    sizes = [d["size"] for d in by_dim]

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, mode in zip(axes, ("search", "search_user", "search_meta")):
        for name in names:
            xs, ys = [], []
            for d in by_dim:
                v = _q(_sys(d, name), mode)
                if v is not None:
                    xs.append(d["size"])
                    ys.append(v)
            if ys:
                ax.plot(xs, ys, marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("records")
        ax.set_ylabel("p50 latency (ms)")
        ax.set_title(MODE_LABEL[mode], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Single-query latency vs store size (dim {dim}, k=10)")
    fig.tight_layout()
    path = os.path.join(out_dir, "latency_vs_size.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)

    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(1, len(sizes))
    for j, d in enumerate(by_dim):
        vals = [(_ins(_sys(d, n)) or 0.0) for n in names]
        ax.bar([i + j * width for i in range(len(names))], vals, width, label=f"{d['size']:,} records")
    ax.set_xticks([i + width * (len(sizes) - 1) / 2 for i in range(len(names))])
    ax.set_xticklabels([n + "\n(index build only)" if n == "oramem-ann" else n for n in names], fontsize=9)
    ax.set_yscale("log")
    ax.set_ylabel("records / s (log)")
    ax.set_title(f"Bulk insert throughput, precomputed vectors (dim {dim}); 0 = not measured")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out_dir, "insert_throughput.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)
    return paths


def write_report(out_dir: str) -> list[str]:
    docs = load(out_dir)
    written = []
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"results": docs}, f, indent=1)
    written.append(os.path.join(out_dir, "results.json"))
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(markdown(docs))
    written.append(os.path.join(out_dir, "results.md"))
    written += charts(docs, out_dir)
    return written
