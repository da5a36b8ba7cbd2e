"""The MLflow model evaluator (issue 39): ``mlflow.models.evaluate(model, data,
targets="label", evaluators="harness", ...)`` logs the harness's per-query table, summary
metrics and sklearn check to the evaluation's run, and its metrics pass through MLflow's
``validate_evaluation_results`` thresholds against a baseline model.

The installed MLflow dispatches a registered evaluator by name (checked below); harness
declares it under the ``mlflow.model_evaluator`` entry point, found once harness is
installed. Here it is registered in MLflow's registry directly, so the test does not depend
on which checkout the environment's editable install points to."""

from __future__ import annotations

import tomllib
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow.models import MetricThreshold
from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry

import harness
from harness.datasets import load_dataset
from harness.interop.mlflow_evaluator import HarnessEvaluator, metric_key

METRICS = ["nDCG@10", "trec_eval:ndcg_cut.10", "RR"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def data(shared_data: Path) -> pd.DataFrame:
    """CAsT 2021's BM25 candidates, labelled: a feature ``run_score``, the label."""
    folder = shared_data / "trec_cast_2021"
    docs = load_dataset("trec", name="cast", run_path=str(folder / "org_manual_bm25.run"),
                        qrels_path=str(folder / "trec-cast-qrels-docs.2021.qrel")).docs
    return docs[["qid", "docid", "run_score", "label"]]


@pytest.fixture(scope="module")
def tracking(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store of the module's own (its experiment's id), artifacts under its folder."""
    import mlflow.tracking._tracking_service.utils as tracking_utils

    before = tracking_utils._tracking_uri  # None when unset: put back as it was, not resolved
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    # artifacts under the test's folder, not MLflow's default ./mlruns
    experiment = mlflow.create_experiment("doors", artifact_location=str(folder / "artifacts"))
    _model_evaluation_registry.register("harness", HarnessEvaluator)
    yield experiment
    tracking_utils._tracking_uri = before  # set_tracking_uri(before) would pin the default


def _evaluate(data: pd.DataFrame, sign: float, experiment: str) -> object:
    def model(features: pd.DataFrame) -> object:
        return sign * features["run_score"].to_numpy()

    with mlflow.start_run(experiment_id=experiment):
        return mlflow.models.evaluate(
            model, data, targets="label", model_type="ranker", evaluators="harness",
            evaluator_config={"qid": "qid", "docid": "docid", "metrics": METRICS})


def test_the_entry_point_is_declared() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    entry = pyproject["project"]["entry-points"]["mlflow.model_evaluator"]
    assert entry == {"harness": "harness.interop.mlflow_evaluator:HarnessEvaluator"}


def test_mlflow_dispatches_the_registered_evaluator(tracking: str) -> None:
    from mlflow.models.evaluation.base import resolve_evaluators_and_configs

    assert isinstance(_model_evaluation_registry.get_evaluator("harness"), HarnessEvaluator)
    # every registered evaluator that says yes runs when none is named: a ranker meets this
    # one, a classifier or a regressor never does
    names = {model_type: {b.name for b in resolve_evaluators_and_configs(None, None,
                                                                          model_type)}
             for model_type in ("ranker", "classifier", "regressor")}
    assert "harness" in names["ranker"]
    assert "harness" not in names["classifier"] | names["regressor"]
    assert names["classifier"] and names["regressor"]


def test_evaluate_logs_the_study_outputs(tracking: str, data: pd.DataFrame) -> None:
    result = _evaluate(data, 1.0, tracking)
    rows = data.rename(columns={"run_score": "score"})
    table = harness.evaluate(rows, None, METRICS)
    means = harness.aggregate(table)["mean"]
    expected = {metric_key(name): float(value) for name, value in means.items()}
    assert set(expected) == {"nDCG_10", "nDCG_10_gain_linear_ties_docid", "RR"}
    checks = {k: v for k, v in result.metrics.items() if k.startswith("sklearn_check.")}
    assert {k: v for k, v in result.metrics.items() if k not in checks} == expected
    # nDCG@10 and trec_eval's nDCG@10 are both checked; RR is not sklearn's
    assert checks["sklearn_check.n_variants_checked"] == 2.0
    assert checks["sklearn_check.n_variants_not_checked"] == 1.0
    assert checks["sklearn_check.max_abs_diff"] < 1e-12
    run = mlflow.MlflowClient().get_run(result.run_id)
    assert run.data.metrics == result.metrics
    logged = {a.path for a in mlflow.MlflowClient().list_artifacts(result.run_id)}
    assert logged == {"per_query.csv", "summary.csv", "sklearn_check.csv"}
    summary = result.artifacts["summary"].content.set_index("variant")
    assert summary.loc["RR", "mean"] == means["RR"]
    per_query = pd.read_csv(mlflow.artifacts.download_artifacts(
        run_id=result.run_id, artifact_path="per_query.csv"), dtype={"qid": str})
    pd.testing.assert_frame_equal(per_query.set_index("qid")[table.columns], table,
                                  check_exact=False, rtol=1e-15, check_dtype=False)
    check = result.artifacts["sklearn_check"].content
    ndcg = check.set_index("variant").loc["nDCG@10"]
    assert ndcg["status"] == "checked" and ndcg["max_abs_diff"] < 1e-12


def test_mlflow_validation_thresholds_read_its_metrics(tracking: str,
                                                        data: pd.DataFrame) -> None:
    candidate = _evaluate(data, 1.0, tracking)
    baseline = _evaluate(data, -1.0, tracking)  # BM25's ranking reversed
    assert candidate.metrics["nDCG_10"] > baseline.metrics["nDCG_10"] + 0.1
    mlflow.validate_evaluation_results(
        {"nDCG_10": MetricThreshold(threshold=0.2, min_absolute_change=0.1,
                                    greater_is_better=True)}, candidate, baseline)
    with pytest.raises(Exception, match="nDCG_10"):
        mlflow.validate_evaluation_results(
            {"nDCG_10": MetricThreshold(threshold=0.99, greater_is_better=True)}, candidate)
