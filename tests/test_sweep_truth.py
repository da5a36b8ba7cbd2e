"""A sweep stopped between a job's "results written" and its log plan says what is true
(issue 40): every job whose results are complete is logged or has a pending plan (its
``INCOMPLETE`` mark goes only once the plan is saved), and the closing line names the jobs
stopped before that. The window is held open by a ``sitecustomize`` hook (on
``PYTHONPATH``, so loky's workers get it) that pauses the preparation of the log."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_sweep_signals import (
    Job,
    _no_survivors,
    _one_line,
    _pending,
    _runs,
    slow_hook,
)

_SLOW_PREPARE = slow_hook("harness.app.log", "study_runs", "HARNESS_TEST_SLOW_PREPARE",
                          "PREPARING LOG")


@pytest.mark.slow
def test_sigterm_after_results_written_leaves_every_finished_job_logged_or_pending(
        tmp_path: Path, sync_in_process: Callable[..., tuple[int, str]]) -> None:
    # no tracking worker: the jobs are stopped before they log (the workers' end under
    # SIGTERM: tests/test_sweep_signals.py; under SIGKILL: below)
    sweep = Job(tmp_path, ["-m", "ranker=oracle,noisy_oracle", "hydra/launcher=joblib",
                           "hydra.launcher.n_jobs=2", "tracking.worker=false"],
                hook_text=_SLOW_PREPARE,
                env={"HARNESS_TEST_SLOW_PREPARE": "60"})
    sweep.wait_for("PREPARING LOG")  # a job wrote its results; its log is not saved yet
    children = sweep.descendants()
    sweep.proc.send_signal(signal.SIGTERM)
    assert sweep.finish() == 128 + signal.SIGTERM
    _no_survivors(children)
    line = _one_line(sweep.said(), "SIGTERM")
    jobs = [p for p in (tmp_path / "out").iterdir() if p.name.isdigit()]
    written = sorted(p.name for p in jobs if (p / "summary.csv").is_file())
    finished = sorted(p.name for p in jobs if (p / "summary.csv").is_file()
                      and not (p / "INCOMPLETE").exists())
    cut = sorted(p.name for p in jobs if (p / "INCOMPLETE").exists())
    assert written, "no job wrote its results"
    assert set(written) <= set(finished) | set(cut)
    if cut:
        assert f"jobs {', '.join(cut)} were stopped before their results were complete" in line
    if _pending(tmp_path):
        assert "log plan(s) wait in" in line
    else:
        assert "every finished job was logged" in line
    code, said = sync_in_process("--pending-dir", str(tmp_path / "pending"))
    assert code == 0, said
    logged = Counter(r.data.tags["job"].split(":", 1)[0] for r in _runs(tmp_path)
                     if r.data.tags["harness.role"] == "ranker")
    assert sorted(logged) == finished and set(logged.values()) <= {1}, (logged, finished)


@pytest.mark.slow
def test_sigkill_to_a_joblib_sweep_leaves_no_worker_behind(tmp_path: Path) -> None:
    """SIGKILL cannot be caught by the sweep's process: its loky workers end by themselves
    (they watch their parent) and with them loky's resource tracker, so nothing holds the
    caller's output open."""
    import psutil

    sweep = Job(tmp_path, ["-m", "ranker=oracle,noisy_oracle", "hydra/launcher=joblib",
                           "hydra.launcher.n_jobs=2"], hook_text=_SLOW_PREPARE,
                env={"HARNESS_TEST_SLOW_PREPARE": "120"})
    sweep.wait_for("PREPARING LOG")
    children = sweep.descendants()
    assert any("loky" in " ".join(p.cmdline()) for p in children)
    sweep.proc.send_signal(signal.SIGKILL)
    assert sweep.finish() == -signal.SIGKILL
    _, alive = psutil.wait_procs(children, timeout=120)  # a deadline, not a duration
    left = [p.pid for p in alive]
    for p in alive:  # the test's own processes: not left behind when it fails
        p.kill()
    assert left == []
