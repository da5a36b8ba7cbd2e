"""The Hydra app end to end: ``python -m harness`` as a subprocess into a temporary MLflow store.

Expected numbers are computed here without the app: the dataset is rebuilt with
:func:`harness.datasets.load_dataset` from the options in ``conf/`` (read as plain YAML),
each ranker is scored with :func:`harness.rankers.score` and evaluated with
:func:`harness.evaluate`, and one variant is re-checked against sklearn's ``ndcg_score``.
Every store, cache, output and pending folder lives under pytest's tmp dirs.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient
from PIL import Image

import harness
import harness.paths
from harness import Metric, evaluate, parse_metric
from harness.datasets import Dataset, load_dataset
from harness.rankers import RankerSpec, score
from tests.shared import metric_grid_yaml

PROJECT = Path(harness.paths.PROJECT_ROOT)
CONF = PROJECT / "conf"
N_QUERIES = 60
HGB_ITER = 20  # fewer boosting rounds than conf/ranker/hgb.yaml, to keep the run short
TOL = 1e-12
APP_TIMEOUT = 300


# --------------------------------------------------------------------------------------
# helpers


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) or {}
    data.pop("defaults", None)
    return data


def _ranker_entries(option: str) -> dict[str, dict[str, Any]]:
    """Rankers of conf/ranker/<option>.yaml (bundles pull in other files), plain YAML."""
    raw = yaml.safe_load((CONF / "ranker" / f"{option}.yaml").read_text()) or {}
    out: dict[str, dict[str, Any]] = {}
    for entry in raw.pop("defaults", []):
        if entry != "_self_":
            out.update(_ranker_entries(entry))
    out.update(raw)
    return out


def _default_metrics() -> list[Metric]:
    raw = metric_grid_yaml("default")
    out = [Metric(n, gain=g, discount=d, k=k, ties=t, ideal=i, empty=raw.get("empty", "zero"))
           for n, g, d, k, t, i in itertools.product(raw["name"], raw["gain"], raw["discount"],
                                                      raw["k"], raw["ties"], raw["ideal"])]
    out += [parse_metric(x) for x in raw.get("extra", [])]
    return out


def run_app(args: list[str], shared: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["HARNESS_SHARED_DATA"] = str(shared)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=APP_TIMEOUT)
    return proc, time.perf_counter() - t


def _explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n" \
           f"{proc.stderr[-4000:]}"


@dataclass
class Store:
    root: Path
    uri: str

    def overrides(self, experiment: str) -> list[str]:
        return [f"tracking.uri={self.uri}", f"tracking.experiment={experiment}",
                f"tracking.pending_dir={self.root / 'pending'}",
                f"tracking.artifact_root={self.root / 'artifacts'}",
                f"cache_dir={self.root / 'cache'}"]

    def client(self) -> MlflowClient:
        return MlflowClient(tracking_uri=self.uri)

    def runs(self, experiment: str) -> list[Any]:
        client = self.client()
        exp = client.get_experiment_by_name(experiment)
        assert exp is not None, f"no experiment {experiment!r} in {self.uri}"
        return client.search_runs([exp.experiment_id], max_results=1000)


def _role(runs: list[Any], role: str) -> list[Any]:
    return [r for r in runs if r.data.tags.get("harness.role") == role]


def _download(client: MlflowClient, run_id: str, path: str, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    return Path(client.download_artifacts(run_id, path, str(dst)))


def _artifact_paths(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    return {a.path for a in client.list_artifacts(run_id, path)}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory,
          copy_empty_store: Callable[[Path], str]) -> Store:
    """An empty store whose schema exists (tests/test_journeys.py starts jobs on a fresh
    one): MLflow's migrations would cost the main job's process seconds."""
    root = tmp_path_factory.mktemp("e2e_store")
    return Store(root, copy_empty_store(root))


# --------------------------------------------------------------------------------------
# (a) the main job: default metric grid, ranker=baselines, figures on


BASELINE_ARGS = [f"dataset.n_queries={N_QUERIES}", f"dataset.n_train_queries={N_QUERIES}",
                 "ranker=baselines", f"ranker.hgb.params.max_iter={HGB_ITER}"]


@dataclass
class Job:
    proc: subprocess.CompletedProcess[str]
    seconds: float
    out: Path
    experiment: str


@pytest.fixture(scope="module")
def baseline(store: Store, shared_data: Path) -> Job:
    out = store.root / "out_a"
    proc, seconds = run_app([*BASELINE_ARGS, *store.overrides("e2e_a"),
                             f"hydra.run.dir={out}"], shared_data)
    return Job(proc, seconds, out, "e2e_a")


@dataclass
class Expected:
    dataset: Dataset
    metrics: list[Metric]
    runs: dict[str, pd.DataFrame]
    per_query: dict[str, pd.DataFrame]


@pytest.fixture(scope="module")
def expected() -> Expected:
    """The same study computed without the app."""
    ds, runs = scored_without_the_app(["baselines"])
    metrics = _default_metrics()
    per_query = {name: evaluate(run, ds.qrels, metrics) for name, run in runs.items()}
    return Expected(ds, metrics, runs, per_query)


def scored_without_the_app(ranker_options: list[str]) -> tuple[Dataset, dict[str, pd.DataFrame]]:
    """The default synthetic dataset at N_QUERIES, and the runs of the rankers of the
    given ranker/ options, scored by the registry directly (no cache)."""
    options = _yaml(CONF / "dataset" / "synthetic.yaml")
    kind = options.pop("kind", "synthetic")
    options.update(n_queries=N_QUERIES, n_train_queries=N_QUERIES)
    ds = load_dataset(kind, **options)
    runs = {}
    for option in ranker_options:
        for name, entry in _ranker_entries(option).items():
            opts = {k: v for k, v in entry.items() if k != "kind"}
            if opts.get("feature") == "${dataset.default_feature}":
                opts["feature"] = "f0"  # the synthetic dataset's default feature
            if entry["kind"] == "sklearn":
                opts["params"] = {**opts.get("params", {}), "max_iter": HGB_ITER}
            run, _, hit, _ = score(RankerSpec(name, entry["kind"], opts), ds, None)
            assert not hit
            runs[name] = run
    return ds, runs


def test_main_job_exits_0_and_writes_its_files(baseline: Job, expected: Expected) -> None:
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    out = baseline.out
    for name in expected.runs:
        assert (out / "per_query" / f"{name}.parquet").is_file()
    for f in ("summary.csv", "sklearn_check.csv", "metric_keys.json", "config_resolved.yaml",
              "dataset.json"):
        assert (out / f).is_file(), f
    assert json.loads((out / "dataset.json").read_text())["digest"] == expected.dataset.digest


def test_main_job_run_structure(baseline: Job, store: Store, expected: Expected) -> None:
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    runs = store.runs(baseline.experiment)
    jobs, rankers = _role(runs, "job"), _role(runs, "ranker")
    assert len(jobs) == 1 and len(runs) == 1 + len(expected.runs)
    job = jobs[0]
    assert job.info.status == "FINISHED"
    assert {r.info.run_name for r in rankers} == set(expected.runs)
    for r in rankers:
        tags = r.data.tags
        assert r.info.status == "FINISHED"
        assert tags["mlflow.parentRunId"] == job.info.run_id
        assert tags["ranker.name"] == r.info.run_name
        assert tags["dataset.digest"] == expected.dataset.digest
        assert tags["harness.version"] == harness.__version__
        # the checkout's commit (the checkout may have moved on since the job ran)
        assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", tags["git.commit"]), tags["git.commit"]
        sha = tags["git.commit"].split("-")[0]
        assert subprocess.run(["git", "merge-base", "--is-ancestor", sha, "HEAD"],
                              cwd=PROJECT).returncode == 0
        # the cache key names the cached scores, which equal the independent run
        cached = pd.read_parquet(store.root / "cache" / f"{tags['ranker.cache_key']}.parquet")
        pd.testing.assert_frame_equal(
            cached.reset_index(drop=True), expected.runs[r.info.run_name].reset_index(drop=True),
            check_dtype=False, check_exact=True)
        inputs = r.inputs.dataset_inputs
        assert len(inputs) == 1
        assert inputs[0].dataset.digest == expected.dataset.digest[:32]
        assert {t.key: t.value for t in inputs[0].tags}["harness.digest"] == \
            expected.dataset.digest


def test_logged_means_equal_the_independent_computation(baseline: Job, store: Store,
                                                        expected: Expected) -> None:
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    runs = store.runs(baseline.experiment)
    job = _role(runs, "job")[0]
    by_name = {r.info.run_name: r for r in _role(runs, "ranker")}
    checked = 0
    for name, pq in expected.per_query.items():
        logged = by_name[name].data.metrics
        for m in expected.metrics:
            values = pq[m.display_name].to_numpy(dtype=float)
            assert not np.isnan(values).any(), (name, m)
            mean = float(values.mean())
            assert abs(logged[m.key] - mean) <= TOL, (name, m, logged[m.key], mean)
            assert abs(job.data.metrics[f"{name}.{m.key}.mean"] - mean) <= TOL
            assert abs(logged[f"stats.{m.key}.std"] - float(np.std(values, ddof=1))) <= 1e-9
            assert abs(logged[f"stats.{m.key}.median"] - float(np.median(values))) <= TOL
            assert abs(logged[f"stats.{m.key}.frac_zero"] - float(np.mean(values == 0))) <= TOL
            assert logged[f"stats.{m.key}.n_queries"] == N_QUERIES
            assert logged[f"stats.{m.key}.n_excluded"] == 0
            assert logged[f"stats.{m.key}.ci_low"] <= mean <= logged[f"stats.{m.key}.ci_high"]
            checked += 1
    assert checked == len(expected.runs) * 32


def test_the_job_run_lists_its_headline_first(baseline: Job, store: Store,
                                              expected: Expected) -> None:
    """The job run's page opens on the result (issue 41): its metrics begin with
    ``best.<key>``, the best mean over the rankers under each headline variant (per family,
    the variant printed without options, else the family's first), the tag
    ``best.<key>.ranker`` names who has it; every ``<ranker>.<key>.mean`` follows."""
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    job = store.client().get_run(_role(store.runs(baseline.experiment), "job")[0].info.run_id)
    families: dict[str, list[Metric]] = {}
    for m in expected.metrics:
        families.setdefault(m.name, []).append(m)
    headline = [m for family in families.values()
                for m in ([m for m in family if "(" not in m.display_name] or family[:1])]
    keys = list(job.data.metrics)  # in the order MLflow returns and its run page lists them
    assert keys[:len(headline)] == [f"best.{m.key}" for m in headline]
    for m in headline:
        means = {name: float(pq[m.display_name].mean())
                 for name, pq in expected.per_query.items()}
        best = max(means.values())
        assert abs(job.data.metrics[f"best.{m.key}"] - best) <= TOL, m
        assert set(job.data.tags[f"best.{m.key}.ranker"].split(", ")) == {
            name for name, v in means.items() if abs(v - best) <= TOL}, m
    tail = {f"{name}.{m.key}.mean" for name in expected.runs for m in expected.metrics}
    assert set(keys[len(headline):]) == tail  # the long tail is still logged, all of it


def test_ranker_metric_keys_put_the_means_first(baseline: Job, store: Store,
                                                 expected: Expected) -> None:
    """A ranker run's metrics: one key per variant for its mean (``ndcg_at_10``), the check
    counts, and every other statistic under ``stats.`` (``stats.ndcg_at_10.std``), logged
    in that order so the run's page lists the means first."""
    from harness.reporting import STATS

    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    keys = [m.key for m in expected.metrics]
    stats = {f"stats.{k}.{s}" for k in keys for s in STATS if s != "mean"}
    for run in _role(store.runs(baseline.experiment), "ranker"):
        logged = set(run.data.metrics)
        checks = {k for k in logged if k.startswith("sklearn_check.")}
        assert logged == set(keys) | checks | stats | {"judged_at_10"}, run.info.run_name
        assert checks and not any(k.endswith(".mean") for k in logged)
        assert max(set(keys) | checks) < min(stats)  # sorted, the statistics come after


def test_per_query_artifacts(baseline: Job, store: Store, expected: Expected,
                             tmp_path: Path) -> None:
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    client = store.client()
    for r in _role(store.runs(baseline.experiment), "ranker"):
        name = r.info.run_name
        assert f"{name}.parquet" in _artifact_paths(client, r.info.run_id)
        table = pd.read_parquet(_download(client, r.info.run_id, f"{name}.parquet",
                                          tmp_path / name))
        assert len(table) == N_QUERIES == expected.dataset.test["qid"].nunique()
        names = [m.display_name for m in expected.metrics]
        assert {"qid", "n_docs", "n_judged", "n_relevant", *names} <= set(table.columns)
        mine = expected.per_query[name]
        table = table.set_index("qid").loc[mine.index]
        np.testing.assert_array_equal(table[["n_docs", "n_judged", "n_relevant"]].to_numpy(),
                                      mine[["n_docs", "n_judged", "n_relevant"]].to_numpy())
        np.testing.assert_allclose(table[names].to_numpy(dtype=float),
                                   mine[names].to_numpy(dtype=float), rtol=0, atol=TOL)


def test_job_run_files_figures_and_metric_keys(baseline: Job, store: Store,
                                               expected: Expected, tmp_path: Path) -> None:
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    client = store.client()
    job = _role(store.runs(baseline.experiment), "job")[0]
    top = _artifact_paths(client, job.info.run_id)
    assert {"summary.csv", "sklearn_check.csv", "metric_keys.json", "dataset.json", "config",
            "figures"} <= top
    # tracking.figures=headline (the default): the overview of the headline variants and
    # one small-multiples figure per metric family of several variants (the grid's names, and
    # a measure the extras name twice: AP@10 and AP@10 condensed; the others are one variant
    # each and appear in the overview)
    grid = metric_grid_yaml("default")
    extras = [parse_metric(x).name for x in grid["extra"]]
    families = set(grid["name"]) | {n for n in extras if extras.count(n) > 1}
    assert families == {"ndcg", "mndcg", "ap"}
    drawn = {"overview.png", *(f"family-{name}.png" for name in families)}
    figures = _artifact_paths(client, job.info.run_id, "figures")
    assert figures == {f"figures/{f}" for f in drawn}
    assert {p.name for p in (baseline.out / "figures").glob("*.png")} == drawn
    # the job's and each ranker's description show the overview under their lead line, from
    # the run's own artifact (MLflow's page renders it through get-artifact; issue 41)
    for run in [job, *_role(store.runs(baseline.experiment), "ranker")]:
        lines = run.data.tags["mlflow.note.content"].splitlines()
        assert lines[1] == "" and lines[2].endswith(
            f"](get-artifact?path=distributions.png&run_uuid={run.info.run_id})"), lines[:3]
        assert "distributions.png" in _artifact_paths(client, run.info.run_id)
    with Image.open(baseline.out / "distributions.png") as small, \
            Image.open(baseline.out / "figures" / "overview.png") as big:
        assert small.size[0] == 900 < big.size[0]  # the overview, as wide as a run's page
        assert abs(small.size[1] / small.size[0] - big.size[1] / big.size[0]) < 0.01
    keys = json.loads(_download(client, job.info.run_id, "metric_keys.json",
                                tmp_path).read_text())
    assert keys == {m.key: m.display_name for m in expected.metrics}


def test_sklearn_check_table(baseline: Job, expected: Expected) -> None:
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    table = pd.read_csv(baseline.out / "sklearn_check.csv")
    assert set(table["ranker"]) == set(expected.runs)
    assert len(table) == len(expected.runs) * len(expected.metrics)
    status = table.set_index(["ranker", "variant"])["status"]
    reason = table.set_index(["ranker", "variant"])["reason"]
    for name in expected.runs:
        for m in expected.metrics:
            s = status[(name, m.display_name)]
            assert s in ("checked", "not checked")
            if m.name != "ndcg":  # mnDCG, AP, RR, ...: sklearn has no such measure
                assert s == "not checked", (name, m)
                assert isinstance(reason[(name, m.display_name)], str) and \
                    reason[(name, m.display_name)].strip()
            elif m.ties == "average":  # every query is expressible in sklearn
                assert s == "checked", (name, m)
            elif name == "random":  # continuous scores: no ties, so ties=input is checkable
                assert s == "checked", (name, m)
    checked = table[table["status"] == "checked"]
    assert len(checked) > 0
    assert not checked["variant"].str.startswith("mnDCG").any()
    assert (checked["n_checked"] > 0).all() and (checked["max_abs_diff"] <= 1e-9).all()
    assert {"nDCG@10", "nDCG@10(gain=linear)"} <= set(checked["variant"])
    assert table.loc[table["variant"].str.startswith("mnDCG"), "status"].eq(
        "not checked").all()


def test_ndcg_of_the_random_ranker_matches_sklearn_directly(expected: Expected) -> None:
    """The check table's claim, re-done here with the public sklearn API."""
    from sklearn.metrics import ndcg_score

    run = expected.runs["random"].merge(expected.dataset.qrels, on=["qid", "docid"])
    mine = expected.per_query["random"]
    for qid, group in run.groupby("qid"):
        gains = np.exp2(group["label"].to_numpy(dtype=float)) - 1
        theirs = ndcg_score(gains[None, :], group["score"].to_numpy()[None, :], k=10)
        assert abs(mine.at[qid, "nDCG@10"] - theirs) <= TOL, qid


# --------------------------------------------------------------------------------------
# (d) an identical second run reuses the score cache


def test_second_identical_run_reuses_the_score_cache(baseline: Job, store: Store,
                                                     shared_data: Path,
                                                     expected: Expected) -> None:
    assert baseline.proc.returncode == 0, _explain(baseline.proc)
    cache = sorted((store.root / "cache").glob("*.parquet"))
    assert len(cache) == len(expected.runs)
    mtimes = {p: p.stat().st_mtime_ns for p in cache}
    out = store.root / "out_d"
    # same study; only where it is written differs (figures off to save time)
    proc, _ = run_app([*BASELINE_ARGS, *store.overrides("e2e_d"), f"hydra.run.dir={out}",
                       "tracking.figures=false"], shared_data)
    assert proc.returncode == 0, _explain(proc)
    log = proc.stdout + proc.stderr
    assert log.count("(scores cached)") == len(expected.runs), log
    assert "(scores computed)" not in log
    assert {p: p.stat().st_mtime_ns for p in cache} == mtimes
    assert sorted((store.root / "cache").glob("*.parquet")) == cache
    for name in expected.runs:
        first = pd.read_parquet(baseline.out / "per_query" / f"{name}.parquet")
        second = pd.read_parquet(out / "per_query" / f"{name}.parquet")
        pd.testing.assert_frame_equal(first, second, check_exact=True)
    first_runs = {r.info.run_name: r.data.metrics
                  for r in _role(store.runs("e2e_a"), "ranker")}
    for r in _role(store.runs("e2e_d"), "ranker"):
        m = r.data.metrics
        for key, value in first_runs[r.info.run_name].items():
            if not key.startswith(("stats.", "sklearn_check.")):  # the means
                assert m[key] == value, key


# --------------------------------------------------------------------------------------
# (b) a 2x2 multirun with the joblib launcher: nothing lost


def test_multirun_2x2_parallel_logs_every_job(store: Store, shared_data: Path,
                                              expected: Expected, tmp_path: Path) -> None:
    sweep = store.root / "sweep_b"
    # no sklearn check in the jobs (the main job's is tested above): its import is seconds
    # of CPU in each of the launcher's processes
    proc, _ = run_app(["-m", f"dataset.n_queries={N_QUERIES}",
                       f"dataset.n_train_queries={N_QUERIES}", "metric=ndcg10",
                       "tracking.figures=false", "check.sklearn=off", *store.overrides("e2e_b"),
                       f"hydra.sweep.dir={sweep}", "hydra/launcher=joblib",
                       "hydra.launcher.n_jobs=2", "ranker=oracle,random", "metric.k=5,10"],
                      shared_data)
    assert proc.returncode == 0, _explain(proc)
    # the sweep ends with its jobs x headline measures table (one row per job and ranker)
    assert "Sweep 'synthetic': 4 job(s) x 1 ranker(s) each, 2 ranker(s) in all." in proc.stdout
    assert sum(1 for line in proc.stdout.splitlines()
               if re.match(r"^  [0-3] (oracle|random) ", line)) == 4
    runs = store.runs("e2e_b")
    sweeps, rankers = _role(runs, "sweep"), _role(runs, "ranker")
    assert len(sweeps) == 1 and len(rankers) == 4 and len(runs) == 5
    parent = sweeps[0]
    assert parent.info.status == "FINISHED"
    # named by the sweep's overrides, without the ones that only say where runs go
    assert parent.info.run_name == (
        "synthetic sweep: dataset.n_queries=60 dataset.n_train_queries=60 metric=ndcg10 "
        "check.sklearn=off ranker=oracle,random metric.k=5,10"), parent.info.run_name
    client = store.client()
    exp = client.get_experiment_by_name("e2e_b")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    combos = set()
    for r in rankers:
        assert r.info.status == "FINISHED"
        assert r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        name = r.data.tags["ranker.name"]
        k = int(r.data.params["metric.k"])
        combos.add((name, k))
        assert f"{name}.parquet" in _artifact_paths(client, r.info.run_id)
        table = pd.read_parquet(_download(client, r.info.run_id, f"{name}.parquet",
                                          tmp_path / r.info.run_id))
        assert len(table) == N_QUERIES
        m = Metric("ndcg", k=k)
        mine = evaluate(expected.runs[name], expected.dataset.qrels, [m])[m.display_name]
        assert abs(r.data.metrics[m.key] - float(mine.mean())) <= TOL
        np.testing.assert_allclose(table.set_index("qid").loc[mine.index, m.display_name],
                                   mine.to_numpy(), rtol=0, atol=TOL)
    assert combos == {("oracle", 5), ("oracle", 10), ("random", 5), ("random", 10)}
    assert _artifact_paths(client, parent.info.run_id, "jobs") == {f"jobs/{i}"
                                                                   for i in range(4)}
    for i in range(4):
        assert f"jobs/{i}/summary.csv" in _artifact_paths(client, parent.info.run_id,
                                                          f"jobs/{i}")
        assert (sweep / str(i) / "summary.csv").is_file()
    assert not list((store.root / "pending").glob("*.json"))


# --------------------------------------------------------------------------------------
# (c) a sweep in which one job fails: the others still run, the parent is FAILED


def test_sweep_with_a_failing_job(store: Store, shared_data: Path) -> None:
    sweep = store.root / "sweep_c"
    proc, _ = run_app(["-m", f"dataset.n_queries={N_QUERIES}",
                       f"dataset.n_train_queries={N_QUERIES}", "tracking.figures=false",
                       *store.overrides("e2e_c"), f"hydra.sweep.dir={sweep}",
                       "check.tolerance=-1,1e-9", "ranker=oracle", "metric=ndcg10"],
                      shared_data)
    assert proc.returncode != 0, _explain(proc)
    assert "sklearn cross-check" in proc.stdout + proc.stderr
    for i in range(2):  # both jobs ran and wrote their results
        assert (sweep / str(i) / "per_query" / "oracle.parquet").is_file()
    runs = store.runs("e2e_c")
    sweeps, rankers = _role(runs, "sweep"), _role(runs, "ranker")
    assert len(sweeps) == 1 and len(rankers) == 2
    by_tolerance = {float(r.data.params["check.tolerance"]): r for r in rankers}
    assert set(by_tolerance) == {-1.0, 1e-9}
    assert by_tolerance[-1.0].info.status == "FAILED"
    assert by_tolerance[1e-9].info.status == "FINISHED"
    assert all(r.data.tags["mlflow.parentRunId"] == sweeps[0].info.run_id for r in rankers)
    assert sweeps[0].info.status == "FAILED"


# --------------------------------------------------------------------------------------
# (e) a bad value exits 2 before any work and logs nothing


def test_k_zero_exits_2_quickly_without_a_run(tmp_path: Path, shared_data: Path) -> None:
    db = tmp_path / "never.db"
    proc, seconds = run_app([f"tracking.uri=sqlite:///{db}",
                             f"tracking.pending_dir={tmp_path / 'pending'}",
                             f"tracking.artifact_root={tmp_path / 'artifacts'}",
                             f"cache_dir={tmp_path / 'cache'}",
                             f"hydra.run.dir={tmp_path / 'out'}", "metric.k=0"], shared_data)
    assert proc.returncode == 2, _explain(proc)
    assert "k must be an int" in proc.stdout + proc.stderr
    assert not db.exists()  # refused before any work (no timed assertion: none ran)
    assert not (tmp_path / "pending").exists() or not list((tmp_path / "pending").iterdir())
    assert not (tmp_path / "cache").exists()
    assert not (tmp_path / "out" / "per_query").exists()
