"""``harness reproduce RUN_ID [RUN_ID ...]``: re-run logged evaluations and
compare every per-query value bit for bit (see :mod:`harness.reproduce`); a comparison run
(``harness compare``) is recomputed from the compared runs' per-query artifacts and every
number of its tables compared (:mod:`harness.reproduce.comparison`).

Exit status: 0 every run identical, 1 a difference, 2 a run or artifact that cannot be read,
3 the store is unreachable.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from harness.commands.base import add_tracking_uri
from harness.errors import HarnessError
from harness.reproduce.comparison import (
    ComparisonResult,
    comparison_lines,
    is_comparison,
    reproduce_comparison,
)
from harness.reproduce.diff import N_EXAMPLES
from harness.reproduce.run import ReproResult, ranker_run_ids, reproduce_run
from harness.tracking import resolve_tracking_uri

__all__ = ["main", "parser", "format_result"]


def _fmt(value: Any) -> str:
    return repr(float(value)) if isinstance(value, (float, np.floating)) else str(value)


def _listing(items: tuple[str, ...], limit: int = 5) -> str:
    shown = ", ".join(map(str, items[:limit]))
    return shown + (f", … ({len(items)} in all)" if len(items) > limit else "")


def format_result(result: ReproResult) -> list[str]:
    """The report lines of one reproduction (what the CLI prints)."""
    head = f"run {result.run_id} (ranker {result.ranker}):"
    size = f"{result.n_variants} variants x {result.n_queries} queries"
    if result.identical:
        lines = [f"{head} identical — {size}"]
    else:
        d = result.differences
        n_bad = d["variant"].nunique() if not d.empty else 0
        if n_bad == 0 and any(n.startswith("config:") for n in result.notes):
            lines = [f"{head} DIFFERENT — the run's logged params do not match its saved "
                     f"config ({size} compared)"]
        else:
            lines = [f"{head} DIFFERENT — {n_bad} column(s) with differing values; {size} "
                     "compared"]
        for variant, group in d.groupby("variant", sort=False):
            diffs = group["abs_diff"].to_numpy(dtype=float)
            finite = diffs[~np.isnan(diffs)]
            worst = f"max |diff| {finite.max():.3g}" if finite.size else "max |diff| n/a"
            if finite.size < diffs.size:
                worst += f", {diffs.size - finite.size} with NaN on one side"
            examples = ", ".join(f"{q}: {_fmt(x)} -> {_fmt(y)}" for q, x, y in zip(
                group["qid"][:N_EXAMPLES], group["logged"][:N_EXAMPLES],
                group["now"][:N_EXAMPLES]))
            more = ", ..." if len(group) > N_EXAMPLES else ""
            count = "1 query differs" if len(group) == 1 else f"{len(group)} queries differ"
            lines.append(f"  {variant}: {count}, {worst} "
                         f"({examples}{more})")
        for label, items in (("columns logged but not recomputed", result.missing_columns),
                             ("columns recomputed but not logged", result.extra_columns),
                             ("queries logged but not recomputed", result.missing_queries),
                             ("queries recomputed but not logged", result.extra_queries)):
            if items:
                lines.append(f"  {label}: {_listing(items)}")
    if result.env_changes:
        lines += [f"  environment: {name} {a} -> {b}"
                  for name, (a, b) in result.env_changes.items()]
    elif not any(n.startswith("environment:") for n in result.notes):
        lines.append("  environment: same package versions")
    lines += [f"  {note}" for note in result.notes]
    return lines


def _comparison(run_id: str, uri: str) -> ComparisonResult | None:
    """The recomputation of ``run_id`` when it is a logged comparison, else None."""
    from harness.reproduce.run import get_run, open_store

    client = open_store(uri)
    run = get_run(client, run_id)
    return reproduce_comparison(client, run) if is_comparison(run) else None


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(
        prog="harness reproduce",
        description="Re-run logged evaluations and compare every per-query value bit for bit.")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID",
                   help="a ranker run, a job/sweep run (reproduces its ranker runs), or "
                   "a comparison run (recomputes it from the compared runs' artifacts)")
    add_tracking_uri(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """``harness reproduce``; returns the exit status (see the module doc)."""
    args = parser().parse_args(argv)
    from harness.tracking import configure_requests

    configure_requests()  # an unreachable server fails in seconds
    uri = resolve_tracking_uri(args.tracking_uri)
    status = 0
    def failed(exc: HarnessError) -> int:
        print(f"error: {exc}", file=sys.stderr)
        return max(status, getattr(exc, "exit_code", 2))

    for given in args.run_ids:
        try:
            compared = _comparison(given, uri)
        except HarnessError as exc:
            status = failed(exc)
            continue
        if compared is not None:
            print("\n".join(comparison_lines(compared)), flush=True)
            status = max(status, 0 if compared.identical else 1)
            continue
        try:
            ids = ranker_run_ids(given, tracking_uri=uri)
        except HarnessError as exc:
            status = failed(exc)
            continue
        for run_id in ids:
            try:
                result = reproduce_run(run_id, tracking_uri=uri)
            except HarnessError as exc:
                status = failed(exc)
                continue
            print("\n".join(format_result(result)), flush=True)
            if not result.identical:
                status = max(status, 1)
    return status
