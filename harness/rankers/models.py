"""Trained models in MLflow's format, one flavour per ranker kind.

A ranker that trains (``sklearn``, ``lightgbm``, ``xgboost``, ``catboost``) leaves its model
beside the study's results as an MLflow model folder (``MLmodel`` and the library's own
file), written with the library's flavour: LightGBM's booster, XGBoost's and CatBoost's
rankers, scikit-learn's estimator in the skops format (no pickle). The folder is logged to
the ranker's MLflow run as a logged model, and ``harness reproduce`` loads it again to score
the test split and compare every value bit for bit.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import shutil
import uuid
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FLAVOURS", "save_model", "load_model", "predict", "copy_model"]

#: ranker kind -> (MLflow flavour module, the distribution it needs)
FLAVOURS = {"sklearn": ("mlflow.sklearn", "scikit-learn"),
            "lightgbm": ("mlflow.lightgbm", "lightgbm"),
            "xgboost": ("mlflow.xgboost", "xgboost"),
            "catboost": ("mlflow.catboost", "catboost")}


def _flavour(kind: str) -> Any:
    return importlib.import_module(FLAVOURS[kind][0])


def _requirement(kind: str) -> list[str]:
    dist = FLAVOURS[kind][1]
    with contextlib.suppress(metadata.PackageNotFoundError):
        return [f"{dist}=={metadata.version(dist)}"]
    return [dist]


def save_model(kind: str, model: Any, path: Path) -> Path:
    """Write ``model`` (as the ranker kind ``kind`` fitted it) to the folder ``path`` with
    its MLflow flavour. The folder is written beside ``path`` and renamed into place, so a
    folder at ``path`` is always whole. Returns ``path``."""
    flavour = _flavour(kind)
    options: dict[str, Any] = {"pip_requirements": _requirement(kind)}
    if kind == "lightgbm":
        model = getattr(model, "booster_", model)  # the booster keeps the best iteration
    if kind == "sklearn":  # skops, trusting only the types this fitted model holds
        import skops.io

        options["skops_trusted_types"] = skops.io.get_untrusted_types(
            data=skops.io.dumps(model))
    quiet = logging.getLogger("mlflow")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its notes on environments, while saving only
    try:
        return _whole(path, lambda tmp: flavour.save_model(model, str(tmp), **options))
    finally:
        quiet.setLevel(level)


def _whole(path: Path, write: Callable[[Path], Any]) -> Path:
    """``write`` a folder beside ``path``, then rename it into place: a folder at ``path``
    is always whole."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        write(tmp)
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def load_model(kind: str, uri: str | Path) -> Any:
    """The model at ``uri`` (a folder, ``models:/<id>`` or ``runs:/<run>/model``), as its
    flavour loads it."""
    return _flavour(kind).load_model(str(uri))


def predict(kind: str, model: Any, X: np.ndarray) -> np.ndarray:
    """``model``'s scores of the rows ``X`` (float64, one per row)."""
    return np.asarray(model.predict(np.asarray(X, dtype=np.float64)),
                      dtype=np.float64).reshape(-1)


def copy_model(src: Path, dst: Path) -> Path:
    """Copy the model folder ``src`` to ``dst`` whole (written beside it, then renamed)."""
    return _whole(dst, lambda tmp: shutil.copytree(src, tmp))
