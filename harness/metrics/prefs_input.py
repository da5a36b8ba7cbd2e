"""Preference judgments for trec_eval's prefs measures (:mod:`harness.metrics.prefs`).

A preferences file (trec_eval ``-R prefs``) holds ``qid jg jsg docno rel_level`` lines:
within one judgment sub-group (``jsg``) of a judgment group (``jg``) every document is
preferred to every document with a lower ``rel_level``; a level of 0 marks a document the
judge found non-relevant. Ordinary qrels (``-R qrels_prefs``) are read the same way, with
the qrels' ``iter`` column as the judgment group and one sub-group per group.

Both give a table with columns ``qid``, ``jg``, ``jsg``, ``docid`` (strings) and ``rel``
(float64).
"""

from __future__ import annotations

import codecs
from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

from harness.errors import InputError

__all__ = ["PREFS_COLUMNS", "read_prefs", "prefs_from_qrels", "checked_prefs"]

PREFS_COLUMNS = ("qid", "jg", "jsg", "docid", "rel")


def _line_text(raw: bytes, lineno: int, p: Path) -> str:
    if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"prefs file {p} is not UTF-8: line {lineno}, byte {exc.start + 1} is "
            f"{raw[exc.start:exc.start + 1]!r}; re-encode it as UTF-8",
            table=p.name, row=lineno) from None


def read_prefs(path: str | PathLike[str]) -> pd.DataFrame:
    """Read a trec_eval preferences file (``qid jg jsg docno rel_level`` per line).

    Lines starting with ``#`` and blank lines are skipped (a docno may contain ``#``).
    Every other line must hold exactly five whitespace-separated fields, the last a number.

    Returns
    -------
    DataFrame with columns ``qid``, ``jg``, ``jsg``, ``docid`` (str) and ``rel`` (float64),
    in file order.

    Raises
    ------
    InputError
        A missing file, a line with another number of fields or a level that is not a
        number; the message names the file (``table``) and the 1-based line (``row``).
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"prefs file not found: {p}")
    rows: list[list[str]] = []
    with p.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            text = _line_text(raw, lineno, p)
            if text.startswith("#") or not text.strip():
                continue
            fields = text.split()
            if len(fields) != 5:
                raise InputError(
                    f"prefs line {lineno} has {len(fields)} fields, expected 5 "
                    f"(qid jg jsg docno rel_level): {text.strip()!r}",
                    table=p.name, row=lineno)
            try:
                level = float(fields[4])
            except ValueError:
                level = float("nan")
            if not np.isfinite(level):
                raise InputError(f"prefs line {lineno}: rel_level {fields[4]!r} is not a finite number",
                                 table=p.name, row=lineno, column="rel")
            rows.append(fields)
    if not rows:
        raise InputError(f"prefs file {p} holds no data line", table=p.name)
    df = pd.DataFrame(rows, columns=list(PREFS_COLUMNS))
    df["rel"] = df["rel"].astype("float64")
    return df


def prefs_from_qrels(qrels: pd.DataFrame) -> pd.DataFrame:
    """The preferences ordinary qrels imply (trec_eval ``-R qrels_prefs``).

    Each query's judgments form one judgment group per ``iter`` value (one group when the
    table has no ``iter`` column, as :func:`harness.data.trec.read_qrels` gives) with a
    single sub-group, so every document is preferred to every document of a lower grade.

    Parameters
    ----------
    qrels : columns ``qid``, ``docid`` and ``label`` (a grade), optionally ``iter``.
    """
    missing = [c for c in ("qid", "docid", "label") if c not in qrels.columns]
    if missing:
        raise InputError(f"qrels table lacks column(s) {missing}", column=missing[0])
    jg = qrels["iter"].astype(str) if "iter" in qrels.columns else "0"
    out = pd.DataFrame({"qid": qrels["qid"].astype(str).to_numpy(),
                        "jg": jg if isinstance(jg, str) else jg.to_numpy(),
                        "jsg": "0",
                        "docid": qrels["docid"].astype(str).to_numpy(),
                        "rel": pd.to_numeric(qrels["label"], errors="coerce")
                        .astype("float64").to_numpy()})
    return checked_prefs(out)


def checked_prefs(prefs: pd.DataFrame) -> pd.DataFrame:
    """``prefs`` with string ids and float levels, or an InputError naming the fault."""
    missing = [c for c in PREFS_COLUMNS if c not in prefs.columns]
    if missing:
        raise InputError(f"prefs table lacks column(s) {missing}; expected "
                         f"{list(PREFS_COLUMNS)}", column=missing[0])
    out = pd.DataFrame({c: prefs[c].astype(str).to_numpy() for c in PREFS_COLUMNS[:4]})
    rel = pd.to_numeric(prefs["rel"], errors="coerce").astype("float64").to_numpy()
    bad = np.flatnonzero(~np.isfinite(rel))
    if len(bad):
        i = int(bad[0])
        raise InputError(f"prefs rel {prefs['rel'].iloc[i]!r} is not a finite number",
                         column="rel", qid=out["qid"].iloc[i], row=i)
    out["rel"] = rel
    return out
