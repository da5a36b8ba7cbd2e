"""A large run evaluated block by block (:func:`harness.data.trec_arrays.run_blocks`), so
that ``harness eval``'s memory follows a block and the qrels, not the run file.

A TREC run lists each query's documents together (trec_eval writes and reads them so):
the rows of the last query of a block wait for the next block; each block's complete
queries are evaluated with :func:`~harness.metrics.trec_eval_arrays.evaluate_arrays` on
their own judgments; the per-query values are gathered in trec_eval's query order and
summarised once, exactly as the whole run would be. A run whose query comes back after
another (not grouped), or a block that is not plain, returns None: the caller reads the
run whole. The next block is read on the other core while one is evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.metrics.trec_eval_arrays import QID, evaluate_arrays
from harness.metrics.trec_eval_compute import Evaluation, finish, plan_lines

if TYPE_CHECKING:
    from harness.data.trec_arrays import Columns

__all__ = ["evaluate_blocks"]


def _take(cols: Columns, rows: np.ndarray) -> Columns:
    """These rows of ``cols``."""
    text = {}
    for i, column in cols.text.items():
        if cols.arrow:
            import pyarrow as pa

            text[i] = column.take(pa.array(rows))
        else:
            text[i] = [column[j] for j in rows]
    return type(cols)(text, cols.number[rows], cols.arrow, cols.runid)


def _concat(a: Columns, b: Columns) -> Columns:
    import pyarrow as pa

    text = {i: pa.chunked_array([*_chunks(a.text[i]), *_chunks(b.text[i])], type=pa.string())
            for i in a.text}
    return type(a)(text, np.concatenate([a.number, b.number]), True, b.runid)


def _chunks(column: Any) -> list[Any]:
    return list(getattr(column, "chunks", [column]))


def _qid_codes(cols: Columns) -> tuple[np.ndarray, list[str]]:
    """The query ids as codes and the distinct ids (code order: first appearance)."""
    column = cols.text[QID]
    if cols.arrow:
        encoded = column.dictionary_encode()
        chunks = _chunks(encoded)
        if not chunks:
            return np.zeros(0, np.int64), []
        return (np.concatenate([c.indices.to_numpy() for c in chunks]),
                chunks[0].dictionary.to_pylist())
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(q, len(index)) for q in column), np.int64,
                        len(column))
    return codes, list(index)


def _prefetched(blocks: Iterable[Columns | None]) -> Iterator[Columns | None]:
    """``blocks``, the next one read on another thread while the caller works."""
    it = iter(blocks)
    with ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(next, it, StopIteration)
        while True:
            block = ahead.result()
            if block is StopIteration:
                return
            ahead = pool.submit(next, it, StopIteration)
            yield block


def evaluate_blocks(blocks: Iterable[Columns | None], qrels: Columns, columns: list[Any], *,
                    complete: bool = False, zscores: Any = None, convention: str =
                    "trec_eval", **options: Any) -> tuple[Evaluation, list[str]] | None:
    """The run of ``blocks`` evaluated as :func:`evaluate_arrays` evaluates it whole, and
    the judged queries it lacks; None when the whole-run path must take it."""
    jq, jnames = _qid_codes(qrels)
    order = np.argsort(jq, kind="stable")
    sorted_q = jq[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_q[1:] != sorted_q[:-1])))
    ends = np.append(starts[1:], len(order))
    bounds = {jnames[c]: (int(a), int(b)) for c, a, b in zip(sorted_q[starts], starts, ends)}
    top = qrels.number[qrels.number >= 0]
    shared = dict(convention=convention, max_label=max(float(top.max(initial=0.0)), 0.0),
                  **options)
    done: set[str] = set()
    parts: list[Evaluation] = []
    runid = ""
    pending: Columns | None = None
    for block in _prefetched(blocks):
        if block is None:
            return None
        if pending is not None:
            block = _concat(pending, block)
        codes, names = _qid_codes(block)
        if not len(codes):
            continue
        runid = block.runid
        last = codes == codes[-1]
        pending = _take(block, np.flatnonzero(last))
        ready = np.flatnonzero(~last)
        part = _evaluate_part(_take(block, ready), {names[c] for c in np.unique(codes[ready])},
                              qrels, order, bounds, done, columns, shared)
        if part is False:
            return None
        if part is not None:
            parts.append(part)
    if pending is not None:
        part = _evaluate_part(pending, set(_qid_codes(pending)[1]), qrels, order, bounds,
                              done, columns, shared)
        if part is False:
            return None
        if part is not None:
            parts.append(part)
    lacking = sorted(set(bounds) - done)
    if complete and lacking:  # judged queries the run lacks: each line's value for them
        rows = np.concatenate([np.arange(*bounds[q]) for q in lacking])
        empty = type(qrels)({QID: [], 2: [], 5: []}, np.zeros(0), False)
        absent = evaluate_arrays(empty, _take(qrels, order[rows]), columns, complete=True,
                                 **shared, keep_arrays=True)
        if absent is None:
            return None
        parts.append(absent[0])
    return _gathered(parts, columns, runid, zscores, complete, qrels, convention,
                     shared, lacking), lacking


def _evaluate_part(block: Columns, names: set[str], qrels: Columns, order: np.ndarray,
                   bounds: dict[str, tuple[int, int]], done: set[str], columns: list[Any],
                   shared: dict[str, Any]) -> Evaluation | None | bool:
    """One block's complete queries (``names``) evaluated on their judgments (None: none
    judged; False: a query seen in an earlier block, or input the whole-run path must
    judge)."""
    if not names:
        return None
    if names & done:
        return False  # not grouped by query
    done |= names & bounds.keys()
    judged = [bounds[q] for q in names if q in bounds]
    if not judged:
        return None
    rows = order[np.concatenate([np.arange(a, b) for a, b in judged])]
    out = evaluate_arrays(block, _take(qrels, rows), columns, **shared, keep_arrays=True)
    return False if out is None else out[0]


def _gathered(parts: list[Evaluation], columns: list[Any], runid: str, zscores: Any,
              complete: bool, qrels: Columns, convention: str, shared: dict[str, Any],
              lacking: list[str]) -> Evaluation:
    """The parts' per-query values in trec_eval's query order, summarised once."""
    qids = [q for part in parts for q in part.qids]
    order = sorted(range(len(qids)), key=qids.__getitem__)
    ev = Evaluation(runid, [qids[i] for i in order], [])
    level = shared.get("level", 1)
    wanted = plan_lines(ev, columns, [], level, convention, shared.get("collection_size", 0))
    for line, col in wanted:
        if col.family.name == "runid":
            ev.summary[line.name] = runid
        elif col.family.name == "num_q":
            ev.summary[line.name] = len(qids)
        elif parts and line.name in parts[0].values:
            merged = np.concatenate([np.asarray(p.values[line.name], dtype=object if
                                                col.family.name == "relstring" else float)
                                     for p in parts])
            ev.values[line.name] = merged[order]
    if complete and convention == "trec_eval9":  # 9.x averages them in, prints none
        ev.unprinted = lacking
    finish(ev, wanted, zscores, int((qrels.number > 0).sum()) if complete else None)
    return ev
