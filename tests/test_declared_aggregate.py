"""``harness.aggregate`` summarises each measure as it declares (``Measure.aggregate``): a
mean, a sum for counts, a geometric mean for ``gm_*``; checked against pytrec_eval's
``compute_aggregated_measure`` (trec_eval's own summary rules)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import harness

# harness name -> trec_eval name
NAMES = {"gm_ap": "gm_map", "gm_bpref": "gm_bpref", "num_ret": "num_ret",
         "num_rel": "num_rel", "num_rel_ret": "num_rel_ret", "ap": "map", "bpref": "bpref"}


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    for q in range(25):
        qid = f"query-{q:06d}"
        n = int(rng.integers(1, 15))
        docs = [f"document-{d:07d}" for d in rng.choice(40, n + 5, replace=False)]
        runs.append(pd.DataFrame({"qid": qid, "docid": docs[:n],
                                  "score": rng.integers(0, 4, n).astype(float)}))
        judged = rng.choice(n + 5, int(rng.integers(1, n + 5)), replace=False)
        labels = rng.integers(0, 3, len(judged))
        if q % 7 == 0:
            labels[:] = 0  # no relevant document: gm_ap's floor
        qrels.append(pd.DataFrame({"qid": qid, "docid": [docs[i] for i in judged],
                                   "label": labels}))
    return pd.concat(runs, ignore_index=True), pd.concat(qrels, ignore_index=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_summary_as_trec_eval(seed):
    run, qrels = _data(seed)
    pq = harness.evaluate(run, qrels, [f"{name}(ties=docid)" for name in NAMES])
    summary = harness.aggregate(pq)["mean"]
    qd = {q: {d: int(v) for d, v in zip(g.docid, g.label)} for q, g in qrels.groupby("qid")}
    rd = {q: {d: float(s) for d, s in zip(g.docid, g.score)} for q, g in run.groupby("qid")}
    res = pytrec_eval.RelevanceEvaluator(qd, set(NAMES.values())).evaluate(rd)
    for column, name in zip(pq.columns[3:], NAMES.values()):
        expected = pytrec_eval.compute_aggregated_measure(name, [res[q][name] for q in res])
        assert summary[column] == pytest.approx(expected, rel=1e-12, abs=1e-15), name
