#!/usr/bin/env python
"""The sklearn cross-check and the study summaries against the evaluation they accompany.

Run from the repository root::

    .venv/bin/python benchmarks/bench_check.py --rounds 5

For 400 and 20,000 queries of the default synthetic study (10-60 documents a query, scores
of one feature rounded to one decimal, so queries tie), it times side by side, interleaved
in each round:

* ``harness.evaluate`` of the default 29 variants, and the sklearn cross-check of the same
  variants (``check_against_sklearn`` with the app's defaults ``max_queries=2000``,
  ``max_tied_queries=50``). Target: the
  check costs at most 3x the evaluation it checks;
* the summaries of 5 rankers x 29 variants: ``summarize_study`` (one paired resample matrix,
  2,000 resamples) against one ``scipy.stats.bootstrap`` call per (ranker, variant), the
  way summaries were computed before. The scipy side runs only at 400 queries unless
  ``--scipy-large`` is given (it takes about a minute at 20,000).

Prints the median and min-max of each time and of the ratio over the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.app.config import MetricGrid
from harness.app.study import build_metrics
from harness.datasets.synthetic import make_synthetic
from harness.metrics import evaluate
from harness.metrics.sklearn_check import check_against_sklearn
from harness.reporting.summary import summarize_study


def _timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"


def _ratio(a: list[float], b: list[float]) -> tuple[float, float, float]:
    r = [x / y for x, y in zip(a, b)]
    return statistics.median(r), min(r), max(r)


def _scipy_summaries(tables: dict, resamples: int) -> None:
    from scipy import stats

    for table in tables.values():
        for column in [c for c in table.columns if c not in ("n_docs", "n_judged",
                                                             "n_relevant")]:
            v = table[column].dropna().to_numpy()
            if len(v) > 1 and not np.all(v == v[0]):
                stats.bootstrap((v,), np.mean, n_resamples=resamples, method="percentile",
                                rng=np.random.default_rng(0), vectorized=True,
                                batch=max(1, min(resamples, 4_000_000 // len(v))))


def bench(n_queries: int, rounds: int, scipy_too: bool) -> None:
    data = make_synthetic(n_queries=n_queries, n_train_queries=10, round_features=1, seed=0)
    metrics = build_metrics(vars(MetricGrid()) | {"extra": [
        "ap@10", "rr", "precision@10", "recall@10", "err@10"]})
    rng = np.random.default_rng(1)
    test = data.test
    runs = {f"ranker-{i}": test.assign(score=np.round(
        test["label"] * (0.2 * i) + rng.normal(size=len(test)), 1))[["qid", "docid", "score"]]
        for i in range(5)}
    run = runs["ranker-2"]
    per_query = evaluate(run, data.qrels, metrics)
    tables = {name: evaluate(r, data.qrels, metrics) for name, r in runs.items()}
    ev, ch, new, old = [], [], [], []
    for _ in range(rounds):
        ev.append(_timed(lambda: evaluate(run, data.qrels, metrics)))
        ch.append(_timed(lambda: check_against_sklearn(run, data.qrels, metrics, per_query,
                                                        max_queries=2_000,
                                                        max_tied_queries=50)))
        new.append(_timed(lambda: summarize_study(tables, resamples=2000,
                                                  bootstrap_max_queries=None)))
        if scipy_too:
            old.append(_timed(lambda: _scipy_summaries(tables, 2000)))
    print(f"\n{n_queries} queries, {len(metrics)} variants, {len(run)} rows, {rounds} rounds")
    print(f"  evaluate            {_spread(ev)}")
    print(f"  sklearn check       {_spread(ch)}")
    median, low, high = _ratio(ch, ev)
    print(f"  target: check <= 3x evaluate: {'MET' if median <= 3 else 'NOT MET'} "
          f"(median {median:.2f}x, min {low:.2f}, max {high:.2f})")
    print(f"  summaries, 5 rankers x {len(metrics)} variants, paired matrix: {_spread(new)}")
    if old:
        median, low, high = _ratio(old, new)
        print(f"  summaries, one scipy.stats.bootstrap per (ranker, variant): {_spread(old)}"
              f"\n  speed-up of the paired matrix: {median:.1f}x (min {low:.1f}, max {high:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, nargs="+", default=[400, 20_000])
    parser.add_argument("--scipy-large", action="store_true",
                        help="time the scipy summaries above 400 queries too (slow)")
    args = parser.parse_args()
    for n in args.queries:
        bench(n, args.rounds, scipy_too=n <= 400 or args.scipy_large)


if __name__ == "__main__":
    main()
