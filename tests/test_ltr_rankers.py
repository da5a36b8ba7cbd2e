"""The learning-to-rank kinds (harness/rankers/ltr.py) on LightGBM's lambdarank sample.

Each library trains briefly (few rounds, one thread). The expected value of every check is
the library's own number: the validation metric it reported while training (LightGBM
``ndcg@k``, XGBoost ``ndcg@k``, CatBoost ``NDCG:top=k``), and that metric of the same
scores computed again by the library with no boosting round.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.datasets import Dataset, load_dataset
from harness.errors import InputError
from harness.rankers import RankerSpec, score
from harness.rankers.ltr import Trained, split_queries, train_ltr
from harness.rankers.trainer_check import harness_value, library_value, trainer_check

TOL = 1e-9
_BRIEF = {"lightgbm": ("lambdarank", {"n_estimators": 12, "num_leaves": 7}),
          "xgboost": ("rank:ndcg", {"n_estimators": 12, "max_depth": 3}),
          "catboost": ("YetiRank", {"iterations": 12, "depth": 3})}
_OBJECTIVES = [("lightgbm", "rank_xendcg"), ("xgboost", "rank:pairwise"),
               ("catboost", "PairLogit"), ("catboost", "QueryRMSE")]


@functools.cache
def _sample(data: Path) -> Dataset:
    folder = data / "lightgbm_lambdarank"
    return load_dataset("letor", name="lightgbm_sample", train_path=str(folder / "rank.train"),
                        test_path=str(folder / "rank.test"), n_features=300)


@pytest.fixture
def sample(shared_data: Path) -> Dataset:
    return _sample(shared_data)


def _spec(kind: str, objective: str | None = None, eval_at: int = 10, **params) -> RankerSpec:
    default, brief = _BRIEF[kind]
    return RankerSpec(f"m_{kind}", kind, {"objective": objective or default, "seed": 3,
                                          "threads": 1, "eval_at": eval_at,
                                          "early_stopping": 5, "params": brief | params})


def _check(kind: str, trained: Trained, valid, k: int) -> None:
    ours, per_query = harness_value(kind, k, valid, trained.valid_scores)
    assert abs(ours - trained.value) <= TOL, (kind, ours, trained.value)
    # the reported number is the library's metric of exactly these scores
    again = library_value(kind, k, _valid_run(valid, trained.valid_scores))
    assert abs(again - trained.value) <= TOL, (kind, again, trained.value)
    assert len(per_query) == len(valid.sizes)


def _valid_run(valid, scores):
    import pandas as pd

    return pd.DataFrame({"qid": valid.qid, "score": scores, "label": valid.y})


@pytest.mark.parametrize("kind", list(_BRIEF))
@pytest.mark.parametrize("k", [5, 10])
def test_trainer_metric_equals_the_harness_preset(sample: Dataset, kind: str, k: int) -> None:
    run, trained, valid, tags = train_ltr(_spec(kind, eval_at=k), sample)
    _check(kind, trained, valid, k)
    assert tags["trainer.check"] == "pass"
    assert tags["trainer.metric"] == {"lightgbm": f"ndcg@{k}", "xgboost": f"ndcg@{k}",
                                      "catboost": f"NDCG:top={k};type=Base"}[kind]
    assert float(tags["trainer.value"]) == trained.value
    assert abs(float(tags["trainer.harness_value"]) - trained.value) <= TOL
    test = sample.test
    assert run["qid"].tolist() == test["qid"].tolist() and np.isfinite(run["score"]).all()
    assert run["score"].nunique() > 10  # a model, not a constant


@pytest.mark.parametrize("kind,objective", _OBJECTIVES)
def test_other_objectives_train_and_agree(sample: Dataset, kind: str, objective: str) -> None:
    _, trained, valid, _ = train_ltr(_spec(kind, objective), sample)
    _check(kind, trained, valid, 10)


def test_the_run_is_seeded_and_cached_with_its_tags(sample: Dataset, tmp_path: Path) -> None:
    spec = _spec("lightgbm", bagging_fraction=0.7, bagging_freq=1)
    first, key, hit, tags = score(spec, sample, tmp_path)
    again, key2, hit2, cached_tags = score(spec, sample, tmp_path)
    assert (hit, hit2, key) == (False, True, key2)
    assert cached_tags == tags and tags["trainer.check"] == "pass"
    assert np.array_equal(first["score"], again["score"])
    other = RankerSpec(spec.name, spec.kind, {**spec.options, "params": {
        **spec.options["params"], "num_leaves": 15}})
    assert score(other, sample, tmp_path)[1] != key  # the parameters are in the cache key


def test_validation_holds_whole_queries_seeded(sample: Dataset) -> None:
    train = sample.split("train")
    fit, valid = split_queries(train, 0.2, 7, "m")
    fit2, valid2 = split_queries(train, 0.2, 7, "m")
    assert set(fit["qid"]).isdisjoint(valid["qid"])
    assert len(fit) + len(valid) == len(train)
    assert valid["qid"].nunique() == 40 and valid.index.equals(valid2.index)
    assert not valid.index.equals(split_queries(train, 0.2, 8, "m")[1].index)


@pytest.mark.parametrize("kind,key", [("lightgbm", "num_leavs"), ("xgboost", "max_dept"),
                                      ("catboost", "dept")])
def test_an_unknown_parameter_names_the_key(sample: Dataset, kind: str, key: str) -> None:
    with pytest.raises(InputError, match=rf"has no parameter '{key}'") as info:
        train_ltr(_spec(kind, **{key: 3}), sample)
    assert info.value.key == f"ranker.m_{kind}.params.{key}"
    assert "\n" not in str(info.value)


def test_aliases_are_known_parameters(sample: Dataset) -> None:
    # min_data_in_leaf is LightGBM's alias of min_child_samples; eta is XGBoost's learning_rate
    train_ltr(_spec("lightgbm", min_data_in_leaf=5), sample)
    train_ltr(_spec("xgboost", eta=0.2), sample)


def test_a_bad_objective_and_an_own_option_in_params(sample: Dataset) -> None:
    with pytest.raises(InputError, match="'rank:foo' is not one of XGBoost's ranking "
                                         "objectives: rank:ndcg, rank:pairwise, rank:map"):
        train_ltr(_spec("xgboost", "rank:foo"), sample)
    with pytest.raises(InputError, match="set 'random_state' with the ranker's own option"):
        train_ltr(_spec("lightgbm", random_state=1), sample)
    with pytest.raises(InputError, match="rank:map needs binary labels .* up to 4"):
        train_ltr(_spec("xgboost", "rank:map"), sample)  # graded labels 0..4
    with pytest.raises(InputError, match="LightGBM refused its parameters: .*num_leaves"):
        train_ltr(_spec("lightgbm", num_leaves=1), sample)


@pytest.mark.parametrize("kind,module", [("lightgbm", "lightgbm"), ("xgboost", "xgboost"),
                                         ("catboost", "catboost")])
def test_a_missing_library_names_the_extra(sample: Dataset, kind: str, module: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(InputError, match=r"needs \w+, which is not installed: pip install "
                                         r"'harness\[ltr\]'"):
        train_ltr(_spec(kind), sample)


def test_a_disagreement_fails_the_check(sample: Dataset) -> None:
    _, trained, valid, _ = train_ltr(_spec("lightgbm"), sample)
    off = Trained(trained.model, trained.metric, trained.value + 1e-6, trained.valid_scores,
                  trained.best_iteration, trained.predict)
    tags = trainer_check(_spec("lightgbm"), off, valid, 10)
    assert tags["trainer.check"] == "fail"
    assert tags["trainer.differs"].startswith("no single query differs")



@pytest.mark.parametrize("kind", list(_BRIEF))
def test_the_differing_query_is_named(sample: Dataset, kind: str) -> None:
    from harness.rankers.trainer_check import _differing_query

    _, trained, valid, _ = train_ltr(_spec(kind), sample)
    _, per_query = harness_value(kind, 10, valid, trained.valid_scores)
    assert _differing_query(kind, 10, valid, trained, per_query).startswith("no single")
    wrong = per_query.copy()
    qid = wrong.index[3]
    wrong.iloc[3] += 0.25 if wrong.iloc[3] < 0.5 else -0.25
    text = _differing_query(kind, 10, valid, trained, wrong)
    assert text.startswith(f"query {qid}: library {per_query.iloc[3]!r}"[:20]), text


def test_the_ranker_run_carries_the_trainer_tags_and_its_model(
        tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hydra import compose, initialize_config_dir
    from mlflow import MlflowClient

    from harness.app.config import register_configs
    from harness.app.study import run_study

    for var in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"):
        monkeypatch.setenv(var, "0")  # run_study sets them: put back at teardown
        monkeypatch.delenv(var)
    register_configs()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with initialize_config_dir(version_base="1.3",
                               config_dir=str(Path(__file__).parents[1] / "conf")):
        cfg = compose("config", overrides=[
            "dataset=lightgbm_sample", "ranker=lambdamart", "metric=ndcg10",
            "ranker.lambdamart.params.n_estimators=8", f"tracking.uri={uri}",
            f"tracking.artifact_root={tmp_path / 'art'}", "tracking.figures=off",
            f"tracking.pending_dir={tmp_path / 'pending'}", f"cache_dir={tmp_path / 'cache'}"])
    result = run_study(cfg, tmp_path / "out")
    client = MlflowClient(uri)
    run_id = result.run_ids["ranker:lambdamart"]
    tags = client.get_run(run_id).data.tags
    assert tags["trainer.metric"] == "ndcg@10" and tags["trainer.check"] == "pass"
    assert abs(float(tags["trainer.value"]) - float(tags["trainer.harness_value"])) <= TOL
    assert tags["ranker.kind"] == "lightgbm"
    # training is reported apart from evaluation, with the fit's own seconds
    summary = result.closing_summary("s")
    assert f"Training {float(tags['trainer.seconds']):.1f}s (lambdamart" in summary
    # the model is logged with its flavour, from the run, and LightGBM itself reads it back
    # to the very scores the study evaluated
    model = client.get_logged_model(tags["ranker.model_uri"].removeprefix("models:/"))
    assert (model.source_run_id, model.name, str(model.status)) == (run_id, "model", "READY")
    assert model.params["objective"] == "lambdarank"  # the ranker's options as its params
    assert model.params["params.n_estimators"] == "8"
    logged = {m.key: m.value for m in model.metrics or []}
    assert logged["trainer.value"] == float(tags["trainer.value"])
    import lightgbm
    import mlflow.artifacts
    import pandas as pd

    local = Path(mlflow.artifacts.download_artifacts(f"{model.artifact_location}/",
                                                     dst_path=str(tmp_path / "model")))
    assert "lightgbm" in (local / "MLmodel").read_text()
    booster = lightgbm.Booster(model_file=str(local / "model.lgb"))
    ds = _sample(shared_data)
    scored = pd.read_parquet(next((tmp_path / "cache").glob("*.parquet")))
    assert np.array_equal(booster.predict(ds.test[list(ds.features)].to_numpy(np.float64)),
                          scored["score"].to_numpy())
    # reproduce scores with that model: nothing is trained again
    from harness.reproduce import reproduce_run

    monkeypatch.setattr("harness.rankers.ltr.train_ltr", _no_training)
    repro = reproduce_run(run_id, tracking_uri=uri)
    assert repro.identical, repro
    assert any(tags["ranker.model_uri"] in note for note in repro.notes), repro.notes


def _no_training(*_: object) -> None:
    raise AssertionError("trained again")


@pytest.mark.parametrize("kind", ["sklearn", *_BRIEF])
def test_a_trained_model_is_saved_cached_and_read_back(sample: Dataset, tmp_path: Path,
                                                       kind: str) -> None:
    from harness.rankers.models import load_model, predict

    few = [str(c) for c in sample.features[:20]]  # a small model: the round trip is the point
    spec = (_spec(kind) if kind != "sklearn" else RankerSpec(
        "m_sklearn", "sklearn", {"params": {"max_iter": 8}, "seed": 1, "features": few}))
    cache = tmp_path / "cache"
    run, _, hit, _ = score(spec, sample, cache, model_dir=tmp_path / "a")
    assert not hit and (tmp_path / "a" / "MLmodel").is_file()
    cols = few if kind == "sklearn" else [str(c) for c in sample.features]
    X = sample.test[cols].to_numpy(np.float64)
    assert np.array_equal(predict(kind, load_model(kind, tmp_path / "a"), X),
                          run["score"].to_numpy())
    again, _, hit, _ = score(spec, sample, cache, model_dir=tmp_path / "b")
    assert hit and (tmp_path / "b" / "MLmodel").is_file()  # the cached model comes along
    assert again["score"].equals(run["score"])
    import shutil

    shutil.rmtree(next(cache.glob("*.model")))  # a cached run without its model: trained
    _, _, hit, _ = score(spec, sample, cache, model_dir=tmp_path / "c")
    assert not hit and (tmp_path / "c" / "MLmodel").is_file()


def test_the_trec_eval_gap_is_trec_eval_s_number(sample: Dataset) -> None:
    import pytrec_eval

    run, trained, valid, tags = train_ltr(_spec("lightgbm", n_estimators=20), sample)
    qrels, scores = {}, {}  # trec_eval breaks ties by docno: the dataset's (d0, d1, ...)
    for q, d, label, s in zip(valid.qid, valid.docid, valid.y, trained.valid_scores,
                              strict=True):
        qrels.setdefault(str(q), {})[d] = int(label)
        scores.setdefault(str(q), {})[d] = float(s)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(scores)
    expected = float(np.mean([v["ndcg_cut_10"] for v in per_query.values()]))
    assert len(per_query) == len(valid.sizes)
    assert abs(float(tags["trainer.trec_eval_value"]) - expected) <= TOL
    assert abs(float(tags["trainer.trec_eval_gap"]) - (expected - trained.value)) <= 1e-6
    assert "gain exp2 -> linear" in tags["trainer.trec_eval_why"]
