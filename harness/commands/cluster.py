"""``harness cluster IN OUT``: rewrite a parquet run clustered by qid (out of core).

Streaming evaluation (:func:`harness.evaluate_parquet`) needs the rows of each query to be
contiguous. This rewrites any parquet file that way with bounded memory: see
:func:`harness.engines.clustering.cluster_parquet`. IN may also be a TREC run as text
(plain or .gz; one space or one tab between fields): it is converted in blocks, for a run
too large to read as text in memory.
"""

from __future__ import annotations

import argparse
import time

from harness.commands.base import keyword_default, report_error
from harness.engines.clustering import cluster_parquet
from harness.errors import HarnessError


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(prog="harness cluster", description=__doc__)
    p.add_argument("src", help="parquet file, or TREC run text, to read")
    p.add_argument("dst", help="parquet file to write, clustered by qid")
    p.add_argument("--batch-rows", type=int,
                   default=keyword_default(cluster_parquet, "batch_rows"),
                   help="rows held in memory at a time (default %(default)s)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    t = time.perf_counter()
    try:
        out = cluster_parquet(args.src, args.dst, batch_rows=args.batch_rows)
    except (HarnessError, OSError) as exc:
        return report_error(exc)
    print(f"wrote {out} clustered by qid in {time.perf_counter() - t:.1f}s")
    return 0
