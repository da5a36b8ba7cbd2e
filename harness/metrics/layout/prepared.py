"""Validated input laid out by query (:class:`Prepared`): the rows grouped by query code,
their labels and judgments, and, computed once per call and shared by every metric, the
rankings per tie rule, the contenders for a top k, and the label counts per grade."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.metrics.layout import background
from harness.metrics.layout.ranking import QUICKSORT_RULES, Ranking, rank
from harness.metrics.layout.segments import Layout

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Prepared", "Ideal", "Judgments", "level_counts", "whole_grades", "MAX_LEVELS"]


@dataclass(frozen=True)
class Judgments:
    """The qrels as given, their qid and docid in the run's dtypes: for the measures that
    read more than each row's label (Compat reads the qrels' order). ``subtopics``: the
    subtopic judgments, one row per (qid, docid, subtopic), when the qrels have a
    ``subtopic`` column (``frame`` then holds each document's highest label)."""

    qid: pd.Series
    docid: pd.Series
    frame: pd.DataFrame
    subtopics: pd.DataFrame | None = None


@dataclass
class Ideal:
    """Per query, the labels that form the ideal ranking (unsorted), by query code."""

    q: np.ndarray
    label: np.ndarray


@dataclass
class Prepared:
    """Validated input, rows grouped by query; orders and ideals computed once, cached."""

    qids: pd.Index  # evaluated query ids, sorted; position = query code
    q: np.ndarray  # query code per row, non-decreasing (rows grouped by query)
    row: np.ndarray  # row of the run DataFrame per grouped row (input order within query)
    score: np.ndarray  # scores; NaN mapped to -inf when nan_scores='last'
    label: np.ndarray
    docid: pd.Series  # the run's docid column (original row order)
    qid_values: pd.Series  # the run's qid column (original row order)
    judged_q: np.ndarray  # query code per judged label (qrels or labelled run)
    judged_label: np.ndarray
    n_docs: np.ndarray
    n_judged: np.ndarray
    missing_qids: pd.Index  # judged queries absent from the run
    unjudged_qids: pd.Index  # run queries with no judgment
    max_label: float
    _rankings: dict[tuple[str, int], Ranking] = field(default_factory=dict)
    _contenders: dict[int, Prepared] = field(default_factory=dict)
    _relevant: dict[float, np.ndarray] = field(default_factory=dict)
    pending: Any = None  # a validation still running on the other core (see wait())
    judged: np.ndarray | None = None  # per grouped row: is its document judged (bpref, Judged)
    # per grouped row: is it judged with a negative label, trec_eval's "in the pool, not
    # judged" (negative_labels='unjudged'; None when no row is): infAP
    negative: np.ndarray | None = None
    early: Any = None  # rankings computed on the other core (see rank_early())
    judgments: Judgments | None = None  # the qrels (None: a labelled run)

    def wait(self) -> None:
        """Return once every validation of the input is done; raise its error, if any."""
        try:
            self._adopt()
        finally:
            pending, self.pending = self.pending, None
            background.wait(pending)

    #: Tie rules whose ranking reads no label: they may be computed before the labels.
    LABEL_FREE = ("average", "docid", "docid_float32", "docid_ascending", "input", "random")

    def rank_early(self, keys: Iterable[tuple[str, int]]) -> None:
        """Start computing the full rankings ``keys`` ((tie rule, seed), label-free rules
        only) on the other core, on a twin of these rows, while this thread fills in the
        labels; the first :meth:`ranking` takes them over (:meth:`_adopt`)."""
        keys = [k for k in dict.fromkeys(keys) if k[0] in self.LABEL_FREE]
        if not keys:
            return
        twin = replace(self, _rankings={}, _contenders={}, _relevant={}, pending=None)

        def rank_all() -> Prepared:
            for ties, seed in keys:
                twin.ranking(ties, seed)
            return twin

        self.early = background.start_value(rank_all, len(self.q))

    def _adopt(self) -> None:
        """Take over the rankings (and layout) :meth:`rank_early` computed, once done. The
        twin shares every array with these rows, labels included, which were filled in
        place meanwhile."""
        early, self.early = self.early, None
        if early is None:
            return
        twin = early.result()
        for name in ("layout", "pos", "_float32"):
            if name in twin.__dict__ and name not in self.__dict__:
                self.__dict__[name] = twin.__dict__[name]
        for key, ranking in twin._rankings.items():
            self._rankings.setdefault(key, ranking)

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    @property
    def mean_length(self) -> float:
        """The mean list length of the evaluated queries (0 without any)."""
        return float(self.n_docs.mean()) if self.n_queries else 0.0

    @property
    def starts(self) -> np.ndarray:
        return self.layout.starts

    @cached_property
    def layout(self) -> Layout:
        return Layout.of(np.cumsum(self.n_docs) - self.n_docs, self.n_docs, self.q, self.pos)

    @cached_property
    def pos(self) -> np.ndarray:
        """0-based position of each grouped row within its query."""
        starts = np.cumsum(self.n_docs) - self.n_docs
        return np.arange(len(self.q), dtype=np.int64) - starts[self.q]

    @property
    def max_len(self) -> int:
        longest = int(self.n_docs.max()) if len(self.n_docs) else 0
        judged = int(self.n_judged.max()) if len(self.n_judged) else 0
        return max(longest, judged, 1)

    def relevant_counts(self, level: float) -> np.ndarray:
        """Per query, the judged documents with label >= ``level`` (cached per level)."""
        if level not in self._relevant:  # integer counts of the rows that pass
            by_level = self.judged_level_counts
            if by_level is not None and level == int(level):
                self._relevant[level] = by_level[0][:, max(int(level), 0):].sum(axis=1)
            else:
                self._relevant[level] = np.bincount(
                    self.judged_q[self.judged_label >= level], minlength=self.n_queries)
        return self._relevant[level]

    @cached_property
    def judged_level_counts(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The judged labels counted per query and grade (see :func:`level_counts`)."""
        return level_counts(self.judged_q, self.judged_label, self.n_queries)

    @cached_property
    def highest_label(self) -> float:
        """The highest label of these rows (0 when none), found once (every nDCG variant
        checks its gains by it, ERR and mnDCG their top grade)."""
        return float(self.label.max()) if len(self.label) else 0.0

    @cached_property
    def highest_judged(self) -> float:
        """The highest label judged (0 when none), found once."""
        return float(self.judged_label.max()) if len(self.judged_label) else 0.0

    @cached_property
    def integer_grades(self) -> bool:
        """Whether every label of these rows is a whole number in [0, 64) (ERR's stop
        probabilities then take at most 64 values), found once."""
        return whole_grades(self.label)

    @cached_property
    def ideal_dcgs(self) -> dict[tuple[Any, ...], np.ndarray]:
        """IDCG@k per query, by ideal, gain, discount, cut-off and length: the labels' own,
        computed once for every tie rule and shared with :meth:`with_score`'s twins (another
        score column, the same judgments)."""
        return {}

    def ideal(self, mode: str) -> Ideal:
        if mode == "judged":
            return Ideal(self.judged_q, self.judged_label)
        return Ideal(self.q, self.label)

    def ranking(self, ties: str, seed: int = 0, top: int | None = None) -> Ranking:
        """Rows ranked under a tie rule. With ``top``, only the rows that can reach the top
        ``top`` positions are ranked (see :meth:`contenders`): exact for every metric cut at
        ``k <= top``, for every tie rule."""
        if self.early is not None:
            self._adopt()
        if ties == "docid_float32" and self.float32 is not self:  # trec_eval 9's float32
            return self.float32.ranking(ties, seed, top)
        if top is not None and ties not in QUICKSORT_RULES:  # there, every row moves ties
            return self.contenders(top).ranking(ties, seed)
        key = (ties, seed if ties == "random" else 0)
        if key not in self._rankings:
            ranking = rank(self, ties, seed)
            ranking.grouped_judged = self.judged  # of these rows (contenders: a subset)
            ranking.grouped_negative = self.negative
            self._rankings[key] = ranking
        return self._rankings[key]

    # ``float32`` and ``condensed`` are kept as None where they are these rows themselves: a
    # Prepared holding itself is a reference cycle, which outlives its last reference until
    # the cyclic collector runs, and held every block's rows and rankings (issue 25).

    @property
    def float32(self) -> Prepared:
        """These rows with each score rounded to float32, as trec_eval reads a run's scores
        (so 0.5 and 0.5 + 1e-8 tie there): ``ties='docid_float32'`` ranks on them. Itself when no
        score changes."""
        if "_float32" not in self.__dict__:
            rounded = self.score.astype(np.float32).astype(np.float64)
            twin = None
            if not np.array_equal(rounded, self.score):
                twin = replace(self, score=rounded, _rankings={}, _contenders={},
                               _relevant={}, pending=None)
                twin.__dict__["layout"], twin.__dict__["pos"] = self.layout, self.pos
                twin.__dict__["_float32"] = None
            self.__dict__["_float32"] = twin
        twin = self.__dict__["_float32"]
        return self if twin is None else twin

    def with_score(self, score: np.ndarray) -> Prepared:
        """These rows with another score per run row (``score[row]`` ranks them): the
        layout, labels and judgments are shared, everything ranked is computed afresh.
        Another score column of the same run costs its rankings and measures only, not
        another preparation (the stream engine's score columns, part by part)."""
        if self.early is not None:
            self._adopt()
        twin = replace(self, score=score[self.row], _rankings={}, _contenders={},
                       _relevant=self._relevant, pending=None, early=None)
        for name in ("layout", "pos", "judged_level_counts", "ideal_dcgs", "highest_label",
                     "highest_judged", "integer_grades"):  # label-only caches
            if name in self.__dict__:
                twin.__dict__[name] = self.__dict__[name]
        return twin

    @property
    def condensed(self) -> Prepared:
        """These rows less the unjudged ones (``unjudged='condensed'``: trec_eval ``-J``,
        ir_measures' ``judged_only=True``): each query's judged documents close ranks over
        the unjudged ones. The judgments, and so R and the ideal, are unchanged. Itself
        when every row is judged."""
        if self.early is not None:
            self._adopt()
        if "_condensed" not in self.__dict__:
            sub = None
            if self.judged is not None and not self.judged.all():
                sub = self._subset(np.flatnonzero(self.judged))
                sub.__dict__["_condensed"] = None
            self.__dict__["_condensed"] = sub
        sub = self.__dict__["_condensed"]
        return self if sub is None else sub

    def relevant(self, grade: float | None) -> Prepared:
        """These rows with every unjudged one judged with ``grade`` (``unjudged='relevant'``;
        None: the top grade, :attr:`max_label`): the judgments gain those rows, so R and the
        ideal grow with them. A row judged with a negative label (trec_eval's "in the pool,
        not judged") is unjudged too. Itself when every row is judged and the grade is not
        above :attr:`max_label`. Memoised per grade."""
        if self.early is not None:
            self._adopt()
        g = self.max_label if grade is None else float(grade)
        everything = self.judged is None or self.judged.all()
        if everything and g <= self.max_label:
            return self
        memo = self.__dict__.setdefault("_relevant_twins", {})
        if g not in memo:  # the grade is a label evaluated (max_label=None reads it) even
            # where no row is unjudged: one top grade whichever rows a part holds
            new, label = np.zeros(0, dtype=np.int64), self.label
            if not everything:  # so self.judged is set
                assert self.judged is not None
                new, label = np.flatnonzero(~self.judged), np.where(self.judged, label, g)
            twin = replace(
                self, judgments=self._judged_too(new, g), label=label,
                judged_q=np.concatenate([self.judged_q, self.q[new]]),
                judged_label=np.concatenate([self.judged_label, np.full(len(new), g)]),
                n_judged=self.n_judged + np.bincount(self.q[new], minlength=self.n_queries),
                max_label=max(self.max_label, g), judged=np.ones(len(self.q), dtype=bool),
                negative=None, _rankings={}, _contenders={}, _relevant={}, pending=None)
            twin.__dict__["layout"], twin.__dict__["pos"] = self.layout, self.pos
            memo[g] = twin
        return memo[g]

    def _judged_too(self, new: np.ndarray, grade: float) -> Judgments | None:
        """The qrels as given plus the grouped rows ``new`` judged with ``grade``, after
        them (for the measures that read the qrels whole)."""
        import pandas as pd

        j = self.judgments
        if j is None:
            return None
        rows = self.row[new]
        qid, doc = self.qid_values.iloc[rows], self.docid.iloc[rows]
        frame = pd.concat([j.frame, pd.DataFrame({"qid": qid.to_numpy(),
                                                  "docid": doc.to_numpy(), "label": grade})],
                          ignore_index=True)
        return Judgments(pd.concat([j.qid, qid], ignore_index=True),
                         pd.concat([j.docid, doc], ignore_index=True), frame, j.subtopics)

    def _subset(self, keep: np.ndarray) -> Prepared:
        """These rows' subset ``keep`` (grouped-row indices, in order) with the same
        queries and judgments (a top k's contenders, the judged rows)."""
        return Prepared(
            qids=self.qids, q=self.q[keep], row=self.row[keep], score=self.score[keep],
            label=self.label[keep], docid=self.docid, qid_values=self.qid_values,
            judged_q=self.judged_q, judged_label=self.judged_label,
            n_docs=np.bincount(self.q[keep], minlength=self.n_queries),
            n_judged=self.n_judged, missing_qids=self.missing_qids,
            unjudged_qids=self.unjudged_qids, max_label=self.max_label,
            judged=None if self.judged is None else self.judged[keep],
            negative=None if self.negative is None else self.negative[keep],
            judgments=self.judgments)

    def contenders(self, top: int) -> Prepared:
        """The rows scoring at least their query's ``top``-th highest score.

        Every document that any tie rule can place in the top ``top`` is among them, and so
        is every member of a tie group reaching into the top ``top``; rows above keep their
        ranks. Selected per query with :func:`numpy.partition` on the padded matrices, in
        float32: rounding to float32 never reorders two scores, it only merges close ones,
        so the rows kept are a superset of the exact selection (each ranked exactly later),
        for half the memory.
        """
        if self.early is not None:
            self._adopt()
        if top in self._contenders:
            return self._contenders[top]
        with np.errstate(over="ignore"):  # beyond float32's range: +-inf, still in order
            neg = (-self.score).astype(np.float32)
        threshold = np.full(self.n_queries, np.inf, dtype=np.float32)
        total = self.layout.total
        for qidx, width, rows, flat, _ in self.layout.buckets:
            if width <= top:
                continue
            flat_m = np.full(len(qidx) * width, np.inf, dtype=np.float32)
            flat_m[flat] = neg if len(rows) == total else neg[rows]
            m = flat_m.reshape(len(qidx), width)
            m.partition(top - 1, axis=1)  # in place: the matrix is ours
            threshold[qidx] = m[:, top - 1]
        sub = self._subset(np.flatnonzero(neg <= threshold[self.q]))
        self._contenders[top] = sub
        return sub


#: Integer labels below this are counted per grade (:func:`level_counts`) instead of sorted.
MAX_LEVELS = 64


def whole_grades(labels: np.ndarray) -> bool:
    """Whether every label is a whole number in [0, 64) (none: True)."""
    return len(labels) == 0 or bool(labels.min() >= 0 and labels.max() < 64
                                    and np.array_equal(labels, np.floor(labels)))


def level_counts(q: np.ndarray, label: np.ndarray, n_queries: int
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per query code (rows) and grade 0, 1, ... (columns), how many of ``label`` have that
    grade, with the grades as floats; None unless every label is an integer in [0, 64)."""
    if len(label) == 0:
        return np.zeros((n_queries, 1), dtype=np.int64), np.zeros(1)
    top = float(label.max())
    if label.min() < 0 or top >= MAX_LEVELS or not np.all(label == np.floor(label)):
        return None
    levels = int(top) + 1
    c = np.bincount(q * levels + label.astype(np.int64), minlength=n_queries * levels)
    return c.reshape(n_queries, levels), np.arange(levels, dtype=np.float64)
