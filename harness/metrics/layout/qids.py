"""Query ids as integer codes by sorted qid: fast when integer qids come sorted or text qids
come grouped by query (each qid in one run of rows, as runs and qrels files are written)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.layout.ids import one_chunk

__all__ = ["joint_qid_codes", "factorize_qid"]


def joint_qid_codes(run_qid: pd.Series, j_qid: pd.Series
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes by sorted qid of the run's and the qrels' qids over both, and the uniques.
    Tables whose rows come grouped by query are coded each on its own and their few
    uniques merged; otherwise both are factorised together."""
    run_runs, j_runs = _grouped_text_runs(run_qid), _grouped_text_runs(j_qid)
    if run_runs is not None and j_runs is not None:  # code the uniques, repeat once
        run_rank, j_rank, uniques = _merge_sorted(run_runs[1], j_runs[1])
        return (np.repeat(run_rank[run_runs[0]], run_runs[2]),
                np.repeat(j_rank[j_runs[0]], j_runs[2]), _objects(uniques))
    run_coded, j_coded = factorize_qid(run_qid), factorize_qid(j_qid)
    if run_coded[2] is None or j_coded[2] is None:
        all_q = pd.concat([run_qid, j_qid], ignore_index=True)
        codes, uniques = pd.factorize(all_q, sort=True)
        return codes[:len(run_qid)], codes[len(run_qid):], np.asarray(uniques)
    heads = np.concatenate([run_coded[1], j_coded[1]])
    codes, uniques = pd.factorize(pd.Series(heads, dtype=run_qid.dtype), sort=True)
    split = len(run_coded[1])
    return codes[:split][run_coded[0]], codes[split:][j_coded[0]], np.asarray(uniques)


def factorize_qid(qid: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Codes (by sorted qid), uniques and, when known on the way, the rows per code; fast
    when integer qids are already sorted or text qids come grouped."""
    values = qid.to_numpy() if pd.api.types.is_integer_dtype(qid) else None
    if values is not None and len(values) > 1 and bool(np.all(values[1:] >= values[:-1])):
        change = np.empty(len(values), dtype=bool)
        change[0] = True
        np.not_equal(values[1:], values[:-1], out=change[1:])
        first = np.flatnonzero(change)
        counts = np.diff(np.append(first, len(values)))
        return np.repeat(np.arange(len(first)), counts), values[first], counts
    grouped = _grouped_text_codes(qid)
    if grouped is not None:
        return grouped
    codes, uniques = pd.factorize(qid, sort=True)
    return codes, np.asarray(uniques), None


def _grouped_text_codes(qid: pd.Series
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Codes by sorted qid of an Arrow-backed text column whose rows come grouped by query
    (each qid in one run of rows, as runs and qrels files are written), the sorted uniques
    and the rows per code; None when the column is not Arrow text or a qid comes back after
    another (see :func:`_grouped_text_runs`)."""
    runs = _grouped_text_runs(qid)
    if runs is None:
        return None
    rank, heads, counts = runs
    by_code = np.empty(len(rank), dtype=np.int64)
    by_code[rank] = counts
    return np.repeat(rank, counts), _objects(heads), by_code


def _grouped_text_runs(qid: pd.Series) -> tuple[np.ndarray, Any, np.ndarray] | None:
    """For a text column whose rows come grouped by query: per run of equal qids (in row
    order) its rank among the sorted qids and its length, and the sorted qids (an Arrow
    array). From the runs' boundaries: one pass of adjacent comparisons instead of a hash
    table of every row, then a sort of the runs' qids, skipped when they come sorted. None
    when the column is not Arrow text or a qid comes back after another."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = getattr(qid.array, "_pa_array", None)
    if array is None or len(qid) < 2 or not pa.types.is_string(array.type) and \
            not pa.types.is_large_string(array.type):
        return None
    array = one_chunk(array)
    if array.null_count:
        return None
    change = pc.not_equal(array[1:], array[:-1]).to_numpy(zero_copy_only=False)
    first = np.flatnonzero(np.concatenate(([True], change)))
    heads = array.take(pa.array(first))
    counts = np.diff(np.append(first, len(qid)))
    if _increasing(heads):  # each qid in one run, the runs in sorted order
        return np.arange(len(heads)), heads, counts
    order = pc.sort_indices(heads)
    ordered = heads.take(order)
    if not _increasing(ordered):  # a qid in two places: not grouped
        return None
    rank = np.empty(len(heads), dtype=np.int64)
    rank[order.to_numpy()] = np.arange(len(heads))
    return rank, ordered, counts


def _increasing(values: Any) -> bool:
    """Whether an Arrow array's values strictly increase (no two equal)."""
    import pyarrow.compute as pc

    return len(values) < 2 or bool(pc.all(pc.less(values[:-1], values[1:])).as_py())


def _merge_sorted(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    """Two Arrow arrays of strictly increasing strings merged: each value's rank in the
    union (for ``a``, for ``b``) and the union, sorted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if a.type != b.type:
        a, b = a.cast(pa.large_string()), b.cast(pa.large_string())
    if a.equals(b):  # one set of queries in both tables
        return np.arange(len(a)), np.arange(len(b)), a
    both = pa.concat_arrays([a, b])
    order = pc.sort_indices(both)
    ordered = both.take(order)
    new = np.ones(len(ordered), dtype=bool)
    if len(ordered) > 1:
        new[1:] = pc.not_equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False)
    rank = np.empty(len(both), dtype=np.int64)
    rank[order.to_numpy()] = np.cumsum(new) - 1
    return rank[:len(a)], rank[len(a):], ordered.filter(pa.array(new))


def _objects(values: Any) -> np.ndarray:
    """An Arrow string array as a numpy array of Python strings."""
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
