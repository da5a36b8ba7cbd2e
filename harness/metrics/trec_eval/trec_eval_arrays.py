"""trec_eval's procedure on column arrays (:mod:`harness.data.trec_arrays`), without pandas:
``harness eval``'s quick path, for plain qrels and runs.

The same metric engine as :func:`harness.metrics.trec_eval.trec_eval_compute.evaluate_trec` (one
:class:`~harness.metrics.layout.prepared.Prepared`, the registry's kernels, the same lines and
summaries), reached without the DataFrame layer: the ids are coded by a dict (small files)
or Arrow's hash (large ones), the run joined to the qrels by a sorted merge of integer
keys. It covers ``-q -m -c -M -l -n -N -Z --compat``; :func:`quick_path` says when a call
needs the DataFrame path instead (``-J``, ``relstring``, preference or judge-group
measures, other tools' names, parquet), and :func:`evaluate_arrays` returns None for input
that path must judge (a document twice in a run or in the qrels): it names the line.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.arrow_arrays import arrow, nonzero, numbers, padded_words, strings
from harness.metrics.layout import background
from harness.metrics.layout.prepared import Prepared
from harness.metrics.layout.ranking import take_docids, trec_order_rows
from harness.metrics.layout.segments import group_by_query
from harness.metrics.trec_eval.trec_eval_compute import (
    COLLECTION_SIZE,
    LEVEL,
    Evaluation,
    finish,
    in_head,
    plan_lines,
    relstring_chars,
)
from harness.metrics.vocabulary.tool_names.trec_eval_measures import Column

if TYPE_CHECKING:  # harness.data is a layer beside this one: its arrays, duck-typed
    from harness.data.trec_arrays import Columns

__all__ = ["quick_path", "evaluate_arrays"]

QID, DOCID = 0, 2  # the id columns' positions in both a qrels and a run line


def quick_path(columns: list[Column], extra: list[Any], *, judged_only: bool,
               rel_format: str) -> bool:
    """Whether the arrays compute these lines (else the DataFrame path does)."""
    return (not extra and not judged_only and rel_format == "qrels"
            and all(c.family.source == "qrels" for c in columns))


def chunks_of(column: Any) -> list[Any]:
    """An Arrow column's arrays: a chunked array's chunks, or the array itself."""
    return list(getattr(column, "chunks", [column]))


def _as_arrow(column: Any) -> Any:
    import pyarrow as pa

    return column if isinstance(column, (pa.Array, pa.ChunkedArray)) else strings(column)


def _codes(a: Any, b: Any, *, sort: bool) -> tuple[np.ndarray, np.ndarray, list[str], int]:
    """Integer codes of two id columns over their joint distinct values (code order = str
    order with ``sort``; the values listed then), and the number of values."""
    if isinstance(a, list) and isinstance(b, list):
        distinct = set(a)
        distinct.update(b)
        values = sorted(distinct) if sort else list(distinct)
        index = {v: i for i, v in enumerate(values)}
        ca = np.fromiter(map(index.__getitem__, a), np.int64, len(a))
        cb = np.fromiter(map(index.__getitem__, b), np.int64, len(b))
        return ca, cb, values if sort else [], len(values)
    import pyarrow as pa
    import pyarrow.compute as pc

    a, b = _as_arrow(a), _as_arrow(b)
    if sort:  # query ids come in runs of equal values: code the first of each run only
        (a, ra), (b, rb) = _runs(a), _runs(b)
    parts = [*chunks_of(a), *chunks_of(b)]
    encoded = pa.chunked_array(parts, type=pa.string()).dictionary_encode()  # one dictionary
    codes = np.concatenate([np.zeros(0, np.int64)] + [numbers(c.indices) for c in
                                                       encoded.chunks]).astype(np.int64)
    dictionary = encoded.chunks[0].dictionary if encoded.num_chunks else strings([])
    in_order: list[str] = []
    if sort:
        sorted_at = pc.sort_indices(dictionary)
        order = numbers(sorted_at)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        codes = rank[codes]
        in_order = dictionary.take(sorted_at).to_pylist()
    ca, cb = codes[:len(a)], codes[len(a):]
    if sort:
        ca, cb = np.repeat(ca, ra), np.repeat(cb, rb)
    return ca, cb, in_order, len(dictionary)


def _runs(column: Any) -> tuple[Any, np.ndarray]:
    """The first value of each run of equal values of an Arrow string array, and the runs'
    lengths (one vectorised comparison of neighbours)."""
    import pyarrow.compute as pc

    n = len(column)
    if n < 2:
        return column, np.ones(n, dtype=np.int64)
    change = pc.not_equal(column.slice(1), column.slice(0, n - 1))
    starts = np.concatenate(([0], nonzero(change) + 1))
    return column.take(arrow(starts)), np.diff(np.append(starts, n))


def _has_repeats(keys: np.ndarray) -> bool:
    s = np.sort(keys)
    return bool(len(s) > 1 and (s[1:] == s[:-1]).any())


def evaluate_arrays(run: Columns, qrels: Columns, columns: list[Column], *,
                    level: int = LEVEL,
                    depth: int | None = None, complete: bool = False,
                    zscores: dict[tuple[str, str], tuple[float, float]] | None = None,
                    runid: str = "", convention: str = "trec_eval",
                    collection_size: int = COLLECTION_SIZE, max_label: float | None = None,
                    keep_arrays: bool = False) -> tuple[Evaluation, list[str]] | None:
    """One run evaluated as :func:`~harness.metrics.trec_eval.trec_eval_compute.evaluate_trec`
    evaluates it, and the judged queries it lacks; None when the input needs the DataFrame
    path (a (query, docid) pair twice). ``qrels``' labels are whole already.
    ``max_label``: the highest grade judged when ``qrels`` are a part of the judgments
    (:mod:`harness.metrics.trec_eval.trec_eval_blocks`); ``keep_arrays``: per-query values as
    arrays, not lists."""
    rq, jq, qvalues, n_q = _codes(run.text[QID], qrels.qid_column(), sort=True)
    keys = _pair_keys(rq, jq, run.text[DOCID], qrels.text[DOCID])
    if keys is None:
        return None
    rkey, jkey, same = keys
    repeats = background.start_value(lambda: _has_repeats(rkey), len(rkey))
    jorder = np.argsort(jkey, kind="stable")
    sorted_j = jkey[jorder]
    if len(sorted_j) > 1 and (sorted_j[1:] == sorted_j[:-1]).any():
        repeats.result()
        return None  # judged twice (judge groups): the DataFrame path reads the first
    in_run = np.bincount(rq, minlength=n_q) > 0
    in_qrels = np.bincount(jq, minlength=n_q) > 0
    chosen = in_qrels if complete else in_run & in_qrels
    nq = int(chosen.sum())
    remap = np.full(n_q, -1, dtype=np.int64)
    remap[chosen] = np.arange(nq)
    qids = [qvalues[i] for i in np.flatnonzero(chosen)]
    lacking = [qvalues[i] for i in np.flatnonzero(in_qrels & ~in_run)]

    score = run.number
    row = np.flatnonzero(chosen[rq])
    if depth is not None:  # trec_eval's order, then each query's first `depth` rows
        s = score[row].astype(np.float32 if convention == "trec_eval9" else np.float64)
        ordered = row[trec_order_rows(rq[row], s, take_docids(_docids(run), row))]
        row = np.sort(ordered[in_head(rq[ordered], depth)])
    q = remap[rq[row]]
    grouping = group_by_query(q, nq)
    if grouping is not None:
        row, q = row[grouping], q[grouping]
    jlabel = qrels.number
    keep = jlabel >= 0  # a negative label: in the pool, not judged (trec_eval)
    jmask = keep & chosen[jq]
    judged_q = remap[jq[jmask]]
    n_docs = np.bincount(q, minlength=nq)
    prep = Prepared(
        qids=np.array(qids, dtype=object), q=q, row=row, score=score[row],
        label=np.zeros(len(row)), docid=_docids(run), qid_values=None,
        judged_q=judged_q, judged_label=jlabel[jmask], n_docs=n_docs,
        n_judged=np.bincount(judged_q, minlength=nq), missing_qids=np.array([]),
        unjudged_qids=np.array([]),
        max_label=max(float(jlabel[keep].max()) if keep.any() else 0.0, 0.0)
        if max_label is None else max_label,
        judged=np.zeros(len(row), dtype=bool),
        negative=None if keep.all() else np.zeros(len(row), dtype=bool))

    ev = Evaluation(runid, qids, [])
    wanted = plan_lines(ev, columns, [], level, convention, collection_size)
    metrics = list(dict.fromkeys(ln.metric for ln, _ in wanted if ln.metric is not None))
    from harness.metrics.engine.kernels import measure_columns, ranking_plan

    if len(row):
        prep.rank_early(ranking_plan(metrics).whole(prep.mean_length))  # other core, meanwhile
    judgment, matched = _join(prep, rkey[row], sorted_j, jorder, jlabel, row, same)
    if repeats.result():
        return None  # a document twice in the run: the DataFrame path names it
    if not matched.result():
        return None  # two (query, docid) keys alike that are not: the DataFrame path
    values, _ = measure_columns(prep, metrics) if metrics and nq else ({}, {})
    if complete and convention == "trec_eval9":  # 9.x averages them in, prints none
        ev.unprinted = [qvalues[i] for i in np.flatnonzero(chosen & ~in_run)]
    absent = n_docs == 0  # -c: judged queries the run lacks score 0
    relevant = np.bincount(remap[jq[(jlabel >= level) & chosen[jq]]], minlength=nq)
    for line, col in wanted:
        assert col is not None  # no extra lines: each line is a column's
        fam = col.family
        if fam.name == "runid":
            ev.summary[line.name] = runid
        elif fam.name == "relstring":
            ev.values[line.name] = _relstrings(prep, judgment, convention,
                                               int(col.options["length"][0]))
        elif fam.name == "num_q":
            ev.summary[line.name] = nq
        elif line.metric is not None:
            vals = values.get(line.metric.display_name, np.zeros(nq))
            if fam.judged_count and absent.any():
                vals = np.where(absent, relevant, vals)
            ev.values[line.name] = vals if keep_arrays else list(vals)
    finish(ev, wanted, zscores, int((jlabel > 0).sum()) if complete else None)
    return ev, lacking


def _docids(run: Columns) -> Any:
    column = run.text[DOCID]
    return column if run.arrow else np.array(column, dtype=object)


def _relstrings(prep: Prepared, judgment: np.ndarray, convention: str, length: int
                ) -> list[str]:
    """Per query, the labels of its first ``length`` documents in trec_eval's order, one
    character each: the grade, ``>`` above 9, ``.`` negative, ``-`` unjudged
    (``judgment``: each grouped row's label, NaN where unjudged)."""
    score = prep.score.astype(np.float32 if convention == "trec_eval9" else np.float64)
    order = trec_order_rows(prep.q, score, take_docids(prep.docid, prep.row))
    q, rel = prep.q[order], judgment[order]
    head = in_head(q, max(length, 0))
    q, rel = q[head], rel[head]
    chars = relstring_chars(rel)
    bounds = np.searchsorted(q, np.arange(prep.n_queries + 1))
    return ["'" + "".join(chars[a:b].tolist()) + "'" for a, b in zip(bounds[:-1], bounds[1:])]


def _join(prep: Prepared, rkey: np.ndarray, sorted_j: np.ndarray, jorder: np.ndarray,
          jlabel: np.ndarray, rows: np.ndarray, same: Same | None
          ) -> tuple[np.ndarray, Future[bool]]:
    """Each grouped row's label (0 where unjudged), whether it is judged and whether its
    judgment is negative, written in place (the early rankings share these arrays); each
    row's judgment as given (NaN: none); and whether every match of keys is a match of
    (query, docid): ``same`` checks it (on the other core) for the grouped rows' run rows
    ``rows``."""
    if not len(rkey):
        return np.zeros(0), background.start_value(lambda: True, 0)
    pos = np.minimum(np.searchsorted(sorted_j, rkey), max(len(sorted_j) - 1, 0))
    hit = sorted_j[pos] == rkey if len(sorted_j) else np.zeros(len(rkey), dtype=bool)
    matched = background.start_value(
        lambda: same is None or same(rows[hit], jorder[pos[hit]]), len(rkey))
    label = jlabel[jorder[pos]] if len(sorted_j) else np.zeros(len(rkey))
    good = hit & (label >= 0)
    prep.label[:] = np.where(good, label, 0.0)
    assert prep.judged is not None  # laid out with an array to fill
    prep.judged[:] = good
    if prep.negative is not None:
        prep.negative[:] = hit & (label < 0)
    return np.where(hit, label, np.nan), matched


#: Whether run rows and qrels rows, pairwise, hold the same (query, docid).
Same = Callable[[np.ndarray, np.ndarray], bool]
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(31))


def _pair_keys(rq: np.ndarray, jq: np.ndarray, run_doc: Any, judged_doc: Any
               ) -> tuple[np.ndarray, np.ndarray, Same | None] | None:
    """One integer key per (query, docid) of the run and of the qrels, equal for equal
    pairs. Lists of str (small files): the docids coded by a dict, keys exact. Arrow
    columns: a 64-bit hash of the query's code and the docid's bytes (one numpy pass per
    8 bytes of the longest docid, about three times quicker than Arrow's dictionary on a
    million distinct docids), with the check ``same`` of the pairs a key matches (a
    match of unequal pairs, or a repeat, sends the run to the DataFrame path). None when
    the exact keys would overflow."""
    if isinstance(run_doc, list) and isinstance(judged_doc, list):
        rd, jd, _, n_d = _codes(run_doc, judged_doc, sort=False)
        if len(rq) and len(jq) and int(max(rq.max(), jq.max()) + 1) * max(n_d, 1) >= 1 << 62:
            return None
        return rq * n_d + rd, jq * n_d + jd, None
    width = max(_longest(run_doc), _longest(judged_doc))
    rw, rn = padded_words(_as_arrow(run_doc), width)
    jw, jn = padded_words(_as_arrow(judged_doc), width)

    def same(r: np.ndarray, j: np.ndarray) -> bool:
        return bool((rq[r] == jq[j]).all() and (rn[r] == jn[j]).all()
                    and (rw[r] == jw[j]).all())
    # the query code in the high bits: a query's keys lie together, so the search of a
    # run's keys (grouped by query) among the qrels' stays in the cache
    top = int(max(rq.max(initial=0), jq.max(initial=0)))
    shift = np.uint64(64 - max(top.bit_length(), 1))
    if shift < 24:
        return None  # over 2**40 queries: the hash would keep too few bits
    return _keyed(rq, rw, rn, shift), _keyed(jq, jw, jn, shift), same


def _keyed(q: np.ndarray, words: np.ndarray, lengths: np.ndarray, shift: np.uint64
           ) -> np.ndarray:
    """The query code in the bits from ``shift`` up, the hash's top bits below them."""
    key = _hashed(q, words, lengths)
    key >>= np.uint64(64) - shift
    key |= _unsigned(q) << shift
    return key


def _unsigned(codes: np.ndarray) -> np.ndarray:
    """Non-negative int64 codes as uint64, without a copy."""
    return np.ascontiguousarray(codes, dtype=np.int64).view(np.uint64)


def _longest(column: Any) -> int:
    import pyarrow.compute as pc

    lengths = pc.binary_length(_as_arrow(column))
    return int(pc.max(lengths).as_py() or 0) if len(lengths) else 0


def _hashed(q: np.ndarray, words: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A 64-bit hash per row of the query code, the docid's length and its words."""
    mul, mul2, shift = _MIX
    with np.errstate(over="ignore"):  # in place: one array of 8 bytes a row
        h = _unsigned(q) * mul
        h ^= _unsigned(lengths)
        for j in range(words.shape[1]):
            h ^= words[:, j]
            h *= mul2
            h ^= h >> shift
    return h
