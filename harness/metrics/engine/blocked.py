""":func:`harness.evaluate` on a large run: blocks of whole queries, each evaluated alone.

Above :data:`BLOCKED_ABOVE` rows, the run's queries are coded by sorted qid (jointly with the
qrels', as :func:`harness.metrics.layout.prepare.prepare` codes them), cut into consecutive ranges
of codes holding about :data:`BLOCK_ROWS` run rows each, and every range is evaluated by the
unblocked engine against its own judgments. A query's rows need not be contiguous in the
frame: rows are grouped by code with a stable sort, so each query keeps its input order.

The assembled table is the unblocked one, bit for bit: values are per query; the queries,
the ``missing_qids``, ``unjudged_qids`` and ``empty_qids`` of the blocks come in code order,
which is the sorted order of the whole; the top grade metrics such as mnDCG and ERR read
is the whole collection's. Every block holds at least one evaluated query (cuts fall only
on evaluated queries), so no block meets the "no query is judged" error of a part. Input
the pre-pass cannot code, and any error a block raises, are handed to the unblocked engine,
which reports them exactly as it always does (the same first row, the same count).

Why blocks: the engine's sorts and gathers over one block stay in cache-sized arrays, so time
grows linearly with the rows and the working memory is that of one block (issue 25).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.metrics.engine.weighting import EMPTY_ATTR, merge_empty
from harness.metrics.layout.inputs import align_key_dtypes, numeric
from harness.metrics.layout.qids import factorize_qid, joint_qid_codes
from harness.metrics.layout.segments import group_by_query

__all__ = ["BLOCKED_ABOVE", "BLOCK_ROWS", "plan_blocks", "assemble", "collection_top_label"]

#: Runs with more rows than this are evaluated in blocks (tests lower it).
BLOCKED_ABOVE = 1_000_000
#: Run rows per block, about (a block ends at a query's end).
BLOCK_ROWS = 500_000

def plan_blocks(run: Any, qrels: Any, options: Mapping[str, Any]
                ) -> tuple[Iterator[tuple[pd.DataFrame, pd.DataFrame | None]],
                           dict[str, Any]] | None:
    """The blocks of ``run`` (each block's run rows and qrels) and the options every block is
    evaluated with (the collection's top grade filled in), or None when the run is small or
    cannot be coded here: then it is evaluated whole. :func:`harness.evaluate` evaluates
    each block and puts the tables together with :func:`assemble`."""
    if not isinstance(run, pd.DataFrame) or len(run) <= BLOCKED_ABOVE:
        return None
    layout = _layout(run, qrels, options.get("missing"))
    if layout is None:
        return None
    options = dict(options)
    if options.get("top_label") is None:  # one top grade for every block: the collection's
        options["top_label"] = collection_top_label(run, qrels)
    return _blocks(run, qrels, *layout), options


def collection_top_label(run: pd.DataFrame, qrels: pd.DataFrame | None) -> float | None:
    """The top grade :func:`harness.evaluate` finds in the whole of an in-memory run (None
    when the labels are missing: evaluate names the missing column)."""
    source = run if qrels is None else qrels
    if not isinstance(source, pd.DataFrame) or "label" not in source.columns:
        return None
    return max(0.0, float(pd.to_numeric(source["label"], errors="coerce").max()))


Rows = tuple[np.ndarray | None, np.ndarray]  # (grouping permutation or None, bounds)


def _layout(run: pd.DataFrame, qrels: Any, missing: Any
            ) -> tuple[Rows, Rows | None] | None:
    """Where each block's rows are, in the run and in the qrels; None when the qids cannot
    be coded here or no query is evaluated. The qids are coded per run of equal values
    (one per query when the rows come grouped), not per row."""
    try:
        run_seg = _segments(run["qid"])
        if run_seg is None:
            return None
        if qrels is None:
            codes, quniq, _ = factorize_qid(run_seg[1])
            label = numeric(run, "label", "run") >= 0
            judged_seg = np.add.reduceat(label, run_seg[0]) > 0
            judged = np.bincount(codes, weights=judged_seg, minlength=len(quniq)) > 0
            j_seg = None
        else:
            if not isinstance(qrels, pd.DataFrame) or "qid" not in qrels.columns:
                return None
            j_seg = _segments(qrels["qid"])
            if j_seg is None:
                return None
            codes, j_codes, quniq = joint_qid_codes(*align_key_dtypes(run_seg[1], j_seg[1]))
            judged = np.bincount(j_codes, minlength=len(quniq)) > 0
    except (KeyError, TypeError, ValueError, InputError):
        return None
    n = len(quniq)
    rows = np.bincount(codes, weights=np.diff(np.append(run_seg[0], len(run))),
                       minlength=n).astype(np.int64)
    evaluated = judged & (rows > 0) if missing != "zero" else judged
    starts = block_starts(rows, evaluated, BLOCK_ROWS)
    if starts is None:
        return None
    return (_rows(codes, run_seg[0], len(run), starts),
            None if j_seg is None else _rows(j_codes, j_seg[0], len(qrels), starts))


def _segments(qid: pd.Series) -> tuple[np.ndarray, pd.Series] | None:
    """(first row of each run of equal qids, their qids), or None when a qid is missing."""
    if len(qid) == 0 or bool(qid.isna().any()):
        return None
    array = getattr(qid.array, "_pa_array", None)
    if array is not None and hasattr(qid.dtype, "__from_arrow__"):
        return _arrow_segments(array, qid.dtype)
    values = qid.to_numpy()
    first = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    return first, qid.iloc[first].reset_index(drop=True)


def _arrow_segments(array: Any, dtype: Any) -> tuple[np.ndarray, pd.Series]:
    """:func:`_segments` of an Arrow-backed column, chunk by chunk: the temporaries are a
    chunk's (pandas' take across the chunks of a 100M-row column copied all of them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    firsts, heads, previous, offset = [], [], None, 0
    for chunk in chunks:
        if len(chunk):
            change = np.concatenate((
                [previous is None or chunk[0] != previous],
                pc.not_equal(chunk[1:], chunk[:-1]).to_numpy(zero_copy_only=False)))
            local = np.flatnonzero(change.astype(bool, copy=False))
            firsts.append(local + offset)
            heads.append(chunk.take(pa.array(local)))
            previous, offset = chunk[len(chunk) - 1], offset + len(chunk)
    values = dtype.__from_arrow__(pa.chunked_array(heads, type=array.type))
    return np.concatenate(firsts), pd.Series(values)


def _rows(codes: np.ndarray, first: np.ndarray, n_rows: int, starts: np.ndarray) -> Rows:
    """The rows of each block from the codes of the runs of equal qids: slices when the
    runs come in code order (each query one run, queries sorted), else a stable grouping
    of the rows by code (each query keeps its input order)."""
    if len(codes) < 2 or bool(np.all(codes[1:] > codes[:-1])):
        bounds = np.append(first, n_rows)[np.searchsorted(codes, starts)]
        return None, np.append(bounds, n_rows)
    per_row = np.repeat(codes, np.diff(np.append(first, n_rows)))
    order = group_by_query(per_row, int(per_row.max()) + 1)
    ordered = per_row if order is None else per_row[order]
    return order, np.append(np.searchsorted(ordered, starts), n_rows)


def block_starts(rows: np.ndarray, evaluated: np.ndarray, block_rows: int
                 ) -> np.ndarray | None:
    """The first query code of each block: code 0, then the first evaluated query at or past
    each multiple of ``block_rows`` run rows. Every block holds an evaluated query and at
    least one run row. None when no query is evaluated."""
    e = np.flatnonzero(evaluated)
    if not len(e):
        return None
    total = int(rows.sum())
    before = np.cumsum(rows) - rows  # run rows of the codes below each code
    marks = np.arange(int(block_rows), total, int(block_rows))
    at = np.searchsorted(before[e], marks)
    cuts = np.unique(e[at[at < len(e)]])
    cuts = cuts[(cuts > e[0]) & (before[cuts] < total)]
    return np.concatenate(([0], cuts))


def _blocks(run: pd.DataFrame, qrels: pd.DataFrame | None, run_rows: Rows,
            qrels_rows: Rows | None) -> Iterator[tuple[pd.DataFrame, pd.DataFrame | None]]:
    """Each block's run rows (grouped by code, in input order within a query) and qrels."""
    for i in range(len(run_rows[1]) - 1):
        yield (_take(run, *run_rows, i),
               None if qrels_rows is None else _take(qrels, *qrels_rows, i))


def _take(frame: pd.DataFrame, order: np.ndarray | None, bounds: np.ndarray,
          i: int) -> pd.DataFrame:
    a, b = int(bounds[i]), int(bounds[i + 1])
    return frame.iloc[a:b] if order is None else frame.iloc[order[a:b]]


def assemble(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The blocks' tables as one: rows and the attrs' lists in block (= qid) order."""
    empties = merge_empty(frames)
    out = pd.concat(frames) if len(frames) > 1 else frames[0].copy()
    out.attrs = {}
    if any(EMPTY_ATTR in f.attrs for f in frames):
        out.attrs[EMPTY_ATTR] = empties
    for key in ("missing_qids", "unjudged_qids"):
        out.attrs[key] = [q for f in frames for q in f.attrs.get(key, [])]
    return out
