"""``harness explain``: why two definitions of a metric disagree on a TREC run.

    harness explain --run RUN --qrels QRELS --metric ndcg@10 --a sklearn --b trec_eval

prints the two means and each differing option's share of the gap (exact Shapley values,
see :mod:`harness.explain.shapley`); ``--csv`` writes that table, ``--per-query`` the
contributions per query. ``--a``/``--b`` take a convention name or a metric of its own
(``"ndcg@10(gain=linear)"``); ``--missing-a``/``--missing-b`` set the data-level choice
for judged queries the run lacks. Exit codes: 0, 2 for bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command-line interface; its defaults are :func:`~harness.explain.shapley.
    explain_difference`'s."""
    from harness.commands.base import keyword_default
    from harness.explain.shapley import explain_difference

    default = {name: keyword_default(explain_difference, name) for name in ("metric", "a", "b")}
    p = argparse.ArgumentParser(prog="harness explain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="TREC run file (qid Q0 docid rank score tag)")
    p.add_argument("--qrels", required=True, help="TREC qrels file (qid 0 docid label)")
    p.add_argument("--metric", default=default["metric"], help="metric family and cut-off "
                   "(default %(default)s)")
    p.add_argument("--a", default=default["a"],
                   help="convention or metric A (default %(default)s)")
    p.add_argument("--b", default=default["b"],
                   help="convention or metric B (default %(default)s)")
    for side in ("a", "b"):
        p.add_argument(f"--missing-{side}", choices=("exclude", "zero"), default=None,
                       help=f"judged queries missing from the run, on side {side.upper()}")
    p.add_argument("--csv", type=Path, help="write the option table here")
    p.add_argument("--per-query", type=Path, help="write per-query contributions here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from harness.errors import InputError

    for flag, path in (("--csv", args.csv), ("--per-query", args.per_query)):
        if path is not None and not path.parent.is_dir():  # said before the work, not after
            raise InputError(f"{flag} {path}: the folder {path.parent} does not exist")
    from harness.data.trec import read_qrels, read_run
    from harness.explain.shapley import explain_difference

    run, qrels = read_run(args.run), read_qrels(args.qrels)
    data = {side: ({"missing": m} if m else None)
            for side, m in (("a", args.missing_a), ("b", args.missing_b))}
    result = explain_difference(run, qrels, args.metric, args.a, args.b, data_a=data["a"],
                                data_b=data["b"])
    print(result)
    if args.csv:
        result.table.to_csv(args.csv, index=False)
        print(f"table: {args.csv}")
    if args.per_query:
        result.per_query.to_csv(args.per_query)
        print(f"per query: {args.per_query}")
    return 0
