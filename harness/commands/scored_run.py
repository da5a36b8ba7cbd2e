"""Write a synthetic scored parquet run to try ``dataset=parquet_run`` and the engines on.

    harness scored-run runs/big.parquet --queries 100000    # ~11M rows, ~0.2 GB
"""

from __future__ import annotations

import argparse

from harness.commands.base import keyword_default
from harness.datasets.parquet_run import write_scored_run


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    ap = argparse.ArgumentParser(prog="harness scored-run",
                                 description="Write a synthetic scored parquet run (columns "
                                 "qid, docid, label, score, weak), clustered by qid.")
    ap.add_argument("out", help="parquet file to write")
    ap.add_argument("--queries", type=int, default=100_000, help="default %(default)s")
    ap.add_argument("--seed", type=int, default=keyword_default(write_scored_run, "seed"),
                    help="seed of the synthetic run (default %(default)s)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.queries < 1:
        ap.error(f"--queries must be >= 1, got {args.queries}")  # exits 2
    n = write_scored_run(args.out, args.queries, seed=args.seed)
    print(f"wrote {args.out}: {args.queries:,} queries, {n:,} rows, clustered by qid")
    return 0
