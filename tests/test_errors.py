"""Every bad input gets a clear error that names what was wrong and where.

Each error path has a ``pytest.raises(..., match=...)``; where an option turns an error
into a documented behaviour (``nan_scores="last"``, ``negative_labels="unjudged"``) the
resulting value is checked against a number worked out by hand.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

import harness
from harness import (
    FormulaError,
    HarnessError,
    InputError,
    Metric,
    MetricDefinitionError,
    evaluate,
    parse_metric,
)

ATOL = 1e-12
LOG2_3 = math.log2(3.0)


def _run(**columns: Any) -> pd.DataFrame:
    base: dict[str, Any] = {"qid": ["q1", "q1", "q1"], "docid": ["a", "b", "c"],
                            "score": [3.0, 2.0, 1.0], "label": [1, 0, 2]}
    base.update(columns)
    return pd.DataFrame(base)


def _qrels(**columns: Any) -> pd.DataFrame:
    base: dict[str, Any] = {"qid": ["q1", "q1", "q1"], "docid": ["a", "b", "c"],
                            "label": [1, 0, 2]}
    base.update(columns)
    return pd.DataFrame(base)


def _value(run: pd.DataFrame, qrels: pd.DataFrame | None, metric: str | Metric,
           **kw: Any) -> float:
    m = metric if isinstance(metric, Metric) else parse_metric(metric)
    out = evaluate(run, qrels, [m], **kw)
    assert len(out) == 1
    return float(out[m.display_name].iloc[0])


def test_error_hierarchy() -> None:
    assert issubclass(InputError, ValueError) and issubclass(InputError, HarnessError)
    assert issubclass(MetricDefinitionError, ValueError)
    assert issubclass(FormulaError, MetricDefinitionError)


# -- scores ------------------------------------------------------------------------------------

def test_nan_score_raises_naming_table_column_qid_row() -> None:
    with pytest.raises(InputError, match=r"NaN.*table 'run', column 'score', qid 'q1', row 1"
                       ) as info:
        evaluate(_run(score=[3.0, np.nan, 1.0]), None, ["ndcg"])
    assert (info.value.table, info.value.column, info.value.qid, info.value.row) == (
        "run", "score", "q1", 1)


def test_nan_score_in_run_with_qrels_raises() -> None:
    run = _run(score=[np.nan, 2.0, 1.0]).drop(columns="label")
    with pytest.raises(InputError, match=r"NaN.*column 'score'.*row 0"):
        evaluate(run, _qrels(), ["ndcg"])


def test_nan_scores_last_ranks_them_after_every_scored_document() -> None:
    # a (label 1) has a NaN score: ranked 3rd behind b, c (label 0)
    run = _run(score=[np.nan, 2.0, 1.0], label=[1, 0, 0])
    assert _value(run, None, "rr", nan_scores="last") == pytest.approx(1 / 3, abs=ATOL)
    # linear nDCG: 1/log2(4) over the ideal 1/log2(2)
    assert _value(run, None, "ndcg(gain=linear)", nan_scores="last") == pytest.approx(
        0.5, abs=ATOL)


def test_nan_scores_last_ties_nans_with_each_other() -> None:
    # b (label 0) scored; a (label 1) and c (label 0) NaN, tied at ranks 2-3:
    # RR = (1/2 + 1/3) / 2 = 5/12; pessimistic 1/3, optimistic 1/2
    run = _run(score=[np.nan, 5.0, np.nan], label=[1, 0, 0])
    assert _value(run, None, "rr", nan_scores="last") == pytest.approx(5 / 12, abs=ATOL)
    assert _value(run, None, "rr(ties=pessimistic)", nan_scores="last") == pytest.approx(
        1 / 3, abs=ATOL)
    assert _value(run, None, "rr(ties=optimistic)", nan_scores="last") == pytest.approx(
        1 / 2, abs=ATOL)


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_score_raises(bad: float) -> None:
    with pytest.raises(InputError, match=r"infinite.*column 'score', qid 'q2', row 2"):
        evaluate(_run(qid=["q1", "q1", "q2"], score=[1.0, 2.0, bad]), None, ["ndcg"])


def test_infinite_score_raises_even_with_nan_scores_last() -> None:
    with pytest.raises(InputError, match=r"infinite.*column 'score'"):
        evaluate(_run(score=[1.0, np.inf, np.nan]), None, ["ndcg"], nan_scores="last")


def test_non_numeric_score_raises_naming_the_value() -> None:
    with pytest.raises(InputError, match=r"numeric, got 'high'.*column 'score', qid 'q1', row 1"):
        evaluate(_run(score=[1.0, "high", 2.0]), None, ["ndcg"])


def test_boolean_score_column_raises() -> None:
    with pytest.raises(InputError, match=r"numeric.*booleans.*column 'score'"):
        evaluate(_run(score=[True, False, True]), None, ["ndcg"])


def test_bad_option_values_of_evaluate() -> None:
    with pytest.raises(InputError, match=r"nan_scores must be 'error' or 'last', got 'drop'"):
        evaluate(_run(), None, ["ndcg"], nan_scores="drop")
    with pytest.raises(InputError, match=r"missing must be 'exclude' or 'zero', got 'x'"):
        evaluate(_run(), None, ["ndcg"], missing="x")
    with pytest.raises(InputError, match=r"negative_labels must be 'error' or 'unjudged'"):
        evaluate(_run(), None, ["ndcg"], negative_labels="drop")


# -- labels ------------------------------------------------------------------------------------

def test_nan_label_in_run_raises() -> None:
    with pytest.raises(InputError, match=r"NaN.*table 'run', column 'label', qid 'q1', row 2"):
        evaluate(_run(label=[1, 0, np.nan]), None, ["ndcg"])


def test_nan_label_in_qrels_raises() -> None:
    with pytest.raises(InputError, match=r"NaN.*table 'qrels', column 'label', qid 'q1', row 1"):
        evaluate(_run().drop(columns="label"), _qrels(label=[1, np.nan, 2]), ["ndcg"])


def test_infinite_label_raises() -> None:
    with pytest.raises(InputError, match=r"infinite.*table 'qrels', column 'label'.*row 0"):
        evaluate(_run().drop(columns="label"), _qrels(label=[np.inf, 0, 2]), ["ndcg"])


def test_negative_label_raises_by_default() -> None:
    with pytest.raises(InputError, match=r"negative.*-1.*table 'run', column 'label', qid 'q1', "
                                         r"row 1"):
        evaluate(_run(label=[1, -1, 2]), None, ["ndcg"])
    with pytest.raises(InputError, match=r"negative.*table 'qrels', column 'label'.*row 2"):
        evaluate(_run().drop(columns="label"), _qrels(label=[1, 0, -2]), ["ndcg"])


def test_negative_label_unjudged_is_accepted_and_not_judged() -> None:
    # qrels a:-1 (unjudged), b:1; the run ranks a then b. Linear nDCG:
    # DCG = 0 + 1/log2(3); IDCG over the one judged label 1 = 1 -> 1/log2(3)
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "label": [-1, 1]})
    m = Metric("ndcg", gain="linear")
    out = evaluate(run, qrels, [m], negative_labels="unjudged")
    assert out.loc["q", m.display_name] == pytest.approx(1 / LOG2_3, abs=ATOL)
    assert out.loc["q", "n_judged"] == 1
    assert out.loc["q", "n_docs"] == 2
    # the same with labels in the run
    labelled = run.assign(label=[-1, 1])
    out = evaluate(labelled, None, [m], negative_labels="unjudged")
    assert out.loc["q", m.display_name] == pytest.approx(1 / LOG2_3, abs=ATOL)
    assert out.loc["q", "n_judged"] == 1
    # trec_eval convention makes 'unjudged' the default
    m_trec = Metric("ndcg", convention="trec_eval")
    assert evaluate(run, qrels, [m_trec]).loc["q", m_trec.display_name] == pytest.approx(
        1 / LOG2_3, abs=ATOL)


def test_non_numeric_label_raises() -> None:
    with pytest.raises(InputError, match=r"numeric, got 'x'.*table 'run', column 'label', "
                                         r"qid 'q1', row 1"):
        evaluate(_run(label=[1, "x", 2]), None, ["ndcg"])
    with pytest.raises(InputError, match=r"numeric, got 'rel'.*table 'qrels', column 'label'"):
        evaluate(_run().drop(columns="label"), _qrels(label=[1, 0, "rel"]), ["ndcg"])


def test_exp2_gain_overflow_raises() -> None:
    run = _run(label=[1, 1024, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's own overflow warning
        with pytest.raises(InputError, match=r"gain 'exp2' of label .*1024.* is .*inf.*"
                                             r"column 'label', qid 'q1'"):
            evaluate(run, None, ["ndcg"])
        with pytest.raises(InputError, match=r"ERR needs labels .*1024.*qid 'q1'"):
            evaluate(run, None, ["err"])
    # 1023 is still finite: DCG@1 of label 1023 is 2**1023 - 1
    assert _value(_run(label=[1023, 0, 0]), None, "dcg@1") == pytest.approx(2.0 ** 1023)
    # linear gain has no such limit
    assert _value(run, None, "ndcg(gain=linear)") == pytest.approx(
        (1 + 1024 / LOG2_3 + 2 / 2) / (1024 + 2 / LOG2_3 + 1 / 2), abs=ATOL)


# -- keys --------------------------------------------------------------------------------------

def test_duplicate_pair_in_run_names_qid_and_row() -> None:
    run = _run(docid=["a", "b", "a"])
    with pytest.raises(InputError, match=r"duplicate \(qid, docid\).*'a'.*table 'run', column "
                                         r"'docid', qid 'q1', row 2") as info:
        evaluate(run, None, ["ndcg"])
    assert info.value.row == 2 and info.value.qid == "q1"


def test_duplicate_pair_in_qrels_names_qid_and_row() -> None:
    qrels = pd.DataFrame({"qid": ["q1", "q2", "q2", "q2"], "docid": ["a", "b", "c", "b"],
                          "label": [1, 0, 1, 1]})
    run = pd.DataFrame({"qid": ["q1", "q2"], "docid": ["a", "b"], "score": [1.0, 1.0]})
    with pytest.raises(InputError, match=r"duplicate \(qid, docid\).*'b'.*table 'qrels', "
                                         r"column 'docid', qid 'q2', row 3"):
        evaluate(run, qrels, ["ndcg"])


def test_same_docid_under_different_queries_is_fine() -> None:
    run = pd.DataFrame({"qid": ["q1", "q2"], "docid": ["a", "a"], "score": [1.0, 1.0],
                        "label": [1, 0]})
    out = evaluate(run, None, ["rr"])
    assert out["RR"].tolist() == [1.0, 0.0]


def test_missing_qid_value_raises() -> None:
    with pytest.raises(InputError, match=r"missing.*column 'qid'.*row 1"):
        evaluate(_run(qid=["q1", None, "q1"]), None, ["ndcg"])


# -- tables ------------------------------------------------------------------------------------

@pytest.mark.parametrize("column", ["qid", "docid", "score", "label"])
def test_missing_run_column_raises(column: str) -> None:
    with pytest.raises(InputError, match=rf"run is missing column\(s\) \['{column}'\].*"
                                         rf"column '{column}'"):
        evaluate(_run().drop(columns=column), None, ["ndcg"])


def test_missing_qrels_column_raises() -> None:
    with pytest.raises(InputError, match=r"qrels is missing column\(s\) \['label'\]"):
        evaluate(_run().drop(columns="label"), _qrels().drop(columns="label"), ["ndcg"])


def test_run_with_label_and_qrels_raises() -> None:
    with pytest.raises(InputError, match=r"label.*qrels.*one source of labels"):
        evaluate(_run(), _qrels(), ["ndcg"])


def test_empty_run_raises() -> None:
    with pytest.raises(InputError, match=r"run is empty"):
        evaluate(_run().iloc[:0], None, ["ndcg"])
    with pytest.raises(InputError, match=r"qrels is empty"):
        evaluate(_run().drop(columns="label"), _qrels().iloc[:0], ["ndcg"])
    with pytest.raises(InputError, match=r"run is missing column"):
        evaluate(pd.DataFrame(), None, ["ndcg"])


def test_non_dataframe_raises() -> None:
    with pytest.raises(InputError, match=r"run must be a pandas DataFrame, got int"):
        evaluate(5, None, ["ndcg"])  # type: ignore[arg-type]
    # a dict is read as pytrec_eval's {qid: {docid: score}} (issue 39): a dict of columns is
    # named as such
    with pytest.raises(InputError, match=r"query 'qid' maps to list \(a dict of columns\? "
                                         r"pass pandas.DataFrame\(\.\.\.\) of it\)"):
        evaluate({"qid": [1]}, None, ["ndcg"])  # type: ignore[arg-type]


def test_no_common_query_raises() -> None:
    run = _run().drop(columns="label")
    with pytest.raises(InputError, match=r"no query is both in the run and judged"):
        evaluate(run, _qrels(qid=["other"] * 3), ["ndcg"])


def test_single_document_query_is_valid() -> None:
    one = pd.DataFrame({"qid": ["q"], "docid": ["a"], "score": [0.3], "label": [2]})
    for name in ("ndcg", "ap", "rr", "precision", "recall"):
        assert _value(one, None, name) == pytest.approx(1.0, abs=ATOL), name
    # ERR with the top grade 2 taken from the data: R = (2**2 - 1) / 2**2 = 3/4
    assert _value(one, None, "err") == pytest.approx(0.75, abs=ATOL)
    # DCG of one exp2 label 2 at rank 1: 3
    assert _value(one, None, "dcg") == pytest.approx(3.0, abs=ATOL)
    # a single irrelevant document: empty query, 0 under empty='zero'
    assert _value(one.assign(label=[0]), None, "ndcg") == 0.0


# -- metric definitions --------------------------------------------------------------------

@pytest.mark.parametrize("k", [0, -1, 2.5, "10", True])
def test_bad_k_raises(k: Any) -> None:
    with pytest.raises(MetricDefinitionError,
                       match=r"k must be an int in the range \[1, inf\) or None\. Got "
                             + __import__("re").escape(repr(k)) + r" instead"):
        Metric("ndcg", k=k)


def test_bad_k_in_a_name_raises() -> None:
    with pytest.raises(MetricDefinitionError, match=r"k must be an int .* Got 0 instead"):
        parse_metric("ndcg@0")


@pytest.mark.parametrize("option,choices", [
    ("ties", "'average', 'random', 'input', 'docid', 'optimistic', 'pessimistic', "
             "'quicksort', 'quicksort2', 'quicksort_reversed', 'docid_float32', "
             "'docid_ascending'"),
    ("empty", "'zero', 'one', 'exclude', 'nan'"),
    ("ideal", "'judged', 'retrieved'"),
    ("convention", "'sklearn', 'trec_eval', 'trec_eval9', 'lightgbm', 'xgboost', "
                   "'keras_rs', 'ranx', 'catboost'"),
    ("empty_weight", "'own', 'unweighted', 'mean'"),
])
def test_unknown_choice_raises_listing_choices(option: str, choices: str) -> None:
    with pytest.raises(MetricDefinitionError,
                       match=rf"{option} must be one of {choices}; got 'bogus'"):
        Metric("ndcg", **{option: "bogus"})


def test_unknown_gain_and_discount_raise() -> None:
    with pytest.raises(FormulaError, match=r"the name 'bogus' is not allowed.*'rel'"):
        Metric("ndcg", gain="bogus")
    with pytest.raises(FormulaError, match=r"the name 'bogus' is not allowed.*'rank'"):
        Metric("ndcg", discount="bogus")
    with pytest.raises(MetricDefinitionError, match=r"gain must be 'exp2', 'linear'"):
        Metric("ndcg", gain=2)
    with pytest.raises(MetricDefinitionError, match=r"discount must be one of log2"):
        Metric("ndcg", discount=2)
    with pytest.raises(MetricDefinitionError, match=r"log base must be > 1"):
        Metric("ndcg", discount="log1")


def test_bad_seed_level_max_label_raise() -> None:
    with pytest.raises(MetricDefinitionError, match=r"seed must be an int in the range \[0"):
        Metric("ndcg", ties="random", seed=-1)
    with pytest.raises(MetricDefinitionError, match=r"level must be an int in the range \[1"):
        Metric("ap", level=0)
    with pytest.raises(MetricDefinitionError, match=r"max_label must be finite and > 0"):
        Metric("mndcg", max_label=0)
    with pytest.raises(MetricDefinitionError, match=r"max_label must be a number"):
        Metric("err", max_label="top")


def test_bad_gain_tables_raise() -> None:
    with pytest.raises(MetricDefinitionError, match=r"gain table is empty"):
        Metric("ndcg", gain={})
    with pytest.raises(MetricDefinitionError, match=r"finite gain >= 0"):
        Metric("ndcg", gain={1: -3})
    with pytest.raises(MetricDefinitionError, match=r"entries must be numbers"):
        Metric("ndcg", gain={"a": 3})


@pytest.mark.parametrize("name", ["foo", "ndcgg", "p@x", ""])
def test_unknown_metric_lists_known_names(name: str) -> None:
    known = "dcg, ndcg, mndcg, ap, rr, precision, recall, hits, err"
    with pytest.raises(MetricDefinitionError, match=rf"unknown metric '{name}'.*{known}"):
        Metric(name)
    with pytest.raises(MetricDefinitionError, match=rf"unknown metric .*{known}"):
        parse_metric(name)


def test_unknown_option_in_a_name_raises() -> None:
    with pytest.raises(MetricDefinitionError, match=r"unknown option 'gian'; options: gain"):
        parse_metric("ndcg@10(gian=linear)")
    with pytest.raises(MetricDefinitionError, match=r"expected option=value, got 'linear'"):
        parse_metric("ndcg@10(linear)")


def test_no_metric_raises() -> None:
    with pytest.raises(MetricDefinitionError, match=r"no metric given"):
        evaluate(_run(), None, [])


# -- hostile formulas ---------------------------------------------------------------------

_HOSTILE = [
    "__import__('os').system('echo hi')",
    "rel.__class__",
    "().__class__",
    "9**9**9**9",
    "lambda: 1",
    "rel + " + "1 + " * 248 + "11",  # a 1000-character formula
    "open('x')",
    "[x for x in range(10**9)]",
    "rel ** 1000",
    "pow(rel, 1000)",
    "exec('1')",
    "rel if rel else 1",
    "rel[0]",
    "'a' * 10**9",
]


@pytest.mark.parametrize("formula", _HOSTILE)
@pytest.mark.parametrize("where", ["gain", "discount"])
def test_hostile_formula_rejected_quickly(formula: str, where: str) -> None:
    if where == "discount":
        formula = formula.replace("rel", "rank")
    with pytest.raises(FormulaError, match=r"formula|exponent"):
        Metric("ndcg", **{where: formula})  # refused before any arithmetic runs: a
        # formula evaluated would not finish (pytest-timeout fails it; no timed assertion)


def test_thousand_character_formula_names_the_limit() -> None:
    text = "rel + " + "1 + " * 248 + "11"
    assert len(text) == 1000
    with pytest.raises(FormulaError, match=r"1000 characters long; the limit is"):
        Metric("ndcg", gain=text)


def test_exponent_bound_is_named() -> None:
    with pytest.raises(FormulaError, match=r"exponent 1000\b.*exceeds the bound of 64"):
        Metric("ndcg", gain="rel ** 1000")


@pytest.mark.parametrize("formula", ["9**9**9**9", "2**2**2**2**2**2", "rel**(10**10)",
                                     "pow(9, 9**9)", "rel**(rel**100)"])
def test_exponent_bound_holds_for_computed_exponents(formula: str) -> None:
    # an exponent that is itself a power is as costly as its value: the bound must apply to
    # what it can reach, not only to a literal on the right of **
    with pytest.raises(FormulaError, match=r"exponent"):
        Metric("ndcg", gain=formula)


def test_hostile_formula_never_runs() -> None:
    calls: list[str] = []
    import builtins

    original = builtins.__import__

    def spy(name: str, *a: Any, **kw: Any) -> Any:
        calls.append(name)
        return original(name, *a, **kw)

    builtins.__import__ = spy
    try:
        with pytest.raises(FormulaError):
            Metric("ndcg", gain="__import__('os').system('echo hi')")
    finally:
        builtins.__import__ = original
    assert "os" not in calls


# -- valid formulas compute the right numbers -----------------------------------------------

_RANKED = [1, 2, 0, 3]  # labels in ranked order


def _ranked_run() -> pd.DataFrame:
    n = len(_RANKED)
    return pd.DataFrame({"qid": "q", "docid": [f"d{i}" for i in range(n)],
                         "score": [float(n - i) for i in range(n)], "label": _RANKED})


def test_formula_gain_equals_exp2() -> None:
    # exp2 DCG by hand: 1/1 + 3/log2(3) + 0 + 7/log2(5)
    want = 1 + 3 / LOG2_3 + 7 / math.log2(5)
    for gain in ("exp2", "2**rel-1", "pow(2, rel) - 1"):
        assert _value(_ranked_run(), None, Metric("dcg", gain=gain)) == pytest.approx(
            want, abs=ATOL), gain


def test_formula_discount_equals_log2() -> None:
    want = 1 + 3 / LOG2_3 + 7 / math.log2(5)
    for disc in ("log2", "1/log2(rank+1)", "log(2)/log(rank+1)", "1/log(rank+1, 2)"):
        assert _value(_ranked_run(), None, Metric("dcg", discount=disc)) == pytest.approx(
            want, abs=ATOL), disc


def test_formula_and_named_discounts_by_hand() -> None:
    # linear gains 1, 2, 0, 3 at ranks 1..4
    run = _ranked_run()
    cases = {
        "reciprocal": 1 + 2 / 2 + 3 / 4,
        "1/rank": 1 + 2 / 2 + 3 / 4,
        "none": 1 + 2 + 0 + 3,
        "ln": 1 / math.log(2) + 2 / math.log(3) + 3 / math.log(5),
        "log10": 1 / math.log10(2) + 2 / math.log10(3) + 3 / math.log10(5),
        "1/sqrt(rank)": 1 + 2 / math.sqrt(2) + 3 / 2,
    }
    for disc, want in cases.items():
        assert _value(run, None, Metric("dcg", gain="linear", discount=disc)) == pytest.approx(
            want, abs=ATOL), disc


def test_gain_table_by_hand() -> None:
    # table {1: 3, 2: 9}; label 3 is not listed and keeps its linear gain 3, label 0 -> 0.
    # ranked gains 3, 9, 0, 3: DCG = 3 + 9/log2(3) + 0 + 3/log2(5)
    # ideal gains 9, 3, 3, 0:  IDCG = 9 + 3/log2(3) + 3/2
    dcg = 3 + 9 / LOG2_3 + 3 / math.log2(5)
    idcg = 9 + 3 / LOG2_3 + 3 / 2
    run = _ranked_run()
    assert _value(run, None, Metric("dcg", gain={1: 3, 2: 9})) == pytest.approx(dcg, abs=ATOL)
    assert _value(run, None, Metric("ndcg", gain={1: 3, 2: 9})) == pytest.approx(
        dcg / idcg, abs=ATOL)
    assert _value(run, None, parse_metric("ndcg(gain={1:3,2:9})")) == pytest.approx(
        dcg / idcg, abs=ATOL)


def test_formula_producing_negative_or_nan_gain_is_reported() -> None:
    with pytest.raises(InputError, match=r"gains must be finite and >= 0.*column 'label'"):
        evaluate(_ranked_run(), None, [Metric("dcg", gain="rel - 5")])
    with pytest.raises(MetricDefinitionError, match=r"discounts must be finite and >= 0"):
        evaluate(_ranked_run(), None, [Metric("dcg", discount="1/(rank - 1)")])


def test_harness_namespace() -> None:
    """The public names list every built-in measure once, from the registry (a new measure
    is one file: no list here to extend), the NDCG family first."""
    from harness.metrics.vocabulary.registry import measures

    names = harness.METRIC_NAMES
    assert names[:3] == ("dcg", "ndcg", "mndcg") and len(set(names)) == len(names)
    assert set(names) == {m.name for m in measures() if m.builtin}
    assert {"ap", "rr", "err", "bpref", "infap", "alpha_ndcg", "compat"} <= set(names)


# --------------------------------------------------------------------------------------
# config keys are keys, data columns are columns


def test_a_config_key_error_says_key_and_survives_pickling() -> None:
    import pickle

    err = InputError("ranker 'r' needs option 'path'", key="ranker.r.path")
    assert str(err) == "ranker 'r' needs option 'path' (key 'ranker.r.path')"
    assert err.key == "ranker.r.path" and err.column is None
    again = pickle.loads(pickle.dumps(err))
    assert (again.key, str(again)) == (err.key, str(err))
    assert err.at_row(3).key == "ranker.r.path"


def test_a_data_error_still_says_column() -> None:
    run = pd.DataFrame({"qid": ["q1"], "docid": ["a"], "score": [float("nan")], "label": [1]})
    with pytest.raises(InputError, match=r"column 'score'") as info:
        harness.evaluate(run, metrics=["ndcg@10"])
    assert info.value.key is None and "key" not in str(info.value)


def test_an_unknown_gain_lists_the_named_gains_before_the_formula_syntax() -> None:
    with pytest.raises(FormulaError) as info:
        harness.Metric("ndcg", gain="exp3")
    text = str(info.value)
    assert text.startswith("gain 'exp3' is not a named gain (exp2, linear)")
    assert text.index("exp2, linear") < text.index("use numbers")
