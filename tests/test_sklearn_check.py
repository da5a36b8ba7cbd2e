"""The sklearn cross-check itself: its verdicts against sklearn called query by query here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import ndcg_score

import harness
from harness.metrics.sklearn_check import check_against_sklearn

METRICS = [harness.parse_metric(t) for t in (
    "ndcg@5", "ndcg@10(gain=linear)", "ndcg(ideal=retrieved)", "ndcg@3(ties=input)",
    "ndcg(ties=input)",
    "ndcg@10(empty=one)", "ap@10")]


def _study(n_queries: int = 120, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run with ties, single-document and empty queries, and qrels that hold relevant
    documents the run never retrieved."""
    rng = np.random.default_rng(seed)
    rows, qrels = [], []
    for q in range(n_queries):
        qid = f"query-{q:05d}"
        n = 1 if q % 17 == 0 else int(rng.integers(2, 30))
        labels = rng.choice([0, 0, 0, 1, 2, 3], size=n) if q % 11 else np.zeros(n, int)
        scores = np.round(rng.random(n), 1)  # ties
        for d in range(n):
            rows.append((qid, f"document-{q:05d}-{d:03d}", scores[d]))
            qrels.append((qid, f"document-{q:05d}-{d:03d}", int(labels[d])))
        if q % 5 == 0:  # judged relevant, never retrieved
            qrels.append((qid, f"unretrieved-{q:05d}", 2))
    return (pd.DataFrame(rows, columns=["qid", "docid", "score"]),
            pd.DataFrame(qrels, columns=["qid", "docid", "label"]))


def _order_matters(scores: np.ndarray, labels: np.ndarray, k: int | None) -> bool:
    """Some group of equal scores holds different labels and starts within the top k."""
    for value in np.unique(scores):
        group = labels[scores == value]
        first_rank = int((scores > value).sum()) + 1
        if len(set(group)) > 1 and first_rank <= (k or len(scores)):
            return True
    return False


def _by_hand(run: pd.DataFrame, qrels: pd.DataFrame, metric: harness.Metric,
             per_query: pd.DataFrame) -> tuple[int, float]:
    """Eligible queries and the largest |ours - sklearn|, one ndcg_score call per query."""
    merged = run.merge(qrels, on=["qid", "docid"], how="left").fillna({"label": 0})
    count, worst = 0, 0.0
    for qid, group in merged.groupby("qid"):
        labels, scores = group["label"].to_numpy(float), group["score"].to_numpy(float)
        gains = labels if metric.gain == "linear" else 2.0 ** labels - 1
        judged_pos = int((qrels.loc[qrels["qid"] == qid, "label"] > 0).sum())
        if len(labels) < 2 or qid not in per_query.index:
            continue
        if metric.ideal == "judged" and int((labels > 0).sum()) != judged_pos:
            continue
        if metric.ties != "average" and _order_matters(scores, labels, metric.k):
            continue
        if metric.empty != "zero" and not (gains > 0).any():
            continue
        theirs = ndcg_score([gains], [scores], k=metric.k)
        worst = max(worst, abs(theirs - per_query.at[qid, metric.display_name]))
        count += 1
    return count, worst


def test_verdicts_match_sklearn_query_by_query() -> None:
    run, qrels = _study()
    per_query = harness.evaluate(run, qrels, METRICS)
    results = {r.variant: r for r in check_against_sklearn(run, qrels, METRICS, per_query)}
    for m in METRICS:
        r = results[m.display_name]
        if m.name != "ndcg":
            assert r.status == "not checked" and r.reason == "sklearn has no ap"
            continue
        count, worst = _by_hand(run, qrels, m, per_query)
        assert r.status == "checked" and r.n_checked == count > 0
        assert r.n_checked + r.n_not_checked == len(per_query)
        assert r.max_abs_diff < 1e-12 and worst < 1e-12
        assert r.sample_size == 0


def test_a_wrong_value_fails_even_in_a_tied_query() -> None:
    run, qrels = _study()
    metric = harness.parse_metric("ndcg@5")
    per_query = harness.evaluate(run, qrels, [metric])
    merged = run.merge(qrels, on=["qid", "docid"], how="left").fillna({"label": 0})
    tied = [q for q, g in merged.groupby("qid") if g["score"].duplicated().any()
            and g["label"].gt(0).any() and len(g) >= 2
            and g["label"].gt(0).sum() == qrels[(qrels.qid == q) & (qrels.label > 0)].shape[0]]
    # the value sklearn gives when it ignores ties: wrong under tie averaging
    qid = next(q for q in tied if abs(ndcg_score(
        [2.0 ** merged[merged.qid == q]["label"].to_numpy() - 1],
        [merged[merged.qid == q]["score"].to_numpy()], k=5, ignore_ties=True)
        - per_query.at[q, metric.display_name]) > 1e-6)
    g = merged[merged.qid == qid]
    per_query.at[qid, metric.display_name] = ndcg_score(
        [2.0 ** g["label"].to_numpy() - 1], [g["score"].to_numpy()], k=5, ignore_ties=True)
    (result,) = check_against_sklearn(run, qrels, [metric], per_query)
    assert result.failed(1e-9) and result.worst_qid == qid


def test_above_max_queries_a_seeded_sample_is_checked() -> None:
    run, qrels = _study(n_queries=300)
    metric = harness.parse_metric("ndcg@10(ideal=retrieved)")
    per_query = harness.evaluate(run, qrels, [metric])
    (whole,) = check_against_sklearn(run, qrels, [metric], per_query)
    (a,) = check_against_sklearn(run, qrels, [metric], per_query, max_queries=60, seed=4)
    (b,) = check_against_sklearn(run, qrels, [metric], per_query, max_queries=60, seed=4)
    (c,) = check_against_sklearn(run, qrels, [metric], per_query, max_queries=60, seed=5)
    assert a == b and a.sample_size == 60 and whole.sample_size == 0
    assert 0 < a.n_checked <= 60 < whole.n_checked
    assert a.n_checked + a.n_not_checked == len(per_query)
    assert a.max_abs_diff < 1e-12 and (a.worst_qid, a.n_checked) != (c.worst_qid, c.n_checked)
    per_query[metric.display_name] += 0.1  # wrong everywhere: any sample finds it
    (bad,) = check_against_sklearn(run, qrels, [metric], per_query, max_queries=60)
    assert bad.failed(1e-9)


@pytest.mark.parametrize("with_qrels", [True, False])
def test_labels_in_the_run_or_in_qrels_give_the_same_verdict(with_qrels: bool) -> None:
    run, qrels = _study(n_queries=60, seed=3)
    metric = harness.parse_metric("ndcg@10(ideal=retrieved)")
    if with_qrels:
        per_query = harness.evaluate(run, qrels, [metric])
        (r,) = check_against_sklearn(run, qrels, [metric], per_query)
    else:
        labelled = run.merge(qrels, on=["qid", "docid"], how="left").fillna({"label": 0})
        per_query = harness.evaluate(labelled, None, [metric])
        (r,) = check_against_sklearn(labelled, None, [metric], per_query)
    count, worst = _by_hand(run, qrels, metric, per_query)
    assert r.n_checked == count and r.max_abs_diff < 1e-12


def test_the_tie_averaged_path_is_bounded_and_says_so() -> None:
    run, qrels = _study(n_queries=200, seed=8)
    metric = harness.parse_metric("ndcg@10(ideal=retrieved)")
    per_query = harness.evaluate(run, qrels, [metric])
    (whole,) = check_against_sklearn(run, qrels, [metric], per_query)
    (bounded,) = check_against_sklearn(run, qrels, [metric], per_query, max_tied_queries=10)
    merged = run.merge(qrels, on=["qid", "docid"], how="left").fillna({"label": 0})
    order_matters = sum(_order_matters(g["score"].to_numpy(), g["label"].to_numpy(), 10)
                        for _, g in merged.groupby("qid") if len(g) >= 2)
    assert order_matters > 10 and whole.note == ""
    assert bounded.n_checked == whole.n_checked - (order_matters - 10)
    assert bounded.note == (f"tie-averaged path on a seeded sample of 10 of {order_matters} "
                            "queries with ties (check.max_tied_queries)")
    assert bounded.max_abs_diff < 1e-12


def test_sklearn_side_computed_beforehand_gives_the_same_verdicts() -> None:
    """sklearn's values computed before the harness's table (as a study does during its
    pass over a parquet run) give the verdicts computed with the table; a side computed
    for other queries is not used (the verdicts are those of the table's queries)."""
    import dataclasses

    from harness.metrics.sklearn_check import sklearn_side

    def fields(results: list) -> list:  # NaN (not checked) equal to NaN
        return [tuple("nan" if isinstance(v, float) and np.isnan(v) else v
                      for v in dataclasses.astuple(r)) for r in results]

    run, qrels = _study()
    per_query = harness.evaluate(run, qrels, METRICS)
    plain = check_against_sklearn(run, qrels, METRICS, per_query, max_tied_queries=5)
    side = sklearn_side(run, qrels, METRICS, per_query.index, max_tied_queries=5)
    assert fields(check_against_sklearn(run, qrels, METRICS, per_query, max_tied_queries=5,
                                        side=side)) == fields(plain)
    fewer = sklearn_side(run, qrels, METRICS, per_query.index[:10], max_tied_queries=5)
    again = check_against_sklearn(run, qrels, METRICS, per_query, max_tied_queries=5,
                                  side=fewer)
    assert fields(again) == fields(plain)
    assert sum(r.n_checked for r in again) > sum(
        r.n_checked for r in check_against_sklearn(run, qrels, METRICS, per_query.iloc[:10],
                                                   max_tied_queries=5, side=fewer))
