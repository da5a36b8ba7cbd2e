"""``mlflow.models.evaluate(model, data, targets="label", model_type="ranker",
evaluators="harness", evaluator_config={"qid": "qid", "metrics": [...]})``: a model scored
and evaluated as a study evaluates a ranker, inside MLflow's own evaluation API.

The evaluator is declared under MLflow's ``mlflow.model_evaluator`` entry point
(pyproject.toml), so an installed harness is found by name. ``data`` holds one row per
(query, document): the ``qid`` column (``evaluator_config["qid"]``), optionally a document id
column (``"docid"``, else the row number), the label column (``targets``) and the model's
features (every other column, or ``"features"``). It logs to the evaluation's run, as a
study logs a ranker:

- ``per_query.csv``: the per-query table of :func:`harness.evaluate`; ``summary.csv``: its
  :func:`harness.aggregate` (mean, queries used and excluded);
- ``sklearn_check.csv``: each nDCG variant against :func:`sklearn.metrics.ndcg_score`, and
  the study's ``sklearn_check.*`` metrics (``max_abs_diff``: a threshold can gate on it);
- one metric per definition, its mean over queries, named by the definition's display name
  with ``@``, ``(``, ``)``, ``=``, ``,`` and ``:`` as ``_``, which
  ``mlflow.validate_evaluation_results`` thresholds name (``nDCG_10``).

MLflow asks a ``model_type``: this evaluator evaluates ``"ranker"`` only, so that an
evaluation with every registered evaluator (``evaluators=None``) of a classifier or a
regressor never meets it.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.metrics.engine.evaluate import aggregate, as_metrics, evaluate
from harness.metrics.sklearn_check import check_against_sklearn

__all__ = ["HarnessEvaluator", "metric_key", "score_frame"]

#: the ``model_type`` this evaluator evaluates
MODEL_TYPE = "ranker"

#: what the evaluator_config may hold
CONFIG_KEYS = ("qid", "docid", "metrics", "features")


def metric_key(display_name: str) -> str:
    """The MLflow metric name of a definition: its display name with the characters MLflow's
    metric names and thresholds read poorly as ``_`` (``nDCG@10(ties=average)`` ->
    ``nDCG_10_ties_average``)."""
    return re.sub(r"_+", "_", re.sub(r"[@()=,:]", "_", display_name)).strip("_")


def score_frame(features: pd.DataFrame, labels: Any, predict: Any,
                config: dict[str, Any]) -> pd.DataFrame:
    """The ``qid, docid, score, label`` rows of an evaluation dataset: ``predict`` (the
    model's, or None when the scores are the dataset's predictions, given as an array)
    scores the feature columns."""
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise InputError(f"evaluator_config: unknown key(s) {unknown}; known: "
                         f"{', '.join(CONFIG_KEYS)}", key=f"evaluator_config.{unknown[0]}")
    qid = config.get("qid", "qid")
    docid = config.get("docid")
    for key, column in (("qid", qid), ("docid", docid)):
        if column is not None and column not in features.columns:
            raise InputError(f"evaluator_config[{key!r}]: no column {column!r} in the data; "
                             f"it has {list(map(str, features.columns))}",
                             key=f"evaluator_config.{key}")
    names = config.get("features") or [c for c in features.columns if c not in (qid, docid)]
    if labels is None:
        raise InputError("mlflow.models.evaluate(..., targets=...): the harness evaluator "
                         "needs the label column", key="targets")
    scores = predict(features[list(names)]) if callable(predict) else predict
    scores = np.asarray(scores, dtype=np.float64).reshape(len(features), -1)[:, 0]
    return pd.DataFrame({
        "qid": features[qid].to_numpy(),
        "docid": (features[docid].to_numpy() if docid else np.arange(len(features))),
        "score": scores, "label": np.asarray(labels)})


def _evaluation(rows: pd.DataFrame, metrics: Any) -> tuple[pd.DataFrame, pd.DataFrame,
                                                            pd.DataFrame]:
    """The per-query table, its summary and the sklearn check of scored rows."""
    mlist = as_metrics(metrics)
    per_query = evaluate(rows, None, mlist)
    check = pd.DataFrame([vars(r) for r in check_against_sklearn(rows, None, mlist,
                                                                   per_query)])
    return per_query, aggregate(per_query), check


try:  # MLflow's evaluator base class; the module imports without MLflow's evaluation API
    from mlflow.models.evaluation.base import EvaluationResult, ModelEvaluator
except ImportError:  # pragma: no cover - MLflow is a dependency
    ModelEvaluator, EvaluationResult = object, None


class HarnessEvaluator(ModelEvaluator):
    """The ``harness`` model evaluator of ``mlflow.models.evaluate``."""

    name = "harness"

    @classmethod
    def can_evaluate(cls, *, model_type: Any, evaluator_config: Any, **kwargs: Any) -> bool:
        """Only ``model_type="ranker"``: ``mlflow.models.evaluate(evaluators=None)`` runs
        every registered evaluator that says yes, and a classifier's or a regressor's
        evaluation must not meet this one."""
        return model_type == MODEL_TYPE

    def evaluate(self, *, model_type: Any, dataset: Any, run_id: str,
                 evaluator_config: dict[str, Any], model: Any = None,
                 extra_metrics: Any = None, custom_artifacts: Any = None,
                 predictions: Any = None, **kwargs: Any) -> Any:
        import mlflow
        from mlflow import MlflowClient

        config = dict(evaluator_config or {})
        metrics = config.pop("metrics", ("nDCG@10",))
        predict = model.predict if model is not None else dataset.predictions_data
        rows = score_frame(dataset.features_data, dataset.labels_data, predict, config)
        per_query, summary, check = _evaluation(rows, metrics)
        values = {metric_key(str(name)): float(row["mean"]) for name, row in summary.iterrows()}
        values |= _check_metrics(check)
        client = MlflowClient()
        client.log_batch(run_id, metrics=[
            mlflow.entities.Metric(k, v, int(time.time() * 1000), 0)
            for k, v in values.items()])
        with tempfile.TemporaryDirectory() as tmp:
            paths = {name: Path(tmp) / f"{name}.csv"
                     for name in ("per_query", "summary", "sklearn_check")}
            per_query.to_csv(paths["per_query"])
            summary.to_csv(paths["summary"], index_label="variant")
            check.to_csv(paths["sklearn_check"], index=False)
            for path in paths.values():
                client.log_artifact(run_id, str(path))
        frames = {"per_query": per_query.reset_index(), "sklearn_check": check,
                  "summary": summary.rename_axis("variant").reset_index()}
        artifacts = {name: _artifact(run_id, path.name, frames[name])
                     for name, path in paths.items()}
        return EvaluationResult(metrics=values, artifacts=artifacts, run_id=run_id)


def _check_metrics(check: pd.DataFrame) -> dict[str, float]:
    """The ``sklearn_check.*`` metrics a study logs for a ranker: variants checked and not,
    and (when any was checked) the largest difference and the queries checked."""
    checked = check[check["status"] == "checked"] if len(check) else check
    out = {"sklearn_check.n_variants_checked": float(len(checked)),
           "sklearn_check.n_variants_not_checked": float(len(check) - len(checked))}
    if len(checked):
        out["sklearn_check.max_abs_diff"] = float(checked["max_abs_diff"].max())
        out["sklearn_check.n_queries_checked"] = float(checked["n_checked"].sum())
    return out


def _artifact(run_id: str, name: str, frame: pd.DataFrame) -> Any:
    """The logged CSV as MLflow's evaluation artifact (its URI and its table)."""
    from mlflow.models.evaluation.artifacts import CsvEvaluationArtifact

    return CsvEvaluationArtifact(uri=f"runs:/{run_id}/{name}", content=frame)
