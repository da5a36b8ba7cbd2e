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
