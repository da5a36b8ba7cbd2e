"""A pending folder that cannot be written and a disk that fills while a job prepares its
MLflow log (issue 40): one line saying what was kept, exit 2, never a traceback. Full disks
are simulated with ``OSError(ENOSPC)``; the read-only folder is a real one (``/sys``)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from harness.app.config import register_configs
from harness.errors import OutputError
from harness.paths import PROJECT_ROOT


def _tracking(tmp_path: Path, pending: Path | str) -> list[str]:
    return [f"tracking.uri=sqlite:///{tmp_path}/mlflow.db", f"tracking.pending_dir={pending}",
            f"tracking.artifact_root={tmp_path}/artifacts", "tracking.figures=off",
            "tracking.worker=false", "ranker=oracle", f"cache_dir={tmp_path}/cache",
            "dataset.n_queries=20", "dataset.n_train_queries=20"]


def test_a_read_only_pending_folder_is_refused_before_the_study_computes(tmp_path):
    pending = "/sys/harness_pending_cannot_be_made"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *_tracking(tmp_path, pending),
         f"hydra.run.dir={tmp_path}/out"], cwd=PROJECT_ROOT, capture_output=True, text=True,
        timeout=300, env={**os.environ, "HYDRA_FULL_ERROR": "0"})
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2, both[-3000:]
    assert "Traceback" not in both
    lines = [line for line in both.splitlines() if "ERROR" in line or "error:" in line]
    assert len(lines) == 1 and "tracking.pending_dir" in lines[0], both[-3000:]
    assert "Read-only file system" in lines[0] or "Permission denied" in lines[0]
    assert not (tmp_path / "cache").exists()  # refused before any ranker scored
    assert not (tmp_path / "out" / "summary.csv").exists()


def _run(tmp_path: Path):
    from harness.app.study import run_study

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
        cfg = compose("config", overrides=_tracking(tmp_path, tmp_path / "pending"))
    out = tmp_path / "job"
    with pytest.raises(OutputError) as info:
        run_study(cfg, out)
    return str(info.value), out


def test_a_full_pending_folder_while_the_plan_is_saved(tmp_path, monkeypatch):
    from harness.tracking.log_plan import LogPlan

    def full(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(LogPlan, "save", full)
    message, out = _run(tmp_path)
    assert "No space left on device" in message and str(tmp_path / "pending") in message
    assert f"the results are complete in {out}" in message
    assert "nothing was sent to MLflow" in message and "no log plan was kept" in message
    assert (out / "summary.csv").is_file() and not (out / "INCOMPLETE").exists()
    assert not list((tmp_path / "pending").glob("*.json")) if (tmp_path / "pending").is_dir() \
        else True


def test_a_run_folder_that_fills_while_the_log_is_prepared(tmp_path, monkeypatch):
    from harness.app import log

    def full(per_query, folder):
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / "per_query.csv"))

    monkeypatch.setattr(log, "_viewable_table", full)
    message, out = _run(tmp_path)
    assert "No space left on device" in message and "per_query.csv" in message
    assert "nothing was sent to MLflow" in message and "no log plan was kept" in message
    assert (out / "summary.csv").is_file()
