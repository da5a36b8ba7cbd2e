"""Measure names of trec_eval, ir_measures and ranx: each parses to an explicit definition
that round-trips, and computes the value the library defining the name computes
(pytrec_eval 0.5.11, ir_measures 0.4.3, ranx 0.3.21)."""

from __future__ import annotations

import shutil

import ir_measures
import numpy as np
import pytest

from harness import Metric, parse_metric
from harness.errors import MetricDefinitionError
from tests.measure_peers import (
    assert_same,
    ir_measures_values,
    make_data,
    ours,
    pytrec,
    ranx_values,
)

EXPECTED = {
    # trec_eval
    "ndcg_cut.10": Metric("ndcg", k=10, gain="linear", ties="docid"),
    "ndcg_cut_10": Metric("ndcg", k=10, gain="linear", ties="docid"),
    "P.5": Metric("precision", k=5, ties="docid"),
    "recall.100": Metric("recall", k=100, ties="docid"),
    "map_cut.10": Metric("ap", k=10, ties="docid"),
    "recip_rank": Metric("rr", ties="docid"),
    "ndcg.1=3,2=9": Metric("ndcg", gain={1: 3, 2: 9}, ties="docid"),
    "P.5 -l 2": Metric("precision", k=5, level=2, ties="docid"),
    "trec_eval:map -l 2": Metric("ap", level=2, ties="docid"),
    "trec_eval:ndcg": Metric("ndcg", gain="linear", ties="docid"),
    "success.10": Metric("success", k=10, ties="docid"),
    "trec_eval:Rprec": Metric("rprec", ties="docid"),
    "trec_eval:bpref": Metric("bpref", ties="docid"),
    "iprec_at_recall_0.50": Metric("iprec", at_recall=0.5, ties="docid",
                                   recall_cutoff="nearest"),  # trec_eval 10.0: round(x R)
    "trec_eval9:iprec_at_recall_0.50": Metric("iprec", at_recall=0.5, ties="docid_float32"),
    "trec_eval9:P.5": Metric("precision", k=5, ties="docid_float32"),
    "gm_map": Metric("gm_ap", ties="docid"),
    "11pt_avg": Metric("iprec_avg", ties="docid", recall_cutoff="nearest"),
    "trec_eval:infAP": Metric("infap", ties="docid"),
    "num_q": Metric("query_count", ties="docid"),
    # ir_measures
    "nDCG@10": Metric("ndcg", k=10),  # the harness's own display name keeps its meaning
    "ir_measures:nDCG@10": Metric("ndcg", k=10, gain="linear", ties="docid_float32"),
    "nDCG(dcg=exp-log2)@10": Metric("ndcg", k=10, gain="exp2", ties="docid"),
    "nDCG(dcg='exp-log2')@10": Metric("ndcg", k=10, gain="exp2", ties="docid"),
    "nDCG(gains={0:0,1:1,2:3})@10": Metric("ndcg", k=10, gain={0: 0, 1: 1, 2: 3},
                                           ties="docid_float32"),
    "AP(rel=2)@10": Metric("ap", k=10, level=2, ties="docid_float32"),
    "P(rel=2)@5": Metric("precision", k=5, level=2, ties="docid_float32"),
    "RR(rel=2)": Metric("rr", level=2, ties="docid_float32"),
    "SDCG(max_rel=4)@10": Metric("mndcg", k=10, gain="linear", max_label=4, ties="input"),
    "ERR@20": Metric("err", k=20),
    "ir_measures:ERR@20": Metric("err", k=20, max_label=4, ties="docid"),
    "Judged@10": Metric("judged", k=10),
    "Success@10": Metric("success", k=10),
    "Rprec": Metric("rprec"),
    "Bpref": Metric("bpref"),
    "RBP(p=0.8)": Metric("rbp", p=0.8),
    "RBP(rel=2,p=0.9)": Metric("rbp", p=0.9, level=2, ties="input"),
    "IPrec@0.5": Metric("iprec", at_recall=0.5, ties="docid_float32"),
    # ranx
    "ndcg_burges@10": Metric("ndcg", k=10, gain="exp2", convention="ranx"),
    "mrr": Metric("rr"),
    "ranx:mrr": Metric("rr", ties="quicksort"),
    "hit_rate@10": Metric("success", k=10, ties="quicksort"),
    "r-precision": Metric("rprec", ties="quicksort"),
    "r_precision": Metric("rprec"),
    "bpref": Metric("bpref"),
    "f1@10": Metric("f1", k=10),
    "ranx:f1@10": Metric("f1", k=10, ties="quicksort"),
    "rbp.95": Metric("rbp", p=0.95, ties="quicksort", graded=True),
    "precision@5-l2": Metric("precision", k=5, level=2, ties="quicksort"),
}


@pytest.mark.parametrize("text, metric", list(EXPECTED.items()))
def test_tool_names_parse_to_explicit_definitions_that_round_trip(text: str,
                                                                  metric: Metric) -> None:
    parsed = parse_metric(text)
    assert parsed == metric
    assert parse_metric(parsed.display_name) == parsed


def test_tool_names_convention_is_visible_in_the_display_name() -> None:
    assert parse_metric("ndcg_cut.10").display_name == "nDCG@10(gain=linear,ties=docid)"
    assert parse_metric("P.5 -l 2").display_name == "P@5(ties=docid,level=2)"
    assert parse_metric("ndcg_burges@10").display_name == "nDCG@10(ties=quicksort)"
    assert parse_metric("iprec_at_recall_0.50").display_name == \
        "IPrec(ties=docid,at_recall=0.5,recall_cutoff=nearest)"
    assert parse_metric("ir_measures:P@5").display_name == "P@5(ties=docid_float32)"


def test_keyword_options_win_over_the_tool_convention() -> None:
    assert parse_metric("ndcg_cut.10", ties="average") == Metric("ndcg", k=10, gain="linear")


@pytest.mark.parametrize("text, words", [
    ("ndcg_cut.5,10", "prints 2 lines"),
    ("P.x", "cut-offs must be positive"),
    ("ndcg.1=3,two=9", "'two' is not a number"),
    ("P.5 -l x", "-l takes a relevance level"),
    ("trec_eval:nope", "unknown"),
    ("nDCG(judged_only=maybe)@10", "judged_only must be True or False"),
    ("nDCG(dcg=exp)@10", "dcg must be"),
    ("SDCG(max_rel=4,min_rel=4)@10", "min_rel must be below max_rel"),
    ("AP(rel=2)@ten", "must be an int"),
    ("AP(rel=2,p=3)@10", "'p' is not supported for AP"),
    ("ranx:rbp", "persistence"),
    ("ranx:nope@3", "unknown"),
    ("ir_measures:Foo@3", "unknown"),
])
def test_bad_tool_names_are_refused_clearly(text: str, words: str) -> None:
    with pytest.raises(MetricDefinitionError, match=words.replace("(", r"\(")):
        parse_metric(text)


def test_rel_zero_is_refused_as_a_level() -> None:
    with pytest.raises(MetricDefinitionError, match="level"):
        parse_metric("P(rel=0)@5")


# -- values against the libraries ---------------------------------------------------------

TREC = [  # (our name, pytrec_eval measure, its output key, relevance level)
    ("ndcg_cut.10", "ndcg_cut.10", "ndcg_cut_10", 1),
    ("ndcg_cut_10", "ndcg_cut.10", "ndcg_cut_10", 1),
    ("P.5", "P.5", "P_5", 1),
    ("recall.100", "recall.100", "recall_100", 1),
    ("map_cut.10", "map_cut.10", "map_cut_10", 1),
    ("recip_rank", "recip_rank", "recip_rank", 1),
    ("trec_eval:ndcg", "ndcg", "ndcg", 1),
    ("P.5 -l 2", "P.5", "P_5", 2),
    ("trec_eval:map -l 2", "map", "map", 2),
    ("recip_rank -l 3", "recip_rank", "recip_rank", 3),
]


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("name, measure, key, level", TREC)
def test_trec_eval_names_equal_pytrec_eval(name: str, measure: str, key: str, level: int,
                                           tied: bool) -> None:
    run, qrels = make_data(11, tied=tied)
    assert_same(ours(run, qrels, name), pytrec(run, qrels, measure, key, level), name)


IR_MEASURES = [  # (our name, ir_measures measure), ties broken as its backend does
    ("ir_measures:nDCG@10", "nDCG@10"),
    ("nDCG(gains={0:0,1:1,2:3})@10", {0: 0, 1: 1, 2: 3}),
    # pytrec_eval aborts on measure parameters (ndcg.1=3,2=9); ir_measures passes the same
    # gains to it as a label map (label 3, not listed by trec_eval, keeps its gain 3)
    ("ndcg.1=3,2=9", {0: 0, 1: 3, 2: 9, 3: 3}),
    ("AP(rel=2)@10", "AP(rel=2)@10"),
    ("P(rel=2)@5", "P(rel=2)@5"),
    ("RR(rel=2)", "RR(rel=2)"),
    ("ir_measures:RR", "RR"),
]


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("name, measure", IR_MEASURES)
def test_ir_measures_names_equal_ir_measures(name: str, measure: str | dict[int, int],
                                             tied: bool) -> None:
    import ir_measures

    if isinstance(measure, str):
        m = ir_measures.parse_measure(measure)
    else:
        m = ir_measures.nDCG(gains=measure)
        m = m @ 10 if "@10" in name else m
    run, qrels = make_data(12, tied=tied)
    assert_same(ours(run, qrels, name), ir_measures_values(run, qrels, m), name)


@pytest.mark.parametrize("tied", [True, False])
def test_ir_measures_exp_log2_ndcg_equals_ir_measures(tied: bool) -> None:
    """ir_measures computes nDCG(dcg='exp-log2') with gdeval (score then docno descending),
    printed to 5 decimals."""
    import ir_measures

    run, qrels = make_data(13, tied=tied)
    theirs = ir_measures_values(run, qrels, ir_measures.nDCG(dcg="exp-log2") @ 10)
    assert_same(ours(run, qrels, "nDCG(dcg=exp-log2)@10"), theirs, "exp-log2", atol=5e-6)


def test_ir_measures_err_equals_gdeval() -> None:
    """ir_measures' ERR is gdeval's (top grade 4, score then docno descending), printed to
    5 decimals."""
    import ir_measures

    assert shutil.which("perl"), "gdeval needs perl"
    run, qrels = make_data(14, tied=True)
    theirs = ir_measures_values(run, qrels, ir_measures.ERR @ 20)
    assert_same(ours(run, qrels, "ir_measures:ERR@20"), theirs, "ERR@20", atol=5e-6)


def test_sdcg_by_hand() -> None:
    """SDCG@k: DCG with linear gain over k times the top grade's gain,
    sum_{i<=k} max_rel / log2(i+1)."""
    import pandas as pd

    run = pd.DataFrame({"qid": "1", "docid": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "1", "docid": ["a", "c"], "label": [2, 4]})
    dcg = 2 / np.log2(2) + 4 / np.log2(4)
    ideal = sum(4 / np.log2(i + 1) for i in range(1, 11))
    assert ours(run, qrels, "SDCG(max_rel=4)@10").iloc[0] == pytest.approx(dcg / ideal,
                                                                           abs=1e-15)


CWL = [("SDCG(max_rel=3)@10", "SDCG(max_rel=3)@10"), ("SDCG(max_rel=5)@5", "SDCG(max_rel=5)@5"),
       ("RBP(rel=1,p=0.8)", "RBP(rel=1,p=0.8)"), ("RBP(rel=2,p=0.5)", "RBP(rel=2,p=0.5)")]


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("name, theirs", CWL, ids=[c[0] for c in CWL])
def test_cwl_eval_names_equal_ir_measures(name: str, theirs: str, tied: bool) -> None:
    """SDCG and RBP(rel=...), which ir_measures computes with cwl_eval 1.0.12: linear gain
    scaled by max_rel, binary RBP, tied documents in the run's order (ties='input')."""
    run, qrels = make_data(31, tied=tied, sizes=(2, 25))
    assert_same(ours(run, qrels, name), ir_measures_values(run, qrels,
                                                           ir_measures.parse_measure(theirs)),
                name)


RANX = [("ndcg_burges@10", "ndcg_burges@10"), ("ranx:mrr", "mrr"),
        ("precision@5-l2", "precision@5-l2"), ("ranx:map@10-l2", "map@10-l2"),
        ("ranx:ndcg@5", "ndcg@5")]


@pytest.mark.parametrize("tied", [True, False])
def test_ranx_names_equal_ranx(tied: bool) -> None:
    """ranx keeps tied documents in insertion order for lists of at most 15 documents."""
    run, qrels = make_data(15, tied=tied, sizes=(2, 16) if tied else (10, 40))
    theirs = ranx_values(run, qrels, [r for _, r in RANX])
    for name, ranx_name in RANX:
        assert_same(ours(run, qrels, name), theirs[ranx_name], name)


def test_the_app_metric_extra_takes_tool_names() -> None:
    from harness.app.study import build_metrics

    extra = ["ndcg_cut.10", "AP(rel=2)@10", "hit_rate@10", "P.5 -l 2", "Bpref"]
    got = build_metrics({"name": "ndcg", "k": 10, "gain": "exp2", "discount": "log2",
                         "ties": "average", "ideal": "judged", "extra": extra})
    assert [parse_metric(t) for t in extra] == got[1:]
    assert got[0] == Metric("ndcg", k=10)


def test_duplicate_definitions_are_dropped_in_order() -> None:
    from harness import parse_metric
    from harness.metrics.engine.evaluate import as_metrics

    got = as_metrics(["ndcg@10", "AP", "nDCG@10", parse_metric("ndcg@10(ties=average)"),
                      "ndcg@10(ties=input)", "ap"])
    assert [m.display_name for m in got] == ["nDCG@10", "AP", "nDCG@10(ties=input)"]
