"""Readers for TREC-format qrels and run files.

- qrels: ``qid iter docid label`` per line;
- run: ``qid Q0 docid rank score runid`` per line; the rank column is ignored (documents are
  ranked by score), and anything after the sixth column is ignored, as trec_eval does.

Blank lines and lines starting with ``#`` are skipped. A docid may itself contain ``#``.
Files are UTF-8; a byte-order mark at the start is dropped (Windows editors write one, and
it would otherwise become part of the first qid, so that query would never meet its
judgments). Bytes that are not UTF-8 raise an error naming the file and line.
"""

from __future__ import annotations

import codecs
import gzip
import logging
from collections.abc import Iterable
from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

from harness.errors import InputError

__all__ = ["read_qrels", "read_run", "read_prefs", "warn_on_few_judged"]

log = logging.getLogger("harness")
#: Below this share of run queries that have a judgment, :func:`warn_on_few_judged` warns.
MIN_JUDGED_SHARE = 0.5


def _decoded(raw: bytes, lineno: int, p: Path, kind: str) -> str:
    if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{kind} file {p} is not UTF-8: line {lineno}, byte {exc.start + 1} is "
            f"{raw[exc.start:exc.start + 1]!r} in {raw.rstrip()!r}; re-encode it as UTF-8 "
            f"(e.g. iconv -f latin1 -t utf-8)", table=p.name, row=lineno) from None


def _rows(path: str | PathLike[str], n_fields: int, kind: str) -> list[list[str]]:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{kind} file not found: {p}")
    rows = []
    with p.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            stripped = _decoded(raw, lineno, p, kind).strip()
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
    with (gzip.open(p, "rb") if p.suffix == ".gz" else p.open("rb")) as fh:
        for lineno, raw in enumerate(fh, start=1):
            text = _decoded(raw, lineno, p, "prefs")
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
                raise InputError(f"prefs line {lineno}: rel_level {fields[4]!r} is not a finite "
                                 "number", table=p.name, row=lineno, column="rel")
            rows.append(fields)
    if not rows:
        raise InputError(f"prefs file {p} holds no data line", table=p.name)
    df = pd.DataFrame(rows, columns=["qid", "jg", "jsg", "docid", "rel"])
    df["rel"] = df["rel"].astype("float64")
    return df


def warn_on_few_judged(run_qids: Iterable[object], qrels_qids: Iterable[object], *,
                       run: str, qrels: str) -> float:
    """Log a WARNING when fewer than half of a run's queries have a judgment.

    A run and qrels that share few query ids are usually a mismatch (another topic set, a
    prefix such as ``q`` on one side only, an encoding artefact), and every unjudged query
    silently leaves the mean.

    Parameters
    ----------
    run_qids, qrels_qids : the query ids of the run and of the qrels.
    run, qrels : how to name the two in the message (file names).

    Returns
    -------
    float
        The share of the run's distinct queries that have a judgment (1.0 for an empty run).
    """
    in_run, judged = set(map(str, run_qids)), set(map(str, qrels_qids))
    both = in_run & judged
    share = len(both) / len(in_run) if in_run else 1.0
    if share < MIN_JUDGED_SHARE:
        unjudged = sorted(in_run - judged)[:3]
        unretrieved = sorted(judged - in_run)[:3]
        log.warning("%s and %s share few query ids: %d of the run's %d queries are judged "
                    "(%d queries in the qrels); e.g. run-only %s, qrels-only %s", run, qrels,
                    len(both), len(in_run), len(judged), unjudged, unretrieved)
    return share
