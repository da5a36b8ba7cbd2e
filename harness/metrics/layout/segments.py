"""Per-query (segmented) sorting on padded matrices, bucketed by list length.

Rows are grouped by query: query ``i`` owns rows ``starts[i] : starts[i] + n[i]``. numpy has
no segmented sort, and one global ``lexsort`` over (query, score) sorts n log n of the whole
table. Sorting each query's row of a padded matrix along ``axis=1`` is several times faster
(short rows, SIMD sorts). Queries are bucketed by the power of two above their length, so
padding never more than doubles the work, however heavy-tailed the lengths are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Layout", "segment_argsort", "segment_sort", "duplicate_within", "group_by_query"]


@dataclass(frozen=True)
class Layout:
    """Where each query's rows go in the padded matrices of its length bucket: per bucket,
    the query indices, the width, the flat row indices, their flat cell in the matrix and
    the start row of their query."""

    starts: np.ndarray
    n: np.ndarray
    buckets: tuple[tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray], ...]

    @classmethod
    def of(cls, starts: np.ndarray, n: np.ndarray, q: np.ndarray | None = None,
           pos: np.ndarray | None = None) -> Layout:
        """Layout of grouped rows. With ``q`` and ``pos`` (query code and position of each
        row) given, a table whose padding to the longest query at most doubles it gets one
        matrix, built without any per-row index arithmetic beyond ``q * width + pos``."""
        total = int(n.sum())
        width = max(int(n.max()) if len(n) else 1, 1)
        if q is not None and pos is not None and len(n) * width <= 2 * total + 4096:
            qidx = np.arange(len(n))
            rows = np.arange(total)
            return cls(starts, n, ((qidx, width, rows, q * width + pos, rows - pos),))
        buckets = []
        for qidx, width in _buckets(n):
            rows, mrow, col = _layout(starts, n, qidx)
            buckets.append((qidx, width, rows, mrow * width + col, rows - col))
        return cls(starts, n, tuple(buckets))

    @property
    def total(self) -> int:
        return int(self.n.sum())


def _buckets(n: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """(query indices, padded width) per length class; empty queries are skipped."""
    nz = n > 0
    if not nz.any():
        return
    widths = np.ones(len(n), dtype=np.int64)
    widths[nz] = 1 << np.ceil(np.log2(n[nz])).astype(np.int64)
    widths = np.maximum(widths, 8)
    for w in np.unique(widths[nz]):
        yield np.flatnonzero(nz & (widths == w)), int(w)


def _layout(starts: np.ndarray, n: np.ndarray, qidx: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat row indices of the queries ``qidx`` (in order), and their (matrix row, column)."""
    counts = n[qidx]
    total = int(counts.sum())
    offsets = np.cumsum(counts) - counts
    mrow = np.repeat(np.arange(len(qidx)), counts)
    col = np.arange(total) - offsets[mrow]
    return starts[qidx][mrow] + col, mrow, col


def segment_argsort(layout: Layout, keys: Sequence[np.ndarray], *, stable: bool) -> np.ndarray:
    """Permutation that sorts each query's rows by ``keys`` (ascending; last key primary,
    as :func:`numpy.lexsort`). Queries stay in place: ``perm[starts[i]:starts[i]+n[i]]``
    holds query ``i``'s rows in order. ``stable`` keeps equal keys in row order.

    The primary key must be float without NaN. Padding must sort after every row, so each
    query's rows fill the first columns of its sorted row: it is +inf (the fast case for
    numpy's SIMD sorts) unless a primary key is +inf itself, then NaN.

    One float64 key is sorted as values, not indices (:func:`segment_sort`): the order is
    then stable whatever ``stable`` asks, and callers may rely on it.
    """
    if len(keys) == 1 and keys[0].dtype == np.float64:
        return segment_sort(layout, keys[0])[0]
    return _argsort(layout, keys, stable=stable)


_SIGN = np.uint64(1 << 63)
_ALL = np.uint64(2**64 - 1)


def segment_sort(layout: Layout, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable per-query order of one float64 key (no NaN), as :func:`segment_argsort`,
    and the key in that order, from a sort of values.

    numpy sorts 64-bit integers several times faster than it argsorts floats (its SIMD
    sorts). Each row's key becomes an unsigned integer in the same order (the IEEE bits,
    negatives flipped, -0.0 as 0.0), whose lowest bits are replaced by the row's position
    in its query: sorting those integers orders each query's rows by key, equal keys in
    row order, and the low bits give the row back. Only keys equal in every other bit
    can come out of order (they differ by less than 2**-40 of their value, for lists of
    up to 4,096 rows; float32 scores, 29 zero bits, never): the rows are checked in the
    result, and the queries where two came out of order are sorted again, stably, by
    :func:`_argsort`."""
    total = layout.total
    bits = np.add(key, 0.0).view(np.uint64)  # -0.0 becomes 0.0: equal keys, equal bits
    flip = (bits.view(np.int64) >> 63).view(np.uint64)
    flip |= _SIGN
    bits ^= flip  # negatives' bits flipped, the sign bit of the others set
    del flip
    single = len(layout.buckets) == 1 and len(layout.buckets[0][2]) == total
    perm = np.empty(total, dtype=np.int64) if single else np.arange(total, dtype=np.int64)
    for qidx, width, rows, flat, row_start in layout.buckets:
        shift = max(int(width - 1).bit_length(), 1)
        low = np.uint64((1 << shift) - 1)
        packed = np.bitwise_and(bits if len(rows) == total else bits[rows], ~low)
        packed |= (rows - row_start).view(np.uint64)  # the row's position in its query
        flat_m = np.full(len(qidx) * width, _ALL, dtype=np.uint64)  # padding sorts last
        flat_m[flat] = packed
        del packed
        m = flat_m.reshape(len(qidx), width)
        m.sort(axis=1)
        column = m.reshape(-1).take(flat)
        column &= low
        if single:
            np.add(column.view(np.int64), row_start, out=perm)
        else:
            perm[rows] = column.view(np.int64) + row_start
    ranked = key[perm]
    bad = ranked[1:] < ranked[:-1]  # out of order, or the next query's first row
    starts = layout.starts[layout.n > 0]
    bad[starts[1:] - 1] = False
    if bad.any():  # the queries holding such rows, sorted again
        owner = np.searchsorted(starts, np.flatnonzero(bad), side="right") - 1
        queries = np.flatnonzero(np.isin(layout.starts, starts[owner]) & (layout.n > 0))
        n = layout.n[queries]
        first = np.cumsum(n) - n
        rows = np.repeat(layout.starts[queries] - first, n) + np.arange(int(n.sum()))
        again = rows[_argsort(Layout.of(first, n), [key[rows]], stable=True)]
        perm[rows] = again
        ranked[rows] = key[again]
    return perm, ranked


def _argsort(layout: Layout, keys: Sequence[np.ndarray], *, stable: bool) -> np.ndarray:
    total = layout.total
    single = len(layout.buckets) == 1 and len(layout.buckets[0][2]) == total
    perm = np.empty(total, dtype=np.int64) if single else np.arange(total, dtype=np.int64)
    pad = np.nan if np.isposinf(keys[-1]).any() else np.inf
    for qidx, width, rows, flat, row_start in layout.buckets:
        whole = len(rows) == total
        mats = []
        for i, key in enumerate(keys):
            primary = i == len(keys) - 1
            m = np.full(len(qidx) * width, pad if primary else 0, dtype=key.dtype)
            m[flat] = key if whole else key[rows]
            mats.append(m.reshape(len(qidx), width))
        if len(mats) == 1:
            order = np.argsort(mats[0], axis=1, kind="stable" if stable else None)
        else:
            order = np.lexsort(mats, axis=-1)
        if single:
            np.add(order.reshape(-1)[flat], row_start, out=perm)
        else:
            perm[rows] = order.reshape(-1)[flat] + row_start
    return perm


_PAD = np.iinfo(np.int64).max


def duplicate_within(layout: Layout, codes: np.ndarray) -> bool:
    """Whether some query holds the same code twice. A code equal to the padding value
    (int64 max) twice also counts: callers with hashed codes re-check exactly.

    Codes that increase strictly within every query (docids written in order) hold no
    duplicate: that is checked first, in one pass, before any sort."""
    total = layout.total
    if total > 1:
        increasing = codes[1:] > codes[:-1]
        increasing[layout.starts[(layout.n > 0) & (layout.starts > 0)] - 1] = True
        if increasing.all():
            return False
    for qidx, width, rows, flat, _ in layout.buckets:
        flat_m = np.full(len(qidx) * width, _PAD, dtype=np.int64)
        flat_m[flat] = codes if len(rows) == total else codes[rows]
        m = flat_m.reshape(len(qidx), width)
        m.sort(axis=1)
        same = m[:, 1:] == m[:, :-1]
        if same.any() and (same & (m[:, 1:] != _PAD)).any():
            return True
        if same.any() and (codes == _PAD).sum() > 1:  # real codes equal to the padding
            return True
    return False


def group_by_query(q: np.ndarray, n_queries: int) -> np.ndarray | None:
    """Stable permutation grouping rows by query code, or None when already grouped."""
    if len(q) < 2 or bool(np.all(q[1:] >= q[:-1])):
        return None
    small = q.astype(np.uint16) if n_queries < (1 << 16) else q
    return np.argsort(small, kind="stable")
