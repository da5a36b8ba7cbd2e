"""C/W/L measures of cwl_eval (Azzopardi, Thomas and Moffat 2019), as ir_measures computes
them with cwl-eval 1.0.12: INST, INSQ, BPM and the four NERR variants.

A user examines rank 1, and continues from rank ``i`` to ``i + 1`` with probability
``c_i``; ``S_i = \\prod_{j<i} c_j`` is the chance of reaching rank ``i``. The measure is
the expected gain per document examined, ``\\sum_i S_i g_i / \\sum_i S_i``, read over
cwl_eval's fixed depth of ``N = 1000`` ranks: a list shorter than that is padded with
documents of gain 0 (the user may go on reading them), a longer one is cut there. Gains
are the labels scaled to [0, 1]: ``g = (clip(rel, min_label, max_label) - min_label) /
(max_label - min_label)``; an unjudged document has gain 0 (cwl_eval's lower bound).

The ranks past the longest list read here hold gain 0, so their part of ``\\sum_i S_i`` has
a closed form (a geometric, harmonic or inverse-square tail); the ranks before it are one
``(queries, ranks)`` array, cumulated along the ranks as cwl_eval does. INSQ's ``c_i`` does
not depend on the gains, so it is a sum of per-rank terms and takes ``ties="average"``
(each tied document's gain replaced by its group's mean); the others read the gains above
each rank and refuse it.
"""

from __future__ import annotations

import numpy as np

from harness.errors import InputError, MetricDefinitionError
from harness.metrics.measures.rank_points import refuse_average
from harness.metrics.measures.top_grade import check_top_grade, top_grade
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__ = ["CWL_DEPTH"]

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 10

#: cwl_eval's depth (``max_n``): every list is read as exactly this many ranks.
CWL_DEPTH = 1000

Result = tuple[np.ndarray, np.ndarray]
_SCALE = ("max_label", "min_label")
_MATCH = "ir_measures `{}` (cwl_eval 1.0.12)"
_GAIN = ("$g_i = (\\mathrm{clip}(rel_i, min, max) - min) / (max - min)$ "
         "(`min_label`, `max_label`), 0 if unjudged; $N = 1000$ ranks, padded with $g = 0$")


def _scaled(x: MeasureInput) -> np.ndarray:
    """Per ranked row, the gain scaled to [0, 1] by min_label and max_label."""
    prep, metric = x.prep, x.metric
    check_top_grade(prep, metric)
    top, low = float(top_grade(prep, metric)), float(metric.min_label)
    if not low < top:
        text = (f"{metric.display_name}: min_label ({low:g}) must be below the top grade "
                f"({top:g}); the gains are (clip(rel, min_label, max_label) - min_label) / "
                "(max_label - min_label)")
        if metric.max_label is None:  # the top grade is the data's highest label
            raise InputError(text + ", and max_label=None takes the highest label evaluated",
                             column="label")
        raise MetricDefinitionError(text)
    return (np.clip(x.label, low, top) - low) / (top - low)


def _matrix(x: MeasureInput, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scaled gains of the first ``width`` ranks, one row per query (0 past a list's
    end), the ranks read (at most the longest list, ``width`` and N) and each query's own
    length within them."""
    r = x.ranking
    cols = int(min(width, CWL_DEPTH, x.prep.max_len))
    gain = _scaled(x)
    out = np.zeros((x.n_queries, cols))
    keep = r.pos < cols
    out[r.q[keep], r.pos[keep]] = gain[keep]
    own = np.bincount(r.q[keep], minlength=x.n_queries)
    return out, np.arange(1, cols + 1, dtype=np.float64), own


def _read(c: np.ndarray, g: np.ndarray, own: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over each query's own ranks (``own``; the columns past them are padding):
    ``sum_i S_i g_i``, ``sum_i S_i`` and ``S_L``, the chance of reaching the first rank
    past them, with ``S_i = prod_{j<i} c_j``. Cumulated along the ranks and read at the
    query's last rank, so a query's value does not depend on the other queries evaluated
    with it (a row sum over a wider matrix would associate its terms differently)."""
    if not c.shape[1]:
        zero = np.zeros(len(own))
        return zero, zero, np.ones(len(own))
    inside = np.arange(c.shape[1]) < own[:, None]
    prod = np.cumprod(np.where(inside, c, 1.0), axis=1)
    reach = np.ones_like(c)
    reach[:, 1:] = prod[:, :-1]
    reach = np.where(inside, reach, 0.0)
    rows, at = np.arange(len(own)), np.maximum(own - 1, 0)
    gained = np.where(own > 0, np.cumsum(reach * g, axis=1)[rows, at], 0.0)
    reached = np.where(own > 0, np.cumsum(reach, axis=1)[rows, at], 0.0)
    last = np.where(own > 0, prod[rows, at], 1.0)
    return gained, reached, last


def _expected(gained: np.ndarray, reached: np.ndarray, tail: np.ndarray) -> Result:
    """``sum_i S_i g_i / (sum_i S_i + tail)`` per query; no query is empty."""
    value = gained / (reached + tail)
    return value, np.zeros(len(value), dtype=bool)


def _square_tail(last: np.ndarray, own: np.ndarray, shift: np.ndarray | float) -> np.ndarray:
    """``sum_{i=L}^{N-1} S_i`` past each list's end ``L = own`` where ``c_i`` telescopes,
    ``S_i = S_L ((L + shift) / (i + shift))^2`` (INST, NERR11): ``S_L (L + shift)^2`` times
    trigamma differences; 0 for a list that reaches N."""
    from scipy.special import polygamma  # here: scipy.special takes 0.2 s to import

    start = np.asarray(own, dtype=np.float64)
    squares = polygamma(1, start + shift) - polygamma(1, CWL_DEPTH + shift)
    return np.where(own < CWL_DEPTH, last * (start + shift) ** 2 * squares, 0.0)


def _cutoff(x: MeasureInput) -> int:
    return CWL_DEPTH if x.metric.k is None else min(x.metric.k, CWL_DEPTH)


@builtin_measure("inst", display="INST", options=(*_SCALE, "target"), graded=True,
                  top_grade=True, cutoff=False, builtin=True, matches=_MATCH.format("INST"),
                  formula="$\\sum_i S_i g_i / \\sum_{i=1}^{N} S_i$, $S_i = \\prod_{j<i} c_j$, "
                          "$c_j = \\left(\\frac{j + T + T_j - 1}{j + T + T_j}\\right)^2$, "
                          "$T_j = T - \\sum_{m \\le j} g_m$ (`target` = T); " + _GAIN)
def _inst(x: MeasureInput) -> Result:
    refuse_average(x, "INST's continuation reads the gains above each rank")
    g, rank, own = _matrix(x, CWL_DEPTH)
    shift = 2.0 * x.metric.target - np.cumsum(g, axis=1)  # T + T_i
    gained, reached, last = _read(((rank + shift - 1.0) / (rank + shift)) ** 2, g, own)
    # past a list's end the gains are 0: c telescopes, S_i = S_L ((L + A) / (i + A))^2
    a = np.where(own > 0, shift[np.arange(len(own)), np.maximum(own - 1, 0)]
                 if g.shape[1] else 0.0, 2.0 * x.metric.target)
    return _expected(gained, reached, _square_tail(last, own, a))


@builtin_measure("insq", display="INSQ", options=(*_SCALE, "target"), graded=True,
                  top_grade=True, cutoff=False, builtin=True, matches=_MATCH.format("INSQ"),
                  formula="$\\sum_i S_i g_i / \\sum_{i=1}^{N} S_i$, "
                          "$S_i = \\prod_{j<i} \\left(\\frac{j + 2T - 1}{j + 2T}\\right)^2$ "
                          "(`target` = T); " + _GAIN)
def _insq(x: MeasureInput) -> Result:
    t2 = 2.0 * x.metric.target
    rank = np.arange(1, CWL_DEPTH + 1, dtype=np.float64)
    c = ((rank + t2 - 1.0) / (rank + t2)) ** 2
    reach = np.concatenate(([1.0], np.cumprod(c)[:-1]))
    weight = reach / reach.sum()
    r = x.ranking
    keep = r.pos < CWL_DEPTH
    gain = r.group_mean(_scaled(x))
    value = np.bincount(r.q[keep], weights=gain[keep] * weight[r.pos[keep]],
                        minlength=x.n_queries)
    return value, np.zeros(x.n_queries, dtype=bool)


@builtin_measure("bpm", display="BPM", options=(*_SCALE, "target"), graded=True,
                  top_grade=True, builtin=True, matches=_MATCH.format("BPM@k"),
                  formula="$\\frac{1}{m} \\sum_{i=1}^{m} g_i$, $m = \\min(k, N, "
                          "\\min\\{i : \\sum_{j \\le i} g_j \\ge T\\})$: the user reads until "
                          "the gain reaches T (`target`) or k documents (static BPM, unit "
                          "costs; $k = N$ without a cut-off); " + _GAIN)
def _bpm(x: MeasureInput) -> Result:
    refuse_average(x, "BPM stops where the gain above reaches T")
    depth = _cutoff(x)
    g, _, _ = _matrix(x, depth)
    cum = np.cumsum(g, axis=1)
    reached = cum >= x.metric.target
    stop = np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, depth)
    m = np.minimum(stop, depth)  # documents read
    cols = g.shape[1]
    gained = cum[np.arange(x.n_queries), np.minimum(m, cols) - 1] if cols else \
        np.zeros(x.n_queries)
    return gained / m, np.zeros(x.n_queries, dtype=bool)


def _nerr_truncated(x: MeasureInput, weighted: bool) -> Result:
    """NERR8 (``c_i = 1 - g_i``) and NERR9 (``c_i = i/(i+1) (1 - g_i)``) over the top k."""
    refuse_average(x, "NERR's continuation reads the gains above each rank")
    depth = _cutoff(x)
    g, rank, own = _matrix(x, depth)
    c = (1.0 - g) * (rank / (rank + 1.0) if weighted else 1.0)
    gained, reached, last = _read(c, g, own)
    # past a list's end the gains are 0: S_i = S_L (NERR8) or S_L (L + 1) / (i + 1) (NERR9)
    if weighted:  # after[L] = sum_{i=L}^{k-1} 1 / (i + 1), every L from one array
        after = np.concatenate((np.cumsum(1.0 / np.arange(depth, 0, -1.0))[::-1], [0.0]))
        tail = last * (own + 1.0) * after[own]
    else:
        tail = last * (depth - own)
    return _expected(gained, reached, tail)


@builtin_measure("nerr8", display="NERR8", options=_SCALE, graded=True, top_grade=True,
                  builtin=True, matches=_MATCH.format("NERR8@k"),
                  formula="$\\sum_{i \\le k} S_i g_i / \\sum_{i \\le k} S_i$, "
                          "$S_i = \\prod_{j<i} (1 - g_j)$ (Azzopardi et al. 2021, eq. 8; "
                          "$k = N$ without a cut-off); " + _GAIN)
def _nerr8(x: MeasureInput) -> Result:
    return _nerr_truncated(x, weighted=False)


@builtin_measure("nerr9", display="NERR9", options=_SCALE, graded=True, top_grade=True,
                  builtin=True, matches=_MATCH.format("NERR9@k"),
                  formula="$\\sum_{i \\le k} S_i g_i / \\sum_{i \\le k} S_i$, "
                          "$S_i = \\prod_{j<i} \\frac{j}{j+1} (1 - g_j)$ (eq. 9); " + _GAIN)
def _nerr9(x: MeasureInput) -> Result:
    return _nerr_truncated(x, weighted=True)


@builtin_measure("nerr10", display="NERR10", options=(*_SCALE, "p"), graded=True,
                  top_grade=True, cutoff=False, builtin=True,
                  matches=_MATCH.format("NERR10(p=...)"),
                  formula="$\\sum_i S_i g_i / \\sum_{i=1}^{N} S_i$, "
                          "$S_i = \\prod_{j<i} p (1 - g_j)$ (eq. 10); " + _GAIN)
def _nerr10(x: MeasureInput) -> Result:
    refuse_average(x, "NERR's continuation reads the gains above each rank")
    p = x.metric.p
    g, _, own = _matrix(x, CWL_DEPTH)
    gained, reached, last = _read(p * (1.0 - g), g, own)
    rest = CWL_DEPTH - own  # past a list's end S_i = S_L p^(i - L)
    return _expected(gained, reached, last * (1.0 - p ** rest) / (1.0 - p))


@builtin_measure("nerr11", display="NERR11", options=(*_SCALE, "target"), graded=True,
                  top_grade=True, cutoff=False, builtin=True,
                  matches=_MATCH.format("NERR11(T=...)"),
                  formula="$\\sum_i S_i g_i / \\sum_{i=1}^{N} S_i$, $S_i = \\prod_{j<i} "
                          "\\left(\\frac{j + 2T - 1}{j + 2T}\\right)^2 (1 - g_j)$ (eq. 11, "
                          "`target` = T); " + _GAIN)
def _nerr11(x: MeasureInput) -> Result:
    refuse_average(x, "NERR's continuation reads the gains above each rank")
    t2 = 2.0 * x.metric.target
    g, rank, own = _matrix(x, CWL_DEPTH)
    gained, reached, last = _read(((rank + t2 - 1.0) / (rank + t2)) ** 2 * (1.0 - g), g, own)
    # past a list's end S_i = S_L ((L + 2T) / (i + 2T))^2
    return _expected(gained, reached, _square_tail(last, own, t2))
