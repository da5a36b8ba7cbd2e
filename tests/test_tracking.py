"""MLflow tracking: a real ``mlflow server``, the server being down, replay, log plans.

The server is started by the tests on a free local port and always stopped (its whole
process group) by a finalizer. The down-then-up test starts it on the port the job
failed to reach, so one server serves both tests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

import harness.paths
from harness import Metric, evaluate
from harness.app.provenance import flatten
from harness.app.study import run_study
from harness.datasets import load_dataset
from harness.errors import TrackingUnavailable
from harness.rankers import RankerSpec, score
from harness.tracking.log_plan import PARAM_LIMIT, LogPlan, RunRecord

PROJECT = Path(harness.paths.PROJECT_ROOT)
N_QUERIES = 40
APP_TIMEOUT = 300
JOB_ARGS = [f"dataset.n_queries={N_QUERIES}", f"dataset.n_train_queries={N_QUERIES}",
            "ranker=oracle", "metric=ndcg10", "tracking.figures=false"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mlflow_exe() -> str:
    exe = Path(sys.executable).parent / "mlflow"
    return str(exe if exe.exists() else PROJECT / ".venv" / "bin" / "mlflow")


class MlflowServer:
    """``mlflow server`` on 127.0.0.1:<port> with a SQLite store and proxied artifacts."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.uri = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 60.0) -> None:
        if self.running:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # no job runner: faster start
        log = open(self.root / "server.log", "ab")  # closed in stop()
        self._log = log
        self.proc = subprocess.Popen(
            [_mlflow_exe(), "server", "--host", "127.0.0.1", "--port", str(self.port),
             "--backend-store-uri", f"sqlite:///{self.root / 'srv.db'}",
             "--artifacts-destination", str(self.root / "art"), "--workers", "1"],
            cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        tail = (self.root / "server.log").read_text(errors="replace")[-3000:]
        self.stop()
        pytest.fail(f"mlflow server did not come up on {self.uri} within {timeout}s:\n{tail}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # the server and its uvicorn worker
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory,
           request: pytest.FixtureRequest) -> MlflowServer:
    """Not started yet: the first test that needs it up starts it."""
    srv = MlflowServer(tmp_path_factory.mktemp("mlflow_server"), _free_port())
    request.addfinalizer(srv.stop)
    return srv


def run_module(module: str, args: list[str], shared: Path
               ) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["HARNESS_SHARED_DATA"] = str(shared)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=APP_TIMEOUT)
    return proc, time.perf_counter() - t


def sync_here(pending: Path) -> int:
    """``harness sync --pending-dir PENDING`` through its entry point, in this process."""
    from harness.commands.sync import main

    return main(["--pending-dir", str(pending)])


def _explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n" \
           f"{proc.stderr[-4000:]}"


def _job_overrides(root: Path, uri: str, experiment: str) -> list[str]:
    return [*JOB_ARGS, f"tracking.uri={uri}", f"tracking.experiment={experiment}",
            f"tracking.pending_dir={root / 'pending'}", f"cache_dir={root / 'cache'}",
            f"tracking.artifact_root={root / 'artifacts'}", f"hydra.run.dir={root / 'out'}"]


@pytest.fixture(scope="module")
def oracle_ndcg10() -> pd.Series:
    """Per-query nDCG@10 of the oracle on the jobs' dataset, computed without the app."""
    options = yaml.safe_load((PROJECT / "conf" / "dataset" / "synthetic.yaml").read_text())
    options.pop("defaults", None)
    options.update(n_queries=N_QUERIES, n_train_queries=N_QUERIES)
    ds = load_dataset(options.pop("kind", "synthetic"), **options)
    run, _, _, _ = score(RankerSpec("oracle", "oracle", {}), ds, None)
    return evaluate(run, ds.qrels, [Metric("ndcg", k=10)])["nDCG@10"]


def _check_logged_job(client: MlflowClient, experiment: str, out: Path, expected: pd.Series,
                      tmp: Path) -> None:
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    roles = {r.data.tags.get("harness.role"): r for r in runs}
    assert len(runs) == 2 and set(roles) == {"job", "ranker"}
    job, ranker = roles["job"], roles["ranker"]
    assert job.info.status == ranker.info.status == "FINISHED"
    assert ranker.data.tags["mlflow.parentRunId"] == job.info.run_id
    assert abs(ranker.data.metrics["ndcg_at_10"] - float(expected.mean())) <= 1e-12
    assert abs(job.data.metrics["oracle.ndcg_at_10.mean"] - float(expected.mean())) <= 1e-12
    tmp.mkdir(parents=True, exist_ok=True)
    remote = Path(client.download_artifacts(ranker.info.run_id, "oracle.parquet", str(tmp)))
    pd.testing.assert_frame_equal(pd.read_parquet(remote),
                                  pd.read_parquet(out / "per_query" / "oracle.parquet"))
    table = pd.read_parquet(remote).set_index("qid")
    np.testing.assert_allclose(table.loc[expected.index, "nDCG@10"], expected.to_numpy(),
                               rtol=0, atol=1e-12)
    top = {a.path for a in client.list_artifacts(job.info.run_id)}
    assert {"summary.csv", "sklearn_check.csv", "metric_keys.json", "dataset.json",
            "config"} <= top


# --------------------------------------------------------------------------------------
# (b) the server is down: exit 3 fast, results on disk, the plan pending; then replay


def test_server_down_then_sync(server: MlflowServer, tmp_path: Path, shared_data: Path,
                               oracle_ndcg10: pd.Series, request: pytest.FixtureRequest,
                               restore_mlflow_env: None) -> None:
    srv = server
    if srv.running:  # run out of order: use a server of our own on another port
        srv = MlflowServer(tmp_path / "own_server", _free_port())
        request.addfinalizer(srv.stop)
    with socket.socket() as probe:  # nothing listens there
        assert probe.connect_ex(("127.0.0.1", srv.port)) != 0
    proc, seconds = run_module("harness", [*_job_overrides(tmp_path, srv.uri, "offline"),
                                           "tracking.timeout_s=2"], shared_data)
    assert proc.returncode == 3, _explain(proc)
    # bounded retries are counted, not timed, in tests/test_compare_unreachable.py
    log = proc.stdout + proc.stderr
    assert "could not log to MLflow" in log and "harness sync" in log
    out = tmp_path / "out"
    for f in ("per_query/oracle.parquet", "summary.csv", "sklearn_check.csv",
              "metric_keys.json", "config_resolved.yaml", "dataset.json"):
        assert (out / f).is_file(), f
    pending = sorted((tmp_path / "pending").glob("*.json"))
    assert len(pending) == 1
    plan = LogPlan.load(pending[0])
    assert plan.tracking_uri == srv.uri and plan.experiment == "offline"
    assert {r.key for r in plan.runs} == {"job", "ranker:oracle"}
    assert all(r.run_id is None and not r.done for r in plan.runs)

    # while the server is still down, sync keeps the plan and says the store is unreachable
    proc, _ = run_module("harness", ["sync", "--pending-dir", str(tmp_path / "pending")],
                         shared_data)
    assert proc.returncode == 3, _explain(proc)
    assert len(list((tmp_path / "pending").glob("*.json"))) == 1
    srv.start()
    # the next syncs through the command's entry point in this process (the process's exit
    # status is the one above)
    assert sync_here(tmp_path / "pending") == 0
    assert not list((tmp_path / "pending").glob("*.json"))
    _check_logged_job(MlflowClient(tracking_uri=srv.uri), "offline", out, oracle_ndcg10,
                      tmp_path / "downloaded")

    # a second sync has nothing to do and creates no duplicate
    assert sync_here(tmp_path / "pending") == 0
    exp = MlflowClient(tracking_uri=srv.uri).get_experiment_by_name("offline")
    assert len(MlflowClient(tracking_uri=srv.uri).search_runs([exp.experiment_id])) == 2


# --------------------------------------------------------------------------------------
# (a) the job logs to a live tracking server


def test_job_logs_to_a_live_server(server: MlflowServer, tmp_path: Path, shared_data: Path,
                                   oracle_ndcg10: pd.Series, monkeypatch: pytest.MonkeyPatch,
                                   study_here: Callable[[list[str], Path], Any]) -> None:
    server.start()
    # the job in this process, with the environment run_module gives its process
    for var in [k for k in os.environ if k.startswith("MLFLOW_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("HARNESS_SHARED_DATA", str(shared_data))
    study_here([o for o in _job_overrides(tmp_path, server.uri, "served")
                if not o.startswith("hydra.")], tmp_path / "out")
    assert not list((tmp_path / "pending").glob("*.json"))
    _check_logged_job(MlflowClient(tracking_uri=server.uri), "served", tmp_path / "out",
                      oracle_ndcg10, tmp_path / "downloaded")
    # artifacts went to the server's artifact store, not to the client's artifact_root
    assert list((server.root / "art").rglob("oracle.parquet"))
    assert not (tmp_path / "artifacts").exists()


# --------------------------------------------------------------------------------------
# (c) unit level: log plans, flattening, long params


def test_log_plan_round_trip(tmp_path: Path) -> None:
    plan = LogPlan(
        tracking_uri="sqlite:///x.db", experiment="e", artifact_root="/a",
        runs=[RunRecord(key="job", name="study", tags={"harness.role": "job"},
                        params={"a.b": "1"}, metrics={"m.mean": 0.25},
                        artifacts=[["/tmp/f.csv", ""], ["/tmp/d", "figures"]],
                        dataset={"name": "d", "digest": "0" * 64, "source": "s"},
                        status="FAILED", run_id="abc", done=True),
              RunRecord(key="ranker:r", name="r", parent="job", parent_run_id="p",
                        attach_only=True)])
    path = tmp_path / "sub" / "plan.json"
    plan.save(path)
    assert [p.name for p in path.parent.iterdir()] == ["plan.json"]  # no temp file left
    loaded = LogPlan.load(path)
    assert loaded == plan
    assert loaded.run_id("job") == "abc" and loaded.run_id("ranker:r") is None
    assert loaded.run_id("nope") is None
    assert json.loads(path.read_text())["runs"][1]["parent"] == "job"


def test_flatten_nested_config() -> None:
    data = {"a": {"b": 1, "c": {"d": "x"}, "e": [1, 2.5, None]}, "f": None, "g": {},
            "h": [{"k": 1}], "i": True, "j": 0.1}
    assert flatten(data) == {"a.b": "1", "a.c.d": "x", "a.e": "[1, 2.5, null]", "f": "None",
                             "g": "{}", "h": '[{"k": 1}]', "i": "True", "j": "0.1"}
    assert flatten({"x": {"y": 1}}, prefix="p.") == {"p.x.y": "1"}


@pytest.fixture(scope="module")
def local_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite store for the in-process tests (each uses its own experiment)."""
    return f"sqlite:///{tmp_path_factory.mktemp('local_store') / 'mlflow.db'}"


def _study_config(tmp: Path, uri: str, experiment: str, *, dataset_name: str = "synthetic",
                  ranker_options: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "study": "overflow", "seed": 0, "cache_dir": str(tmp / "cache"),
        "dataset": {"kind": "synthetic", "name": dataset_name, "n_queries": 20,
                    "n_train_queries": 0},
        "ranker": {"oracle": {"kind": "oracle", **(ranker_options or {})}},
        "metric": {"name": "ndcg", "gain": "exp2", "discount": "log2", "k": 10,
                   "ties": "average", "ideal": "judged"},
        "tracking": {"enabled": True, "uri": uri,
                     "experiment": experiment, "artifact_root": str(tmp / "artifacts"),
                     "pending_dir": str(tmp / "pending"), "figures": False,
                     "bootstrap_resamples": 100, "timeout_s": 5, "max_retries": 1},
        "check": {"sklearn": "fail", "tolerance": 1e-9},
    }


@pytest.fixture
def restore_mlflow_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_study sets MLFLOW_HTTP_* variables in os.environ; put them back afterwards."""
    for var in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"):
        if var in os.environ:
            monkeypatch.setenv(var, os.environ[var])  # recorded, restored at teardown
        else:  # recorded as absent, removed again at teardown
            monkeypatch.setenv(var, "")
            monkeypatch.delenv(var)


@pytest.mark.parametrize("where", ["ranker_option", "dataset_name"])
def test_long_config_value_goes_to_params_overflow(where: str, tmp_path: Path, local_uri: str,
                                                   restore_mlflow_env: None) -> None:
    long = "v" * 7000
    exact = "w" * PARAM_LIMIT  # at the limit: logged as is
    if where == "ranker_option":
        cfg = _study_config(tmp_path, local_uri, f"overflow_{where}",
                            ranker_options={"feature": long, "column": exact})
        key = "ranker.oracle.feature"
    else:
        cfg = _study_config(tmp_path, local_uri, f"overflow_{where}", dataset_name=long,
                            ranker_options={"column": exact})
        key = "dataset.name"
    try:
        result = run_study(cfg, tmp_path / "out")
    except TrackingUnavailable as exc:
        pytest.fail(f"a {len(long)}-character {where} could not be logged: {exc}")
    client = MlflowClient(tracking_uri=cfg["tracking"]["uri"])
    job = client.get_run(result.run_ids["job"])
    ranker = client.get_run(result.run_ids["ranker:oracle"])
    for run in (job, ranker):
        assert run.info.status == "FINISHED"
        assert "params_overflow.json" in run.data.params[key]
        assert len(run.data.params[key]) <= PARAM_LIMIT
        assert run.data.params["ranker.oracle.column"] == exact
    assert "params_overflow.json" in {a.path for a in client.list_artifacts(job.info.run_id)}
    saved = json.loads(Path(client.download_artifacts(job.info.run_id, "params_overflow.json",
                                                      str(tmp_path / "dl"))).read_text())
    assert saved == {key: long}
    assert not list((tmp_path / "pending").glob("*.json"))


def test_replay_continues_a_half_sent_plan_without_duplicates(tmp_path: Path,
                                                              local_uri: str) -> None:
    """A plan that failed half-way (a missing artifact) is finished by harness sync: the
    runs it already created are reused, none is created twice."""
    from harness.tracking import execute
    from harness.tracking.pending import sync

    uri = local_uri
    summary = tmp_path / "summary.csv"
    summary.write_text("a,b\n1,2\n")
    late = tmp_path / "late" / "r.parquet"  # does not exist yet
    plan = LogPlan(tracking_uri=uri, experiment="replay",
                   artifact_root=str(tmp_path / "artifacts"),
                   runs=[RunRecord(key="job", name="study", tags={"harness.role": "job"},
                                   params={"p": "1"}, metrics={"m": 0.5},
                                   artifacts=[[str(summary), ""]]),
                         RunRecord(key="ranker:r", name="r", parent="job",
                                   tags={"harness.role": "ranker"}, params={"p": "1"},
                                   metrics={"m.mean": 0.75}, artifacts=[[str(late), ""]])])
    pending = tmp_path / "pending"
    marker = pending / "plan.json"
    plan.save(marker)
    with pytest.raises(Exception) as info:
        execute(plan, marker)
    assert "r.parquet" in str(info.value) or isinstance(info.value, FileNotFoundError), info.value
    half = LogPlan.load(marker)
    assert half.runs[0].done and half.runs[0].run_id
    assert not half.runs[1].done and half.runs[1].run_id  # created, not finished
    late.parent.mkdir()
    pd.DataFrame({"qid": ["q"], "v": [1.0]}).to_parquet(late)
    assert sync(pending) == (1, 0)
    assert not marker.exists()
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("replay").experiment_id])
    assert {r.info.run_id for r in runs} == {half.runs[0].run_id, half.runs[1].run_id}
    by_key = {r.info.run_name: r for r in runs}
    assert by_key["r"].info.status == by_key["study"].info.status == "FINISHED"
    assert by_key["r"].data.tags["mlflow.parentRunId"] == half.runs[0].run_id
    assert by_key["r"].data.metrics == {"m.mean": 0.75}
    assert {a.path for a in client.list_artifacts(half.runs[1].run_id)} == {"r.parquet"}


def test_sqlite_races_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """A UNIQUE-constraint collision (two jobs creating one dataset row) is retried; any
    other error is not."""
    from harness.tracking import log_plan as plan

    monkeypatch.setattr(plan.time, "sleep", lambda s: None)
    calls = {"n": 0}

    def flaky() -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise RuntimeError("(sqlite3.IntegrityError) UNIQUE constraint failed: datasets")
        return "ok"

    assert plan._with_retries(flaky) == "ok" and calls["n"] == 3

    def broken() -> None:
        calls["n"] += 1
        raise RuntimeError("connection refused")

    calls["n"] = 0
    with pytest.raises(RuntimeError, match="connection refused"):
        plan._with_retries(broken)
    assert calls["n"] == 1


def test_the_viewable_per_query_csv_reads_back_as_the_rounded_table(tmp_path: Path) -> None:
    """per_query.csv (written by Arrow, header as pandas writes it) reads back as the
    per-query table rounded to 6 decimals: values first, a qid with a comma, a NaN."""
    from harness.app.log import VIEWABLE_ROWS, _viewable_table

    rng = np.random.default_rng(0)
    n = VIEWABLE_ROWS + 7
    table = pd.DataFrame({"n_docs": rng.integers(1, 60, n),
                          "nDCG@10": rng.random(n), "nDCG@10(gain=linear,ties=input)":
                          rng.random(n)},
                         index=pd.Index([f"q,{i}" for i in range(n)], name="qid"))
    table.iloc[3, 1] = np.nan
    path = _viewable_table(table, tmp_path)
    back = pd.read_csv(path, index_col="qid")
    expected = table[["nDCG@10", "nDCG@10(gain=linear,ties=input)", "n_docs"]].head(
        VIEWABLE_ROWS).round(6)
    assert list(back.columns) == list(expected.columns)  # the values open the preview
    pd.testing.assert_frame_equal(back, expected, check_exact=True)


# --------------------------------------------------------------------------------------
# issue 22: MLflow pages that explain themselves


def _compose(overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir

    from harness.app.config import register_configs

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT / "conf")):
        return compose("config", overrides=overrides, return_hydra_config=True)


@pytest.mark.parametrize(("overrides", "study"), [
    ([], "synthetic"), (["dataset=lightgbm_sample"], "lightgbm_sample"),
    (["dataset=cast2021_bm25"], "cast2021_bm25"), (["dataset=parquet_run"], "parquet_run"),
    (["study=mine"], "mine"), (["dataset=lightgbm_sample", "study=mine"], "mine"),
    (["experiment=cast2021"], "cast2021")])
def test_the_default_study_is_the_dataset_s_name(overrides: list[str], study: str) -> None:
    """The study (and so the MLflow experiment) is by default named after the dataset; an
    explicit ``study=`` or an experiment bundle's name wins."""
    cfg = _compose(overrides)
    assert cfg.study == study
    assert f"/runs/hydra/{study}/" in cfg.hydra.run.dir


def test_experiments_are_marked_as_model_development(tmp_path: Path) -> None:
    """A new experiment carries ``mlflow.experimentKind=custom_model_development``; one made
    before (without it) gets it on first use; a kind set by hand is kept."""
    from harness.tracking.store import ensure_experiment, open_client

    client = open_client(f"sqlite:///{tmp_path}/m.db")
    new = ensure_experiment(client, "new", str(tmp_path / "art"))
    assert client.get_experiment(new).tags["mlflow.experimentKind"] == \
        "custom_model_development"
    old = client.create_experiment("old")
    assert "mlflow.experimentKind" not in client.get_experiment(old).tags
    assert ensure_experiment(client, "old", str(tmp_path / "art")) == old
    assert client.get_experiment(old).tags["mlflow.experimentKind"] == \
        "custom_model_development"
    chosen = client.create_experiment("chosen", tags={"mlflow.experimentKind": "forecasting"})
    ensure_experiment(client, "chosen", str(tmp_path / "art"))
    assert client.get_experiment(chosen).tags["mlflow.experimentKind"] == "forecasting"


def test_a_sweep_parent_is_named_by_its_overrides() -> None:
    from omegaconf import OmegaConf

    from harness.app.callbacks import sweep_run_name

    def config(task: list[str], study: str = "synthetic") -> Any:
        return OmegaConf.create({"study": study, "hydra": {
            "overrides": {"task": task},
            "job": {"config": {"override_dirname": {"exclude_keys": [
                "tracking.uri", "cache_dir", "hydra.sweep.dir"]}}}}})

    assert sweep_run_name(config(["ranker=oracle,random", "metric.k=5,10",
                                  "tracking.uri=sqlite:///x.db", "+cache_dir=/tmp/c"])) == \
        "synthetic sweep: ranker=oracle,random metric.k=5,10"
    assert sweep_run_name(config(["tracking.uri=sqlite:///x.db"], "cast")) == "cast sweep"
    assert sweep_run_name(OmegaConf.create({"study": "s"})) == "s sweep"
    long = sweep_run_name(config([f"+ranker.r{i}={{kind:random,seed:{i}}}" for i in range(20)]))
    assert len(long) == 200 and long.endswith("…")
