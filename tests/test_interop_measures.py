"""Harness measures inside ir_measures and PyTerrier (issue 39): ``harness.as_ir_measure``
gives a measure that ``ir_measures.calc_aggregate``, ``ir_measures.iter_calc`` and
``pt.Experiment`` accept, whose values are the harness's (its tie rules), and which agrees
with ir_measures' own pytrec_eval-backed measure where the definitions are the same."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import harness
from harness.data.trec import read_qrels, read_run


@pytest.fixture(scope="module")
def cast(shared_data: Path) -> dict[str, pd.DataFrame]:
    folder = shared_data / "trec_cast_2021"
    return {"qrels": read_qrels(folder / "trec-cast-qrels-docs.2021.qrel"),
            "bm25": read_run(folder / "org_manual_bm25.run")[["qid", "docid", "score"]]}


def _ir_measures_frames(cast: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The CAsT qrels and run in ir_measures' DataFrame columns."""
    qrels = cast["qrels"].rename(columns={"qid": "query_id", "docid": "doc_id",
                                          "label": "relevance"})
    run = cast["bm25"].rename(columns={"qid": "query_id", "docid": "doc_id"})
    return qrels, run


def test_iter_calc_gives_the_harness_values_per_query(cast: dict[str, pd.DataFrame]) -> None:
    names = ["nDCG@10(ties=average)", "nDCG@10(gain=linear,ties=pessimistic)"]
    measures = [harness.as_ir_measure(n) for n in names]
    qrels, run = _ir_measures_frames(cast)
    got = {(str(m.measure), m.query_id): m.value
           for m in ir_measures.iter_calc(measures, qrels, run)}
    table = harness.evaluate(cast["bm25"], cast["qrels"], names)
    assert len(got) == 2 * len(table) and len(table) > 40
    for name in names:
        display = harness.parse_metric(name).display_name
        for qid, value in table[display].items():
            assert got[(f"harness:{display}", qid)] == value  # bit for bit: the harness computed it


def test_calc_aggregate_agrees_with_ir_measures_own_ndcg(cast: dict[str, pd.DataFrame]
                                                         ) -> None:
    """trec_eval's nDCG@10 (ties by docid) through the harness equals ir_measures'
    nDCG@10 (pytrec_eval) on every query; the aggregate is their mean."""
    ours = harness.as_ir_measure("trec_eval:ndcg_cut.10")
    qrels, run = _ir_measures_frames(cast)
    theirs = ir_measures.nDCG @ 10
    result = ir_measures.calc_aggregate([ours, theirs], qrels, run)
    assert result[ours] == pytest.approx(result[theirs], abs=1e-12)
    per_query = {(m.measure, m.query_id): m.value
                 for m in ir_measures.iter_calc([ours, theirs], qrels, run)}
    for (measure, qid), value in per_query.items():
        if measure == ours:
            assert value == pytest.approx(per_query[(theirs, qid)], abs=1e-12)
    assert 0.2 < result[ours] < 0.8


def test_a_name_ir_measures_lacks_is_computed_and_printed_as_the_harness_names_it() -> None:
    m = harness.as_ir_measure("nDCG@3(gain=linear,ties=pessimistic)")
    assert str(m) == "harness:nDCG@3(gain=linear,ties=pessimistic)"
    assert m != ir_measures.parse_measure("nDCG@3")
    qrels = [ir_measures.Qrel("q1", "a", 1), ir_measures.Qrel("q1", "b", 2)]
    run = [ir_measures.ScoredDoc("q1", "a", 1.0), ir_measures.ScoredDoc("q1", "b", 1.0)]
    # a tie between a (gain 1) and b (gain 2): pessimistic puts a first
    dcg = 1 + 2 / np.log2(3)
    ideal = 2 + 1 / np.log2(3)
    assert ir_measures.calc_aggregate([m], qrels, run)[m] == pytest.approx(dcg / ideal)


def test_pt_experiment_accepts_the_measure(cast: dict[str, pd.DataFrame]) -> None:
    ours = harness.as_ir_measure("nDCG@10(ties=average)")
    run = cast["bm25"].rename(columns={"docid": "docno"})
    topics = pd.DataFrame({"qid": run["qid"].unique(), "query": "q"})
    out = pt.Experiment([pt.Transformer.from_df(run)], topics,
                        cast["qrels"].rename(columns={"docid": "docno"}),
                        eval_metrics=[ours, ir_measures.nDCG @ 10], names=["bm25"])
    table = harness.evaluate(cast["bm25"], cast["qrels"], ["nDCG@10(ties=average)",
                                                          "trec_eval:ndcg_cut.10"])
    assert list(out.columns) == ["name", "harness:nDCG@10", "nDCG@10"]
    assert out.loc[0, "harness:nDCG@10"] == pytest.approx(table["nDCG@10"].mean(), abs=1e-12)
    # ir_measures' own nDCG@10 (pytrec_eval: ties by docid) beside it, trec_eval's value
    assert out.loc[0, "nDCG@10"] == pytest.approx(
        table["nDCG@10(gain=linear,ties=docid)"].mean(), abs=1e-12)
    assert out.loc[0, "nDCG@10"] != out.loc[0, "harness:nDCG@10"]  # other gain and ties
