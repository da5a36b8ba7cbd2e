"""The cluster launcher presets ``conf/hydra/launcher/{slurm,local_processes}.yaml``.

* both compose, and resolve to hydra-submitit-launcher's launchers with this project's
  settings (the SLURM partition is left to the user);
* ``hydra/launcher=slurm`` run up to the cluster's door: with stand-in ``sbatch`` and ``srun``
  on ``PATH``, ``sbatch`` keeps the submission script and refuses the job, so the test sees the
  real sbatch script, the pickled jobs (launcher, config and our sweep callback, as a node
  would read them) and the refusal closing the sweep's parent run FAILED, not left RUNNING;
* ``hydra/launcher=local_processes`` (submitit's code path, each job a Python subprocess) runs
  a sweep of two jobs end to end into a temporary SQLite store, with nothing lost: every
  ranker run is a child of the one sweep parent, and its numbers equal
  :func:`harness.evaluate` computed here without the app. (Two jobs, each its own process:
  a grid's expansion is Hydra's, and tests/test_app_e2e.py sweeps a 2x2 one.)
"""

from __future__ import annotations

import os
import pickle
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig

from harness import Metric, evaluate
from harness.app.config import register_configs
from harness.datasets import Dataset
from tests.test_app_e2e import (
    CONF,
    N_QUERIES,
    TOL,
    Store,
    _artifact_paths,
    _download,
    _explain,
    _role,
    run_app,
    scored_without_the_app,
)

SUBMITIT = "hydra_plugins.hydra_submitit_launcher.submitit_launcher"
# no sklearn check in the jobs: seconds of imports in each process, and not what is tested
SWEEP_ARGS = [f"dataset.n_queries={N_QUERIES}", f"dataset.n_train_queries={N_QUERIES}",
              "metric=ndcg10", "tracking.figures=false", "check.sklearn=off"]


def _compose(overrides: list[str]) -> DictConfig:
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=overrides, return_hydra_config=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory,
          copy_empty_store: Callable[[Path], str]) -> Store:
    """A store whose schema exists: what is tested is the launchers, not building a store."""
    root = tmp_path_factory.mktemp("launcher_store")
    return Store(root, copy_empty_store(root))


@dataclass
class Expected:
    dataset: Dataset
    runs: dict[str, pd.DataFrame]


@pytest.fixture(scope="module")
def expected() -> Expected:
    """The oracle and random rankers scored without the app (as in test_app_e2e)."""
    return Expected(*scored_without_the_app(["oracle", "random"]))


# --------------------------------------------------------------------------------------
# composing the presets


def test_slurm_preset_composes_with_the_partition_left_to_the_user() -> None:
    cfg = _compose(["hydra/launcher=slurm", "hydra.sweep.dir=/shared/sweeps/s1"])
    launcher = cfg.hydra.launcher
    assert launcher._target_ == f"{SUBMITIT}.SlurmLauncher"
    assert launcher.partition is None
    assert (launcher.nodes, launcher.tasks_per_node) == (1, 1)
    assert launcher.timeout_min > 0 and launcher.cpus_per_task >= 1 and launcher.mem_gb >= 1
    assert launcher.array_parallelism >= 1
    assert launcher.submitit_folder == "/shared/sweeps/s1/.submitit/%j"
    assert launcher.name == "harness-synthetic"

    cfg = _compose(["hydra/launcher=slurm", "hydra.launcher.partition=cpu_long",
                    "hydra.launcher.timeout_min=30", "study=big"])
    assert cfg.hydra.launcher.partition == "cpu_long"
    assert cfg.hydra.launcher.timeout_min == 30
    assert cfg.hydra.launcher.name == "harness-big"
    obj = instantiate(cfg.hydra.launcher)  # what Hydra builds: the plugin's own class
    assert f"{type(obj).__module__}.{type(obj).__name__}" == f"{SUBMITIT}.SlurmLauncher"
    assert obj.params["partition"] == "cpu_long"


def test_local_processes_preset_composes_and_the_default_launcher_is_unchanged() -> None:
    cfg = _compose(["hydra/launcher=local_processes", "hydra.sweep.dir=/tmp/s2"])
    assert cfg.hydra.launcher._target_ == f"{SUBMITIT}.LocalLauncher"
    assert cfg.hydra.launcher.submitit_folder == "/tmp/s2/.submitit/%j"
    assert (cfg.hydra.launcher.nodes, cfg.hydra.launcher.tasks_per_node) == (1, 1)
    assert "partition" not in cfg.hydra.launcher  # a SLURM key: not in the local preset
    assert cfg.hydra.launcher.timeout_min > 0
    default = _compose([])
    assert default.hydra.launcher._target_ == \
        "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


# --------------------------------------------------------------------------------------
# hydra/launcher=slurm up to sbatch


def test_slurm_sweep_reaches_sbatch_with_pickled_jobs(store: Store, shared_data: Path,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from submitit.core.utils import DelayedSubmission

    bin_dir, kept = tmp_path / "bin", tmp_path / "submission.sh"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\n"
                      f"cp \"$1\" {shlex.quote(str(kept))}\n"
                      "echo 'sbatch: error: invalid partition specified: test_part' >&2\n"
                      "exit 1\n")
    srun = bin_dir / "srun"  # submitit checks that srun exists; the script would call it
    srun.write_text("#!/bin/sh\nexit 1\n")
    for tool in (sbatch, srun):
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    sweep = store.root / "sweep_slurm"
    proc, _ = run_app(["-m", *SWEEP_ARGS, *store.overrides("launch_slurm"),
                       f"hydra.sweep.dir={sweep}", "hydra/launcher=slurm",
                       "hydra.launcher.partition=test_part", "ranker=oracle,random"],
                      shared_data)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, _explain(proc)
    assert "invalid partition specified: test_part" in log, log  # sbatch's own words

    # the sbatch script submitit wrote from the preset: one array of 2 jobs
    script = kept.read_text()
    flags = {line for line in script.splitlines() if line.startswith("#SBATCH")}
    folder = f"{sweep}/.submitit"
    assert {"#SBATCH --partition=test_part", "#SBATCH --array=0-1%2",
            "#SBATCH --cpus-per-task=4", "#SBATCH --mem=16GB", "#SBATCH --time=120",
            "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1",
            "#SBATCH --job-name=harness-synthetic",
            f"#SBATCH --output={folder}/%A_%a/%A_%a_0_log.out"} <= flags, script
    assert f"-m submitit.core._submit {folder}/%j" in script
    assert shlex.quote(sys.executable) in script  # the nodes run this same interpreter

    # the pickled jobs a node would load: the launcher, the job's overrides, the callback
    runs = store.runs("launch_slurm")
    assert len(runs) == 1 and _role(runs, "sweep") == runs
    parent = runs[0]
    assert parent.info.status == "FAILED"  # closed, not left RUNNING
    assert (sweep / ".mlflow_parent_run_id").read_text() == parent.info.run_id
    jobs = [DelayedSubmission.load(p) for p in sorted((sweep / ".submitit").glob("*.pkl"))]
    assert len(jobs) == 2
    overrides = set()
    for job in jobs:
        launcher, (job_overrides, _, num, *_) = job.function, job.args
        assert type(launcher).__name__ == "SlurmLauncher"
        overrides.add((num, next(o for o in job_overrides if o.startswith("ranker="))))
        callbacks = launcher.hydra_context.callbacks.callbacks
        assert [type(c).__name__ for c in callbacks] == ["SweepParentRun"]
        assert callbacks[0].uri == store.uri
    assert overrides == {(0, "ranker=oracle"), (1, "ranker=random")}


# --------------------------------------------------------------------------------------
# hydra/launcher=local_processes end to end


def test_local_processes_sweep_logs_every_job(store: Store, shared_data: Path,
                                              expected: Expected, tmp_path: Path) -> None:
    # a sweep dir named by the time to the microsecond, as the default one is named by the
    # second: the jobs, started later in other processes (or on other nodes), must write into
    # the launcher's dir, not re-resolve ${now:} into one of their own
    root = store.root / "local"
    proc, _ = run_app(["-m", *SWEEP_ARGS, *store.overrides("launch_local"),
                       f"hydra.sweep.dir={root}/sweep_${{now:%H%M%S%f}}",
                       "hydra/launcher=local_processes", "ranker=oracle,random",
                       "metric.k=5"], shared_data)
    assert proc.returncode == 0, _explain(proc)
    assert "Submitit 'local' sweep output dir" in proc.stdout + proc.stderr
    dirs = list(root.iterdir())
    assert len(dirs) == 1, dirs
    sweep = dirs[0]
    assert sorted(p.name for p in sweep.iterdir() if not p.name.startswith(".")) == \
        ["0", "1", "multirun.yaml"]

    # two submitit jobs, each its own process (local job ids are the pids), each succeeded
    results = sorted((sweep / ".submitit").glob("*/*_0_result.pkl"))
    assert len(results) == 2 and len({p.parent.name for p in results}) == 2
    for path in results:
        with path.open("rb") as f:
            outcome, job_return = pickle.load(f)
        assert outcome == "success", job_return
        assert "study done" in (path.parent / f"{path.parent.name}_0_log.out").read_text()

    runs = store.runs("launch_local")
    sweeps, rankers = _role(runs, "sweep"), _role(runs, "ranker")
    assert len(sweeps) == 1 and len(rankers) == 2 and len(runs) == 3
    parent = sweeps[0]
    assert parent.info.status == "FINISHED"
    assert (sweep / ".mlflow_parent_run_id").read_text() == parent.info.run_id
    client = store.client()
    combos = set()
    for r in rankers:
        assert r.info.status == "FINISHED"
        assert r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        name, k = r.data.tags["ranker.name"], int(r.data.params["metric.k"])
        combos.add((name, k))
        table = pd.read_parquet(_download(client, r.info.run_id, f"{name}.parquet",
                                          tmp_path / r.info.run_id))
        assert len(table) == N_QUERIES
        m = Metric("ndcg", k=k)
        mine = evaluate(expected.runs[name], expected.dataset.qrels, [m])[m.display_name]
        assert not np.isnan(mine.to_numpy()).any()
        assert abs(r.data.metrics[m.key] - float(mine.mean())) <= TOL
        np.testing.assert_allclose(table.set_index("qid").loc[mine.index, m.display_name],
                                   mine.to_numpy(), rtol=0, atol=TOL)
    assert combos == {("oracle", 5), ("random", 5)}
    # the oracle is perfect and the random ranker is not: the runs are not interchangeable
    means = {r.data.tags["ranker.name"]: r.data.metrics[Metric("ndcg", k=5).key]
             for r in rankers}
    assert means["oracle"] == 1.0 and means["random"] < 1.0
    assert _artifact_paths(client, parent.info.run_id, "jobs") == {f"jobs/{i}"
                                                                   for i in range(2)}
    for i in range(2):
        assert (sweep / str(i) / "summary.csv").is_file()
    assert not list((store.root / "pending").glob("*.json"))
    assert not list(sweep.glob(".failed_job_*"))
