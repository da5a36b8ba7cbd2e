"""The check stage of a study: the sklearn cross-check's options, its table and its
failures (the check itself is :func:`harness.metrics.sklearn_check.check_against_sklearn`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from harness.app.config import CheckConfig
from harness.app.results import RankerResult
from harness.errors import HarnessError

__all__ = ["CheckFailed", "sample_options", "check_failures", "check_table"]


class CheckFailed(HarnessError):
    """The sklearn cross-check found a difference above the tolerance."""


def sample_options(check: CheckConfig, seed: int) -> dict[str, Any]:
    """``check.max_queries`` and the study seed, as :func:`check_against_sklearn` takes them."""
    return {"max_queries": check.max_queries, "max_tied_queries": check.max_tied_queries,
            "seed": int(seed)}


def check_failures(results: Mapping[str, RankerResult], tolerance: float) -> list[str]:
    out = []
    for name, r in results.items():
        for c in r.checks:
            if c.failed(tolerance):
                out.append(f"ranker {name}, variant {c.variant}: |ours - sklearn| = "
                           f"{c.max_abs_diff:.3g} > {tolerance:g} at qid {c.worst_qid!r}")
    return out


def check_table(results: Mapping[str, RankerResult]) -> pd.DataFrame:
    """One row per (ranker, variant) of the sklearn cross-check."""
    rows = [{"ranker": name, "variant": c.variant, "status": c.status, "reason": c.reason,
             "n_checked": c.n_checked, "n_not_checked": c.n_not_checked,
             "max_abs_diff": c.max_abs_diff, "worst_qid": None if c.worst_qid is None
             else str(c.worst_qid), "sample_size": c.sample_size, "note": c.note}
            for name, r in results.items() for c in r.checks]
    return pd.DataFrame(rows, columns=["ranker", "variant", "status", "reason", "n_checked",
                                       "n_not_checked", "max_abs_diff", "worst_qid",
                                       "sample_size", "note"])
