"""``harness compare RUN_ID RUN_ID ...``: ranker runs of separate jobs (``harness run``
calls into one temporary MLflow store) compared by run id, and the refusals.

Four jobs run once for the module, in its process, on the synthetic dataset (40 queries):

- ``v7``: oracle, random and noisy_oracle (sigma 1.0, the default), experiment ``v7``;
- ``v8``: noisy_oracle with sigma 2.0 (another version), experiment ``v8``;
- ``same``: noisy_oracle with sigma 1.0 again (a candidate identical to v7's), experiment
  ``v8``;
- ``other``: oracle on 30 queries: another dataset (another digest).

Refusals that need runs the app cannot produce (another query set on the same data, another
evaluation option, an altered artifact) use runs made here with MLflow's client and tagged
as the app tags them (``fake_runs``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from harness.commands.compare import main as cli_main
from harness.compare.runs import (
    ArtifactChanged,
    DefinitionMismatch,
    QuerySetMismatch,
    load_runs,
)
from harness.errors import DatasetMismatch, RunNotFound

COMMON = ["dataset.n_queries=40", "dataset.n_train_queries=0", "tracking.figures=false",
          "tracking.bootstrap_resamples=200"]
JOBS = {
    "v7": ["ranker=baselines", "~ranker.hgb", "~ranker.feature_f0", "study=v7"],
    "v8": ["ranker=noisy_oracle", "ranker.noisy_oracle.sigma=2.0", "study=v8"],
    "same": ["ranker=noisy_oracle", "study=v8"],
    "other": ["ranker=oracle", "dataset.n_queries=30", "study=other"],
}


@dataclass
class Jobs:
    root: Path
    uri: str
    job: dict[str, str]  # job name -> job run id
    ranker: dict[tuple[str, str], str]  # (job, ranker) -> ranker run id

    def client(self) -> MlflowClient:
        return MlflowClient(tracking_uri=self.uri)


def ids_printed(stdout: str) -> dict[str, str]:
    """The run ids a job prints at its end: ``job`` and each ranker's name."""
    block = stdout[stdout.index("\nMLflow: "):].splitlines()[2:]
    out = {}
    for line in block:
        parts = line.split()
        if not parts or not re.fullmatch(r"[0-9a-f]{32}", parts[-1]):
            break
        out["job" if parts[:2] == ["job", "run"] else parts[0]] = parts[-1]
    return out


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory, copy_empty_store: Callable[[Path], str],
         study_here: Callable[[list[str], Path], Any]) -> Jobs:
    """The four jobs, in this process (what they log is under test, not their process:
    tests/test_compare.py's sweep is a real one), into one copy of an empty store."""
    root = tmp_path_factory.mktemp("compare_runs")
    uri = copy_empty_store(root)
    job, ranker = {}, {}
    for name, args in JOBS.items():
        result = study_here([*COMMON, *args, f"tracking.uri={uri}",
                             f"tracking.artifact_root={root / 'artifacts'}",
                             f"tracking.pending_dir={root / 'pending'}",
                             f"cache_dir={root / 'cache'}"], root / name)
        ids = ids_printed(result.closing_summary(name))  # what the job prints at its end
        job[name] = ids.pop("job")
        ranker |= {(name, r): i for r, i in ids.items()}
    return Jobs(root, uri, job, ranker)


def cli(*args: str) -> tuple[int, str, str]:
    """``harness compare`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return code, out.getvalue(), err.getvalue()


def n_runs(uri: str) -> int:
    client = MlflowClient(tracking_uri=uri)
    return sum(len(client.search_runs([e.experiment_id], max_results=1000))
               for e in client.search_experiments())


def on_disk(jobs: Jobs, job: str, ranker: str) -> pd.DataFrame:
    """A job's per-query table as the job wrote it to its folder (not through MLflow)."""
    return pd.read_parquet(jobs.root / job / "per_query" / f"{ranker}.parquet").set_index("qid")


# --------------------------------------------------------------------------------------
# two jobs, compared by run id


def test_two_jobs_compared_by_run_id(jobs: Jobs, tmp_path: Path) -> None:
    v7_noisy = jobs.ranker[("v7", "noisy_oracle")]
    # a ranker run of one job (experiment v7) and the job run of another (experiment v8)
    sweep = load_runs(jobs.uri, [v7_noisy, jobs.job["v8"]])
    assert set(sweep.versions) == {"noisy_oracle [sigma=1.0]", "noisy_oracle [sigma=2.0]"}
    assert sweep.experiment == "v7, v8"
    assert sweep.resolve(v7_noisy) == "noisy_oracle [sigma=1.0]"
    assert sweep.resolve(jobs.job["v8"]) == "noisy_oracle [sigma=2.0]"  # the job's one ranker
    a, b = on_disk(jobs, "v7", "noisy_oracle"), on_disk(jobs, "v8", "noisy_oracle")
    pd.testing.assert_series_equal(sweep.per_query["noisy_oracle [sigma=2.0]"]["nDCG@10"],
                                   b["nDCG@10"])
    code, out, err = cli(jobs.job["v8"], v7_noisy, "--baseline", v7_noisy, "--tracking-uri",
                         jobs.uri, "--out-dir", str(tmp_path), "--resamples", "500",
                         "--no-log")
    assert code == 0, err
    assert "2 ranker versions (noisy_oracle [sigma=1.0], noisy_oracle [sigma=2.0])" in out
    table = pd.read_csv(next(tmp_path.rglob("comparison.csv")))
    row = table[table["variant"] == "nDCG@10"].iloc[0]
    assert (row["ranker_a"], row["ranker_b"]) == ("noisy_oracle [sigma=2.0]",
                                                  "noisy_oracle [sigma=1.0]")
    x, y = b["nDCG@10"].to_numpy(), a.loc[b.index, "nDCG@10"].to_numpy()
    assert row["n"] == 40 and row["mean_diff"] == pytest.approx(np.mean(x - y), abs=1e-12)
    from scipy import stats
    assert row["p_ttest"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9)


def test_one_version_in_two_jobs_keeps_two_sides(jobs: Jobs) -> None:
    # v7's noisy_oracle and the job "same": one config, so one cache key, yet two sides
    v7_noisy, same = jobs.ranker[("v7", "noisy_oracle")], jobs.ranker[("same", "noisy_oracle")]
    sweep = load_runs(jobs.uri, [v7_noisy, same])
    assert sorted(sweep.versions) == sorted([f"noisy_oracle [run {v7_noisy[:8]}]",
                                             f"noisy_oracle [run {same[:8]}]"])
    frames = list(sweep.per_query.values())
    pd.testing.assert_frame_equal(frames[0], frames[1])  # the same scores: the same values


# --------------------------------------------------------------------------------------
# refusals: one line, exit 2, nothing logged


def refused(jobs: Jobs, *args: str) -> str:
    before = n_runs(jobs.uri)
    code, _, err = cli(*args, "--tracking-uri", jobs.uri, "--resamples", "100")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert n_runs(jobs.uri) == before  # nothing logged for a refused comparison
    return lines[0]


def test_different_datasets_are_refused(jobs: Jobs) -> None:
    line = refused(jobs, jobs.job["v7"], jobs.job["other"])
    assert "evaluated on different data" in line
    digests = {MlflowClient(tracking_uri=jobs.uri).get_run(
        jobs.ranker[(j, "oracle")]).data.tags["dataset.digest"] for j in ("v7", "other")}
    assert len(digests) == 2 and all(d[:12] in line for d in digests)


def test_unknown_run_id_is_refused(jobs: Jobs) -> None:
    line = refused(jobs, jobs.job["v7"], "f" * 32)
    assert line.startswith(f"error: run '{'f' * 32}': not found")


def fake_ranker(jobs: Jobs, experiment: str, name: str, frame: pd.DataFrame, *,
                params: dict[str, str] | None = None, digest: str | None = None,
                artifact: bool = True) -> str:
    """A ranker run tagged as the app tags one (on v7's dataset), holding ``frame`` as its
    per-query artifact and the sha256 of the file (or ``digest``)."""
    client = jobs.client()
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(
        experiment, artifact_location=(jobs.root / "artifacts" / experiment).as_uri())
    dataset = client.get_run(jobs.ranker[("v7", "oracle")]).data.tags["dataset.digest"]
    path = jobs.root / "fake" / experiment / name / f"{name}.parquet"
    path.parent.mkdir(parents=True)
    frame.to_parquet(path, index=False)
    run = client.create_run(exp_id, run_name=name, tags={
        "harness.role": "ranker", "ranker.name": name, "ranker.cache_key": f"key-{name}",
        "dataset.digest": dataset, "dataset.name": "synthetic",
        "per_query.sha256": digest or hashlib.sha256(path.read_bytes()).hexdigest()}).info.run_id
    for key, value in (params or {"metric.missing": "exclude",
                                  "metric.nan_scores": "error"}).items():
        client.log_param(run, key, value)
    if artifact:
        client.log_artifact(run, str(path))
    client.set_terminated(run)
    return run


def test_query_sets_definitions_and_artifacts(jobs: Jobs, tmp_path: Path) -> None:
    qids = [f"q{i}" for i in range(6)]
    a = fake_ranker(jobs, "fake", "a", pd.DataFrame({"qid": qids, "RR": [1.0, 0.5] * 3}))
    b = fake_ranker(jobs, "fake", "b", pd.DataFrame({"qid": qids[:4], "RR": [0.5] * 4}))
    line = refused(jobs, a, b)
    assert "different query sets: a has 6 queries, b 4 (2 only in the first, 0 only in the " \
           "second, e.g. 'q4'); --allow-subset compares on the 4 common queries" in line
    with pytest.raises(QuerySetMismatch):
        load_runs(jobs.uri, [a, b])
    sweep = load_runs(jobs.uri, [a, b], allow_subset=True)
    assert list(sweep.per_query["a"].index) == qids[:4]
    assert "compared on the 4 queries every run holds; dropped 2 (a: 2)" in " ".join(
        sweep.notes)
    code, out, err = cli(a, b, "--allow-subset", "--tracking-uri", jobs.uri, "--no-log",
                         "--resamples", "100", "--out-dir", str(tmp_path))
    assert code == 0, err
    assert "dropped 2 (a: 2)" in out
    # the same variant under another evaluation option
    c = fake_ranker(jobs, "fake", "c", pd.DataFrame({"qid": qids, "RR": [0.0] * 6}),
                    params={"metric.missing": "zero", "metric.nan_scores": "error"})
    assert "variant 'RR' has different definitions: run " in refused(jobs, a, c)
    assert "metric.missing=exclude" in refused(jobs, a, c)
    with pytest.raises(DefinitionMismatch):
        load_runs(jobs.uri, [a, c])
    # an artifact whose bytes are not those logged; a run without its artifact
    d = fake_ranker(jobs, "fake", "d", pd.DataFrame({"qid": qids, "RR": [0.2] * 6}),
                    digest="0" * 64)
    assert f"run {d} (d): artifact d.parquet was altered (sha256 " in refused(jobs, a, d)
    e = fake_ranker(jobs, "fake", "e", pd.DataFrame({"qid": qids, "RR": [0.2] * 6}),
                    artifact=False)
    assert f"run {e} (e) has no per-query artifact e.parquet" in refused(jobs, a, e)
    with pytest.raises(ArtifactChanged):
        load_runs(jobs.uri, [a, e])
    with pytest.raises(DatasetMismatch):
        load_runs(jobs.uri, [a, jobs.job["other"]])
    with pytest.raises(RunNotFound):
        load_runs(jobs.uri, [a, "0" * 32])


def test_several_baselines_by_run_id_and_name(jobs: Jobs, tmp_path: Path) -> None:
    oracle = jobs.ranker[("v7", "oracle")]
    code, out, err = cli(jobs.job["v7"], jobs.job["v8"], "--baseline", oracle, "--baseline",
                         "random", "--family", "baseline", "--tracking-uri", jobs.uri,
                         "--no-log", "--resamples", "100", "--out-dir", str(tmp_path),
                         "--variants", "nDCG@10")
    assert code == 0, err
    t = pd.read_csv(next(tmp_path.rglob("comparison.csv")))
    assert sorted(zip(t["ranker_a"], t["ranker_b"])) == sorted([
        ("noisy_oracle [sigma=1.0]", "oracle"), ("noisy_oracle [sigma=2.0]", "oracle"),
        ("random", "oracle"), ("noisy_oracle [sigma=1.0]", "random"),
        ("noisy_oracle [sigma=2.0]", "random")])
    code, _, err = cli(jobs.job["v7"], jobs.job["v8"], "--baseline", jobs.job["v7"],
                       "--tracking-uri", jobs.uri, "--no-log")
    assert code == 2 and "stands for 3 ranker versions here; pick one" in err


# --------------------------------------------------------------------------------------
# the gate, the comparison's own run, and its reproduction


def artifact_file(jobs: Jobs, run_id: str, path: str) -> Path:
    uri = jobs.client().get_run(run_id).info.artifact_uri
    return Path(uri.removeprefix("file://")) / path


def logged_id(out: str) -> str:
    return re.search(r"^comparison logged as run ([0-9a-f]{32}) ", out, re.M).group(1)


def gate(jobs: Jobs, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    return cli(*args, "--margin", "nDCG@10=0.01", "--gate", "--tracking-uri", jobs.uri,
               "--resamples", "500", "--out-dir", str(tmp_path / "reports"),
               "--pending-dir", str(tmp_path / "pending"))


def test_the_gate_passes_an_identical_candidate_and_fails_random(jobs: Jobs,
                                                                 tmp_path: Path) -> None:
    import mlflow

    v7_noisy = jobs.ranker[("v7", "noisy_oracle")]
    code, out, err = gate(jobs, tmp_path, jobs.job["same"], v7_noisy, "--baseline", v7_noisy)
    assert code == 0, err
    assert "gate: passed (1 gated comparison(s) better or not worse)" in out
    # each side is labelled by the id it was given by (here the job's and the ranker run's)
    assert f"nDCG@10, noisy_oracle [run {jobs.job['same'][:8]}] vs noisy_oracle " \
           f"[run {v7_noisy[:8]}]: " \
           "not worse (within margin) (diff +0.0000, margin 0.01;" in out
    passed = logged_id(out)
    random, oracle = jobs.ranker[("v7", "random")], jobs.ranker[("v7", "oracle")]
    code, out, err = gate(jobs, tmp_path, random, oracle, "--baseline", "oracle")
    assert code == 1, err
    assert "gate: FAILED (1 of 1 gated comparison(s))\n  nDCG@10, random vs oracle: worse" in out
    failed = logged_id(out)
    # the comparison's own run, found by its verdict
    mlflow.set_tracking_uri(jobs.uri)
    try:
        found = mlflow.search_runs(filter_string="tags.`harness.verdict` = 'worse'",
                                   search_all_experiments=True)
    finally:
        mlflow.set_tracking_uri(None)
    assert list(found["run_id"]) == [failed]
    run = jobs.client().get_run(failed)
    assert run.data.tags["harness.role"] == "comparison"
    assert set(run.data.tags["harness.compared_runs"].split(",")) == {random, oracle}
    assert run.data.tags["harness.baseline_runs"] == oracle
    assert run.data.metrics["verdict.ndcg_at_10"] == -1.0
    assert jobs.client().get_run(passed).data.tags["harness.verdict"] == \
        "not worse (within margin)"
    files = {a.path for a in jobs.client().list_artifacts(failed)}
    assert {"report.html", "verdicts.csv", "comparison.json", "comparison.csv"} <= files
    verdicts = pd.read_csv(artifact_file(jobs, failed, "verdicts.csv"))
    row = verdicts[verdicts["variant"] == "nDCG@10"].iloc[0]
    a, b = on_disk(jobs, "v7", "random")["nDCG@10"], on_disk(jobs, "v7", "oracle")["nDCG@10"]
    assert row["mean_diff"] == pytest.approx((a - b).mean(), abs=1e-12)


def test_bad_margins_and_a_gate_without_margin_are_refused(jobs: Jobs) -> None:
    v7 = jobs.job["v7"]
    assert "the margin 'x' is not a number" in refused(jobs, v7, jobs.job["v8"], "--baseline",
                                                       "oracle", "--margin", "nDCG@10=x")
    assert "no compared run has variant 'nDCG@11'" in refused(
        jobs, v7, jobs.job["v8"], "--baseline", "oracle", "--margin", "nDCG@11=0.1")
    assert "must be a finite number >= 0; got -0.1" in refused(
        jobs, v7, jobs.job["v8"], "--baseline", "oracle", "--margin", "nDCG@10=-0.1")
    assert "--gate needs the variants it gates" in refused(
        jobs, v7, jobs.job["v8"], "--baseline", "oracle", "--gate")
    assert "name it with --baseline" in refused(jobs, v7, jobs.job["v8"], "--margin",
                                                "nDCG@10=0.1")


def reproduce(jobs: Jobs, run_id: str) -> tuple[int, str, str]:
    from harness.commands.reproduce import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([run_id, "--tracking-uri", jobs.uri])
    return code, out.getvalue(), err.getvalue()


def test_reproduce_recomputes_a_logged_comparison(jobs: Jobs, tmp_path: Path) -> None:
    v8, v7_noisy = jobs.job["v8"], jobs.ranker[("v7", "noisy_oracle")]
    code, out, err = cli(v8, v7_noisy, "--baseline", v7_noisy, "--margin", "RR=0.05",
                         "--equivalence", "--tracking-uri", jobs.uri, "--resamples", "300",
                         "--out-dir", str(tmp_path), "--pending-dir", str(tmp_path / "p"))
    assert code == 0, err
    compared = logged_id(out)
    code, out, err = reproduce(jobs, compared)
    assert code == 0, err
    assert re.match(rf"comparison run {compared}: identical — \d+ values recomputed", out)
    # a number of the logged table changed: listed, exit 1
    path = artifact_file(jobs, compared, "comparison.csv")
    table = pd.read_csv(path)
    true_value = float(table.loc[0, "p_ttest"])
    table.loc[0, "p_ttest"] = 0.123
    table.to_csv(path, index=False)
    code, out, _ = reproduce(jobs, compared)
    assert code == 1
    assert "DIFFERENT — 1 of " in out
    assert f"comparison.csv {table.loc[0, 'variant']} / {table.loc[0, 'ranker_a']} / " \
           f"{table.loc[0, 'ranker_b']}, p_ttest: logged 0.123, now {true_value!r}" in out
    # a compared run's per-query artifact altered: one line naming it, exit 2
    parquet = artifact_file(jobs, v7_noisy, "noisy_oracle.parquet")
    original = parquet.read_bytes()
    try:
        frame = pd.read_parquet(parquet)
        frame.loc[0, "RR"] = 0.0
        frame.to_parquet(parquet, index=False)
        code, out, err = reproduce(jobs, compared)
        assert code == 2
        assert err.strip().splitlines() == [err.strip()]
        assert f"run {v7_noisy} (noisy_oracle): artifact noisy_oracle.parquet was altered" \
            in err
        assert "refused" not in err
        # compare refuses it too
        line = refused(jobs, v8, v7_noisy)
        assert "artifact noisy_oracle.parquet was altered" in line
    finally:
        parquet.write_bytes(original)
