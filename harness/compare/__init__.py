"""Compare ranker versions of a sweep: paired tests per metric variant, the sensitivity of the
ranker ordering to the metric definition, and reports (``harness compare``).

Pure functions work on per-query tables (one per ranker, one column per variant):

>>> import pandas as pd
>>> from harness.compare import compare_table
>>> a = pd.DataFrame({"qid": ["q1", "q2", "q3"], "nDCG@10": [0.9, 0.8, 0.7]})
>>> b = pd.DataFrame({"qid": ["q1", "q2", "q3"], "nDCG@10": [0.5, 0.8, 0.6]})
>>> row = compare_table({"a": a, "b": b}, resamples=100).iloc[0]
>>> row["ranker_a"], row["ranker_b"], float(row["mean_diff"].round(4)), int(row["wins"])
('a', 'b', 0.1667, 2)

:func:`load_sweep` reads them, with provenance, from MLflow. :func:`compare` (also
``harness.compare(...)``) evaluates runs and compares them in one call.
"""

import sys
import types
from typing import Any

from harness.compare.api import Comparison, compare
from harness.compare.core import build_comparison
from harness.compare.load import RankerVersion, Sweep, latest_parent_run, load_sweep
from harness.compare.result import Settings
from harness.compare.sensitivity import (
    TIES_HOWTO,
    Sensitivity,
    kendall_matrix,
    sensitivity,
    tie_intervals,
)
from harness.compare.stats import (
    CORRECTIONS,
    TESTS,
    adjust_pvalues,
    compare_table,
    holm,
    paired_comparison,
)
from harness.compare.versions import RunInfo, group_versions, split_overrides
from harness.errors import (
    CompareError,
    DatasetMismatch,
    NoOverlap,
    RunNotFound,
    TooFewRankers,
    UnknownName,
)


class _Callable(types.ModuleType):
    """``harness.compare`` is this package and, called, :func:`compare`: once the package is
    imported, Python binds the name ``harness.compare`` to it, whichever the user meant."""

    def __call__(self, *args: Any, **kwargs: Any) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _Callable

__all__ = ["CORRECTIONS", "TESTS", "TIES_HOWTO", "Comparison", "CompareError", "compare",
           "DatasetMismatch", "NoOverlap", "RankerVersion", "RunInfo", "RunNotFound",
           "Sensitivity", "Settings", "Sweep", "TooFewRankers", "build_comparison",
           "UnknownName", "adjust_pvalues", "compare_table", "group_versions", "holm",
           "kendall_matrix", "latest_parent_run", "load_sweep", "paired_comparison",
           "sensitivity", "split_overrides", "tie_intervals"]
