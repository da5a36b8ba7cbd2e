"""A large run evaluated block by block (:func:`harness.data.trec_arrays.run_blocks`), so
that ``harness eval``'s memory follows a block and the qrels, not the run file.

A TREC run lists each query's documents together (trec_eval writes and reads them so):
the rows of the last query of a block wait for the next block; each block's complete
queries are evaluated with :func:`~harness.metrics.trec_eval.trec_eval_arrays.evaluate_arrays` on
their own judgments; the per-query values are gathered in trec_eval's query order and
summarised once, exactly as the whole run would be. A run whose query comes back after
another (not grouped), or a block that is not plain, returns None: the caller reads the
run whole. The next block is read while blocks are evaluated, two at once on threads
(:class:`_Parts`; numpy's and Arrow's loops let go of the GIL, the Python between them does
not: on 10M lines the two threads make about 1.1 cores' worth of progress). Given the blocks
of the run's second half too, a fork of the process evaluates them (:mod:`harness.forked`),
each process one block at a time: two processes make two cores' worth.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from harness.arrow_arrays import numbers, repeated, strings
from harness.metrics.trec_eval.trec_eval_arrays import QID, chunks_of, evaluate_arrays
from harness.metrics.trec_eval.trec_eval_compute import Evaluation, finish, plan_lines

if TYPE_CHECKING:
    from harness.data.trec_arrays import Columns

__all__ = ["evaluate_blocks", "WORKERS"]

#: Blocks evaluated at once, each on a thread, by a process that evaluates the whole run; one
#: at a time in each of two processes (``rest``): on 1M lines (10,000 queries) the run took
#: 1.9-2.1 s with two threads per process against 1.8-2.0 s with one (the GIL again).
WORKERS = 2


def _concat(a: Columns, b: Columns) -> Columns:
    import pyarrow as pa

    text = {i: pa.chunked_array([*chunks_of(a.text[i]), *chunks_of(b.text[i])], type=pa.string())
            for i in a.text}
    return type(a)(text, np.concatenate([a.number, b.number]), True, b.runid)


def _qid_codes(cols: Columns) -> tuple[np.ndarray, list[str]]:
    """The query ids as codes and the distinct ids (code order: first appearance)."""
    column = cols.text[QID]
    if cols.arrow:
        encoded = column.dictionary_encode()
        chunks = chunks_of(encoded)
        if not chunks:
            return np.zeros(0, np.int64), []
        return (np.concatenate([numbers(c.indices) for c in chunks]),
                chunks[0].dictionary.to_pylist())
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(q, len(index)) for q in column), np.int64,
                        len(column))
    return codes, list(index)


def _prefetched(blocks: Iterable[Columns | None]) -> Iterator[Columns | None]:
    """``blocks``, the next one read on another thread while the caller works."""
    it = iter(blocks)
    with ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(_next, it)
        while True:
            more, block = ahead.result()
            if not more:
                return
            ahead = pool.submit(_next, it)
            yield block


def _next(it: Iterator[Columns | None]) -> tuple[bool, Columns | None]:
    """(True, the next block), or (False, None) at the end."""
    for block in it:
        return True, block
    return False, None


def evaluate_blocks(blocks: Iterable[Columns | None], qrels: Columns, columns: list[Any], *,
                    complete: bool = False, zscores: Any = None, convention: str =
                    "trec_eval", rest: Iterable[Columns | None] | None = None,
                    **options: Any) -> tuple[Evaluation, list[str]] | None:
    """The run of ``blocks`` evaluated as :func:`evaluate_arrays` evaluates it whole, and
    the judged queries it lacks; None when the whole-run path must take it. ``rest``: the
    blocks of the run's second part (cut between two queries), evaluated at the same time
    in a fork of this process (:class:`harness.forked.Forked`)."""
    if qrels.ranges is None:  # the query ids as ranges of rows: their column let go
        qrels.ranges = _query_ranges(qrels)
        del qrels.text[QID]
    ranges = qrels.ranges
    top = qrels.number[qrels.number >= 0]
    shared = dict(convention=convention, max_label=max(float(top.max(initial=0.0)), 0.0),
                  **options)
    other = None
    if rest is not None:
        from harness.forked import Forked

        def second() -> _Evaluated | None:
            return _evaluated(rest, qrels, ranges, columns, shared, workers=1)
        try:
            other = Forked(second)
        except OSError:  # no fork to be had (memory, process limits): both halves here
            blocks = itertools.chain(blocks, rest)
    try:
        mine = _evaluated(blocks, qrels, ranges, columns, shared,
                          workers=WORKERS if other is None else 1)
    except BaseException:
        if other is not None:
            other.cancel()
        raise
    if mine is None:  # the whole-run path takes the run: the second half is not needed
        if other is not None:
            other.cancel()
        return None
    parts, done, runid = mine
    if other is not None:
        theirs = other.result()
        if theirs is None:
            return None
        if done & theirs[1]:
            return None  # a query in both parts: not grouped by query
        parts += theirs[0]
        done |= theirs[1]
        runid = theirs[2] or runid
    lacking = sorted(set(ranges) - done)
    if complete and lacking:  # judged queries the run lacks: each line's value for them
        empty = type(qrels)({QID: [], 2: [], 5: []}, np.zeros(0), False)
        absent = evaluate_arrays(empty, _judged(qrels, lacking, ranges), columns,
                                 complete=True, **shared, keep_arrays=True)
        if absent is None:
            return None
        parts.append(absent[0])
    return _gathered(parts, columns, runid, zscores, complete, qrels, convention,
                     shared, lacking), lacking


#: Blocks' evaluations in block order, the judged queries they hold, the last run id.
_Evaluated = tuple[list[Evaluation], set[str], str]


def _evaluated(blocks: Iterable[Columns | None], qrels: Columns,
               ranges: dict[str, list[tuple[int, int]]], columns: list[Any],
               shared: dict[str, Any], workers: int) -> _Evaluated | None:
    """Each block's complete queries evaluated on their judgments, ``workers`` blocks at
    once on threads; None when the whole-run path must take the run."""
    done: set[str] = set()
    parts: list[Evaluation] = []
    runid = ""
    pending: Columns | None = None
    with _Parts(parts, workers) as evaluating:
        for block in _prefetched(blocks):
            if block is None:
                return None
            if pending is not None:
                block = _concat(pending, block)
            codes, names = _qid_codes(block)
            if not len(codes):
                continue
            runid = block.runid
            tail = int(np.flatnonzero(codes != codes[-1])[-1]) + 1 \
                if (codes != codes[-1]).any() else 0
            if (codes[:tail] == codes[-1]).any():
                return None  # the last query came before another: not grouped by query
            pending = _rows(block, [(tail, len(codes))])
            job = _part(_rows(block, [(0, tail)]),
                        {names[c] for c in _present(codes[:tail])}, qrels, ranges, done,
                        columns, shared)
            if job is False or not evaluating.add(job):
                return None
        if pending is not None:
            job = _part(pending, set(_qid_codes(pending)[1]), qrels, ranges, done, columns,
                        shared)
            if job is False or not evaluating.add(job):
                return None
        if not evaluating.close():
            return None
    return parts, done, runid


def _present(codes: np.ndarray) -> list[int]:
    """The distinct codes (numpy's ``unique`` imports ``numpy.ma``: 30 ms)."""
    return np.flatnonzero(np.bincount(codes)).tolist() if len(codes) else []


def _query_ranges(qrels: Columns) -> dict[str, list[tuple[int, int]]]:
    """Per query id, the ranges of qrels rows that judge it (one when the qrels list a
    query's judgments together, as they usually do)."""
    jq, names = _qid_codes(qrels)
    starts = np.flatnonzero(np.concatenate(([True], jq[1:] != jq[:-1]))) if len(jq) else jq
    ends = np.append(starts[1:], len(jq))
    out: dict[str, list[tuple[int, int]]] = {}
    for code, a, b in zip(jq[starts].tolist(), starts.tolist(), ends.tolist()):
        out.setdefault(names[code], []).append((a, b))
    return out


def _rows(cols: Columns, ranges: list[tuple[int, int]]) -> Columns:
    """The rows of ``ranges`` of ``cols``: slices of its columns (no copy of Arrow's);
    ranges that follow one another are taken as one."""
    ranges = _coalesced(ranges)
    text = {}
    for i, column in cols.text.items():
        if cols.arrow:
            import pyarrow as pa

            parts = [c for a, b in ranges if b > a for c in chunks_of(column.slice(a, b - a))]
            # one contiguous array: Arrow's kernels are slow on thousands of small chunks
            text[i] = pa.concat_arrays(parts) if parts else strings([])
        else:
            text[i] = [v for a, b in ranges for v in column[a:b]]
    number = np.concatenate([np.zeros(0)] + [cols.number[a:b] for a, b in ranges])
    return type(cols)(text, number, cols.arrow, cols.runid)


def _coalesced(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        elif b > a:
            out.append((a, b))
    return out


def _judged(qrels: Columns, names: list[str], ranges: dict[str, list[tuple[int, int]]]
            ) -> Columns:
    """The judgments of the queries ``names``, in the qrels' order (a block's queries
    usually lie together there: one slice), their query id column rebuilt."""
    spans = sorted(((q, a, b) for q in names for a, b in ranges[q]), key=lambda s: s[1])
    sub = _rows(qrels, [(a, b) for _, a, b in spans])
    if sub.arrow:
        sub.text[QID] = repeated([q for q, _, _ in spans], [b - a for _, a, b in spans])
    else:
        sub.text[QID] = [q for q, a, b in spans for _ in range(b - a)]
    return sub


def _part(block: Columns, names: set[str], qrels: Columns,
          ranges: dict[str, list[tuple[int, int]]], done: set[str], columns: list[Any],
          shared: dict[str, Any]) -> Callable[[], Evaluation | None] | None | Literal[False]:
    """The evaluation of one block's complete queries (``names``) on their judgments, to
    run (None: none judged; False: a query seen in an earlier block: not grouped by
    query). The evaluation returns None for input the whole-run path must judge."""
    if not names:
        return None
    if names & done:
        return False  # not grouped by query
    done |= names & ranges.keys()
    judged = [q for q in names if q in ranges]
    if not judged:
        return None
    judgments = _judged(qrels, judged, ranges)

    def evaluate() -> Evaluation | None:
        out = evaluate_arrays(block, judgments, columns, **shared, keep_arrays=True)
        return None if out is None else out[0]
    return evaluate


class _Parts:
    """Blocks' evaluations, ``workers`` at a time on threads (numpy and Arrow let go of
    the GIL in their loops, so the two cores share the work); each part is appended to ``parts``
    in block order. At most ``workers`` + 1 blocks wait or are evaluated at once (the
    last one submitted waits for the first to finish), beside the one being read."""

    def __init__(self, parts: list[Evaluation], workers: int = WORKERS) -> None:
        self.parts = parts
        self.running: list[Future[Evaluation | None]] = []
        self.workers = workers
        self.pool = ThreadPoolExecutor(workers)

    def __enter__(self) -> _Parts:
        return self

    def __exit__(self, *exc: object) -> None:
        for future in self.running:
            future.cancel()
        self.pool.shutdown(wait=True)

    def add(self, job: Callable[[], Evaluation | None] | None) -> bool:
        """Start ``job`` (None: nothing to evaluate); False when a finished part says the
        whole-run path must take the run."""
        if job is not None:
            self.running.append(self.pool.submit(job))
        while len(self.running) > self.workers:
            if not self._collect():
                return False
        return True

    def close(self) -> bool:
        """Wait for every part; False as :meth:`add`."""
        while self.running:
            if not self._collect():
                return False
        return True

    def _collect(self) -> bool:
        part = self.running.pop(0).result()
        if part is None:
            return False
        self.parts.append(part)
        return True


def _gathered(parts: list[Evaluation], columns: list[Any], runid: str, zscores: Any,
              complete: bool, qrels: Columns, convention: str, shared: dict[str, Any],
              lacking: list[str]) -> Evaluation:
    """The parts' per-query values in trec_eval's query order, summarised once."""
    qids = [q for part in parts for q in part.qids]
    order = np.array(sorted(range(len(qids)), key=qids.__getitem__), dtype=np.int64)
    ev = Evaluation(runid, [qids[i] for i in order.tolist()], [])
    level = shared.get("level", 1)
    wanted = plan_lines(ev, columns, [], level, convention, shared.get("collection_size", 0))
    for line, col in wanted:
        assert col is not None  # no extra lines: each line is a column's
        if col.family.name == "runid":
            ev.summary[line.name] = runid
        elif col.family.name == "num_q":
            ev.summary[line.name] = len(qids)
        elif parts and line.name in parts[0].values:
            # each part's values let go as they are gathered: memory holds them once
            merged = np.concatenate([np.asarray(p.values.pop(line.name), dtype=object if
                                                col.family.name == "relstring" else float)
                                     for p in parts])
            ev.values[line.name] = merged[order]
    if complete and convention == "trec_eval9":  # 9.x averages them in, prints none
        ev.unprinted = lacking
    finish(ev, wanted, zscores, int((qrels.number > 0).sum()) if complete else None)
    return ev
