"""``python -m harness.tracking.example_model``: register a small model to try the
``mlflow_model`` ranker with.

Fits a scikit-learn linear regression over the synthetic dataset's features ``f0``..``f5``
(on 600 made-up rows whose grade follows ``f0`` and ``f1``, the way the synthetic dataset's
features follow it), logs it to the project's MLflow store (``tracking.uri``'s default:
``$MLFLOW_TRACKING_URI``, else ``runs/mlflow.db``) in the experiment ``models``, registers
it as a new version of the model ``ranker`` and prints the URI to evaluate it with::

    python -m harness.tracking.example_model          # prints models:/ranker/1
    make run ARGS="ranker=oracle '+ranker.mine={kind:mlflow_model,uri:models:/ranker/1}'"
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from harness.paths import ARTIFACT_ROOT, project_path
from harness.tracking.store import ensure_experiment, open_client, resolve_tracking_uri

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["FEATURES", "MODEL_NAME", "register_example", "main", "parser"]

#: The synthetic dataset's feature columns, which the model scores.
FEATURES = [f"f{i}" for i in range(6)]
#: The registered model's name.
MODEL_NAME = "ranker"


def _example_data(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """(features, grades): 600 rows, grades 0-4; ``f0`` = 1.5 x grade + noise, ``f1`` =
    0.8 x grade + noise, the other features noise."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    grades = rng.integers(0, 5, size=600).astype(float)
    slopes = np.array([1.5, 0.8, 0.0, 0.0, 0.0, 0.0])
    x = grades[:, None] * slopes + rng.normal(size=(600, len(FEATURES)))
    return pd.DataFrame(x, columns=FEATURES), grades


def register_example(tracking_uri: str, name: str = MODEL_NAME,
                     artifact_root: str = ARTIFACT_ROOT) -> str:
    """Log the example model to ``tracking_uri`` and register it as a new version of
    ``name``; returns its ``models:/<name>/<version>`` URI."""
    import mlflow
    import mlflow.sklearn
    from sklearn.linear_model import LinearRegression

    x, y = _example_data()
    model = LinearRegression().fit(x, y)
    client = open_client(tracking_uri)
    exp_id = ensure_experiment(client, "models", str(project_path(artifact_root)))
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_registry_uri(tracking_uri)
    with mlflow.start_run(experiment_id=exp_id, run_name=f"example model {name}"):
        info = mlflow.sklearn.log_model(model, name="model", input_example=x.head(2),
                                        registered_model_name=name)
    return f"models:/{name}/{info.registered_model_version}"


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(prog="python -m harness.tracking.example_model",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tracking-uri", default=None,
                   help="MLflow store (default: $MLFLOW_TRACKING_URI, else runs/mlflow.db)")
    p.add_argument("--artifact-root", default=ARTIFACT_ROOT,
                   help="where a local store keeps the model's files (%(default)s)")
    p.add_argument("--name", default=MODEL_NAME, help="registered model name (%(default)s)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    print(register_example(resolve_tracking_uri(args.tracking_uri), args.name,
                           args.artifact_root), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
