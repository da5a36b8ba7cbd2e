"""Streaming evaluation of large parquet runs: wall time, rows/s and peak memory.

Usage::

    .venv/bin/python benchmarks/bench_stream.py                 # 100k and 1M queries
    .venv/bin/python benchmarks/bench_stream.py --queries 100000

For each size a clustered parquet run (20-200 documents per query, grades 0-4, scores
rounded to 2 decimals so ties occur, integer docids) is generated to disk in chunks. Then,
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import Metric  # noqa: E402

GRID = [Metric("ndcg", k=k, gain=g, ties=t).display_name
        for g in ("exp2", "linear") for k in (5, 10) for t in ("average", "input", "optimistic")]


def generate(path: Path, n_queries: int, seed: int = 7, chunk_queries: int = 50_000) -> int:
    """Write a clustered run in chunks; returns the number of rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    rows = 0
    schema = pa.schema([("qid", pa.int64()), ("docid", pa.int64()), ("score", pa.float64()),
                        ("label", pa.int64())])
    with pq.ParquetWriter(path, schema) as writer:
        for first in range(0, n_queries, chunk_queries):
            nq = min(chunk_queries, n_queries - first)
            sizes = rng.integers(20, 201, nq)
            n = int(sizes.sum())
            qid = np.repeat(np.arange(first, first + nq), sizes)
            label = rng.choice(5, size=n, p=[0.5, 0.25, 0.15, 0.07, 0.03])
            score = np.round(0.3 * label + rng.normal(size=n), 2)
            docid = np.arange(rows, rows + n)
            writer.write_table(pa.table({"qid": qid, "docid": docid, "score": score,
                                         "label": label}, schema=schema))
            rows += n
    return rows


def child(mode: str, path: str, metrics: str, batch_rows: int) -> None:
    import harness

    names = ["ndcg@10"] if metrics == "one" else GRID
    t = time.perf_counter()
    if mode == "stream":
        out = harness.evaluate_parquet(path, metrics=names, batch_rows=batch_rows)
    else:
        import pandas as pd

        out = harness.evaluate(pd.read_parquet(path), metrics=names)
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
            n = generate(path, nq)
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
    largest = max(n for _, n, *_ in rows_table)
    for label in ("nDCG@10", f"{len(GRID)} variants"):
        peaks = [p for _, n, m, lab, _, p in rows_table
                 if n == largest and m == "stream" and lab == label]
        if largest >= 100_000_000 and peaks:
            print(f"target: {largest / 1e6:.0f}M rows streamed under 4 GB peak, {label}: "
                  f"{'MET' if peaks[0] < 4 else 'NOT MET'} ({peaks[0]:.2f} GB)")
        both = {(n, m): sec for _, n, m, lab, sec, _ in rows_table if lab == label}
        common = [n for (n, m) in both if m == "memory" and (n, "stream") in both]
        if common:
            n = max(common)
            ratio = both[(n, "stream")] / both[(n, "memory")]
            print(f"target: streaming within 2x of in-memory time, {label}, {n / 1e6:.0f}M rows: "
                  f"{'MET' if ratio <= 2 else 'NOT MET'} (stream / memory = {ratio:.2f})")


if __name__ == "__main__":
    main()
