"""The part evaluation every engine but the local one shares: a run cut into parts of
whole queries (file batches, in-memory slices, Dask partitions), each part evaluated by
:func:`harness.evaluate` against the judgments of its queries, and the parts assembled
into the table :func:`harness.evaluate` gives for the whole run."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.engines.workers import InOrder, Meanwhile
from harness.errors import InputError, plain
from harness.metrics.engine.columns import evaluate_columns
from harness.metrics.engine.evaluate import MetricLike, as_metrics, evaluate, negative_policy
from harness.metrics.engine.weighting import EMPTY_ATTR, merge_empty
from harness.metrics.layout.inputs import QRELS_COLUMNS, check_labels, numeric, require_frame
from harness.metrics.vocabulary.definition import Metric

__all__ = ["evaluate_part", "evaluate_parts", "evaluate_score_parts", "PassClock", "assemble",
           "check_options", "memory_parts", "file_columns", "top_label", "parquet_reader",
           "NotClustered", "not_clustered"]


ROLES = ("qid", "docid", "score", "label")


def column_names(names: Mapping[str, str] | None) -> dict[str, str]:
    """The file column of each role (qid, docid, score, label); unnamed roles keep theirs."""
    out = {r: r for r in ROLES}
    for role, column in (names or {}).items():
        if role not in out:
            raise InputError(f"unknown column role {role!r}; roles are {list(ROLES)}",
                             column=str(role))
        out[role] = str(column)
    return out


def file_columns(path: Path, qrels: pd.DataFrame | None,
             names: Mapping[str, str] | None = None) -> dict[str, str]:
    """File column -> role, for the roles this evaluation reads (checked against the file)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise InputError(f"parquet run not found: {path}")
    have = pq.ParquetFile(path).schema_arrow.names
    roles = column_names(names)
    wanted = ["qid", "docid", "score"] + (["label"] if qrels is None else [])
    missing = [roles[r] for r in wanted if roles[r] not in have]
    if missing:
        raise InputError(f"parquet run {path.name} lacks column(s) {missing}; it has {have}",
                         table=path.name, column=missing[0])
    return {roles[r]: r for r in wanted}


class NotClustered(InputError):
    """The rows of a query are not contiguous in the file."""


def not_clustered(path: Path, qid: Any, row: int) -> NotClustered:
    """The error for a query whose rows resume at ``row`` after another query's."""
    return NotClustered(
        f"the rows of query {plain(qid)!r} are not contiguous in {path.name} (it appears "
        f"again at row {row}); rewrite the file clustered by qid with: harness "
        f"cluster {path} {path.with_name(path.stem + '.clustered.parquet')}",
        table=path.name, column="qid", qid=qid, row=row)


def parquet_reader(path: str | Path) -> Any:
    """A reader for one pass over a parquet file in batches, without pre-buffering: with it
    (pyarrow's default) the reader kept the bytes of every row group it had read until it
    was dropped (Arrow's pool held 0.85 GB after one pass over a 110M-row file, 60 MB
    without, and the pass was no slower)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path, pre_buffer=False)


def top_label(path: Path, qrels: pd.DataFrame | None,
              names: Mapping[str, str] | None = None) -> float:
    """The highest label of the whole collection: the qrels', or the file's (read from the
    label column alone, batch by batch)."""
    import pyarrow.compute as pc

    if qrels is not None:  # a negative label is unjudged: the top grade is at least 0
        return max(0.0, float(pd.to_numeric(qrels["label"]).max()))
    top = -np.inf
    label = column_names(names)["label"]
    for batch in parquet_reader(path).iter_batches(columns=[label]):
        value = pc.max(batch.column(0)).as_py()
        if value is not None:
            top = max(top, float(value))
    return max(0.0, float(top))


def needs_top_label(metrics: list[Metric], options: Mapping[str, Any]) -> bool:
    """Whether the collection's top grade must be found first (one for every part)."""
    return options.get("top_label") is None and any(
        (m.measure.top_grade and m.max_label is None)
        or (m.unjudged == "relevant" and m.unjudged_grade is None) for m in metrics)


def check_options(metrics: MetricLike | Iterable[MetricLike], options: dict[str, Any],
                  engine: str, qrels: pd.DataFrame | None = None) -> tuple[list[Metric], str]:
    """Parsed metrics and the ``missing`` policy; the rest of ``options`` go to evaluate.

    The qrels are checked whole, once, as :func:`harness.evaluate` checks them: each part
    sees only its queries' judgments, and a judged query no part holds is scored here."""
    mlist = as_metrics(metrics)
    if qrels is not None:
        qrels = require_frame(qrels, "qrels", QRELS_COLUMNS)
        labels = numeric(qrels, "label", "qrels")
        negative = negative_policy(mlist, options.get("negative_labels"))
        check_labels(qrels, labels, "qrels", negative)
    if "weights" in options:
        raise InputError(f"{engine} does not take weights; pass them to aggregate",
                         column="weights")
    missing = options.pop("missing", "exclude")
    if missing not in ("exclude", "zero"):
        raise InputError(f"missing must be 'exclude' or 'zero', got {missing!r}",
                         column="missing")
    return mlist, missing


class QrelsByQuery:
    """The qrels grouped by qid once, so each part takes its queries' judgments in time
    that follows the part, not the qrels (``isin`` over 20M judgments per part made the
    stream engine's time grow with rows x parts)."""

    def __init__(self, qrels: pd.DataFrame) -> None:
        self.frame = qrels
        codes, uniques = pd.factorize(qrels["qid"])
        self.qids = pd.Index(uniques)
        self.order = np.argsort(codes, kind="stable")
        self.bounds = np.searchsorted(codes[self.order], np.arange(len(uniques) + 1))

    def of(self, qids: Any) -> pd.DataFrame:
        """The judgments of ``qids``, in the qrels' row order (as a boolean mask keeps them)."""
        pos = self.qids.get_indexer(qids)
        pos = pos[pos >= 0]
        starts, lengths = self.bounds[pos], self.bounds[pos + 1] - self.bounds[pos]
        offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        rows = np.sort(self.order[offsets + np.arange(int(lengths.sum()))])
        return self.frame.iloc[rows]


def evaluate_part(part: pd.DataFrame, qrels: pd.DataFrame | QrelsByQuery | None,
                  metrics: list[Metric], options: Mapping[str, Any], table: str | None = None
                  ) -> tuple[pd.DataFrame | None, list[Any]]:
    """Evaluate whole queries ``part`` (indexed by source row) against the judgments of its
    queries; returns (per-query table or None when no query is judged, unjudged qids).
    Errors name the source row (``part``'s index), not the row within the part."""
    if qrels is not None:
        sub = qrels.of(pd.unique(part["qid"])) if isinstance(qrels, QrelsByQuery) else \
            qrels[qrels["qid"].isin(pd.unique(part["qid"]))]
        if sub.empty:
            return None, pd.unique(part["qid"]).tolist()
    else:
        sub = None
    try:
        out = evaluate(part.reset_index(drop=True), sub, metrics, missing="exclude",
                       **options)
    except InputError as exc:
        if exc.row is None or exc.table not in (None, "run") or not len(part):
            raise
        raise exc.at_row(int(part.index[exc.row]), table=table) from None
    return out, list(out.attrs.get("unjudged_qids", []))


def evaluate_parts(parts: Iterable[pd.DataFrame], qrels: pd.DataFrame | None,
                   metrics: list[Metric], options: Mapping[str, Any], missing: str,
                   name: str) -> pd.DataFrame:
    """:func:`evaluate_part` on each part of whole queries, then :func:`assemble`."""
    return evaluate_score_parts(parts, qrels, metrics, options, missing, name, [None])[None]


@dataclass
class PassClock:
    """Where one pass over the parts spent its time: waiting for the parts (reading a file's
    batches), and evaluating each score column (in a worker: the worker's time); the rows it
    went through, and the worker processes it used."""

    read: float = 0.0
    scores: dict[str | None, float] = field(default_factory=dict)
    rows: int = 0
    workers: int = 0  # worker processes that evaluated columns side by side


def evaluate_score_parts(parts: Iterable[pd.DataFrame], qrels: pd.DataFrame | None,
                         metrics: list[Metric], options: Mapping[str, Any], missing: str,
                         name: str, scores: Sequence[str | None],
                         clock: PassClock | None = None, workers: int = 1,
                         meanwhile: Meanwhile | None = None) -> dict[str | None, pd.DataFrame]:
    """Per score column of the parts, the table :func:`evaluate_parts` gives for it: each
    part is read once and evaluated with each column of ``scores`` as its ``score`` (None:
    the part's own ``score``), laid out once for all of them
    (:func:`harness.metrics.engine.evaluate.evaluate_columns`). With two columns or more and
    ``workers`` > 1, parts go whole to ``workers - 1`` worker processes while they have
    fewer than two parts each in hand, and are evaluated here otherwise
    (:mod:`harness.engines.workers`); the tables, and the first error, are those of one
    process. ``clock`` (when given) adds up where the time went; ``meanwhile``'s tasks
    run here while the workers have parts in hand (at the end without workers)."""
    meanwhile = meanwhile or Meanwhile()
    frames: dict[str | None, Tables] = {s: Tables() for s in scores}
    unjudged: dict[str | None, list[Any]] = {s: [] for s in scores}
    run_qids: list[Any] = []
    clock = clock if clock is not None else PassClock()
    judgments = None if qrels is None else QrelsByQuery(qrels)
    clock.workers = workers - 1 if workers > 1 and len(scores) > 1 else 0
    in_hand = 2 * clock.workers  # parts sent and not evaluated yet, at most

    def keep(_: Any, results: list[tuple[pd.DataFrame | None, list[Any], float]]) -> None:
        for score, (out, skipped, seconds) in zip(scores, results):
            unjudged[score].extend(skipped)
            if out is not None and len(out):
                frames[score].append(out)
            clock.scores[score] = clock.scores.get(score, 0.0) + seconds

    with _column_workers(clock.workers) as pool:
        order = InOrder(keep, limit=in_hand + 4)
        t = time.perf_counter()
        for part in order.each(parts):
            clock.read += time.perf_counter() - t
            qids = pd.unique(part["qid"])
            run_qids.extend(qids.tolist())
            meanwhile.run_while(lambda: pool is not None and order.busy() >= in_hand)
            if pool is not None and order.busy() < in_hand:
                sub = None if judgments is None else judgments.of(qids)
                order.add(None, pool.submit(evaluate_part_columns, part, sub, metrics,
                                            dict(options), name, list(scores)))
            else:
                try:
                    result: Any = evaluate_part_columns(part, judgments, metrics, options,
                                                        name, scores)
                except Exception as exc:  # noqa: BLE001 - raised in turn, after earlier parts'
                    result = exc
                order.add(None, result)
            clock.rows += len(part)
            t = time.perf_counter()
        meanwhile.run_all()
        order.finish()
    # each column's parts are handed over (and released as it is assembled), not kept
    # alive beside the next column's table
    return {s: assemble(frames.pop(s).parts, qrels, metrics, run_qids, unjudged[s], missing,
                        name) for s in scores}


def evaluate_part_columns(part: pd.DataFrame, qrels: pd.DataFrame | QrelsByQuery | None,
                          metrics: list[Metric], options: Mapping[str, Any],
                          table: str | None, scores: Sequence[str | None]
                          ) -> list[tuple[pd.DataFrame | None, list[Any], float]]:
    """:func:`evaluate_part` of each score column of ``part`` (None: its ``score``), laid
    out once: per column, (per-query table or None, unjudged qids, seconds)."""
    if len(scores) == 1 and scores[0] is None:
        t = time.perf_counter()
        out, skipped = evaluate_part(part, qrels, metrics, options, table)
        return [(out, skipped, time.perf_counter() - t)]
    names = ["score" if s is None else str(s) for s in scores]
    if qrels is not None:
        qids = pd.unique(part["qid"])
        sub = qrels.of(qids) if isinstance(qrels, QrelsByQuery) else \
            qrels[qrels["qid"].isin(qids)]
        if sub.empty:
            return [(None, qids.tolist(), 0.0) for _ in names]
    else:
        sub = None
    times: list[float] = []
    try:
        outs = evaluate_columns(part.reset_index(drop=True), sub, metrics, names,
                                times=times, **{**options, "missing": "exclude"})
    except InputError as exc:
        if exc.row is None or exc.table not in (None, "run") or not len(part):
            raise
        raise exc.at_row(int(part.index[exc.row]), table=table) from None
    return [(out, list(out.attrs.get("unjudged_qids", [])), seconds)
            for out, seconds in zip(outs, times)]


def _column_workers(n: int) -> Any:
    """A pool of ``n`` column workers, or nothing to enter when ``n`` is 0."""
    if n < 1:
        return contextlib.nullcontext(None)
    from harness.engines.workers import ColumnWorkers

    return ColumnWorkers(n)


class Tables:
    """The per-query tables of a pass's parts, joined into few large frames as they come.

    A part's table is small (a few thousand queries) and lives to the end of the pass, while
    each part's evaluation allocates and frees temporaries of several MB: kept apart, the
    tables pinned the freed memory around them, and the heap kept growing (at 110M rows,
    0.9 GB free in glibc's heap that it could not return). Joined every ``JOIN_BYTES`` into
    one frame, allocated apart from the heap, the parts' memory is reused by the next part."""

    #: Bytes of pending tables joined into one frame (above glibc's largest mmap threshold,
    #: so the joined frame is mapped on its own and the parts' heap space is freed).
    JOIN_BYTES = 64 * 2**20

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []  # joined frames, then the pending parts
        self._joined = 0  # how many of ``parts`` are joined frames
        self._pending = 0  # bytes of the pending parts

    def append(self, table: pd.DataFrame) -> None:
        self.parts.append(table)
        self._pending += table.shape[0] * table.shape[1] * 8
        if self._pending >= self.JOIN_BYTES:
            pending = self.parts[self._joined:]
            del self.parts[self._joined:]
            self.parts.append(join_tables(pending))
            self._joined += 1
            self._pending = 0


def join_tables(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The per-query tables of parts of disjoint queries as one, in the parts' order, with
    their queries' ``empty_qids`` (the attribute :func:`assemble` reads)."""
    empties = merge_empty(parts)
    joined = pd.concat(parts)
    joined.attrs = {EMPTY_ATTR: empties} if empties else {}
    return joined


def assemble(frames: list[pd.DataFrame], qrels: pd.DataFrame | None, metrics: list[Metric],
             run_qids: Iterable[Any], unjudged: list[Any], missing: str,
             name: str) -> pd.DataFrame:
    """The per-query tables of the parts as :func:`harness.evaluate` gives the whole: sorted
    by qid, judged queries absent from the run listed (``missing='exclude'``) or scored 0
    (``'zero'``), unjudged run queries in ``attrs``. ``frames`` is emptied: the parts are
    released once concatenated, and a table whose parts came in qid order (a file sorted by
    qid) is not sorted again, so the whole table is held about twice, not four times."""
    parts = [f for f in frames if len(f)]
    frames.clear()
    if not parts:
        raise InputError(f"no query of {name} is judged", table=name)
    empties = merge_empty(parts)
    result = pd.concat(parts)
    del parts
    if not result.index.is_monotonic_increasing:
        result = result.sort_index()
    absent = [] if qrels is None else sorted(set(qrels["qid"]) - set(run_qids), key=str)
    if missing == "zero" and absent:
        assert qrels is not None  # absent: the judged queries the run lacks
        zeros = pd.DataFrame(0.0, index=pd.Index(absent, name="qid"), columns=result.columns)
        judging = qrels[pd.to_numeric(qrels["label"]) >= 0]  # a negative label judges nothing
        if "subtopic" in judging.columns:  # subtopic judgments: each document's highest
            judging = judging.sort_values("label", ascending=False, key=pd.to_numeric,
                                          kind="stable").drop_duplicates(["qid", "docid"])
        stats = judging[judging["qid"].isin(absent)].groupby("qid")["label"]
        zeros["n_docs"] = 0
        zeros["n_judged"] = stats.size().reindex(absent, fill_value=0).to_numpy()
        level = {m.level for m in metrics if m.binary}
        threshold = level.pop() if len(level) == 1 else 1
        zeros["n_relevant"] = stats.apply(lambda s: int((s >= threshold).sum())).reindex(
            absent, fill_value=0).to_numpy()
        result = pd.concat([result, zeros.astype(result.dtypes.to_dict())]).sort_index()
        absent = []
    result.attrs["missing_qids"] = absent
    result.attrs["unjudged_qids"] = unjudged
    if empties:
        result.attrs[EMPTY_ATTR] = empties
    return result


def cut_at_queries(start: np.ndarray, n_rows: int, partition_rows: int) -> list[tuple[int, int]]:
    """Row ranges from the query starts: one begins at the first query start at or past
    each multiple of ``partition_rows``."""
    if not len(start):
        return [(0, n_rows)]
    marks = np.arange(0, n_rows, int(partition_rows))
    cuts = np.unique(start[np.minimum(np.searchsorted(start, marks), len(start) - 1)])
    bounds = np.append(cuts, n_rows)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def memory_parts(run: pd.DataFrame, partition_rows: int
                  ) -> tuple[list[pd.DataFrame], np.ndarray]:
    """An in-memory run grouped by qid (stable) and cut at query boundaries."""
    if "qid" not in run.columns:
        raise InputError(f"run lacks column 'qid'; it has {list(run.columns)}", table="run",
                         column="qid")
    codes, uniques = pd.factorize(run["qid"])
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise InputError("missing qid value(s)", table="run", column="qid", row=row)
    run = run.set_axis(pd.RangeIndex(len(run)))  # errors name the row position
    if len(codes) and np.any(np.diff(codes) < 0):
        order = np.argsort(codes, kind="stable")
        run, codes = run.iloc[order], codes[order]
    start = np.flatnonzero(np.diff(codes, prepend=-1)) if len(codes) else codes
    parts = [run.iloc[a:b] for a, b in cut_at_queries(start, len(run), partition_rows)]
    return parts, np.asarray(uniques, dtype=object)
