"""The tracking worker: a child process that makes MLflow ready while the study computes,
then sends the study's log plan. What it logs must be what logging in process logs; its
errors must reach the job as the same messages; a dead worker must lose nothing."""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from harness.app import log as log_stage
from harness.app.plan import StudyPlan, build_plan
from harness.app.study import run_study
from harness.tracking.log_plan import LogPlan, RunRecord, refused
from harness.tracking.worker import TrackingWorker, WorkerFailed, WorkerGone


def _plan(tmp: Path, uri: str, *, metric: str = "m.mean") -> tuple[LogPlan, Path]:
    table = tmp / "table.csv"
    table.write_text("qid,value\nq1,0.5\n")
    plan = LogPlan(tracking_uri=uri, experiment="worker", artifact_root=str(tmp / "art"),
                   runs=[RunRecord(key="job", name="job", tags={"harness.role": "job"},
                                   params={"a.b": "1"}, metrics={metric: 0.25},
                                   artifacts=[[str(table), ""]], start_ms=1000, end_ms=2000),
                         RunRecord(key="ranker:r", name="r", parent="job",
                                   metrics={"m.mean": 0.75}, status="FAILED")])
    marker = tmp / "pending" / "plan.json"
    plan.save(marker)
    return plan, marker


def test_the_worker_sends_a_plan_and_answers_its_run_ids(tmp_path: Path) -> None:
    """To a store that does not exist yet (the other tests copy an empty one)."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    _, marker = _plan(tmp_path, uri)
    with TrackingWorker(uri) as worker:
        pid = worker.proc.pid if worker.proc else None
        ids = worker.execute(marker)
    assert pid is not None
    with pytest.raises(ProcessLookupError):  # closed means gone, not left behind
        os.kill(pid, 0)
    assert not marker.exists()  # everything arrived
    client = MlflowClient(tracking_uri=uri)
    job, ranker = client.get_run(ids["job"]), client.get_run(ids["ranker:r"])
    assert job.data.params == {"a.b": "1"} and job.data.metrics == {"m.mean": 0.25}
    assert (job.info.status, job.info.start_time, job.info.end_time) == ("FINISHED", 1000,
                                                                         2000)
    assert [a.path for a in client.list_artifacts(ids["job"])] == ["table.csv"]
    assert ranker.data.tags["mlflow.parentRunId"] == ids["job"]
    assert (ranker.info.status, ranker.data.metrics) == ("FAILED", {"m.mean": 0.75})


def test_the_worker_reports_a_refusal_and_closes_the_runs_it_opened(
        tmp_path: Path, copy_empty_store: Callable[[Path], str]) -> None:
    uri = copy_empty_store(tmp_path)
    _, marker = _plan(tmp_path, uri, metric="bad#name")  # a name MLflow refuses
    with TrackingWorker(uri) as worker, pytest.raises(WorkerFailed) as failed:
        worker.execute(marker)
    assert failed.value.error_code == "INVALID_PARAMETER_VALUE"
    assert failed.value.kind == "MlflowException"
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("worker").experiment_id])
    assert [r.info.status for r in runs] == ["FAILED"]  # the job run, created then refused
    assert LogPlan.load(marker).runs[0].run_id == runs[0].info.run_id  # progress kept


def test_an_unreachable_store_reaches_the_job_as_its_error(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for var, value in {"MLFLOW_HTTP_REQUEST_TIMEOUT": "2",
                       "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}.items():
        monkeypatch.setenv(var, value)
    _, marker = _plan(tmp_path, f"http://127.0.0.1:{port}")
    with TrackingWorker(f"http://127.0.0.1:{port}") as worker, \
            pytest.raises(WorkerFailed) as failed:
        worker.execute(marker)
    assert not refused(failed.value)  # not a refusal: a replay may go through
    assert str(port) in str(failed.value)
    assert marker.exists()


def test_a_closed_worker_is_gone(tmp_path: Path,
                                 copy_empty_store: Callable[[Path], str]) -> None:
    worker = TrackingWorker(copy_empty_store(tmp_path))
    worker.close()
    with pytest.raises(WorkerGone):
        worker.execute(tmp_path / "plan.json")


def _config(tmp: Path, uri: str, **tracking: Any) -> dict[str, Any]:
    return {
        "study": "worker", "seed": 0, "cache_dir": str(tmp / "cache"),
        "dataset": {"kind": "synthetic", "n_queries": 20, "n_train_queries": 0},
        "ranker": {"oracle": {"kind": "oracle"}, "random": {"kind": "random"}},
        "metric": {"name": "ndcg", "gain": "exp2", "discount": "log2", "k": 10,
                   "ties": "average", "ideal": "judged"},
        "tracking": {"enabled": True, "uri": uri, "experiment": "worker",
                     "artifact_root": str(tmp / "art"), "pending_dir": str(tmp / "pending"),
                     "figures": False, "bootstrap_resamples": 100, **tracking},
        "check": {"sklearn": "fail"},
    }


@pytest.mark.parametrize("how", ["worker", "killed worker", "in process"])
def test_a_study_logs_the_same_runs_through_a_worker_or_in_process(
        how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, copy_empty_store: Callable[[Path], str]) -> None:
    uri = copy_empty_store(tmp_path)
    started: list[TrackingWorker] = []

    def start(cfg: Any) -> TrackingWorker | None:
        if how == "in process":
            return None
        worker = TrackingWorker(uri)
        if how == "killed worker":
            assert worker.proc is not None
            worker.proc.kill()
            worker.proc.wait()
        started.append(worker)
        return worker

    monkeypatch.setattr(log_stage, "start_tracking", start)
    with caplog.at_level(logging.WARNING, logger="harness"):
        result = run_study(_config(tmp_path, uri), tmp_path / "out")
    assert started == [] if how == "in process" else len(started) == 1
    assert all(w.proc is None for w in started)  # closed by the study
    assert ("logging in process" in caplog.text) == (how == "killed worker")
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("worker").experiment_id])
    ids = dict(result.run_ids)
    assert ids.pop("experiment") == client.get_experiment_by_name("worker").experiment_id
    assert sorted(r.info.run_id for r in runs) == sorted(ids.values())
    assert sorted(r.data.tags["harness.role"] for r in runs) == ["job", "ranker", "ranker"]
    by_name = {r.data.tags.get("ranker.name"): r for r in runs}
    metric = result.metrics[0]
    for name, ranker in result.rankers.items():  # the mean of the per-query table on disk
        assert by_name[name].data.metrics[metric.key] == pytest.approx(
            ranker.per_query[metric.display_name].mean(), abs=1e-12)
    assert not list((tmp_path / "pending").glob("*.json"))


def test_start_tracking_uses_a_worker_only_where_it_saves_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        copy_empty_store: Callable[[Path], str]) -> None:
    uri = copy_empty_store(tmp_path)
    def plan(**options: bool) -> StudyPlan:
        return build_plan(_config(tmp_path, uri, **options))

    assert log_stage.start_tracking(plan()) is None  # mlflow is loaded here
    monkeypatch.delitem(sys.modules, "mlflow")  # as in a fresh job process
    assert log_stage.start_tracking(plan(enabled=False)) is None
    assert log_stage.start_tracking(plan(worker=False)) is None
    worker = log_stage.start_tracking(plan())
    assert isinstance(worker, TrackingWorker)
    worker.close()
