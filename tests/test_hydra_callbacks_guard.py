"""Hydra builds ``hydra.callbacks`` from ``_target_`` strings before any job starts; the
project builds only the callbacks it ships (``harness.app.hydra_guard``), whether the
callback comes from the command line or from an experiment file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.app.hydra_guard import ALLOWED, check_callbacks
from harness.paths import PROJECT_ROOT


def _harness(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args, "tracking=off",
         f"hydra.run.dir={tmp_path}/out", f"hydra.sweep.dir={tmp_path}/sweep"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("override", [
    # a top-level target: Hydra would call os.getcwd, which does nothing harmful here; the
    # marker file shows that nothing was built
    "+hydra.callbacks.x._target_=pathlib.Path.touch",
    # a target inside the arguments of the project's own callback
    "+hydra.callbacks.mlflow_sweep.arg._target_=pathlib.Path.touch",
])
def test_callback_override_refused(override, tmp_path):
    marker = tmp_path / "built"
    proc = _harness([override, f"+hydra.callbacks.x.self={marker}"
                     if override.startswith("+hydra.callbacks.x.")
                     else f"+hydra.callbacks.mlflow_sweep.arg.self={marker}"], tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "hydra.callbacks." in lines[0] and "_target_" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not marker.exists()
    assert not (tmp_path / "out").exists()


def test_callback_in_an_experiment_file_refused(tmp_path):
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    marker = tmp_path / "built"
    (conf / "evil.yaml").write_text(
        "# @package _global_\nhydra:\n  callbacks:\n    x:\n"
        f"      _target_: pathlib.Path.touch\n      self: {marker}\n")
    proc = _harness([f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "experiment=evil"],
                    tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "hydra.callbacks.x: 'pathlib.Path.touch' is not a callback" in proc.stderr
    assert not marker.exists()


def test_shipped_callbacks_pass():
    for target in ALLOWED:
        check_callbacks(OmegaConf.create({"hydra": {"callbacks": {"c": {"_target_": target}}}}))
    check_callbacks(OmegaConf.create({"hydra": {"callbacks": None}}))
    with pytest.raises(ValueError, match=r"hydra.callbacks.c.args\[0\]._target_"):
        check_callbacks(OmegaConf.create({"hydra": {"callbacks": {"c": {
            "_target_": "harness.app.callbacks.SweepParentRun",
            "args": [{"_target_": "os.system"}]}}}}))
