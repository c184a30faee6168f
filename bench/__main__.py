"""``python -m bench run --size 100000 --dim 384 --out bench/results/`` (see README.md)."""

from __future__ import annotations

import argparse
import sys

from .adapters import ADAPTERS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="measure every system and write JSON, markdown and charts")
    run.add_argument("--size", type=int, action="append", help="records (repeatable); default 10000 and 100000")
    run.add_argument("--dim", type=int, default=384)
    run.add_argument("--out", default="bench/results/")
    run.add_argument("--queries", type=int, default=200, help="timed queries per measurement")
    run.add_argument("--k", type=int, default=10)
    run.add_argument("--budget", type=float, default=20.0,
                     help="seconds per query mode; a slower system stops there (at least 50 queries)")
    run.add_argument("--systems", default=",".join(ADAPTERS), help=f"comma-separated subset of {','.join(ADAPTERS)}")
    run.add_argument("--timeout", type=int, default=900, help="seconds per worker process")
    run.add_argument("--blas-threads", type=int, default=None,
                     help="set OPENBLAS/OMP/MKL_NUM_THREADS for every worker (default: inherit)")
    run.add_argument("--keep", action="store_true", help="keep the stores and corpus under OUT/raw/")

    report = sub.add_parser("report", help="rebuild the markdown table and charts from OUT/summary-*.json")
    report.add_argument("--out", default="bench/results/")

    w = sub.add_parser("_worker", help=argparse.SUPPRESS)
    w.add_argument("--phase", choices=("build", "open"), required=True)
    w.add_argument("--system", required=True)
    w.add_argument("--data", required=True)
    w.add_argument("--workdir", required=True)
    w.add_argument("--result", required=True)
    w.add_argument("--k", type=int, default=10)
    w.add_argument("--budget", type=float, default=20.0)

    args = parser.parse_args(argv)
    if args.command == "_worker":
        from .runner import worker

        worker(args.phase, args.system, args.data, args.workdir, args.result, args.k, args.budget)
        return 0
    from .report import write_report

    if args.command == "run":
        from .runner import run as run_all

        systems = [s.strip() for s in args.systems.split(",") if s.strip()]
        unknown = [s for s in systems if s not in ADAPTERS]
        if unknown:
            parser.error(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(ADAPTERS)}")
        run_all(args.size or [10_000, 100_000], args.dim, args.out, systems, args.queries, args.k, args.timeout,
                keep=args.keep, log=lambda m: print(m, flush=True), blas_threads=args.blas_threads, budget_s=args.budget)
    for path in write_report(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
