"""Property tests: per query, the engine agrees with sklearn's ndcg_score / dcg_score.

sklearn is the independent reference: each query's list is passed to sklearn on its own
(``[[...]]``), so the comparison is per query, not of means. sklearn uses ``y_true`` as the
gain (linear), the retrieved list as the ideal, tie-averaging when ``ignore_ties=False`` and
0 for an all-zero query; ``Metric(convention="sklearn")`` names the same choices.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import dcg_score, ndcg_score

from harness import Metric, evaluate, evaluate_dense

TOL = 1e-9
SETTINGS = settings(max_examples=200, deadline=None)
KS = (None, 1, 3, 10)

# -- data ------------------------------------------------------------------------------------

_TIED_SCORES = st.sampled_from([0.0, 0.5, 1.0, 2.0])


def _queries(draw: st.DrawFn, scores: Callable[[int], st.SearchStrategy[list[float]]]
             ) -> list[tuple[list[int], list[float]]]:
    """1-8 queries of 2-12 documents, labels 0-4, ``scores(n)`` drawing a query's scores."""
    out = []
    for _ in range(draw(st.integers(1, 8))):
        n = draw(st.integers(2, 12))
        labels = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
        out.append((labels, draw(scores(n))))
    return out


@st.composite
def tied_queries(draw: st.DrawFn) -> list[tuple[list[int], list[float]]]:
    """Scores from a small set: ties likely."""
    return _queries(draw, lambda n: st.lists(_TIED_SCORES, min_size=n, max_size=n))


@st.composite
def untied_queries(draw: st.DrawFn) -> list[tuple[list[int], list[float]]]:
    """Every query's scores are distinct floats, exact in float32 (ties='docid' compares
    scores as float32, as trec_eval does, so float64 scores closer than that tie there)."""
    return _queries(draw, lambda n: st.lists(
        st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32),
        min_size=n, max_size=n, unique=True))


def _frame(queries: list[tuple[list[int], list[float]]]) -> pd.DataFrame:
    rows = [
        (f"q{qi}", f"d{j}", float(s), float(lab))
        for qi, (labels, scores) in enumerate(queries)
        for j, (lab, s) in enumerate(zip(labels, scores))
    ]
    return pd.DataFrame(rows, columns=["qid", "docid", "score", "label"])


def _engine(queries: list[tuple[list[int], list[float]]], metric: Metric) -> np.ndarray:
    out = evaluate(_frame(queries), None, [metric])
    assert list(out.index) == [f"q{i}" for i in range(len(queries))]
    return out[metric.display_name].to_numpy(dtype=np.float64)


def _sk(fn, y_true: list[float], y_score: list[float], **kw) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns about all-zero y_true rows
        return float(fn([y_true], [y_score], **kw))


def _exp2(labels: list[int]) -> list[float]:
    return [2.0 ** lab - 1.0 for lab in labels]


# -- nDCG ------------------------------------------------------------------------------------

def _gains_for_sklearn(gain: str, labels: list[int]) -> list[float]:
    """sklearn takes y_true as the gain: the labels for linear gain, 2**rel - 1 for exp2."""
    return [float(x) for x in labels] if gain == "linear" else _exp2(labels)


@SETTINGS
@given(tied_queries(), st.sampled_from(KS), st.sampled_from(["linear", "exp2"]))
def test_ndcg_tie_average_matches_sklearn(queries, k, gain) -> None:
    m = Metric("ndcg", k=k, gain=gain, ideal="retrieved", ties="average")
    got = _engine(queries, m)
    want = [_sk(ndcg_score, _gains_for_sklearn(gain, lab), s, k=k, ignore_ties=False)
            for lab, s in queries]
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)


def test_sklearn_convention_is_the_compared_definition() -> None:
    # the preset names exactly the options the property tests compare with sklearn
    for k in KS:
        assert Metric("ndcg", k=k, convention="sklearn") == Metric(
            "ndcg", k=k, gain="linear", ideal="retrieved", ties="average", empty="zero")


@SETTINGS
@given(untied_queries(), st.sampled_from(KS), st.sampled_from(["linear", "exp2"]))
def test_without_ties_every_tie_mode_matches_sklearn_ignore_ties(queries, k, gain) -> None:
    # with distinct scores every tie rule gives the one order: ties="input" is sklearn's
    # ignore_ties=True, and so are the others
    want = [_sk(ndcg_score, _gains_for_sklearn(gain, lab), s, k=k, ignore_ties=True)
            for lab, s in queries]
    want_dcg = [_sk(dcg_score, _gains_for_sklearn(gain, lab), s, k=k, ignore_ties=True)
                for lab, s in queries]
    ties = ("input", "average", "docid", "random", "optimistic", "pessimistic")
    metrics = [Metric("ndcg", k=k, gain=gain, ideal="retrieved", ties=t) for t in ties]
    dcgs = [Metric("dcg", k=k, gain=gain, ties=t) for t in ties]
    out = evaluate(_frame(queries), None, metrics + dcgs)
    for m in metrics:
        np.testing.assert_allclose(out[m.display_name].to_numpy(), want, rtol=0, atol=TOL,
                                   err_msg=m.display_name)
    for m in dcgs:
        np.testing.assert_allclose(out[m.display_name].to_numpy(), want_dcg, rtol=0,
                                   atol=TOL * max(1.0, max(map(abs, want_dcg))),
                                   err_msg=m.display_name)


@SETTINGS
@given(tied_queries(), st.sampled_from(KS))
def test_dense_input_matches_sklearn_batch(queries, k) -> None:
    # equal-length lists as a 2-D batch: sklearn's mean equals the mean of our rows, and
    # each of our rows equals sklearn on that row alone
    n = min(len(lab) for lab, _ in queries)
    y_true = np.array([lab[:n] for lab, _ in queries], dtype=float)
    y_score = np.array([s[:n] for _, s in queries], dtype=float)
    m = Metric("ndcg", k=k, gain="linear", ideal="retrieved")
    got = evaluate_dense(y_true, y_score, m)[m.display_name].to_numpy()
    want = [_sk(ndcg_score, list(t), list(s), k=k) for t, s in zip(y_true, y_score)]
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = ndcg_score(y_true, y_score, k=k)
    assert got.mean() == pytest.approx(batch, abs=TOL, rel=0)


def test_all_zero_query_is_zero_like_sklearn() -> None:
    queries = [([0, 0, 0], [3.0, 2.0, 1.0]), ([1, 0, 0], [1.0, 1.0, 0.0])]
    m = Metric("ndcg", gain="linear", ideal="retrieved", empty="zero")
    got = _engine(queries, m)
    assert _sk(ndcg_score, [0, 0, 0], [3.0, 2.0, 1.0]) == 0.0
    # second query: docs 0 and 1 tie; expected gain at ranks 1 and 2 is 1/2 each:
    # (1/2 + 1/2 / log2(3)) / 1
    np.testing.assert_allclose(got, [0.0, 0.5 + 0.5 / np.log2(3.0)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, [_sk(ndcg_score, lab, s) for lab, s in queries],
                               rtol=0, atol=TOL)


# -- DCG -------------------------------------------------------------------------------------

@SETTINGS
@given(tied_queries(), st.sampled_from(KS), st.sampled_from(["linear", "exp2"]),
       st.sampled_from([2, 10, 3, 1.5]))
def test_dcg_tie_average_matches_sklearn_dcg_score(queries, k, gain, base) -> None:
    # sklearn's log_base=b is discount "log<b>" (1 / log_b(rank + 1)); b=2 is "log2"
    m = Metric("dcg", k=k, gain=gain, discount=f"log{base}", ties="average")
    got = _engine(queries, m)
    want = [_sk(dcg_score, _gains_for_sklearn(gain, lab), s, k=k, log_base=base,
                ignore_ties=False)
            for lab, s in queries]
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)


def test_dcg_log10_by_hand() -> None:
    # labels in ranked order 3, 0, 2: 3/log10(2) + 0 + 2/log10(4)
    run = pd.DataFrame({"qid": 1, "docid": ["a", "b", "c"], "score": [3.0, 2.0, 1.0],
                        "label": [3, 0, 2]})
    m = Metric("dcg", gain="linear", discount="log10")
    want = 3 / np.log10(2.0) + 2 / np.log10(4.0)
    assert evaluate(run, None, [m])[m.display_name].iloc[0] == pytest.approx(want, abs=1e-12)
    assert _sk(dcg_score, [3, 0, 2], [3.0, 2.0, 1.0], log_base=10) == pytest.approx(want)
