"""Issue 24 in harness compare: a verdict that does not hold over every labeling of the
unjudged documents is flagged per pair, from the judgment intervals a ranker run logged
(artifact ``judgments/<ranker>.parquet``, tag ``judgments.sha256``).

Crafted data (20 queries): the baseline's value rises from 0.3 to 0.6; the candidate's is
the baseline's plus 0.08 and 0.12 in turn (a mean difference of exactly 0.1, better under a
t-test). The intervals, by construction:

- nDCG@10: the candidate's [value, value + 0.05], the baseline's exact, so the difference
  over every labeling lies in [0.1, 0.15]: better over every labeling;
- AP@10: the candidate's exact, the baseline's [value, value + 0.3], so [-0.2, 0.1]: better
  only if the baseline's unjudged documents are non-relevant.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from harness.compare import build_comparison, load_sweep
from harness.compare.labeling_verdicts import (
    HOLDS,
    interval_means,
    interval_table,
    judged_distribution,
    labeling_bounds,
    labeling_flags,
    labeling_lines,
)
from harness.compare.runs import ArtifactChanged, load_runs
from harness.compare.verdicts import (
    verdict_lines,
    verdict_settings,
    verdict_table,
    verdicts_display,
)

QIDS = [f"q{i:02d}" for i in range(20)]
BASE = np.linspace(0.3, 0.6, 20)
CAND = BASE + np.tile([0.08, 0.12], 10)
FAILS = ("better only if unjudged documents are non-relevant (difference over every "
         "labeling in [-0.2000, +0.1000])")


def _long(rows: dict[str, tuple[np.ndarray, np.ndarray]], judged: list[float]) -> pd.DataFrame:
    """The judgments artifact's long format from variant -> (low, high) per query."""
    return pd.concat([pd.DataFrame({"qid": QIDS, "variant": variant, "low": low, "high": high,
                                    "exact": True, "judged_at_10": judged})
                      for variant, (low, high) in rows.items()], ignore_index=True)


def _crafted() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """name -> (per-query table, judgments table)."""
    cand_judged = [1.0] * 10 + [0.8] * 5 + [0.5] * 5
    return {
        "cand": (pd.DataFrame({"qid": QIDS, "nDCG@10": CAND, "AP@10": CAND}),
                 _long({"nDCG@10": (CAND, CAND + 0.05), "AP@10": (CAND, CAND)}, cand_judged)),
        "base": (pd.DataFrame({"qid": QIDS, "nDCG@10": BASE, "AP@10": BASE}),
                 _long({"nDCG@10": (BASE, BASE), "AP@10": (BASE, BASE + 0.3)}, [0.9] * 20)),
    }


# --- the pure functions -------------------------------------------------------------------


def test_pair_bounds_by_hand() -> None:
    a = pd.DataFrame({"qid": ["q1", "q2", "q3", "q1"], "variant": ["m", "m", "m", "other"],
                      "low": [0.2, 0.5, np.nan, 0.0], "high": [0.6, 0.5, np.nan, 1.0]})
    b = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4"], "variant": "m",
                      "low": [0.1, 0.4, 0.7, 0.0], "high": [0.3, 0.9, 0.8, 1.0]})
    # common bounded queries q1 and q2 (q3 has no value in a, q4 is b's only)
    # worst: ((0.2 - 0.3) + (0.5 - 0.9)) / 2 = -0.25; best: ((0.6 - 0.1) + (0.5 - 0.4)) / 2
    worst, best, n = labeling_bounds(a, b, "m")
    assert (worst, best, n) == (pytest.approx(-0.25), pytest.approx(0.3), 2)
    # the other variant: q1 only in a
    assert labeling_bounds(a, b, "other")[2] == 0


def test_interval_means_and_their_table_by_hand() -> None:
    a = pd.DataFrame({"qid": ["q1", "q2", "q1"], "variant": ["m", "m", "n"],
                      "low": [0.2, 0.4, 0.5], "high": [0.6, np.nan, 0.5],
                      "exact": [True, True, False]})
    means = interval_means({"a": a})
    # m: q2 has no upper bound, so q1 alone: [0.2, 0.6]; n: a point, not exact
    assert means.to_dict("records") == [
        {"version": "a", "variant": "m", "low": 0.2, "high": 0.6, "exact": 1.0, "n_queries": 1},
        {"version": "a", "variant": "n", "low": 0.5, "high": 0.5, "exact": 0.0, "n_queries": 1}]
    table = interval_table(means, ["n", "m", "absent"])
    assert table.to_dict("index") == {"n": {"a": "[0.5000, 0.5000]*"},
                                      "m": {"a": "[0.2000, 0.6000]"}}
    points = interval_means({"a": a.assign(high=a["low"])})
    assert interval_table(points, ["m", "n"]).empty  # every interval a point: no section


def test_each_verdict_is_read_against_its_side_of_the_interval() -> None:
    def frame(low: float, high: float) -> pd.DataFrame:
        return pd.DataFrame({"qid": ["q1", "q2"], "variant": "P@5", "low": low,
                             "high": high})

    zero = frame(0.0, 0.0)
    intervals = {"up": frame(0.1, 0.3), "wide": frame(-0.2, 0.3), "down": frame(-0.4, -0.1),
                 "near": frame(-0.03, 0.04), "base": zero}
    verdicts = pd.DataFrame([
        ("up", "better", 0.0), ("wide", "better", 0.0), ("down", "worse", 0.0),
        ("down", "worse", 0.2), ("near", "not worse (within margin)", 0.05),
        ("near", "equivalent (within margin)", 0.035), ("wide", "inconclusive", 0.0),
        ("unbounded", "better", 0.0)], columns=["candidate", "verdict", "margin"]
    ).assign(baseline="base", variant="P@5")
    out = labeling_flags(verdicts, intervals)
    assert list(out["labelings"]) == [
        HOLDS, "better only if unjudged documents are non-relevant (difference over every "
               "labeling in [-0.2000, +0.3000])", HOLDS,
        "worse only if unjudged documents are non-relevant (difference over every labeling "
        "in [-0.4000, -0.1000])",  # worse than -0.2 needs best < -0.2
        HOLDS,  # not worse within 0.05: worst -0.03 > -0.05
        "equivalent (within margin) only if unjudged documents are non-relevant (difference "
        "over every labeling in [-0.0300, +0.0400])",  # +0.04 is outside ±0.035
        "", ""]
    assert np.isnan(out["worst"].iloc[-1])
    # the verdict measured with unjudged documents relevant says so
    relevant = verdicts.head(2).assign(variant="P@5(unjudged=relevant)")
    bounds = {k: v.assign(variant="P@5(unjudged=relevant)") for k, v in intervals.items()}
    assert labeling_flags(relevant, bounds)["labelings"].iloc[1].startswith(
        "better only if unjudged documents are relevant (")
    # no pair bounded: no column
    assert labeling_flags(verdicts, {"base": zero}) is None


def test_judged_share_distribution_by_hand() -> None:
    tables = {name: judged for name, (_, judged) in _crafted().items()}
    # cand: ten 1.0, five 0.8, five 0.5 (each query's share once, not per variant):
    # median (0.8 + 1.0) / 2; 10th percentile at rank 0.1 * 19 = 1.9 among the five 0.5s
    assert judged_distribution(tables) == {"cand": pytest.approx((0.9, 0.5, 0.5)),
                                           "base": pytest.approx((0.9, 0.9, 0.0))}


def test_verdict_table_flags_a_verdict_resting_on_the_labeling() -> None:
    crafted = _crafted()
    per_query = {n: pq.set_index("qid") for n, (pq, _) in crafted.items()}
    intervals = {n: judged for n, (_, judged) in crafted.items()}
    comparison = build_comparison(per_query, baseline=["base"], resamples=200)
    verdicts = verdict_table(per_query, comparison, intervals=intervals)
    rows = verdicts.set_index("variant")
    assert list(rows["verdict"]) == ["better", "better"]
    assert rows.loc["nDCG@10", "labelings"] == HOLDS
    assert rows.loc["AP@10", "labelings"] == FAILS
    assert rows.loc["nDCG@10", ["worst", "best"]].tolist() == pytest.approx([0.1, 0.15])
    lines = verdict_lines(verdicts, verdict_settings(comparison))
    assert ("Verdict over every labeling of the unjudged documents: 1 of 2 decisive "
            "verdict(s) do not hold; the full bound per query: harness judgments:") in lines
    assert f"  cand vs base, AP@10: {FAILS}" in lines
    shown = verdicts_display(verdicts).set_index("variant")
    assert shown.loc["AP@10", "over labelings"] == "[-0.2000, +0.1000]"
    # without intervals: the table as before
    plain = verdict_table(per_query, comparison)
    assert not {"labelings", "worst", "best"} & set(plain.columns)
    assert labeling_lines(plain) == []


# --- loading from MLflow ------------------------------------------------------------------


def _ranker(client: MlflowClient, root: Path, name: str, per_query: pd.DataFrame,
            judgments: pd.DataFrame | None, *, parent: str | None = None,
            ranker: str | None = None) -> str:
    """A ranker run tagged as a job's log stage tags one, with its per-query artifact and,
    when given, its judgments artifact and that file's sha256."""
    ranker = ranker or name
    exp = client.get_experiment_by_name("intervals")
    exp_id = exp.experiment_id if exp else client.create_experiment(
        "intervals", artifact_location=(root / "artifacts").as_uri())
    folder = root / "files" / name
    (folder / "judgments").mkdir(parents=True)
    table = folder / f"{ranker}.parquet"
    per_query.to_parquet(table, index=False)
    tags = {"harness.role": "ranker", "ranker.name": ranker, "ranker.cache_key": f"key-{name}",
            "dataset.digest": "d" * 64, "dataset.name": "crafted",
            "per_query.sha256": hashlib.sha256(table.read_bytes()).hexdigest()}
    if parent:
        tags["mlflow.parentRunId"] = parent
    judged = folder / "judgments" / f"{ranker}.parquet"
    if judgments is not None:
        judgments.to_parquet(judged, index=False)
        tags["judgments.sha256"] = hashlib.sha256(judged.read_bytes()).hexdigest()
    run = client.create_run(exp_id, run_name=ranker, tags=tags).info.run_id
    client.log_param(run, "metric.missing", "exclude")
    client.log_param(run, "metric.nan_scores", "error")
    client.log_artifact(run, str(table))
    if judgments is not None:
        client.log_artifact(run, str(judged), "judgments")
    client.set_terminated(run)
    return run


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("intervals")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(uri)
    crafted = _crafted()
    ids = {name: _ranker(client, root, name, pq, judged)
           for name, (pq, judged) in crafted.items()}
    exp_id = client.get_experiment_by_name("intervals").experiment_id
    parent = client.create_run(exp_id, run_name="sweep",
                               tags={"harness.role": "sweep"}).info.run_id
    for name, (pq, judged) in crafted.items():
        ids[f"child {name}"] = _ranker(client, root, f"child-{name}", pq, judged,
                                       parent=parent, ranker=name)
    client.set_terminated(parent)
    ids["parent"] = parent
    pq, judged = crafted["cand"]
    ids["altered"] = _ranker(client, root, "altered", pq, judged, ranker="cand")
    # after logging, one bound of the stored artifact is changed
    stored = Path(client.get_run(ids["altered"]).info.artifact_uri.removeprefix("file://"))
    judged.assign(high=judged["high"] + 0.01).to_parquet(stored / "judgments" / "cand.parquet",
                                                         index=False)
    for name, (pq, _) in crafted.items():
        ids[f"old {name}"] = _ranker(client, root, f"old-{name}", pq, None, ranker=name)
    return uri, root, ids


def test_the_intervals_are_loaded_by_run_id_and_by_parent(store) -> None:
    uri, _, ids = store
    expected = {name: judged for name, (_, judged) in _crafted().items()}
    for sweep in (load_runs(uri, [ids["cand"], ids["base"]]), load_sweep(uri, ids["parent"])):
        assert set(sweep.intervals) == {"cand", "base"}
        for name, frame in sweep.intervals.items():
            pd.testing.assert_frame_equal(frame, expected[name])
        verdicts = verdict_table(sweep.per_query, build_comparison(
            sweep.per_query, baseline=["base"], resamples=200), intervals=sweep.intervals)
        assert dict(zip(verdicts["variant"], verdicts["labelings"])) == {
            "nDCG@10": HOLDS, "AP@10": FAILS}
        assert set(sweep.provenance["judgments_sha256"]) == set(
            sweep.provenance["per_query_sha256"])


def test_an_altered_judgments_artifact_is_refused(store) -> None:
    uri, _, ids = store
    with pytest.raises(ArtifactChanged, match=r"run \w+ \(cand\): artifact "
                                              r"judgments/cand\.parquet was altered \(sha256 "):
        load_runs(uri, [ids["altered"], ids["base"]])
    # the unaltered run of the same tables loads
    assert load_runs(uri, [ids["cand"], ids["base"]]).intervals


def test_a_comparison_reads_the_judgments_it_recorded_and_only_those(store) -> None:
    from harness.compare.runs import load_versions

    uri, _, ids = store
    first = load_runs(uri, [ids["cand"], ids["base"]])
    p = first.provenance
    recorded = dict(versions=p["versions"], allow_subset=False, digests=p["per_query_sha256"])
    # a comparison that recorded no judgments digest (logged before them) reads none
    assert load_versions(uri, **recorded).intervals == {}
    again = load_versions(uri, **recorded, judgment_digests=p["judgments_sha256"])
    assert set(again.intervals) == {"cand", "base"}
    other = dict(p["judgments_sha256"]) | {ids["cand"]: "f" * 64}
    with pytest.raises(ArtifactChanged, match=r"judgments/cand\.parquet was altered .*the "
                                              r"comparison recorded ffffffffffff"):
        load_versions(uri, **recorded, judgment_digests=other)


def test_runs_without_judgments_give_no_column(store) -> None:
    uri, _, ids = store
    for pair in ([ids["old cand"], ids["old base"]], [ids["cand"], ids["old base"]]):
        sweep = load_runs(uri, pair)
        verdicts = verdict_table(sweep.per_query, build_comparison(
            sweep.per_query, baseline=["base"], resamples=200), intervals=sweep.intervals)
        assert "labelings" not in verdicts.columns and "worst" not in verdicts.columns
    assert load_runs(uri, [ids["old cand"], ids["old base"]]).intervals == {}
    assert "judgments_sha256" not in load_runs(
        uri, [ids["old cand"], ids["old base"]]).provenance


def test_compare_prints_logs_reports_and_reproduces_the_flag(store) -> None:
    from harness.commands.compare import main as compare_main
    from harness.commands.reproduce import main as reproduce_main

    uri, root, ids = store
    out_dir = root / "reports"
    code, out, err = _quiet(compare_main, [
        ids["cand"], ids["base"], "--baseline", "base", "--tracking-uri", uri,
        "--resamples", "200", "--out-dir", str(out_dir), "--pending-dir", str(root / "p")])
    assert code == 0, err
    assert f"  cand vs base, AP@10: {FAILS}" in out
    run_id = re.search(r"^comparison logged as run ([0-9a-f]{32}) ", out, re.M).group(1)
    run = MlflowClient(uri).get_run(run_id)
    assert run.data.tags["harness.verdict_labelings"] == "1"
    assert run.data.tags["harness.verdict_labelings_bounded"] == "2"
    assert f"- cand vs base, `AP@10`: {FAILS}" in run.data.tags["mlflow.note.content"]
    assert run.data.tags["mlflow.note.content"].splitlines()[0].endswith(
        "Over every labeling of the unjudged documents **1 of 2** decisive verdict(s) do "
        "not hold (below).")
    folder = Path(re.search(r"^report: (\S+)", out, re.M).group(1)).parent
    logged = pd.read_csv(folder / "verdicts.csv").set_index("variant")
    assert logged.loc["AP@10", "labelings"] == FAILS
    assert logged.loc["AP@10", ["worst", "best"]].tolist() == pytest.approx([-0.2, 0.1])
    md = (folder / "report.md").read_text()
    assert "labelings: whether the verdict holds over every labeling" in md
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert ("- Verdict over every labeling of the unjudged documents: 1 of 2 decisive "
            "verdict(s) do not hold; the full bound per query: harness judgments\n"
            ) in findings
    assert re.search(r"\| a \| base \|.*\| 0\.900 \| 0\.900 \| 0\.000 \|", md)
    assert re.search(r"\| b \| cand \|.*\| 0\.900 \| 0\.500 \| 0\.500 \|", md)
    assert "judged@10 median" in (folder / "report.html").read_text()
    # each version's interval of the mean per variant: mean(BASE) 0.45, mean(CAND) 0.55
    intervals = pd.read_csv(folder / "judgment_intervals.csv").set_index(["version", "variant"])
    assert intervals.loc[("cand", "nDCG@10"), ["low", "high"]].tolist() == pytest.approx(
        [0.55, 0.60])
    assert intervals.loc[("base", "AP@10"), ["low", "high"]].tolist() == pytest.approx(
        [0.45, 0.75])
    assert "| nDCG@10 | [0.4500, 0.4500] | [0.5500, 0.6000] |" in md  # base, cand
    assert "Judgment intervals: the mean over every labeling" in md
    code, out, err = _quiet(reproduce_main, [run_id, "--tracking-uri", uri])
    assert code == 0, err + out
    assert re.match(rf"comparison run {run_id}: identical", out)


def _quiet(main, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()
