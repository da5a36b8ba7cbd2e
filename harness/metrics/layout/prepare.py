"""Validation and ragged layout: DataFrames in, sorted per-query arrays out (:func:`prepare`).

The public functions validate once here; the kernels in :mod:`harness.metrics.engine.kernels`
trust what they get. Queries are factorised to codes ``0..n_queries-1`` (sorted by qid),
rows are grouped by query and, per tie mode, ordered by score once; every metric that uses
the same tie mode shares that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.metrics.layout import background
from harness.metrics.layout.ids import (
    check_unique_pairs,
    docid_codes,
    joint_docid_codes,
    match_pairs,
    query_layout,
    same_docids,
    text_hash,
)
from harness.metrics.layout.inputs import (
    QRELS_COLUMNS,
    RUN_COLUMNS,
    align_key_dtypes,
    check_keys,
    check_labels,
    first_bad,
    numeric,
    require_frame,
)
from harness.metrics.layout.prepared import Ideal, Judgments, Prepared, level_counts
from harness.metrics.layout.qids import factorize_qid, joint_qid_codes
from harness.metrics.layout.ranking import Ranking, RankingPlan
from harness.metrics.layout.segments import group_by_query
from harness.metrics.layout.subtopics import SUBTOPIC, one_judgment_per_document

__all__ = ["Prepared", "Ranking", "Ideal", "level_counts", "prepare", "checked_scores"]


@dataclass
class _Coded:
    """The input's queries as codes ``0..len(quniq)-1``, before the evaluated ones are
    chosen: the run's query code per row, the judgments' query codes and labels, and which
    queries the run and the judgments hold."""

    quniq: Any  # query id per code
    rq: np.ndarray  # per run row
    jq: np.ndarray  # per judgment that judges (label >= 0)
    j_label: np.ndarray
    in_run: np.ndarray
    in_judged: np.ndarray
    every_judgment: np.ndarray  # labels of every judgment, for the top grade
    per_query: np.ndarray | None = None  # run rows per code (labelled runs)
    judged_per_query: np.ndarray | None = None
    r_label: np.ndarray | None = None  # labelled runs: label and judged per run row
    r_judged: np.ndarray | None = None
    run_layout: Any = None  # the duplicate check's layout of the run's rows
    pending: Any = None  # the run's duplicate check, running on the other core
    # with qrels: every judgment's query code and label, and which of them judge
    jq_all: np.ndarray | None = None
    j_label_all: np.ndarray | None = None
    keep: np.ndarray | None = None


def prepare(
    run: pd.DataFrame,
    qrels: pd.DataFrame | None,
    *,
    level: int = 1,
    nan_scores: str = "error",
    missing: str = "exclude",
    negative_labels: str = "error",
    max_label: float | None = None,
    rankings: RankingPlan | None = None,
) -> Prepared:
    """Validate ``run`` (and ``qrels``) and lay them out as ragged per-query arrays.

    The steps, each once per call: the options; the run's columns and scores (its docids
    hashed on the other core meanwhile); the qids coded, jointly with the qrels' or from
    the labelled run; the evaluated queries chosen and their rows grouped; with qrels, the
    labels joined in place. ``rankings``: the rankings the caller will ask for, planned from
    its metrics. With qrels those of all rows are computed on the other core while the run
    is joined to the qrels (a ranking needs the scores and docids, not the labels).
    """
    _check_options(nan_scores, missing, negative_labels)
    run, score, run_codes = _checked_run(run, qrels, nan_scores)
    if qrels is not None:
        qrels = require_frame(qrels, "qrels", QRELS_COLUMNS)
        check_keys(qrels, "qrels")
        j_label = numeric(qrels, "label", "qrels")
        check_labels(qrels, j_label, "qrels", negative_labels)
        subtopics = None
        if SUBTOPIC in qrels.columns:  # the intent-aware measures read them whole
            qrels, subtopics = one_judgment_per_document(qrels, j_label)
            j_label = qrels["label"].to_numpy(dtype=np.float64)
            subtopics["qid"] = align_key_dtypes(run["qid"], subtopics["qid"])[1].to_numpy()
            subtopics["docid"] = align_key_dtypes(run["docid"],
                                                  subtopics["docid"])[1].to_numpy()
        run_qid, j_qid = align_key_dtypes(run["qid"], qrels["qid"])
        run_doc, j_doc = align_key_dtypes(run["docid"], qrels["docid"])
        coded = _code_with_qrels(run_qid, j_qid, j_label)
    else:
        run_label = numeric(run, "label", "run")
        check_labels(run, run_label, "run", negative_labels)
        run_qid, run_doc = run["qid"], run["docid"]
        coded = _code_labelled_run(run, run_qid, run_label, run_codes)
    prepared, identity = _laid_out(coded, score, missing, max_label, run_qid, run_doc,
                                   qrels is None)
    pending = coded.pending
    if qrels is not None:
        prepared.judgments = Judgments(j_qid, j_doc, qrels, subtopics)
        if rankings is not None:  # ranked on the other core while the docids are joined
            prepared.rank_early(rankings.whole(prepared.mean_length))
        keep = coded.keep
        assert coded.jq_all is not None and coded.j_label_all is not None and keep is not None
        assert prepared.judged is not None  # laid out to be filled by the join
        pending = _join_labels(run, qrels, run_doc, j_doc, run_codes, coded.rq, coded.jq_all,
                               coded.j_label_all, None if keep.all() else keep,
                               len(coded.quniq), prepared.row if not identity else None,
                               prepared.label, prepared.judged, prepared.negative)
    if identity and qrels is None:  # the duplicate check laid out these very rows
        prepared.__dict__["layout"], prepared.__dict__["pos"] = coded.run_layout
    prepared.pending = pending
    return prepared


def _check_options(nan_scores: str, missing: str, negative_labels: str) -> None:
    if nan_scores not in ("error", "last"):
        raise InputError(f"nan_scores must be 'error' or 'last', got {nan_scores!r}")
    if missing not in ("exclude", "zero"):
        raise InputError(f"missing must be 'exclude' or 'zero', got {missing!r}")
    if negative_labels not in ("error", "unjudged"):
        raise InputError(
            f"negative_labels must be 'error' or 'unjudged', got {negative_labels!r}")


def _checked_run(run: pd.DataFrame, qrels: pd.DataFrame | None, nan_scores: str
                 ) -> tuple[pd.DataFrame, np.ndarray, background.Future[Any]]:
    """The run checked (columns, keys, scores), its scores (NaN as -inf under
    ``nan_scores='last'``), and its docid codes being computed on the other core (for the
    duplicate check; with qrels, for the join too) while the rest is checked."""
    cols = RUN_COLUMNS + (("label",) if qrels is None else ())
    run = require_frame(run, "run", cols)
    if qrels is not None and "label" in run.columns:
        raise InputError(
            "run has a 'label' column and qrels were given too; pass one source of labels",
            table="run", column="label")
    check_keys(run, "run")
    docids = run["docid"]
    run_codes = background.start_value(
        (lambda: docid_codes(docids)) if qrels is None else
        (lambda: text_hash(docids)), len(run))
    return run, checked_scores(run, nan_scores), run_codes


def checked_scores(run: pd.DataFrame, nan_scores: str) -> np.ndarray:
    """The run's ``score`` column as floats, checked: NaN (under ``nan_scores='error'``)
    and infinite scores are refused, naming the first such row; NaN is -inf under
    ``'last'``."""
    score = numeric(run, "score", "run")
    nan = np.isnan(score)
    if nan_scores == "error":
        first_bad(run, nan, "NaN", "score", "run")
    first_bad(run, np.isinf(score), "infinite", "score", "run")
    if nan_scores == "last" and nan.any():
        score = np.where(nan, -np.inf, score)
    return score


def _code_with_qrels(run_qid: pd.Series, j_qid: pd.Series, j_label: np.ndarray) -> _Coded:
    """Query codes shared by the run and the qrels; a negative label
    (``negative_labels='unjudged'``) judges nothing, but a query in the qrels is evaluated
    even when its judgments are all negative (trec_eval scores it 0): it counts as judged."""
    rq, jq_all, quniq = joint_qid_codes(run_qid, j_qid)
    keep = j_label >= 0
    jq, judging = (jq_all, j_label) if keep.all() else (jq_all[keep], j_label[keep])
    return _Coded(quniq=quniq, rq=rq, jq=jq, j_label=judging,
                  in_run=np.bincount(rq, minlength=len(quniq)) > 0,
                  in_judged=np.bincount(jq_all, minlength=len(quniq)) > 0,
                  every_judgment=np.asarray(judging, dtype=np.float64),
                  jq_all=jq_all, j_label_all=j_label, keep=keep)


def _code_labelled_run(run: pd.DataFrame, run_qid: pd.Series, run_label: np.ndarray,
                       run_codes: background.Future[Any]) -> _Coded:
    """Query codes of a run that holds its labels; its duplicate check starts on the other
    core (it lays out the rows by query, a layout the result reuses)."""
    rq, quniq, per_query = factorize_qid(run_qid)
    laid_out = query_layout(rq, len(quniq), per_query)

    def check_duplicates(rq: np.ndarray = rq, n: int = len(quniq)) -> None:
        rd, n_d, exact = run_codes.result()
        check_unique_pairs(run, "run", rq, rd, n, n_d, exact, laid_out)

    pending = background.start(check_duplicates, len(run))
    per_query = laid_out[0].n  # rows per query code
    judged_row = run_label >= 0
    if judged_row.all():
        r_label, jq, j_label = run_label, rq, run_label
        judged_per_query = per_query
    else:
        r_label = np.where(judged_row, run_label, 0.0)
        jq, j_label = rq[judged_row], r_label[judged_row]
        judged_per_query = np.bincount(jq, minlength=len(quniq))
    return _Coded(quniq=quniq, rq=rq, jq=jq, j_label=j_label,
                  in_run=np.ones(len(quniq), dtype=bool), in_judged=judged_per_query > 0,
                  every_judgment=np.asarray(j_label, dtype=np.float64), per_query=per_query,
                  judged_per_query=judged_per_query, r_label=r_label, r_judged=judged_row,
                  run_layout=laid_out[:2], pending=pending)


def _laid_out(c: _Coded, score: np.ndarray, missing: str, max_label: float | None,
              run_qid: pd.Series, run_doc: pd.Series, labelled: bool
              ) -> tuple[Prepared, bool]:
    """The evaluated queries' rows grouped by query code, and whether those rows are the
    run's rows in their order (``identity``). With qrels, labels are left to the join."""
    evaluated = c.in_run & c.in_judged
    if missing == "zero":
        evaluated = evaluated | (c.in_judged & ~c.in_run)
    nq = int(evaluated.sum())
    if nq == 0:
        raise InputError(
            "no query is both in the run and judged"
            + ("" if labelled else "; check that qid values match between run and qrels"))
    n_run = len(c.rq)
    remap = np.full(len(c.quniq), -1, dtype=np.int64)
    remap[evaluated] = np.arange(nq)
    all_evaluated = bool(evaluated.all())
    row = np.arange(n_run) if all_evaluated else np.flatnonzero(evaluated[c.rq])
    q = c.rq if all_evaluated else remap[c.rq[row]]
    grouping = group_by_query(q, nq)
    if grouping is not None:
        row, q = row[grouping], q[grouping]
    judged_label = np.asarray(c.j_label, dtype=np.float64)
    if all_evaluated:
        judged_q = c.jq
    else:
        jkeep = evaluated[c.jq]
        judged_q = remap[c.jq[jkeep]]
        judged_label = judged_label[jkeep]
    identity = len(row) == n_run and grouping is None
    top = float(c.every_judgment.max()) if len(c.every_judgment) else 0.0
    if labelled:
        assert c.r_label is not None and c.r_judged is not None
        label = c.r_label if identity else c.r_label[row]
        judged = c.r_judged if identity else c.r_judged[row]
        negative = None if judged.all() else ~judged  # a labelled row is judged or negative
        top = max(top, float(label.max()) if len(label) else 0.0)
    else:  # filled in place by the join; a run row's label is a judgment or 0
        label, judged = np.zeros(len(row)), np.zeros(len(row), dtype=bool)
        negative = None if c.keep is None or c.keep.all() else np.zeros(len(row), dtype=bool)
        top = max(top, 0.0)
    quniq = np.asarray(c.quniq)
    prepared = Prepared(
        qids=pd.Index(quniq[evaluated], name="qid"),
        q=q,
        row=row,
        score=score if identity else score[row],
        label=label,
        docid=run_doc.reset_index(drop=True),
        qid_values=run_qid.reset_index(drop=True),
        judged_q=judged_q,
        judged_label=judged_label,
        n_docs=c.per_query if c.per_query is not None and all_evaluated
        else np.bincount(q, minlength=nq),
        n_judged=c.judged_per_query if c.judged_per_query is not None and all_evaluated
        else np.bincount(judged_q, minlength=nq),
        missing_qids=pd.Index(quniq[c.in_judged & ~c.in_run], name="qid"),
        unjudged_qids=pd.Index(quniq[c.in_run & ~c.in_judged], name="qid"),
        max_label=top if max_label is None else float(max_label),
        judged=judged,
        negative=negative,
    )
    return prepared, identity


def _join_labels(run: pd.DataFrame, qrels: pd.DataFrame, run_doc: pd.Series,
                 j_doc: pd.Series, run_hash: background.Future[Any], rq: np.ndarray,
                 jq: np.ndarray, j_label: np.ndarray,
                 keep: np.ndarray | None, n_queries: int, row: np.ndarray | None,
                 label: np.ndarray, judged: np.ndarray, negative: np.ndarray | None = None
                 ) -> background.Future[None] | None:
    """Join the run to the qrels on (query, docid): each grouped row's label (0 where
    unjudged), whether it is judged and whether its label is negative are written into
    ``label``, ``judged`` and ``negative`` (None: no judgment is negative) (``row``:
    the run row of each grouped row, None when they are the run's rows). ``run_hash``: the
    run's docids hashed as they are (the same strings as ``run_doc`` when text). ``keep``: the
    qrels rows that judge (None: all). Starts the run's duplicate check on the other core
    and returns its future.

    The qrels need no check of their own: the join's keys hold the query exactly and the
    docid's code, so unique keys mean unique (qid, docid) pairs; only when two keys are
    equal is the exact check run (a duplicate, or two docids sharing a hash)."""
    n_run = len(run_doc)
    both = pd.concat([run_doc, j_doc], ignore_index=True)
    rd, jd, n_d, exact = joint_docid_codes(run_doc, j_doc, both, run_hash.result())

    def check_duplicates() -> None:  # on the other core while metrics are computed
        check_unique_pairs(run, "run", rq, rd, n_queries, n_d, exact)

    pending = background.start(check_duplicates, len(run))
    every = np.arange(len(jq))
    match = match_pairs(rq, rd, jq, jd, n_d, exact)
    if match is not None and not exact and not same_docids(run_doc, j_doc, match, every):
        match = None  # two docids share a 64-bit hash: match on exact codes
    if match is None:
        check_unique_pairs(qrels, "qrels", jq, jd, n_queries, n_d, exact)
        dcodes, duniq = pd.factorize(both)
        match = match_pairs(rq, dcodes[:n_run], jq, dcodes[n_run:], len(duniq))
        assert match is not None  # unique pairs of exact codes below 2**62 never collide
    hit, position = match  # position -1: no judgment, read as the last of these
    labels = np.append(np.asarray(j_label, dtype=np.float64), 0.0)
    if keep is not None:  # a negative label (negative_labels='unjudged') judges nothing
        hit = np.append(keep, False)[position]
        labels[:-1][~keep] = 0.0
    r_label = labels[position]
    if row is None:
        label[:], judged[:] = r_label, hit
    else:
        np.take(r_label, row, out=label)
        np.take(hit, row, out=judged)
    if keep is not None and negative is not None:
        below = np.append(~keep, False)[position]
        negative[:] = below if row is None else below[row]
    return pending
