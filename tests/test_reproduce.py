"""``python -m harness reproduce``: real runs logged by the app into temporary SQLite stores.

Two jobs run once for the module, in the test's process, each into its own store:

- ``baselines``: the synthetic dataset (60 queries) and the five baseline rankers;
- ``table``: a parquet table written here, scored by its feature ``f0`` and by a TREC run
  file written here, so the test can later change the data and the run file.

Every store, cache, output, artifact and pending folder lives under pytest's tmp dirs.
The command runs as a process of its own where its exit status is under test (0, 1 and 2
once each), else through its entry point in this process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import harness.paths
from harness.app import provenance
from harness.commands.reproduce import format_result, main as reproduce_main
from harness.datasets.dataset import file_sha256
from harness.reproduce import ReproduceError, ReproResult, ranker_run_ids, reproduce_run
from harness.reproduce.diff import compare_per_query as _compare

# a command run here sets MLflow's HTTP timeouts in os.environ: put back after each test
pytestmark = pytest.mark.usefixtures("kept_mlflow_env")
PROJECT = Path(harness.paths.PROJECT_ROOT)
TIMEOUT = 300
BASELINES = ("oracle", "random", "noisy_oracle", "feature_f0", "hgb")


@dataclass
class Store:
    root: Path
    uri: str

    def client(self) -> MlflowClient:
        return MlflowClient(tracking_uri=self.uri)

    def runs(self) -> dict[str, str]:
        """Run name (or role for the job) -> run id."""
        client = self.client()
        exp = client.get_experiment_by_name("repro")
        assert exp is not None
        out = {}
        for r in client.search_runs([exp.experiment_id], max_results=100):
            role = r.data.tags.get("harness.role")
            out[r.info.run_name if role == "ranker" else role] = r.info.run_id
        return out


@dataclass
class Stores:
    baselines: Store
    table: Store
    data: Path
    run_file: Path


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


def _app_args(root: Path, uri: str) -> list[str]:
    return [f"tracking.uri={uri}", "tracking.experiment=repro", "tracking.figures=false",
            f"tracking.artifact_root={root / 'artifacts'}",
            f"tracking.pending_dir={root / 'pending'}", f"cache_dir={root / 'cache'}"]


def _explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n" \
           f"{proc.stderr[-3000:]}"


def _write_table(path: Path, run_file: Path) -> None:
    rng = np.random.default_rng(7)
    qids = np.repeat([f"t{i:03d}" for i in range(20)], 12)
    docids = np.tile([f"d{j:02d}" for j in range(12)], 20)
    labels = rng.integers(0, 4, len(qids))
    f0 = np.round(labels + rng.normal(0, 1.0, len(qids)), 1)
    pd.DataFrame({"qid": qids, "docid": docids, "label": labels, "f0": f0}).to_parquet(path)
    scores = labels + rng.normal(0, 0.5, len(qids))
    run_file.write_text("".join(f"{q} Q0 {d} {i % 12 + 1} {float(s)!r} test\n"
                                for i, (q, d, s) in enumerate(zip(qids, docids, scores))))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, copy_empty_store: Callable[[Path], str],
           study_here: Callable[[list[str], Path], Any]) -> Stores:
    """Both jobs, in this process (what they log is under test, not their process), each
    into its own copy of an empty store."""
    base = tmp_path_factory.mktemp("repro_baselines")
    table = tmp_path_factory.mktemp("repro_table")
    data, run_file = table / "data.parquet", table / "scores.run"
    _write_table(data, run_file)
    # a ranker group of our own (the feature ranker plus the run file), found through
    # hydra.searchpath: a typed ranker entry cannot be added by a command-line override
    (table / "conf" / "ranker").mkdir(parents=True)
    (table / "conf" / "ranker" / "repro_table.yaml").write_text(
        f"defaults:\n  - feature\n  - _self_\nscores:\n  kind: run_file\n  path: {run_file}\n")
    jobs = {
        base: ["ranker=baselines", "dataset.n_queries=60", "dataset.n_train_queries=60",
               "ranker.hgb.params.max_iter=20"],
        table: ["dataset=table", f"dataset.path={data}", "dataset.default_feature=f0",
                "ranker=repro_table",
                f"hydra.searchpath=[file://{table / 'conf'}]"],
    }
    for root, args in jobs.items():
        study_here([*args, *_app_args(root, copy_empty_store(root))], root / "out")
    return Stores(Store(base, f"sqlite:///{base / 'mlflow.db'}"),
                  Store(table, f"sqlite:///{table / 'mlflow.db'}"), data, run_file)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m harness reproduce``: a process of its own (exit status, streams)."""
    return subprocess.run([sys.executable, "-m", "harness", "reproduce", *args], cwd=PROJECT,
                          env=_env(), capture_output=True, text=True, timeout=TIMEOUT)


def _cli_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``harness reproduce``'s entry point in this process, its exit status and streams as
    :func:`_cli` returns them (what the command says, not how its process ends)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = reproduce_main(list(args))
    return subprocess.CompletedProcess(["harness", "reproduce", *args], code, out.getvalue(),
                                       err.getvalue())


# --------------------------------------------------------------------------------------
# identical


def test_cli_reproduces_every_ranker_of_a_job_identically(stores: Stores) -> None:
    runs = stores.baselines.runs()
    proc = _cli(runs["job"], "--tracking-uri", stores.baselines.uri)
    assert proc.returncode == 0, _explain(proc)
    heads = [line for line in proc.stdout.splitlines() if line.startswith("run ")]
    assert len(heads) == len(BASELINES)
    for name in BASELINES:
        assert f"run {runs[name]} (ranker {name}): identical — 32 variants x 60 queries" \
            in heads
    assert "environment: same package versions" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_library_reproduces_each_ranker_run_identically(stores: Stores) -> None:
    runs = stores.baselines.runs()
    uri = stores.baselines.uri
    ids = ranker_run_ids(runs["job"], tracking_uri=uri)
    assert sorted(ids) == sorted(runs[name] for name in BASELINES)
    for name in BASELINES:
        result = reproduce_run(runs[name], tracking_uri=uri)
        assert isinstance(result, ReproResult)
        assert (result.run_id, result.ranker, result.identical) == (runs[name], name, True)
        assert result.differences.empty and result.env_changes == {}
        assert (result.n_variants, result.n_queries) == (32, 60)


# --------------------------------------------------------------------------------------
# a logged artifact that differs


@pytest.fixture(scope="module")
def tampered(stores: Stores, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """A copy of the noisy_oracle run whose parquet differs: nDCG@10 of the 3rd query by
    +1e-3, RR of the 5th by one ulp, and the last query dropped."""
    client, store = stores.baselines.client(), stores.baselines
    source = client.get_run(store.runs()["noisy_oracle"])
    tmp = tmp_path_factory.mktemp("tamper")
    for path in ("noisy_oracle.parquet", "config/config_resolved.yaml", "environment.json"):
        client.download_artifacts(source.info.run_id, path, str(tmp))
    frame = pd.read_parquet(tmp / "noisy_oracle.parquet")
    changed = {"nDCG@10": (frame.at[2, "qid"], float(frame.at[2, "nDCG@10"]))}
    frame.loc[2, "nDCG@10"] += 1e-3
    changed["RR"] = (frame.at[4, "qid"], float(frame.at[4, "RR"]))
    frame.loc[4, "RR"] = np.nextafter(frame.at[4, "RR"], -np.inf)
    dropped = frame.at[len(frame) - 1, "qid"]
    frame.iloc[:-1].to_parquet(tmp / "noisy_oracle.parquet", index=False)
    tags = {k: v for k, v in source.data.tags.items() if not k.startswith("mlflow.")}
    # the run logged these values (their digest): as if the code computed them then
    tags["per_query.sha256"] = file_sha256(tmp / "noisy_oracle.parquet")
    run = client.create_run(source.info.experiment_id, run_name="noisy_oracle tampered",
                            tags=tags)
    run_id = run.info.run_id
    client.log_artifact(run_id, str(tmp / "noisy_oracle.parquet"))
    client.log_artifact(run_id, str(tmp / "environment.json"))
    client.log_artifact(run_id, str(tmp / "config_resolved.yaml"), "config")
    client.set_terminated(run_id)
    return run_id, {"changed": changed, "dropped": dropped}


def test_cli_reports_each_differing_variant_and_query(stores: Stores,
                                                      tampered: tuple[str, dict]) -> None:
    run_id, what = tampered
    proc = _cli(run_id, "--tracking-uri", stores.baselines.uri)
    assert proc.returncode == 1, _explain(proc)
    out = proc.stdout
    assert f"run {run_id} (ranker noisy_oracle): DIFFERENT" in out
    qid, value = what["changed"]["nDCG@10"]
    line = next(x for x in out.splitlines() if x.strip().startswith("nDCG@10:"))
    assert "1 query differs, max |diff| 0.001" in line and qid in line
    assert f"{value + 1e-3!r} -> {value!r}" in line
    qid, value = what["changed"]["RR"]
    line = next(x for x in out.splitlines() if x.strip().startswith("RR:"))
    assert qid in line and f"-> {value!r}" in line and "max |diff| 1.11e-16" in line
    assert f"queries recomputed but not logged: {what['dropped']}" in out


def test_library_lists_the_differences(stores: Stores, tampered: tuple[str, dict]) -> None:
    run_id, what = tampered
    result = reproduce_run(run_id, tracking_uri=stores.baselines.uri)
    assert not result.identical
    d = result.differences.set_index("variant")
    assert sorted(d.index) == ["RR", "nDCG@10"]
    qid, value = what["changed"]["nDCG@10"]
    assert d.at["nDCG@10", "qid"] == qid and d.at["nDCG@10", "now"] == value
    assert d.at["nDCG@10", "abs_diff"] == pytest.approx(1e-3, rel=1e-9)
    assert d.at["RR", "logged"] == np.nextafter(value := what["changed"]["RR"][1], -np.inf)
    assert d.at["RR", "now"] == value
    assert result.extra_queries == (what["dropped"],) and result.missing_queries == ()
    assert result.n_queries == 59


def test_bit_comparison_treats_nan_as_equal_and_signed_zeros_as_different() -> None:
    logged = pd.DataFrame({"qid": [1, 2, 3], "n_docs": [3, 4, 5],
                           "nDCG@10": [np.nan, 0.0, 0.5]})
    now = pd.DataFrame({"qid": ["1", "2", "3"], "n_docs": [3, 4, 5],
                        "nDCG@10": [np.nan, -0.0, 0.5]}).iloc[::-1]
    result = _compare("r", "x", logged, now, {}, [])
    assert not result.identical
    assert result.differences[["variant", "qid"]].values.tolist() == [["nDCG@10", "2"]]
    same = _compare("r", "x", logged, logged.assign(qid=logged["qid"].astype(str)), {}, [])
    assert same.identical and (same.n_variants, same.n_queries) == (1, 3)


# --------------------------------------------------------------------------------------
# changed data, changed run file


def test_changed_run_file_then_changed_data_exit_2_naming_the_file(stores: Stores) -> None:
    runs = stores.table.runs()
    uri = stores.table.uri
    for name in ("feature_f0", "scores"):
        result = reproduce_run(runs[name], tracking_uri=uri)
        assert result.identical, format_result(result)

    original = stores.run_file.read_text()
    lines = original.splitlines(keepends=True)
    qid, q0, docid, rank, _, tag = lines[-1].split()
    stores.run_file.write_text("".join(lines[:-1]) + f"{qid} {q0} {docid} {rank} 99.0 {tag}\n")
    proc = _cli_here(runs["scores"], "--tracking-uri", uri)
    assert proc.returncode == 2, _explain(proc)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert f"the run file of ranker 'scores' changed since the run: {stores.run_file}" \
        in proc.stderr
    stores.run_file.write_text(original)
    assert reproduce_run(runs["scores"], tracking_uri=uri).identical

    frame = pd.read_parquet(stores.data)
    frame.loc[7, "label"] = (frame.at[7, "label"] + 1) % 4
    frame.to_parquet(stores.data)
    proc = _cli_here(runs["job"], "--tracking-uri", uri)
    assert proc.returncode == 2, _explain(proc)
    assert "Traceback" not in proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 2  # one line per ranker run of the job
    for line in errors:
        assert f"the data changed since the run: {stores.data}" in line
        assert "dataset digest logged" in line
    with pytest.raises(ReproduceError, match=r"data changed since the run: .*data\.parquet"):
        reproduce_run(runs["feature_f0"], tracking_uri=uri)


# --------------------------------------------------------------------------------------
# environment


def test_a_different_package_version_is_listed(stores: Stores, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = stores.baselines.runs()["oracle"]
    logged = json.loads(Path(stores.baselines.client().download_artifacts(
        run_id, "environment.json", str(tmp_path))).read_text())
    current = provenance.environment()
    assert current["packages"] == logged["packages"]  # same venv as the job
    current["packages"]["numpy"] = "0.0.1"
    monkeypatch.setattr(provenance, "environment", lambda: current)
    result = reproduce_run(run_id, tracking_uri=stores.baselines.uri)
    assert result.identical
    assert result.env_changes == {"numpy": (logged["packages"]["numpy"], "0.0.1")}
    text = format_result(result)
    assert f"  environment: numpy {logged['packages']['numpy']} -> 0.0.1" in text
    assert "  environment: same package versions" not in text


# --------------------------------------------------------------------------------------
# bad input


def test_unknown_run_id_is_one_line_exit_2(stores: Stores) -> None:
    proc = _cli("0123456789abcdef0123456789abcdef", "--tracking-uri", stores.baselines.uri)
    assert proc.returncode == 2, _explain(proc)
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: run '0123456789abcdef0123456789abcdef' not found in {stores.baselines.uri}"]


def test_bad_input_raises_reproduce_error(stores: Stores, tmp_path: Path) -> None:
    store = stores.baselines
    with pytest.raises(ReproduceError, match=r"run 'nope' not found in sqlite"):
        reproduce_run("nope", tracking_uri=store.uri)
    with pytest.raises(ReproduceError, match=r"no MLflow store at .*absent\.db"):
        reproduce_run("nope", tracking_uri=f"sqlite:///{tmp_path / 'absent.db'}")
    with pytest.raises(ReproduceError, match=r"is not a ranker run .*'job'.*ranker_run_ids"):
        reproduce_run(store.runs()["job"], tracking_uri=store.uri)
    client = store.client()
    exp = client.get_experiment_by_name("repro")
    other = client.create_run(exp.experiment_id, run_name="not harness").info.run_id
    client.set_terminated(other)
    with pytest.raises(ReproduceError, match=r"is not a harness run \(tag harness.role is "
                                             r"None"):
        ranker_run_ids(other, tracking_uri=store.uri)
    assert isinstance(ReproduceError("x"), harness.HarnessError)


def test_changed_data_names_only_the_file_that_changed(
        tmp_path: Path, copy_empty_store: Callable[[Path], str],
        study_here: Callable[[list[str], Path], Any]) -> None:
    """A TREC dataset reads two files; after editing the qrels, reproduce names the qrels
    and not the untouched run file (each file's sha256 is logged with the run)."""
    rng = np.random.default_rng(3)
    qrels, run = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels.write_text("".join(f"topic{q} 0 doc{q}-{d} {int(rng.integers(0, 3))}\n"
                             for q in range(8) for d in range(6)))
    run.write_text("".join(f"topic{q} Q0 doc{q}-{d} {d + 1} {10 - d + rng.random():.4f} sys\n"
                           for q in range(8) for d in range(6)))
    uri = copy_empty_store(tmp_path)
    study_here(["dataset=cast2021_bm25", f"dataset.qrels_path={qrels}",
                f"dataset.run_path={run}", "dataset.name=tiny_trec", "ranker=random",
                "metric=ndcg10", *_app_args(tmp_path, uri)], tmp_path / "out")
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("repro")
    (ranker,) = client.search_runs([exp.experiment_id], "tags.`harness.role` = 'ranker'")
    assert ranker.data.tags["dataset.sha256.qrels_path"] == hashlib.sha256(
        qrels.read_bytes()).hexdigest()
    lines = qrels.read_text().splitlines(keepends=True)
    first = lines[0].split()
    lines[0] = " ".join(first[:3] + [str((int(first[3]) + 1) % 3)]) + "\n"
    qrels.write_text("".join(lines))
    proc = _cli_here(ranker.info.run_id, "--tracking-uri", uri)
    assert proc.returncode == 2, _explain(proc)
    assert f"the data changed since the run: {qrels}" in proc.stderr
    assert str(run) not in proc.stderr


# --------------------------------------------------------------------------------------
# a run whose own records cannot be trusted


def _clone(stores: Stores, tmp: Path, *, params: dict[str, str] | None = None,
           truncate: str | None = None, alter: bool = False) -> str:
    """A copy of the noisy_oracle run: its tags, artifacts and ``params`` (none when None);
    ``truncate``: an artifact cut to its first 100 bytes; ``alter``: one value of its
    per-query table changed after the run logged the table's digest."""
    client, store = stores.baselines.client(), stores.baselines
    source = client.get_run(store.runs()["noisy_oracle"])
    files = ("noisy_oracle.parquet", "config/config_resolved.yaml", "environment.json")
    for path in files:
        client.download_artifacts(source.info.run_id, path, str(tmp))
    if truncate:
        cut = tmp / truncate
        cut.write_bytes(cut.read_bytes()[:100])
    if alter:
        frame = pd.read_parquet(tmp / "noisy_oracle.parquet")
        frame.loc[0, "nDCG@10"] = 1.0 - frame.at[0, "nDCG@10"]
        frame.to_parquet(tmp / "noisy_oracle.parquet", index=False)
    tags = {k: v for k, v in source.data.tags.items() if not k.startswith("mlflow.")}
    run_id = client.create_run(source.info.experiment_id, run_name="clone", tags=tags).info.run_id
    for key, value in (params or {}).items():
        client.log_param(run_id, key, value)
    client.log_artifact(run_id, str(tmp / "noisy_oracle.parquet"))
    client.log_artifact(run_id, str(tmp / "environment.json"))
    client.log_artifact(run_id, str(tmp / "config_resolved.yaml"), "config")
    client.set_terminated(run_id)
    return run_id


@pytest.mark.parametrize("artifact", ["noisy_oracle.parquet", "environment.json"])
def test_a_corrupted_artifact_is_one_line_exit_2_naming_it(stores: Stores, tmp_path: Path,
                                                           artifact: str) -> None:
    run_id = _clone(stores, tmp_path, truncate=artifact)
    proc = _cli_here(run_id, "--tracking-uri", stores.baselines.uri)
    assert proc.returncode == 2, _explain(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"run {run_id}: artifact {artifact!r} is unreadable" in lines[0]
    assert "Traceback" not in proc.stderr


def test_an_altered_artifact_is_named_not_reported_different(stores: Stores,
                                                             tmp_path: Path) -> None:
    """Issue 40: a per-query table whose bytes are not those its run logged was reported
    DIFFERENT (exit 1) as if the code had changed; it is named, as compare names it."""
    run_id = _clone(stores, tmp_path, alter=True)
    proc = _cli_here(run_id, "--tracking-uri", stores.baselines.uri)
    assert proc.returncode == 2, _explain(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "DIFFERENT" not in proc.stdout, proc.stderr
    assert f"run {run_id}: artifact 'noisy_oracle.parquet' was altered (sha256 " in lines[0]


def test_params_that_differ_from_the_saved_config_are_not_identical(stores: Stores,
                                                                    tmp_path: Path) -> None:
    """A job whose folder another job overwrote logs its own params next to the other's
    config: the values recomputed from that config match, yet nothing is reproduced."""
    client = stores.baselines.client()
    logged = dict(client.get_run(stores.baselines.runs()["noisy_oracle"]).data.params)
    assert logged["seed"] == "0" and logged["metric.k"] == "[5, 10, null]"
    honest = _clone(stores, tmp_path / "a", params=logged)
    assert reproduce_run(honest, tracking_uri=stores.baselines.uri).identical
    swapped = _clone(stores, tmp_path / "b", params=logged | {"seed": "1",
                                                              "metric.k": "[10]"})
    result = reproduce_run(swapped, tracking_uri=stores.baselines.uri)
    assert not result.identical and result.differences.empty
    (note,) = [n for n in result.notes if n.startswith("config:")]
    assert "metric.k: logged '[10]'" in note and "seed: logged '1', config '0'" in note
    proc = _cli_here(swapped, "--tracking-uri", stores.baselines.uri)
    assert proc.returncode == 1 and "logged params do not match its saved config" in proc.stdout
