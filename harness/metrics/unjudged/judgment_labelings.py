"""The labelings of one query's unjudged retrieved documents that
:func:`harness.judgment_interval` evaluates, chosen by what the measure declares
(:attr:`~harness.metrics.vocabulary.registry.Measure.unjudged_bounds`).

A labeling gives each unjudged retrieved document a grade from :func:`grade_choices`; the
measure's value over every labeling has its minimum and maximum among these candidates:

- ``constant``: a measure that reads no label (Judged, NumRet, ...): one labeling.
- ``monotone``: the value moves in one direction with each document's gain (DCG, P, RR,
  ERR, ...). The extremes over labelings where the query is not *empty* (no relevant
  document) are all-lowest and all-highest; the least non-empty labeling lies above some
  labeling with one document labelled. So: all-lowest, all-highest, and each document alone
  at each higher grade (of the documents that cannot reach the top k, one stands for all
  where the measure reads only the top k, ``reads_top_k``: their labels move only R, which
  a monotone measure reads only as whether the query is empty).
- ``swap``: binary; with s of the documents relevant (so R fixed), moving relevance to a
  higher-ranked document changes the value in one direction only (AP, R, Rprec, bpref, ...).
  The extremes for each s label the top s or the bottom s: 2s + 1 labelings in all.
- ``ideal``: a sum of gains over ranks divided by its ideal ranking's (nDCG). For a multiset
  of grades over the documents that can reach the top k, sorting it over their ranks (highest
  gains first, or last) is best (worst) by the rearrangement inequality, while the ideal
  depends on the multiset only; a document that cannot reach the top k only raises the ideal,
  so it takes the lowest gain (for the maximum) or the highest (for the minimum). For the
  maximum every multiset is tried while their number stays within the budget (beyond, the
  bound is the measure's 1); the minimum needs only the lowest and highest grades (the
  value is quasi-concave in each gain, unless ties are broken optimistically): the last s
  documents highest, for each s.
- otherwise every labeling is tried while their number stays within the budget.

Tied scores: with the ranks' tie groups kept (``average``, ``optimistic``, ``pessimistic``)
the documents are taken in score order, the members of a tie group being interchangeable;
a deterministic tie rule (``input``, ``docid``, ...) gives the order itself.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from harness.metrics.vocabulary.definition import Metric

__all__ = ["grade_choices", "Candidates", "candidates", "ORDER_RULES", "TooManyRows"]

#: Tie rules whose order is one fixed order of the rows (not a function of the labels).
ORDER_RULES = ("input", "docid", "docid_float32", "docid_ascending")
#: Tie rules under which documents of one tie group are interchangeable for these bounds.
GROUP_RULES = ("average", "optimistic", "pessimistic")


def grade_choices(metric: Metric, grade: float) -> np.ndarray:
    """The grades an unjudged document may take, in increasing order of what they add:
    0 and ``grade`` for a binary measure (grades between read as one of them), every
    integer up to ``grade`` and ``grade`` for a graded one (ordered by gain where the
    measure has one), 0 alone for a measure that reads no label."""
    spec = metric.measure
    if spec.graded or (spec.binary and getattr(metric, "graded", False)):
        grades = np.unique(np.append(np.arange(0.0, math.floor(grade) + 1.0), grade))
        if "gain" in spec.options:
            gains = np.asarray(metric.gain_function()(grades), dtype=np.float64)
            return grades[np.argsort(gains, kind="stable")]
        return grades
    if spec.binary:
        return np.array([0.0, grade]) if grade >= metric.level else np.array([0.0])
    return np.array([0.0])


@dataclass
class Candidates:
    """A query's labelings to evaluate (rows: labelings, columns: its unjudged documents in
    rank order), whether their extremes are the exact bounds, and how they were chosen."""

    grades: np.ndarray
    exact: bool
    method: str
    high: float | None = None  # a valid upper bound when the greatest value is not known


class TooManyRows(Exception):
    """The labelings a query needs, times the rows of each, exceed the limit."""

    def __init__(self, labelings: int) -> None:
        super().__init__(labelings)
        self.labelings = labelings


def candidates(metric: Metric, choices: np.ndarray, reach: np.ndarray, budget: int,
               rule_known: bool, concave: bool = True, *, width: int = 0,
               max_rows: int | None = None) -> Candidates | None:
    """The labelings of ``len(reach)`` unjudged documents (in rank order; ``reach``: can
    each reach the top k) whose extremes bound the measure, or None when none is within
    ``budget`` labelings (then only a looser bound is known). ``rule_known``: the tie rule
    keeps the order argument (see the module's notes); ``concave``: a gain sum over the
    ranks is concave in each gain (false under ``ties='optimistic'``, a maximum over the
    orders: then the least nDCG needs every multiset too). Each labeling is evaluated as a
    pseudo-query of ``width`` rows: TooManyRows is raised, before any labeling is built,
    when their number times ``width`` exceeds ``max_rows``."""
    u, c = len(reach), len(choices)
    if u == 0 or c == 1:
        return Candidates(np.full((1, u), choices[0]), True, "constant")

    def fits(labelings: int) -> None:
        if max_rows is not None and labelings * width > max_rows:
            raise TooManyRows(labelings)

    kind = metric.measure.unjudged_bounds if rule_known else ""
    if kind == "monotone" and _monotone_gains(metric, choices):
        alone = np.arange(u)
        if metric.measure.reads_top_k and not reach.all():  # one labelled below the top k
            alone = np.append(np.flatnonzero(reach), np.flatnonzero(~reach)[0])  # as any
        fits(2 + len(alone) * (c - 1))
        single = np.repeat(np.full((1, u), choices[0]), len(alone) * (c - 1), axis=0)
        rows = np.arange(len(alone) * (c - 1))
        single[rows, alone[rows // (c - 1)]] = np.tile(choices[1:], len(alone))
        ends = np.array([np.full(u, choices[0]), np.full(u, choices[-1])])
        return Candidates(np.vstack([ends, single]), True, "monotone")
    if kind == "swap" and c == 2:
        fits(2 * u)
        s = np.arange(u + 1)[:, None]
        top = np.where(np.arange(u)[None, :] < s, choices[1], choices[0])
        bottom = np.where(np.arange(u)[None, :] >= u - s, choices[1], choices[0])
        # the bottom s is a top s' only for none or all (no sort of the rows to find it)
        return Candidates(np.vstack([top, bottom[1:-1]]), True, "swap")
    if kind == "ideal":
        inside = int(reach.sum())
        multisets = math.comb(inside + c - 1, c - 1)
        if multisets + (inside + 1 if concave else multisets) <= budget:
            fits(multisets + (inside + 1 if concave else multisets))
            worst = (_suffixes(choices, reach) if concave else
                     _sorted_multisets(choices[::-1], reach))  # the others highest
            return Candidates(np.vstack([_sorted_multisets(choices, reach), worst]), True,
                              "ideal")
        if concave:  # the least value is still exact; the greatest is bounded by 1
            fits(2 * (inside + 1))
            best = _sorted_multisets(choices[[0, -1]], reach)
            return Candidates(np.vstack([best, _suffixes(choices, reach)]), False,
                              "ideal-low", high=1.0)
    if c ** u <= budget:
        fits(c ** u)
        every = np.array(list(itertools.product(range(c), repeat=u)), dtype=np.int64)
        return Candidates(choices[every], True, "enumeration")
    return None


def _monotone_gains(metric: Metric, choices: np.ndarray) -> bool:
    """Whether the choices, in their order, never lower what a document adds (a gain table
    or formula need not be monotone in the grade)."""
    if "gain" not in metric.measure.options:
        return bool(np.all(np.diff(choices) >= 0))
    gains = np.asarray(metric.gain_function()(choices), dtype=np.float64)
    return bool(np.all(np.diff(gains) >= 0))


def _sorted_multisets(choices: np.ndarray, reach: np.ndarray, others: int = 0
                      ) -> np.ndarray:
    """Every multiset of choices over the documents that can reach the top k, sorted over
    them in the order of ``choices`` from its end (best first when they ascend); the others
    at ``choices[others]``."""
    inside = np.flatnonzero(reach)
    combos = np.array(list(itertools.combinations_with_replacement(range(len(choices)),
                                                                   len(inside))),
                      dtype=np.int64).reshape(-1, len(inside)) if len(inside) else \
        np.zeros((1, 0), dtype=np.int64)
    best = np.full((len(combos), len(reach)), others, dtype=np.int64)
    best[:, inside] = combos[:, ::-1]  # the last choices on the first ranks
    return choices[best]


def _suffixes(choices: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """The least value's candidates: the last s documents that can reach the top k at the
    highest choice and the rest of them at the lowest, the others highest. The value is
    quasi-concave in each document's gain (a gain sum, linear in it, over the ideal's,
    convex in it), so its least value puts each document at the lowest or the highest
    choice; sorted over the ranks, worst last, those are these."""
    inside = np.flatnonzero(reach)
    u = len(inside)
    low = np.zeros((u + 1, len(reach)), dtype=np.int64)
    low[:, ~reach] = len(choices) - 1
    s = np.arange(u + 1)[:, None]
    low[:, inside] = np.where(np.arange(u)[None, :] >= u - s, len(choices) - 1, 0)
    return choices[low]
