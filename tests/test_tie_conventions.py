"""Tie rules checked statistically and against the libraries that define them."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import harness

N_QUERIES = 4000
DOCS = ["d0", "d1", "d2", "d3"]


def _tied_run(labels: list[int], seed_rows: int = 0) -> pd.DataFrame:
    qids = np.repeat([f"query-{i:05d}" for i in range(N_QUERIES)], len(DOCS))
    run = pd.DataFrame({"qid": qids, "docid": np.tile(DOCS, N_QUERIES), "score": 1.0,
                        "label": np.tile(labels, N_QUERIES)})
    if seed_rows:
        run = run.sample(frac=1, random_state=seed_rows).reset_index(drop=True)
    return run


def _orders(seed: int, shuffled_rows: int = 0) -> pd.Series:
    """Per query, the order ties='random' gave its four tied documents, read through the
    public API: with only document j relevant, RR is 1 / (rank of j)."""
    ranks = {}
    for j, doc in enumerate(DOCS):
        labels = [int(i == j) for i in range(len(DOCS))]
        out = harness.evaluate(_tied_run(labels, shuffled_rows),
                               metrics=[harness.Metric("rr", ties="random", seed=seed)])
        ranks[doc] = (1 / out.iloc[:, -1]).round().astype(int)
    frame = pd.DataFrame(ranks)
    return frame.apply(lambda r: tuple(r.sort_values().index), axis=1)


@pytest.mark.parametrize("seed", [0, 7])
def test_random_ties_are_a_uniform_shuffle(seed: int) -> None:
    orders = _orders(seed)
    counts = orders.value_counts().reindex(list(itertools.permutations(DOCS)), fill_value=0)
    assert (counts > 0).all()  # all 24 orders occur (the old key reached 8)
    chi2 = stats.chisquare(counts.to_numpy())
    assert chi2.pvalue > 1e-4, chi2  # the old key: chi2 ~ 8,000
    # the order depends on (seed, qid, docid) only: shuffling the rows changes nothing
    assert orders.equals(_orders(seed, shuffled_rows=3))


def test_random_ties_average_to_the_exact_expectation() -> None:
    """Labels 3, 0, 2, 0 all tied: E[nDCG@1] over uniform orders is (7 + 3) / 4 / 7 = 5/14
    (gains 2^3-1 and 2^2-1, each first with probability 1/4, over IDCG@1 = 7), which
    ties='average' computes exactly (McSherry & Najork); the seeded shuffle's mean over
    4,000 queries must fall within 4 standard errors of it (the old key gave 0.550)."""
    run = _tied_run([3, 0, 2, 0])
    out = harness.evaluate(run, metrics=[harness.Metric("ndcg", k=1, ties="random"),
                                         harness.Metric("ndcg", k=1)])
    shuffled, exact = out.iloc[:, -2], out.iloc[:, -1]
    assert exact.iloc[0] == pytest.approx((7 + 3) / 4 / 7)  # (2^3-1 + 2^2-1)/4 over IDCG 7
    se = shuffled.std(ddof=1) / np.sqrt(len(shuffled))
    assert abs(shuffled.mean() - exact.iloc[0]) < 4 * se
