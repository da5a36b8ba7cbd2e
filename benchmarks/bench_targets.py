#!/usr/bin/env python
"""The engine's speed targets, each a ratio measured side by side in one process.

Run from the repository root::

    .venv/bin/python benchmarks/bench_targets.py --rounds 7

Data: ``--queries`` queries (default 10,000) of 20-200 documents (about 1.1M rows), graded
labels 0-4, scores ``round(0.3 * label + N(0, 1), 2)`` (about 15% of rows tie), 2% of the
queries without any relevant document, ids as users have them: qids ``"query-0001234"``
and docids of 10 characters or more (``"doc-000123"``), as pandas' default ``str`` dtype.

Each round runs every contender once, in turn (A B C A B C ...); a ratio is computed per
round, and the median ratio with its min-max over the rounds is printed:

1. tie-averaged nDCG@10 (linear gain, retrieved ideal): ``harness.evaluate`` against
   sklearn's ``ndcg_score(ignore_ties=False)`` (padding to dense included) and against
   ``pytrec_eval`` (building its dicts included). Targets: >= 5x and >= 10x;
2. the trec_eval measure set (ndcg_cut 5/10/20, ndcg, map, recip_rank, P_10, recall_100)
   under ``convention="trec_eval"`` with a qrels table, against pytrec_eval. Target >= 4x;
3. string docids against integer docids (same data). Target <= 1.3x;
4. ``ties="docid"`` against ``ties="average"``. Target <= 1.3x.

``--first-call`` also times one call of 1. and 2. in a fresh process (imports included), as a
command-line user pays it.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
for path in (str(ROOT), str(ROOT / "benchmarks")):
    if path not in sys.path:
        sys.path.insert(0, path)

from bench_engine import run_sklearn

import harness

NDCG10 = harness.Metric("ndcg", k=10, gain="linear", ideal="retrieved", ties="average")
NDCG10_DOCID = harness.Metric("ndcg", k=10, gain="linear", ideal="retrieved", ties="docid")
TREC_SET = [harness.Metric(name, k=k, convention="trec_eval") for name, k in (
    ("ndcg", 5), ("ndcg", 10), ("ndcg", 20), ("ndcg", None), ("ap", None), ("rr", None),
    ("precision", 10), ("recall", 100))]
PYTREC_SET = {"ndcg_cut.5,10,20", "ndcg", "map", "recip_rank", "P.10", "recall.100"}


def make_data(n_queries: int, seed: int = 7) -> dict[str, Any]:
    """The labelled run with string and integer docids, and run + qrels tables."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(20, 201, n_queries)
    q = np.repeat(np.arange(n_queries), sizes)
    n = len(q)
    label = rng.choice(5, size=n, p=[0.5, 0.25, 0.15, 0.07, 0.03])
    label[np.isin(q, rng.choice(n_queries, n_queries // 50, replace=False))] = 0  # empty
    score = np.round(0.3 * label + rng.standard_normal(n), 2)
    position = np.arange(n) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    docnum = q.astype(np.int64) * 1000 + rng.permutation(1000)[position]
    qids = np.array([f"query-{i:07d}" for i in range(n_queries)], dtype=object)[q]
    docs = pd.Series(docnum).map("doc-{:06d}".format).astype("str")
    run = pd.DataFrame({"qid": pd.array(qids, dtype="str"), "docid": docs, "score": score,
                        "label": label})
    return {"run": run, "int_run": run.assign(docid=docnum),
            "trec_run": run[["qid", "docid", "score"]],
            "qrels": run.loc[label > 0, ["qid", "docid", "label"]].reset_index(drop=True)}


def pytrec_dicts(run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[dict, dict]:
    qrel: dict[str, dict[str, int]] = {}
    for qid, doc, lab in zip(qrels["qid"].tolist(), qrels["docid"].tolist(),
                             qrels["label"].tolist()):
        qrel.setdefault(qid, {})[doc] = int(lab)
    ranked: dict[str, dict[str, float]] = {}
    for qid, doc, sc in zip(run["qid"].tolist(), run["docid"].tolist(),
                            run["score"].tolist()):
        ranked.setdefault(qid, {})[doc] = sc
    return qrel, ranked


def run_pytrec(run: pd.DataFrame, qrels: pd.DataFrame, measures: set[str]) -> dict:
    import pytrec_eval

    qrel, ranked = pytrec_dicts(run, qrels)
    return pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(ranked)


def interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return times


def report(label: str, times: dict[str, list[float]], a: str, b: str, target: float,
           at_least: bool) -> None:
    ratios = [x / y for x, y in zip(times[b], times[a])] if at_least else \
        [x / y for x, y in zip(times[a], times[b])]
    med = statistics.median(ratios)
    ok = med >= target if at_least else med <= target
    print(f"target: {label} {'>=' if at_least else '<='} {target:g}x: "
          f"{'MET' if ok else 'NOT MET'} (median {med:.2f}x, min {min(ratios):.2f}, "
          f"max {max(ratios):.2f}; {a} {statistics.median(times[a]):.3f} s, "
          f"{b} {statistics.median(times[b]):.3f} s)")


def first_call(n_queries: int) -> None:
    code = (f"import sys, time; t = time.perf_counter(); sys.path[:0] = [{str(ROOT)!r}, "
            f"{str(ROOT / 'benchmarks')!r}]; import bench_targets as b; "
            f"d = b.make_data({n_queries}); t0 = time.perf_counter(); import harness; "
            "harness.evaluate(d['run'], metrics=[b.NDCG10]); t1 = time.perf_counter(); "
            "harness.evaluate(d['trec_run'], d['qrels'], metrics=b.TREC_SET); "
            "t2 = time.perf_counter(); "
            "print(f'first call in a fresh process: nDCG@10 {t1 - t0:.3f} s, "
            "trec_eval set {t2 - t1:.3f} s')")
    print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--first-call", action="store_true")
    args = parser.parse_args()
    d = make_data(args.queries)
    print(f"{args.queries} queries, {len(d['run'])} rows, "
          f"{d['run']['docid'].str.len().min()}+ character docids, {args.rounds} rounds")
    pq = harness.evaluate(d["run"], metrics=[NDCG10])
    from sklearn.metrics._ranking import _ndcg_sample_scores  # noqa: F401 - import cost

    times = interleaved({
        "harness": lambda: harness.evaluate(d["run"], metrics=[NDCG10]),
        "sklearn": lambda: run_sklearn(d["run"]),
        "pytrec_eval": lambda: run_pytrec(d["run"][["qid", "docid", "score"]], d["qrels"],
                                          {"ndcg_cut.10"}),
        "harness int docids": lambda: harness.evaluate(d["int_run"], metrics=[NDCG10]),
        "harness ties=docid": lambda: harness.evaluate(d["run"], metrics=[NDCG10_DOCID]),
        "harness trec_eval set": lambda: harness.evaluate(d["trec_run"], d["qrels"],
                                                          metrics=TREC_SET),
        "pytrec_eval set": lambda: run_pytrec(d["trec_run"], d["qrels"], PYTREC_SET),
    }, args.rounds)
    report("nDCG@10 vs sklearn", times, "harness", "sklearn", 5, True)
    report("nDCG@10 vs pytrec_eval", times, "harness", "pytrec_eval", 10, True)
    report("trec_eval set vs pytrec_eval", times, "harness trec_eval set", "pytrec_eval set",
           4, True)
    report("string / integer docids", times, "harness", "harness int docids", 1.3, False)
    report("ties=docid / ties=average", times, "harness ties=docid", "harness", 1.3, False)
    ours = harness.evaluate(d["trec_run"], d["qrels"], metrics=TREC_SET)
    theirs = run_pytrec(d["trec_run"], d["qrels"], PYTREC_SET)
    diff = max(abs(ours.at[q, TREC_SET[1].display_name] - theirs[q]["ndcg_cut_10"])
               for q in theirs)
    print(f"agreement with pytrec_eval, ndcg_cut_10 per query: max |diff| {diff:.1e}; "
          f"nDCG@10 mean {pq.iloc[:, -1].mean():.6f}")
    if args.first_call:
        first_call(args.queries)


if __name__ == "__main__":
    main()
