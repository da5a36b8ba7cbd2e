"""``judgment_interval`` evaluates each labeling on fewer rows where the measure allows it:
only the run rows that can reach the top k (a measure declaring ``reads_top_k`` with
``ideal='judged'``), without judgments 0 of documents off that list, and with docids
replaced by integer codes ordered as ``ties='docid'`` orders the docids. Each case is
checked against brute force built here: every labeling of the unjudged documents is a
query of its own, evaluated on the whole run with its own docids."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import harness.metrics.unjudged.judgment_interval as ji
from harness import evaluate, judgment_interval, parse_metric

GRADE = 2


def _brute(run: pd.DataFrame, qrels: pd.DataFrame, text: str, pool: list = ()) -> np.ndarray:
    """The metric under every labeling (grades 0..GRADE) of the run's unjudged documents
    and of ``pool``, each labeling a query of its own."""
    metric = parse_metric(text)
    text = not pd.api.types.is_numeric_dtype(qrels["docid"])  # an int run joined as text
    judged = set(qrels["docid"])
    unjudged = [d for d in run["docid"] if (str(d) if text else d) not in judged] + list(pool)
    unjudged = [str(d) for d in unjudged] if text else unjudged
    r_parts, q_parts = [], []
    for qid, grades in enumerate(itertools.product(range(GRADE + 1), repeat=len(unjudged))):
        extra = pd.DataFrame({"qid": "q", "docid": unjudged, "label": list(grades)})
        r_parts.append(run.assign(qid=qid))
        q_parts.append(pd.concat([qrels, extra]).assign(qid=qid))
    values = evaluate(pd.concat(r_parts), pd.concat(q_parts), [metric])[metric.display_name]
    values = values.to_numpy()
    return values[~np.isnan(values)]


def _check(run: pd.DataFrame, qrels: pd.DataFrame, text: str, pool: list = ()) -> None:
    frame = None if not pool else pd.DataFrame({"qid": "q", "docid": list(pool)})
    got = judgment_interval(run, qrels, text, pool=frame).loc["q"]
    values = _brute(run, qrels, text, pool)
    where = f"{text}: {got.to_dict()} vs [{values.min()}, {values.max()}]"
    assert got["low"] <= values.min() + 1e-12 and got["high"] >= values.max() - 1e-12, where
    assert got["exact"], where
    assert (got["low"], got["high"]) == pytest.approx((values.min(), values.max()),
                                                      abs=1e-12), where


def _deep_query() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ten retrieved documents, the top three judged, three unjudged ones below rank 3 (one
    tied with the 3rd score), judgments 0 and 2 of documents the run misses."""
    docs = ["a", "b", "c", "u1", "d", "u2", "e", "f", "u3", "g"]
    scores = [9.0, 8.0, 7.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    run = pd.DataFrame({"qid": "q", "docid": docs, "score": scores})
    judged = ["a", "b", "c", "d", "e", "f", "g", "x0", "x2", "y0"]
    labels = [0, 1, 0, 2, 0, 1, 0, 0, 2, 0]
    return run, pd.DataFrame({"qid": "q", "docid": judged, "label": labels})


@pytest.mark.parametrize("text", [
    "nDCG@3(ties=docid)", "nDCG@3(gain=linear,ties=average)", "nDCG@3(ideal=retrieved)",
    "nDCG@2(ties=input)", "P@3(ties=docid)", "P@3", "AP@3(ties=docid)",
    "AP@3(ideal=retrieved)", "R@3(ties=docid)", "RR@3(ties=input)", "DCG@3(ties=docid)",
    "Hits@3", "nDCG(ties=docid)", "AP(ties=docid)", "P@3(level=2,ties=docid)"])
def test_unjudged_documents_below_k_bound_as_by_brute_force(text: str) -> None:
    run, qrels = _deep_query()
    _check(run, qrels, text)
    _check(run, qrels, text, pool=["p1"])  # a document only another run retrieved


@pytest.mark.parametrize(("text", "cut"), [("nDCG@3(ties=docid)", True),
                                           ("nDCG@3(ties=average)", True),
                                           ("P@3(ties=docid)", True),
                                           ("nDCG@3(ideal=retrieved,ties=docid)", False),
                                           ("AP@3(ideal=retrieved,ties=docid)", False),
                                           ("Bpref(ties=docid)", False),
                                           ("RR@3(ties=quicksort)", False)])
def test_only_rows_that_can_reach_the_top_k_are_evaluated(
        text: str, cut: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    run, qrels = _deep_query()
    seen: list[int] = []
    real = ji._pseudo

    def spy(batch, *args):  # type: ignore[no-untyped-def]
        seen.extend(len(run_rows) for _, run_rows, _, _ in batch)
        return real(batch, *args)

    monkeypatch.setattr(ji, "_pseudo", spy)
    judgment_interval(run, qrels, text)
    # the 3rd score is tied with u1's: under tie groups both can reach the top 3
    expected = (3 if "docid" in text else 4) if cut else len(run)
    assert seen == [expected]


@pytest.mark.parametrize("text", ["nDCG@2(ties=docid)", "P@2(ties=docid)", "AP(ties=docid)",
                                  "RR(ties=docid_ascending)", "nDCG@3(ties=docid_exact)"])
def test_docids_keep_their_tie_order_whatever_their_type(text: str) -> None:
    # ties broken by docid as text: "10" < "9" < "é" < "ü"; equal scores throughout; a
    # run of integers and qrels of text are joined as text
    for docs, judged in ([[9, 10, 11, 100], [10, 100]], [["9", "10", "é", "ü"], ["10", "ü"]],
                         [[9, 10, 11, 100], ["10", "100"]]):
        run = pd.DataFrame({"qid": "q", "docid": docs, "score": 1.0})
        qrels = pd.DataFrame({"qid": "q", "docid": judged, "label": [2, 1]})
        _check(run, qrels, text)


@pytest.mark.parametrize("text", ["P@3", "P@3(empty=exclude)",
                                  "RR@3(ties=docid,empty=exclude)",
                                  "Hits@3(ties=input,empty=exclude)", "DCG@3(ties=docid)",
                                  "nDCG@3(ties=docid)", "AP@3"])
def test_with_no_relevant_judgment_labelling_below_k_decides_whether_the_query_is_empty(
        text: str) -> None:
    run, qrels = _deep_query()
    qrels = qrels.assign(label=0)
    m = parse_metric(text).with_options(unjudged="relevant", unjudged_grade=GRADE)
    got = judgment_interval(run, qrels, m).loc["q"]
    values = _brute(run, qrels, text)
    assert got["exact"]
    assert (got["low"], got["high"]) == pytest.approx((values.min(), values.max()),
                                                      abs=1e-12), text


def test_a_measure_declaring_unit_range_is_bounded_by_0_and_1_beyond_the_budget() -> None:
    run, qrels = _deep_query()
    got = judgment_interval(run, qrels, "infAP(ties=docid)", max_labelings=2).loc["q"]
    assert (got["method"], got["exact"], got["low"], got["high"]) == ("bound", False, 0.0, 1.0)
    values = _brute(run, qrels, "infAP(ties=docid)")
    assert 0.0 <= values.min() and values.max() <= 1.0
