"""Streaming evaluation of large parquet runs: wall time, rows/s and peak memory.

Usage::

    .venv/bin/python benchmarks/bench_stream.py                 # 100k and 1M queries
    .venv/bin/python benchmarks/bench_stream.py --queries 100000

For each size a clustered parquet run (20-200 documents per query, grades 0-4, scores
rounded to 2 decimals so ties occur, integer docids) is written to disk in chunks by
:func:`harness.datasets.parquet_run.write_scored_run`. Then,
each in a fresh child process so its peak RSS is its own:

- ``stream``: :func:`harness.evaluate_parquet` with ``--batch-rows`` rows per batch;
- ``memory``: ``pd.read_parquet`` + :func:`harness.evaluate` (only up to ``--memory-max``
  rows: the point of streaming is the sizes memory cannot hold).

Metrics: nDCG@10 tie-averaged alone, and a 12-variant grid (2 gains x 2 k x 3 tie rules).
Targets (issue 5): 110M rows under 4 GB peak, streaming throughput within 2x of in-memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_common import print_targets

from harness import Metric
from harness.datasets.parquet_run import write_scored_run

COLUMNS = ["qid", "docid", "score", "label"]  # the run's (the file also has `weak`)
GRID = [Metric("ndcg", k=k, gain=g, ties=t).display_name
        for g in ("exp2", "linear") for k in (5, 10) for t in ("average", "input", "optimistic")]


def child(mode: str, path: str, metrics: str, batch_rows: int) -> None:
    import harness

    names = ["ndcg@10"] if metrics == "one" else GRID
    t = time.perf_counter()
    if mode == "stream":
        out = harness.evaluate_parquet(path, metrics=names, batch_rows=batch_rows)
    else:
        import pandas as pd

        out = harness.evaluate(pd.read_parquet(path, columns=COLUMNS), metrics=names)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(json.dumps({"seconds": seconds, "peak_gb": peak, "queries": len(out),
                      "mean": float(out[out.columns[3]].mean())}))


def measure(mode: str, path: Path, metrics: str, batch_rows: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(path), metrics,
                           str(batch_rows)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--batch-rows", type=int, default=2_000_000)
    ap.add_argument("--memory-max", type=int, default=20_000_000,
                    help="largest row count also evaluated in memory")
    ap.add_argument("--dir", default=None, help="where to write the parquet files")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, path, metrics, batch = args.child
        child(mode, path, metrics, int(batch))
        return
    rows_table = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for nq in args.queries:
            path = Path(tmp) / f"run_{nq}.parquet"
            t = time.perf_counter()
            n = write_scored_run(path, nq)
            print(f"## {nq:,} queries, {n:,} rows ({path.stat().st_size / 1e9:.2f} GB parquet, "
                  f"generated in {time.perf_counter() - t:.0f} s)", flush=True)
            for metrics in ("one", "grid"):
                for mode in ("stream", "memory"):
                    if mode == "memory" and n > args.memory_max:
                        continue
                    r = measure(mode, path, metrics, args.batch_rows)
                    label = "nDCG@10" if metrics == "one" else f"{len(GRID)} variants"
                    print(f"   {mode:6s} {label:12s} {r['seconds']:7.1f} s  "
                          f"{n / r['seconds'] / 1e6:6.2f} M rows/s  peak {r['peak_gb']:.2f} GB",
                          flush=True)
                    rows_table.append((nq, n, mode, label, r["seconds"], r["peak_gb"]))
    print("\n| queries | rows | engine | metrics | wall time | rows/s | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for nq, n, mode, label, sec, peak in rows_table:
        print(f"| {nq:,} | {n / 1e6:.1f}M | {mode} | {label} | {sec:.1f} s | "
              f"{n / sec / 1e6:.2f}M | {peak:.2f} GB |")
    print()
    for label in ("nDCG@10", f"{len(GRID)} variants"):
        print_targets([(n, m, sec, peak) for _, n, m, lab, sec, peak in rows_table
                       if lab == label], memory="memory", label=label)

if __name__ == "__main__":
    main()
