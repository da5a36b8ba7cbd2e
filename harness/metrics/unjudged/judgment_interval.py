"""How much a metric's value per query depends on the documents nobody judged
(:func:`judgment_interval`).

Each query's candidate labelings (:mod:`harness.metrics.unjudged.judgment_labelings`) become
pseudo-queries: the query's run rows, its judgments and its unjudged retrieved documents
judged with the labeling's grades, evaluated together by :func:`harness.evaluate` in
batches, so every option of the metric (ties, gain, cut-off, empty, ...) means what it
means everywhere. A pseudo-query holds only what the measure reads: integer codes for the
docids, and for a measure declaring ``reads_top_k`` the rows that can reach the top k and no
judgment 0 of a document off them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError, MetricDefinitionError
from harness.metrics.engine.evaluate import evaluate, negative_policy
from harness.metrics.layout.inputs import QRELS_COLUMNS, numeric, require_frame
from harness.metrics.layout.prepare import prepare
from harness.metrics.unjudged import MAX_LABELINGS, MAX_ROWS
from harness.metrics.unjudged.judgment_labelings import (
    GROUP_RULES,
    ORDER_RULES,
    Candidates,
    TooManyRows,
    candidates,
    grade_choices,
)
from harness.metrics.vocabulary.definition import Metric, parse_metric

__all__ = ["judgment_interval", "COLUMNS"]

COLUMNS = ("nonrelevant", "relevant", "condensed", "low", "high", "exact", "judged_at_k",
           "n_unjudged", "method")
#: Run and qrels rows evaluated per call of evaluate (pseudo-queries are batched up to
#: about this).
BATCH_ROWS = 1_000_000
#: The most pseudo-query rows (labelings x the rows of each) one query may need, about
#: 0.6 GB; past it the query is refused (3,000 tied documents under ties: 36M rows, which
#: took 35 s and 2.55 GB).


def judgment_interval(run: pd.DataFrame, qrels: pd.DataFrame, metric: Metric | str,
                      *, ties: bool = False, max_labelings: int = MAX_LABELINGS,
                      max_rows: int = MAX_ROWS, pool: pd.DataFrame | None = None,
                      **kwargs: Any) -> pd.DataFrame:
    """Per query, the range of a metric over every labeling of the unjudged retrieved
    documents.

    Parameters
    ----------
    run, qrels : as in :func:`harness.evaluate` (qrels are required; with a ``subtopic``
        column each document's highest label is read, as every measure but the
        intent-aware ones reads it, and those are refused).
    metric : Metric or str
        Its ``unjudged`` option is ignored: the treatments are the columns. Its
        ``unjudged_grade`` (default: the highest grade in ``qrels``) is the highest grade an
        unjudged document may take; each takes a grade from 0 to it.
    ties : bool, default False
        Cover every order of tied documents too: ``low`` and ``high`` are the least and
        greatest value over the labelings under ``ties='pessimistic'`` and
        ``'optimistic'``, the extreme orders :func:`harness.tie_interval` gives.
    max_labelings : int, default 4096
        The most labelings tried for one query where the measure declares no shortcut (every
        labeling: 12 binary documents, 5 with grades 0..4), or multisets for ``ideal``.
    max_rows : int, default 4,000,000
        The most rows one query's labelings may take, each evaluated as a pseudo-query of
        the rows read, the documents labelled and the query's judgments: a query needing
        more is refused (an :class:`InputError` naming it and the sizes).
    pool : DataFrame with columns ``qid``, ``docid``, optional
        More unjudged documents to label, beyond those the run retrieved: the ones other runs
        retrieved, so that runs compared are bounded over one set of labelings (a labelled
        document the run did not retrieve changes R and the ideal). Judged ones are ignored.
    **kwargs : ``missing``, ``negative_labels``, ``nan_scores`` of :func:`harness.evaluate`.

    Returns
    -------
    DataFrame indexed by qid, columns: ``nonrelevant``, ``relevant``, ``condensed`` (the
    value under each ``unjudged`` treatment), ``low`` and ``high`` (the bounds over every
    labeling; a labeling under which the query has no value, ``empty='exclude'``, is left
    out), ``exact`` (both are attained by a labeling; else they are a valid but looser
    bound: ``high`` 1 for nDCG, whose ``low`` is always exact, unbounded for a measure
    declaring nothing), ``judged_at_k``
    (the share of the top k, or of the list, that is judged), ``n_unjudged`` (unjudged
    retrieved documents) and ``method`` (how the bounds were found: constant, monotone,
    swap, ideal, ideal-low, enumeration, bound). ``attrs``: ``grade``, ``metric``, ``unjudged_qids``.

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"qid": "q", "docid": ["a", "u", "b"], "score": [3.0, 2.0, 1.0]})
    >>> qrels = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "label": [1, 0]})
    >>> judgment_interval(run, qrels, "P@2")[["nonrelevant", "relevant", "low", "high"]]
         nonrelevant  relevant  low  high
    qid
    q            0.5       1.0  0.5   1.0
    """
    m = metric if isinstance(metric, Metric) else parse_metric(metric)
    if not isinstance(max_labelings, int) or max_labelings < 1:
        raise InputError(f"max_labelings must be an int >= 1, got {max_labelings!r}")
    if not isinstance(max_rows, int) or max_rows < 1:
        raise InputError(f"max_rows must be an int >= 1, got {max_rows!r}")
    if m.ties == "random" and not ties:
        raise MetricDefinitionError(
            f"{m.display_name}: judgment_interval evaluates each labeling as a query of its "
            "own, and ties='random' shuffles by query id; use ties='average'")
    qrels = require_frame(qrels, "qrels", QRELS_COLUMNS)
    pool = None if pool is None else require_frame(pool, "pool", ("qid", "docid"))
    if "subtopic" in qrels.columns:  # documents are labelled, not subtopics: each document's
        qrels = (qrels.assign(label=numeric(qrels, "label", "qrels"))  # highest label, as
                 .groupby(["qid", "docid"], as_index=False, sort=False)["label"].max())
    kwargs = {**kwargs, "negative_labels": negative_policy([m], kwargs.get("negative_labels"))}
    grade = _grade(m, qrels)
    base = m.with_options(unjudged="nonrelevant", unjudged_grade=None)
    variants = {"nonrelevant": base,
                "relevant": base.with_options(unjudged="relevant", unjudged_grade=grade),
                "condensed": base.with_options(unjudged="condensed"),
                "judged_at_k": Metric("judged", k=m.k)}
    table = evaluate(run, qrels, list(dict.fromkeys(variants.values())), **kwargs)
    out = pd.DataFrame({name: table[v.display_name] for name, v in variants.items()})
    low_m, high_m = ((base.with_options(ties="pessimistic"), base.with_options(ties="optimistic"))
                     if ties else (base, base))
    low, high, exact, n_unjudged, method = _bounds(run, qrels, m, grade, low_m, high_m, ties,
                                                   (max_labelings, max_rows), out, kwargs,
                                                   pool)
    out["low"], out["high"], out["exact"] = low, high, exact
    out["n_unjudged"], out["method"] = n_unjudged, method
    out = out[list(COLUMNS)]
    out.attrs.update(grade=grade, metric=m.display_name, ties=ties,
                     unjudged_qids=table.attrs.get("unjudged_qids", []))
    return out


def _grade(m: Metric, qrels: pd.DataFrame) -> float:
    if m.unjudged_grade is not None:
        return float(m.unjudged_grade)
    labels = numeric(qrels, "label", "qrels")
    top = float(np.max(labels)) if len(labels) else 0.0
    if not top > 0:
        raise InputError(f"{m.display_name}: unjudged documents take grades up to the highest "
                         "grade judged, but no judgment has a positive grade; give "
                         "unjudged_grade", column="label")
    return top


def _bounds(run: pd.DataFrame, qrels: pd.DataFrame, m: Metric, grade: float, low_m: Metric,
            high_m: Metric, ties: bool, limits: tuple[int, int], out: pd.DataFrame,
            kwargs: dict[str, Any], pool: pd.DataFrame | None) -> tuple[np.ndarray, ...]:
    """Per query of ``out``: the bounds, whether exact, the unjudged count and the method
    (``limits``: the labelings tried without a shortcut, the rows of a query's)."""
    budget, max_rows = limits
    rule_known = ties or m.ties in GROUP_RULES or m.ties in ORDER_RULES
    fixed = m.ties in ORDER_RULES and not ties  # one order of the rows, else tie groups
    order_rule = m.ties if fixed else "input"  # score order, tie groups in input order
    prep = prepare(run, qrels, level=m.level if m.binary else 1,
                   nan_scores=kwargs.get("nan_scores", "error"),
                   negative_labels=kwargs["negative_labels"], missing="exclude")
    prep.wait()
    r = prep.ranking(order_rule)
    judged = np.asarray(prep.judged, dtype=bool)[r.perm]
    rows = prep.row[r.perm]  # run row per ranked row
    score = prep.score[r.perm]
    starts = np.concatenate([[0], np.cumsum(r.n)[:-1]])
    choices = grade_choices(m, grade)
    n = len(out)
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    exact = np.ones(n, dtype=bool)
    n_unjudged = np.zeros(n, dtype=np.int64)
    method = np.full(n, "constant", dtype=object)
    where = out.index.get_indexer(prep.qids)
    r_doc, j_doc, p_doc = _docid_codes(run, qrels, pool)
    extra: dict[int, np.ndarray] = {}
    if pool is not None:
        assert p_doc is not None  # coded with the pool
        extra = _pool_by_query(pool, p_doc, qrels, prep)
    cut = _rows_read(m, rule_known)
    plans: list[tuple[int, np.ndarray, np.ndarray, Candidates]] = []
    judgments = _by_query(qrels, prep)
    for code, (start, size) in enumerate(zip(starts, r.n)):
        sl = slice(start, start + size)
        unj = np.flatnonzero(~judged[sl])
        reach = _reach(score[sl], unj, m.k, fixed)
        docs = r_doc[rows[sl][unj]]  # the documents to label: these, in rank order, then
        more = extra.get(code)  # the pool's others, ranked below every one of them
        if more is not None:
            more = more[~np.isin(more, r_doc[rows[sl]])]
            docs, reach = np.concatenate([docs, more]), np.append(reach, np.zeros(len(more),
                                                                                  bool))
        i = where[code]
        n_unjudged[i] = len(unj)
        read = rows[sl] if cut is None else rows[sl][_reach(score[sl], np.arange(size), cut,
                                                               fixed)]
        width = len(read) + len(docs) + len(judgments.get(code, ()))
        try:
            plan = candidates(m, choices, reach, budget, rule_known,
                              concave=ties or m.ties != "optimistic", width=width,
                              max_rows=max_rows)
        except TooManyRows as exc:
            raise InputError(
                f"{m.display_name}: bounding this query over its {len(docs):,} unjudged "
                f"documents at {len(choices)} grades takes {exc.labelings:,} labelings of "
                f"{width:,} rows ({exc.labelings * width:,} rows); the limit is "
                f"{max_rows:,} (max_rows; harness judgments --max-rows)",
                qid=prep.qids[code]) from None
        if plan is None:  # too many labelings: a bound the measure's range gives
            low[i], high[i] = (0.0, 1.0) if (m.measure.unjudged_bounds == "ideal"
                                             or m.measure.unit_range) else (-np.inf, np.inf)
            exact[i], method[i] = False, "bound"
            continue
        method[i], exact[i] = plan.method, plan.exact
        if plan.high is not None:
            high[i] = plan.high  # the values found are within it: fmax keeps it
        plans.append((code, np.sort(read), docs, plan))
    for values_low, values_high, owners in _evaluate(plans, run, qrels, (r_doc, j_doc),
                                                     judgments, low_m, high_m, grade, prep,
                                                     kwargs):
        idx = where[owners]
        np.fmin.at(low, idx, values_low)
        np.fmax.at(high, idx, values_high)
    # a query the run lacks (missing='zero') has one value whatever is judged
    absent = out.index.get_indexer(out.index.difference(prep.qids))
    low[absent] = high[absent] = out["nonrelevant"].to_numpy()[absent]
    return low, high, exact, n_unjudged, method


def _reach(score: np.ndarray, unj: np.ndarray, k: int | None, fixed: bool) -> np.ndarray:
    """Which unjudged documents (ranked rows ``unj`` of one query) can reach the top k: by
    position under a fixed order, by score (at least the k-th score) under tie groups."""
    if k is None or k >= len(score):
        return np.ones(len(unj), dtype=bool)
    if fixed:
        return unj < k
    kth = np.sort(score)[::-1][k - 1]
    return score[unj] >= kth


def _rows_read(m: Metric, rule_known: bool) -> int | None:
    """The cut-off below which a labeling's pseudo-query may leave out run rows (the
    metric's k), or None to keep them all: the measure declares that it reads only the rows
    that can reach the top k (``reads_top_k``; with ``ideal='retrieved'`` it reads every
    retrieved label) and the tie rule's top k is one of those rows' own (not ``quicksort``,
    whose order depends on the list)."""
    spec = m.measure
    if m.k is None or not spec.reads_top_k or spec.reads_judged or not rule_known:
        return None
    return None if "ideal" in spec.options and m.ideal != "judged" else m.k


def _zeros_inert(m: Metric) -> bool:
    """Whether a judgment 0 of a document off the list changes nothing the measure reads:
    it declares that it reads only the ranked rows and the judgments' relevance
    (``reads_top_k``, ``ideal='judged'``) and 0 is not relevant (below ``level``) or has
    gain 0."""
    spec = m.measure
    if not spec.reads_top_k or spec.reads_judged or (
            "ideal" in spec.options and m.ideal != "judged"):
        return False
    if "gain" in spec.options:
        return float(m.gain_function()(np.zeros(1))[0]) == 0.0
    return spec.binary and not spec.graded and m.level > 0


def _docid_codes(run: pd.DataFrame, qrels: pd.DataFrame, pool: pd.DataFrame | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The docids of the run, the qrels and the pool (if any) as the int64 codes the
    pseudo-queries carry instead (joined and ranked faster than text): equal where the
    docids are equal, and ordered as
    ``ties='docid'`` orders the docids (as text, by code point), all of one number of
    digits so that their text orders as they do. Columns of integers and of text are joined
    as text, as :func:`harness.evaluate` joins them; other docids (floats, ...) are kept."""
    columns = [run["docid"], qrels["docid"], *([] if pool is None else [pool["docid"]])]
    kinds = {"int" if pd.api.types.is_integer_dtype(c) else
             "str" if pd.api.types.infer_dtype(c, skipna=False) == "string" else None
             for c in columns}
    if None in kinds:
        return _three([c.to_numpy() for c in columns])
    import pyarrow as pa
    import pyarrow.compute as pc

    codes, uniques = pd.factorize(np.concatenate([
        c.to_numpy(dtype=object) if len(kinds) == 1 else  # a mix is joined as text
        np.asarray(c.astype(str), dtype=object) for c in columns]))
    text = np.asarray(uniques.astype(str) if kinds == {"int"} else uniques, dtype=object)
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[pc.sort_indices(pa.array(text, type=pa.string())).to_numpy()] = np.arange(len(text))
    base = 10 ** len(str(len(text)))  # base + rank: one number of digits
    coded = np.split(base + rank[codes], np.cumsum([len(c) for c in columns])[:-1])
    return _three(coded)


def _three(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The run's, the qrels' and the pool's (None without a pool) of ``arrays``."""
    return arrays[0], arrays[1], arrays[2] if len(arrays) > 2 else None


def _pool_by_query(pool: pd.DataFrame, p_doc: np.ndarray, qrels: pd.DataFrame, prep: Any
                   ) -> dict[int, np.ndarray]:
    """The pool's documents (``p_doc``: their codes, per pool row) per evaluated query code,
    less those judged (label >= 0)."""
    judged = qrels.loc[numeric(qrels, "label", "qrels") >= 0, ["qid", "docid"]]
    pool = pool[["qid", "docid"]].assign(_code=p_doc).drop_duplicates(["qid", "docid"])
    pool = pool.merge(judged, on=["qid", "docid"], how="left", indicator=True)
    pool = pool[pool["_merge"] == "left_only"]
    codes = prep.qids.get_indexer(pool["qid"])
    docs = pool["_code"].to_numpy()
    return {int(c): docs[codes == c] for c in np.unique(codes[codes >= 0])}


def _by_query(qrels: pd.DataFrame, prep: Any) -> dict[Any, np.ndarray]:
    """Qrels row numbers per evaluated query id."""
    codes = prep.qids.get_indexer(qrels["qid"])
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(prep.qids) + 1))
    return {code: order[bounds[code]:bounds[code + 1]] for code in range(len(prep.qids))}


def _evaluate(plans: list[tuple[int, np.ndarray, np.ndarray, Candidates]],
              run: pd.DataFrame, qrels: pd.DataFrame,
              coded: tuple[np.ndarray, np.ndarray], judgments: dict[Any, np.ndarray],
              low_m: Metric, high_m: Metric, grade: float, prep: Any,
              kwargs: dict[str, Any]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per batch of pseudo-queries: each one's value under ``low_m`` and ``high_m`` and the
    query code it stands for. ``coded``: the run's and the qrels' docids as
    :func:`_docid_codes` codes them."""
    (r_doc, j_doc), r_score = coded, numeric(run, "score", "run")
    j_label = numeric(qrels, "label", "qrels")
    top = max(grade, float(prep.max_label))
    metrics = list(dict.fromkeys([low_m, high_m]))
    options = {"nan_scores": kwargs.get("nan_scores", "error"),
               "negative_labels": kwargs["negative_labels"]}
    batch: list[tuple[int, np.ndarray, np.ndarray, Candidates]] = []
    size = 0
    for plan in [*plans, None]:
        if plan is not None:
            batch.append(plan)
            size += (len(plan[1]) + len(plan[2]) + len(judgments.get(plan[0], ()))
                     ) * len(plan[3].grades)  # run and qrels rows
            if size < BATCH_ROWS:
                continue
        if not batch:
            break
        pr, pq, owners = _pseudo(batch, r_doc, r_score, j_doc, j_label, judgments,
                                 _zeros_inert(low_m))
        table = evaluate(pr, pq, metrics, top_label=top, **options)
        ids = table.index.to_numpy()
        a, b = table[low_m.display_name].to_numpy(), table[high_m.display_name].to_numpy()
        # either tie extreme may be the low one (a measure falling as labels rise)
        yield np.fmin(a, b), np.fmax(a, b), owners[ids]
        batch, size = [], 0


def _pseudo(batch: list[tuple[int, np.ndarray, np.ndarray, Candidates]], r_doc: np.ndarray,
            r_score: np.ndarray, j_doc: np.ndarray, j_label: np.ndarray,
            judgments: dict[Any, np.ndarray], zeros_inert: bool
            ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The batch's labelings as pseudo-queries 0, 1, ...: a run and qrels, and the query
    code each pseudo-query stands for. ``zeros_inert``: judgments 0 of documents off the
    pseudo-query's run are left out (while one judgment stays)."""
    run_parts, qrel_parts, owners = [], [], []
    pid = 0
    for code, run_rows, docs, plan in batch:
        m = len(plan.grades)
        ids = np.arange(pid, pid + m)
        pid += m
        owners.append(np.full(m, code))
        run_parts.append((np.repeat(ids, len(run_rows)), np.tile(r_doc[run_rows], m),
                          np.tile(r_score[run_rows], m)))
        own = judgments.get(code, np.zeros(0, dtype=np.int64))
        relabelled = np.isin(j_doc[own], docs)  # judged negative: unjudged
        own = own[~relabelled]
        kept = np.ones(plan.grades.shape, dtype=bool)
        if zeros_inert:
            listed = r_doc[run_rows]
            stays = (j_label[own] != 0) | np.isin(j_doc[own], listed)
            if stays.any():
                own = own[stays]
                kept = (plan.grades != 0) | np.isin(docs, listed)[None, :]
        qrel_parts.append((np.repeat(ids, len(own)), np.tile(j_doc[own], m),
                           np.tile(j_label[own], m)))
        qrel_parts.append((np.repeat(ids, kept.sum(axis=1)), np.tile(docs, m)[kept.ravel()],
                           plan.grades[kept]))
    pr = pd.DataFrame({"qid": np.concatenate([p[0] for p in run_parts]),
                       "docid": np.concatenate([p[1] for p in run_parts]),
                       "score": np.concatenate([p[2] for p in run_parts])})
    pq = pd.DataFrame({"qid": np.concatenate([p[0] for p in qrel_parts]),
                       "docid": np.concatenate([p[1] for p in qrel_parts]),
                       "label": np.concatenate([p[2] for p in qrel_parts])})
    return pr, pq, np.concatenate(owners)
