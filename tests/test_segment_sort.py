"""The per-query sort of scores by values (harness.metrics.layout.segments.segment_sort): each
query's rows in the order numpy's stable argsort gives them, query by query, whatever the
keys: ties, -0.0 and 0.0, infinities, keys one ulp apart (the rows whose packed integers
cannot tell them apart are sorted again), float32 scores, long and empty queries."""

from __future__ import annotations

import numpy as np
import pytest

from harness.metrics.layout.segments import Layout, segment_argsort, segment_sort


def _expected(starts: np.ndarray, n: np.ndarray, key: np.ndarray) -> np.ndarray:
    out = np.empty(int(n.sum()), dtype=np.int64)
    for s, c in zip(starts, n):
        out[s:s + c] = s + np.argsort(key[s:s + c], kind="stable")
    return out


def _keys(kind: str, total: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "few values":
        return rng.integers(-3, 3, total).astype(float)
    if kind == "normal":
        return rng.normal(size=total)
    if kind == "float32":
        return rng.normal(size=total).astype(np.float32).astype(np.float64)
    if kind == "one ulp apart":  # equal in all but the lowest bits: sorted again
        return np.nextafter(np.full(total, 0.5), rng.integers(0, 2, total).astype(float))
    base = rng.choice([0.1, 1.0, -2.0, 0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324], total)
    steps = rng.integers(0, 4, total) * rng.integers(0, 2, total)
    near = base + steps * np.spacing(base)
    return np.where(np.isfinite(near), near, base)  # "specials": signed zeros, infinities


@pytest.mark.parametrize("kind", ["few values", "normal", "float32", "one ulp apart",
                                  "specials"])
@pytest.mark.parametrize("longest", [3, 40, 300, 5000])
def test_segment_sort_is_the_stable_argsort_of_each_query(kind: str, longest: int) -> None:
    rng = np.random.default_rng(longest)
    n = rng.integers(0, longest, 30)
    n[::7] = 0  # empty queries between the others
    starts = np.cumsum(n) - n
    key = _keys(kind, int(n.sum()), rng)
    want = _expected(starts, n, key)
    layout = Layout.of(starts, n)
    perm, ranked = segment_sort(layout, key)
    assert np.array_equal(perm, want)
    assert np.array_equal(ranked, key[want])
    assert np.array_equal(segment_argsort(layout, [key], stable=False), want)


def test_signed_zeros_tie_in_row_order() -> None:
    key = np.array([0.0, -0.0, 1.0, -0.0, 0.0])
    perm, _ = segment_sort(Layout.of(np.array([0]), np.array([5])), key)
    assert perm.tolist() == [0, 1, 3, 4, 2]


@pytest.mark.parametrize("with_qrels", [True, False])
def test_ties_input_reads_the_labels_joined_after_the_ranking(with_qrels: bool) -> None:
    """ties=input reuses the score order (stable) and its labels; with qrels the rankings
    are made before the labels are joined, so the labels are read when a measure asks.
    Two tied documents, the second relevant: input order puts it at rank 2, so nDCG is
    1/log2(3) (worked by hand); averaged over both orders, (1 + 1/log2(3)) / 2."""
    import math

    import pandas as pd

    import harness

    run = pd.DataFrame({"qid": ["q0", "q0"], "docid": ["d1", "d2"], "score": [0.0, 0.0]})
    qrels = pd.DataFrame({"qid": ["q0"], "docid": ["d2"], "label": [1]})
    if not with_qrels:
        run, qrels = run.assign(label=[0, 1]), None
    out = harness.evaluate(run, qrels, ["ndcg(ties=input)", "ndcg"])
    assert out["nDCG(ties=input)"].iloc[0] == pytest.approx(1 / math.log2(3), abs=1e-15)
    assert out["nDCG"].iloc[0] == pytest.approx((1 + 1 / math.log2(3)) / 2, abs=1e-15)
