"""One stream pass over several score columns, its file's row groups read where they are
evaluated.

When the pass evaluates two or more score columns with worker processes and the file has
several row groups (a run without separate judgments: its labels are in the file), the file
is cut into units of consecutive row groups of at least ``batch_rows`` rows, and each unit
is read *and* evaluated by one process: the pass's own, or a worker while the workers have
fewer than two units each in hand. A unit holds the whole queries that start in its row
groups: it skips its first rows while they continue the query the row group before it ended
with, and reads on past its last row group while its last query goes on. So no part is
pickled from one process to another (at 110M rows that was 2.3 GB), and both processes read.

The pass's process hands the units' results over in file order (:class:`InOrder`), checks
that no query comes back after another (the same :class:`NotClustered` error, naming the
same row, one process's pass raises), and assembles the tables one process gives
(tests/test_stream_units.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.engines.parts import (
    PassClock,
    Tables,
    assemble,
    evaluate_part_columns,
    not_clustered,
    parquet_reader,
)
from harness.engines.workers import ColumnWorkers, InOrder, Meanwhile
from harness.metrics.vocabulary.definition import Metric
from harness.progress import progress_sized

__all__ = ["Unit", "file_units", "evaluate_units", "unit_parts"]

#: Rows read at a time past a unit's last row group, while its last query goes on.
_TAIL_ROWS = 8_192


@dataclass(frozen=True)
class Unit:
    """Row groups ``first`` to ``stop - 1`` of the file; ``row``: the file row of the
    first's first row; ``rows``: how many rows they hold."""

    first: int
    stop: int
    row: int
    rows: int


def file_units(path: Path, batch_rows: int) -> list[Unit] | None:
    """The file's row groups as units of at least ``batch_rows`` rows (the last may hold
    fewer), or None when that makes fewer than two units."""
    meta = parquet_reader(path).metadata
    units, first, rows, row = [], 0, 0, 0
    for g in range(meta.num_row_groups):
        rows += meta.row_group(g).num_rows
        if rows >= batch_rows or g == meta.num_row_groups - 1:
            units.append(Unit(first, g + 1, row, rows))
            first, row, rows = g + 1, row + rows, 0
    return units if len(units) >= 2 else None


def unit_parts(path: Path, unit: Unit, columns: Mapping[str, str], batch_rows: int
               ) -> Iterator[pd.DataFrame]:
    """The whole queries that start in ``unit``, as parts of about ``batch_rows`` rows cut
    at query ends, each indexed by file row (as :func:`iter_query_batches` yields them).

    The batches are cut and joined as Arrow tables (slices and chunk lists, no copy) and
    each part is converted to pandas once: joining the carried rows of a query to the next
    batch as DataFrames copied every row a second time."""
    import pyarrow as pa

    reader = parquet_reader(path)
    names = list(columns)
    qid_column = next(c for c, role in columns.items() if role == "qid")
    before = _last_qid_before(reader, unit.first, qid_column)
    offset = unit.row  # file row of the first row of ``carry`` (or of the next batch)
    carry: pa.Table | None = None
    for batch in reader.iter_batches(batch_size=int(batch_rows), columns=names,
                                     row_groups=list(range(unit.first, unit.stop)),
                                     use_threads=False):
        table = pa.Table.from_batches([batch])
        if before is not None:  # the rows continuing the query of the row group before
            other = np.flatnonzero(_qids(table, qid_column) != before)
            skip = int(other[0]) if len(other) else len(table)
            offset, table = offset + skip, table.slice(skip)
            if not len(other):
                continue
            before = None
        if carry is not None:
            table = pa.concat_tables([carry, table])
        if not len(table):
            continue
        qid = _qids(table, qid_column)
        last = qid[-1]
        tail = len(table) - int(np.argmax(qid[::-1] != last)) if (qid != last).any() else 0
        if tail:
            yield _frame(table.slice(0, tail), columns, offset)
            offset += tail
        carry = table.slice(tail)
    if carry is None or not len(carry):
        return
    last = _qids(carry, qid_column)[-1]
    more = [carry]  # and the rows after the unit that go on with its last query
    if unit.stop < reader.metadata.num_row_groups:
        for batch in reader.iter_batches(batch_size=_TAIL_ROWS, columns=names,
                                         row_groups=list(range(unit.stop,
                                                               reader.metadata.num_row_groups))):
            table = pa.Table.from_batches([batch])
            other = np.flatnonzero(_qids(table, qid_column) != last)
            if len(other):
                more.append(table.slice(0, int(other[0])))
                break
            more.append(table)
    yield _frame(pa.concat_tables(more), columns, offset)


def _qids(table: Any, qid_column: str) -> np.ndarray:
    """The qid column of an Arrow table as one numpy array (text as objects)."""
    return table.column(qid_column).to_numpy()


def _frame(table: Any, columns: Mapping[str, str], offset: int) -> pd.DataFrame:
    """An Arrow table of a part as the DataFrame the engine takes: columns named by their
    roles, indexed by file row from ``offset``."""
    frame = table.to_pandas().rename(columns=dict(columns))
    frame.index = pd.RangeIndex(offset, offset + len(frame))
    return frame


def _last_qid_before(reader: Any, group: int, qid_column: str) -> Any:
    """The qid of the last row before row group ``group`` (None at the file's start)."""
    for g in range(group - 1, -1, -1):
        column = reader.read_row_group(g, columns=[qid_column]).column(0)
        if len(column):
            return column.slice(len(column) - 1).to_pandas().iloc[0]
    return None


def evaluate_unit(path: Path, unit: Unit, columns: Mapping[str, str], batch_rows: int,
                  metrics: list[Metric], options: Mapping[str, Any], name: str,
                  scores: Sequence[str | None]) -> tuple[list[tuple[Any, ...]], float]:
    """Read and evaluate one unit: per part, (its queries' first rows and qids, its row
    count, its per-column results or the error evaluating it), up to the first error; and
    the seconds spent reading."""
    out: list[tuple[Any, ...]] = []
    read = 0.0
    parts = unit_parts(path, unit, columns, batch_rows)
    while True:
        t = time.perf_counter()
        part = next(parts, None)
        read += time.perf_counter() - t
        if part is None:
            break
        qid = part["qid"].to_numpy()
        starts = np.flatnonzero(np.concatenate(([True], qid[1:] != qid[:-1])))
        runs = (part.index[starts].to_numpy(), part["qid"].iloc[starts].tolist())
        try:
            result: Any = evaluate_part_columns(part, None, metrics, options, name, scores)
        except Exception as exc:  # noqa: BLE001 - raised in its turn by the pass's process
            out.append((runs, len(part), exc))
            break
        out.append((runs, len(part), result))
    return out, read


def evaluate_units(path: Path, units: list[Unit], columns: Mapping[str, str],
                   batch_rows: int, metrics: list[Metric], options: Mapping[str, Any],
                   missing: str, scores: Sequence[str | None], clock: PassClock,
                   workers: int, meanwhile: Meanwhile | None = None
                   ) -> dict[str | None, pd.DataFrame]:
    """Per score column, the table one process's pass gives (labels read from the file),
    the units read and evaluated here and in ``workers - 1`` worker processes; the tasks of
    ``meanwhile`` run here while the workers have units in hand."""
    meanwhile = meanwhile if meanwhile is not None else Meanwhile()
    name = path.name
    frames: dict[str | None, Tables] = {s: Tables() for s in scores}
    unjudged: dict[str | None, list[Any]] = {s: [] for s in scores}
    run_qids: list[Any] = []
    seen: set[Any] = set()
    clock.workers = workers - 1
    in_hand = 2 * clock.workers

    def keep(_: Unit, outcome: tuple[list[tuple[Any, ...]], float]) -> None:
        parts, read = outcome
        clock.read += read
        for (rows, qids), n_rows, result in parts:
            repeated = [i for i, q in enumerate(qids) if q in seen]
            if repeated or len(set(qids)) < len(qids):
                first = min(repeated + _repeats_within(qids))
                raise not_clustered(path, qids[first], int(rows[first]))
            seen.update(qids)
            run_qids.extend(qids)
            if isinstance(result, BaseException):
                raise result
            for score, (out, skipped, seconds) in zip(scores, result):
                unjudged[score].extend(skipped)
                if out is not None and len(out):
                    frames[score].append(out)
                clock.scores[score] = clock.scores.get(score, 0.0) + seconds
            clock.rows += n_rows

    bar = progress_sized(units, desc=f"evaluate {name} ({len(scores)} score columns)",
                         size=lambda u: u.rows, total=sum(u.rows for u in units), unit="row")
    with ColumnWorkers(clock.workers) as pool:
        order = InOrder(keep, limit=in_hand + 4)
        args = (columns, int(batch_rows), metrics, dict(options), name, list(scores))
        for left, unit in enumerate(bar, start=-len(units)):
            # the last units one at a time in a worker's hands: none is left to wait there
            # while this process, done with its own, waits for it
            hands = in_hand if -left > in_hand + 1 else clock.workers
            meanwhile.run_while(partial(_full, order, hands))
            if order.busy() < hands:
                order.add(unit, pool.submit(evaluate_unit, path, unit, *args))
                continue
            try:
                result: Any = evaluate_unit(path, unit, *args)
            except Exception as exc:  # noqa: BLE001 - raised in turn, after earlier units'
                result = exc
            order.add(unit, result)
        meanwhile.run_all()
        order.finish()
    return {s: assemble(frames.pop(s).parts, None, metrics, run_qids, unjudged[s], missing,
                        name) for s in scores}


def _full(order: InOrder, hands: int) -> bool:
    """Whether ``hands`` units or more are in the workers' hands."""
    return order.busy() >= hands


def _repeats_within(qids: list[Any]) -> list[int]:
    """Indices of the qids that come again after another within one part's runs."""
    seen: set[Any] = set()
    out = []
    for i, q in enumerate(qids):
        if q in seen:
            out.append(i)
        seen.add(q)
    return out
