"""``unjudged='condensed'``: unjudged retrieved documents leave the ranking before any
measure looks at it (trec_eval ``-J``, ir_measures ``judged_only=True``), checked per query
against pytrec_eval given the run less its unjudged documents, and against ir_measures'
``judged_only=True`` itself, on randomized tied data with unjudged and unretrieved
documents, one-document queries and long ids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import evaluate, parse_metric


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    run_rows, qrels_rows = [], []
    for q in range(25):
        qid = f"query-{q:03d}-of-the-test-collection"
        n = int(rng.integers(1, 30))
        for d in range(n + 5):
            doc = f"document-{q:03d}-{d:05d}"
            if d < n:
                run_rows.append((qid, doc, float(rng.integers(0, 6))))  # many ties
            if rng.random() < 0.55:
                qrels_rows.append((qid, doc, int(rng.integers(0, 4))))
    return (pd.DataFrame(run_rows, columns=["qid", "docid", "score"]),
            pd.DataFrame(qrels_rows, columns=["qid", "docid", "label"]))


TREC = ["ndcg", "ndcg_cut.5", "P.5", "recall.10", "map", "map_cut.5", "recip_rank", "bpref",
        "Rprec", "success.3"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_condensed_equals_trec_eval_on_the_judged_documents(seed: int) -> None:
    import pytrec_eval

    run, qrels = _data(seed)
    judged = run.merge(qrels[["qid", "docid"]], on=["qid", "docid"])
    q = {}
    for a, b, c in qrels.itertuples(index=False):
        q.setdefault(a, {})[b] = int(c)
    r = {}
    for a, b, c in judged.itertuples(index=False):
        r.setdefault(a, {})[b] = float(c)
    theirs = pytrec_eval.RelevanceEvaluator(q, set(TREC)).evaluate(r)
    metrics = [parse_metric(f"trec_eval:{name}", unjudged="condensed") for name in TREC]
    assert_same_as_trec(theirs, evaluate(run, qrels, metrics), metrics)


def assert_same_as_trec(theirs: dict, ours: pd.DataFrame, metrics: list) -> None:
    """pytrec_eval's values per query of the TREC measures equal ours (metrics in TREC's
    order), on more than 100 (measure, query) pairs."""
    keys = {"ndcg_cut.5": "ndcg_cut_5", "P.5": "P_5", "recall.10": "recall_10",
            "map_cut.5": "map_cut_5", "success.3": "success_3"}
    compared = 0
    for name, m in zip(TREC, metrics):
        for qid, values in theirs.items():
            if qid in ours.index:
                assert ours.loc[qid, m.display_name] == pytest.approx(
                    values[keys.get(name, name)], abs=1e-12), (name, qid)
                compared += 1
    assert compared > 100


@pytest.mark.parametrize("measure", ["nDCG(judged_only=True)@10", "P(judged_only=True)@5",
                                     "AP(judged_only=True)", "RR(judged_only=True)"])
def test_condensed_equals_ir_measures_judged_only(measure: str) -> None:
    import ir_measures

    run, qrels = _data(7)
    m = ir_measures.parse_measure(measure)
    theirs = {x.query_id: x.value for x in ir_measures.iter_calc(
        [m], [ir_measures.Qrel(*row) for row in qrels.itertuples(index=False)],
        [ir_measures.ScoredDoc(*row) for row in run.itertuples(index=False)])}
    ours_m = parse_metric(measure)
    assert ours_m.unjudged == "condensed"
    ours = evaluate(run, qrels, [ours_m])[ours_m.display_name]
    common = sorted(set(theirs) & set(ours.index))
    assert len(common) > 15
    for qid in common:
        assert ours[qid] == pytest.approx(theirs[qid], abs=1e-12), qid


def test_condensed_changes_the_number_where_unjudged_documents_rank_high() -> None:
    run = pd.DataFrame({"qid": "q", "docid": ["u1", "u2", "a"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["q"], "docid": ["a"], "label": [1]})
    out = evaluate(run, qrels, ["P@1", "P@1(unjudged=condensed)", "RR",
                                "RR(unjudged=condensed)", "Judged@2(unjudged=condensed)"])
    assert out.iloc[0, 3:].tolist() == [0.0, 1.0, 1 / 3, 1.0, 1.0]
