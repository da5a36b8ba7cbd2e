"""A job killed (SIGKILL) at any point of its MLflow logging is completed by harness sync:
exactly one FINISHED run per ranker and one job run, each with every metric, never a copy.

The job runs as a subprocess whose MLflow client kills its own process right after the
N-th call of one method (``create_run`` returned but its id not yet saved, a ``log_batch``
sent, an artifact uploaded, a run terminated). A job killed before its results are written
leaves an ``INCOMPLETE`` file in its folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import harness.paths
from harness.app.study import INCOMPLETE

PROJECT = Path(harness.paths.PROJECT_ROOT)


@pytest.fixture(autouse=True)
def store(tmp_path: Path, copy_empty_store: Callable[[Path], str]) -> str:
    """The jobs log to an empty store whose schema exists: what is tested is stopping them,
    not building a store (tests/test_journeys.py starts jobs on a fresh one)."""
    return copy_empty_store(tmp_path)

# Runs `python -m harness ARGS` with one MlflowClient method wrapped: after its N-th call
# returns, the process kills itself with SIGKILL (no cleanup, no atexit).
_DRIVER = textwrap.dedent("""
    import os, runpy, signal, sys
    method, nth = sys.argv[1], int(sys.argv[2])
    sys.argv = ["harness", *sys.argv[3:]]
    if method == "write_figures":  # die while the results are being written
        import harness.app.write as write
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        write.write_figures = die
    else:
        from mlflow.tracking import MlflowClient
        original = getattr(MlflowClient, method)
        calls = [0]
        def wrapped(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            calls[0] += 1
            if calls[0] == nth:
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        setattr(MlflowClient, method, wrapped)
    runpy.run_module("harness", run_name="__main__")
""")

RANKERS = ("oracle", "coin")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


def _args(tmp: Path) -> list[str]:
    # no sklearn check: its import is seconds of each job's CPU, and it is not what is tested
    return ["ranker=oracle", "+ranker.coin={kind:random,seed:3}", "metric=ndcg10",
            "metric.extra=[ap@10]", "dataset.n_queries=20", "tracking.figures=off",
            "check.sklearn=off",
            f"tracking.uri=sqlite:///{tmp}/mlflow.db", f"tracking.artifact_root={tmp}/art",
            f"tracking.pending_dir={tmp}/pending", f"cache_dir={tmp}/cache",
            f"hydra.run.dir={tmp}/out", "study=killed"]


def _sync(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "sync", "--pending-dir",
                           f"{tmp}/pending", *extra], cwd=PROJECT, env=_env(),
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("method, nth", [
    ("create_run", 1),     # the job run exists, its id never reached the plan file
    ("create_run", 2),     # the first ranker run exists, id unsaved, job run half logged
    ("log_batch", 2),      # the first ranker's metrics sent, nothing after
    ("log_artifact", 3),   # mid-way through the job run's files
    ("set_terminated", 2), # the first ranker FINISHED, the next one not begun
])
def test_sync_completes_a_job_killed_while_logging(
        tmp_path: Path, method: str, nth: int,
        sync_in_process: Callable[..., tuple[int, str]]) -> None:
    killed = subprocess.run([sys.executable, "-c", _DRIVER, method, str(nth), *_args(tmp_path)],
                            cwd=PROJECT, env=_env(), capture_output=True, text=True,
                            timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (tmp_path / "out" / INCOMPLETE).exists()  # results were complete on disk
    assert len(list((tmp_path / "pending").glob("*.json"))) == 1  # the plan survived

    # the syncs run in this process: what is tested is what they send (a real sync's
    # process: test_sync_names_a_plan_whose_results_are_gone_and_drops_it)
    code, said = sync_in_process("--pending-dir", f"{tmp_path}/pending")
    assert code == 0, said
    assert not list((tmp_path / "pending").glob("*.json"))
    # a second sync finds nothing left and changes nothing (checked below)
    code, said = sync_in_process("--pending-dir", f"{tmp_path}/pending")
    assert code == 0 and "nothing pending" in said, said

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.get_experiment_by_name("killed")
    runs = client.search_runs([exp.experiment_id])
    roles = sorted(r.data.tags["harness.role"] + ":" + r.data.tags.get("ranker.name", "")
                   for r in runs)
    assert roles == ["job:", *sorted(f"ranker:{n}" for n in RANKERS)], roles
    assert {r.info.status for r in runs} == {"FINISHED"}
    (job,) = [r for r in runs if r.data.tags["harness.role"] == "job"]
    for run in runs:
        if run is job:
            continue
        assert run.data.tags["mlflow.parentRunId"] == job.info.run_id
        assert {"ndcg_at_10", "ap_at_10"} <= set(run.data.metrics)
        history = client.get_metric_history(run.info.run_id, "ndcg_at_10")
        assert len(history) == 1  # sent again on the replay, stored once
        files = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"per_query.csv", f"{run.data.tags['ranker.name']}.parquet"} <= files


@pytest.mark.slow
def test_a_job_killed_before_its_results_are_written_leaves_a_marker(tmp_path: Path) -> None:
    killed = subprocess.run([sys.executable, "-c", _DRIVER, "write_figures", "1",
                             *_args(tmp_path)], cwd=PROJECT, env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    marker = tmp_path / "out" / INCOMPLETE
    assert marker.is_file() and "stopped early" in marker.read_text()
    assert not (tmp_path / "pending").exists() or not list((tmp_path / "pending").glob("*"))


@pytest.mark.slow
def test_sync_names_a_plan_whose_results_are_gone_and_drops_it(
        tmp_path: Path, sync_in_process: Callable[..., tuple[int, str]]) -> None:
    args = [a for a in _args(tmp_path) if not a.startswith("tracking.uri")]
    down = subprocess.run([sys.executable, "-m", "harness", *args,
                           "tracking.uri=http://127.0.0.1:9", "tracking.max_retries=0",
                           "tracking.timeout_s=1"], cwd=PROJECT, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert down.returncode == 3, down.stderr[-2000:]
    (plan,) = (tmp_path / "pending").glob("*.json")
    import shutil

    shutil.rmtree(tmp_path / "out")
    uri = ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    proc = _sync(tmp_path, *uri)
    assert proc.returncode == 1
    said = proc.stdout + proc.stderr
    assert "are gone" in said and str(tmp_path / "out") in said
    assert f"harness sync --drop {plan.stem}" in said
    assert plan.exists()  # nothing dropped without being asked

    # the next ones in this process (the command line's entry, its exit codes and words)
    pending = ["--pending-dir", f"{tmp_path}/pending"]
    code, said = sync_in_process(*pending, *uri, "--drop-missing")
    assert code == 0, said
    assert not plan.exists() and (tmp_path / "pending" / "dropped" / plan.name).exists()
    code, said = sync_in_process(*pending, *uri)
    assert code == 0 and "nothing pending" in said, said
    code, said = sync_in_process(*pending, "--drop", "no-such-plan")
    assert code == 2 and "no pending plan 'no-such-plan.json'" in said, said
