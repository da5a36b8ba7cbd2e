"""No configuration route imports or calls code by name (issue 40): ``hydra.job.env_set`` of
variables that make an interpreter load code, logging ``()`` factories and ``class``/
``ext://`` names that Hydra's shipped logging configs do not use, and launcher/sweeper
``_target_`` strings other than the installed plugins' are refused with one line and exit 2,
from the command line and from experiment files, before Hydra builds anything. Each case
proves that nothing ran: the code it would run writes a marker file, which must not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from harness.app.config import register_configs
from harness.app.config_guard import check_routes
from harness.paths import PROJECT_ROOT


def _harness(args: list[str], tmp_path: Path, tracking: tuple[str, ...] = ("tracking=off",),
             path: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    if path:
        env["PYTHONPATH"] = os.pathsep.join([path, env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "harness", *args, *tracking, "dataset.n_queries=20",
         "dataset.n_train_queries=20", f"hydra.run.dir={tmp_path}/out",
         f"hydra.sweep.dir={tmp_path}/sweep"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)


def _refused(proc: subprocess.CompletedProcess[str], key: str, tmp_path: Path) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and key in lines[0], proc.stderr[-2000:]
    assert not (tmp_path / "out").exists() and not (tmp_path / "sweep").exists()
    return lines[0]


def _experiment(tmp_path: Path, body: str) -> list[str]:
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "evil.yaml").write_text("# @package _global_\n" + body)
    return [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "experiment=evil"]


def _sitecustomize(tmp_path: Path) -> tuple[Path, Path]:
    """A folder whose sitecustomize.py, run by any interpreter that has the folder on its
    path, writes a marker file."""
    site, marker = tmp_path / "site", tmp_path / "sitecustomize_ran"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    return site, marker


def test_env_set_pythonpath_on_the_command_line_refused(tmp_path):
    site, marker = _sitecustomize(tmp_path)
    # tracking on: its worker is a fresh interpreter started with the job's environment,
    # which ran sitecustomize.py before the guard (the marker was written)
    tracking = (f"tracking.uri=sqlite:///{tmp_path}/mlflow.db", "tracking.figures=off",
                f"tracking.artifact_root={tmp_path}/art", f"tracking.pending_dir={tmp_path}/p")
    proc = _harness([f"+hydra.job.env_set.PYTHONPATH={site}", "ranker=oracle"], tmp_path,
                    tracking)
    line = _refused(proc, "hydra.job.env_set.PYTHONPATH", tmp_path)
    assert "interpreter" in line
    assert not marker.exists()


def test_env_set_in_an_experiment_file_refused(tmp_path):
    site, marker = _sitecustomize(tmp_path)
    args = _experiment(tmp_path, f"hydra:\n  job:\n    env_set:\n      LD_PRELOAD: {site}/x.so\n"
                                 f"      PYTHONPATH: {site}\n")
    _refused(_harness(args, tmp_path), "hydra.job.env_set.", tmp_path)
    assert not marker.exists()


def test_logging_factory_in_an_experiment_file_refused(tmp_path):
    src, dst = tmp_path / "secret", tmp_path / "copied"
    src.write_text("secret\n")
    args = _experiment(tmp_path, (
        "hydra:\n  job_logging:\n    handlers:\n      x:\n        '()': shutil.copyfile\n"
        f"        src: {src}\n        dst: {dst}\n"))
    line = _refused(_harness(args, tmp_path), "hydra.job_logging.handlers.x", tmp_path)
    assert "shutil.copyfile" in line
    assert not dst.exists()


@pytest.mark.parametrize("section", ["job_logging", "hydra_logging"])
def test_logging_file_handler_anywhere_refused(section, tmp_path):
    target = tmp_path / "appended.txt"
    override = (f"+hydra.{section}.handlers.x="
                f"{{class:logging.FileHandler,filename:{target}}}")
    _refused(_harness([override], tmp_path), f"hydra.{section}.handlers.x", tmp_path)
    assert not target.exists()


@pytest.mark.parametrize("override", [
    "hydra.launcher._target_=pathlib.Path.touch",
    "hydra.sweeper._target_=pathlib.Path.touch",
    "+hydra.launcher.extra._target_=pathlib.Path.touch",
])
def test_launcher_and_sweeper_targets_refused(override, tmp_path):
    key = override.lstrip("+").split("=", 1)[0]
    proc = _harness(["-m", override, "ranker=oracle,random"], tmp_path)
    _refused(proc, key, tmp_path)


def test_sweeper_target_in_an_experiment_file_refused(tmp_path):
    args = _experiment(tmp_path, "hydra:\n  sweeper:\n    _target_: os.getcwd\n")
    line = _refused(_harness(["-m", *args, "ranker=oracle,random"], tmp_path),
                    "hydra.sweeper._target_", tmp_path)
    assert "os.getcwd" in line


def test_searchpath_package_refused(tmp_path):
    # pkg:// makes Hydra import the module to find its configs: the import ran this file
    marker = tmp_path / "imported"
    (tmp_path / "evilmod.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    proc = _harness(["hydra.searchpath=[pkg://evilmod]"], tmp_path, path=str(tmp_path))
    line = _refused(proc, "hydra.searchpath", tmp_path)
    assert "pkg://evilmod" in line
    assert not marker.exists()


def _compose(overrides: list[str]):
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
        return compose("config", overrides=overrides, return_hydra_config=True)


@pytest.mark.parametrize("overrides", [
    [],
    ["hydra/launcher=joblib"], ["hydra/launcher=slurm"], ["hydra/launcher=local_processes"],
    ["hydra/launcher=submitit_local"], ["hydra/launcher=submitit_slurm"],
    ["hydra/job_logging=stdout"], ["hydra/job_logging=disabled"], ["hydra/job_logging=none"],
    ["hydra/hydra_logging=hydra_debug"], ["hydra/hydra_logging=disabled"],
    ["experiment=cast2021"], ["experiment=lightgbm_sample"], ["experiment=metric_sweep"],
    ["hydra.job_logging.root.level=DEBUG", "hydra.job_logging.formatters.simple.format='%(message)s'",
     "+hydra.job.env_set.OMP_NUM_THREADS=1", "+hydra.job.env_set.CUDA_VISIBLE_DEVICES=0"],
])
def test_what_the_project_and_hydra_ship_passes(overrides):
    check_routes(_compose(overrides))


@pytest.mark.parametrize(("config", "key"), [
    ({"job": {"env_set": {"PATH": "/tmp"}}}, "hydra.job.env_set.PATH"),
    ({"job": {"env_set": {"PYTHONSTARTUP": "x"}}}, "hydra.job.env_set.PYTHONSTARTUP"),
    ({"job_logging": {"version": 1, "formatters": {"f": {"()": "os.getcwd"}}}},
     "hydra.job_logging.formatters.f"),
    ({"job_logging": {"version": 1, "filters": {"f": {"()": "os.getcwd"}}}},
     "hydra.job_logging.filters.f"),
    ({"hydra_logging": {"version": 1, "formatters": {"f": {"class": "evil.Formatter"}}}},
     "hydra.hydra_logging.formatters.f"),
    ({"job_logging": {"version": 1, "handlers": {"console": {
        "class": "logging.StreamHandler", "stream": "ext://evil.stream"}}}},
     "hydra.job_logging.handlers.console"),
    ({"job_logging": {"version": 1, "root": {"level": "ext://os.system"}}},
     "hydra.job_logging.root.level"),
])
def test_each_route_is_named(config, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        check_routes(OmegaConf.create({"hydra": config}))
