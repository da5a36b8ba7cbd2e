"""Rows in ranked order under each tie rule (:class:`Ranking`): the score order with its
tie groups (``average``), reorderings within those groups (``input``, ``optimistic``,
``pessimistic``, ``docid`` as trec_eval orders them), a seeded uniform shuffle
(``random``), and the quicksort orders of :mod:`harness.metrics.layout.quicksort_ties`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from harness.arrow_arrays import arrow, numbers
from harness.metrics.layout.quicksort_ties import RULES as QUICKSORT_RULES, quicksort_ties_perm
from harness.metrics.layout.segments import segment_argsort, segment_sort

if TYPE_CHECKING:
    import pandas as pd

    from harness.metrics.layout.segments import Layout

#: (query code, position, and two per-row arrays) of some ranked rows, per query in turn
_FourArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

__all__ = ["Ranking", "Rankable", "RankingPlan", "rank", "rank_docid", "trec_order_rows", "QUICKSORT_RULES",
           "DOCID_RULES"]


@dataclass(frozen=True)
class RankingPlan:
    """The rankings a metric list will ask for, decided from the metrics alone and handed
    down to the layout. Per metric: its (tie rule, seed), cut-off, whether it reads which
    rows are judged, and whether it ranks the rows as they are (a metric that does not read
    unjudged rows as non-relevant ranks rows of its own, not known yet). Which rankings
    cover every row is settled once the rows' list lengths are known (:meth:`whole`)."""

    # (ties, seed, k, reads judged, ranks the rows as they are)
    metrics: tuple[tuple[str, int, int | None, bool, bool], ...] = ()

    def contenders(self, mean_length: float) -> dict[tuple[str, int], int]:
        """Per tie rule, the largest cut-off when every metric using it has one that is short
        next to the lists (``4 k <= mean length``): those metrics then rank only the rows
        that can reach it."""
        limits: dict[tuple[str, int], int | None] = {}
        for ties, seed, k, _, _ in self.metrics:
            current = limits.get((ties, seed), 0)
            limits[(ties, seed)] = None if k is None or current is None else max(current, k)
        return {key: k for key, k in limits.items() if k is not None and 4 * k <= mean_length}

    def whole(self, mean_length: float) -> list[tuple[str, int]]:
        """The (tie rule, seed) of every ranking of all rows the metrics will ask for."""
        tops = self.contenders(mean_length)
        return [(ties, seed) for ties, seed, _, judged, plain in self.metrics
                if plain and ((ties, seed) not in tops or judged)]


class Rankable(Protocol):
    """What ranking reads of a laid-out run: the rows grouped by query, their scores, labels
    and ids, and the rankings already made
    (:class:`~harness.metrics.layout.prepared.Prepared` is one)."""

    q: np.ndarray  # query code per row, rows grouped by query
    score: np.ndarray
    label: np.ndarray
    docid: Any
    qid_values: Any
    row: np.ndarray  # each grouped row's row in the input

    @property
    def pos(self) -> np.ndarray: ...

    @property
    def n_docs(self) -> np.ndarray: ...

    @property
    def starts(self) -> np.ndarray: ...

    @property
    def layout(self) -> Layout: ...

    def ranking(self, ties: str, seed: int = 0, top: int | None = None) -> Ranking: ...

@dataclass
class Ranking:
    """Rows in ranked order for one tie mode (see :meth:`Rankable.ranking`).

    Queries keep their place: query ``i`` owns ranked rows ``starts[i] : starts[i]+n[i]``,
    so ``q`` and ``pos`` are shared by every ranking of the same input.
    """

    perm: np.ndarray  # grouped-row index per ranked row
    q: np.ndarray  # query code per ranked row
    pos: np.ndarray  # 0-based rank within the query
    grouped_label: np.ndarray  # labels in grouped-row order (``label`` ranks them)
    n: np.ndarray  # rows per query in this ranking (all, or those that can reach the top k)
    # tie groups (only for ties="average" when ties exist): id per row, start and size
    gid: np.ndarray | None = None
    gstart: np.ndarray | None = None
    gsize: np.ndarray | None = None
    # per grouped row of the rows ranked (all, or a top k's contenders): is it judged
    grouped_judged: np.ndarray | None = None
    # likewise: is its document judged with a negative label (None: no such row)
    grouped_negative: np.ndarray | None = None
    _heads: dict[int, np.ndarray] = field(default_factory=dict)
    _tops: dict[int, _FourArrays] = field(default_factory=dict)
    _positive: dict[float, _FourArrays] = field(default_factory=dict)
    _tied: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    _boundary: np.ndarray | None = None  # per ranked row: does it start a tie group
    stable: bool = False  # tied rows in grouped-row order (the input order)
    same_as: Ranking | None = None  # a ranking of the same rows in the same order

    @cached_property
    def label(self) -> np.ndarray:
        """Label per ranked row (0 where unjudged); read when the labels are joined (a
        ranking may be made before), shared with a ranking of the same order."""
        if self.same_as is not None:
            return self.same_as.label
        return self.grouped_label[self.perm]

    def head(self, k: int | None) -> np.ndarray | None:
        """Indices of the ranked rows within the top ``k`` (None: all rows)."""
        if k is None:
            return None
        if k not in self._heads:  # each query's first min(n, k) rows, from the counts
            kept = np.minimum(self.n, k)
            skipped = self.n - kept  # rows of the query below the top k
            before = np.cumsum(skipped) - skipped
            self._heads[k] = np.arange(int(kept.sum()), dtype=np.int64) + np.repeat(before, kept)
        return self._heads[k]

    def top(self, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query code, position, grouped-row index, label) of the top-``k`` ranked rows,
        gathered once per k and shared by every metric with that cut-off."""
        key = -1 if k is None else k
        if key not in self._tops:
            rows = self.head(k)
            if rows is None:
                self._tops[key] = (self.q, self.pos, self.perm, self.label)
            else:
                perm = self.perm[rows]
                self._tops[key] = (self.q[rows], self.pos[rows], perm, self.grouped_label[perm])
        return self._tops[key]

    def positive(self, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query code, position, label, index within the query among these rows) of the
        ranked rows with a label above 0 and at least ``level``, in ranked order.

        Without tie groups these are the only rows that add anything to a binary measure at
        a level above 0, or to a DCG whose gain of label 0 is 0: summing over them alone
        gives the same sums, term for term (the other terms are exact zeros). On trec_eval
        runs, where a few percent of the retrieved documents are relevant, that is most of
        the work of AP, nDCG, recall and RR saved."""
        if level not in self._positive:
            if level > 0:  # the rows above 0 that reach the level (all of them, often)
                q, pos, label, index = self.positive(0.0)
                keep = np.flatnonzero(label >= level)
                if len(keep) == len(label):
                    self._positive[level] = (q, pos, label, index)
                    return self._positive[level]
                q, pos, label = q[keep], pos[keep], label[keep]
                n = np.bincount(q, minlength=len(self.n))
            else:  # the rows kept, counted per query from where each query's rows end
                label = self.label
                keep = np.flatnonzero(label > 0)
                ends = np.cumsum(self.n)
                n = np.diff(np.searchsorted(keep, ends), prepend=0)
                # queries hold consecutive rows: no gather of their codes and positions
                q = np.repeat(np.arange(len(self.n), dtype=self.q.dtype), n)
                pos, label = keep - np.repeat(ends - self.n, n), label[keep]
            index = np.arange(len(q), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
            self._positive[level] = (q, pos, label, index)
        return self._positive[level]

    def sparse(self) -> bool:
        """Whether measures may sum over :meth:`positive` rows: there are no tie groups
        (each row is one position). Finding those rows costs one pass over the ranking, as
        finding the top k rows does, and every measure of the ranking shares them."""
        return self.gid is None

    def group_mean(self, values: np.ndarray) -> np.ndarray:
        """Per row, the mean of ``values`` over its tie group (identity without groups)."""
        if self.gid is None:
            return values
        assert self.gsize is not None  # gid, gstart and gsize are set together
        sums = np.bincount(self.gid, weights=values, minlength=len(self.gsize))
        return (sums / self.gsize)[self.gid]

    def tied(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ranked rows of tie groups of two rows or more (group by group), and those
        groups' starts among these rows and sizes, found once per ranking."""
        if self._tied is None:
            boundary = self._boundary
            if boundary is None:
                assert self.gid is not None, "tied() needs the ranking's tie groups"
                boundary = np.zeros(len(self.gid), dtype=bool)
                boundary[self.gstart] = True
            # a row alone in its group starts it, and so does the next row
            alone = np.empty(len(boundary), dtype=bool)
            np.logical_and(boundary[:-1], boundary[1:], out=alone[:-1])
            alone[-1] = boundary[-1]
            rows = np.flatnonzero(~alone)
            # the groups' starts among these rows (not a mask over the groups' sizes: a
            # boolean index that selects a scattered third is several times slower)
            start = np.flatnonzero(boundary[rows])
            self._tied = (rows, start, np.diff(start, append=len(rows)))
        return self._tied

    def group_sum(self, values: np.ndarray) -> np.ndarray:
        """Per row, the sum of ``values`` over its tie group."""
        if self.gid is None:
            return values
        assert self.gsize is not None  # gid, gstart and gsize are set together
        return np.bincount(self.gid, weights=values, minlength=len(self.gsize))[self.gid]


def rank(prep: Rankable, ties: str, seed: int) -> Ranking:
    if ties in DOCID_RULES:
        return rank_docid(prep, descending=ties != "docid_ascending")
    if ties in QUICKSORT_RULES:
        perm = quicksort_ties_perm(ties, prep.ranking("input").perm,
                                   prep.ranking("average"), prep.q, -prep.score, prep.starts,
                                   prep.n_docs)
        return Ranking(perm=perm, q=prep.q, pos=prep.pos, grouped_label=prep.label,
                       n=prep.n_docs)
    if ties in ("input", "optimistic", "pessimistic"):
        # reorder only within the tie groups of the score order: a stable sort on
        # (group, secondary key), which is nearly sorted already, so timsort is ~linear
        base = prep.ranking("average")
        if base.gid is None:  # no ties: every rule gives the score order
            return Ranking(perm=base.perm, q=prep.q, pos=prep.pos, grouped_label=prep.label,
                           n=prep.n_docs)
        # the rows alone in their group keep their place: only the tied rows are sorted
        if ties == "input" and base.stable:  # the tied rows are in input order already
            return Ranking(perm=base.perm, q=prep.q, pos=prep.pos, grouped_label=prep.label,
                           n=prep.n_docs, same_as=base)
        tied = base.tied()[0]
        tied_perm = base.perm[tied]
        if ties == "input":
            second = tied_perm
        else:
            codes = _label_codes(prep.label)
            second = (codes if ties == "pessimistic" else codes.max() - codes)[tied_perm]
        span = np.int64(int(second.max()) + 1)
        order = np.argsort(base.gid[tied] * span + second, kind="stable")
        perm = base.perm.copy()
        perm[tied] = tied_perm[order]
        return Ranking(perm=perm, q=prep.q, pos=prep.pos, grouped_label=prep.label,
                       n=prep.n_docs)
    neg = -prep.score  # ascending order of it: score descending
    s = None
    stable = ties == "average" and neg.dtype == np.float64
    if stable:
        perm, s = segment_sort(prep.layout, neg)
    elif ties == "average":
        perm = segment_argsort(prep.layout, [neg], stable=False)
    else:
        if ties == "random":
            second = _seeded_hash(prep.qid_values, prep.docid, seed)[prep.row]
        else:  # pragma: no cover - Metric validates ties
            raise AssertionError(ties)
        perm = segment_argsort(prep.layout, [second, neg], stable=True)
    ranking = Ranking(perm=perm, q=prep.q, pos=prep.pos, grouped_label=prep.label,
                      n=prep.n_docs, stable=stable)
    if ties == "average" and len(perm):
        s = neg[perm] if s is None else s
        boundary = np.empty(len(perm), dtype=bool)
        boundary[0] = True
        np.not_equal(s[1:], s[:-1], out=boundary[1:])
        boundary[prep.starts[prep.n_docs > 0]] = True  # a query starts a group
        gstart = np.flatnonzero(boundary)
        if len(gstart) < len(perm):  # some ties: keep the groups
            gsize = np.diff(np.append(gstart, len(perm)))
            ranking.gid = np.cumsum(boundary) - 1  # the groups started so far
            ranking._boundary = boundary
            ranking.gstart = gstart
            ranking.gsize = gsize
    return ranking


#: Ties broken by docid: descending among exactly equal scores (``docid``: trec_eval 10.0,
#: which compares scores as double, and gdeval), descending among float32-equal scores
#: (``docid_float32``: trec_eval 9.x and pytrec_eval, which read scores as float32, see
#: :meth:`Prepared.float32`), ascending among exactly equal scores (``docid_ascending``,
#: ir_measures' own Judged).
DOCID_RULES = ("docid", "docid_float32", "docid_ascending")


def rank_docid(prep: Rankable, *, descending: bool = True) -> Ranking:
    """Score descending, then docid descending (or ascending) as strings.

    Only the rows of tie groups of the score order are looked at: their docids are
    ranked among themselves and each group is reordered in place, so untied rows cost
    nothing beyond the score sort."""
    base = prep.ranking("average")
    if base.gid is None:
        return Ranking(perm=base.perm, q=prep.q, pos=prep.pos, grouped_label=prep.label,
                       n=prep.n_docs)
    tied = base.tied()[0]  # positions, group by group
    docids = take_docids(prep.docid, prep.row[base.perm[tied]])
    order = docid_order(base.gid[tied], docids, descending=descending)
    perm = base.perm.copy()
    perm[tied] = base.perm[tied[order]]
    return Ranking(perm=perm, q=prep.q, pos=prep.pos, grouped_label=prep.label,
                   n=prep.n_docs)


def take_docids(docid: Any, rows: np.ndarray) -> Any:
    """The docids of ``rows`` of a run's docid column: a numpy array of str (``harness
    eval``'s column arrays), an Arrow array, or a pandas Series (as an Arrow array)."""
    if isinstance(docid, np.ndarray):
        return docid[rows]
    import pyarrow as pa

    if isinstance(docid, (pa.Array, pa.ChunkedArray)):
        return docid.take(arrow(rows))
    import pandas as pd

    taken = docid.take(rows)
    return pa.array(taken if isinstance(taken.dtype, pd.StringDtype) else taken.astype(str))


def docid_order(group: np.ndarray, docids: Any, *, descending: bool = True) -> np.ndarray:
    """The order of rows by ``group`` ascending, then docid descending (or ascending) as
    strings, in code point order (UTF-8 bytes order): numpy's sort of the distinct
    strings for a numpy array of str, Arrow's for an Arrow array."""
    if isinstance(docids, np.ndarray):
        codes = np.unique(docids.astype(str), return_inverse=True)[1].reshape(-1)
        return np.lexsort((-codes if descending else codes, group))
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.table({"group": arrow(group), "docid": docids})
    direction = "descending" if descending else "ascending"
    return numbers(pc.sort_indices(table, sort_keys=[("group", "ascending"),
                                                     ("docid", direction)]))


def trec_order_rows(qcode: np.ndarray, score: np.ndarray, docid: Any) -> np.ndarray:
    """The permutation of rows into trec_eval's order: query code ascending, score
    descending, docid descending (``docid``: the run's column, of any kind
    :func:`harness.metrics.layout.ranking.take_docids` reads)."""
    neg = -score
    order = np.lexsort((neg, qcode))  # stable: equal keys keep the run's order
    q, s = qcode[order], neg[order]
    tied = np.zeros(len(order), dtype=bool)
    same = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    tied[1:] |= same
    tied[:-1] |= same
    if tied.any():
        rows = np.flatnonzero(tied)
        group = np.cumsum(~np.concatenate(([False], same)))[rows]  # tie group per row
        within = docid_order(group, take_docids(docid, order[rows]))
        order[rows] = order[rows[within]]
    return order


def _label_codes(labels: np.ndarray) -> np.ndarray:
    """Non-negative integers ordered as the labels are."""
    if len(labels) and labels.min() >= 0 and labels.max() < 2**31 and np.all(
            labels == np.floor(labels)):
        return labels.astype(np.int64)
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def _seeded_hash(qid: pd.Series, docid: pd.Series, seed: int) -> np.ndarray:
    """A per-row pseudo-random key that depends on (seed, qid, docid) only.

    Each id is hashed (SipHash, :func:`pandas.util.hash_array`), then the query's hash and
    the seed are mixed into the docid's by two rounds of the SplitMix64 finalizer, whose
    output bits each depend on every input bit: the order of a query's tied documents is
    a uniform shuffle, a different one per query and per seed (a plain XOR of the query's
    hash would flip the same bits of every key in the query, so only a few orders could
    occur)."""
    import pandas as pd

    hash_key = hashlib.sha256(f"harness-ties-{seed}".encode()).hexdigest()[:16]
    hq = pd.util.hash_array(np.asarray(qid, dtype=object), hash_key=hash_key)
    hd = pd.util.hash_array(np.asarray(docid, dtype=object), hash_key=hash_key)
    with np.errstate(over="ignore"):
        key = _splitmix(hd ^ _splitmix(hq + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)))
        return (key >> np.uint64(1)).astype(np.int64)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finalizer (Steele, Lea & Flood 2014), elementwise on uint64."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))
