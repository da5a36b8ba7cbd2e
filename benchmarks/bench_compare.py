#!/usr/bin/env python
"""``harness.compare`` against ranx's ``compare`` on many runs, and the CAsT comparison.

Run from the repository root::

    .venv/bin/python benchmarks/bench_compare.py                     # all items, 3 rounds
    .venv/bin/python benchmarks/bench_compare.py --items student --runs 100 --rounds 5
    .venv/bin/python benchmarks/bench_compare.py --items fisher --fisher-runs 100 --rounds 1
    .venv/bin/python benchmarks/bench_compare.py --items cast

Both tools run in this one process, in interleaved rounds (A B A B ...), each timed with
``time.perf_counter`` around one call that starts from the same inputs: the qrels and the
runs as each tool takes them (pandas DataFrames for the harness; ranx ``Qrels``/``Run``
objects, built once before the rounds, their building time printed but not counted). Each
call evaluates every run and tests every pair of runs on every measure. Per item the script
prints each tool's median over the rounds with [min, max], the ratio ranx / harness per
round (median [min, max]), the target, and each tool's first (cold) call, which is not a
round: ranx's first call compiles its numba kernels, the harness's imports scipy's tests.

Data (``--runs`` runs x ``--queries`` queries, seeded): qids of 14 characters
(``topic-00000042``), docids of 16 (``clueweb-00001234``); per query a pool of 300
documents of which 60 are judged (grades 0-3; every 50th query has no relevant document);
each run retrieves 100 documents of the pool, scored ``noise + skill x grade`` with its own
skill and rounded to 1 decimal (so many documents tie within a query).

Items (``--items``, default all):

- ``student``: ranx's default test, the paired t-test (``stat_test="student"``) against
  ``harness.compare(..., test="ttest")``; measures ``ndcg@10``, ``map@100``, ``mrr`` in
  ranx and ``nDCG@10(gain=linear)``, ``AP@100``, ``RR`` in the harness: the same measures,
  whose values differ only where documents tie (ranx orders tied documents as its
  unstable quicksort leaves them, the harness by its documented tie rule); the largest
  difference of the means is printed. ``--ranx-definitions`` uses ``ranx:ndcg@10``,
  ``ranx:map@100``, ``ranx:mrr`` instead, ranx's tie order reproduced (the means equal
  ranx's to 1e-15), at the cost of a Python quicksort per query and run. Target: ranx /
  harness >= 3 at 100 runs x 1,000 queries.
- ``fisher``: ranx's Fisher randomization test with ``--permutations`` (1,000) against the
  harness's permutation test with as many resamples, on ``--fisher-runs`` runs (ranx takes
  about 40 ms per test here, and tests every ordered pair on every measure: 100 runs are
  29,700 tests, some 20 minutes a call; the default is 20 runs).
- ``cast``: TREC CAsT 2021 (BM25 against ANCE from the shared data folder,
  ``$HARNESS_SHARED_DATA``, else ``<repo>/../shared/data``), 4 measures, the permutation
  test with 10,000 resamples, warm (after a first call). Target <= 1 s.

The work differs in two ways, said here: ranx tests each pair twice (as (a, b) and as
(b, a); ``compute_statistical_significance``) where the harness tests it once (the answer is
the same: one p-value per pair and measure); the harness also corrects the p-values (Holm).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HARNESS_MEASURES = ["nDCG@10(gain=linear)", "AP@100", "RR"]
RANX_DEFINITIONS = ["ranx:ndcg@10", "ranx:map@100", "ranx:mrr"]
RANX_MEASURES = ["ndcg@10", "map@100", "mrr"]
CAST_MEASURES = ["trec_eval:ndcg", "trec_eval:map", "trec_eval:recip_rank", "trec_eval:P.5"]
TARGET_RATIO, CAST_SECONDS = 3.0, 1.0


def make_data(n_runs: int, n_queries: int, seed: int = 7, depth: int = 100, pool: int = 300,
              judged: int = 60) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The qrels and ``n_runs`` runs described in the module's docstring."""
    rng = np.random.default_rng(seed)
    qids = np.array([f"topic-{q:08d}" for q in range(n_queries)], dtype=object)
    docs = np.array([f"clueweb-{d:08d}" for d in range(pool * 50)], dtype=object)
    doc_of = (rng.integers(0, len(docs) - pool, n_queries)[:, None] + np.arange(pool))
    grades = rng.choice([0, 0, 0, 1, 1, 2, 3], size=(n_queries, pool))
    grades[np.arange(n_queries) % 50 == 49] = 0  # queries without a relevant document
    is_judged = np.zeros((n_queries, pool), dtype=bool)
    for q in range(n_queries):
        is_judged[q, rng.choice(pool, judged, replace=False)] = True
    grades[~is_judged] = 0
    jq, jd = np.nonzero(is_judged)
    qrels = pd.DataFrame({"qid": qids[jq], "docid": docs[doc_of[jq, jd]],
                          "label": grades[jq, jd].astype(np.int64)})
    runs = {}
    for r in range(n_runs):
        scores = rng.normal(size=(n_queries, pool)) + rng.uniform(0, 1.0) * grades
        top = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
        q = np.repeat(np.arange(n_queries), depth)
        runs[f"system-run-{r:04d}"] = pd.DataFrame({
            "qid": qids[q], "docid": docs[doc_of[q, top.ravel()]],
            "score": np.round(scores[q, top.ravel()], 1)})
    return qrels, runs


def to_ranx(qrels: pd.DataFrame, runs: dict[str, pd.DataFrame]) -> tuple[Any, list[Any]]:
    from ranx import Qrels, Run

    def plain(frame: pd.DataFrame) -> pd.DataFrame:  # ranx takes object, not str, dtype
        return frame.astype({"qid": object, "docid": object})

    rq = Qrels.from_df(plain(qrels), q_id_col="qid", doc_id_col="docid", score_col="label")
    rr = [Run.from_df(plain(f), q_id_col="qid", doc_id_col="docid", score_col="score",
                      name=name) for name, f in runs.items()]
    return rq, rr


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def spread(values: list[float], unit: str = " s") -> str:
    return (f"{statistics.median(values):.3g}{unit} [{min(values):.3g}-{max(values):.3g}]")


def rounds(a: Callable[[], Any], b: Callable[[], Any], n: int
           ) -> tuple[list[float], list[float], tuple[float, float], tuple[Any, Any]]:
    """First (cold) calls of a then b, then ``n`` interleaved rounds a b a b ...: the times
    of a, of b, the cold times and the last results."""
    cold_a, out_a = timed(a)
    cold_b, out_b = timed(b)
    ta, tb = [], []
    for i in range(n):
        sa, out_a = timed(a)
        sb, out_b = timed(b)
        ta.append(sa)
        tb.append(sb)
        print(f"  round {i + 1}: harness {sa:.2f} s, ranx {sb:.2f} s, ratio {sb / sa:.2f} "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    return ta, tb, (cold_a, cold_b), (out_a, out_b)


def versus_ranx(test: str, n_runs: int, args: argparse.Namespace) -> str:
    from ranx import compare as ranx_compare

    import harness

    qrels, runs = make_data(n_runs, args.queries)
    building, (rq, rr) = timed(lambda: to_ranx(qrels, runs))
    ours = {"student": "ttest", "fisher": "permutation"}[test]
    print(f"{test}: {n_runs} runs x {args.queries} queries "
          f"({sum(map(len, runs.values())):,} run lines); ranx's Qrels/Run built in "
          f"{building:.1f} s (not counted)", flush=True)
    measures = RANX_DEFINITIONS if args.ranx_definitions else HARNESS_MEASURES
    ta, tb, cold, (c, report) = rounds(
        lambda: harness.compare(qrels, runs, measures, test=ours,
                                resamples=args.permutations, alpha=0.05),
        lambda: ranx_compare(rq, rr, RANX_MEASURES, stat_test=test,
                             n_permutations=args.permutations, max_p=0.05), args.rounds)
    gap = max(abs(c.table.loc[name, (harness.parse_metric(h).display_name, "mean")]
                  - report.results[name][r]) for name in runs
              for h, r in zip(measures, RANX_MEASURES))
    ratios = [b / a for a, b in zip(ta, tb)]
    met = statistics.median(ratios) >= TARGET_RATIO
    print(f"  harness {spread(ta)}, ranx {spread(tb)}; ranx / harness {spread(ratios, '')} "
          f"(target >= {TARGET_RATIO:g}: {'MET' if met else 'NOT MET'}); first calls: "
          f"harness {cold[0]:.2f} s, ranx {cold[1]:.2f} s; largest difference of the "
          f"means {gap:.1e}")
    how = ", ranx's definitions" if args.ranx_definitions else ""
    return (f"| {test} ({ours}{how}), {n_runs} runs x {args.queries} queries | {spread(ta)} | "
            f"{spread(tb)} | {spread(ratios, '')} | >= {TARGET_RATIO:g} | "
            f"{'yes' if met else 'no'} |")


def cast(args: argparse.Namespace) -> str:
    import harness

    folder = Path(os.environ.get("HARNESS_SHARED_DATA", ROOT.parent / "shared" / "data"))
    folder = folder / "trec_cast_2021"
    if not folder.is_dir():
        raise SystemExit(f"cast: no shared data at {folder} (set $HARNESS_SHARED_DATA)")
    qrels = folder / "trec-cast-qrels-docs.2021.qrel"
    runs = [folder / "org_manual_bm25.run", folder / "org_manual_ance.run"]

    def call() -> Any:
        return harness.compare(qrels, runs, CAST_MEASURES, baseline="org_manual_bm25",
                               test="permutation", resamples=10_000)

    cold, _ = timed(call)
    times = []
    for _ in range(args.rounds):
        times.append(timed(call)[0])
    met = statistics.median(times) <= CAST_SECONDS
    print(f"cast: 2 runs x 4 measures, 10,000 permutations: {spread(times)} warm (first "
          f"call {cold:.2f} s); target <= {CAST_SECONDS:g} s: {'MET' if met else 'NOT MET'}")
    return (f"| CAsT 2021, 2 runs x 4 measures, 10,000 permutations, warm | {spread(times)} "
            f"| - | - | <= {CAST_SECONDS:g} s | {'yes' if met else 'no'} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", nargs="+", default=["student", "fisher", "cast"],
                        choices=("student", "fisher", "cast"))
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--fisher-runs", type=int, default=20)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranx-definitions", action="store_true",
                        help="the harness computes ranx:ndcg@10, ranx:map@100, ranx:mrr")
    args = parser.parse_args()
    start = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()
    rows = []
    for item in args.items:
        if item == "cast":
            rows.append(cast(args))
        else:
            rows.append(versus_ranx(item, args.runs if item == "student" else
                                    args.fisher_runs, args))
    print(f"\n{start}, {os.cpu_count()} cores, load average {load[0]:.1f} at the start and "
          f"{os.getloadavg()[0]:.1f} at the end; {args.rounds} rounds\n")
    print("| work | harness | ranx | ranx / harness | target | met? |\n"
          "|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
