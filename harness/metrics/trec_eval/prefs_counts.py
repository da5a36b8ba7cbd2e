"""Per-judgment-group preference counts for :mod:`harness.metrics.trec_eval.prefs`.

Rows are prefs lines with their judgment group ``g`` (0..ng-1), level ``lvl``, the rank
``r`` of their document (retrieved judged documents first, see :mod:`harness.metrics.trec_eval.prefs`)
and ``ret`` (the document was retrieved). Every function returns per-JG float arrays of
length ``ng`` (exact integers), or one JG's numbers.

One-sub-group JGs (equivalence classes of equal level) are counted in closed form over all
of them at once; a JG with several sub-groups is a boolean preference matrix over its
documents in rank order, closed transitively (:func:`pa_group`).
"""

from __future__ import annotations

import numpy as np

from harness.errors import InputError

__all__ = ["ec_counts", "ec_rnonrel", "pa_group", "add_ec_pairs"]


def _by(g: np.ndarray, v: np.ndarray | None, ng: int) -> np.ndarray:
    return np.bincount(g, weights=v, minlength=ng).astype(float)


def _exclusive_cumsum(v: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Sum of the earlier entries of the same group (``groups`` sorted)."""
    before = np.cumsum(v) - v
    first = np.r_[True, groups[1:] != groups[:-1]] if len(groups) else np.zeros(0, bool)
    return before - before[np.flatnonzero(first)][np.cumsum(first) - 1]


def _higher_before(g: np.ndarray, lcode: np.ndarray, r: np.ndarray, ng: int) -> np.ndarray:
    """Per JG: pairs of rows (a, b) with a at a higher level and a better rank than b.

    One pass per distinct level, from the highest: each row of that level counts the rows
    of higher levels already seen that rank above it in its JG (a binary search)."""
    out = np.zeros(ng)
    if not len(g):
        return out
    span = int(r.max()) + 1
    key = g.astype(np.int64) * span + r
    by_level = np.argsort(-lcode, kind="stable")
    bounds = np.flatnonzero(np.diff(lcode[by_level])) + 1
    seen = np.empty(0, np.int64)
    for rows in np.split(by_level, bounds):
        if len(seen):
            above = (np.searchsorted(seen, key[rows])
                     - np.searchsorted(seen, g[rows].astype(np.int64) * span))
            out += _by(g[rows], above, ng)
        seen = np.sort(np.concatenate([seen, key[rows]]))
    return out


def ec_counts(g: np.ndarray, lvl: np.ndarray, r: np.ndarray, ret: np.ndarray,
              ng: int) -> dict[str, np.ndarray]:
    """Preferences of one-sub-group JGs: every row over every row of a lower level.

    Returns per JG ``pairs`` (all preferences), ``pairs_ret`` (both documents retrieved),
    ``pairs_imp`` (exactly one), ``ful_ret`` (both retrieved, preferred one ranked above)
    and ``ful_imp`` (preferred one retrieved, the other not)."""
    lcode = np.unique(lvl, return_inverse=True)[1].astype(np.int64).reshape(-1)
    n_lvl = int(lcode.max()) + 1 if len(lcode) else 1
    cells, inv = np.unique(g.astype(np.int64) * n_lvl + lcode, return_inverse=True)
    cell_g = cells // n_lvl  # one cell per (JG, level), levels ascending within a JG
    n = np.bincount(inv.reshape(-1)).astype(float)
    n_ret = np.bincount(inv.reshape(-1), weights=ret.astype(float))
    n_miss = n - n_ret

    def cross(v: np.ndarray) -> np.ndarray:  # pairs of these rows at different levels
        return (_by(cell_g, v, ng) ** 2 - _by(cell_g, v * v, ng)) / 2

    pairs, pairs_ret = cross(n), cross(n_ret)
    return {"pairs": pairs, "pairs_ret": pairs_ret,
            "pairs_imp": pairs - pairs_ret - cross(n_miss),
            "ful_ret": _higher_before(g[ret], lcode[ret], r[ret], ng),
            "ful_imp": _by(cell_g, n_ret * _exclusive_cumsum(n_miss, cell_g), ng)}


def ec_rnonrel(g: np.ndarray, lvl: np.ndarray, r: np.ndarray, ret: np.ndarray,
               njr: np.ndarray, ng: int, counts: dict[str, np.ndarray]
               ) -> dict[str, np.ndarray]:
    """Fulfilled and possible preferences of prefs_avgjg_Rnonrel (``rn_*``) and
    prefs_avgjg_Rnonrel_ret (``rnr_*``) for one-sub-group JGs.

    With R relevant (level > 0) and N non-relevant (level <= 0) documents (retrieved ones
    only, for ``_ret``): when R >= N, R - N extra non-relevant documents are imagined,
    each fulfilled by every retrieved relevant document (and possible for every relevant
    one). Otherwise only the first R (in rank order) of the lowest level are kept: the
    preferences among the other levels, plus every row (retrieved row, for ``_ret``)
    paired with each kept one, fulfilled when the row is retrieved and ranks above it.

    ``njr`` is the number of judged documents retrieved, per row (its query's)."""
    rel = lvl > 0
    n_g, n_ret_g = _by(g, None, ng), _by(g, ret.astype(float), ng)
    big_r, big_r_ret = _by(g, rel.astype(float), ng), _by(g, (rel & ret).astype(float), ng)
    big_n, big_n_ret = n_g - big_r, n_ret_g - big_r_ret
    lowest = np.full(ng, np.inf)
    np.minimum.at(lowest, g, lvl)
    last = lvl == lowest[g]
    idx = np.flatnonzero(last)
    idx = idx[np.lexsort((r[idx], g[idx]))]
    pos = np.zeros(len(g), np.int64)  # place within the lowest level, in rank order
    pos[idx] = np.arange(len(idx)) - np.searchsorted(g[idx], g[idx])
    span = int(r.max()) + 1 if len(r) else 1
    keys = np.sort(g.astype(np.int64) * span + r)
    base = g.astype(np.int64) * span
    # rows of the JG ranked above min(r, njr): those that are retrieved and above this row
    above = (np.searchsorted(keys, base + np.minimum(r, njr)) - np.searchsorted(keys, base))
    rest = ec_counts(g[~last], lvl[~last], r[~last], ret[~last], ng)

    keep = np.minimum(big_r, _by(g, last.astype(float), ng))
    kept = last & (pos < keep[g])
    short_ful = rest["ful_ret"] + rest["ful_imp"] + _by(g[kept], above[kept], ng)
    short_poss = rest["pairs"] + n_g * keep
    extra = big_r - big_n
    full = big_r >= big_n
    rn_ful = np.where(full, counts["ful_ret"] + counts["ful_imp"] + big_r_ret * extra,
                      short_ful)
    rn_poss = np.where(full, counts["pairs"] + big_r * extra, short_poss)

    keep = np.minimum(big_r_ret, _by(g, (last & ret).astype(float), ng))
    kept = last & (pos < keep[g])  # all retrieved: they come first in rank order
    extra = big_r_ret - big_n_ret
    full = big_r_ret >= big_n_ret
    rnr_ful = np.where(full, counts["ful_ret"] + big_r_ret * extra,
                       rest["ful_ret"] + _by(g[kept], above[kept], ng))
    rnr_poss = np.where(full, counts["pairs_ret"] + big_r * extra,
                        rest["pairs_ret"] + n_ret_g * keep)
    return {"rn_ful": rn_ful, "rn_poss": rn_poss, "rnr_ful": rnr_ful, "rnr_poss": rnr_poss}


def add_ec_pairs(pair_counts: np.ndarray, r: np.ndarray, lvl: np.ndarray) -> None:
    """Add one one-sub-group JG's preferences to ``pair_counts[i, j]`` (the number of JGs
    that prefer the document at rank i to the one at rank j)."""
    a, b = np.nonzero(lvl[:, None] > lvl[None, :])
    n = len(pair_counts)
    pair_counts += np.bincount(r[a] * n + r[b], minlength=n * n).reshape(n, n).astype(
        pair_counts.dtype)


def _closure(pref: np.ndarray) -> np.ndarray:
    """Transitive closure of a boolean preference matrix (diagonal left False)."""
    m = pref.copy()
    np.fill_diagonal(m, True)
    while True:
        f = m.astype(np.float32)  # exact: counts stay far below 2**24
        nxt = (f @ f) > 0
        if (nxt == m).all():
            break
        m = nxt
    np.fill_diagonal(m, False)
    return m


def pa_group(r: np.ndarray, lvl: np.ndarray, jsg: np.ndarray, njr: int,
             pair_counts: np.ndarray, docids: np.ndarray) -> dict[str, float]:
    """The statistics (see :func:`ec_counts`, :func:`ec_rnonrel`) of one JG with several
    sub-groups, whose preferences are added to ``pair_counts``.

    Within each sub-group a document is preferred to those of lower levels; preferences
    are then closed transitively across sub-groups. A document's relevance is its level
    on its last line in (sub-group, level descending, rank) order: > 0 relevant, 0 not,
    below 0 neither."""
    loc, li = np.unique(r, return_inverse=True)
    li = li.reshape(-1)
    n, k = len(loc), int((loc < njr).sum())
    a, b = np.nonzero((jsg[:, None] == jsg[None, :]) & (lvl[:, None] > lvl[None, :]))
    direct = np.zeros((n, n), bool)
    direct[li[a], li[b]] = True
    pref = _closure(direct)
    doc = np.empty(n, dtype=object)
    doc[li] = docids
    clash = np.argwhere(pref & pref.T)
    if len(clash):
        raise InputError(f"contradictory preferences between documents "
                         f"{doc[clash[0][0]]!r} and {doc[clash[0][1]]!r} in one judgment "
                         f"group")
    both = np.intersect1d(li[lvl == 0], li[lvl > 0])
    if len(both):
        raise InputError(f"document {doc[both[0]]!r} is both relevant (level > 0) and "
                         f"non-relevant (level 0) in one judgment group")
    order = np.lexsort((r, -lvl, jsg))[::-1]
    docs, last_line = np.unique(li[order], return_index=True)
    rel = np.full(n, -1.0)
    rel[docs] = lvl[order][last_line]
    good, nonrel = rel > 0, rel == 0

    def ful_poss(m: np.ndarray, kk: int) -> tuple[float, float]:
        return float(np.triu(m[:kk, :kk], 1).sum() + m[:kk, kk:].sum()), float(m.sum())

    ful, pairs = ful_poss(pref, k)
    ful_ret, pairs_ret = ful_poss(pref[:k, :k], k)
    big_r, big_n = int(good.sum()), int(nonrel.sum())
    r_ret, n_ret = int(good[:k].sum()), int(nonrel[:k].sum())
    if big_r >= big_n:
        rn = (ful + r_ret * (big_r - big_n), pairs + big_r * (big_r - big_n))
    else:  # keep the first R non-relevant documents (in rank order) only
        keep = ~(nonrel & (np.cumsum(nonrel) > big_r))
        rn = ful_poss(pref[np.ix_(keep, keep)], int(keep[:k].sum()))
    if r_ret >= n_ret:
        rnr = (ful_ret + r_ret * (r_ret - n_ret), pairs_ret + big_r * (r_ret - n_ret))
    else:  # trec_eval keeps R (not R retrieved) of the retrieved non-relevant ones here
        keep = ~(nonrel[:k] & (np.cumsum(nonrel[:k]) > big_r))
        rnr = ful_poss(pref[:k, :k][np.ix_(keep, keep)], int(keep.sum()))
    pair_counts[np.ix_(loc, loc)] += pref.astype(pair_counts.dtype)
    a1_a2 = pairs_ret
    a3_a4 = float(pref[:k, k:].sum() + pref[k:, :k].sum())
    return {"pairs": pairs, "pairs_ret": a1_a2, "pairs_imp": a3_a4, "ful_ret": ful_ret,
            "ful_imp": ful - ful_ret, "rn_ful": rn[0], "rn_poss": rn[1],
            "rnr_ful": rnr[0], "rnr_poss": rnr[1]}
