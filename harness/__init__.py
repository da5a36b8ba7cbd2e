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
    "evaluate_dense",
    "evaluate_parquet",
    "parse_metric",
    "tie_interval",
    "__version__",
]
