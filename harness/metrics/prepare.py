"""Validation and ragged layout: DataFrames in, sorted per-query arrays out.

The public functions validate once here; the kernels in :mod:`harness.metrics.kernels`
trust what they get. Queries are factorised to codes ``0..n_queries-1`` (sorted by qid),
rows are grouped by query and, per tie mode, ordered by score once; every metric that uses
the same tie mode shares that order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError, plain
from harness.metrics import background
from harness.metrics.quicksort_ties import RULES as QUICKSORT_RULES
from harness.metrics.quicksort_ties import quicksort_ties_perm
from harness.metrics.segments import Layout, duplicate_within, group_by_query, segment_argsort

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
    if column == "label" and pd.api.types.is_bool_dtype(series) and not series.isna().any():
        return series.to_numpy(dtype=np.float64)  # binary judgments: True 1, False 0
    if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
        coerced = pd.to_numeric(series, errors="coerce") if not pd.api.types.is_bool_dtype(
            series) else None
        if coerced is None:
            raise InputError("values must be numeric, got booleans", table=table, column=column)
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


def _first_bad(df: pd.DataFrame, mask: np.ndarray, what: str, column: str, table: str) -> None:
    if mask.any():
        row = int(np.flatnonzero(mask)[0])
        raise InputError(
            f"{int(mask.sum())} {what} value(s), first {plain(df[column].iloc[row])!r}", table=table,
            column=column, qid=_qid_at(df, row), row=row,
        )


def _check_keys(df: pd.DataFrame, table: str) -> None:
    for column in ("qid", "docid"):
        _first_bad(df, df[column].isna().to_numpy(), "missing", column, table)
        _check_one_key_type(df[column], column, table)


def _check_one_key_type(series: pd.Series, column: str, table: str) -> None:
    """Refuse an id column mixing text with other types: ``1`` and ``"1"`` would be two
    different ids that print alike."""
    if series.dtype != object or pd.api.types.infer_dtype(series, skipna=True) not in (
            "mixed", "mixed-integer"):
        return
    kinds = series.map(lambda v: type(v).__name__).to_numpy()
    first = {}
    for row, kind in enumerate(kinds):
        first.setdefault(kind, row)
        if len(first) > 1:
            break
    (a, ra), (b, rb) = list(first.items())[:2]
    raise InputError(
        f"ids of more than one type in one column: {series.iloc[ra]!r} ({a}) at row {ra} "
        f"and {series.iloc[rb]!r} ({b}) at row {rb}; equal-looking ids of different types "
        f"would be different queries or documents. Convert the column to one type, e.g. "
        f"df[{column!r}] = df[{column!r}].astype(str)", table=table, column=column, row=rb)


def _align_key_dtypes(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Same kind of key on both sides: if one is numeric and the other is not, use text."""
    if pd.api.types.is_numeric_dtype(a) != pd.api.types.is_numeric_dtype(b):
        return a.astype(str), b.astype(str)
    return a, b


@dataclass
class Ranking:
    """Rows in ranked order for one tie mode (see :meth:`Prepared.ranking`).

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
    _heads: dict[int, np.ndarray] = field(default_factory=dict)
    _tops: dict[int, tuple[np.ndarray, ...]] = field(default_factory=dict)

    @cached_property
    def label(self) -> np.ndarray:
        """Label per ranked row (0 where unjudged)."""
        return self.grouped_label[self.perm]

    def head(self, k: int | None) -> np.ndarray | None:
        """Indices of the ranked rows within the top ``k`` (None: all rows)."""
        if k is None:
            return None
        if k not in self._heads:
            self._heads[k] = np.flatnonzero(self.pos < k)
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
    _relevant: dict[int, np.ndarray] = field(default_factory=dict)
    pending: Any = None  # a validation still running on the other core (see wait())
    judged: np.ndarray | None = None  # per grouped row: is its document judged (bpref, Judged)

    def wait(self) -> None:
        """Return once every validation of the input is done; raise its error, if any."""
        pending, self.pending = self.pending, None
        background.wait(pending)

    @property
    def n_queries(self) -> int:
        return len(self.qids)

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

    def relevant_counts(self, level: int) -> np.ndarray:
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

    def ideal(self, mode: str) -> Ideal:
        if mode == "judged":
            return Ideal(self.judged_q, self.judged_label)
        return Ideal(self.q, self.label)

    def ranking(self, ties: str, seed: int = 0, top: int | None = None) -> Ranking:
        """Rows ranked under a tie rule. With ``top``, only the rows that can reach the top
        ``top`` positions are ranked (see :meth:`contenders`): exact for every metric cut at
        ``k <= top``, for every tie rule."""
        if ties == "docid" and self.float32 is not self:  # trec_eval compares float32
            return self.float32.ranking(ties, seed, top)
        if top is not None and ties not in QUICKSORT_RULES:  # there, every row moves ties
            return self.contenders(top).ranking(ties, seed)
        key = (ties, seed if ties == "random" else 0)
        if key not in self._rankings:
            self._rankings[key] = self._rank(ties, seed)
        return self._rankings[key]

    @cached_property
    def float32(self) -> Prepared:
        """These rows with each score rounded to float32, as trec_eval reads a run's scores
        (so 0.5 and 0.5 + 1e-8 tie there): ``ties='docid'`` ranks on them. Itself when no
        score changes."""
        rounded = self.score.astype(np.float32).astype(np.float64)
        if np.array_equal(rounded, self.score):
            return self
        twin = replace(self, score=rounded, _rankings={}, _contenders={}, _relevant={},
                       pending=None)
        twin.__dict__["layout"], twin.__dict__["pos"] = self.layout, self.pos
        twin.__dict__["float32"] = twin
        return twin

    def contenders(self, top: int) -> Prepared:
        """The rows scoring at least their query's ``top``-th highest score.

        Every document that any tie rule can place in the top ``top`` is among them, and so
        is every member of a tie group reaching into the top ``top``; rows above keep their
        ranks. Selected per query with :func:`numpy.partition` on the padded matrices.
        """
        if top in self._contenders:
            return self._contenders[top]
        neg = -self.score
        threshold = np.full(self.n_queries, np.inf)
        total = self.layout.total
        for qidx, width, rows, flat, _ in self.layout.buckets:
            if width <= top:
                continue
            m = np.full(len(qidx) * width, np.inf)
            m[flat] = neg if len(rows) == total else neg[rows]
            m = m.reshape(len(qidx), width)
            m.partition(top - 1, axis=1)  # in place: the matrix is ours
            threshold[qidx] = m[:, top - 1]
        keep = np.flatnonzero(neg <= threshold[self.q])
        sub = Prepared(
            qids=self.qids, q=self.q[keep], row=self.row[keep], score=self.score[keep],
            label=self.label[keep], docid=self.docid, qid_values=self.qid_values,
            judged_q=self.judged_q, judged_label=self.judged_label,
            n_docs=np.bincount(self.q[keep], minlength=self.n_queries),
            n_judged=self.n_judged, missing_qids=self.missing_qids,
            unjudged_qids=self.unjudged_qids, max_label=self.max_label,
            judged=None if self.judged is None else self.judged[keep])
        self._contenders[top] = sub
        return sub

    def _rank(self, ties: str, seed: int) -> Ranking:
        neg = -self.score
        if ties == "docid":
            return self._rank_docid()
        if ties in QUICKSORT_RULES:
            perm = quicksort_ties_perm(ties, self.ranking("input").perm,
                                       self.ranking("average"), self.q, neg, self.starts,
                                       self.n_docs)
            return Ranking(perm=perm, q=self.q, pos=self.pos, grouped_label=self.label,
                           n=self.n_docs)
        if ties in ("input", "optimistic", "pessimistic"):
            # reorder only within the tie groups of the score order: a stable sort on
            # (group, secondary key), which is nearly sorted already, so timsort is ~linear
            base = self.ranking("average")
            if base.gid is None:  # no ties: every rule gives the score order
                return Ranking(perm=base.perm, q=self.q, pos=self.pos, grouped_label=self.label,
                               n=self.n_docs)
            if ties == "input":
                second = base.perm
            else:
                codes = _label_codes(self.label)
                second = (codes if ties == "pessimistic" else codes.max() - codes)[base.perm]
            span = np.int64(int(second.max()) + 1)
            order = np.argsort(base.gid.astype(np.int64) * span + second, kind="stable")
            return Ranking(perm=base.perm[order], q=self.q, pos=self.pos,
                           grouped_label=self.label, n=self.n_docs)
        if ties == "average":
            perm = segment_argsort(self.layout, [neg], stable=False)
        else:
            if ties == "random":
                second = _seeded_hash(self.qid_values, self.docid, seed)[self.row]
            else:  # pragma: no cover - Metric validates ties
                raise AssertionError(ties)
            perm = segment_argsort(self.layout, [second, neg], stable=True)
        ranking = Ranking(perm=perm, q=self.q, pos=self.pos, grouped_label=self.label,
                          n=self.n_docs)
        if ties == "average" and len(perm):
            s = neg[perm]
            boundary = np.empty(len(perm), dtype=bool)
            boundary[0] = True
            np.not_equal(s[1:], s[:-1], out=boundary[1:])
            boundary[self.starts[self.n_docs > 0]] = True  # a query starts a group
            gstart = np.flatnonzero(boundary)
            if len(gstart) < len(perm):  # some ties: keep the groups
                gsize = np.diff(np.append(gstart, len(perm)))
                ranking.gid = np.repeat(np.arange(len(gstart)), gsize)
                ranking.gstart = gstart
                ranking.gsize = gsize
        return ranking


    def _rank_docid(self) -> Ranking:
        """Score descending, then docid descending as strings (trec_eval's order).

        Only the rows of tie groups of the score order are looked at: their docids are
        ranked among themselves and each group is reordered in place, so untied rows cost
        nothing beyond the score sort."""
        base = self.ranking("average")
        if base.gid is None:
            return Ranking(perm=base.perm, q=self.q, pos=self.pos, grouped_label=self.label,
                           n=self.n_docs)
        tied = np.flatnonzero(base.gsize[base.gid] > 1)  # positions, group by group
        import pyarrow as pa
        import pyarrow.compute as pc

        docids = self.docid.take(self.row[base.perm[tied]])
        if not isinstance(docids.dtype, pd.StringDtype):
            docids = docids.astype(str)
        # within each group, docid descending as strings (UTF-8 bytes order as code points)
        table = pa.table({"group": base.gid[tied], "docid": pa.array(docids)})
        order = pc.sort_indices(table, sort_keys=[("group", "ascending"),
                                                  ("docid", "descending")]).to_numpy()
        perm = base.perm.copy()
        perm[tied] = base.perm[tied[order]]
        return Ranking(perm=perm, q=self.q, pos=self.pos, grouped_label=self.label,
                       n=self.n_docs)


#: Integer labels below this are counted per grade (:func:`level_counts`) instead of sorted.
MAX_LEVELS = 64


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


def _duplicates(q: np.ndarray, d: np.ndarray, n_docs: int) -> np.ndarray:
    """Boolean mask of rows whose (q, d) pair occurred on an earlier row."""
    order = np.lexsort((d, q))  # stable: the first occurrence keeps its place
    sq, sd = q[order], d[order]
    dup_sorted = np.zeros(len(q), dtype=bool)
    dup_sorted[1:] = (sq[1:] == sq[:-1]) & (sd[1:] == sd[:-1])
    mask = np.zeros(len(q), dtype=bool)
    mask[order[dup_sorted]] = True
    return mask


def _joint_qid_codes(run_qid: pd.Series, j_qid: pd.Series
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes by sorted qid of the run's and the qrels' qids over both, and the uniques.
    Tables whose rows come grouped by query are coded each on its own and their few
    uniques merged; otherwise both are factorised together."""
    run_coded, j_coded = _factorize_qid(run_qid), _factorize_qid(j_qid)
    if run_coded[2] is None or j_coded[2] is None:
        all_q = pd.concat([run_qid, j_qid], ignore_index=True)
        codes, uniques = pd.factorize(all_q, sort=True)
        return codes[:len(run_qid)], codes[len(run_qid):], np.asarray(uniques)
    heads = np.concatenate([run_coded[1], j_coded[1]])
    codes, uniques = pd.factorize(pd.Series(heads, dtype=run_qid.dtype), sort=True)
    split = len(run_coded[1])
    return codes[:split][run_coded[0]], codes[split:][j_coded[0]], np.asarray(uniques)


def _joint_docid_codes(run_doc: pd.Series, j_doc: pd.Series, both: pd.Series
                       ) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Docid codes of the run and the qrels that agree between them: (run codes, qrels
    codes, code range, exact). Text columns are hashed each in place when both get the
    64-bit hash; otherwise ``both`` (the two columns concatenated) is coded at once."""
    hashed = _arrow_string_hash(run_doc), _arrow_string_hash(j_doc)
    if all(h is not None and not h[1] for h in hashed):
        return hashed[0][0], hashed[1][0], 0, False  # type: ignore[index]
    codes, n_d, exact = _docid_codes(both)
    return codes[:len(run_doc)], codes[len(run_doc):], n_d, exact


def _factorize_qid(qid: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Codes (by sorted qid), uniques and, when known on the way, the rows per code; fast
    when integer qids are already sorted or text qids come grouped."""
    values = qid.to_numpy() if pd.api.types.is_integer_dtype(qid) else None
    if values is not None and len(values) > 1 and bool(np.all(values[1:] >= values[:-1])):
        change = np.empty(len(values), dtype=bool)
        change[0] = True
        np.not_equal(values[1:], values[:-1], out=change[1:])
        first = np.flatnonzero(change)
        counts = np.diff(np.append(first, len(values)))
        return np.repeat(np.arange(len(first)), counts), values[first], counts
    grouped = _grouped_text_codes(qid)
    if grouped is not None:
        return grouped
    codes, uniques = pd.factorize(qid, sort=True)
    return codes, np.asarray(uniques), None


def _grouped_text_codes(qid: pd.Series
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Codes by sorted qid of an Arrow-backed text column whose rows come grouped by query
    (each qid in one run of rows, as runs and qrels files are written), from the runs'
    boundaries: one pass of adjacent comparisons instead of a hash table of every row.
    None when the column is not Arrow text or a qid comes back after another."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = getattr(qid.array, "_pa_array", None)
    if array is None or len(qid) < 2 or not pa.types.is_string(array.type) and \
            not pa.types.is_large_string(array.type):
        return None
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if array.null_count:
        return None
    change = pc.not_equal(array[1:], array[:-1]).to_numpy(zero_copy_only=False)
    first = np.flatnonzero(np.concatenate(([True], change)))
    heads = array.take(pa.array(first))
    if pc.count_distinct(heads).as_py() != len(heads):  # a qid in two places: not grouped
        return None
    order = pc.sort_indices(heads).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    counts = np.diff(np.append(first, len(qid)))
    return (np.repeat(rank, counts), np.asarray(heads.take(pa.array(order)).to_pylist(),
                                                dtype=object), counts[order])


def _docid_codes(docid: pd.Series) -> tuple[np.ndarray, int, bool]:
    """Codes for the duplicate check: (codes, code range, exact).

    Non-negative integer docids are their own codes. Arrow-backed strings get a 64-bit hash
    read straight from the Arrow buffers (equal strings, equal codes; ``exact`` is False
    because unequal strings may collide, so a duplicate it shows is re-checked exactly).
    Anything else is factorised.
    """
    if pd.api.types.is_integer_dtype(docid) and len(docid):
        values = docid.to_numpy(dtype=np.int64)
        low, high = int(values.min()), int(values.max())
        if low >= 0 and high < (1 << 40):
            return values, high + 1, True
    hashed = _arrow_string_hash(docid)
    if hashed is not None:
        codes, exact = hashed
        return codes, 0, exact
    codes, uniques = pd.factorize(docid)
    return codes, len(uniques), True


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _arrow_string_hash(docid: pd.Series) -> tuple[np.ndarray, bool] | None:
    """Codes of an Arrow-backed string column read from its buffers: (codes, exact).

    Strings of at most 8 bytes without NUL bytes are their zero-padded bytes as one int64,
    and strings of at most 7 bytes get their length in the top byte: exact codes. Longer ones
    get a 64-bit hash (equal strings, equal codes). None when the column is not Arrow-backed
    text."""
    import pyarrow as pa

    if not isinstance(docid.dtype, pd.StringDtype) and not (
            isinstance(docid.dtype, pd.ArrowDtype) and pa.types.is_string(
                docid.dtype.pyarrow_dtype)):
        return None
    try:
        arr = pa.array(docid)
    except (TypeError, pa.ArrowException):
        return None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count or not (pa.types.is_string(arr.type) or pa.types.is_large_string(
            arr.type)):
        return None
    _, off_buf, data_buf = arr.buffers()
    off_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(off_buf, dtype=off_type)[arr.offset: arr.offset + len(arr) + 1]
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if len(lengths) else 0
    if longest > 256:
        return None
    words = -(-longest // 8)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0,
                                                                                      np.uint8)
    if longest > 8 and int(lengths.min()) == longest:  # one length: rows of a byte matrix
        return _fixed_width_hash(data[int(offsets[0]): int(offsets[-1])], longest), False
    padded = np.zeros(int(offsets[-1]) + 8 * words + 8, dtype=np.uint8)
    padded[: int(offsets[-1]) - int(offsets[0])] = data[int(offsets[0]): int(offsets[-1])]
    window = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    start = offsets[:-1] - offsets[0]
    if longest <= 8:
        left = lengths.astype(np.uint64)
        full = np.uint64(0xFFFFFFFFFFFFFFFF)
        shift = np.minimum(left, np.uint64(7)) * np.uint64(8)
        mask = np.where(left >= 8, full, (np.uint64(1) << shift) - np.uint64(1))
        word = window[start] & mask
        if padded[: int(offsets[-1]) - int(offsets[0])].all():  # no NUL byte
            # exact: without NUL bytes a string is its zero-padded bytes (and never the
            # int64-max padding of the duplicate check: UTF-8 has no 0xFF byte)
            return word.view(np.int64), True
        if longest <= 7:  # exact with NULs too: the length goes above the bytes
            return (word | (left << np.uint64(56))).view(np.int64), True
    # a 64-bit hash of each string: its length, then its 8-byte words, the last one read
    # as the string's last 8 bytes (overlapping the word before), so no read crosses the
    # string's end and no word needs a mask; strings under 8 bytes are one masked word.
    # A string mixes in its own number of words only, so its hash does not depend on the
    # other strings of the column (a run and its qrels, hashed apart, agree)
    h = lengths.astype(np.uint64) * _MIX
    short = lengths < 8
    short_mask = None
    if short.any():
        shift = lengths.clip(0, 7).astype(np.uint64) * np.uint64(8)
        short_mask = np.where(short, (np.uint64(1) << shift) - np.uint64(1),
                              np.uint64(0xFFFFFFFFFFFFFFFF))
    last = np.maximum(start + lengths - 8, start)
    with np.errstate(over="ignore"):
        for j in range(words):
            word = window[np.minimum(start + 8 * j, last)]
            if short_mask is not None and j == 0:
                word &= short_mask
            mixed = h ^ word
            mixed *= _MIX
            mixed ^= mixed >> np.uint64(29)
            h = mixed if j == 0 else np.where(lengths > 8 * j, mixed, h)
    return h.view(np.int64), False


def _fixed_width_hash(data: np.ndarray, width: int) -> np.ndarray:
    """The hash :func:`_arrow_string_hash` gives strings of one length ``width`` > 8, read
    from the rows of their byte matrix: word j is bytes ``min(8j, width-8)`` onwards."""
    n = len(data) // width
    h = np.full(n, np.uint64(width)) * _MIX
    with np.errstate(over="ignore"):
        for j in range(-(-width // 8)):
            start = min(8 * j, width - 8)
            # the 8 bytes at ``start`` of every row, read in place (unaligned, strided)
            h ^= np.ndarray(shape=(n,), dtype="<u8", buffer=data, offset=start,
                            strides=(width,))
            h *= _MIX
            h ^= h >> np.uint64(29)
    return h.view(np.int64)


def _query_layout(q: np.ndarray, n_queries: int, counts: np.ndarray | None = None
                  ) -> tuple[Layout, np.ndarray, np.ndarray | None]:
    """Rows laid out by query: the layout, each row's position in its query, and the
    permutation grouping the rows (None when they already are). ``counts``: the rows per
    query, when known."""
    grouping = group_by_query(q, n_queries)
    gq = q if grouping is None else q[grouping]
    if counts is None:
        counts = np.bincount(gq, minlength=n_queries)
    starts = np.cumsum(counts) - counts
    pos = np.arange(len(gq), dtype=np.int64) - starts[gq]
    return Layout.of(starts, counts, gq, pos), pos, grouping


def _check_unique_pairs(df: pd.DataFrame, table: str, q: np.ndarray, d: np.ndarray,
                        n_queries: int, n_docids: int, exact: bool = True,
                        laid_out: tuple[Layout, np.ndarray, np.ndarray | None] | None = None
                        ) -> tuple[Layout, np.ndarray]:
    """Raise on a duplicate (qid, docid): a fast per-query test, then the exact row. With
    inexact codes (hashes), a duplicate found is confirmed on factorised docids first."""
    layout, pos, grouping = laid_out or _query_layout(q, n_queries)
    gd = d if grouping is None else d[grouping]
    if duplicate_within(layout, gd):
        if not exact:
            d, uniques = pd.factorize(df["docid"])
            n_docids = len(uniques)
        _raise_duplicates(df, q, d, n_docids, table)
    return layout, pos


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
        _first_bad(run, nan, "NaN", "score", "run")
    _first_bad(run, np.isinf(score), "infinite", "score", "run")
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
    pending = per_query = judged_per_query = None
    if qrels is not None:
        rq, jq, quniq = _joint_qid_codes(run_qid, j_qid)
        both = pd.concat([run_doc, j_doc], ignore_index=True)
        rd, jd, n_d, exact = _joint_docid_codes(run_doc, j_doc, both)

        def check_duplicates(rq: np.ndarray = rq, rd: np.ndarray = rd, jq: np.ndarray = jq,
                             jd: np.ndarray = jd, n: int = len(quniq)) -> None:
            # on the other core while metrics are computed (bound now: names are reused)
            _check_unique_pairs(run, "run", rq, rd, n, n_d, exact)
            _check_unique_pairs(qrels, "qrels", jq, jd, n, n_d, exact)

        pending = background.start(check_duplicates, len(run) + len(qrels))
        run_layout = None
        keep = j_label >= 0  # negative labels (negative_labels='unjudged') are unjudged
        j_rows = np.arange(len(jq))
        # a query in the qrels is evaluated even when its judgments are all negative
        # (trec_eval scores it, 0 for every measure): it counts as judged
        in_judged = np.bincount(jq, minlength=len(quniq)) > 0
        if not keep.all():
            jq, jd, j_label, j_rows = jq[keep], jd[keep], j_label[keep], j_rows[keep]
        # label of each run row from the qrels (0 and unjudged where absent)
        match = _match_pairs(rq, rd, jq, jd, n_d, exact)
        if match is not None and not exact and not _same_docids(run_doc, j_doc, match,
                                                                j_rows):
            match = None  # two docids share a 64-bit hash: match on exact codes
        if match is None:
            dcodes, duniq = pd.factorize(both)
            rd, jd = dcodes[:n_run], dcodes[n_run:][j_rows]
            match = _match_pairs(rq, rd, jq, jd, len(duniq))
            assert match is not None  # exact codes below 2**62 never collide
        hit, matched = match
        r_label = np.where(hit, np.asarray(j_label)[matched], 0.0)
        r_judged = hit
        in_run = np.bincount(rq, minlength=len(quniq)) > 0
    else:
        rq, quniq, per_query = _factorize_qid(run_qid)
        laid_out = _query_layout(rq, len(quniq), per_query)
        run_layout = laid_out[:2]
        per_query = laid_out[0].n  # rows per query code

        def check_duplicates(rq: np.ndarray = rq, n: int = len(quniq)) -> None:
            # on the other core while metrics are computed
            rd, n_d, exact = _docid_codes(run_doc)
            _check_unique_pairs(run, "run", rq, rd, n, n_d, exact, laid_out)

        pending = background.start(check_duplicates, len(run))
        judged_row = r_judged = run_label >= 0
        if judged_row.all():
            r_label, jq, j_label = run_label, rq, run_label
            judged_per_query = per_query
        else:
            r_label = np.where(judged_row, run_label, 0.0)
            jq, j_label = rq[judged_row], r_label[judged_row]
            judged_per_query = np.bincount(jq, minlength=len(quniq))
        in_run = np.ones(len(quniq), dtype=bool)
        in_judged = judged_per_query > 0

    evaluated = in_run & in_judged
    if missing == "zero":
        evaluated = evaluated | (in_judged & ~in_run)
    nq = int(evaluated.sum())
    if nq == 0:
        raise InputError(
            "no query is both in the run and judged"
            + ("" if qrels is None else "; check that qid values match between run and qrels")
        )
    remap = np.full(len(quniq), -1, dtype=np.int64)
    remap[evaluated] = np.arange(nq)
    all_evaluated = bool(evaluated.all())
    row = np.arange(n_run) if all_evaluated else np.flatnonzero(evaluated[rq])
    q = rq if all_evaluated else remap[rq[row]]
    grouping = group_by_query(q, nq)
    if grouping is not None:
        row, q = row[grouping], q[grouping]
    judged_label = np.asarray(j_label, dtype=np.float64)
    if all_evaluated:
        judged_q = jq
    else:
        jkeep = evaluated[jq]
        judged_q = remap[jq[jkeep]]
        judged_label = judged_label[jkeep]
    identity = len(row) == n_run and grouping is None
    label = r_label if identity else r_label[row]
    judged = r_judged if identity else r_judged[row]
    every_judgment = np.asarray(j_label, dtype=np.float64)  # of all queries, evaluated or not
    top = max(float(every_judgment.max()) if len(every_judgment) else 0.0,
              float(label.max()) if len(label) else 0.0) if max_label is None \
        else float(max_label)
    prepared = Prepared(
        qids=pd.Index(np.asarray(quniq)[evaluated], name="qid"),
        q=q,
        row=row,
        score=score if identity else score[row],
        label=label,
        docid=run_doc.reset_index(drop=True),
        qid_values=run_qid.reset_index(drop=True),
        judged_q=judged_q,
        judged_label=judged_label,
        n_docs=per_query if per_query is not None and all_evaluated
        else np.bincount(q, minlength=nq),
        n_judged=judged_per_query if judged_per_query is not None and all_evaluated
        else np.bincount(judged_q, minlength=nq),
        missing_qids=pd.Index(np.asarray(quniq)[in_judged & ~in_run], name="qid"),
        unjudged_qids=pd.Index(np.asarray(quniq)[in_run & ~in_judged], name="qid"),
        max_label=top,
        judged=judged,
    )
    if identity and qrels is None:  # the duplicate check laid out these very rows
        prepared.__dict__["layout"], prepared.__dict__["pos"] = run_layout
    prepared.pending = pending
    return prepared


def _match_pairs(rq: np.ndarray, rd: np.ndarray, jq: np.ndarray, jd: np.ndarray, n_d: int,
                 exact: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
    """For each run row, whether its (query, docid) codes are a qrels row's, and which.

    Exact codes with a known range are joined on ``q * n_d + d``. Hashes (``exact`` False)
    are joined on the query code in the top bits and the hash's top bits below it: pairs
    of one key share their query, and the caller compares the joined docids as strings.
    Other 64-bit codes (packed words) are joined on a mixed 64-bit key, checked
    afterwards. None when two different pairs share a key, so the caller joins on exact
    codes instead."""
    n_q = int(max(jq.max(initial=0), rq.max(initial=0))) + 1
    q_bits = max(n_q - 1, 1).bit_length()
    with np.errstate(over="ignore"):
        if 0 < n_d and (int(jq.max(initial=0)) + 1) * n_d < (1 << 62):
            jkey = jq.astype(np.int64) * n_d + jd
            rkey = rq.astype(np.int64) * n_d + rd
            checked = True
        elif not exact and q_bits <= 32:
            keep = np.uint64(64 - q_bits)
            jkey = ((jq.astype(np.uint64) << keep) | (jd.view(np.uint64) >> np.uint64(q_bits))
                    ).view(np.int64)
            rkey = ((rq.astype(np.uint64) << keep) | (rd.view(np.uint64) >> np.uint64(q_bits))
                    ).view(np.int64)
            checked = True  # the query is exact; the docids are compared by the caller
        else:
            mix = np.uint64(0x9E3779B97F4A7C15)
            jkey = (jd.view(np.uint64) + jq.astype(np.uint64) * mix).view(np.int64)
            rkey = (rd.view(np.uint64) + rq.astype(np.uint64) * mix).view(np.int64)
            checked = False
    index = pd.Index(jkey)
    if not index.is_unique:  # qrels pairs are unique (checked): a collision of keys
        return None
    position = index.get_indexer(rkey)  # a hash join; -1 where the run row is unjudged
    hit = position >= 0
    matched = np.where(hit, position, 0)
    if not checked and ((jq[matched[hit]] != rq[hit]).any()
                        or (jd[matched[hit]] != rd[hit]).any()):
        return None
    return hit, matched


def _same_docids(run_doc: pd.Series, j_doc: pd.Series,
                 match: tuple[np.ndarray, np.ndarray], j_rows: np.ndarray) -> bool:
    """Whether every run docid joined to a qrels docid by hash is that very string."""
    hit, matched = match
    rows = np.flatnonzero(hit)
    import pyarrow as pa
    import pyarrow.compute as pc

    ours = pa.array(run_doc.take(rows))
    theirs = pa.array(j_doc.take(j_rows[matched[rows]]))
    return len(ours) == 0 or bool(pc.all(pc.equal(ours, theirs)).as_py())


def _check_labels(df: pd.DataFrame, labels: np.ndarray, table: str, negative: str) -> None:
    _first_bad(df, np.isnan(labels), "NaN", "label", table)
    _first_bad(df, np.isinf(labels), "infinite", "label", table)
    if negative == "error":
        _first_bad(df, labels < 0, "negative", "label", table)


def _raise_duplicates(df: pd.DataFrame, q: np.ndarray, d: np.ndarray, n_d: int,
                      table: str) -> None:
    dup = _duplicates(q, d, n_d)
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise InputError(
            f"duplicate (qid, docid) pair: docid {plain(df['docid'].iloc[row])!r} appears more than "
            f"once ({int(dup.sum())} duplicate row(s) in all)",
            table=table, column="docid", qid=df["qid"].iloc[row], row=row,
        )
