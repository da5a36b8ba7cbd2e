"""How cost grows with the data, for the local, streaming and dask engines.

Usage::

    .venv/bin/python benchmarks/bench_scaling.py                    # 100k, 1M, 10M, 110M rows
    .venv/bin/python benchmarks/bench_scaling.py --rows 100000 1000000 --engines stream dask

For each size a clustered scored parquet run (20-200 documents per query, 110 on average,
grades 0-4, scores rounded to 2 decimals so ties occur) is written to disk with
:func:`harness.datasets.parquet_run.write_scored_run`. Each engine then computes nDCG@10
(ties averaged) for every query, in a fresh child process:

- ``local``: ``pd.read_parquet`` + :func:`harness.evaluate`, everything in memory;
- ``stream``: :func:`harness.evaluate_parquet`, ``--batch-rows`` rows per batch;
- ``dask``: :func:`harness.evaluate_dask` on a local cluster of ``--workers`` processes,
  ``--batch-rows`` rows per partition. The cluster starts and serves one small evaluation
  before the clock starts (a cluster is usually up and warm); the start-up time is printed
  apart.

Peak memory is the largest sum of RSS over the child and every process it started (dask's
scheduler and workers), sampled every 50 ms, or the child's own peak if larger. Every engine's
mean nDCG@10 is compared: they must agree to the last digit.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from bench_common import print_targets, run_watched

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MEAN_DOCS = 110  # documents per query on average (20-200 uniform)


def child(engine: str, path: str, batch_rows: int, workers: int) -> None:
    import pandas as pd
    import pyarrow as pa

    import harness

    started = 0.0
    if engine == "dask":
        from harness.engines.dask import dask_client

        t = time.perf_counter()
        with dask_client(n_workers=workers) as client:
            client.wait_for_workers(workers)
            # a warm cluster, as after a first evaluation: the workers have imported
            # harness and run the code paths once (a fresh cluster's first call costs ~0.5 s)
            client.run(importlib.import_module, "harness.engines.dask")
            warm = Path(path).with_suffix(".warm.parquet")
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_batches(
                [next(pq.ParquetFile(path).iter_batches(batch_size=20_000))]), warm)
            harness.evaluate_dask(warm, metrics="ndcg@10", client=client)
            warm.unlink()
            started = time.perf_counter() - t
            t = time.perf_counter()
            out = harness.evaluate_dask(path, metrics="ndcg@10", client=client,
                                        partition_rows=batch_rows)
            seconds = time.perf_counter() - t
    else:
        t = time.perf_counter()
        if engine == "stream":
            out = harness.evaluate_parquet(path, metrics="ndcg@10", batch_rows=batch_rows)
        else:
            out = harness.evaluate(pd.read_parquet(path), metrics="ndcg@10")
        seconds = time.perf_counter() - t
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(json.dumps({"seconds": seconds, "startup": started, "own_peak_gb": own,
                      "queries": len(out), "mean": repr(float(out["nDCG@10"].mean()))}))


def measure(engine: str, path: Path, batch_rows: int, workers: int) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", engine, str(path), str(batch_rows),
           str(workers)]
    _, peak, out, err, code = run_watched(cmd)
    if code != 0:
        tail = (err.strip().splitlines() or ["killed"])[-1]
        return {"failed": f"exit {code}: {tail}"}
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_gb"] = max(peak * 1e9 / 1024**3, result["own_peak_gb"])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+",
                    default=[100_000, 1_000_000, 10_000_000, 110_000_000])
    ap.add_argument("--engines", nargs="+", default=["local", "stream", "dask"],
                    choices=["local", "stream", "dask"])
    ap.add_argument("--batch-rows", type=int, default=2_000_000,
                    help="stream: rows per batch; dask: rows per partition")
    ap.add_argument("--workers", type=int, default=2, help="dask local cluster processes")
    ap.add_argument("--dir", default=None, help="where to write the parquet files")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        engine, path, batch, workers = args.child
        child(engine, path, int(batch), int(workers))
        return
    from harness.datasets.parquet_run import write_scored_run

    table = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for target in args.rows:
            nq = max(1, round(target / MEAN_DOCS))
            path = Path(tmp) / f"run_{target}.parquet"
            t = time.perf_counter()
            n = write_scored_run(path, nq)
            print(f"## {n:,} rows ({nq:,} queries, {path.stat().st_size / 1e9:.2f} GB parquet, "
                  f"written in {time.perf_counter() - t:.0f} s)", flush=True)
            means = set()
            for engine in args.engines:
                r = measure(engine, path, args.batch_rows, args.workers)
                if "failed" in r:
                    print(f"   {engine:6s} FAILED {r['failed']}", flush=True)
                    table.append((n, engine, None, None, None))
                    continue
                means.add(r["mean"])
                extra = f"  (cluster start {r['startup']:.1f} s)" if engine == "dask" else ""
                print(f"   {engine:6s} {r['seconds']:7.2f} s  {n / r['seconds'] / 1e6:6.2f} M "
                      f"rows/s  peak {r['peak_gb']:.2f} GB{extra}", flush=True)
                table.append((n, engine, r["seconds"], r["peak_gb"], r["startup"]))
            print(f"   mean nDCG@10 {', '.join(sorted(means))}: "
                  f"{'identical' if len(means) == 1 else 'DIFFERENT'} across engines",
                  flush=True)
            if len(means) > 1:
                raise SystemExit("engines disagree")
            path.unlink()
    print("\n| rows | engine | wall time | rows/s | peak memory |")
    print("|---|---|---|---|---|")
    for n, engine, sec, peak, _ in table:
        if sec is None:
            print(f"| {n / 1e6:g}M | {engine} | failed | | |")
        else:
            print(f"| {n / 1e6:.1f}M | {engine} | {sec:.2f} s | {n / sec / 1e6:.2f}M | "
                  f"{peak:.2f} GB |")
    _targets(table)


def _targets(table: list[tuple]) -> None:
    ok = [(n, e, s, p) for n, e, s, p, _ in table if s is not None]
    print()
    for engine in ("local", "stream", "dask"):
        runs = sorted((n, s) for n, e, s, _ in ok if e == engine)
        if len(runs) >= 2:
            (n0, s0), (n1, s1) = runs[-2], runs[-1]
            print(f"{engine}: {n1 / n0:.0f}x the rows took {s1 / s0:.1f}x the time "
                  f"(linear would be {n1 / n0:.0f}x)")
    print_targets(ok, memory="local")

if __name__ == "__main__":
    main()
