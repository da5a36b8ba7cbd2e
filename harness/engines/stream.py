"""Evaluate a parquet run larger than memory, streaming it in batches of whole queries.

The file must be *clustered by qid*: the rows of a query are contiguous (any query order).
Batches of about ``batch_rows`` rows are read with pyarrow; the rows of the last query of a
batch are held back and joined to the next batch, so every query is evaluated whole, by the
same vectorised engine as :func:`harness.evaluate`. Peak memory follows ``batch_rows``, not
the file size. A qid that reappears after its rows ended means the file is not clustered;
the error names the query and the command that rewrites the file clustered,
``harness cluster IN OUT`` (an out-of-core rewrite, see :func:`cluster_parquet`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.engines.parts import (
    NotClustered,
    PassClock,
    check_options,
    evaluate_parts,
    evaluate_score_parts,
    file_columns,
    memory_parts,
    needs_top_label,
    not_clustered,
    parquet_reader,
    top_label,
)
from harness.engines.units import evaluate_units, file_units
from harness.engines.workers import Meanwhile
from harness.errors import InputError
from harness.metrics.engine.blocked import collection_top_label as memory_top_label
from harness.metrics.engine.evaluate import MetricLike
from harness.metrics.vocabulary.definition import Metric
from harness.progress import bars_on, progress_sized

__all__ = ["evaluate_parquet", "evaluate_parquet_scores", "evaluate_memory",
           "iter_query_batches", "NotClustered", "row_count"]


def iter_query_batches(path: str | os.PathLike[str], *, batch_rows: int = 1_000_000,
                       columns: Mapping[str, str] | list[str] | None = None
                       ) -> Iterator[pd.DataFrame]:
    """Yield DataFrames of whole queries, about ``batch_rows`` rows each, from a parquet
    file clustered by qid; each is indexed by file row. ``columns`` lists the columns to
    read, or maps file columns to the names they take (the qid column must end up ``qid``).
    Raises :class:`NotClustered` naming the first qid seen twice."""
    if int(batch_rows) < 1:
        raise InputError(f"batch_rows must be >= 1, got {batch_rows}", column="batch_rows")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"parquet run not found: {p}")
    rename = dict(columns) if isinstance(columns, Mapping) else None
    reader = parquet_reader(p)
    seen: set[Any] = set()
    carry: pd.DataFrame | None = None
    offset = 0  # file row of the first row of ``carry`` / the batch
    for batch in reader.iter_batches(batch_size=int(batch_rows),
                                     columns=None if columns is None else list(columns)):
        frame = batch.to_pandas()
        if rename:
            frame = frame.rename(columns=rename)
        if carry is not None:
            frame = pd.concat([carry, frame], ignore_index=True)
        if frame.empty:
            continue
        qid = frame["qid"].to_numpy()
        last = qid[-1]
        tail = len(frame) - int(np.argmax(qid[::-1] != last)) if (qid != last).any() else 0
        done, carry = frame.iloc[:tail], frame.iloc[tail:]
        if len(done):
            _check_new(done, seen, p, offset)
            done.index = pd.RangeIndex(offset, offset + len(done))
            yield done
            offset += len(done)
    if carry is not None and len(carry):
        _check_new(carry, seen, p, offset)
        carry.index = pd.RangeIndex(offset, offset + len(carry))
        yield carry


def _check_new(frame: pd.DataFrame, seen: set[Any], path: Path, offset: int) -> None:
    """Every qid of ``frame`` must be new, and contiguous within ``frame``."""
    qid = frame["qid"]
    change = np.flatnonzero(qid.to_numpy()[1:] != qid.to_numpy()[:-1]) + 1
    starts = np.concatenate(([0], change))
    firsts = qid.iloc[starts]
    values = firsts.tolist()  # set lookups: O(batch), not O(queries seen so far) as isin
    repeated = firsts.duplicated().to_numpy() | np.fromiter(
        (q in seen for q in values), dtype=bool, count=len(values))
    if repeated.any():
        i = int(np.flatnonzero(repeated)[0])
        raise not_clustered(path, firsts.iloc[i], offset + int(starts[i]))
    seen.update(values)


def evaluate_parquet(path: str | os.PathLike[str], qrels: pd.DataFrame | None = None,
                     metrics: MetricLike | Iterable[MetricLike] = ("ndcg@10",), *,
                     batch_rows: int = 1_000_000, names: Mapping[str, str] | None = None,
                     **options: Any) -> pd.DataFrame:
    """:func:`harness.evaluate` over a parquet run too large for memory.

    Parameters
    ----------
    path : parquet file with columns ``qid``, ``docid``, ``score`` (and ``label`` when
        ``qrels`` is None), clustered by qid.
    qrels, metrics, **options : as in :func:`harness.evaluate` (``weights`` excepted). The
        qrels are held in memory; each batch is evaluated against the judgments of its
        queries, so ``missing='zero'`` adds the judged queries no batch held at the end.
    batch_rows : int, default 1,000,000
        Rows read at a time; peak memory grows with it, not with the file.
    names : mapping, optional
        The file's column for a role when it is not the role's name, e.g.
        ``{"score": "bm25", "label": "clicked"}``.

    Returns
    -------
    DataFrame
        The same per-query table :func:`harness.evaluate` gives for the whole file, sorted
        by qid (values are identical: each query is evaluated whole, by the same code).
        Errors in the data name the file row.
    """
    mlist, missing = check_options(metrics, options, "evaluate_parquet", qrels)
    p = Path(path)
    columns = file_columns(p, qrels, names)
    if needs_top_label(mlist, options):
        options["top_label"] = top_label(p, qrels, names)  # one top grade for every batch
    parts = iter_query_batches(p, batch_rows=batch_rows, columns=columns)
    total = row_count(p) if bars_on() else None
    return evaluate_parts(_rows_bar(parts, p.name, total), qrels, mlist, options, missing,
                          p.name)


def evaluate_parquet_scores(path: str | os.PathLike[str], qrels: pd.DataFrame | None,
                            metrics: MetricLike | Iterable[MetricLike],
                            scores: Sequence[str], *, batch_rows: int = 1_000_000,
                            names: Mapping[str, str] | None = None,
                            clock: PassClock | None = None, workers: int = 1,
                            meanwhile: Iterable[Callable[[], Any]] = (),
                            **options: Any) -> dict[str, pd.DataFrame]:
    """:func:`evaluate_parquet` of several score columns of one file in one pass: each
    batch is read once and evaluated with each column of ``scores`` as the score. Returns
    each column's table, the one :func:`evaluate_parquet` gives with
    ``names={..., "score": column}``. ``names`` maps the other roles; ``clock`` (optional)
    receives the time spent reading and evaluating each column. ``workers`` > 1 evaluates
    the columns side by side in that many processes (this one and ``workers - 1`` workers,
    :mod:`harness.engines.workers`). The callables of ``meanwhile`` run in this process
    during the pass, while the workers have work in hand (:class:`Meanwhile`), and all of
    them before it returns."""
    tasks = Meanwhile(meanwhile)
    mlist, missing = check_options(metrics, options, "evaluate_parquet", qrels)
    p = Path(path)
    columns: dict[str, str] = {}
    for score in scores:  # every score column checked as one evaluation would
        columns.update(file_columns(p, qrels, {**(names or {}), "score": score}))
    for score in scores:
        columns[score] = score  # each keeps its name; the part's score is chosen per column
    taken = [c for c in scores if c in ("qid", "docid", "label")]
    if taken or len(set(scores)) != len(scores):
        raise InputError(f"score columns {list(scores)} cannot share one pass: "
                         f"{(taken or list(scores))[0]!r} is a role's name or repeated",
                         table=p.name, column=(taken or list(scores))[0])
    if needs_top_label(mlist, options):
        options["top_label"] = top_label(p, qrels, names)
    if int(workers) > 1 and len(scores) > 1 and qrels is None:  # each process reads its units
        units = file_units(p, int(batch_rows))
        if units is not None:
            return {str(s): table for s, table in evaluate_units(
                p, units, columns, int(batch_rows), mlist, options, missing, list(scores),
                clock if clock is not None else PassClock(), int(workers), tasks).items()}
    parts = iter_query_batches(p, batch_rows=batch_rows, columns=columns)
    total = row_count(p) if bars_on() else None
    bar = _rows_bar(parts, f"{p.name} ({len(scores)} score columns)", total)
    out = evaluate_score_parts(bar, qrels, mlist, options, missing, p.name, list(scores), clock,
                               workers=int(workers), meanwhile=tasks)
    return {str(s): table for s, table in out.items()}


def evaluate_memory(run: pd.DataFrame, qrels: pd.DataFrame | None, metrics: Iterable[Metric],
                    *, batch_rows: int, **options: Any) -> pd.DataFrame:
    """An in-memory run evaluated in slices of whole queries of about ``batch_rows`` rows
    (the stream engine on a run already in memory)."""
    mlist, missing = check_options(metrics, options, "the stream engine", qrels)
    if needs_top_label(mlist, options):
        options["top_label"] = memory_top_label(run, qrels)
    parts, _ = memory_parts(run, batch_rows)
    return evaluate_parts(_rows_bar(parts, "run", len(run)), qrels, mlist, options, missing,
                          "run")


def _rows_bar(parts: Iterable[pd.DataFrame], name: str, total: int | None
              ) -> Iterable[pd.DataFrame]:
    """The parts with a bar over the rows evaluated, batch by batch, with rate and ETA, on
    stderr when it is a terminal (:func:`harness.progress.progress_sized`); the parts
    themselves otherwise. The parts and their order are untouched."""
    return progress_sized(parts, desc=f"evaluate {name}", size=len, total=total, unit="row")


def row_count(path: Path) -> int | None:
    """The file's row count from its parquet metadata (None when it cannot be read)."""
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # noqa: BLE001 - a bar without a total; the read reports the error
        return None
