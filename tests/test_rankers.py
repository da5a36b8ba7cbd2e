"""Rankers from the registry: each gives the scores its definition says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.datasets import load_dataset
from harness.errors import InputError
from harness.rankers import RankerSpec, cache_key, score


@pytest.fixture(scope="module")
def synthetic():
    return load_dataset("synthetic", n_queries=30, n_train_queries=30, min_docs=5,
                        max_docs=12, seed=3)


def test_oracle_and_feature_scores(synthetic) -> None:
    test = synthetic.test
    run, _, _, _ = score(RankerSpec("o", "oracle"), synthetic)
    assert np.array_equal(run["score"].to_numpy(), test["label"].to_numpy(dtype=float))
    run, _, _, _ = score(RankerSpec("f", "feature", {"feature": "f1"}), synthetic)
    assert np.array_equal(run["score"].to_numpy(), test["f1"].to_numpy())
    with pytest.raises(InputError, match=r"no feature 'nope'.*f0, f1"):
        score(RankerSpec("f", "feature", {"feature": "nope"}), synthetic)


def test_noisy_oracle_is_seeded(synthetic) -> None:
    a, _, _, _ = score(RankerSpec("n", "noisy_oracle", {"sigma": 0.5, "seed": 1}), synthetic)
    b, _, _, _ = score(RankerSpec("n", "noisy_oracle", {"sigma": 0.5, "seed": 1}), synthetic)
    c, _, _, _ = score(RankerSpec("n", "noisy_oracle", {"sigma": 0.5, "seed": 2}), synthetic)
    assert a.equals(b) and not a.equals(c)
    noise = a["score"].to_numpy() - synthetic.test["label"].to_numpy(dtype=float)
    assert 0.3 < noise.std() < 0.7


def test_score_cache_hits_and_keys(synthetic, tmp_path: Path) -> None:
    spec = RankerSpec("r", "random", {"seed": 4})
    first, key, hit, _ = score(spec, synthetic, tmp_path)
    again, key2, hit2, _ = score(spec, synthetic, tmp_path)
    assert (hit, hit2) == (False, True) and key == key2
    assert np.array_equal(first["score"].to_numpy(), again["score"].to_numpy())
    assert cache_key(RankerSpec("r", "random", {"seed": 5}), synthetic) != key


def test_mlflow_model_ranker_scores_like_the_model(synthetic, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A model registered in an MLflow store ranks through ``models:/name/1``."""
    import mlflow
    import mlflow.sklearn
    from sklearn.linear_model import Ridge

    store = f"sqlite:///{tmp_path}/m.db"
    train = synthetic.split("train")
    features = list(synthetic.features)
    model = Ridge(alpha=1.0).fit(train[features].to_numpy(), train["label"].to_numpy())
    with monkeypatch.context() as env:  # the registry is found through the environment only
        env.setenv("MLFLOW_TRACKING_URI", store)
        exp = mlflow.create_experiment("models", artifact_location=(tmp_path / "a").as_uri())
        with mlflow.start_run(experiment_id=exp):
            mlflow.sklearn.log_model(model, name="model", registered_model_name="ranker_v",
                                     input_example=train[features].head(2))
    spec = RankerSpec("m", "mlflow_model", {"uri": "models:/ranker_v/1",
                                            "tracking_uri": store})
    run, _, _, _ = score(spec, synthetic, tmp_path / "cache")
    expected = model.predict(synthetic.test[features].to_numpy())
    np.testing.assert_allclose(run["score"].to_numpy(), expected, rtol=1e-12)
    assert (tmp_path / "cache").is_dir()  # a pinned version is cached
    bad = RankerSpec("m", "mlflow_model", {"uri": "models:/ranker_v/7", "tracking_uri": store})
    with pytest.raises(InputError, match=r"ranker 'm': cannot load model 'models:/ranker_v/7'"):
        score(bad, synthetic)


def test_run_file_ranker_reads_the_run(shared_data: Path) -> None:
    ds = load_dataset("trec", name="cast",
                      qrels_path=str(shared_data / "trec_cast_2021/trec-cast-qrels-docs.2021.qrel"),
                      run_path=str(shared_data / "trec_cast_2021/org_manual_bm25.run"))
    path = shared_data / "trec_cast_2021/org_manual_ance.run"
    run, key, _, _ = score(RankerSpec("ance", "run_file", {"path": str(path)}), ds)
    raw = pd.read_csv(path, sep=r"\s+", header=None, names=["qid", "q0", "docid", "rank",
                                                             "score", "tag"], dtype=str)
    judged = set(ds.qrels["qid"])
    assert len(run) == int(raw["qid"].isin(judged).sum())
    assert set(run["qid"]) == judged
