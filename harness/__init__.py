"""harness: ranking evaluation with every metric choice explicit and sweepable.

>>> import harness
>>> harness.parse_metric("ndcg@10", gain="linear")
Metric('nDCG@10(gain=linear)')
"""

from harness.errors import FormulaError, HarnessError, InputError, MetricDefinitionError
from harness.metrics import (
    CONVENTIONS,
    METRIC_NAMES,
    TIE_MODES,
    Metric,
    aggregate,
    evaluate,
    evaluate_dense,
    parse_metric,
    tie_interval,
)

from harness.metrics.stream import evaluate_parquet

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # the Dask engine imports dask and distributed only when first used
    if name == "evaluate_dask":
        from harness.metrics.dask_engine import evaluate_dask

        return evaluate_dask
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = [
    "CONVENTIONS",
    "METRIC_NAMES",
    "TIE_MODES",
    "FormulaError",
    "HarnessError",
    "InputError",
    "Metric",
    "MetricDefinitionError",
    "aggregate",
    "evaluate",
    "evaluate_dask",
    "evaluate_dense",
    "evaluate_parquet",
    "parse_metric",
    "tie_interval",
    "__version__",
]
