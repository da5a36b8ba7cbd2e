"""Edges where the project used to differ silently from the installed libraries (issue 21's
list), each on the smallest data that shows it, against the library itself."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import harness
from harness import evaluate, parse_metric


def _irm(measure: str, qrels: pd.DataFrame, run: pd.DataFrame) -> dict[str, float]:
    import ir_measures

    m = ir_measures.parse_measure(measure) if isinstance(measure, str) else measure
    q = [ir_measures.Qrel(str(a), str(b), int(c)) for a, b, c in qrels.itertuples(index=False)]
    r = [ir_measures.ScoredDoc(str(a), str(b), float(c)) for a, b, c in run.itertuples(index=False)]
    return {x.query_id: x.value for x in ir_measures.iter_calc([m], q, r)}


# -- 2. ir_measures' Judged@k breaks score ties by docid ascending ---------------------------
@pytest.mark.parametrize("order", [["a", "b"], ["b", "a"]])
def test_ir_measures_judged_orders_ties_by_docid_ascending(order: list[str]) -> None:
    run = pd.DataFrame({"qid": "1", "docid": order, "score": [1.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["1"], "docid": ["b"], "label": [1]})
    theirs = _irm("Judged@1", qrels, run)["1"]
    assert theirs == 0.0  # a (unjudged) first, whatever the run's order
    m = parse_metric("ir_measures:Judged@1")
    assert m.ties == "docid_ascending"
    assert evaluate(run, qrels, [m]).loc["1", m.display_name] == theirs


# -- 3. gdeval compares scores exactly (float64), then docno descending ----------------------
@pytest.mark.parametrize("scores", [(0.25 + 1e-9, 0.25), (0.25, 0.25), (0.25, 0.25 + 1e-9),
                                    (0.25 + 1e-7, 0.25)])
@pytest.mark.parametrize("name", ["nDCG(dcg=exp-log2)@10", "ERR@10"])
def test_gdeval_measures_compare_scores_exactly(scores: tuple[float, float], name: str) -> None:
    import ir_measures

    run = pd.DataFrame({"qid": "1", "docid": ["a", "b"], "score": list(scores)})
    qrels = pd.DataFrame({"qid": ["1", "1"], "docid": ["a", "b"], "label": [0, 2]})
    measure = (ir_measures.nDCG(dcg="exp-log2") @ 10 if name.startswith("nDCG")
               else ir_measures.ERR @ 10)
    theirs = _irm(measure, qrels, run)["1"]
    m = parse_metric(f"ir_measures:{name}")
    ours = evaluate(run, qrels, [m]).loc["1", m.display_name]
    assert ours == pytest.approx(theirs, abs=5e-6)  # gdeval prints 5 decimals
    if scores[0] > scores[1]:  # a (label 0) first: the float32 rounding would tie them
        assert ours < 0.7


# -- 4-7. ranx: graded rbp, the level suffix on graded measures, bpref without judged
# non-relevant documents, fractional labels --------------------------------------------------
RANX_QRELS = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2", "q3"],
                           "docid": ["a", "b", "c", "d", "e"], "label": [3, 1, 0, 1, 2]})
RANX_RUN = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2", "q2", "q3"],
                         "docid": ["a", "b", "x", "c", "d", "f"],
                         "score": [1.0, 0.5, 0.7, 1.0, 0.2, 1.0]})


def _ranx(name: str, qrels: pd.DataFrame = RANX_QRELS, run: pd.DataFrame = RANX_RUN
          ) -> np.ndarray:
    from ranx import Qrels, Run, evaluate as ranx_evaluate

    q: dict[str, dict[str, int]] = {}
    for a, b, c in qrels.itertuples(index=False):
        q.setdefault(a, {})[b] = int(c)
    r: dict[str, dict[str, float]] = {}
    for a, b, c in run.itertuples(index=False):
        r.setdefault(a, {})[b] = float(c)
    return np.asarray(ranx_evaluate(Qrels(q), Run(r), name, return_mean=False), dtype=float)


@pytest.mark.parametrize("name", ["rbp.5", "rbp.95", "rbp.8-l2", "ndcg@10-l2", "ndcg@2-l2",
                                  "ndcg_burges@10-l2", "dcg@2", "dcg_burges@2", "dcg@3-l2",
                                  "hits@2", "hits@2-l2", "bpref", "bpref-l2"])
def test_ranx_names_give_ranx_numbers(name: str) -> None:
    theirs = _ranx(name)
    m = parse_metric(f"ranx:{name}")
    ours = evaluate(RANX_RUN, RANX_QRELS, [m]).loc[["q1", "q2", "q3"], m.display_name]
    np.testing.assert_allclose(ours.to_numpy(), theirs, rtol=0, atol=1e-12)


def test_ranx_rbp_weights_each_hit_by_its_label() -> None:
    """The issue's example: one document with label 3, p = 0.5: ranx 1.5, binary RBP 0.5."""
    run = pd.DataFrame({"qid": ["q"], "docid": ["a"], "score": [1.0]})
    qrels = pd.DataFrame({"qid": ["q"], "docid": ["a"], "label": [3]})
    assert _ranx("rbp.5", qrels, run)[0] == 1.5
    assert evaluate(run, qrels, ["rbp.5"]).iloc[0, -1] == 1.5
    assert evaluate(run, qrels, ["RBP(p=0.5)"]).iloc[0, -1] == 0.5  # binary, the default


def test_ranx_bpref_is_nan_without_a_judged_non_relevant_document() -> None:
    theirs = _ranx("bpref")
    assert math.isnan(theirs[0]) and theirs[1] == 0.0
    ours = evaluate(RANX_RUN, RANX_QRELS, ["ranx:bpref"]).iloc[:, -1]
    assert math.isnan(ours["q1"]) and ours["q2"] == 0.0 and ours["q3"] == theirs[2]
    # trec_eval's bpref (the harness default) counts each retrieved relevant document 1
    assert evaluate(RANX_RUN, RANX_QRELS, ["bpref"]).loc["q1"].iloc[-1] == 1.0


def test_the_ranx_preset_refuses_fractional_labels_naming_it() -> None:
    qrels = RANX_QRELS.assign(label=[3.5, 1, 0, 1, 2])
    with pytest.raises(harness.InputError, match=r"convention='ranx'.*label 3.5 is not an "
                                                 r"integer; ranx truncates"):
        evaluate(RANX_RUN, qrels, ["ndcg_burges@10"])
    with pytest.raises(harness.InputError, match="convention='ranx'"):
        evaluate(RANX_RUN, qrels, [harness.Metric("ndcg", k=10, convention="ranx")])
    evaluate(RANX_RUN, qrels, ["ndcg@10"])  # no preset: fractional grades are fine


# -- 8. explain_difference's per-query table keeps evaluate's NaN ----------------------------
def test_explain_difference_per_query_keeps_the_nan_of_excluded_queries() -> None:
    run = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2"], "docid": ["a", "b", "c", "d"],
                        "score": [1.0, 0.5, 1.0, 0.5], "label": [0, 2, 0, 0]})
    a, b = "nDCG@10(empty=exclude)", "nDCG@10(gain=linear,empty=exclude)"
    e = harness.explain_difference(run, metric="ndcg@10", a=a, b=b)
    expected = evaluate(run, None, [a, b])
    assert math.isnan(expected.loc["q2", parse_metric(a).display_name])  # no relevant doc
    assert math.isnan(e.per_query.loc["q2", "a"]) and math.isnan(e.per_query.loc["q2", "b"])
    assert math.isnan(e.per_query.loc["q2", "difference"])
    assert e.per_query.loc["q1", "a"] == expected.loc["q1", parse_metric(a).display_name]
    assert e.per_query.loc["q1", "b"] == expected.loc["q1", parse_metric(b).display_name]
    assert e.per_query.loc["q1", "gain"] == pytest.approx(e.per_query.loc["q1", "difference"])
