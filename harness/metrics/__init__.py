"""The metric engine: definitions, validation, vectorised kernels and aggregation.

The public names are imported on first use (PEP 562): ``harness eval`` reads its measures'
definitions and kernels without importing pandas, which the per-query tables need."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names

_LAZY = {
    **dict.fromkeys(("CONVENTIONS", "METRIC_NAMES", "TIE_MODES", "Metric", "parse_metric"),
                    "harness.metrics.vocabulary.definition"),
    **dict.fromkeys(("aggregate", "evaluate", "evaluate_dense", "tie_interval"),
                    "harness.metrics.engine.evaluate"),
}

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

if TYPE_CHECKING:
    from harness.metrics.engine.evaluate import aggregate, evaluate, evaluate_dense, tie_interval
    from harness.metrics.vocabulary.definition import (
        CONVENTIONS,
        METRIC_NAMES,
        TIE_MODES,
        Metric,
        parse_metric,
    )


__getattr__ = lazy_names(__name__, _LAZY, globals())
