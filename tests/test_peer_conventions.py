"""The xgboost, lightgbm, catboost and keras_rs conventions against the libraries themselves,
on randomized data with tied scores, queries without relevant document and query weights.

Versions checked: xgboost 3.2.0, lightgbm 4.7.0, catboost 1.2.10, keras-rs 0.4.0 (on JAX).
Scores are multiples of 1/4 and weights multiples of 1/2, so float32 copies inside the
libraries hold them exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import harness
from harness import Metric, parse_metric
from harness.errors import InputError

TOL = 1e-12
SEEDS = (0, 1, 2)


def _tied_run(seed: int, *, n_queries: int = 40, max_docs: int = 45) -> pd.DataFrame:
    """Queries of 1..max_docs documents, labels 0..4, a fifth of the queries without any
    relevant document, six distinct scores (so ties in every long query); rows grouped by
    qid, docid = row number."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_docs + 1, n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    label = rng.integers(0, 5, len(qid)).astype(np.float64)
    empty = rng.random(n_queries) < 0.2
    empty[:2] = True, False
    label[empty[qid]] = 0.0
    score = rng.integers(0, 6, len(qid)) / 4.0
    return pd.DataFrame({"qid": qid, "docid": np.arange(len(qid)), "score": score,
                         "label": label})


def _query_weights(run: pd.DataFrame, seed: int) -> pd.Series:
    rng = np.random.default_rng(seed + 100)
    qids = np.unique(run["qid"])
    return pd.Series(rng.integers(1, 9, len(qids)) / 2.0, index=qids)


def _harness_mean(run: pd.DataFrame, metric: Metric, weights: pd.Series | None = None
                  ) -> float:
    per_query = harness.evaluate(run, metrics=[metric], weights=weights)
    return float(harness.aggregate(per_query).loc[metric.display_name, "mean"])


def _has_empty_and_ties(run: pd.DataFrame) -> None:
    assert (run.groupby("qid")["label"].max() == 0).any()
    assert run.duplicated(["qid", "score"]).any()


# -- XGBoost ---------------------------------------------------------------------------------

def _xgboost(run: pd.DataFrame, eval_metric: str, weights: pd.Series | None = None) -> float:
    """XGBoost's eval metric on the run's scores as base margins (no boosting round)."""
    import xgboost as xgb

    data = xgb.DMatrix(np.zeros((len(run), 1)), label=run["label"].to_numpy(),
                       qid=run["qid"].to_numpy(), base_margin=run["score"].to_numpy())
    if weights is not None:
        data.set_weight(weights.to_numpy())  # one weight per query group
    booster = xgb.train({"objective": "rank:ndcg", "eval_metric": eval_metric}, data,
                        num_boost_round=0)
    text = booster.eval(data)
    assert f"-{eval_metric}:" in text, text
    return float(text.rsplit(":", 1)[1])


def test_xgboost_ndcg_without_k_counts_32_documents() -> None:
    """33 documents, the only relevant one ranked 33rd: XGBoost's ndcg is 0, ndcg@33 not."""
    run = pd.DataFrame({"qid": 0, "docid": np.arange(33), "score": -np.arange(33.0),
                        "label": np.r_[np.zeros(32), 1.0]})
    assert _xgboost(run, "ndcg") == 0.0
    assert _xgboost(run, "ndcg@33") == pytest.approx(1 / np.log2(34), abs=TOL)
    default = Metric("ndcg", convention="xgboost")
    assert default.k == 32 and default.display_name.startswith("nDCG@32(")
    assert _harness_mean(run, default) == 0.0
    assert Metric("ndcg", k=None, convention="xgboost").k is None  # an explicit k wins
    assert Metric("ndcg", k=5, convention="xgboost").k == 5
    assert parse_metric("ndcg", convention="xgboost").k == 32


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("eval_metric,k", [("ndcg", None), ("ndcg@3", 3), ("ndcg@10", 10),
                                           ("ndcg@40", 40)])
def test_xgboost_ndcg(seed: int, eval_metric: str, k: int | None) -> None:
    run = _tied_run(seed)
    _has_empty_and_ties(run)
    assert run.groupby("qid").size().max() > 32
    metric = Metric("ndcg", convention="xgboost") if k is None else \
        Metric("ndcg", k=k, convention="xgboost")
    expected = _xgboost(run, eval_metric)
    assert abs(_harness_mean(run, metric) - expected) <= TOL
    weights = _query_weights(run, seed)
    expected_w = _xgboost(run, eval_metric, weights)
    assert abs(_harness_mean(run, metric, weights) - expected_w) <= TOL
    # the weighting of queries without relevant document is what makes it agree
    own = metric.with_options(empty_weight="own")
    assert abs(_harness_mean(run, own, weights) - expected_w) > 1e-6


def test_xgboost_whole_list_differs_from_its_default() -> None:
    run = _tied_run(0)
    whole = Metric("ndcg", k=None, convention="xgboost")
    assert abs(_harness_mean(run, whole) - _xgboost(run, "ndcg")) > 1e-6


# -- the weighted-mean example ---------------------------------------------------------------

# query a: labels [0, 1], scores [1, 0], weight 1 (nDCG@1 = 0); query b: all 0, weight 3
_TWO = pd.DataFrame({"qid": ["a", "a", "b", "b"], "docid": [0, 1, 0, 1],
                     "score": [1.0, 0.0, 1.0, 0.0], "label": [0.0, 1.0, 0.0, 0.0]})
_TWO_W = pd.Series({"a": 1.0, "b": 3.0})


def test_xgboost_weights_a_query_without_relevant_document_by_one() -> None:
    run = _TWO.assign(qid=_TWO["qid"].map({"a": 0, "b": 1}))
    expected = _xgboost(run, "ndcg@1", pd.Series([1.0, 3.0]))
    assert expected == 0.25  # (0 * 1 + 1) / (1 + 3)
    assert _harness_mean(_TWO, Metric("ndcg", k=1, convention="xgboost"), _TWO_W) == 0.25
    assert _harness_mean(_TWO, Metric("ndcg", k=1, empty="one"), _TWO_W) == 0.75


# -- LightGBM --------------------------------------------------------------------------------

def _lightgbm(run: pd.DataFrame, ks: tuple[int, ...], row_weights: np.ndarray | None = None
              ) -> dict[int, float]:
    """LightGBM's ndcg@k of the run's scores given as init_score (no boosting round)."""
    import lightgbm as lgb

    sizes = run.groupby("qid", sort=False).size().to_numpy()
    data = lgb.Dataset(np.zeros((len(run), 1)), label=run["label"].to_numpy(), group=sizes,
                       weight=row_weights, init_score=run["score"].to_numpy())
    booster = lgb.Booster({"objective": "lambdarank", "metric": "ndcg", "eval_at": list(ks),
                           "verbose": -1}, data)
    return {int(r.metric_name.split("@")[1]): float(r.metric_value)
            for r in booster.eval_train()}


def _row_weights(run: pd.DataFrame, weights: pd.Series) -> np.ndarray:
    """Row weights whose mean over each query is the query's weight but that vary within
    it (w + d, w - d for rows 2j, 2j+1), so only the mean (not a row, not the sum) fits."""
    pos = run.groupby("qid").cumcount().to_numpy()
    size = run.groupby("qid")["qid"].transform("size").to_numpy()
    qid = run["qid"].to_numpy()
    d = ((qid * 7 + (pos // 2) * 3) % 3 + 1) / 4.0
    d = np.where(pos < size - size % 2, d, 0.0)  # the last row of an odd query: w
    return weights.reindex(qid).to_numpy() + np.where(pos % 2 == 0, d, -d)


@pytest.mark.parametrize("seed", SEEDS)
def test_lightgbm_ndcg_weighted(seed: int) -> None:
    run = _tied_run(seed)
    _has_empty_and_ties(run)
    ks = (1, 3, 5, 10, 40)
    weights = _query_weights(run, seed) + 2.0  # >= 2.5, so a row weight w - d stays > 0
    rows = _row_weights(run, weights)
    means = pd.Series(rows).groupby(run["qid"].to_numpy()).mean()
    assert np.array_equal(means.to_numpy(), weights.to_numpy())
    assert (pd.Series(rows).groupby(run["qid"].to_numpy()).nunique() > 1).any()
    plain, weighted = _lightgbm(run, ks), _lightgbm(run, ks, rows)
    for k in ks:
        metric = Metric("ndcg", k=k, convention="lightgbm")
        assert abs(_harness_mean(run, metric) - plain[k]) <= TOL, k
        assert abs(_harness_mean(run, metric, weights) - weighted[k]) <= TOL, k
        own = metric.with_options(empty_weight="own")
        assert abs(_harness_mean(run, own, weights) - weighted[k]) > 1e-6, k


def test_lightgbm_weighted_example() -> None:
    run = _TWO.assign(qid=_TWO["qid"].map({"a": 0, "b": 1}))
    assert _lightgbm(run, (1,), np.array([1.0, 1.0, 2.0, 4.0]))[1] == 0.25
    assert _harness_mean(_TWO, Metric("ndcg", k=1, convention="lightgbm"), _TWO_W) == 0.25


# -- CatBoost --------------------------------------------------------------------------------

def _catboost(run: pd.DataFrame, spec: str, weights: pd.Series | None = None) -> float:
    from catboost.utils import eval_metric

    kwargs = {} if weights is None else {
        "group_weight": weights.reindex(run["qid"]).to_numpy().tolist()}
    (value,) = eval_metric(run["label"].to_numpy().tolist(), run["score"].to_numpy().tolist(),
                           spec, group_id=run["qid"].to_numpy().tolist(), **kwargs)
    return float(value)


_CATBOOST = [  # CatBoost metric spec -> the options that differ from the convention
    ("NDCG", {}),
    ("NDCG:top=10", {"k": 10}),
    ("NDCG:top=10;type=Exp", {"k": 10, "gain": "exp2"}),
    ("NDCG:top=10;type=Base", {"k": 10}),
    ("NDCG:top=5;type=Base;denominator=Position", {"k": 5, "discount": "reciprocal"}),
    ("NDCG:top=3;type=Exp;denominator=Position", {"k": 3, "gain": "exp2",
                                                 "discount": "reciprocal"}),
    ("NDCG:type=Exp;denominator=LogPosition", {"gain": "exp2"}),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("spec,options", _CATBOOST)
def test_catboost_ndcg(seed: int, spec: str, options: dict) -> None:
    run = _tied_run(seed)
    _has_empty_and_ties(run)
    metric = Metric("ndcg", convention="catboost", **options)
    assert abs(_harness_mean(run, metric) - _catboost(run, spec)) <= TOL
    weights = _query_weights(run, seed)
    assert abs(_harness_mean(run, metric, weights) - _catboost(run, spec, weights)) <= TOL


def test_catboost_ties_are_pessimistic_and_empty_groups_score_one() -> None:
    run = _tied_run(0)
    assert abs(_harness_mean(run, Metric("ndcg", k=10, convention="catboost", ties="average"))
               - _catboost(run, "NDCG:top=10")) > 1e-6
    # one group without relevant document (weight 3) and one scoring 0 at top 1 (weight 1)
    assert _catboost(_TWO.assign(qid=_TWO["qid"].map({"a": 0, "b": 1})), "NDCG:top=1",
                     pd.Series({0: 1.0, 1: 3.0})) == 0.75
    assert _harness_mean(_TWO, Metric("ndcg", k=1, convention="catboost"), _TWO_W) == 0.75


# -- keras_rs --------------------------------------------------------------------------------

@pytest.fixture
def keras_rs_x64():
    """keras_rs with JAX in 64-bit mode (restored afterwards)."""
    import jax

    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    import keras_rs

    yield keras_rs
    jax.config.update("jax_enable_x64", before)


def _dense_lists(seed: int, n_lists: int = 30, size: int = 12) -> tuple[np.ndarray, ...]:
    """Tie-free scores (a permutation per list), labels 0..3, some all-zero lists, and list
    weights (half-integers)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, (n_lists, size)).astype(np.float64)
    y[rng.random(n_lists) < 0.25] = 0.0
    y[0] = 0.0
    s = np.argsort(rng.random((n_lists, size)), axis=1).astype(np.float64) / 8.0
    w = rng.integers(1, 9, n_lists) / 2.0
    return y, s, w


def _keras_rs_ndcg(keras_rs, y, s, w, k):
    """keras_rs NDCG: its per-list values and list weights (float64), and its result()."""
    import jax.numpy as jnp

    metric = keras_rs.metrics.NDCG(k=k, shuffle_ties=False, dtype="float64")
    yt, yp = jnp.asarray(y, jnp.float64), jnp.asarray(s, jnp.float64)
    sw = jnp.broadcast_to(jnp.asarray(w, jnp.float64)[:, None], yt.shape)
    values, list_weights = metric.compute_metric(
        y_true=yt, y_pred=yp, mask=jnp.ones(yt.shape, bool), sample_weight=sw)
    metric.update_state(yt, yp, sample_weight=jnp.asarray(w, jnp.float64))
    return (np.asarray(values, np.float64)[:, 0], np.asarray(list_weights, np.float64)[:, 0],
            float(metric.result()))


def test_keras_rs_weighted_example(keras_rs_x64) -> None:
    y, s = np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])
    _, list_weights, result = _keras_rs_ndcg(keras_rs_x64, y, s, [1.0, 3.0], None)
    assert list_weights.tolist() == [1.0, 1.0]  # the all-zero list gets the graded mean
    assert result == pytest.approx(1 / np.log2(3) / 2, rel=1e-6)
    pq = harness.evaluate_dense(y, s, Metric("ndcg", convention="keras_rs"), weights=[1, 3])
    assert harness.aggregate(pq)["mean"].iloc[0] == pytest.approx(1 / np.log2(3) / 2,
                                                                  abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [None, 1, 5, 10])
def test_keras_rs_ndcg(keras_rs_x64, seed: int, k: int | None) -> None:
    """Per list and weighted mean to 1e-12 against keras_rs's own float64 per-list values
    and list weights. Its result() adds each weighted list value through keras' Mean, which
    rounds it to float32 (keras maps float64 to float32 when it promotes dtypes), so that
    one agrees to float32 precision."""
    y, s, w = _dense_lists(seed)
    values, list_weights, result = _keras_rs_ndcg(keras_rs_x64, y, s, w, k)
    metric = Metric("ndcg", k=k, convention="keras_rs")
    pq = harness.evaluate_dense(y, s, metric, weights=w)
    assert np.abs(pq[metric.display_name].to_numpy() - values).max() <= TOL
    expected = float(np.dot(values, list_weights) / list_weights.sum())
    mean = float(harness.aggregate(pq).loc[metric.display_name, "mean"])
    assert abs(mean - expected) <= TOL
    assert mean == pytest.approx(result, rel=1e-6)
    own = float(harness.aggregate(harness.evaluate_dense(
        y, s, metric.with_options(empty_weight="own"), weights=w))["mean"].iloc[0])
    assert abs(own - expected) > 1e-6
    # unweighted: plain mean, with an all-zero list scoring 0
    unweighted = harness.aggregate(harness.evaluate_dense(y, s, metric))["mean"].iloc[0]
    assert abs(unweighted - float(values.mean())) <= TOL


# -- empty_weight: names, keys, records ------------------------------------------------------

@pytest.mark.parametrize("convention,rule", [("lightgbm", "unweighted"),
                                             ("xgboost", "unweighted"), ("keras_rs", "mean"),
                                             ("catboost", "own")])
def test_empty_weight_round_trips(convention: str, rule: str) -> None:
    m = Metric("ndcg", k=10, convention=convention)
    assert m.empty_weight == rule
    assert parse_metric(m.display_name) == m
    assert (f"empty_weight={rule}" in m.display_name) == (rule != "own")
    assert (f"__empty_weight_{rule}" in m.key) == (rule != "own")
    assert all(c.isalnum() or c in "_.-" for c in m.key)
    others = {m.with_options(empty_weight=r) for r in ("own", "unweighted", "mean")}
    distinct = 2 if m.empty == "zero" else 3  # a 0 adds 0 whether weighted or not
    assert len({o.key for o in others}) == len({o.display_name for o in others}) == distinct


def test_aggregate_reads_the_weighting_from_the_column_name() -> None:
    run = _tied_run(3)
    weights = _query_weights(run, 3)
    metrics = [Metric("ndcg", k=5, empty="one", empty_weight=r)
               for r in ("own", "unweighted", "mean")]
    pq = harness.evaluate(run, metrics=metrics)
    means = harness.aggregate(pq, weights=weights)["mean"]
    values = pq[metrics[0].display_name].to_numpy()
    w = weights.reindex(pq.index).to_numpy()
    empty = (run.groupby("qid")["label"].max() == 0).reindex(pq.index).to_numpy()
    assert empty.any() and (values[empty] == 1.0).all()
    by_hand = {  # the three rules written out
        "own": np.dot(values, w) / w.sum(),
        "unweighted": (np.dot(values[~empty], w[~empty]) + empty.sum()) / w.sum(),
        "mean": np.dot(values, np.where(empty, w[~empty].mean(), w))
        / np.where(empty, w[~empty].mean(), w).sum(),
    }
    for m in metrics:
        assert abs(means[m.display_name] - by_hand[m.empty_weight]) <= TOL, m
    # without weights the rules agree
    plain = harness.aggregate(pq)["mean"]
    assert np.ptp(plain.to_numpy()) <= TOL


def test_aggregate_without_the_record_of_empty_queries_raises() -> None:
    m = Metric("ndcg", k=1, convention="lightgbm")
    pq = harness.evaluate(_TWO, metrics=[m])
    copy = pd.DataFrame(pq.to_dict())  # as read back from a file: no attrs
    assert harness.aggregate(copy)["mean"].iloc[0] == 0.5  # unweighted: no record needed
    with pytest.raises(InputError, match=r"empty_weight='unweighted'.*attrs\['empty_qids'\]"):
        harness.aggregate(copy, weights=_TWO_W)


def test_parquet_batches_keep_the_record_of_empty_queries(tmp_path) -> None:
    run = _tied_run(4)
    weights = _query_weights(run, 4)
    path = tmp_path / "run.parquet"
    run.to_parquet(path)
    m = Metric("ndcg", k=10, convention="lightgbm")
    whole = harness.aggregate(harness.evaluate(run, metrics=[m]), weights=weights)
    parts = harness.evaluate_parquet(path, metrics=[m], batch_rows=100)
    assert harness.aggregate(parts, weights=weights).equals(whole)


# -- labels above max_label ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mndcg", "err"])
def test_label_above_max_label_raises(name: str) -> None:
    run = pd.DataFrame({"qid": ["a", "a", "b", "b"], "docid": [0, 1, 0, 1],
                        "score": [1.0, 0.0, 1.0, 0.0], "label": [1.0, 0.0, 0.0, 3.0]})
    with pytest.raises(InputError, match=r"query 'b' has label 3, above max_label=1"):
        harness.evaluate(run, metrics=[Metric(name, max_label=1)])
    with pytest.raises(InputError, match=r"query 'b' has label 3, above the top grade 2"):
        harness.evaluate(run, metrics=[Metric(name)], top_label=2)
    qrels = run[["qid", "docid", "label"]].assign(docid=[0, 1, 7, 8])  # judged, not retrieved
    with pytest.raises(InputError, match=r"query 'b' has label 3, above max_label=2"):
        harness.evaluate(run.drop(columns="label"), qrels, metrics=[Metric(name, max_label=2)])
    ok = harness.evaluate(run, metrics=[Metric(name, max_label=3)])
    assert (ok[Metric(name, max_label=3).display_name] <= 1.0).all()
