"""Comparing a re-run's per-query table with the logged one, value for value: NaN equals
NaN, -0.0 equals 0.0, anything else must be the same float64 bits."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.metrics.engine.evaluate import STAT_COLUMNS
from harness.reproduce.checks import ReproduceError

__all__ = ["ReproResult", "compare_per_query", "DIFF_COLUMNS", "N_EXAMPLES"]

DIFF_COLUMNS = ["variant", "qid", "logged", "now", "abs_diff"]
N_EXAMPLES = 3


@dataclass(frozen=True)
class ReproResult:
    """The outcome of reproducing one ranker run.

    Attributes
    ----------
    run_id, ranker : the MLflow run id and the ranker's name in the study.
    identical : True when the same queries and columns came back with every value equal bit
        for bit (NaN equals NaN).
    differences : DataFrame ``variant, qid, logged, now, abs_diff``, one row per differing
        value (``variant`` is the column's display name; ``n_docs`` etc. are compared too).
    env_changes : ``{name: (logged, now)}`` for each package (and ``python``, ``platform``)
        whose version differs from the one logged; empty when all match or nothing was logged.
    n_variants, n_queries : metric columns and queries compared.
    missing_columns, extra_columns : columns logged but not recomputed, and the reverse.
    missing_queries, extra_queries : qids logged but not recomputed, and the reverse.
    notes : anything else worth knowing (no environment logged, code or cache key changed).
    """

    run_id: str
    ranker: str
    identical: bool
    differences: pd.DataFrame
    env_changes: dict[str, tuple[str, str]]
    n_variants: int = 0
    n_queries: int = 0
    missing_columns: tuple[str, ...] = ()
    extra_columns: tuple[str, ...] = ()
    missing_queries: tuple[str, ...] = ()
    extra_queries: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def _qids(frame: pd.DataFrame, which: str, run_id: str) -> pd.DataFrame:
    if "qid" not in frame.columns:
        raise ReproduceError(f"run {run_id}: the {which} per-query table has no qid column")
    out = frame.assign(qid=frame["qid"].astype(str)).set_index("qid")
    if not out.index.is_unique:
        dup = out.index[out.index.duplicated()][0]
        raise ReproduceError(f"run {run_id}: the {which} per-query table repeats qid {dup!r}")
    return out


def _values(column: pd.Series) -> np.ndarray:
    if pd.api.types.is_integer_dtype(column) or pd.api.types.is_bool_dtype(column):
        return column.to_numpy(dtype=np.int64)
    if pd.api.types.is_numeric_dtype(column):
        return column.to_numpy(dtype=np.float64)
    return column.astype(str).to_numpy(dtype=object)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bit equality; NaN equals NaN (any payload)."""
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        if a.dtype.kind in "fi" and b.dtype.kind in "fi":
            fa, fb = a.astype(np.float64), b.astype(np.float64)
            return (fa.view(np.int64) == fb.view(np.int64)) | (np.isnan(fa) & np.isnan(fb))
    return np.asarray(a == b, dtype=bool)


def compare_per_query(run_id: str, ranker: str, logged: pd.DataFrame, now: pd.DataFrame,
             env_changes: dict[str, tuple[str, str]], notes: list[str]) -> ReproResult:
    old, new = _qids(logged, "logged", run_id), _qids(now, "recomputed", run_id)
    common_q = old.index.intersection(new.index, sort=False)
    common_c = [c for c in old.columns if c in new.columns]
    rows = []
    for column in common_c:
        a = _values(old.loc[common_q, column])
        b = _values(new.loc[common_q, column])
        bad = ~_same(a, b)
        if not bad.any():
            continue
        numeric = a.dtype.kind in "fi" and b.dtype.kind in "fi"
        for qid, x, y in zip(common_q[bad], a[bad], b[bad]):
            diff = abs(float(y) - float(x)) if numeric else np.nan
            rows.append({"variant": column, "qid": qid, "logged": x, "now": y,
                         "abs_diff": diff})
    differences = pd.DataFrame(rows, columns=DIFF_COLUMNS)
    missing_c = tuple(c for c in old.columns if c not in new.columns)
    extra_c = tuple(c for c in new.columns if c not in old.columns)
    missing_q = tuple(old.index.difference(new.index, sort=False))
    extra_q = tuple(new.index.difference(old.index, sort=False))
    identical = differences.empty and not (missing_c or extra_c or missing_q or extra_q)
    n_variants = sum(c not in STAT_COLUMNS and c != "weight" for c in common_c)
    return ReproResult(run_id=run_id, ranker=ranker, identical=identical,
                       differences=differences, env_changes=env_changes,
                       n_variants=n_variants, n_queries=len(common_q),
                       missing_columns=missing_c, extra_columns=extra_c,
                       missing_queries=missing_q, extra_queries=extra_q, notes=tuple(notes))
