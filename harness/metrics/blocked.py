""":func:`harness.evaluate` on a large run: blocks of whole queries, each evaluated alone.

Above :data:`BLOCKED_ABOVE` rows, the run's queries are coded by sorted qid (jointly with the
qrels', as :func:`harness.metrics.prepare.prepare` codes them), cut into consecutive ranges
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

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.metrics.ids import factorize_qid, joint_qid_codes
from harness.metrics.inputs import align_key_dtypes, numeric
from harness.metrics.segments import group_by_query
from harness.metrics.weighting import EMPTY_ATTR, merge_empty

__all__ = ["BLOCKED_ABOVE", "BLOCK_ROWS", "evaluate_blocked", "collection_top_label"]

#: Runs with more rows than this are evaluated in blocks (tests lower it).
BLOCKED_ABOVE = 4_000_000
#: Run rows per block, about (a block ends at a query's end).
BLOCK_ROWS = 2_000_000

Whole = Callable[..., pd.DataFrame]


def evaluate_blocked(run: Any, qrels: Any, metrics: list[Any], whole: Whole,
                     options: Mapping[str, Any]) -> pd.DataFrame | None:
    """The per-query table of ``run`` computed block by block with ``whole`` (the unblocked
    engine, called as ``whole(run, qrels, metrics, **options)``), or None when the run is
    small, cannot be coded here, or a block raised: then the caller evaluates it whole."""
    if not isinstance(run, pd.DataFrame) or len(run) <= BLOCKED_ABOVE:
        return None
    layout = _layout(run, qrels, options.get("missing"))
    if layout is None:
        return None
    options = dict(options)
    if options.get("top_label") is None:  # one top grade for every block: the collection's
        options["top_label"] = collection_top_label(run, qrels)
    frames = []
    try:
        for run_part, qrels_part in _blocks(run, qrels, *layout):
            frames.append(whole(run_part, qrels_part, metrics, **options))
    except InputError:
        return None  # the unblocked engine names the first bad row of the whole input
    return _assemble(frames)


def collection_top_label(run: pd.DataFrame, qrels: pd.DataFrame | None) -> float | None:
    """The top grade :func:`harness.evaluate` finds in the whole of an in-memory run (None
    when the labels are missing: evaluate names the missing column)."""
    source = run if qrels is None else qrels
    if not isinstance(source, pd.DataFrame) or "label" not in source.columns:
        return None
    return max(0.0, float(pd.to_numeric(source["label"], errors="coerce").max()))


def _layout(run: pd.DataFrame, qrels: Any, missing: Any
            ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray] | None:
    """(run query codes, qrels query codes or None, first code of each block), or None
    when the qids cannot be coded here or no query is evaluated."""
    try:
        if qrels is None:
            rq, quniq, _ = factorize_qid(run["qid"])
            n = len(quniq)
            label = numeric(run, "label", "run")
            jq = None
            judged = np.bincount(rq[label >= 0], minlength=n) > 0
        else:
            if not isinstance(qrels, pd.DataFrame) or "qid" not in qrels.columns:
                return None
            rq, jq, quniq = joint_qid_codes(*align_key_dtypes(run["qid"], qrels["qid"]))
            n = len(quniq)
            judged = np.bincount(jq, minlength=n) > 0
    except (KeyError, TypeError, ValueError, InputError):
        return None
    if (rq < 0).any() or (jq is not None and (jq < 0).any()):
        return None  # a missing qid
    rows = np.bincount(rq, minlength=n)
    evaluated = judged & (rows > 0) if missing != "zero" else judged
    starts = block_starts(rows, evaluated, BLOCK_ROWS)
    return (rq, jq, starts) if starts is not None else None


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


def _blocks(run: pd.DataFrame, qrels: pd.DataFrame | None, rq: np.ndarray,
            jq: np.ndarray | None, starts: np.ndarray
            ) -> Iterator[tuple[pd.DataFrame, pd.DataFrame | None]]:
    """Each block's run rows (grouped by code, in input order within a query) and qrels."""
    run_bounds = _bounds(rq, starts)
    qrels_bounds = None if jq is None else _bounds(jq, starts)
    for i in range(len(starts)):
        run_part = _take(run, *run_bounds, i)
        qrels_part = None if qrels_bounds is None else _take(qrels, *qrels_bounds, i)
        yield run_part, qrels_part


def _bounds(codes: np.ndarray, starts: np.ndarray
            ) -> tuple[np.ndarray | None, np.ndarray]:
    """(stable grouping permutation or None when already grouped, row bounds of blocks)."""
    order = group_by_query(codes, int(codes.max()) + 1 if len(codes) else 0)
    ordered = codes if order is None else codes[order]
    return order, np.append(np.searchsorted(ordered, starts), len(codes))


def _take(frame: pd.DataFrame, order: np.ndarray | None, bounds: np.ndarray,
          i: int) -> pd.DataFrame:
    a, b = int(bounds[i]), int(bounds[i + 1])
    return frame.iloc[a:b] if order is None else frame.iloc[order[a:b]]


def _assemble(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The blocks' tables as one: rows and the attrs' lists in block (= qid) order."""
    empties = merge_empty(frames)
    out = pd.concat(frames) if len(frames) > 1 else frames[0].copy()
    out.attrs = {}
    if any(EMPTY_ATTR in f.attrs for f in frames):
        out.attrs[EMPTY_ATTR] = empties
    for key in ("missing_qids", "unjudged_qids"):
        out.attrs[key] = [q for f in frames for q in f.attrs.get(key, [])]
    return out
