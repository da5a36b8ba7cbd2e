"""The score columns of one stream pass evaluated side by side in worker processes give the
tables one process gives, value for value, and errors that name the file row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import parse_metric
from harness.engines import Engine
from harness.engines.parts import PassClock
from harness.engines.stream import evaluate_parquet_scores
from harness.errors import InputError

METRICS = [parse_metric(m) for m in ("ndcg@10", "AP", "P@5(ties=input)", "err@10",
                                     "bpref", "AP@10(unjudged=condensed)")]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory):
    rng = np.random.default_rng(5)
    n_q, per = 60, 30
    n = n_q * per
    frame = pd.DataFrame({"qid": np.repeat([f"query-{i:05d}" for i in range(n_q)], per),
                          "docid": [f"document-{i:07d}" for i in range(n)],
                          "bm25": rng.integers(0, 6, n).astype(float),
                          "dense": rng.random(n).round(1),
                          "weak": rng.integers(0, 2, n).astype(float)})
    judged = frame.sample(frac=0.6, random_state=1)
    qrels = pd.DataFrame({"qid": judged["qid"], "docid": judged["docid"],
                          "label": rng.integers(0, 3, len(judged))})
    extra = pd.DataFrame({"qid": ["query-99999"] * 2, "docid": ["a", "b"], "label": [1, 2]})
    qrels = pd.concat([qrels, extra], ignore_index=True)  # a judged query no run retrieved
    path = tmp_path_factory.mktemp("workers") / "run.parquet"
    frame.to_parquet(path, index=False)
    return path, qrels


@pytest.mark.parametrize("missing", ["exclude", "zero"])
def test_workers_give_the_tables_of_one_process(scored, missing: str) -> None:
    path, qrels = scored
    scores = ["bm25", "dense", "weak"]
    alone = evaluate_parquet_scores(path, qrels, METRICS, scores, batch_rows=200,
                                    missing=missing)
    clock = PassClock()
    side = evaluate_parquet_scores(path, qrels, METRICS, scores, batch_rows=200,
                                   missing=missing, workers=3, clock=clock)
    assert clock.workers == 2 and set(clock.scores) == set(scores)
    for s in scores:
        pd.testing.assert_frame_equal(side[s], alone[s], check_exact=True)
        assert side[s].attrs == alone[s].attrs
    assert not alone["bm25"].equals(alone["dense"])  # the columns were told apart


def _errors(scored, tmp_path, bad_scores: dict[str, int]) -> list[InputError]:
    """The error of the 2-column pass, in one process and with a worker, on the file with a
    NaN score at each given column's row."""
    path, qrels = scored
    frame = pd.read_parquet(path)
    for column, row in bad_scores.items():
        frame.loc[row, column] = np.nan
    bad = tmp_path / "bad.parquet"
    frame.to_parquet(bad, index=False)
    errors = []
    for workers in (1, 2):
        with pytest.raises(InputError) as info:
            evaluate_parquet_scores(bad, qrels, METRICS, ["bm25", "dense"], batch_rows=200,
                                    workers=workers)
        errors.append(info.value)
    return errors


def test_an_error_in_a_worker_names_the_file_row(scored, tmp_path) -> None:
    alone, side = _errors(scored, tmp_path, {"dense": 777})
    assert alone.row == side.row == 777
    assert str(alone) == str(side)


def test_the_engine_chooses_workers_by_file_size(scored, monkeypatch) -> None:
    import harness.engines.workers as workers

    path, _ = scored
    assert Engine(kind="stream").column_workers(path, 2) == 1  # 1,800 rows: not worth one
    assert Engine(kind="stream", n_workers=4).column_workers(path, 3) == 3  # one per column
    assert Engine(kind="stream", n_workers=4).column_workers(path, 1) == 1
    monkeypatch.setattr(workers, "WORKER_MIN_ROWS", 1_000)
    monkeypatch.setattr(workers, "cores", lambda: 2)
    assert Engine(kind="stream").column_workers(path, 3) == 2


@pytest.mark.parametrize("first, second", [(500, 1000), (1000, 500)])
def test_the_first_error_is_the_one_of_one_process(scored, tmp_path, first: int,
                                                   second: int) -> None:
    """A bad score in each column, in different parts: the error one process meets first
    (part by part, column by column) is the one raised, wherever each column ran."""
    errors = _errors(scored, tmp_path, {"bm25": first, "dense": second})
    assert [e.row for e in errors] == [min(first, second)] * 2


def test_an_evaluation_error_comes_before_a_later_reading_error(scored, tmp_path) -> None:
    from harness.engines.stream import NotClustered

    path, qrels = scored
    frame = pd.read_parquet(path)
    frame.loc[300, "dense"] = np.nan  # an early part's second column
    tail = frame.iloc[-30:].copy()
    tail["qid"] = frame["qid"].iloc[0]  # the first query again at the end: not clustered
    bad = tmp_path / "bad.parquet"
    pd.concat([frame.iloc[:-30], tail], ignore_index=True).to_parquet(bad, index=False)
    for workers in (1, 2):
        with pytest.raises(InputError) as info:
            evaluate_parquet_scores(bad, qrels, METRICS, ["bm25", "dense"], batch_rows=200,
                                    workers=workers)
        assert not isinstance(info.value, NotClustered) and info.value.row == 300
    frame.loc[300, "dense"] = 0.5
    pd.concat([frame.iloc[:-30], tail], ignore_index=True).to_parquet(bad, index=False)
    with pytest.raises(NotClustered):  # and the reader's error is raised when it is first
        evaluate_parquet_scores(bad, qrels, METRICS, ["bm25", "dense"], batch_rows=200,
                                workers=2)


def _columns_in_a_loky_worker(path: str) -> tuple[int, dict[str, pd.DataFrame]]:
    tables, clock = Engine(kind="stream", n_workers=2, batch_rows=300).evaluate_file_scores(
        path, None, METRICS[:2], ["bm25", "dense"], names={"label": "weak"})
    return clock.workers, tables


def test_a_sweep_job_of_the_joblib_launcher_evaluates_its_columns_alone(scored) -> None:
    """hydra's joblib launcher runs each job in a loky process, whose start method its
    children cannot find: the columns are then evaluated in the job's process, with the
    same tables, instead of a worker failing to start."""
    from joblib import Parallel, delayed

    path, _ = scored
    (workers, tables), = Parallel(n_jobs=2, backend="loky")(
        [delayed(_columns_in_a_loky_worker)(str(path))])
    assert workers == 0
    alone = evaluate_parquet_scores(path, None, METRICS[:2], ["bm25", "dense"],
                                    batch_rows=300, names={"label": "weak"})
    for column in ("bm25", "dense"):
        pd.testing.assert_frame_equal(tables[column], alone[column], check_exact=True)


def test_a_daemonic_process_evaluates_its_columns_alone(scored, monkeypatch, caplog) -> None:
    import logging
    import multiprocessing

    class Daemon:
        daemon = True

    path, _ = scored
    monkeypatch.setattr(multiprocessing, "current_process", lambda: Daemon())
    with caplog.at_level(logging.WARNING, logger="harness"):
        assert Engine(kind="stream", n_workers=2).column_workers(path, 2) == 1
    assert "a daemonic process may not start processes" in caplog.text
    assert "engine.n_workers=2" in caplog.text
