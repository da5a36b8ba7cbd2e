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

import codecs
import gzip
from pathlib import Path

import numpy as np
import pandas as pd

from harness.data.trec import read_prefs as read_text_prefs
from harness.data.trec import out_of_memory, trec_fields
from harness.errors import InputError

__all__ = ["read_eval_qrels", "read_eval_run", "read_prefs", "read_zscores", "is_table"]


def is_table(path: str | Path) -> bool:
    """Whether ``path`` is a parquet file (read as a table, not as TREC text)."""
    return Path(path).suffix.lower() in (".parquet", ".pq")


def _without_comments(data: bytes) -> bytes:
    """``data`` with each line that starts with ``#`` emptied (LF or CRLF line ends; the
    empty lines left are skipped as blank ones): a few searches, not a pass per line."""
    parts, pos = [], 0
    if data.startswith(b"#"):
        pos = data.find(b"\n") if b"\n" in data else len(data)
    while True:
        hit = data.find(b"\n#", pos)
        if hit < 0:
            parts.append(data[pos:])
            return b"".join(parts)
        parts.append(data[pos:hit + 1])
        end = data.find(b"\n", hit + 1)
        pos = len(data) if end < 0 else end


def memory_limited() -> bool:
    """Whether this process runs under a memory limit (``ulimit -v``, a cgroup's
    ``memory.max``). Arrow's threaded CSV reader aborts the process when an allocation fails
    (``ValueOrDie``), where the single-threaded one raises ``ArrowMemoryError``, which
    becomes a one-line error: under a limit, files are read on one thread (about 15%
    slower)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return True
    try:
        return Path("/sys/fs/cgroup/memory.max").read_text().strip() != "max"
    except OSError:
        return False


def _fast_columns(path: Path, n_fields: int, number: int, keep: tuple[int, ...]
                  ) -> dict[int, pd.Series] | None:
    """The file's columns ``keep`` (of ``n_fields``) as string Series (``number``: float),
    read by Arrow's CSV reader, when the file is plain (UTF-8, one separator character,
    exactly ``n_fields`` non-empty fields a line, comment lines removed first; any of
    ``\n``, ``\r\n``, ``\r`` ending lines, as Arrow reads them); None otherwise, and the
    line-by-line reader takes over (it names the line of any fault).

    The checks are byte searches (most ``memchr``, a few ms on 50 MB): a repeated separator
    is searched for; a leading or trailing one makes an extra field, which Arrow's count of
    fields refuses, or, with a field missing, an empty one, which the check of the columns
    read refuses; blank lines Arrow skips, as trec_eval does."""
    import io

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if not path.is_file():
        return None
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError):
        return None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if not data or b"\r#" in data:
        return None
    if b"#" in data and (data.startswith(b"#") or b"\n#" in data):
        data = _without_comments(data)
    has_tab, has_space = b"\t" in data, b" " in data
    if has_tab == has_space or (b"\t\t" if has_tab else b"  ") in data:
        return None  # mixed or repeated separators: trec_eval's whitespace rule, line by line
    names = [f"c{i}" for i in range(n_fields)]
    types = {names[i]: pa.string() for i in keep}
    types[names[number]] = pa.float64()  # a bad number: Arrow refuses, the slow path names it
    try:
        table = pcsv.read_csv(
            io.BytesIO(data), read_options=pcsv.ReadOptions(column_names=names,
                                                             use_threads=not memory_limited()),
            parse_options=pcsv.ParseOptions(delimiter="\t" if has_tab else " ",
                                            quote_char=False, double_quote=False),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=[names[i] for i in keep],
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    if table.column(names[number]).null_count:
        return None
    out = {}
    for i in keep:
        column = table.column(names[i])
        if i != number and len(column) and pc.min(pc.binary_length(column)).as_py() == 0:
            return None  # an empty field: a separator at the start or end of a line
        out[i] = column.to_pandas()
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
    qid, _, docid, _, score, runid = zip(*rows)
    run = pd.DataFrame({"qid": qid, "docid": docid,
                        "score": _numbers(list(score), linenos, p, "score")})
    dup = run.duplicated(["qid", "docid"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{p} line {linenos[i]}: docno {docid[i]!r} is retrieved twice for "
                         f"query {qid[i]!r}")
    return run, runid[-1]


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
