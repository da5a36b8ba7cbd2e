"""Test data and per-query values from pytrec_eval, ir_measures and ranx (the libraries
that define the measure names of harness.metrics.vocabulary.names)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd

import harness


def make_data(seed: int, *, tied: bool, n_queries: int = 60, sizes: tuple[int, int] = (2, 15),
              binary: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run and qrels with judged zeros, unjudged retrieved documents, relevant documents
    the run missed, and a query with no relevant document. Query ids are digits (gdeval
    needs them so)."""
    rng = np.random.default_rng(seed)
    run, qrels = [], []
    for qi in range(n_queries):
        qid = str(100 + qi)
        n = int(rng.integers(*sizes))
        for d in rng.permutation(40)[:n]:
            score = float(rng.integers(0, 4)) / 2 if tied else float(rng.normal())
            run.append((qid, f"d{d:02d}", score))
            if rng.random() < 0.75:  # the rest stay unjudged
                label = int(rng.choice(4, p=[.45, .25, .2, .1]))
                qrels.append((qid, f"d{d:02d}", min(label, 1) if binary else label))
        for j in range(int(rng.integers(0, 3))):  # relevant, never retrieved
            qrels.append((qid, f"x{j}", 1 if binary else int(rng.integers(1, 4))))
        if qi % 7 == 0:  # judged but nothing relevant
            qrels = [r for r in qrels if r[0] != qid] + [(qid, "d00", 0)]
    return (pd.DataFrame(run, columns=["qid", "docid", "score"]),
            pd.DataFrame(qrels, columns=["qid", "docid", "label"]))


def as_dicts(run: pd.DataFrame, qrels: pd.DataFrame
             ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    rd: dict[str, dict[str, float]] = {}
    for q, d, s in run.itertuples(index=False):  # insertion order = the run's row order
        rd.setdefault(q, {})[d] = float(s)
    qd: dict[str, dict[str, int]] = {}
    for q, d, label in qrels.itertuples(index=False):
        qd.setdefault(q, {})[d] = int(label)
    return rd, qd


def ours(run: pd.DataFrame, qrels: pd.DataFrame, name: str) -> pd.Series:
    """Per-query values of the harness for a name (parsed by harness.parse_metric)."""
    metric = harness.parse_metric(name)
    out = harness.evaluate(run, qrels, [metric])
    return out[metric.display_name]


def pytrec(run: pd.DataFrame, qrels: pd.DataFrame, measure: str, key: str,
           level: int = 1) -> pd.Series:
    import pytrec_eval

    rd, qd = as_dicts(run, qrels)
    got = pytrec_eval.RelevanceEvaluator(qd, {measure}, relevance_level=level).evaluate(rd)
    return pd.Series({q: v[key] for q, v in got.items()}, dtype=float)


def ir_measures_values(run: pd.DataFrame, qrels: pd.DataFrame, measure: object) -> pd.Series:
    import ir_measures

    rd, qd = as_dicts(run, qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qd, rd)}
    return pd.Series(rows, dtype=float)


def ranx_values(run: pd.DataFrame, qrels: pd.DataFrame, names: Iterable[str]
                ) -> dict[str, pd.Series]:
    from ranx import Qrels, Run, evaluate

    rd, qd = as_dicts(run, qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety chatter
        q = Qrels.from_dict(qd)
        scores = evaluate(q, Run.from_dict(rd), list(names), return_mean=False,
                          make_comparable=True)
    if not isinstance(scores, dict):
        scores = {next(iter(names)): scores}
    return {n: pd.Series(v, index=list(q.keys()), dtype=float) for n, v in scores.items()}


def assert_same(mine: pd.Series, theirs: pd.Series, name: str, atol: float = 1e-12,
                min_common: int = 40) -> None:
    common = mine.index.intersection(theirs.index)
    assert len(common) >= min_common, (name, len(common))
    np.testing.assert_allclose(mine[common].to_numpy(), theirs[common].to_numpy(), rtol=0,
                               atol=atol, err_msg=name)


def every_tie_order(run: pd.DataFrame, qrels: pd.DataFrame
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every order of each query's tied documents as an untied run of its own, query id
    ``<qid>~<i>``, with the qrels copied to each: a library's mean over them is the exact
    expectation that ``ties='average'`` computes."""
    import itertools

    rows, judged = [], []
    by_qid = dict(tuple(qrels.groupby("qid", sort=False)))
    for q, g in run.groupby("qid", sort=False):
        g = g.sort_values("score", ascending=False, kind="stable")
        groups = [list(sub.docid) for _, sub in g.groupby("score", sort=False)]
        orders = itertools.product(*(itertools.permutations(grp) for grp in groups))
        for i, combo in enumerate(orders):
            flat = [d for grp in combo for d in grp]
            rows += [(f"{q}~{i}", d, float(len(flat) - r)) for r, d in enumerate(flat)]
            if q in by_qid:
                judged.append(by_qid[q].assign(qid=f"{q}~{i}"))
    return (pd.DataFrame(rows, columns=["qid", "docid", "score"]),
            pd.concat(judged, ignore_index=True))


def mean_over_orders(values: pd.Series) -> pd.Series:
    return values.groupby(values.index.str.split("~").str[0]).mean()
