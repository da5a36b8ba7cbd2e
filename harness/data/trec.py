"""Readers for TREC-format qrels and run files.

- qrels: ``qid iter docid label`` per line;
- run: ``qid Q0 docid rank score runid`` per line; the rank column is ignored (documents are
  ranked by score), and anything after the sixth column is ignored, as trec_eval does.

Blank lines and lines starting with ``#`` are skipped. A docid may itself contain ``#``.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import pandas as pd

from harness.errors import InputError

__all__ = ["read_qrels", "read_run"]


def _rows(path: str | PathLike[str], n_fields: int, kind: str) -> list[list[str]]:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{kind} file not found: {p}")
    rows = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            fields = stripped.split()
            if len(fields) < n_fields:
                raise InputError(
                    f"{kind} line has {len(fields)} fields, expected {n_fields}: {stripped!r}",
                    table=f"{p.name}", row=lineno,
                )
            rows.append(fields[:n_fields])
    if not rows:
        raise InputError(f"{kind} file {p} holds no data line", table=p.name)
    return rows


def _to_number(df: pd.DataFrame, column: str, path: str | PathLike[str], kind: str,
               integer: bool) -> None:
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna()
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(f"{kind} {column} {df[column].iloc[i]!r} is not a number",
                         table=Path(path).name, column=column, qid=df["qid"].iloc[i], row=i)
    df[column] = values.astype("int64" if integer and (values % 1 == 0).all() else "float64")


def read_qrels(path: str | PathLike[str]) -> pd.DataFrame:
    """Read a TREC qrels file into a DataFrame with columns ``qid``, ``docid``, ``label``.

    ``qid`` and ``docid`` are strings; ``label`` is int64 (float64 if a grade is fractional).
    """
    rows = _rows(path, 4, "qrels")
    df = pd.DataFrame(rows, columns=["qid", "iter", "docid", "label"]).drop(columns="iter")
    _to_number(df, "label", path, "qrels", integer=True)
    return df


def read_run(path: str | PathLike[str]) -> pd.DataFrame:
    """Read a TREC run file into a DataFrame with columns ``qid``, ``docid``, ``score``,
    ``rank`` and ``run_id``. Scores are float64."""
    rows = _rows(path, 6, "run")
    df = pd.DataFrame(rows, columns=["qid", "q0", "docid", "rank", "score", "run_id"])
    df = df.drop(columns="q0")[["qid", "docid", "score", "rank", "run_id"]]
    _to_number(df, "score", path, "run", integer=False)
    df["score"] = df["score"].astype("float64")
    return df
