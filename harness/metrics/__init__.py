"""The metric engine: definitions, validation, vectorised kernels and aggregation."""

from harness.metrics.definition import CONVENTIONS, METRIC_NAMES, TIE_MODES, Metric, parse_metric
from harness.metrics.evaluate import aggregate, evaluate, evaluate_dense, tie_interval

__all__ = [
    "CONVENTIONS",
    "METRIC_NAMES",
    "TIE_MODES",
    "Metric",
    "aggregate",
    "evaluate",
    "evaluate_dense",
    "parse_metric",
    "tie_interval",
]
