"""Cross-check nDCG variants against :func:`sklearn.metrics.ndcg_score`, per query.

sklearn can express an nDCG variant when: the gain is ``linear`` (``y_true`` = label) or
``exp2`` (``y_true`` = 2^label - 1); the discount is logarithmic (any base: nDCG does not
depend on it); the ideal is ``retrieved`` or, for a query, every judged document with a
positive gain was retrieved; ties are ``average`` (``ignore_ties=False``) or the query has
no tied scores; and the query is not empty unless ``empty='zero'``. Queries with a single
document are not checked (sklearn refuses them). Other variants are reported as not checked,
never as passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.metrics.vocabulary.definition import Metric
from harness.metrics.vocabulary.options import GainSpec

__all__ = ["CheckResult", "SklearnSide", "sklearn_expressible", "check_against_sklearn",
           "sklearn_side"]


@dataclass(frozen=True)
class CheckResult:
    """Outcome for one variant. ``status`` is 'checked' or 'not checked' (with ``reason``)."""

    variant: str
    status: str
    reason: str
    n_checked: int
    n_not_checked: int
    max_abs_diff: float
    worst_qid: object
    sample_size: int = 0  # > 0: a seeded sample of this many queries was checked
    note: str = ""  # e.g. how many tied queries took sklearn's tie-averaged path

    def failed(self, tolerance: float) -> bool:
        return self.status == "checked" and self.max_abs_diff > tolerance


def sklearn_expressible(metric: Metric) -> str | None:
    """``None`` when sklearn can compute the variant for some queries, else the reason."""
    if not metric.measure.sklearn:
        return f"sklearn has no {metric.name}"
    if metric.gain not in ("linear", "exp2"):
        return "gain is neither linear nor exp2"
    if not (metric.discount in ("log2", "ln") or re.fullmatch(r"log[\d.]+", metric.discount)):
        return "discount is not logarithmic"
    if metric.unjudged != "nonrelevant":  # sklearn ranks every row, an unjudged one as 0
        return f"unjudged={metric.unjudged}: sklearn reads an unjudged document as label 0"
    return None


def check_against_sklearn(run: pd.DataFrame, qrels: pd.DataFrame | None,
                          metrics: list[Metric], per_query: pd.DataFrame, *,
                          max_queries: int | None = None, max_tied_queries: int | None = None,
                          seed: int = 0, side: SklearnSide | None = None
                          ) -> list[CheckResult]:
    """Compare ``per_query`` (from :func:`harness.evaluate`) with sklearn, variant by variant.

    Parameters
    ----------
    run, qrels, metrics, per_query
        What was evaluated and its result.
    max_queries : int, optional
        Above this many evaluated queries, a seeded random sample of that many is checked
        (``CheckResult.sample_size``); None checks every query.
    max_tied_queries : int, optional
        Of the queries whose value depends on the order of tied scores, at most this many
        (a seeded sample, the same for every variant of one (gain, k)) are checked on
        sklearn's tie-averaged path, which loops over queries in Python; the others count
        as not checked and ``CheckResult.note`` says how many. None: all of them.
    seed : int
        Seed of the samples.
    side : SklearnSide, optional
        sklearn's values computed beforehand by :func:`sklearn_side` with the same run,
        qrels, metrics and options; used when it was computed for ``per_query``'s queries
        (in their order), else computed afresh.

    Notes
    -----
    sklearn's value of a query depends only on (gain, k) here, so it is computed once per
    pair, for all queries at once, on lists padded to one length: padding items have gain 0
    and score below the list's minimum, so they change neither DCG nor the ideal DCG.
    A query's value depends on how its ties are ordered only when a group of tied scores
    holds different labels and starts within the cut-off. The other queries take sklearn's
    vectorised ``ignore_ties=True`` path, which gives the same value for them; only the
    rest take the tie-averaged one (a Python loop over queries inside sklearn).
    """
    if side is None or not side.qids.equals(per_query.index):
        side = sklearn_side(run, qrels, metrics, per_query.index, max_queries=max_queries,
                            max_tied_queries=max_tied_queries, seed=seed)
    lists, sample_size = side.lists, side.sample_size
    results = []
    for m in metrics:
        reason = sklearn_expressible(m)
        if reason is not None:
            results.append(CheckResult(m.display_name, "not checked", reason, 0,
                                       len(per_query), float("nan"), None, sample_size))
            continue
        eligible, filters = _eligible(lists, m)
        if not eligible.any():
            why = "; ".join(f"{int((~ok).sum())} with {what}" for what, ok in filters
                            if (~ok).any())
            results.append(CheckResult(m.display_name, "not checked",
                                       f"no query sklearn can express: {why}", 0,
                                       len(per_query), float("nan"), None, sample_size))
            continue
        values = side.values[(m.gain, m.k)]
        computed = ~np.isnan(values)
        note = ""
        if m.ties == "average" and (eligible & ~computed).any():
            tied = lists.tied_at(m.k)
            done, total = int((eligible & tied & computed).sum()), int((eligible & tied).sum())
            note = (f"tie-averaged path on a seeded sample of {done} of {total} queries "
                    "with ties (check.max_tied_queries)")
        eligible &= computed
        if not eligible.any():
            results.append(CheckResult(m.display_name, "not checked", note, 0,
                                       len(per_query), float("nan"), None, sample_size))
            continue
        theirs = values[eligible]
        ours = per_query[m.display_name].reindex(lists.qids[eligible])
        diff = np.abs(theirs - ours.to_numpy(dtype=float))
        worst = int(np.argmax(diff))
        results.append(CheckResult(m.display_name, "checked", "", int(eligible.sum()),
                                   len(per_query) - int(eligible.sum()), float(diff[worst]),
                                   ours.index[worst], sample_size, note))
    return results


@dataclass(frozen=True)
class SklearnSide:
    """sklearn's per-query nDCG for the queries ``qids`` (before ``max_queries`` sampled
    them), per (gain, k) of the variants it can express: all a check needs besides the
    harness's own table, so it can be computed before that table exists."""

    qids: pd.Index
    sample_size: int
    lists: _Lists
    values: dict[tuple[GainSpec, int | None], np.ndarray]


def sklearn_side(run: pd.DataFrame, qrels: pd.DataFrame | None, metrics: list[Metric],
                 qids: pd.Index, *, max_queries: int | None = None,
                 max_tied_queries: int | None = None, seed: int = 0) -> SklearnSide:
    """sklearn's values of the queries ``qids`` of ``run`` (in their order), as
    :func:`check_against_sklearn` computes them with the same options."""
    qids = pd.Index(qids)
    checked, sample_size = qids, 0
    if max_queries is not None and len(qids) > max_queries:
        rng = np.random.default_rng(seed)
        checked = qids[np.sort(rng.choice(len(qids), size=max_queries, replace=False))]
        sample_size = max_queries
    lists = _padded_lists(run, qrels, checked)
    values: dict[tuple[GainSpec, int | None], np.ndarray] = {}
    for m in metrics:
        key = (m.gain, m.k)
        if key in values or sklearn_expressible(m) is not None or \
                not _eligible(lists, m)[0].any():
            continue
        values[key] = _sklearn_per_query(lists.gains(m.gain), lists.scores, m.k,
                                         lists.tied_at(m.k), max_tied_queries, seed)
    return SklearnSide(qids, sample_size, lists, values)


def _eligible(lists: _Lists, m: Metric) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """The queries sklearn can express ``m`` for, and the filters that decided it."""
    n, complete = lists.lengths, lists.complete
    eligible = n >= 2
    filters = [("a single document", n >= 2)]
    if m.ideal == "judged":
        filters.append(("relevant documents not retrieved (ideal=judged)", complete))
    if m.ties != "average":
        filters.append((f"tied scores (sklearn averages ties; ties={m.ties})",
                        ~lists.tied_at(m.k)))
    if m.empty != "zero":
        filters.append((f"no relevant document (empty={m.empty})",
                        np.asarray((lists.gains(m.gain) > 0).any(axis=1))))
    for _, ok in filters:
        eligible &= ok
    return eligible, filters


def _sklearn_per_query(y_true: np.ndarray, y_score: np.ndarray, k: int | None,
                       tied: np.ndarray, max_tied: int | None, seed: int) -> np.ndarray:
    """sklearn's per-query nDCG: the tie-averaged path for the rows in ``tied`` (at most
    ``max_tied`` of them, a seeded sample; NaN for the others), the vectorised
    ``ignore_ties=True`` path (equal without ties that matter) for the rest."""
    out = np.full(len(y_true), np.nan)
    tied_rows = np.flatnonzero(tied)
    if max_tied is not None and len(tied_rows) > max_tied:
        tied_rows = np.sort(np.random.default_rng(seed).choice(tied_rows, max_tied,
                                                                replace=False))
    for rows, ignore_ties in ((np.flatnonzero(~tied), True), (tied_rows, False)):
        if len(rows):
            out[rows] = _sklearn_rows(y_true[rows], y_score[rows], k, ignore_ties)
    return out


def _sklearn_rows(y_true: np.ndarray, y_score: np.ndarray, k: int | None,
                  ignore_ties: bool) -> np.ndarray:
    """Uses sklearn's per-sample helper when present (one call for all rows), else the
    public ``ndcg_score`` per row."""
    try:
        from sklearn.metrics._ranking import _ndcg_sample_scores
    except ImportError:  # pragma: no cover - private helper moved
        from sklearn.metrics import ndcg_score

        return np.array([ndcg_score(t[None, :], s[None, :], k=k, ignore_ties=ignore_ties)
                         for t, s in zip(y_true, y_score)])
    return np.asarray(_ndcg_sample_scores(y_true, y_score, k=k, ignore_ties=ignore_ties))


@dataclass(frozen=True)
class _Lists:
    """The ranked lists of the checked queries, padded to one length (row i: ``qids[i]``)."""

    qids: np.ndarray
    labels: np.ndarray  # non-negative; 0 for unjudged and padding
    scores: np.ndarray  # padding scores below the row's minimum
    lengths: np.ndarray
    complete: np.ndarray  # every judged document with a positive label was retrieved
    tie_rank: np.ndarray  # first rank of a tied group with different labels (inf: none)

    def tied_at(self, k: int | None) -> np.ndarray:
        """Queries whose value at cut-off ``k`` depends on the order of tied scores."""
        return np.isfinite(self.tie_rank) if k is None else self.tie_rank <= k

    def gains(self, gain: GainSpec) -> np.ndarray:
        """The gains under ``gain``, one sklearn expresses: linear, or else exp2."""
        if gain == "linear":
            return self.labels
        return np.where(self.labels > 0, np.exp2(self.labels) - 1, 0.0)


def _padded_lists(run: pd.DataFrame, qrels: pd.DataFrame | None, qids: pd.Index) -> _Lists:
    """Labels and scores of each query's ranked list, in run order, without a loop over
    queries."""
    frame = run[["qid", "docid", "score"]]
    wanted = pd.Index(qids)
    if len(wanted) < frame["qid"].nunique():  # a sample: join only the checked queries
        frame = frame[frame["qid"].isin(wanted)]
        run = run.loc[frame.index]
        if qrels is not None:
            qrels = qrels[qrels["qid"].isin(wanted)]
    if qrels is None:
        frame = frame.assign(label=run["label"].clip(lower=0))
        positive = frame.loc[frame["label"] > 0, "qid"]
    else:
        frame = frame.merge(qrels[["qid", "docid", "label"]], on=["qid", "docid"], how="left")
        frame["label"] = frame["label"].fillna(0).clip(lower=0)
        positive = qrels.loc[qrels["label"] > 0, "qid"]
    row = pd.Index(qids).get_indexer(frame["qid"])
    keep = row >= 0
    row = row[keep]
    labels = frame["label"].to_numpy(dtype=float)[keep]
    scores = frame["score"].to_numpy(dtype=float)[keep]
    order = np.argsort(row, kind="stable")  # each query's rows together, in run order
    row, labels, scores = row[order], labels[order], scores[order]
    nq = len(qids)
    lengths = np.bincount(row, minlength=nq)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    position = np.arange(len(row)) - starts[row]
    width = int(lengths.max()) if nq else 0
    padded_labels = np.zeros((nq, width))
    padded_labels[row, position] = labels
    low = np.full(nq, np.inf)
    np.minimum.at(low, row, scores)
    padded_scores = np.repeat((low - 1.0)[:, None], width, axis=1)
    padded_scores[row, position] = scores
    tie_rank = _first_mixed_tie_rank(row, scores, labels, lengths)
    retrieved_positive = np.bincount(row[labels > 0], minlength=nq)
    judged_positive = positive.value_counts().reindex(qids, fill_value=0).to_numpy()
    present = lengths > 0
    return _Lists(np.asarray(qids)[present], padded_labels[present], padded_scores[present],
                  lengths[present], (retrieved_positive == judged_positive)[present],
                  tie_rank[present])


def _first_mixed_tie_rank(row: np.ndarray, scores: np.ndarray, labels: np.ndarray,
                          lengths: np.ndarray) -> np.ndarray:
    """Per query, the best rank (1-based, scores descending) at which a group of equal
    scores with different labels starts; ``inf`` when no such group exists. Ordering a
    group whose labels are all equal changes no metric."""
    order = np.lexsort((labels, scores, row))
    r, s, lab = row[order], scores[order], labels[order]
    new_group = np.ones(len(r), dtype=bool)
    new_group[1:] = (r[1:] != r[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], len(r))  # exclusive, in ascending score order
    mixed = lab[starts] != lab[ends - 1]  # labels sorted within a group: min != max
    first_of_row = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    rank = lengths[r[starts]] - (ends - first_of_row[r[starts]]) + 1
    out = np.full(len(lengths), np.inf)
    np.minimum.at(out, r[starts][mixed], rank[mixed].astype(float))
    return out
