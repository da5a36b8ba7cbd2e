"""The input files of ``harness eval``: qrels, runs, preference judgments and Z-score
tables, as TREC text (optionally gzip-compressed, ``.gz``) or parquet.

Text files are read as trec_eval reads them (:func:`harness.data.trec.trec_fields`: fields
split on ASCII whitespace only, ``\n``, ``\r\n`` and ``\r`` line ends, blank lines and
lines starting with ``#`` skipped, a run's columns after the sixth ignored); a plain file
(one separator character) is read by Arrow's CSV reader instead, with the same result. A
bad line raises :class:`~harness.errors.InputError` whose message names the file and the
line (``qrels.txt line 12 has 5 fields, expected 4 ...``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.data.trec import out_of_memory, read_prefs as read_text_prefs, trec_fields
from harness.data.trec_arrays import fast_columns, memory_limited
from harness.errors import InputError

__all__ = ["read_eval_qrels", "read_eval_run", "read_prefs", "read_zscores", "is_table",
           "memory_limited"]


def is_table(path: str | Path) -> bool:
    """Whether ``path`` is a parquet file (read as a table, not as TREC text)."""
    return Path(path).suffix.lower() in (".parquet", ".pq")


def _fast_columns(path: Path, n_fields: int, number: int, keep: tuple[int, ...]
                  ) -> dict[int, pd.Series] | None:
    """:func:`harness.data.trec_arrays.fast_columns` (Arrow's CSV reader on a plain file)
    as Series: text columns of str, the number column ``number`` of floats; None when the
    file is not plain and the line-by-line reader must name its fault."""
    cols = fast_columns(path, n_fields, number, keep)
    if cols is None:
        return None
    out = {i: column.to_pandas() for i, column in cols.text.items()}
    out[number] = pd.Series(cols.number)
    return out


def _numbers(values: list[str], linenos: list[int], path: Path, what: str) -> np.ndarray:
    out = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(out))
    if len(bad):
        i = int(bad[0])
        raise InputError(f"{path} line {linenos[i]}: {what} {values[i]!r} is not a number")
    return out


def _parquet(path: Path, need: tuple[str, ...], kind: str) -> pd.DataFrame:
    if not path.is_file():
        raise InputError(f"{kind} file not found: {path}")
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many kinds
        raise InputError(f"{path}: cannot be read as parquet ({type(exc).__name__}: {exc})"
                         ) from None
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(f"{path}: {kind} table lacks column(s) {', '.join(missing)} "
                         f"(has {', '.join(map(str, df.columns))})")
    return df


def read_eval_qrels(path: str | Path) -> pd.DataFrame:
    """Qrels (``qid iter docno rel``): columns ``qid``, ``iter``, ``docid`` (strings) and
    ``label`` (float)."""
    try:
        return _read_eval_qrels(Path(path))
    except MemoryError:  # Arrow's ArrowMemoryError too
        size = Path(path).stat().st_size / 2 ** 30
        raise InputError(f"QRELS {path} ({size:.2f} GiB) does not fit in the memory this "
                         "process may use; run harness eval where more memory is free, or "
                         "evaluate the run in blocks of queries: harness cluster RUN "
                         "RUN.parquet, then harness.evaluate_parquet") from None


def _read_eval_qrels(p: Path) -> pd.DataFrame:
    if is_table(p):
        df = _parquet(p, ("qid", "docid", "label"), "qrels")
        out = pd.DataFrame({"qid": df["qid"].astype(str),
                            "iter": df["iter"].astype(str) if "iter" in df else
                            df["subtopic"].astype(str) if "subtopic" in df else "0",
                            "docid": df["docid"].astype(str),
                            "label": pd.to_numeric(df["label"], errors="raise")
                            .astype(np.float64)})
        return out
    fast = _fast_columns(p, 4, 3, (0, 1, 2, 3))
    if fast is not None:
        values = fast[3].to_numpy(dtype=np.float64)
        if np.isfinite(values).all():
            return pd.DataFrame({"qid": fast[0], "iter": fast[1], "docid": fast[2],
                                 "label": values})
    rows, linenos = trec_fields(p, 4, "qrels")
    qid, it, docid, label = zip(*rows)
    return pd.DataFrame({"qid": qid, "iter": it, "docid": docid,
                         "label": _numbers(list(label), linenos, p, "relevance")})


def read_eval_run(path: str | Path) -> tuple[pd.DataFrame, str]:
    """A run (``qid Q0 docno rank score runid``): columns ``qid``, ``docid``, ``score``,
    and the run id (trec_eval's: the last line's; a parquet run without ``run_id``: the
    file's stem). A text run too large for memory is an error saying how to convert it."""
    try:
        return _read_eval_run(Path(path))
    except MemoryError:  # Arrow's ArrowMemoryError too
        raise out_of_memory(path, "run") from None


def _read_eval_run(p: Path) -> tuple[pd.DataFrame, str]:
    if is_table(p):
        df = _parquet(p, ("qid", "docid", "score"), "run")
        runid = str(df["run_id"].iloc[-1]) if "run_id" in df and len(df) else p.stem
        return pd.DataFrame({"qid": df["qid"].astype(str), "docid": df["docid"].astype(str),
                             "score": pd.to_numeric(df["score"]).astype(np.float64)}), runid
    fast = _fast_columns(p, 6, 4, (0, 2, 4, 5))
    if fast is not None:
        values = fast[4].to_numpy(dtype=np.float64)
        if np.isfinite(values).all():  # a document twice: the engine names its query
            return (pd.DataFrame({"qid": fast[0], "docid": fast[2], "score": values}),
                    str(fast[5].iloc[-1]))
    rows, linenos = trec_fields(p, 6, "run", more=True)
    qid, _, docid, _, score, runids = zip(*rows)
    run = pd.DataFrame({"qid": qid, "docid": docid,
                        "score": _numbers(list(score), linenos, p, "score")})
    dup = run.duplicated(["qid", "docid"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{p} line {linenos[i]}: docno {docid[i]!r} is retrieved twice for "
                         f"query {qid[i]!r}")
    return run, runids[-1]


def read_prefs(path: str | Path) -> pd.DataFrame:
    """Preference judgments (``qid jg jsg docno rel``, ``-R prefs``): columns ``qid``,
    ``jg``, ``jsg``, ``docid`` (strings) and ``label`` (float)."""
    p = Path(path)
    if is_table(p):
        return _parquet(p, ("qid", "jg", "jsg", "docid", "label"), "prefs")
    return read_text_prefs(p).rename(columns={"rel": "label"})


def read_zscores(path: str | Path) -> dict[tuple[str, str], tuple[float, float]]:
    """A ``-Z`` file (``qid measure mean stddev``): ``{(qid, measure): (mean, stddev)}``."""
    p = Path(path)
    rows, linenos = trec_fields(p, 4, "zscores")
    qid, measure, mean, std = zip(*rows)
    means = _numbers(list(mean), linenos, p, "mean")
    stds = _numbers(list(std), linenos, p, "stddev")
    return {(q, m): (float(a), float(b)) for q, m, a, b in zip(qid, measure, means, stds)}
