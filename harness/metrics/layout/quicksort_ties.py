"""``ties="quicksort"``: tied documents in the order ranx 0.3 leaves them.

ranx sorts each query of a ``Run`` once, when the run is built, with numba's
``np.argsort`` (kind ``quicksort``) on the negated scores in insertion order. That sort is
deterministic but not stable: a partition of at most 16 rows (``high - low < 15``) is
finished by a stable insertion sort, so a query of up to 15 documents keeps its tied
documents in input order; a longer one is first partitioned around median-of-three pivots,
which moves tied documents past each other. This module runs the same algorithm on the
same keys, so the order it gives is ranx's for every query length.

``ranx.evaluate(..., make_comparable=True)`` sorts the run a second time, starting from
the first sort's order; ``ties="quicksort2"`` applies the sort twice to match it. Given
plain dicts instead of a ``Run``, ``ranx.evaluate`` sorts the scores ascending with the same
quicksort and reads the result backwards (``ties="quicksort_reversed"``): tied documents of
a short query come in reverse input order.

Only a query with a tie needs the sort (under ``quicksort`` and ``quicksort2``, only one
of 16 or more documents); every other query keeps the ``ties="input"`` ranking, which is
the order the sort would give it. A run of 10,000 queries of 100 tied documents each takes
about 0.5 s more than ``ties="input"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# numba.misc.quicksort: partitions of SMALL + 1 rows or fewer go to the insertion sort
SMALL = 15


def quicksort_argsort(keys: list[float]) -> list[int]:
    """Indices ordering ``keys`` ascending, exactly as numba's quicksort ``argsort`` does
    (median-of-three pivot, Hoare partition with the pivot stashed at the end, largest
    side pushed on a stack, insertion sort below 16 rows)."""
    r = list(range(len(keys)))
    if len(keys) < 2:
        return r
    stack = [(0, len(keys) - 1)]
    while stack:
        low, high = stack.pop()
        while high - low >= SMALL:
            i = _partition(keys, r, low, high)
            if high - i > i - low:  # right side larger: push it, go on with the left
                if high > i:
                    stack.append((i + 1, high))
                high = i - 1
            else:
                if i > low:
                    stack.append((low, i - 1))
                low = i + 1
        _insertion_sort(keys, r, low, high)
    return r


def _partition(a: list[float], r: list[int], low: int, high: int) -> int:
    mid = (low + high) >> 1
    if a[r[mid]] < a[r[low]]:
        r[low], r[mid] = r[mid], r[low]
    if a[r[high]] < a[r[mid]]:
        r[high], r[mid] = r[mid], r[high]
    if a[r[mid]] < a[r[low]]:
        r[low], r[mid] = r[mid], r[low]
    pivot = a[r[mid]]
    r[high], r[mid] = r[mid], r[high]
    i, j = low, high - 1
    while True:
        while i < high and a[r[i]] < pivot:
            i += 1
        while j >= low and pivot < a[r[j]]:
            j -= 1
        if i >= j:
            break
        r[i], r[j] = r[j], r[i]
        i += 1
        j -= 1
    r[i], r[high] = r[high], r[i]
    return i


def _insertion_sort(a: list[float], r: list[int], low: int, high: int) -> None:
    for i in range(low + 1, high + 1):
        k = r[i]
        v = a[k]
        j = i
        while j > low and v < a[r[j - 1]]:
            r[j] = r[j - 1]
            j -= 1
        r[j] = k


#: tie rule -> (sorts in a row, reversed ascending sort instead of a sort of -score)
RULES = {"quicksort": (1, False), "quicksort2": (2, False), "quicksort_reversed": (1, True)}


def quicksort_ties_perm(ties: str, input_perm: np.ndarray, average: Any, q: np.ndarray,
                        neg: np.ndarray, starts: np.ndarray, n_docs: np.ndarray
                        ) -> np.ndarray:
    """The ranking of a quicksort tie rule (see :data:`RULES`): ``input_perm`` (the
    ``ties="input"`` ranking, grouped rows query by query) with each query that the sort
    can reorder (a tie group in ``average``, the ``ties="average"`` ranking, and more than
    ``SMALL`` documents, or any length when reversed) sorted as ranx sorts it. Grouped rows
    are in input order, so each query's keys are taken in insertion order."""
    passes, reverse = RULES[ties]
    tied = np.zeros(len(n_docs), dtype=bool)
    if average.gid is not None:
        tied[q[average.perm[average.gstart[average.gsize > 1]]]] = True
    perm = input_perm.copy()
    for qi in np.flatnonzero(tied & (n_docs > (0 if reverse else SMALL))):
        start, n = int(starts[qi]), int(n_docs[qi])
        keys = neg[start:start + n].tolist()
        if reverse:  # argsort of the scores ascending, read backwards
            order = quicksort_argsort([-x for x in keys])[::-1]
        else:  # argsort of the negated scores, then again from that order (make_comparable)
            order = list(range(n))
            for _ in range(passes):
                order = [order[i] for i in quicksort_argsort([keys[j] for j in order])]
        perm[start:start + n] = start + np.asarray(order, dtype=perm.dtype)
    return perm
