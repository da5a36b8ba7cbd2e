"""Checks of the input tables: required columns, numbers where numbers belong, no NaN or
infinite score or label, one type of id per column. Each error names the table, column,
query and row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError, plain

__all__ = ["RUN_COLUMNS", "QRELS_COLUMNS", "require_frame", "numeric", "first_bad",
           "check_keys", "check_labels", "align_key_dtypes"]

RUN_COLUMNS = ("qid", "docid", "score")


QRELS_COLUMNS = ("qid", "docid", "label")


def require_frame(df: Any, table: str, columns: tuple[str, ...]) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"{table} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(
            f"{table} is missing column(s) {missing}; it has {list(map(str, df.columns))}",
            table=table, column=missing[0],
        )
    if len(df) == 0:
        raise InputError(f"{table} is empty", table=table)
    return df


def numeric(df: pd.DataFrame, column: str, table: str) -> np.ndarray:
    series = df[column]
    if column == "label" and pd.api.types.is_bool_dtype(series) and not series.isna().any():
        return series.to_numpy(dtype=np.float64)  # binary judgments: True 1, False 0
    if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
        coerced = pd.to_numeric(series, errors="coerce") if not pd.api.types.is_bool_dtype(
            series) else None
        if coerced is None:
            raise InputError("values must be numeric, got booleans", table=table, column=column)
        bad = coerced.isna() & series.notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"values must be numeric, got {series.iloc[row]!r}", table=table,
                column=column, qid=_qid_at(df, row), row=row,
            )
        series = coerced
    if column == "score" and pd.api.types.is_integer_dtype(series):
        return _integer_scores(series)
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


#: Integers up to this magnitude are exact in float64.
_EXACT_INT = 2 ** 53


def _integer_scores(series: pd.Series) -> np.ndarray:
    """Integer scores as float64; beyond 2**53 two integers can round to one float, so
    the scores are replaced by their order (equal integers share a value), which every
    measure reads the same way: only the order and the ties of scores matter."""
    out = series.to_numpy(dtype=np.float64, na_value=np.nan)
    present = series.notna().to_numpy()
    values = np.asarray(series[present].to_numpy())
    if not len(values) or (int(values.max()) < _EXACT_INT and int(values.min()) > -_EXACT_INT):
        return out
    _, order = np.unique(values, return_inverse=True)
    out[present] = order
    return out


def _qid_at(df: pd.DataFrame, row: int) -> Any:
    return df["qid"].iloc[row] if "qid" in df.columns else None


def first_bad(df: pd.DataFrame, mask: np.ndarray, what: str, column: str, table: str) -> None:
    if mask.any():
        row = int(np.flatnonzero(mask)[0])
        raise InputError(
            f"{int(mask.sum())} {what} value(s), first {plain(df[column].iloc[row])!r}", table=table,
            column=column, qid=_qid_at(df, row), row=row,
        )


def check_keys(df: pd.DataFrame, table: str) -> None:
    for column in ("qid", "docid"):
        first_bad(df, df[column].isna().to_numpy(), "missing", column, table)
        _check_one_key_type(df[column], column, table)


def _check_one_key_type(series: pd.Series, column: str, table: str) -> None:
    """Refuse an id column mixing text with other types: ``1`` and ``"1"`` would be two
    different ids that print alike."""
    if series.dtype != object or pd.api.types.infer_dtype(series, skipna=True) not in (
            "mixed", "mixed-integer"):
        return
    kinds = series.map(lambda v: type(v).__name__).to_numpy()
    first: dict[str, int] = {}
    for row, kind in enumerate(kinds):
        first.setdefault(kind, row)
        if len(first) > 1:
            break
    (a, ra), (b, rb) = list(first.items())[:2]
    raise InputError(
        f"ids of more than one type in one column: {series.iloc[ra]!r} ({a}) at row {ra} "
        f"and {series.iloc[rb]!r} ({b}) at row {rb}; equal-looking ids of different types "
        f"would be different queries or documents. Convert the column to one type, e.g. "
        f"df[{column!r}] = df[{column!r}].astype(str)", table=table, column=column, row=rb)


def align_key_dtypes(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Same kind of key on both sides: if one is numeric and the other is not, use text."""
    if pd.api.types.is_numeric_dtype(a) != pd.api.types.is_numeric_dtype(b):
        return a.astype(str), b.astype(str)
    return a, b


def check_labels(df: pd.DataFrame, labels: np.ndarray, table: str, negative: str) -> None:
    first_bad(df, np.isnan(labels), "NaN", "label", table)
    first_bad(df, np.isinf(labels), "infinite", "label", table)
    if negative == "error":
        first_bad(df, labels < 0, "negative", "label", table)
