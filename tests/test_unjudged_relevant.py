"""``unjudged='relevant'``: every unjudged retrieved document is judged with
``unjudged_grade`` (by default the highest grade judged) before any measure looks at it, so
R and the ideal grow with it. Checked per query against pytrec_eval given the qrels plus
those documents at that grade, on randomized tied data with unjudged and unretrieved
documents; and its bad input: one-line errors naming the option."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import Metric, evaluate, parse_metric
from harness.errors import InputError, MetricDefinitionError
from tests.test_judged_only import TREC, _data, assert_same_as_trec


def _augmented(run: pd.DataFrame, qrels: pd.DataFrame, grade: int) -> dict:
    """The qrels as pytrec_eval takes them, with each retrieved unjudged document of a judged
    query added at ``grade`` (built here from the tables, not by the code under test)."""
    q: dict = {}
    for a, b, c in qrels.itertuples(index=False):
        q.setdefault(a, {})[b] = int(c)
    for a, b in run[["qid", "docid"]].itertuples(index=False):
        if a in q and b not in q[a]:
            q[a][b] = grade
    return q


@pytest.mark.parametrize(("seed", "grade"), [(0, None), (1, 1), (2, 2)])
def test_relevant_equals_trec_eval_on_augmented_qrels(seed: int, grade: int | None) -> None:
    import pytrec_eval

    run, qrels = _data(seed)
    top = int(qrels["label"].max()) if grade is None else grade  # the default: the top grade
    r: dict = {}
    for a, b, c in run.itertuples(index=False):
        r.setdefault(a, {})[b] = float(c)
    theirs = pytrec_eval.RelevanceEvaluator(_augmented(run, qrels, top), set(TREC)).evaluate(r)
    metrics = [parse_metric(f"trec_eval:{name}", unjudged="relevant", unjudged_grade=grade)
               for name in TREC]
    assert_same_as_trec(theirs, evaluate(run, qrels, metrics), metrics)


def test_relevant_by_hand() -> None:
    # a: judged 0, b: unjudged, c: judged 2, d: unjudged; x judged 1, not retrieved.
    run = pd.DataFrame({"qid": "q", "docid": list("abcd"), "score": [4.0, 3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["a", "c", "x"], "label": [0, 2, 1]})
    out = evaluate(run, qrels, ["AP(unjudged=relevant)", "P@2(unjudged=relevant)",
                                "nDCG(gain=linear,unjudged=relevant,unjudged_grade=1)",
                                "Judged@4(unjudged=relevant)"]).iloc[0]
    # b, c, d relevant at ranks 2, 3, 4; R = 4 (x too): (1/2 + 2/3 + 3/4) / 4
    assert out["AP(unjudged=relevant)"] == pytest.approx((1 / 2 + 2 / 3 + 3 / 4) / 4)
    assert out["P@2(unjudged=relevant)"] == 0.5
    dcg = 1 / np.log2(3) + 2 / np.log2(4) + 1 / np.log2(5)
    idcg = 2 + 1 / np.log2(3) + 1 / np.log2(4) + 1 / np.log2(5)  # c=2, b, d, x = 1
    assert out["nDCG(gain=linear,unjudged=relevant,unjudged_grade=1)"] == pytest.approx(
        dcg / idcg)
    assert out["Judged@4(unjudged=relevant)"] == 1.0
    assert out["n_relevant"] == 2  # the table's counts are the judgments' own


def test_display_name_key_and_reset() -> None:
    m = Metric("ndcg", k=10, unjudged="relevant", unjudged_grade=2)
    assert m.display_name == "nDCG@10(unjudged=relevant,unjudged_grade=2)"
    assert parse_metric(m.display_name) == m
    assert m.key == "ndcg_at_10__unjudged_relevant__unjudged_grade_2"
    assert Metric("ndcg", k=10, unjudged="relevant").display_name == \
        "nDCG@10(unjudged=relevant)"
    # the grade means nothing unless unjudged='relevant': reset, so definitions agree
    assert Metric("ndcg", k=10, unjudged_grade=2) == Metric("ndcg", k=10)
    assert Metric("ndcg", k=10).display_name == "nDCG@10"


@pytest.mark.parametrize(("options", "message"), [
    ({"unjudged_grade": "high"}, r"unjudged_grade must be a number >= 0 or None, got 'high'"),
    ({"unjudged_grade": -1}, r"unjudged_grade must be a number >= 0 or None, got -1"),
    ({"unjudged_grade": True}, r"unjudged_grade must be a number"),
    ({"unjudged_grade": 5, "max_label": 4}, r"unjudged_grade=5 is above max_label=4"),
    ({"unjudged": "maybe"}, r"unjudged must be one of .*'relevant'; got 'maybe'"),
])
def test_bad_options_are_one_line_errors(options: dict, message: str) -> None:
    with pytest.raises(MetricDefinitionError, match=message) as info:
        Metric("mndcg", k=5, **{"unjudged": "relevant", **options})
    assert "\n" not in str(info.value)


def test_relevant_without_a_positive_grade_is_refused() -> None:
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["a"], "label": [0]})
    with pytest.raises(InputError, match=r"nDCG@5\(unjudged=relevant\): .*no "
                       r"judgment has a positive grade; give unjudged_grade") as info:
        evaluate(run, qrels, ["ndcg@5(unjudged=relevant)"])
    assert "\n" not in str(info.value)
    # with a grade given it is well defined: b relevant at rank 2, R = 1
    out = evaluate(run, qrels, ["RR(unjudged=relevant,unjudged_grade=1)"])
    assert out.iloc[0, -1] == 0.5


def test_explain_difference_splits_out_the_unjudged_treatment() -> None:
    from harness import explain_difference

    run, qrels = _data(3)
    e = explain_difference(run, qrels, "ndcg@10", a="nDCG@10",
                           b="nDCG@10(ties=optimistic,unjudged=relevant,unjudged_grade=2)")
    assert list(e.table["option"]) == ["ties", "unjudged", "unjudged_grade"]
    assert e.table["contribution"].sum() == pytest.approx(e.difference, abs=1e-12)
    # the means are those evaluate gives each side
    both = evaluate(run, qrels, [e.a, e.b])
    assert e.mean_a == pytest.approx(both[e.a.display_name].mean(), abs=1e-12)
    assert e.mean_b == pytest.approx(both[e.b.display_name].mean(), abs=1e-12)
    # unjudged documents judged relevant raise nDCG@10 on these data
    assert e.table.set_index("option").at["unjudged", "contribution"] > 0
    # the grade alone changes nothing (it is reset unless unjudged='relevant'), so its share
    # is half its interaction with unjudged: v({grade}) = v({})
    alone = evaluate(run, qrels, [Metric("ndcg", k=10, unjudged_grade=2)]).iloc[:, -1]
    assert alone.mean() == pytest.approx(e.mean_a, abs=1e-12)


def test_the_sklearn_check_leaves_out_other_treatments_of_unjudged_documents() -> None:
    from harness.metrics.sklearn_check import check_against_sklearn

    run, qrels = _data(0)
    ms = [parse_metric(f"nDCG@10(ideal=retrieved{t})")
          for t in ("", ",unjudged=condensed", ",unjudged=relevant")]
    results = check_against_sklearn(run, qrels, ms, evaluate(run, qrels, ms))
    assert [r.status for r in results] == ["checked", "not checked", "not checked"]
    assert results[0].max_abs_diff < 1e-12
    assert "sklearn reads an unjudged document as label 0" in results[2].reason


def test_the_judgments_metric_grid_holds_each_treatment() -> None:
    from harness.app.plan import build_metrics
    from tests.test_app_config import _grid

    names = [m.display_name for m in build_metrics(_grid("judgments"))]
    for stem in ("nDCG@10(gain=linear,ties=docid", "AP(ties=docid"):
        assert [n for n in names if n.startswith(stem)] == [
            f"{stem})", f"{stem},unjudged=condensed)", f"{stem},unjudged=relevant)"]
    assert "Bpref(ties=docid)" in names and "infAP(ties=docid)" in names
    assert len(names) == 8


def test_the_qrels_read_whole_gain_the_judged_documents_too() -> None:
    # Compatibility reads the qrels as given (their order breaks ties in its ideal): under
    # unjudged='relevant' it equals the measure on the qrels plus the unjudged documents
    # at the grade, appended in run order
    run, qrels = _data(4)
    judged = set(zip(qrels["qid"], qrels["docid"]))
    extra = run.loc[[(q, d) not in judged for q, d in zip(run["qid"], run["docid"])],
                    ["qid", "docid"]].assign(label=2)
    plus = pd.concat([qrels, extra], ignore_index=True)
    m = parse_metric("Compat(ties=docid)")
    ours = evaluate(run, qrels, [m.with_options(unjudged="relevant", unjudged_grade=2)])
    theirs = evaluate(run, plus, [m])
    assert np.allclose(ours.iloc[:, -1], theirs.iloc[:, -1], atol=1e-12, rtol=0)
    assert not np.allclose(ours.iloc[:, -1], evaluate(run, qrels, [m]).iloc[:, -1])


def test_relevant_is_refused_for_a_measure_of_subtopics() -> None:
    with pytest.raises(MetricDefinitionError, match="judges documents, not subtopics"):
        parse_metric("alpha_ndcg@10(ties=docid,unjudged=relevant)")
