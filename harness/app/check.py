"""The check stage of a study: the sklearn cross-check's options, its table and its
failures (the check itself is :func:`harness.metrics.sklearn_check.check_against_sklearn`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any

import pandas as pd

from harness.app.config import CheckConfig
from harness.app.results import RankerResult
from harness.errors import HarnessError

__all__ = ["CheckFailed", "sample_options", "check_failures", "check_table",
           "import_sklearn_meanwhile"]

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


def import_sklearn_meanwhile() -> None:
    """Import sklearn's nDCG (about 1 s) in a thread while the dataset loads and the rankers
    are evaluated, so the check does not wait for it (the default study's check phase 1.3-1.6
    -> 0.95-1.0 s). The import holds the GIL: hashing a large parquet run meanwhile took
    1.7 s instead of 0.8 s, about what the check then saves. A failed import is left for the
    check, which raises it."""

    def load() -> None:
        with contextlib.suppress(Exception):
            import sklearn.metrics._ranking  # noqa: F401

    threading.Thread(target=load, name="import-sklearn", daemon=True).start()
