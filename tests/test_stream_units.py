"""A stream pass whose processes each read their own row groups (units) gives the tables
one process's pass gives, value for value, and the same first error, naming the same row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness import evaluate, parse_metric
from harness.engines.parts import PassClock
from harness.engines.stream import NotClustered, evaluate_parquet_scores
from harness.engines.units import file_units, unit_parts
from harness.errors import InputError

METRICS = [parse_metric(m) for m in ("ndcg@10", "ndcg", "AP", "P@5(ties=input)", "err@10",
                                     "bpref", "mndcg@5", "AP@10(unjudged=condensed)")]
SCORES = ["bm25", "dense"]


def _frame() -> pd.DataFrame:
    """Queries of 1 to 60 rows and one of 400 (spanning several row groups), ties, some
    unjudged rows (label -1 is not used: labels 0-3 and a few queries with none above 0)."""
    rng = np.random.default_rng(8)
    sizes = list(rng.integers(1, 60, 70)) + [400] + list(rng.integers(1, 60, 30))
    qid = np.repeat([f"query-{i:05d}" for i in range(len(sizes))], sizes)
    n = len(qid)
    return pd.DataFrame({"qid": qid, "docid": [f"document-{i:07d}" for i in range(n)],
                         "bm25": rng.integers(0, 6, n).astype(float),
                         "dense": rng.random(n).round(2),
                         "label": rng.integers(0, 4, n) * (rng.random(n) < 0.7)})


def _write(frame: pd.DataFrame, path, row_group_rows: int):
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=row_group_rows)
    return path


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _frame()


@pytest.mark.parametrize("row_group_rows, batch_rows", [(97, 50), (97, 300), (250, 1000),
                                                        (33, 2000)])
def test_units_cover_every_row_once_in_file_order(frame, tmp_path, row_group_rows: int,
                                                  batch_rows: int) -> None:
    path = _write(frame, tmp_path / "run.parquet", row_group_rows)
    units = file_units(path, batch_rows)
    assert units is not None and len(units) >= 2
    columns = {"qid": "qid", "docid": "docid", "bm25": "bm25", "label": "label"}
    parts = [p for u in units for p in unit_parts(path, u, columns, batch_rows)]
    whole = pd.concat(parts)
    assert whole.index.tolist() == list(range(len(frame)))
    assert whole["docid"].tolist() == frame["docid"].tolist()
    owner = pd.Series(np.repeat(np.arange(len(parts)), [len(p) for p in parts]),
                      index=whole["qid"].to_numpy())
    assert (owner.groupby(level=0).nunique() == 1).all()  # each query whole in one part


@pytest.mark.parametrize("row_group_rows, batch_rows", [(97, 50), (97, 300), (33, 2000)])
def test_two_processes_reading_units_give_the_one_process_tables(frame, tmp_path,
                                                                 row_group_rows: int,
                                                                 batch_rows: int) -> None:
    path = _write(frame, tmp_path / "run.parquet", row_group_rows)
    alone = evaluate_parquet_scores(path, None, METRICS, SCORES, batch_rows=batch_rows)
    clock = PassClock()
    side = evaluate_parquet_scores(path, None, METRICS, SCORES, batch_rows=batch_rows,
                                   workers=2, clock=clock)
    assert clock.workers == 1 and clock.rows == len(frame)
    assert set(clock.scores) == set(SCORES) and clock.read > 0
    for s in SCORES:
        pd.testing.assert_frame_equal(side[s], alone[s], check_exact=True)
        assert side[s].attrs == alone[s].attrs
        memory = evaluate(frame.drop(columns=[c for c in SCORES if c != s]).rename(
            columns={s: "score"}), None, METRICS)
        pd.testing.assert_frame_equal(side[s], memory, check_exact=True)


def test_a_bad_score_names_the_file_row(frame, tmp_path) -> None:
    bad = frame.copy()
    bad.loc[1234, "dense"] = np.nan
    path = _write(bad, tmp_path / "bad.parquet", 97)
    errors = []
    for workers in (1, 2):
        with pytest.raises(InputError) as info:
            evaluate_parquet_scores(path, None, METRICS, SCORES, batch_rows=300,
                                    workers=workers)
        errors.append(info.value)
    assert errors[0].row == errors[1].row == 1234
    assert str(errors[0]) == str(errors[1])


@pytest.mark.parametrize("at", [150, 2500])
def test_a_query_coming_back_is_the_one_process_error(frame, tmp_path, at: int) -> None:
    bad = frame.copy()
    first = bad["qid"].iloc[0]
    bad.loc[at:at + 2, "qid"] = first  # the first query again, later in the file
    path = _write(bad, tmp_path / "unclustered.parquet", 97)
    errors = []
    for workers in (1, 2):
        with pytest.raises(NotClustered) as info:
            evaluate_parquet_scores(path, None, METRICS, SCORES, batch_rows=300,
                                    workers=workers)
        errors.append(info.value)
    assert errors[0].row == errors[1].row and errors[0].qid == errors[1].qid == first
    assert str(errors[0]) == str(errors[1])


def test_one_row_group_is_read_by_the_pass_alone(frame, tmp_path) -> None:
    path = _write(frame, tmp_path / "one.parquet", len(frame))
    assert file_units(path, 100) is None


@pytest.mark.parametrize("workers, row_group_rows", [(2, 97), (2, 5000), (1, 97)])
def test_meanwhile_tasks_run_once_each_during_the_pass(frame, tmp_path, workers: int,
                                                       row_group_rows: int) -> None:
    """With units (several row groups), with parts sent whole to a worker (one row group)
    and with no worker: every task runs once, in order, before the pass returns, and the
    tables are those of a pass without tasks."""
    path = _write(frame, tmp_path / "run.parquet", row_group_rows)
    alone = evaluate_parquet_scores(path, None, METRICS, SCORES, batch_rows=100)
    ran: list[int] = []
    side = evaluate_parquet_scores(path, None, METRICS, SCORES, batch_rows=100,
                                   workers=workers,
                                   meanwhile=[lambda: ran.append(1), lambda: ran.append(2)])
    assert ran == [1, 2]
    for s in SCORES:
        pd.testing.assert_frame_equal(side[s], alone[s], check_exact=True)


def test_a_failing_meanwhile_task_stops_the_pass_with_its_error(frame, tmp_path) -> None:
    path = _write(frame, tmp_path / "run.parquet", 97)

    def broken() -> None:
        raise RuntimeError("the sample could not be read")

    with pytest.raises(RuntimeError, match="the sample could not be read"):
        evaluate_parquet_scores(path, None, METRICS, SCORES, batch_rows=100, workers=2,
                                meanwhile=[broken])
