"""Sending a log plan is claimed: any number of ``harness sync`` processes and jobs send each
pending plan once; a file in the pending folder that is not a log plan is set aside.

The syncs that race are real subprocesses (``python -m harness sync``) started together
against one SQLite store, on twelve plans (the race they used to lose, issue 26: 24 runs for
18 and ``No such file or directory`` from the second sync, was run twice on six). The syncs
that race nothing run in this process, by the command line's own entry.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import harness.paths
from harness.tracking import LogPlan, RunRecord, execute
from harness.tracking.log_plan import PLAN_RUN_TAG, PlanBusy, claimed

PROJECT = Path(harness.paths.PROJECT_ROOT)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


def _plan(tmp: Path, uri: str, n: int) -> LogPlan:
    """A job's plan: the job run and two ranker runs (children), each with a file."""
    summary = tmp / f"summary{n}.csv"
    summary.write_text("a,b\n1,2\n")
    return LogPlan(tracking_uri=uri, experiment="claims", artifact_root=str(tmp / "art"),
                   runs=[RunRecord(key="job", name=f"job {n}", tags={"harness.role": "job"},
                                   params={"n": str(n)}, metrics={"m": 0.5},
                                   artifacts=[[str(summary), ""]]),
                         *[RunRecord(key=f"ranker:{r}", name=f"{r} {n}", parent="job",
                                     tags={"harness.role": "ranker"}, params={"n": str(n)},
                                     metrics={"m": 0.25}, artifacts=[[str(summary), ""]])
                           for r in ("a", "b")]])


def _sync(tmp: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness", "sync", "--pending-dir",
                             str(tmp / "pending"), *extra], cwd=PROJECT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _runs(uri: str) -> list:
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("claims")
    return client.search_runs([exp.experiment_id]) if exp else []


@pytest.fixture
def store(tmp_path: Path, copy_empty_store: Callable[[Path], str]) -> str:
    """A SQLite store whose schema exists (so the syncs race on the plans, not on it)."""
    return copy_empty_store(tmp_path)


@pytest.mark.slow
def test_syncs_started_together_send_each_plan_once(tmp_path: Path, store: str) -> None:
    plans = [_plan(tmp_path, store, n) for n in range(12)]
    for n, plan in enumerate(plans):
        plan.save(tmp_path / "pending" / f"plan{n}.json")
    syncs = [_sync(tmp_path) for _ in range(3)]
    outputs = [p.communicate(timeout=300)[0] for p in syncs]
    for proc, out in zip(syncs, outputs):
        assert proc.returncode == 0, out
        assert "Traceback" not in out and "No such file" not in out, out
    runs = _runs(store)
    tags = Counter(r.data.tags[PLAN_RUN_TAG] for r in runs)
    assert sorted(tags) == sorted(f"{p.plan_id}/{r.key}" for p in plans for r in p.runs)
    assert set(tags.values()) == {1}, tags  # every planned run once
    assert len(runs) == 36 and {r.info.status for r in runs} == {"FINISHED"}
    assert sorted(p.name for p in (tmp_path / "pending").iterdir()) == []  # no lock left
    # each plan was sent by one sync, named once in all their outputs
    said = "".join(outputs)
    assert all(said.count(f"plan{n}.json: logged to") == 1 for n in range(12)), said


def test_a_corrupt_plan_is_set_aside_and_the_others_are_sent(
        tmp_path: Path, store: str, sync_in_process: Callable[..., tuple[int, str]]) -> None:
    pending = tmp_path / "pending"
    _plan(tmp_path, store, 1).save(pending / "b_good.json")
    (pending / "a_bad.json").write_text('{"tracking_uri": "x", "runs": [')  # cut short
    (pending / "c_fields.json").write_text('{"tracking_uri": "x"}')  # not a plan's fields
    code, out = sync_in_process("--pending-dir", str(pending))
    assert code == 1, out
    assert "Traceback" not in out, out  # (one raised would fail the test too)
    lines = out.splitlines()
    (bad,) = [line for line in lines if line.startswith("a_bad.json")]
    assert "not a log plan (JSONDecodeError" in bad and str(pending / "corrupt") in bad
    (fields,) = [line for line in lines if line.startswith("c_fields.json")]
    assert "not a log plan (KeyError: 'runs')" in fields
    assert any(line.startswith("b_good.json: logged to") for line in lines), out
    assert "1 plan(s) sent, 0 still pending, 2 not a log plan" in out
    assert sorted(p.name for p in (pending / "corrupt").iterdir()) == ["a_bad.json",
                                                                      "c_fields.json"]
    assert not (pending / "b_good.json").exists()
    assert len(_runs(store)) == 3
    # nothing left: the corrupt files no longer stop a sync
    code, out = sync_in_process("--pending-dir", str(pending))
    assert code == 0 and "nothing pending" in out, out


_HOLD = """
import sys, time
from pathlib import Path
from harness.tracking.log_plan import claimed
with claimed(Path(sys.argv[1])) as mine:
    print("held" if mine else "busy", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_plan_another_process_holds_is_left_to_it(
        tmp_path: Path, store: str, sync_in_process: Callable[..., tuple[int, str]]) -> None:
    """A sync leaves a claimed plan alone (exit 0, nothing sent); a job's ``execute`` with
    no time to wait says so; once the holder lets go, the plan is sent."""
    marker = tmp_path / "pending" / "plan.json"
    plan = _plan(tmp_path, store, 1)
    plan.save(marker)
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(marker), "60"], cwd=PROJECT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, out = sync_in_process("--pending-dir", str(tmp_path / "pending"))
        assert code == 0, out
        assert "plan.json: being sent by another process; left to it" in out
        assert "0 plan(s) sent, 0 still pending, 1 left to the process sending them" in out
        with pytest.raises(PlanBusy, match="plan.json is being sent by another process"):
            execute(plan, marker, wait=0.2)
        with claimed(marker) as mine:
            assert not mine
        assert _runs(store) == [] and marker.is_file()
    finally:
        holder.kill()
        holder.wait()
    ids = execute(plan, marker, wait=5)
    assert not marker.exists() and not Path(f"{marker}.lock").exists()
    assert {r.info.run_id for r in _runs(store)} == {ids[r.key] for r in plan.runs}


def test_a_job_that_waited_for_a_sync_gets_the_ids_it_sent(tmp_path: Path,
                                                          store: str) -> None:
    """The plan was sent by another process while the job waited for it: the job's
    ``execute`` sends nothing and answers with the runs the other process created."""
    marker = tmp_path / "pending" / "plan.json"
    plan = _plan(tmp_path, store, 1)
    plan.save(marker)
    sent = execute(LogPlan.load(marker), marker)  # "the other process"
    assert not marker.exists()
    again = execute(plan, marker)  # the job, holding its plan in memory
    assert again == sent
    assert len(_runs(store)) == 3
