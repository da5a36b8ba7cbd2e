"""Every metric name ranx 0.3.21 computes (``ranx.metrics.metric_switch``: hits, hit_rate,
precision, recall, f1, r-precision, mrr, map, dcg, dcg_burges, ndcg, ndcg_burges, bpref,
rbp), with and without ``@k`` and the level suffix ``-lN``, parsed by
:func:`harness.parse_metric` and compared per query with ``ranx.evaluate(...,
return_mean=False)`` itself; then the cases of ranx's own metric unit tests
(tests/unit/ranx/metrics/*_test.py and tests/unit/ranx/metrics_test.py at ranx commit
2cae52f) run through :func:`harness.evaluate` with the parsed ranx name.

ranx scores a query the run did not retrieve 0 (its ``Run`` holds it empty): the harness
does that with ``evaluate(..., missing="zero")``. ranx's batch bpref differs from one query
at a time (see :func:`test_ranx_batch_bpref_is_zero_everywhere_when_a_query_has_no_relevant`),
so bpref is compared one query at a time.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

import harness
from harness import parse_metric
from harness.errors import MetricDefinitionError

RANX_VERSION = "0.3.21"

_BASE = ["hits", "hit_rate", "precision", "recall", "f1", "r-precision", "mrr", "map", "dcg",
         "dcg_burges", "ndcg", "ndcg_burges", "bpref"]
NAMES = ([f"{b}{cut}{lvl}" for b in _BASE for cut in ("", "@1", "@5", "@30")
          for lvl in ("", "-l2")]
         + [f"{b}@3-l3" for b in _BASE] + [f"{b}@0" for b in _BASE]
         + [f"{b}-l0" for b in ("dcg", "dcg_burges", "ndcg", "ndcg_burges")]
         + ["rbp.5", "rbp.8", "rbp.95", "rbp@9", "rbp.8-l2", "rbp@95-l3", "rbp.5-l0"])


def _quiet():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")  # numba's type-safety chatter, 0/0 in bpref
    return ctx


def make_data(seed: int, n_queries: int = 45) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tied scores (half-integers), 10+ character ids, labels 0-3, unjudged retrieved and
    relevant unretrieved documents, queries the run did not retrieve, queries of one
    document, a retrieved query with no judgment at all, lists past ranx's 15-document
    insertion-sort limit."""
    rng = np.random.default_rng(seed)
    run, qrels = [], []
    for qi in range(n_queries):
        qid = f"query-{seed:03d}-{qi:04d}"
        n = {0: 0, 1: 1, 2: 1, 3: 0}.get(qi, int(rng.integers(1, 26)))
        for d in rng.permutation(60)[:n]:
            doc = f"clueweb-doc-{d:05d}"
            run.append((qid, doc, float(rng.integers(0, 5)) / 2))
            if qi != 4 and rng.random() < 0.7:  # query 4: retrieved, judged nothing
                qrels.append((qid, doc, int(rng.choice(4, p=[.4, .3, .2, .1]))))
        if qi != 4:
            for j in range(int(rng.integers(0, 3))):  # judged, never retrieved
                qrels.append((qid, f"unretrieved-{j:05d}", int(rng.integers(0, 4))))
            if not any(q == qid for q, _, _ in qrels):
                qrels.append((qid, "clueweb-doc-judged", 0))
    return (pd.DataFrame(run, columns=["qid", "docid", "score"]),
            pd.DataFrame(qrels, columns=["qid", "docid", "label"]))


def ranx_scores(run: pd.DataFrame, qrels: pd.DataFrame, names: list[str],
                qids: list[str] | None = None) -> dict[str, pd.Series]:
    """ranx's per-query values: Qrels and Run built from dicts holding every query (an
    empty dict where one side has nothing), no make_comparable (one sort: ties as
    ``quicksort``)."""
    from ranx import Qrels, Run, evaluate

    qids = qids or sorted(set(run.qid) | set(qrels.qid))
    rd: dict[str, dict[str, float]] = {q: {} for q in qids}
    qd: dict[str, dict[str, int]] = {q: {} for q in qids}
    for q, d, s in run.itertuples(index=False):
        if q in rd:
            rd[q][d] = float(s)
    for q, d, label in qrels.itertuples(index=False):
        if q in qd:
            qd[q][d] = int(label)
    ctx = _quiet()
    try:
        q_obj = Qrels(qd)
        got = evaluate(q_obj, Run(rd), list(names), return_mean=False)
    finally:
        ctx.__exit__(None, None, None)
    if not isinstance(got, dict):
        got = {names[0]: got}
    return {n: pd.Series(np.asarray(v, dtype=float), index=list(q_obj.keys()))
            for n, v in got.items()}


def ranx_one_query_at_a_time(run: pd.DataFrame, qrels: pd.DataFrame, names: list[str]
                             ) -> dict[str, pd.Series]:
    """Each query evaluated alone. ranx cannot build a Run or Qrels of one empty query: a
    query the run did not retrieve or nobody judged scores 0 there, as in a batch."""
    rows: dict[str, dict[str, float]] = {n: {} for n in names}
    for q in sorted(set(run.qid) | set(qrels.qid)):
        if (run.qid == q).any() and (qrels.qid == q).any():
            got = ranx_scores(run, qrels, names, [q])
            for n in names:
                rows[n][q] = float(got[n].iloc[0])
        else:
            for n in names:
                rows[n][q] = 0.0
    return {n: pd.Series(v, dtype=float) for n, v in rows.items()}


def ours(run: pd.DataFrame, qrels: pd.DataFrame, name: str) -> pd.Series:
    """The harness's values with ``missing="zero"`` (ranx: an unretrieved query scores 0).
    A retrieved query nobody judged is not evaluated by the harness (it is listed in
    ``attrs['unjudged_qids']``); ranx, given it as an empty Qrels entry, scores it 0 for
    every metric, which is written here as 0 after checking the listing."""
    m = parse_metric(f"ranx:{name}")
    out = harness.evaluate(run, qrels, [m], missing="zero")
    values = out[m.display_name]
    unjudged = sorted(set(run.qid) - set(qrels.qid))
    assert sorted(out.attrs["unjudged_qids"]) == unjudged
    return pd.concat([values, pd.Series(0.0, index=unjudged)])


def _assert_same(mine: pd.Series, theirs: pd.Series, name: str) -> None:
    assert set(mine.index) == set(theirs.index), name
    np.testing.assert_allclose(mine[theirs.index].to_numpy(), theirs.to_numpy(), rtol=0,
                               atol=1e-12, err_msg=name)


@pytest.fixture(scope="module", params=[0, 1, 2])
def data(request: pytest.FixtureRequest) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    run, qrels = make_data(request.param)
    batch = [n for n in NAMES if not n.startswith("bpref")]
    theirs = ranx_scores(run, qrels, batch)
    theirs.update(ranx_one_query_at_a_time(run, qrels,
                                           [n for n in NAMES if n.startswith("bpref")]))
    return run, qrels, theirs


@pytest.mark.parametrize("name", NAMES)
def test_ranx_name_gives_ranx_numbers_per_query(data: tuple, name: str) -> None:
    run, qrels, theirs = data
    _assert_same(ours(run, qrels, name), theirs[name], name)


def test_the_data_has_every_edge() -> None:
    run, qrels = make_data(0)
    per_q = run.groupby("qid").size()
    all_q = set(run.qid) | set(qrels.qid)
    assert len(all_q - set(run.qid)) >= 2  # not retrieved
    assert (per_q == 1).sum() >= 2 and (per_q > 15).sum() >= 5
    assert len(set(run.qid) - set(qrels.qid)) == 1  # retrieved, never judged
    assert run.duplicated(["qid", "score"]).any()  # ties
    judged = run.merge(qrels, on=["qid", "docid"], how="left")
    assert judged.label.isna().any()  # unjudged retrieved
    assert qrels.docid.str.startswith("unretrieved").any()
    assert set(qrels.label) == {0, 1, 2, 3}
    assert min(map(len, all_q)) >= 10 and run.docid.str.len().min() >= 10


def test_batch_and_one_query_at_a_time_agree_but_for_bpref() -> None:
    run, qrels = make_data(5, n_queries=25)
    names = [n for n in NAMES if not n.startswith("bpref")]
    batch = ranx_scores(run, qrels, names)
    alone = ranx_one_query_at_a_time(run, qrels, names)
    for n in names:
        _assert_same(alone[n], batch[n], n)


def test_ranx_batch_bpref_is_zero_from_a_query_without_relevant_on() -> None:
    """ranx 0.3.21's bpref divides by R: at a query with no relevant document (at the level)
    the division raises inside numba's parallel loop, which stops there and leaves 0 for
    that query and every query after it (in the Qrels' sorted query order). One query at a
    time, that query scores 0 and the others their bpref, which is what the harness gives."""
    run = pd.DataFrame({"qid": ["qa", "qa", "qa", "qb", "qc", "qc", "qc"],
                        "docid": ["a", "b", "c", "x", "a", "b", "c"],
                        "score": [3.0, 2.0, 1.0, 1.0, 3.0, 2.0, 1.0]})
    qrels = run[["qid", "docid"]].assign(label=[1, 0, 2, 0, 1, 0, 2])
    assert ranx_scores(run, qrels, ["bpref"])["bpref"].tolist() == [0.5, 0.0, 0.0]
    alone = ranx_one_query_at_a_time(run, qrels, ["bpref"])["bpref"]
    assert alone.tolist() == [0.5, 0.0, 0.5]
    _assert_same(ours(run, qrels, "bpref"), alone, "bpref")


def test_bpref_is_nan_only_when_a_relevant_document_is_retrieved() -> None:
    """No judged non-relevant document: ranx divides 0 by min(R, N) = 0 for each retrieved
    relevant document (NaN); with none retrieved the sum is empty and bpref is 0."""
    run = pd.DataFrame({"qid": ["qa", "qa", "qb"], "docid": ["a", "z", "y"],
                        "score": [2.0, 1.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["qa", "qb"], "docid": ["a", "x"], "label": [1, 1]})
    alone = ranx_one_query_at_a_time(run, qrels, ["bpref"])["bpref"]
    assert math.isnan(alone["qa"]) and alone["qb"] == 0.0
    mine = ours(run, qrels, "bpref")
    assert math.isnan(mine["qa"]) and mine["qb"] == 0.0


@pytest.mark.parametrize("name", ["hits-l0", "precision@5-l0", "map-l0", "bpref-l0",
                                  "r-precision-l0", "mrr-l0", "f1-l0", "recall-l0",
                                  "hit_rate-l0"])
def test_level_zero_on_a_binary_measure_is_refused(name: str) -> None:
    """ranx's -l0 counts every judged document relevant, label 0 included: no harness
    level says that, so the name is refused rather than given another number."""
    with pytest.raises(MetricDefinitionError, match="-l0"):
        parse_metric(f"ranx:{name}")


@pytest.mark.parametrize("name, expected", [
    ("ndcg@10-l2", harness.Metric("ndcg", k=10, min_label=2, convention="ranx")),
    ("ndcg_burges-l3", harness.Metric("ndcg", gain="exp2", min_label=3, convention="ranx")),
    ("dcg@0", harness.Metric("dcg", convention="ranx")),
    ("ndcg-l0", harness.Metric("ndcg", convention="ranx")),
    ("precision@5-l2", harness.Metric("precision", k=5, level=2, convention="ranx")),
    ("r-precision@7", harness.Metric("rprec", convention="ranx")),
    ("bpref@7-l2", harness.Metric("bpref", level=2, no_nonrelevant="nan",
                                  convention="ranx")),
    ("rbp@95", harness.Metric("rbp", p=0.95, graded=True, convention="ranx")),
    ("rbp.95-l2", harness.Metric("rbp", p=0.95, graded=True, level=2, convention="ranx")),
    ("rbp.5-l0", harness.Metric("rbp", p=0.5, graded=True, convention="ranx")),
    ("hit_rate@3", harness.Metric("success", k=3, convention="ranx")),
    ("hits@3", harness.Metric("hits", k=3, convention="ranx")),
    ("mrr@3", harness.Metric("rr", k=3, convention="ranx")),
    ("map@3", harness.Metric("ap", k=3, convention="ranx")),
    ("f1@3", harness.Metric("f1", k=3, convention="ranx")),
    ("recall@3", harness.Metric("recall", k=3, convention="ranx")),
])
def test_what_each_ranx_name_maps_to(name: str, expected: harness.Metric) -> None:
    got = parse_metric(f"ranx:{name}")
    assert got == expected
    assert parse_metric(got.display_name) == got  # round-trips


# -- ranx's own metric unit tests, through harness.evaluate ------------------------------
# Inputs and expected values of tests/unit/ranx/metrics/{bpref,f1,rank_biased_precision,
# zero_division_error}_test.py and tests/unit/ranx/metrics_test.py (ranx commit 2cae52f).
# A run given as a list is ranked in that order (metrics_test.py hands ranx's metric
# functions ranked arrays, every score 1): it gets decreasing scores here. ``expected`` is
# per query, or ("mean", value). metrics_test.py's precision and average-precision tests
# expect the mean of ranx's own single-query values: those are computed with ranx.metrics.
_Q4 = {"q1": {"d2": 1, "d5": 1, "d1": 0, "d4": 0}, "q2": {"d2": 1, "d5": 1, "d1": 0, "d6": 0},
       "q3": {"d2": 1, "d5": 1, "d7": 1, "d1": 0, "d6": 0, "d8": 0},
       "q4": {"d2": 1, "d4": 1, "d6": 1, "d9": 1, "d1": 0, "d3": 0, "d7": 0, "d8": 0}}
_R4 = {"q1": {"d1": 10, "d2": 9, "d3": 8, "d4": 7},
       "q2": {"d1": 10, "d2": 9, "d3": 8, "d4": 7, "d5": 6, "d6": 5},
       "q3": {"d1": 10, "d2": 9, "d3": 8, "d4": 7, "d5": 6, "d6": 5, "d7": 4, "d8": 3}}
_R_BPREF = {**_R4, "q4": {"d1": 10, "d2": 9, "d3": 8, "d4": 7, "d6": 5, "d7": 4, "d8": 3}}
_R_F1 = {**_R4, "q4": {"d1": 10, "d12": 9, "d3": 8, "d14": 7, "d16": 5, "d7": 4, "d8": 3}}
_P_F1 = [1 / 4, 2 / 6, 3 / 8, 0.0]  # precision, recall of f1_test's run
_R_F1S = [1 / 2, 2 / 2, 3 / 3, 0.0]
_RBP_Q = {"q1": {f"d{i}": 1 for i in (1, 2, 6, 11, 17)}}
_RBP_R = {"q1": {f"d{i}": 21 - i for i in range(1, 21)}}
_ZQ = {"q_1": {"doc_a": 1}, "q_2": {"doc_b": 1}, "q_3": {"doc_c": 1}, "q_4": {"doc_d": 1}}
_ZR = {"q_1": {"doc_a": 1.0}, "q_2": {"doc_b": 1.0}, "q_3": {}, "q_4": {"doc_d": 1.0}}
_PRED7 = [4, 5, 6, 2, 1, 7, 3]
_PA_Q = {"1": {1: 1, 2: 1, 3: 1}, "2": {4: 1, 5: 1, 6: 1, 7: 1}, "3": {8: 1, 9: 1}}
_PA_R = {"1": _PRED7, "2": _PRED7, "3": _PRED7}
_RP_R = [2, 4, 3, 1, 5, 6, 7]
_G_Q = {"1": {2: 5, 4: 4, 5: 3, 10: 2}}
_G_RUNS = [[1, 2, 3, 4, 5], [10, 5, 2, 4, 3], [1, 3, 6, 7, 8]]
_L2 = np.log2
_IDCG = 5 / _L2(2) + 4 / _L2(3) + 3 / _L2(4) + 2 / _L2(5)
_IDCG_B = 31 / _L2(2) + 15 / _L2(3) + 7 / _L2(4) + 3 / _L2(5)
_DCG = [5 / _L2(3) + 4 / _L2(5) + 3 / _L2(6),
        2 / _L2(2) + 3 / _L2(3) + 5 / _L2(4) + 4 / _L2(5), 0.0]
_DCG_B = [31 / _L2(3) + 15 / _L2(5) + 7 / _L2(6),
          3 / _L2(2) + 7 / _L2(3) + 31 / _L2(4) + 15 / _L2(5), 0.0]


def _ranx_single_means(fn: str, k: int) -> float:
    """metrics_test.py's expected value: the mean of ranx's single-query values."""
    import ranx.metrics as rm
    from numba.typed import List

    vals = []
    for q in ("1", "2", "3"):
        t = np.array([[d, lab] for d, lab in _PA_Q[q].items()], dtype=np.float64)
        p = np.array([[d, 1] for d in _PA_R[q]], dtype=np.float64)
        vals.append(getattr(rm, fn)(List([t]), List([p]), k)[0])
    return float(np.mean(vals))


UNIT_CASES: list[tuple[str, str, dict, dict, Any]] = [
    ("bpref_test::test_bpref", "bpref", _Q4, _R_BPREF,
     [1 / 2 * (1 - 1 / 2), 1 / 2 * ((1 - 1 / 2) + (1 - 1 / 2)),
      1 / 3 * ((1 - 1 / 3) + (1 - 1 / 3) + (1 - 2 / 3)),
      1 / 4 * ((1 - 1 / 4) + (1 - 2 / 4) + (1 - 2 / 4))]),
    ("f1_test::test_f1", "f1", _Q4, _R_F1,
     [2 * p * r / (p + r) if p + r else 0.0 for p, r in zip(_P_F1, _R_F1S)]),
    ("rank_biased_precision_test (p=0.5)", "rbp.5", _RBP_Q, _RBP_R, ("round4", 0.7661)),
    ("rank_biased_precision_test (p=0.8)", "rbp.8", _RBP_Q, _RBP_R, ("round4", 0.4526)),
    ("rank_biased_precision_test (p=0.95)", "rbp.95", _RBP_Q, _RBP_R, ("round4", 0.1881)),
    ("zero_division_error_test::test_precision", "precision", _ZQ, _ZR, ("mean", 0.75)),
    ("zero_division_error_test::test_recall", "recall", _ZQ, _ZR, ("mean", 0.75)),
    ("zero_division_error_test::test_f1", "f1", _ZQ, _ZR, ("mean", 0.75)),
    ("metrics_test::test_hits", "hits@5",
     {"1": {1: 1, 4: 1, 5: 1, 6: 1}, "2": {1: 1, 4: 1, 6: 1}},
     {"1": [1, 2, 3, 4, 5, 7], "2": [1, 2, 4, 3, 5, 7]}, ("mean", 2.5)),
    # y_t_1 judges document 6 twice: the harness refuses a duplicate (qid, docid)
    ("metrics_test::test_hit_rate", "hit_rate@5",
     {"1": [(9, 1), (6, 1), (8, 1), (6, 1)], "2": {1: 1, 2: 1, 4: 1}},
     {"1": [1, 2, 3, 4, 5, 7], "2": [1, 2, 4, 3, 5, 7]}, ("mean", 0.5)),
    ("metrics_test::test_precision", "precision@5", _PA_Q, _PA_R,
     ("mean_of", "precision", 5)),
    ("metrics_test::test_average_precision", "map@7", _PA_Q, _PA_R,
     ("mean_of", "average_precision", 7)),
    ("metrics_test::test_reciprocal_rank_single", "mrr@5", {"1": {3: 1}},
     {"1": [2, 3, 1, 4, 5]}, [0.5]),
    ("metrics_test::test_reciprocal_rank_single_no_match", "mrr@5", {"1": {3: 1}},
     {"1": [2, 1, 4, 5]}, [0.0]),
    # the third run retrieves document 1 three times: a duplicate (qid, docid)
    ("metrics_test::test_reciprocal_rank", "mrr@5",
     {"1": {3: 1}, "2": {1: 1}, "3": {3: 1}},
     {"1": [2, 3, 1, 4, 5], "2": [1, 2, 3, 4, 5], "3": [1, 1, 1, 4, 5]}, ("mean", 0.5)),
    ("metrics_test::test_r_precision_single", "r-precision", {"1": {1: 1, 2: 1, 3: 1}},
     {"1": _RP_R}, [2 / 3]),
    ("metrics_test::test_r_precision", "r-precision",
     {"1": {1: 1, 2: 1, 3: 1}, "2": {1: 1, 2: 1}}, {"1": _RP_R, "2": _RP_R},
     ("mean", (2 / 3 + 1 / 2) / 2)),
    ("metrics_test::test_recall_single", "recall@2", {"1": {1: 1, 2: 1, 3: 1}},
     {"1": _RP_R}, [1 / 3]),
    ("metrics_test::test_recall", "recall@2", {"1": {1: 1, 2: 1, 3: 1}, "2": {1: 1, 2: 1}},
     {"1": _RP_R, "2": _RP_R}, ("mean", (1 / 3 + 1 / 2) / 2)),
    *[(f"metrics_test::test_dcg_jarvelin #{i + 1}", "dcg@10", _G_Q, {"1": r}, [v])
      for i, (r, v) in enumerate(zip(_G_RUNS, _DCG))],
    *[(f"metrics_test::test_ndcg_jarvelin #{i + 1}", "ndcg@10", _G_Q, {"1": r}, [v / _IDCG])
      for i, (r, v) in enumerate(zip(_G_RUNS, _DCG))],
    *[(f"metrics_test::test_dcg_burges #{i + 1}", "dcg_burges@10" if i < 2 else "dcg@10",
       _G_Q, {"1": r}, [v]) for i, (r, v) in enumerate(zip(_G_RUNS, _DCG_B))],
    *[(f"metrics_test::test_ndcg_burges #{i + 1}", "ndcg_burges@10" if i < 2 else "ndcg@10",
       _G_Q, {"1": r}, [v / _IDCG_B]) for i, (r, v) in enumerate(zip(_G_RUNS, _DCG_B))],
]


def _frames(qrels: dict, run: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    q_rows = [(q, str(d), lab) for q, docs in qrels.items()
              for d, lab in (docs if isinstance(docs, list) else docs.items())]
    r_rows = []
    for q, docs in run.items():
        items = ([(d, float(len(docs) - i)) for i, d in enumerate(docs)]
                 if isinstance(docs, list) else list(docs.items()))
        r_rows += [(q, str(d), float(s)) for d, s in items]
    return (pd.DataFrame(r_rows, columns=["qid", "docid", "score"]),
            pd.DataFrame(q_rows, columns=["qid", "docid", "label"]))


def run_unit_case(name: str, qrels: dict, run: dict, expected: Any) -> str:
    """'pass', 'fail' or 'not expressible' (the harness refuses the input)."""
    run_df, qrels_df = _frames(qrels, run)
    m = parse_metric(f"ranx:{name}")
    try:
        got = harness.evaluate(run_df, qrels_df, [m], missing="zero")[m.display_name]
    except harness.InputError:
        return "not expressible"
    got = got.reindex(list(qrels)).to_numpy(dtype=float)
    if isinstance(expected, list):
        ok = np.allclose(got, expected, rtol=0, atol=1e-12)
    elif expected[0] == "round4":
        ok = round(float(got[0]), 4) == expected[1]
    elif expected[0] == "mean":
        ok = math.isclose(float(np.mean(got)), expected[1], rel_tol=0, abs_tol=1e-12)
    else:
        ok = math.isclose(float(np.mean(got)), _ranx_single_means(*expected[1:]), rel_tol=0,
                          abs_tol=1e-12)
    return "pass" if ok else "fail"


#: the counts docs/measures.md records (section "ranx's metrics")
UNIT_COUNTS = {"pass": 29, "fail": 0, "not expressible": 2}


def test_ranx_unit_test_cases_through_harness_evaluate() -> None:
    results = {src: run_unit_case(n, q, r, e) for src, n, q, r, e in UNIT_CASES}
    counts = {k: sum(v == k for v in results.values()) for k in UNIT_COUNTS}
    assert counts == UNIT_COUNTS, results
    assert {s for s, v in results.items() if v == "not expressible"} == {
        "metrics_test::test_hit_rate", "metrics_test::test_reciprocal_rank"}


def test_the_ranx_checked_against_is_the_one_installed() -> None:
    from importlib.metadata import version

    assert version("ranx") == RANX_VERSION
