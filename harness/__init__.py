"""harness: ranking evaluation with every metric choice explicit and sweepable.

>>> import harness
>>> harness.parse_metric("ndcg@10", gain="linear")
Metric('nDCG@10(gain=linear)')

The public names are imported on first use (PEP 562), so ``import harness`` and
``harness --help`` do not pay for pandas, dask or the metric engine until a
command needs them.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

from harness.errors import FormulaError, HarnessError, InputError, MetricDefinitionError
from harness.version import __version__

# MLflow draws artifact progress bars whenever tqdm is installed, terminal or not, so they
# would land in logs, pipes and the one-line errors of the CLIs. Progress shows only on a
# terminal here (harness.progress); a value the user set is kept.
if not (getattr(sys.stderr, "isatty", None) and sys.stderr.isatty()):
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

#: public name -> module that defines it (imported when the name is first used)
_LAZY = {
    **dict.fromkeys(("CONVENTIONS", "METRIC_NAMES", "TIE_MODES", "Metric", "parse_metric",
                     "register_measure", "unregister_measure", "MeasureInput"),
                    "harness.metrics.vocabulary.definition"),
    **dict.fromkeys(("aggregate", "evaluate", "evaluate_dense", "tie_interval"),
                    "harness.metrics.engine.evaluate"),
    "evaluate_parquet": "harness.engines.stream",
    "evaluate_dask": "harness.engines.dask",  # imports dask and distributed
    "explain_difference": "harness.explain.shapley",
    "judgment_interval": "harness.metrics.unjudged.judgment_interval",
    "compare": "harness.compare",  # the package, callable: harness.compare(qrels, runs, ...)
    "Comparison": "harness.compare.api",
    # the ecosystem's doors (docs/interop.md)
    "as_ir_measure": "harness.interop.ir_measure",
    **dict.fromkeys(("per_query_dict", "to_trec"), "harness.interop.tables"),
}

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports on demand
    from harness.compare.api import Comparison, compare
    from harness.engines.dask import evaluate_dask
    from harness.engines.stream import evaluate_parquet
    from harness.explain.shapley import explain_difference
    from harness.interop.ir_measure import as_ir_measure
    from harness.interop.tables import per_query_dict, to_trec
    from harness.metrics.engine.evaluate import aggregate, evaluate, evaluate_dense, tie_interval
    from harness.metrics.unjudged.judgment_interval import judgment_interval
    from harness.metrics.vocabulary.definition import (
        CONVENTIONS,
        METRIC_NAMES,
        TIE_MODES,
        MeasureInput,
        Metric,
        parse_metric,
        register_measure,
        unregister_measure,
    )


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    if module == f"harness.{name}":  # a package that is also called (harness.compare)
        return importlib.import_module(module)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "CONVENTIONS",
    "Comparison",
    "METRIC_NAMES",
    "TIE_MODES",
    "FormulaError",
    "HarnessError",
    "InputError",
    "MeasureInput",
    "Metric",
    "MetricDefinitionError",
    "aggregate",
    "as_ir_measure",
    "compare",
    "evaluate",
    "evaluate_dask",
    "evaluate_dense",
    "evaluate_parquet",
    "explain_difference",
    "judgment_interval",
    "parse_metric",
    "per_query_dict",
    "register_measure",
    "tie_interval",
    "to_trec",
    "unregister_measure",
    "__version__",
]
