"""harness.compare: statistics checked against scipy and hand-worked values, loading a real
sweep from a temporary MLflow store, the bad-input errors and the CLI end to end.

The sweep (``small_sweep``) is created once per session by ``python -m harness -m ...`` and
is shared with tests/test_report.py and tests/test_notebook.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy
from mlflow.tracking import MlflowClient
from scipy import stats

from harness.commands.compare import main as cli_main
from harness.compare import (
    CompareError,
    DatasetMismatch,
    NoOverlap,
    RunInfo,
    RunNotFound,
    TooFewRankers,
    UnknownName,
    adjust_pvalues,
    build_comparison,
    compare_table,
    group_versions,
    holm,
    latest_parent_run,
    load_sweep,
    paired_comparison,
    sensitivity,
)
from harness.compare.resampling import permutation_pvalues
from harness.compare.versions import split_overrides
from harness.errors import HarnessError
from harness.paths import PROJECT_ROOT

# 2 jobs (noisy_oracle sigma) x 2 jobs (tie rule) = 4 jobs of 4 rankers each (no hgb): 5
# ranker versions (noisy_oracle twice), 10 variants (4 nDCG x 2 tie rules + AP@10 + RR).
SWEEP_ARGS = ["-m", "ranker=baselines", "~ranker.hgb", "ranker.noisy_oracle.sigma=0.5,2.0",
              "metric.ties=optimistic,pessimistic", "metric.name=ndcg", "metric.k=[5,10]",
              "metric.extra=[ap@10,rr]", "dataset.n_queries=60", "dataset.n_train_queries=0",
              "tracking.figures=false", "study=compare_test"]
VERSIONS = {"oracle", "random", "feature_f0", "noisy_oracle [sigma=0.5]",
            "noisy_oracle [sigma=2.0]"}


@dataclass(frozen=True)
class SmallSweep:
    root: Path
    uri: str
    parent_run_id: str
    sweep_dir: Path


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HARNESS_"))}


def make_small_sweep(root: Path, empty_store: Callable[[Path], str] | None = None
                     ) -> SmallSweep:
    """Run the sweep into ``root`` once (a marker file makes later calls free); into a copy
    of an empty store made by ``empty_store`` (tests/conftest.py's ``copy_empty_store``),
    else into a store MLflow builds."""
    marker = root / "sweep.json"
    if marker.is_file():
        data = json.loads(marker.read_text())
        return SmallSweep(Path(data["root"]), data["uri"], data["parent"],
                          Path(data["sweep_dir"]))
    root.mkdir(parents=True, exist_ok=True)
    uri = empty_store(root) if empty_store else f"sqlite:///{root / 'mlflow.db'}"
    sweep_dir = root / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *SWEEP_ARGS, f"tracking.uri={uri}",
         f"tracking.artifact_root={root / 'artifacts'}",
         f"tracking.pending_dir={root / 'pending'}", f"cache_dir={root / 'cache'}",
         f"hydra.sweep.dir={sweep_dir}"],
        cwd=PROJECT_ROOT, env=clean_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    parent = (sweep_dir / ".mlflow_parent_run_id").read_text().strip()
    marker.write_text(json.dumps({"root": str(root), "uri": uri, "parent": parent,
                                  "sweep_dir": str(sweep_dir)}))
    return SmallSweep(root, uri, parent, sweep_dir)


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory: pytest.TempPathFactory,
                copy_empty_store: Callable[[Path], str]) -> SmallSweep:
    return make_small_sweep(tmp_path_factory.getbasetemp() / "compare_sweep", copy_empty_store)


def fake_runs(uri: str, root: Path, experiment: str,
              rankers: dict[str, tuple[str, pd.DataFrame]]) -> str:
    """A parent run with one ranker child per entry (digest, per-query table), tagged as
    the app tags them; returns the parent's id."""
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(
        experiment, artifact_location=(root / "artifacts" / experiment).as_uri())
    parent = client.create_run(exp_id, tags={"harness.role": "sweep"}).info.run_id
    for name, (digest, frame) in rankers.items():
        run = client.create_run(exp_id, run_name=name, tags={
            "mlflow.parentRunId": parent, "harness.role": "ranker", "ranker.name": name,
            "ranker.cache_key": f"{name}-{digest}", "dataset.digest": digest,
            "dataset.name": "fake"}).info.run_id
        path = root / "fake" / run / f"{name}.parquet"
        path.parent.mkdir(parents=True)
        frame.to_parquet(path, index=False)
        client.log_artifact(run, str(path))
        client.set_terminated(run)
    client.set_terminated(parent)
    return parent


def table(qids: list[str], **columns: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"qid": qids, **columns})


# --- multiple-testing corrections ---------------------------------------------------------

def test_holm_matches_the_hand_worked_example() -> None:
    # sorted 0.01, 0.03, 0.04 -> 3*0.01 = 0.03, 2*0.03 = 0.06, max(0.06, 1*0.04) = 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    # 5*.01=.05, 4*.02=.08, 3*.03=.09, max(.09, 2*.04=.08)=.09, max(.09, .05)=.09
    np.testing.assert_allclose(holm([0.01, 0.02, 0.03, 0.04, 0.05]),
                               [0.05, 0.08, 0.09, 0.09, 0.09])
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])  # capped at 1
    out = holm([0.01, np.nan, 0.04])  # NaN stays out of the family (m = 2)
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.04])
    assert np.isnan(out[1])
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        holm([0.2, 1.5])


def test_bh_is_scipys_false_discovery_control() -> None:
    p = np.random.default_rng(3).uniform(0, 0.2, 17)
    np.testing.assert_allclose(adjust_pvalues(p, "bh"), stats.false_discovery_control(p))
    with pytest.raises(CompareError, match="correction must be one of holm, bh, bonferroni; got 'x'"):
        adjust_pvalues(p, "x")


# --- one paired comparison ----------------------------------------------------------------

def test_paired_statistics_equal_scipy_on_the_same_arrays() -> None:
    rng = np.random.default_rng(7)
    qids = [f"q{i}" for i in range(40)]
    a = pd.Series(rng.uniform(0, 1, 40), index=qids)
    b = pd.Series(np.clip(a.to_numpy() - rng.normal(0.05, 0.1, 40), 0, 1), index=qids)
    r = paired_comparison(a, b, seed=5, resamples=999)
    x, y = a.to_numpy(), b.to_numpy()
    d = x - y
    assert r["n"] == 40 and r["n_dropped"] == 0 and r["dropped"] == ""
    assert r["p_ttest"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-12)
    assert r["p_wilcoxon"] == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-12)
    # the paired randomization test as specified: permuting within pairs of (a, b)
    perm = stats.permutation_test((x, y), lambda u, v, axis: np.mean(u - v, axis=axis),
                                  permutation_type="samples", vectorized=True,
                                  n_resamples=999, rng=np.random.default_rng(5))
    assert r["p_permutation"] == pytest.approx(perm.pvalue, rel=1e-12)
    boot = stats.bootstrap((d,), np.mean, n_resamples=999, vectorized=True,
                           rng=np.random.default_rng(5)).confidence_interval
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((boot.low, boot.high), rel=1e-12)
    assert r["d_z"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
    assert r["mean_diff"] == pytest.approx(d.mean(), rel=1e-12)
    assert r["wins"] + r["ties"] + r["losses"] == 40
    again = paired_comparison(a, b, seed=5, resamples=999)
    assert again == r  # seeded: reproducible


def test_alignment_drops_queries_and_says_why() -> None:
    a = pd.Series([0.5, 0.7, 0.2, 0.9, np.nan, 0.3], index=list("abcdef"))
    b = pd.Series([0.5, 0.6, 0.4, 0.1, 0.3, 0.8], index=list("abcdeg"))
    r = paired_comparison(a, b, resamples=50)
    # compared: a (tie), b (win), c (loss), d (win); e is NaN in a; f only in a; g only in b
    assert (r["n"], r["wins"], r["ties"], r["losses"]) == (4, 2, 1, 1)
    assert r["n_dropped"] == 3
    assert r["dropped"] == ("3 queries: 1 only in a, 1 only in b, "
                            "1 without a value (NaN) in a or b")
    assert r["mean_a"] == pytest.approx(np.mean([0.5, 0.7, 0.2, 0.9]))


def test_all_zero_differences_give_p_one_and_say_so() -> None:
    a = pd.Series([0.5, 0.7, 1.0], index=["q1", "q2", "q3"])
    r = paired_comparison(a, a.copy() + 1e-15, resamples=50)  # float noise counts as a tie
    assert (r["p_ttest"], r["p_wilcoxon"], r["p_permutation"]) == (1.0, 1.0, 1.0)
    assert "all differences are zero" in r["note"]
    assert (r["wins"], r["ties"], r["losses"], r["d_z"]) == (0, 3, 0, 0.0)
    assert (r["ci_low"], r["ci_high"]) == (0.0, 0.0)


# --- the comparison table -----------------------------------------------------------------

def three_rankers() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(11)
    qids = [f"q{i}" for i in range(30)]
    base = rng.uniform(0.2, 0.8, 30)
    return {name: table(qids, **{"nDCG@10": np.clip(base + shift + rng.normal(0, 0.05, 30),
                                                    0, 1),
                                 "AP@10": np.clip(base / 2 + shift + rng.normal(0, 0.02, 30),
                                                  0, 1)})
            for name, shift in (("good", 0.2), ("mid", 0.1), ("bad", 0.0))} | {
        "solo": table(qids, **{"RR": base})}


def test_compare_table_all_pairs_holm_per_variant() -> None:
    frames = three_rankers()
    c = build_comparison(frames, correction="holm", alpha=0.05, resamples=200)
    t = c.tests
    pd.testing.assert_frame_equal(t, compare_table(frames, correction="holm", alpha=0.05,
                                                   resamples=200))
    assert list(t["variant"].unique()) == ["nDCG@10", "AP@10"]  # RR: one ranker only
    assert "RR: computed for solo only; not compared" in c.notes
    pairs = t[t["variant"] == "nDCG@10"][["ranker_a", "ranker_b"]].apply(tuple, axis=1)
    assert list(pairs) == [("good", "mid"), ("good", "bad"), ("mid", "bad")]
    for _, group in t.groupby("variant"):
        np.testing.assert_allclose(group["p_ttest_adj"], holm(group["p_ttest"]))
    assert t["significant"].equals(t["p_ttest_adj"] < 0.05)
    assert t["significant"].all()
    assert c.settings.correction == "holm" and c.settings.test == "ttest"
    assert not t.attrs  # the settings are typed fields of the Comparison, not attrs


def test_compare_table_rows_equal_one_comparison_at_a_time() -> None:
    # the permutation test and the bootstrap run once per pair over its variants: the same
    # sign flips and resamples as one call per variant with the same seed
    frames = three_rankers()
    frames["mid"].loc[3, "AP@10"] = np.nan  # AP@10 of mid vs others: another query set
    t = compare_table(frames, seed=4, resamples=300)
    for row in t.itertuples():
        a = frames[row.ranker_a].set_index("qid")[row.variant]
        b = frames[row.ranker_b].set_index("qid")[row.variant]
        single = paired_comparison(a, b, seed=4, resamples=300)
        interval = single.pop("ci_low"), single.pop("ci_high")
        assert {k: getattr(row, k) for k in single} == single
        assert (row.ci_low, row.ci_high) == pytest.approx(interval, rel=1e-12)
    assert set(t[t["ranker_a"] == "mid"]["n"]) == {30, 29}


def test_pairs_tested_as_arrays_equal_scipy_pair_by_pair() -> None:
    """Above 50 queries the t-test and Wilcoxon run as one scipy call over every pair of a
    query set: each row must equal scipy's ttest_rel and wilcoxon on that pair alone, with
    rankers that miss queries, hold a NaN, list their queries in another order, and tie."""
    rng = np.random.default_rng(11)
    qids = [f"topic-{i:04d}" for i in range(120)]
    frames = {name: pd.DataFrame({"qid": qids, "nDCG@10": np.round(rng.random(120), 1)})
              for name in ("a", "b", "c", "d")}
    frames["b"] = frames["b"].iloc[7:]  # 7 queries missing
    frames["c"].loc[5, "nDCG@10"] = np.nan
    frames["d"] = frames["d"].iloc[::-1]  # another order
    t = compare_table(frames, tests=["ttest", "wilcoxon"], intervals=False)
    assert "p_permutation" not in t and "ci_low" not in t  # only the tests asked for
    assert len(t) == 6
    for row in t.itertuples():
        both = pd.concat([frames[row.ranker_a].set_index("qid")["nDCG@10"],
                          frames[row.ranker_b].set_index("qid")["nDCG@10"]],
                         axis=1, join="inner").dropna().to_numpy()
        x, y = both[:, 0], both[:, 1]
        d = np.where(np.abs(x - y) <= 1e-12, 0.0, x - y)
        assert row.n == len(x) and (row.wins, row.ties, row.losses) == (
            (d > 0).sum(), (d == 0).sum(), (d < 0).sum())
        assert row.p_ttest == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-12)
        assert row.p_wilcoxon == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-12)
        assert row.mean_diff == pytest.approx(x.mean() - y.mean(), abs=1e-15)


def test_compare_table_baseline_bh_and_family_all() -> None:
    frames = three_rankers()
    t = compare_table(frames, ["nDCG@10", "AP@10"], baseline="bad", correction="bh",
                      test="permutation", resamples=200, family="all")
    assert set(t["ranker_b"]) == {"bad"} and len(t) == 4
    np.testing.assert_allclose(t["p_wilcoxon_adj"],
                               stats.false_discovery_control(t["p_wilcoxon"]))
    assert t["significant"].equals(t["p_permutation_adj"] < 0.05)
    coarse = build_comparison(frames, ["nDCG@10"], test="permutation", resamples=20)
    assert not coarse.tests["significant"].any()  # Holm x3 of p >= 1/21: never below 0.05
    assert any("raise resamples" in n for n in coarse.notes)


def test_compare_table_errors() -> None:
    frames = three_rankers()
    with pytest.raises(TooFewRankers, match="at least two ranker versions; got 1 "
                                            r"\(good\)"):
        compare_table({"good": frames["good"]})
    with pytest.raises(UnknownName, match="baseline 'nope' is not among the rankers"):
        compare_table(frames, baseline="nope")
    with pytest.raises(UnknownName, match="variant\\(s\\) 'nDCG@3' not computed"):
        compare_table(frames, ["nDCG@3"])
    with pytest.raises(CompareError, match="test must be one of"):
        compare_table(frames, test="z")
    with pytest.raises(CompareError, match=r"alpha must lie in \(0, 1\)"):
        compare_table(frames, alpha=1.5)
    disjoint = {"x": table(["q1", "q2"], RR=[1.0, 0.5]), "y": table(["q3"], RR=[1.0])}
    with pytest.raises(NoOverlap, match="x vs y under RR: no query has a value for both "
                                        r"\(3 queries: 2 only in a, 1 only in b\)"):
        compare_table(disjoint)


# --- sensitivity --------------------------------------------------------------------------

def test_kendall_tau_is_one_for_the_same_order_and_minus_one_reversed() -> None:
    qids = ["q1", "q2"]
    frames = {name: table(qids, **{"nDCG@5": [v, v], "nDCG@10": [v + 0.01, v + 0.01],
                                   "nDCG@5(gain=linear)": [1 - v, 1 - v]})
              for name, v in (("a", 0.9), ("b", 0.5), ("c", 0.1))}
    s = sensitivity(frames)
    assert s.tau.loc["nDCG@5", "nDCG@10"] == pytest.approx(1.0)
    assert s.tau.loc["nDCG@5", "nDCG@5(gain=linear)"] == pytest.approx(-1.0)
    assert list(s.winners["winner"]) == ["a", "a", "c"]
    assert s.winner_changes
    # no comparison table: the winners are by mean and said to be untested
    assert any(n.startswith("the winner by mean changes with the variant (significance not "
                            "tested: no comparison table given): a under 2") for n in s.notes)
    assert any(n.startswith("tie-sensitivity interval not available") and
               "metric.ties=[optimistic,pessimistic]" in n for n in s.notes)
    assert s.ties.empty


def test_sensitivity_power_and_tie_interval() -> None:
    qids = ["q1", "q2", "q3", "q4"]
    frames = {"x": table(qids, **{"nDCG@5(ties=optimistic)": [1.0, 0.8, 0.6, 0.5],
                                  "nDCG@5(ties=pessimistic)": [0.6, 0.8, 0.2, 0.5]}),
              "y": table(qids, **{"nDCG@5(ties=optimistic)": [0.1, 0.2, 0.1, 0.2],
                                  "nDCG@5(ties=pessimistic)": [0.1, 0.2, 0.1, 0.2]})}
    comparison = build_comparison(frames, resamples=100)
    s = sensitivity(frames, comparison)
    row = s.ties[s.ties["ranker"] == "x"].iloc[0]
    assert row["variant"] == "nDCG@5"
    assert row["interval"] == pytest.approx(np.mean([1.0, 0.8, 0.6, 0.5])
                                            - np.mean([0.6, 0.8, 0.2, 0.5]))
    assert (row["n_queries"], row["n_affected"]) == (4, 2)
    assert s.ties[s.ties["ranker"] == "y"]["interval"].iloc[0] == 0
    power = s.power["discriminative_power"]
    expected = comparison.tests.groupby("variant", sort=False)["significant"].mean()
    pd.testing.assert_series_equal(power, expected, check_names=False)
    assert not s.winner_changes and "x wins under every variant (2)" in s.notes


# --- ranker versions ----------------------------------------------------------------------

def test_versions_are_labelled_by_the_overrides_that_tell_them_apart() -> None:
    assert split_overrides("3:metric.k=[5,10],ranker.x.sigma=1,~ranker.hgb=null") == [
        "metric.k=[5,10]", "ranker.x.sigma=1", "~ranker.hgb=null"]
    runs = [RunInfo("r1", "noisy", "k1", "0:metric.k=5,ranker.noisy.sigma=0.5"),
            RunInfo("r2", "noisy", "k2", "1:metric.k=5,ranker.noisy.sigma=2"),
            RunInfo("r3", "noisy", "k1", "2:metric.k=10,ranker.noisy.sigma=0.5"),
            RunInfo("r4", "oracle", "k3", "0:metric.k=5,ranker.noisy.sigma=0.5")]
    groups = group_versions(runs)
    assert {k: [r.run_id for r in v] for k, v in groups.items()} == {
        "noisy [sigma=0.5]": ["r1", "r3"], "noisy [sigma=2]": ["r2"], "oracle": ["r4"]}
    # no job tags: the ranker params that differ; then the cache key
    bare = [RunInfo("r1", "n", "k1", params={"ranker.n.sigma": "1"}),
            RunInfo("r2", "n", "k2", params={"ranker.n.sigma": "2"})]
    assert list(group_versions(bare)) == ["n [sigma=1]", "n [sigma=2]"]
    assert list(group_versions([RunInfo("r1", "n", "key-one-xyz"),
                                RunInfo("r2", "n", "key-two-xyz")])) == [
        "n [key-one-xy]", "n [key-two-xy]"]


# --- loading from MLflow ------------------------------------------------------------------

def test_load_sweep_merges_jobs_into_ranker_versions(small_sweep: SmallSweep) -> None:
    sweep = load_sweep(small_sweep.uri, parent_run_id=small_sweep.parent_run_id)
    assert set(sweep.versions) == VERSIONS
    assert sweep.experiment == "compare_test" and sweep.dataset_name == "synthetic"
    assert len(sweep.variants) == 10
    for label, frame in sweep.per_query.items():
        assert frame.shape == (60, 10), label  # both tie rules merged from two jobs
    assert len(sweep.versions["oracle"].run_ids) == 4
    assert len(sweep.versions["noisy_oracle [sigma=0.5]"].run_ids) == 2
    # the values are exactly the job's per-query file
    disk = pd.read_parquet(small_sweep.sweep_dir / "0" / "per_query" / "oracle.parquet")
    pd.testing.assert_series_equal(sweep.per_query["oracle"]["AP@10"],
                                   disk.set_index("qid")["AP@10"])
    prov = sweep.provenance
    assert len(prov["runs"]) == 16 and prov["dataset"]["digest"] == sweep.dataset_digest
    assert prov["environments"][0]["environment"]["packages"]["scipy"] == scipy.__version__
    assert "ranker.noisy_oracle.sigma" in prov["params_varying"]
    assert sweep.resolve("oracle") == "oracle"
    with pytest.raises(UnknownName, match="'noisy_oracle' stands for 2 ranker versions here; pick "
                                          "one: noisy_oracle \\[sigma=0.5\\]"):
        sweep.resolve("noisy_oracle")


def test_load_by_experiment_and_filter(small_sweep: SmallSweep) -> None:
    sweep = load_sweep(small_sweep.uri, experiment="compare_test",
                       filter_string="params.`ranker.noisy_oracle.sigma` = '0.5'")
    assert set(sweep.versions) == {"oracle", "random", "noisy_oracle", "feature_f0"}
    assert sweep.parent_run_id == small_sweep.parent_run_id  # the runs' common parent
    assert all(len(v.run_ids) == 2 for v in sweep.versions.values())
    parent = MlflowClient(small_sweep.uri).get_run(latest_parent_run(small_sweep.uri))
    assert parent.data.tags["harness.role"] in ("sweep", "job")


def test_bad_inputs_raise_clear_errors(small_sweep: SmallSweep) -> None:
    uri, root = small_sweep.uri, small_sweep.root
    with pytest.raises(RunNotFound, match="run '0{32}': not found in the tracking store"):
        load_sweep(uri, parent_run_id="0" * 32)
    with pytest.raises(RunNotFound, match="experiment 'nope' not found .* known: .*"
                                          "compare_test"):
        load_sweep(uri, experiment="nope")
    with pytest.raises(RunNotFound, match="no MLflow store at .*missing.db"):
        load_sweep(f"sqlite:///{root / 'missing.db'}", parent_run_id="x")
    with pytest.raises(CompareError, match="Invalid"):
        load_sweep(uri, experiment="compare_test", filter_string="nonsense = 3")
    qids = [f"q{i}" for i in range(5)]
    mixed = fake_runs(uri, root, "bad_mixed", {
        "a": ("digest-one", table(qids, RR=[1.0] * 5)),
        "b": ("digest-two", table(qids, RR=[0.5] * 5))})
    with pytest.raises(DatasetMismatch, match="come from 2 datasets .*digest-one.*"
                                              "digest-two.*compare one dataset at a time"):
        load_sweep(uri, parent_run_id=mixed)
    single = fake_runs(uri, root, "bad_single", {"a": ("d", table(qids, RR=[1.0] * 5))})
    sweep = load_sweep(uri, parent_run_id=single)
    with pytest.raises(TooFewRankers, match="at least two ranker versions; got 1 \\(a\\)"):
        compare_table(sweep.per_query)
    apart = fake_runs(uri, root, "bad_apart", {"a": ("d", table(qids[:2], RR=[1.0, 0.0])),
                                               "b": ("d", table(qids[2:], RR=[0.5] * 3))})
    with pytest.raises(NoOverlap, match="a vs b under RR: no query has a value for both"):
        compare_table(load_sweep(uri, parent_run_id=apart).per_query)
    ranker_run = sweep.versions["a"].run_ids[0]
    with pytest.raises(CompareError, match=f"run {ranker_run} is a ranker run; pass its "
                                           f"parent run {single}"):
        load_sweep(uri, parent_run_id=ranker_run)
    # the CLI: one line on stderr, exit 2, for each of them
    for args in (["--parent-run-id", "0" * 32], ["--parent-run-id", mixed],
                 ["--parent-run-id", single], ["--parent-run-id", apart],
                 ["--parent-run-id", small_sweep.parent_run_id, "--baseline", "noisy_oracle"]):
        assert _cli_in_process([*args, "--tracking-uri", uri, "--no-log"]) == 2


def _cli_in_process(args: list[str]) -> int:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(args)
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err.getvalue()
    return code


def test_errors_are_harness_errors() -> None:
    for cls in (CompareError, RunNotFound, DatasetMismatch, NoOverlap, TooFewRankers,
                UnknownName):
        assert issubclass(cls, HarnessError) and issubclass(cls, ValueError)


# --- the CLI end to end -------------------------------------------------------------------

def test_cli_end_to_end(small_sweep: SmallSweep, tmp_path: Path, kept_mlflow_env: None) -> None:
    out = tmp_path / "reports"
    args = [sys.executable, "-m", "harness", "compare", small_sweep.parent_run_id,
            "--tracking-uri", small_sweep.uri, "--out-dir", str(out), "--resamples", "500",
            "--correction", "bh", "--pending-dir", str(tmp_path / "pending")]
    proc = subprocess.run(args, cwd=PROJECT_ROOT, env=clean_env() | {"COLUMNS": "120"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the console: the headline variants x rankers with marks and the winner, not the
    # 100-row pairwise table, which goes to a file whose path is printed
    lines = proc.stdout.splitlines()
    assert not any("95% CI" in line for line in lines)
    assert "(ttest p adj < 0.05, bh per variant)" in " ".join(lines)
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["variant"])
    assert lines[header].split() == ["variant", "a", "b", "c", "d", "e", "winner"]
    end = next(i for i, line in enumerate(lines) if line.startswith("queries dropped"))
    # one row per headline variant: per metric family the default conventions, else its
    # first variant (the sweep's nDCG variants all name a tie rule)
    assert [r.split()[0] for r in lines[header + 1:end]] == [
        "nDCG@5(ties=optimistic)", "AP@10", "RR"], lines[:end]
    assert max(len(line) for line in lines[1:end]) <= 120
    for label in VERSIONS:
        assert label in proc.stdout
    assert "queries dropped in 0 of 100 comparisons" in proc.stdout
    pairwise = Path(re.search(r"^the 100 paired comparisons \(CIs, W/T/L, every p-value\):\n"
                              r"  (\S+comparison\.txt)$", proc.stdout, re.M).group(1))
    assert max(len(line) for line in lines if "/" not in line) <= 120  # paths stay whole
    table_header = pairwise.read_text().splitlines()[0]
    assert "p adj (ttest, bh)" in table_header and "95% CI" in table_header
    assert len(pairwise.read_text().splitlines()) == 1 + 100
    # a non-default selection gets its own folder, on disk and in MLflow
    report = Path(re.search(r"^report: (\S+)report\.html$", proc.stdout, re.M).group(1))
    assert report.parent == out / "compare_test" / small_sweep.parent_run_id
    assert report.name.startswith("selection-")
    for name in ("report.html", "report.md", "report.tex", "comparison.csv",
                 "provenance.json"):
        assert (report / name).is_file(), name
    where = f"report/{report.name}"
    assert f"logged to run {small_sweep.parent_run_id} under {where}/" in proc.stdout
    client = MlflowClient(small_sweep.uri)
    logged = {a.path for a in client.list_artifacts(small_sweep.parent_run_id, where)}
    assert {f"{where}/report.html", f"{where}/report.md", f"{where}/report.tex"} <= logged
    # another selection of the same parent: another report; neither overwrites the other
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as other:  # the entry point, in process
        assert cli_main([*args[4:], "--baseline", "random"]) == 0
    report2 = Path(re.search(r"^report: (\S+)report\.html$", other.getvalue(), re.M).group(1))
    assert report2 != report and report2.name.startswith("baseline-")
    for folder in (report, report2):
        local = client.download_artifacts(small_sweep.parent_run_id,
                                          f"report/{folder.name}/report.html",
                                          str(tmp_path / folder.name))
        assert Path(local).read_bytes() == (folder / "report.html").read_bytes()
    # the old flag names the same runs (the same command line, parsed in this process)
    with contextlib.redirect_stdout(io.StringIO()) as said:
        assert cli_main(["--parent-run-id", *args[4:], "--no-log"]) == 0
    assert f"report: {report}/report.html" in said.getvalue()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as refused:
        cli_main([*args[4:], "--experiment", "compare_test"])  # argparse's exit
    assert refused.value.code == 2 and "name the runs once" in err.getvalue()
    # bad input from the real process: one line, exit 2, no traceback
    bad = subprocess.run(args[:4] + ["f" * 32] + args[5:], cwd=PROJECT_ROOT, env=clean_env(),
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert f"error: run '{'f' * 32}': not found" in bad.stderr


# --------------------------------------------------------------------------------------
# many queries: normal approximations of the permutation test and the bootstrap


def test_above_max_queries_the_normal_approximations_agree_with_the_resampling() -> None:
    rng = np.random.default_rng(11)
    n = 3000
    base = rng.beta(2, 3, n)
    frames = {"a": pd.DataFrame({"qid": np.arange(n), "m": np.clip(base + rng.normal(
        0.01, 0.2, n), 0, 1)}), "b": pd.DataFrame({"qid": np.arange(n), "m": base})}
    exact = compare_table(frames, resamples=4000, max_queries=None).iloc[0]
    approx = compare_table(frames, resamples=4000, max_queries=2000).iloc[0]
    assert exact["note"] == "" and "normal approximations" in approx["note"]
    assert approx["mean_diff"] == exact["mean_diff"] and approx["p_ttest"] == exact["p_ttest"]
    # against scipy's own sign-flip test and BCa bootstrap at this size
    assert abs(approx["p_permutation"] - exact["p_permutation"]) < 0.01
    width = exact["ci_high"] - exact["ci_low"]
    assert abs(approx["ci_low"] - exact["ci_low"]) < 0.05 * width
    assert abs(approx["ci_high"] - exact["ci_high"]) < 0.05 * width
    # and the closed forms, from the differences directly
    d = frames["a"]["m"].to_numpy() - frames["b"]["m"].to_numpy()
    assert approx["p_permutation"] == pytest.approx(
        2 * stats.norm.sf(abs(d.sum()) / np.sqrt((d * d).sum())), rel=1e-12)
    low, high = stats.norm.interval(0.95, loc=d.mean(), scale=stats.sem(d))
    assert (approx["ci_low"], approx["ci_high"]) == (pytest.approx(low, abs=1e-14),
                                                     pytest.approx(high, abs=1e-14))


def test_a_million_queries_compare_in_seconds_not_hours() -> None:
    rng = np.random.default_rng(12)
    n = 1_000_000
    base = rng.random(n)
    frames = {"a": pd.DataFrame({"qid": np.arange(n), "m": base + 0.001}),
              "b": pd.DataFrame({"qid": np.arange(n), "m": base})}
    row = compare_table(frames).iloc[0]  # the default max_queries applies
    assert row["n"] == n and row["p_permutation"] < 1e-12 and row["wins"] == n
    assert row["ci_low"] == pytest.approx(0.001, abs=1e-9)


def test_a_variant_of_one_ranker_enters_no_finding() -> None:
    """Variants computed for one ranker only (a sweep job that ran one ranker) must not
    make 'the winner changes' or a winners row."""
    idx = pd.Index([f"q{i}" for i in range(20)], name="qid")
    rng = np.random.default_rng(0)
    good, bad = rng.random(20) * 0.5 + 0.5, rng.random(20) * 0.5
    frames = {
        "strong": pd.DataFrame({"n_docs": 10, "n_judged": 10, "n_relevant": 2,
                                "nDCG@10": good, "nDCG@5": good}, index=idx),
        "weak": pd.DataFrame({"n_docs": 10, "n_judged": 10, "n_relevant": 2,
                              "nDCG@10": bad, "nDCG@5": bad,
                              "nDCG@40": np.ones(20)}, index=idx),  # weak alone here
    }
    sens = sensitivity(frames)
    assert list(sens.winners.index) == ["nDCG@10", "nDCG@5"]
    assert set(sens.winners["winner"]) == {"strong"}
    assert not sens.winner_changes
    assert any("strong wins under every variant" in n for n in sens.notes)
    assert any("fewer than two rankers" in n and "nDCG@40" in n for n in sens.notes)
    assert not any("the winner changes" in n for n in sens.notes)


def test_the_latest_parent_skips_runs_of_one_ranker(tmp_path: Path) -> None:
    """The notebook's default: the newest parent run a comparison can use."""
    import time

    from harness.compare import latest_parent_run

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    qids = ["q1", "q2", "q3"]
    two = fake_runs(uri, tmp_path, "latest", {"a": ("d", table(qids, RR=[1.0, 0.5, 0.0])),
                                              "b": ("d", table(qids, RR=[0.5, 0.5, 1.0]))})
    time.sleep(0.05)
    one = fake_runs(uri, tmp_path, "latest", {"c": ("d", table(qids, RR=[1.0, 1.0, 1.0]))})
    assert latest_parent_run(uri, min_rankers=1) == one
    assert latest_parent_run(uri) == two
    with pytest.raises(TooFewRankers, match="3 or more rankers"):
        latest_parent_run(uri, min_rankers=3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_permutation_pvalues_match_scipy_for_many_rows_and_exact_ties(seed: int) -> None:
    """Many rows in one call equal scipy's call on each row; with differences on a grid of
    0.1 (P@10, say), null means equal to the observed one in exact arithmetic count as
    equal: the reference is scipy on the same data as integers, where every mean is exact."""
    rng = np.random.default_rng(seed)
    grid = rng.integers(-4, 5, size=(6, 90)).astype(np.float64)
    grid[rng.random(grid.shape) < 0.3] = 0
    grid[0] = np.repeat([1, -1, 3, -3, 2, -2], 15)  # mean 0 exactly
    grid[1] = rng.normal(size=90) * 7  # continuous
    got = permutation_pvalues(grid / 10, seed=seed, resamples=999)
    for row, p in zip(grid, got):
        exact = stats.permutation_test((row,), lambda x, axis: np.mean(x, axis=axis),
                                       permutation_type="samples", vectorized=True,
                                       n_resamples=999, rng=np.random.default_rng(seed))
        assert p == pytest.approx(exact.pvalue, rel=1e-12)


class _Terminal(__import__("io").StringIO):
    def isatty(self) -> bool:
        return True


def test_cli_names_each_step_on_a_terminal_and_stays_quiet_in_a_pipe(
        small_sweep: SmallSweep, tmp_path: Path) -> None:
    import contextlib
    import io

    # one variant against one baseline: the steps are the same for any selection
    args = [small_sweep.parent_run_id, "--tracking-uri", small_sweep.uri, "--out-dir",
            str(tmp_path), "--resamples", "200", "--no-log", "--variants", "RR",
            "--baseline", "oracle"]
    for err in (_Terminal(), io.StringIO()):
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert cli_main(args) == 0
        shown = err.getvalue()
        steps = ("compare: load runs...", "compare: compare pairs (200 resamples)...",
                 "compare: write report and figures...")
        if isinstance(err, _Terminal):  # the silent phases now say what runs
            assert all(s in shown for s in steps), shown
        else:
            assert shown == ""
