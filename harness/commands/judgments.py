"""``harness judgments``: how much a comparison of TREC runs depends on unjudged documents.

    harness judgments --qrels QRELS --run A.run --run B.run -m ndcg@10 -m map

prints, per run and metric, judged@k and the mean under each treatment of an unjudged
retrieved document (non-relevant, relevant at the top grade, condensed away), with the
interval of the mean over every labeling of those documents (grades 0 .. the top grade;
see :func:`harness.judgment_interval`); then, for each run against the first, the mean
difference under each treatment, its interval (worst, best) and whether the verdict holds
across it. Tables in Markdown; ``--csv-prefix P`` also writes ``P.runs.csv`` and
``P.pairs.csv``. Exit codes: 0, 2 for bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.metrics.unjudged import MAX_LABELINGS, MAX_ROWS

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness judgments", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--qrels", required=True, help="TREC qrels file (qid 0 docid label)")
    p.add_argument("--run", action="append", required=True, type=Path,
                   help="TREC run file; repeat for each run (the first is the baseline)")
    p.add_argument("-m", "--metric", action="append", required=True,
                   help="metric name (ndcg@10, trec_eval:map, ...); repeat for several")
    p.add_argument("--grade", type=float, default=None,
                   help="the highest grade an unjudged document may take (default: the "
                        "highest grade judged)")
    p.add_argument("--ties", action="store_true",
                   help="cover every order of tied documents too")
    p.add_argument("--max-labelings", type=int, default=MAX_LABELINGS,
                   help="labelings tried per query where no shortcut is known (default %(default)s)")
    p.add_argument("--max-rows", type=int, default=MAX_ROWS,
                   help="the most rows one query's labelings may take, each labeling a "
                        "pseudo-query (default %(default)s, about 0.6 GB); a query needing more "
                        "is refused")
    p.add_argument("--csv-prefix", type=Path, default=None,
                   help="also write the tables to PREFIX.runs.csv and PREFIX.pairs.csv")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from harness.errors import InputError

    prefix = args.csv_prefix
    if prefix is not None and not prefix.parent.is_dir():  # said before the work
        raise InputError(f"--csv-prefix {prefix}: the folder {prefix.parent} does not exist")
    names = [p.stem for p in args.run]
    if len(set(names)) != len(names):
        raise InputError(f"--run: two runs share a file name ({', '.join(names)}); the tables "
                         "name runs by it")
    from harness.data.trec import read_qrels, read_run
    from harness.metrics.unjudged.judgment_summary import judgment_tables, markdown
    from harness.metrics.vocabulary.definition import parse_metric

    metrics = [parse_metric(m) for m in args.metric]
    if args.grade is not None:
        metrics = [m.with_options(unjudged="relevant", unjudged_grade=args.grade)
                   for m in metrics]
    qrels = read_qrels(args.qrels)
    runs = {name: read_run(path) for name, path in zip(names, args.run)}
    per_run, pairs = judgment_tables(runs, qrels, metrics, ties=args.ties,
                                     max_labelings=args.max_labelings,
                                     max_rows=args.max_rows)
    print(markdown(per_run))
    if len(pairs):
        print()
        print(markdown(pairs, signed=True))
    if prefix is not None:
        per_run.to_csv(f"{prefix}.runs.csv", index=False)
        pairs.to_csv(f"{prefix}.pairs.csv", index=False)
        print(f"\ntables: {prefix}.runs.csv, {prefix}.pairs.csv")
    return 0
