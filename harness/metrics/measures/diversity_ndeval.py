"""The per-query arithmetic of the intent-aware measures, in ndeval's order of operations
(ndeval 4.5, as pyndeval 0.0.8 runs it), so that the values agree to the last bits.

A query's subtopic judgments are a 0/1 matrix ``R`` (documents x subtopics, ``label >=
level``); ``N`` is the number of subtopics with a relevant document. A ranked list is the
rows of ``R`` in ranked order (zeros for a document without a subtopic judgment). At rank
``i`` (0-based) a document covering subtopic ``s`` for the ``c``-th time before adds
``(1 - alpha)^c``; its gain ``g_i`` sums those over its subtopics, in subtopic order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["QueryJudgments", "gains", "greedy_ideal", "cumulated", "novelty_rbp", "map_ia",
           "powers"]


@dataclass
class QueryJudgments:
    """One query's subtopic judgments: ``rel`` (documents x subtopics, 0/1) and each
    document's id (the ideal ranking breaks ties by the larger id)."""

    rel: np.ndarray
    docids: np.ndarray

    @property
    def n_subtopics(self) -> int:
        """``N``: the subtopics with at least one relevant document."""
        return int((self.rel.sum(axis=0) > 0).sum())


def powers(base: float, n: int, first: float = 1.0) -> np.ndarray:
    """``first, first*base, first*base*base, ...`` by repeated multiplication (ndeval's
    ``*=``), ``n`` values."""
    out = np.full(max(n, 1), base)
    out[0] = first
    return np.cumprod(out)[:n]


def gains(matrix: np.ndarray, alpha: float) -> np.ndarray:
    """Per row of ``matrix`` (ranked documents x subtopics), ``g_i``."""
    if matrix.shape[0] == 0:
        return np.zeros(0)
    if matrix.shape[1] == 0:
        return np.zeros(matrix.shape[0])
    seen = np.cumsum(matrix, axis=0) - matrix
    table = powers(1.0 - alpha, int(seen.max()) + 1)
    terms = np.where(matrix > 0, table[seen], 0.0)
    return np.cumsum(terms, axis=1)[:, -1]  # summed in subtopic order, as ndeval adds


def greedy_ideal(judged: QueryJudgments, alpha: float) -> np.ndarray:
    """The rows of ``judged.rel`` in ndeval's greedy ideal order: at each rank the document
    of highest gain given those above, ties to the larger docid; documents of gain 0 are
    left out (they add nothing at any rank)."""
    rel = judged.rel
    left = list(np.flatnonzero(rel.any(axis=1)))
    gain = np.ones(rel.shape[1])
    order = []
    while left:
        scores = np.cumsum(rel[left] * gain, axis=1)[:, -1]
        best = scores.max()
        if best <= 0.0:
            break
        tied = [left[i] for i in np.flatnonzero(scores == best)]
        pick = max(tied, key=lambda d: judged.docids[d])
        order.append(pick)
        left.remove(pick)
        gain = np.where(rel[pick] > 0, gain * (1.0 - alpha), gain)
    return rel[order]


def cumulated(g: np.ndarray, depth: int, weight: np.ndarray) -> np.ndarray:
    """``cumsum(g_i * weight_i)`` over ranks ``0..depth-1`` (0 past the list)."""
    terms = np.zeros(depth)
    n = min(len(g), depth)
    terms[:n] = g[:n] * weight[:n]
    return np.cumsum(terms)


def err_weights(depth: int) -> np.ndarray:
    return np.array([1.0 / float(i + 1) for i in range(depth)])


def dcg_weights(depth: int) -> np.ndarray:
    return np.array([math.log(2.0) / math.log(i + 2.0) for i in range(depth)])


def normalised(cum: np.ndarray, n_sub: int, alpha: float, weight: np.ndarray) -> np.ndarray:
    """ndeval's "ideal ideal" normalisation: rank i's cumulated value divided by
    ``sum_{j <= i} N (1 - alpha)^j weight_j``; rank 0 is left as it is (ndeval's loop
    starts at rank 1)."""
    ideal = np.cumsum(powers(1.0 - alpha, len(cum), float(n_sub)) * weight[:len(cum)])
    out = cum.copy()
    out[1:] = cum[1:] / ideal[1:]
    return out


def novelty_rbp(g: np.ndarray, n_sub: int, alpha: float, beta: float) -> float:
    """``(1 - (1 - alpha) beta) / N * sum_i g_i beta^i``."""
    if not len(g):
        return 0.0
    total = float(np.cumsum(g * powers(beta, len(g)))[-1])
    return total * ((1.0 - (1.0 - alpha) * beta) / n_sub)


def map_ia(matrix: np.ndarray, judged: QueryJudgments) -> float:
    """The mean over subtopics with a relevant document of their average precision."""
    per_sub = judged.rel.sum(axis=0)
    if not len(matrix):
        return 0.0
    count = np.cumsum(matrix, axis=0)
    rank = np.arange(1, len(matrix) + 1, dtype=np.float64)[:, None]
    totals = np.cumsum(np.where(matrix > 0, count / rank, 0.0), axis=0)[-1]
    value = 0.0
    for s in np.flatnonzero(per_sub > 0):
        value += totals[s] / per_sub[s]
    return value / judged.n_subtopics
