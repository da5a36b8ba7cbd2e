"""Readers for TREC-format qrels and run files.

- qrels: ``qid iter docid label`` per line;
- run: ``qid Q0 docid rank score runid`` per line; the rank column is ignored (documents are
  ranked by score), and anything after the sixth column is ignored, as trec_eval does.

Every TREC text file is read by one function, :func:`trec_fields`, as trec_eval reads it:
fields are separated by spaces and tabs only, so a no-break space, another Unicode space or
a control character inside a docid is part of it (trec_eval's C ``isspace`` also splits at
a vertical tab or form feed; here those stay in the field, so a stray one cannot shift a
run line's columns and make its rank the score);
lines end at ``\n``, ``\r\n`` or a lone ``\r`` alike. Blank lines and lines starting
with ``#`` are skipped (a docid may itself contain ``#``). A line with too few fields, or
with too many where trec_eval refuses them (qrels, preferences), is refused naming the file
and the line, and what the file looks like when its first line has another format's
number of fields (a run given as qrels, preferences given as qrels, ...). Files are UTF-8
(a ``.gz`` file is decompressed first); a byte-order mark at the start is dropped
(Windows editors write one, and it would otherwise become part of the first qid, so that
query would never meet its judgments). Bytes that are not UTF-8 raise an error naming the
file and line.
"""

from __future__ import annotations

import codecs
import gzip
import logging
import re
from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_qrels", "read_run", "read_prefs", "trec_fields", "warn_on_few_judged",
           "FIELDS", "LAYOUTS"]

log = logging.getLogger("harness")
#: Below this share of run queries that have a judgment, :func:`warn_on_few_judged` warns.
MIN_JUDGED_SHARE = 0.5


#: The fields of each kind of TREC file, for messages.
FIELDS = {"qrels": "qid iter docno rel", "run": "qid Q0 docno rank score runid",
          "prefs": "qid jg jsg docno rel", "zscores": "qid measure mean stddev"}
#: What a TREC file with this many fields a line is, for the message that refuses it.
LAYOUTS = {4: f"qrels ({FIELDS['qrels']})",
           5: f"preferences ({FIELDS['prefs']}; harness eval -R prefs)",
           6: f"a run ({FIELDS['run']})"}


#: What separates the fields of a TREC line: runs of spaces and tabs.
_SEPARATORS = re.compile(rb"[ \t]+")


def trec_fields(path: str | PathLike[str], n_fields: int, kind: str, *,
               more: bool = False) -> tuple[list[list[str]], list[int]]:
    """The data lines of a TREC text file, each as its first ``n_fields`` fields, with
    their 1-based line numbers.

    ``kind`` names the file in messages (``qrels``, ``run``, ``prefs``, ...); ``more``:
    fields after the ``n_fields``-th are ignored (trec_eval's runs) instead of refused
    (its qrels and preferences). Raises :class:`InputError` for a missing or unreadable
    file, bytes that are not UTF-8, a line with the wrong number of fields (naming what
    the file looks like, when its first line has another format's count) and a file
    without a data line.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{kind} file not found: {p}")
    try:
        with (gzip.open(p, "rb") if p.suffix == ".gz" else p.open("rb")) as fh:
            data = fh.read()
    except (OSError, EOFError) as exc:
        raise InputError(f"{p}: cannot be read as {kind} ({exc})") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    rows: list[list[str]] = []
    linenos: list[int] = []
    for lineno, raw in enumerate(data.splitlines(), start=1):  # \n, \r\n, \r
        fields = _SEPARATORS.split(raw.strip(b" \t")) if raw.strip(b" \t") else []
        if not fields or fields[0].startswith(b"#"):
            continue
        if len(fields) < n_fields or (len(fields) > n_fields and not more):
            looks = LAYOUTS.get(len(fields)) if not rows else None
            hint = f"; the file looks like {looks}" if looks else ""
            text = raw.decode("utf-8", errors="replace").strip()
            raise InputError(f"{p} line {lineno} has {len(fields)} fields, expected "
                             f"{n_fields} ({kind}: {FIELDS.get(kind, '')}){hint}: {text!r}",
                             table=p.name, row=lineno)
        try:
            rows.append([f.decode("utf-8") for f in fields[:n_fields]])
        except UnicodeDecodeError:
            try:  # the line decoded whole, to name its first bad byte
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{kind} file {p} is not UTF-8: line {lineno}, byte {exc.start + 1} is "
                    f"{raw[exc.start:exc.start + 1]!r} in {raw.rstrip()!r}; re-encode it as "
                    f"UTF-8 (e.g. iconv -f latin1 -t utf-8)", table=p.name, row=lineno
                ) from None
        linenos.append(lineno)
    if not rows:
        raise InputError(f"{kind} file {p} holds no data line", table=p.name)
    return rows, linenos


def _to_number(df: pd.DataFrame, column: str, path: str | PathLike[str], kind: str,
               integer: bool) -> None:
    import pandas as pd

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
    import pandas as pd

    rows, _ = trec_fields(path, 4, "qrels")
    df = pd.DataFrame(rows, columns=["qid", "iter", "docid", "label"]).drop(columns="iter")
    _to_number(df, "label", path, "qrels", integer=True)
    return df


def out_of_memory(path: str | PathLike[str], kind: str) -> InputError:
    """The error for a TREC text file too large to read in memory: its size, and how to
    convert it to parquet in bounded memory first."""
    p = Path(path)
    size = p.stat().st_size / 2 ** 30 if p.is_file() else float("nan")
    return InputError(
        f"{kind} file {p} ({size:.2f} GiB of text) does not fit in memory as text; convert "
        f"it to parquet in bounded memory first: harness cluster {p} "
        f"{p.with_suffix('.parquet')} (then give the .parquet file: harness eval reads it, "
        "and a study reads it as dataset=parquet_run)", table=p.name)


def read_run(path: str | PathLike[str]) -> pd.DataFrame:
    """Read a TREC run file into a DataFrame with columns ``qid``, ``docid``, ``score``,
    ``rank`` and ``run_id``. Scores are float64."""
    import pandas as pd

    try:
        rows, _ = trec_fields(path, 6, "run", more=True)
    except MemoryError:
        raise out_of_memory(path, "run") from None
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
    import pandas as pd

    p = Path(path)
    rows, linenos = trec_fields(p, 5, "prefs")
    for fields, lineno in zip(rows, linenos):
        try:
            level = float(fields[4])
        except ValueError:
            level = float("nan")
        if not np.isfinite(level):
            raise InputError(f"prefs line {lineno}: rel_level {fields[4]!r} is not a finite "
                             "number", table=p.name, row=lineno, column="rel")
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
