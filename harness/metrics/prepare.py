"""Validation and ragged layout: DataFrames in, sorted per-query arrays out.

The public functions validate once here; the kernels in :mod:`harness.metrics.kernels`
trust what they get. Queries are factorised to codes ``0..n_queries-1`` (sorted by qid),
rows are grouped by query and, per tie mode, ordered by score once; every metric that uses
the same tie mode shares that order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError

__all__ = ["Prepared", "Ranking", "Ideal", "prepare"]

RUN_COLUMNS = ("qid", "docid", "score")
QRELS_COLUMNS = ("qid", "docid", "label")


def _require_frame(df: Any, table: str, columns: tuple[str, ...]) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"{table} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(
            f"{table} is missing column(s) {missing}; it has {list(map(str, df.columns))}",
            table=table, column=missing[0],
        )
    if len(df) == 0:
        raise InputError(f"{table} is empty", table=table)
    return df


def _numeric(df: pd.DataFrame, column: str, table: str) -> np.ndarray:
    series = df[column]
    if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
        coerced = pd.to_numeric(series, errors="coerce") if not pd.api.types.is_bool_dtype(
            series) else None
        if coerced is None:
            raise InputError(f"values must be numeric, got booleans", table=table, column=column)
        bad = coerced.isna() & series.notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"values must be numeric, got {series.iloc[row]!r}", table=table,
                column=column, qid=_qid_at(df, row), row=row,
            )
        series = coerced
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def _qid_at(df: pd.DataFrame, row: int) -> Any:
    return df["qid"].iloc[row] if "qid" in df.columns else None


def _first_bad(df: pd.DataFrame, mask: np.ndarray, what: str, column: str, table: str,
               values: np.ndarray) -> None:
    if mask.any():
        row = int(np.flatnonzero(mask)[0])
        raise InputError(
            f"{int(mask.sum())} {what} value(s), first {values[row]!r}", table=table,
            column=column, qid=_qid_at(df, row), row=row,
        )


def _check_keys(df: pd.DataFrame, table: str) -> None:
    for column in ("qid", "docid"):
        na = df[column].isna().to_numpy()
        _first_bad(df, na, "missing", column, table, df[column].to_numpy())


def _align_key_dtypes(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Same kind of key on both sides: if one is numeric and the other is not, use text."""
    if pd.api.types.is_numeric_dtype(a) != pd.api.types.is_numeric_dtype(b):
        return a.astype(str), b.astype(str)
    return a, b


@dataclass
class Ranking:
    """Rows of the run in ranked order for one tie mode (see :func:`Prepared.ranking`)."""

    perm: np.ndarray  # row indices of Prepared's run arrays, in ranked order
    q: np.ndarray  # query code per ranked row
    pos: np.ndarray  # 0-based rank within the query
    label: np.ndarray  # label per ranked row (0 where unjudged)
    # tie groups (only for ties="average"): group id per row, and per group start/size
    gid: np.ndarray | None = None
    gstart: np.ndarray | None = None
    gsize: np.ndarray | None = None

    def group_mean(self, values: np.ndarray) -> np.ndarray:
        """Per row, the mean of ``values`` over its tie group (identity without groups)."""
        if self.gid is None:
            return values
        sums = np.bincount(self.gid, weights=values, minlength=len(self.gsize))
        return (sums / self.gsize)[self.gid]

    def group_sum(self, values: np.ndarray) -> np.ndarray:
        """Per row, the sum of ``values`` over its tie group."""
        if self.gid is None:
            return values
        return np.bincount(self.gid, weights=values, minlength=len(self.gsize))[self.gid]


@dataclass
class Ideal:
    """Per query, the labels that form the ideal ranking (unsorted), by query code."""

    q: np.ndarray
    label: np.ndarray


@dataclass
class Prepared:
    """Validated input in ragged layout; orders and ideals are computed once and cached."""

    qids: pd.Index  # evaluated query ids, sorted; position = query code
    q: np.ndarray  # query code per run row (rows grouped by nothing in particular)
    score: np.ndarray  # sort key: score with NaN mapped to -inf when nan_scores='last'
    label: np.ndarray
    docid: pd.Series  # docids of the run rows (for docid ties and random hashing)
    qid_values: pd.Series  # qid per run row (for random hashing)
    judged_q: np.ndarray  # query code per judged label (qrels or labelled run)
    judged_label: np.ndarray
    n_docs: np.ndarray
    n_judged: np.ndarray
    missing_qids: pd.Index  # judged queries absent from the run
    unjudged_qids: pd.Index  # run queries with no judgment
    max_label: float
    _rankings: dict[tuple[str, int], Ranking] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    @property
    def max_len(self) -> int:
        longest = int(self.n_docs.max()) if len(self.n_docs) else 0
        judged = int(np.bincount(self.judged_q).max()) if len(self.judged_q) else 0
        return max(longest, judged, 1)

    def ideal(self, mode: str) -> Ideal:
        if mode == "judged":
            return Ideal(self.judged_q, self.judged_label)
        return Ideal(self.q, self.label)

    def ranking(self, ties: str, seed: int = 0) -> Ranking:
        key = (ties, seed if ties == "random" else 0)
        if key not in self._rankings:
            self._rankings[key] = self._rank(ties, seed)
        return self._rankings[key]

    def _rank(self, ties: str, seed: int) -> Ranking:
        neg = -self.score
        if ties in ("average", "input"):
            perm = np.lexsort((neg, self.q))
        elif ties == "docid":
            codes, _ = pd.factorize(self.docid.astype(str), sort=True)
            perm = np.lexsort((-codes, neg, self.q))
        elif ties == "optimistic":
            perm = np.lexsort((-self.label, neg, self.q))
        elif ties == "pessimistic":
            perm = np.lexsort((self.label, neg, self.q))
        elif ties == "random":
            perm = np.lexsort((_seeded_hash(self.qid_values, self.docid, seed), neg, self.q))
        else:  # pragma: no cover - Metric validates ties
            raise AssertionError(ties)
        q = self.q[perm]
        starts = np.concatenate(([0], np.cumsum(self.n_docs)[:-1]))
        pos = np.arange(len(q), dtype=np.int64) - starts[q]
        ranking = Ranking(perm=perm, q=q, pos=pos, label=self.label[perm])
        if ties == "average":
            s = neg[perm]
            boundary = np.empty(len(q), dtype=bool)
            boundary[0] = True
            boundary[1:] = (q[1:] != q[:-1]) | (s[1:] != s[:-1])
            gid = np.cumsum(boundary) - 1
            gstart = np.flatnonzero(boundary)
            gsize = np.diff(np.append(gstart, len(q)))
            if len(gsize) < len(q):  # some ties: keep the groups
                ranking.gid, ranking.gstart, ranking.gsize = gid, gstart, gsize
        return ranking


def _seeded_hash(qid: pd.Series, docid: pd.Series, seed: int) -> np.ndarray:
    """A per-row pseudo-random key that depends on (seed, qid, docid) only."""
    hash_key = f"{seed:016d}"[-16:]
    hq = pd.util.hash_array(np.asarray(qid, dtype=object), hash_key=hash_key)
    hd = pd.util.hash_array(np.asarray(docid, dtype=object), hash_key=hash_key)
    with np.errstate(over="ignore"):
        return (hd ^ (hq * np.uint64(0x9E3779B97F4A7C15))).astype(np.uint64)


def _duplicates(q: np.ndarray, d: np.ndarray, n_docs: int) -> np.ndarray:
    """Boolean mask of rows whose (q, d) pair occurred on an earlier row."""
    key = q.astype(np.int64) * np.int64(max(n_docs, 1)) + d
    order = np.argsort(key, kind="stable")
    sk = key[order]
    dup_sorted = np.zeros(len(key), dtype=bool)
    dup_sorted[1:] = sk[1:] == sk[:-1]
    mask = np.zeros(len(key), dtype=bool)
    mask[order[dup_sorted]] = True
    return mask


def prepare(
    run: pd.DataFrame,
    qrels: pd.DataFrame | None,
    *,
    level: int = 1,
    nan_scores: str = "error",
    missing: str = "exclude",
    negative_labels: str = "error",
    max_label: float | None = None,
) -> Prepared:
    """Validate ``run`` (and ``qrels``) and lay them out as ragged per-query arrays."""
    if nan_scores not in ("error", "last"):
        raise InputError(f"nan_scores must be 'error' or 'last', got {nan_scores!r}")
    if missing not in ("exclude", "zero"):
        raise InputError(f"missing must be 'exclude' or 'zero', got {missing!r}")
    if negative_labels not in ("error", "unjudged"):
        raise InputError(
            f"negative_labels must be 'error' or 'unjudged', got {negative_labels!r}")
    cols = RUN_COLUMNS + (("label",) if qrels is None else ())
    run = _require_frame(run, "run", cols)
    if qrels is not None and "label" in run.columns:
        raise InputError(
            "run has a 'label' column and qrels were given too; pass one source of labels",
            table="run", column="label")
    _check_keys(run, "run")
    score = _numeric(run, "score", "run")
    nan = np.isnan(score)
    if nan_scores == "error":
        _first_bad(run, nan, "NaN", "score", "run", score)
    _first_bad(run, np.isinf(score), "infinite", "score", "run", score)
    if nan_scores == "last" and nan.any():
        score = np.where(nan, -np.inf, score)

    if qrels is not None:
        qrels = _require_frame(qrels, "qrels", QRELS_COLUMNS)
        _check_keys(qrels, "qrels")
        j_label = _numeric(qrels, "label", "qrels")
        _check_labels(qrels, j_label, "qrels", negative_labels)
        run_qid, j_qid = _align_key_dtypes(run["qid"], qrels["qid"])
        run_doc, j_doc = _align_key_dtypes(run["docid"], qrels["docid"])
    else:
        run_label = _numeric(run, "label", "run")
        _check_labels(run, run_label, "run", negative_labels)
        run_qid, run_doc = run["qid"], run["docid"]

    n_run = len(run)
    if qrels is not None:
        all_q = pd.concat([run_qid, j_qid], ignore_index=True)
        qcodes, quniq = pd.factorize(all_q, sort=True)
        rq, jq = qcodes[:n_run], qcodes[n_run:]
        dcodes, duniq = pd.factorize(pd.concat([run_doc, j_doc], ignore_index=True))
        rd, jd = dcodes[:n_run], dcodes[n_run:]
        n_d = len(duniq)
        _raise_duplicates(run, rq, rd, n_d, "run")
        _raise_duplicates(qrels, jq, jd, n_d, "qrels")
        keep = j_label >= 0  # negative labels (negative_labels='unjudged') are unjudged
        if not keep.all():
            jq, jd, j_label = jq[keep], jd[keep], j_label[keep]
        # label of each run row from the qrels (0 and unjudged where absent)
        jkey = jq.astype(np.int64) * n_d + jd
        order = np.argsort(jkey)
        sk = jkey[order]
        rkey = rq.astype(np.int64) * n_d + rd
        idx = np.minimum(np.searchsorted(sk, rkey), max(len(sk) - 1, 0))
        hit = sk[idx] == rkey if len(sk) else np.zeros(n_run, dtype=bool)
        r_label = np.where(hit, np.asarray(j_label)[order[idx]], 0.0)
        in_run = np.bincount(rq, minlength=len(quniq)) > 0
        in_judged = np.bincount(jq, minlength=len(quniq)) > 0
    else:
        qcodes, quniq = pd.factorize(run_qid, sort=True)
        rq = qcodes
        dcodes, duniq = pd.factorize(run_doc)
        _raise_duplicates(run, rq, dcodes, len(duniq), "run")
        judged_row = run_label >= 0
        r_label = np.where(judged_row, run_label, 0.0)
        jq, j_label = rq[judged_row], r_label[judged_row]
        in_run = np.ones(len(quniq), dtype=bool)
        in_judged = np.bincount(jq, minlength=len(quniq)) > 0

    evaluated = in_run & in_judged
    if missing == "zero":
        evaluated = evaluated | (in_judged & ~in_run)
    remap = np.full(len(quniq), -1, dtype=np.int64)
    remap[evaluated] = np.arange(int(evaluated.sum()))
    row_keep = evaluated[rq]
    q = remap[rq[row_keep]]
    jkeep = evaluated[jq]
    judged_q = remap[jq[jkeep]]
    judged_label = np.asarray(j_label, dtype=np.float64)[jkeep]
    nq = int(evaluated.sum())
    if nq == 0:
        raise InputError(
            "no query is both in the run and judged"
            + ("" if qrels is None else "; check that qid values match between run and qrels")
        )
    labels_all = np.concatenate([judged_label, r_label[row_keep]])
    top = float(labels_all.max()) if max_label is None else float(max_label)
    sel = row_keep if not row_keep.all() else slice(None)
    return Prepared(
        qids=pd.Index(quniq[evaluated], name="qid"),
        q=q,
        score=score[sel],
        label=r_label[sel],
        docid=run_doc[sel].reset_index(drop=True) if not isinstance(sel, slice)
        else run_doc.reset_index(drop=True),
        qid_values=run_qid[sel].reset_index(drop=True) if not isinstance(sel, slice)
        else run_qid.reset_index(drop=True),
        judged_q=judged_q,
        judged_label=judged_label,
        n_docs=np.bincount(q, minlength=nq),
        n_judged=np.bincount(judged_q, minlength=nq),
        missing_qids=pd.Index(quniq[in_judged & ~in_run], name="qid"),
        unjudged_qids=pd.Index(quniq[in_run & ~in_judged], name="qid"),
        max_label=top,
    )


def _check_labels(df: pd.DataFrame, labels: np.ndarray, table: str, negative: str) -> None:
    _first_bad(df, np.isnan(labels), "NaN", "label", table, labels)
    _first_bad(df, np.isinf(labels), "infinite", "label", table, labels)
    if negative == "error":
        _first_bad(df, labels < 0, "negative", "label", table, labels)


def _raise_duplicates(df: pd.DataFrame, q: np.ndarray, d: np.ndarray, n_d: int,
                      table: str) -> None:
    dup = _duplicates(q, d, n_d)
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise InputError(
            f"duplicate (qid, docid) pair: docid {df['docid'].iloc[row]!r} appears more than "
            f"once ({int(dup.sum())} duplicate row(s) in all)",
            table=table, column="docid", qid=df["qid"].iloc[row], row=row,
        )
