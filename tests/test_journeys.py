"""A job as a new user meets it: what it prints, what MLflow shows, parallel starts.

Each job runs as a subprocess (``python -m harness``) into a temporary SQLite store: a
fresh one where the test is about starting on one, else a copy of an empty store
(``copy_empty_store``). What a sweep prints at its end, and the job prefixes of parallel
sweep jobs, are checked on the README's sweeps in tests/test_readme_commands.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import harness.paths
from harness.app.notes import DEFAULTS_LINE
from harness.errors import TrackingUnavailable

PROJECT = Path(harness.paths.PROJECT_ROOT)
RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


def _app_args(tmp: Path, tag: str) -> list[str]:
    return [f"tracking.uri=sqlite:///{tmp}/mlflow.db", f"tracking.artifact_root={tmp}/art",
            f"tracking.pending_dir={tmp}/pending", f"cache_dir={tmp}/cache",
            f"hydra.run.dir={tmp}/out/{tag}"]


def test_a_job_ends_with_its_ids_and_next_steps_and_mlflow_explains_itself(
        tmp_path: Path, copy_empty_store: Callable[[Path], str]) -> None:
    copy_empty_store(tmp_path)
    args = ["ranker=oracle", "+ranker.coin={kind:random,seed:3}", "metric=ndcg10",
            "metric.extra=[ap@10]", "dataset.n_queries=30", *_app_args(tmp_path, "job")]
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=PROJECT, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    # the experiment is named after the study, whose name is by default the dataset's, and
    # is marked as model development (MLflow's UI then opens it on the runs table)
    (exp,) = [e for e in client.search_experiments() if e.name == "synthetic"]
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = {r.data.tags["harness.role"] + ":" + r.data.tags.get("ranker.name", ""): r
            for r in client.search_runs([exp.experiment_id])}
    assert set(runs) == {"job:", "ranker:oracle", "ranker:coin"}
    job = runs["job:"]
    printed = set(RUN_ID.findall(out))
    assert {r.info.run_id for r in runs.values()} <= printed  # every id is printed
    for name in ("oracle", "coin"):  # each next to its ranker's name
        assert re.search(rf"^\s+{name}\s+{runs['ranker:' + name].info.run_id}$", out, re.M)
    assert f"harness compare {job.info.run_id} --baseline oracle" in out
    assert "nDCG@10" in out and "Files: " + str(tmp_path / "out" / "job") in out
    # descriptions: the ranker's table of variants, the job's ranker x variant table
    for name in ("oracle", "coin"):
        run = runs["ranker:" + name]
        note = run.data.tags["mlflow.note.content"].replace("&emsp;", "")  # cell padding
        assert "| `nDCG@10` |" in note and "| `AP@10` |" in note and DEFAULTS_LINE in note
        mean = run.data.metrics["ndcg_at_10"]
        assert f"| `nDCG@10` | {mean:.4f} |" in note
        assert run.info.run_name == name
        files = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"per_query.csv", f"{name}.parquet", "figures"} <= files
        table = Path(client.download_artifacts(run.info.run_id, "per_query.csv",
                                               str(tmp_path / name)))
        header = table.read_text().splitlines()[0].split(",")
        assert header[:3] == ["qid", "nDCG@10", "AP@10"]  # the preview opens on the values
        assert any(f.path.endswith(".png") for f in client.list_artifacts(run.info.run_id,
                                                                          "figures"))
    job_note = job.data.tags["mlflow.note.content"].replace("&emsp;", "")
    assert "| variant | oracle | coin |" in job_note
    assert job.info.run_name.startswith("synthetic · ranker=oracle +ranker.coin={kind:random,"
                                        "seed:3} metric=ndcg10 metric.extra=[ap@10] "
                                        "dataset.n_queries=30 · ")
    assert "tracking.uri" not in job.info.run_name
    # the printed reproduce command runs as printed
    (line,) = [s.strip() for s in out.splitlines() if "harness reproduce" in s]
    assert line.split()[0].endswith("harness")  # harness reproduce ..., this venv's or on PATH
    rerun = subprocess.run([sys.executable, "-m", "harness", *line.split()[1:]], cwd=PROJECT,
                           env=_env(), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0 and "identical" in rerun.stdout, rerun.stderr[-2000:]


def test_four_jobs_started_together_on_a_fresh_store(tmp_path: Path) -> None:
    procs = [subprocess.Popen(
        [sys.executable, "-m", "harness", "ranker=oracle", "metric=ndcg10",
         "dataset.n_queries=20", "tracking.figures=off", f"study=race{i}",
         *_app_args(tmp_path, f"job{i}")], cwd=PROJECT, env=_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for i in range(4)]
    results = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    for i in range(4):
        exp = client.get_experiment_by_name(f"race{i}")
        runs = client.search_runs([exp.experiment_id])
        assert sorted(r.data.tags["harness.role"] for r in runs) == ["job", "ranker"]
        assert {r.info.status for r in runs} == {"FINISHED"}


def test_a_half_migrated_store_says_how_to_repair_it(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.tracking import store

    def interrupted(self, *args, **kwargs):
        raise RuntimeError("(sqlite3.OperationalError) table _alembic_tmp_latest_metrics "
                           "already exists")

    monkeypatch.setattr(MlflowClient, "search_experiments", interrupted)
    monkeypatch.setattr(store, "_READY", set())
    with pytest.raises(TrackingUnavailable, match="half-migrated") as err:
        store.open_client(f"sqlite:///{tmp_path}/mlflow.db")
    assert "DROP TABLE IF EXISTS _alembic_tmp_latest_metrics" in str(err.value)
    assert "mlflow db upgrade" in str(err.value)


def test_the_default_study_shows_why_definitions_matter(tmp_path: Path) -> None:
    """The default rankers are close enough that the metric definition picks the winner,
    and several of them tie, so the tie rule moves their numbers."""
    from hydra import compose, initialize_config_dir

    from harness.app.config import register_configs
    from harness.app.study import run_study
    from harness.compare import sensitivity
    from harness.datasets import load_dataset

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT / "conf")):
        cfg = compose("config", overrides=["tracking=off", "tracking.figures=off",
                                           f"cache_dir={tmp_path}/cache"])
    result = run_study(cfg, tmp_path / "out")
    sens = sensitivity({n: r.per_query for n, r in result.rankers.items()})
    winners = set(sens.winners["winner"])
    assert len(winners) >= 2, sens.winners  # some definitions change which ranker wins
    tau = sens.tau.to_numpy()
    assert (tau[~np.isnan(tau)] < 1).any()
    # rankers whose scores tie inside a query, and whose number the tie rule moves
    data = load_dataset("synthetic", **{k: v for k, v in cfg.dataset.items()
                                        if k not in ("kind", "default_feature")})
    tied = []
    for name, r in result.rankers.items():
        feature = r.spec.options.get("feature")
        if feature and data.test.groupby("qid")[feature].apply(lambda s: s.duplicated().any()
                                                              ).any():
            tied.append(name)
    assert len(tied) >= 2, tied
    moved = [n for n in tied if abs(result.rankers[n].per_query["nDCG@10"].mean()
                                    - result.rankers[n].per_query["nDCG@10(ties=input)"]
                                    .mean()) > 1e-4]
    assert len(moved) >= 2, moved


def test_two_jobs_started_together_get_their_own_folders(tmp_path: Path) -> None:
    """The issue's repro of a lost result: two jobs of one study, different metric grids,
    started in the same second wrote into one runs/hydra/<study>/<time> folder, one
    overwriting the other. Each prints its own folder, which holds its own job's variants.
    The folders follow conf/config.yaml's own ``hydra.run.dir`` pattern, rooted in the
    test's folder instead of the project's runs/ (tests write nothing there:
    tests/test_readme_commands.py checks it while other modules run)."""
    from omegaconf import OmegaConf

    pattern = OmegaConf.to_container(OmegaConf.load(PROJECT / "conf" / "config.yaml"))[
        "hydra"]["run"]["dir"]
    assert pattern.startswith("${project_root:}/runs/hydra/"), pattern
    study = "same_second"
    root = tmp_path / "hydra" / study
    run_dir = pattern.replace("${project_root:}/runs", str(tmp_path))
    procs = {m: subprocess.Popen(
        [sys.executable, "-m", "harness", f"study={study}", "ranker=oracle", f"metric={m}",
         "dataset.n_queries=20", "tracking=off", "tracking.figures=off",
         f"cache_dir={tmp_path}/cache", f"hydra.run.dir='{run_dir}'"], cwd=PROJECT, env=_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for m in ("ndcg10", "default")}
    printed = {}
    for m, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        printed[m] = Path(re.search(r"^Files: (\S+)$", out, re.M).group(1))
    assert printed["ndcg10"] != printed["default"]
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    assert len(folders) == 2, folders
    assert sorted(printed.values()) == folders
    for m, n_variants in (("ndcg10", 1), ("default", 32)):
        table = pd.read_parquet(printed[m] / "per_query" / "oracle.parquet")
        assert len(table.columns) == 4 + n_variants  # qid, n_docs, n_judged, n_relevant
    assert not any((f / "INCOMPLETE").exists() for f in folders)


def test_a_job_whose_model_cannot_load_leaves_no_folder_behind(
        tmp_path: Path, copy_empty_store: Callable[[Path], str]) -> None:
    """The ``mlflow_model`` ranker fails after ``oracle`` has scored (nothing registered in
    this store): one line naming the ranker and the model, exit 2, and no output folder
    holding only ``INCOMPLETE`` and ``main.log``."""
    copy_empty_store(tmp_path)
    args = ["ranker=oracle", "+ranker.mine={kind:mlflow_model,uri:models:/ranker/1}",
            "dataset.n_queries=20", *_app_args(tmp_path, "job")]
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=PROJECT, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    said = proc.stdout + proc.stderr
    assert re.search(r"ranker 'mine': cannot load model 'models:/ranker/1' from sqlite:///"
                     r".*Registered Model with name=ranker not found", said), said[-2000:]
    assert "Traceback" not in said
    assert not (tmp_path / "out" / "job").exists()
