"""``harness.compare(qrels, runs, metrics)``: two run files (or DataFrames, parquet files,
per-query tables) compared in one call (issue 36).

Parity: on TREC CAsT 2021 (BM25 against ANCE), PyTerrier's ``pt.Experiment([bm25, ance],
topics, qrels, eval_metrics=[ndcg, map, recip_rank, P_5], baseline=0)`` reports the means,
wins/losses and paired t-test p-values below (issue 36's figures, from PyTerrier with
pytrec_eval); the harness must give the same.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import harness
from harness.errors import CompareError, InputError
from tests.shared import shared_data_dir

CAST = shared_data_dir() / "trec_cast_2021"
QRELS = CAST / "trec-cast-qrels-docs.2021.qrel"
BM25, ANCE = CAST / "org_manual_bm25.run", CAST / "org_manual_ance.run"
MEASURES = ["trec_eval:ndcg", "trec_eval:map", "trec_eval:recip_rank", "trec_eval:P.5"]
#: measure -> (BM25 mean, ANCE mean, ANCE wins, ANCE losses, t-test p), pt.Experiment's
PT_EXPERIMENT = {
    "trec_eval:ndcg": (0.3901, 0.4716, 107, 50, 2.49e-6),
    "trec_eval:map": (0.2161, 0.2667, 101, 56, 0.00102),
    "trec_eval:recip_rank": (0.7085, 0.8058, 50, 29, 0.00275),
    "trec_eval:P.5": (0.5165, 0.6114, 70, 43, 0.000494),
}


@pytest.fixture(scope="module")
def cast() -> harness.Comparison:
    return harness.compare(QRELS, [BM25, ANCE], MEASURES, baseline="org_manual_bm25",
                           resamples=2000)


def test_cast_equals_pt_experiment(cast: harness.Comparison) -> None:
    assert cast.systems == ["org_manual_bm25", "org_manual_ance"]
    for name, (bm25, ance, wins, losses, p) in PT_EXPERIMENT.items():
        m = harness.parse_metric(name).display_name
        row = cast.table.loc["org_manual_ance"]
        assert round(cast.table.loc["org_manual_bm25", (m, "mean")], 4) == bm25
        assert round(row[(m, "mean")], 4) == ance
        assert (row[(m, "wins")], row[(m, "losses")]) == (wins, losses)
        assert row[(m, "p")] == pytest.approx(p, rel=5e-3)
        assert row[(m, "significant")]
        assert row[(m, "delta")] == pytest.approx(row[(m, "mean")] - cast.table.loc[
            "org_manual_bm25", (m, "mean")])


def test_every_input_form_gives_the_same_table(tmp_path: Path,
                                               cast: harness.Comparison) -> None:
    from harness.data.eval_inputs import read_eval_qrels, read_eval_run

    frames = {"org_manual_bm25": read_eval_run(BM25)[0], "org_manual_ance": read_eval_run(ANCE)[0]}
    gz = tmp_path / "org_manual_ance.run.gz"
    with open(ANCE, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    parquet = tmp_path / "org_manual_bm25.parquet"
    frames["org_manual_bm25"].to_parquet(parquet)
    per_query = cast.per_query["org_manual_ance"].reset_index()
    qrels = read_eval_qrels(QRELS)[["qid", "docid", "label"]]
    for runs in (frames, [parquet, gz],
                 {"org_manual_bm25": BM25, "org_manual_ance": per_query}):
        other = harness.compare(qrels, runs, MEASURES, baseline="org_manual_bm25",
                                resamples=2000)
        pd.testing.assert_frame_equal(other.table, cast.table)


def test_renderers_mark_the_best_and_the_significant(cast: harness.Comparison) -> None:
    md = cast.to_markdown()
    assert md.splitlines()[0].startswith("| system | nDCG(gain=linear,ties=docid) |")
    assert "| (b) org_manual_ance | 0.4716*<sup>a</sup> |" in md
    assert "0.4716*ᵃ" in cast.to_string()
    tex = cast.to_latex()
    assert "0.4716*$^{\\mathrm{a}}$" in tex and "\\begin{longtable}" in tex
    page = cast._repr_html_()
    assert "<b>0.4716</b><sup>a</sup>" in page and page.startswith("<table>")
    assert "bold: the best of each column" in page
    data = json.loads(json.dumps(cast.to_dict()))
    ance = data["systems"]["org_manual_ance"]["nDCG(gain=linear,ties=docid)"]
    assert ance["wins"] == 107 and ance["significant"] is True
    assert data["systems"]["org_manual_bm25"]["AP(ties=docid)"]["p"] is None


def test_all_pairs_without_a_baseline() -> None:
    qrels = pd.DataFrame({"qid": [f"q{i:02d}" for i in range(30)], "docid": "d1", "label": 1})
    runs = {}
    for name, rank in (("first", 0), ("second", 1), ("last", 2)):
        rows = [(f"q{i:02d}", d, 3.0 - ((j - rank) % 3)) for i in range(30)
                for j, d in enumerate(["d1", "d2", "d3"])]
        runs[name] = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    c = harness.compare(qrels, runs, ["RR"], resamples=500)
    assert len(c.tests) == 3  # every pair
    assert c.beats("first", "RR") == ["second", "last"]
    assert round(c.table.loc["first", ("RR", "mean")], 4) == 1.0
    assert c.table.loc["last", ("RR", "delta")] == pytest.approx(1 / 2 - 1)


@pytest.mark.parametrize("call, error, words", [
    (lambda: harness.compare(QRELS, [BM25], MEASURES), CompareError, "at least two runs"),
    (lambda: harness.compare(QRELS, [BM25, BM25], MEASURES), InputError, "two runs are named"),
    (lambda: harness.compare(QRELS, [BM25, ANCE], MEASURES, baseline="bm25"), InputError,
     "baseline 'bm25' is not among the runs: org_manual_bm25, org_manual_ance"),
    (lambda: harness.compare(QRELS, [BM25, ANCE], test="ztest"), CompareError,
     "test must be one of ttest, wilcoxon, permutation"),
    (lambda: harness.compare(QRELS, [BM25, ANCE], correction="none"), CompareError,
     "correction must be one of holm, bh, bonferroni; got .none."),
    (lambda: harness.compare(QRELS, [BM25, Path("nope.run")]), InputError,
     "file not found: nope.run"),
    (lambda: harness.compare(None, [BM25, ANCE]), InputError,
     "no qrels given and no label column"),
    (lambda: harness.compare(QRELS, {"a": BM25, "b": pd.DataFrame({"qid": ["1"], "x": [1]})},
                             ["ndcg@10"]), InputError,
     "per-query table without column"),
])
def test_bad_input_is_named(call, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        call()


def test_harness_compare_is_the_function_and_the_package() -> None:
    import harness.compare as package
    from harness.compare import compare

    assert callable(harness.compare) and callable(package)
    assert package.compare is compare


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from harness.commands.base import run_command
    from harness.commands.compare import main

    code = run_command(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_compares_two_files(capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--qrels", str(QRELS), str(BM25), f"ance={ANCE}",
            *[a for m in MEASURES for a in ("-m", m)], "--baseline", "org_manual_bm25",
            "--resamples", "500"]
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = _cli(capsys, *argv)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split()[:2] == ["(a)", "org_manual_bm25"]
    assert lines[2].split() == ["(b)", "ance", "0.4716*ᵃ", "0.2667*ᵃ", "0.8058*ᵃ", "0.6114*ᵃ"]
    for columns in ("120", "80"):  # the table's columns wrap into blocks that fit
        monkeypatch.setenv("COLUMNS", columns)
        code, out, err = _cli(capsys, *argv)
        assert max(len(line) for line in out.splitlines()) <= int(columns)
        assert "0.6114*ᵃ" in out and "0.4716*ᵃ" in out


def test_cli_formats(capsys: pytest.CaptureFixture[str]) -> None:
    for fmt, start in (("markdown", "| system |"), ("latex", "{\\footnotesize"),
                       ("html", "<table>"), ("json", "{")):
        code, out, err = _cli(capsys, "--qrels", str(QRELS), str(BM25), str(ANCE),
                              "--format", fmt, "--resamples", "200")
        assert code == 0 and out.startswith(start), (fmt, err, out[:80])


@pytest.mark.parametrize("argv, words", [
    (["--qrels", str(QRELS), str(BM25)], "at least two runs"),
    (["--qrels", str(QRELS), str(BM25), str(BM25)], "two runs are named 'org_manual_bm25'"),
    (["--qrels", str(QRELS), str(BM25), str(ANCE), "-m", "nope@3"], "unknown metric 'nope@3'"),
    ([str(BM25), "-m", "P@5"], "give --qrels QRELS"),
])
def test_cli_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                          argv: list[str], words: str) -> None:
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


#: ranx 0.3.21 ``compare(qrels, [bm25, ance], metrics=["ndcg", "map", "mrr", "precision@5"],
#: stat_test="fisher", n_permutations=10000, random_seed=42, make_comparable=True)`` on CAsT
RANX_FISHER = {"trec_eval:ndcg": 0.0, "trec_eval:map": 0.0006, "trec_eval:recip_rank": 0.0018,
               "trec_eval:P.5": 0.0003}


def test_permutation_p_is_ranx_fisher_within_monte_carlo_error() -> None:
    c = harness.compare(QRELS, [BM25, ANCE], MEASURES, baseline="org_manual_bm25",
                        test="permutation", resamples=10_000, seed=42)
    for name, theirs in RANX_FISHER.items():
        m = harness.parse_metric(name).display_name
        ours = c.table.loc["org_manual_ance", (m, "p")]
        p = max(ours, theirs, 1e-4)
        error = (p * (1 - p) / 10_000) ** 0.5  # each side's Monte-Carlo standard error
        assert abs(ours - theirs) <= 4 * 2 ** 0.5 * error + 1e-4, (name, ours, theirs)


def test_tukey_of_two_systems_is_the_paired_permutation_test() -> None:
    """With two systems, shuffling a query's two values flips the sign of its difference
    and the range of the two means is |mean difference|: the randomised Tukey HSD is then
    the paired randomization test (scipy's permutation_test), within Monte-Carlo error."""
    measures = ["trec_eval:map", "trec_eval:recip_rank"]
    c = harness.compare(QRELS, [BM25, ANCE], measures, test="tukey", resamples=20_000, seed=3)
    perm = harness.compare(QRELS, [BM25, ANCE], measures, test="permutation",
                           resamples=20_000, seed=3)
    assert "p_permutation" not in c.tests and "p_tukey" not in perm.tests  # only the one asked
    for p_t, p_perm in zip(c.tests["p_tukey"], perm.tests["p_permutation"]):
        error = (max(p_t, 1e-3) / 20_000) ** 0.5
        assert abs(p_t - p_perm) <= 8 * error, (p_t, p_perm)
    assert "randomised Tukey HSD p < 0.05" in c.to_string()


def test_tukey_over_three_systems() -> None:
    """bm25, the same run again, and its reverse: the identical pair is never different
    (p = 1: every resample's range reaches 0), the reversed run is worse than both."""
    from harness.data.eval_inputs import read_eval_run

    bm25 = read_eval_run(BM25)[0]
    runs = {"bm25": bm25, "again": bm25.copy(), "reversed": bm25.assign(score=-bm25["score"])}
    c = harness.compare(QRELS, runs, ["trec_eval:P.5"], test="tukey", resamples=2000)
    p = {(a, b): v for a, b, v in zip(c.tests["ranker_a"], c.tests["ranker_b"],
                                      c.tests["p_tukey"])}
    assert p["bm25", "again"] == 1.0
    assert p["bm25", "reversed"] == p["again", "reversed"] == pytest.approx(1 / 2001)
    assert c.beats("bm25", "P@5(ties=docid)") == ["reversed"]


def test_wide_headline_tables_wrap_into_column_blocks() -> None:
    from harness.reporting.console import column_blocks

    rows = [["variant", *[f"ranker-{i:02d} [sigma=0.{i}]" for i in range(12)]],
            ["nDCG@10(gain=linear)", *[f"0.{i:04d}ᵃᵇ" for i in range(12)]]]
    lines = column_blocks(rows, 120)
    assert max(len(line) for line in lines) <= 120
    assert sum(line.strip().startswith("nDCG@10(gain=linear)") for line in lines) > 1
    cells = " ".join(lines)
    assert all(c in cells for r in rows for c in r)


def test_log_records_a_run_that_reproduce_recomputes(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    """--log: the files first, then an MLflow run; harness reproduce recomputes it from the
    files (identical), and names a run file that changed since."""
    import re

    from harness.commands.base import run_command
    from harness.commands.reproduce import main as reproduce

    bm25, ance = tmp_path / "bm25.run", tmp_path / "ance.run"
    shutil.copy(BM25, bm25)
    shutil.copy(ANCE, ance)
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, out, err = _cli(capsys, "--qrels", str(QRELS), str(bm25), str(ance), "-m", "P@5",
                          "--baseline", "bm25", "--log", "--tracking-uri", store,
                          "--out-dir", str(tmp_path / "reports"),
                          "--pending-dir", str(tmp_path / "pending"), "--resamples", "500",
                          "--artifact-root", str(tmp_path / "art"))
    assert code == 0, err
    run_id = re.search(r"logged as run ([0-9a-f]{32})", err).group(1)
    folder = Path(re.search(r"comparison written to (\S+)", err).group(1))
    assert {p.name for p in folder.iterdir()} == {"comparison.csv", "comparison.json",
                                                  "comparison.md", "table.csv"}
    import mlflow

    run = mlflow.MlflowClient(store).get_run(run_id)
    assert run.data.tags["harness.role"] == "comparison"
    assert run.data.tags["harness.compared"] == "files"
    assert str(tmp_path / "art") in run.info.artifact_uri  # not the project's runs/artifacts
    assert run.data.metrics["mean.ance.precision_at_5"] == pytest.approx(0.6113924050632911)
    assert run_command(reproduce, [run_id, "--tracking-uri", store]) == 0
    assert "identical" in capsys.readouterr().out
    with open(ance, "a") as f:
        f.write("999_1 Q0 KILT_1 1 1.0 ance\n")
    code = run_command(reproduce, [run_id, "--tracking-uri", store])
    out, err = capsys.readouterr()
    assert code == 2 and "run 'ance'" in err and "changed since" in err, (out, err)


def test_a_reader_that_left_is_no_traceback() -> None:
    """``harness compare ... | head -1``: the pipe's reader gone, the command stops quietly
    (exit 0, no BrokenPipeError traceback)."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # nobody will read: every write fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "harness", "compare", "--qrels",
                               str(QRELS), str(BM25), str(ANCE), "--resamples", "100"],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr[-2000:]


def test_a_repl_shows_the_table(cast: harness.Comparison) -> None:
    assert repr(cast) == str(cast) == cast.to_string()
    assert repr(cast).splitlines()[2].split()[:3] == ["(b)", "org_manual_ance", "0.4716*ᵃ"]


def test_bootstrap_test_p_equals_scipys_bootstrap_of_the_centred_differences() -> None:
    """The paired bootstrap (shift method): under H0 the differences are centred on 0; the
    p-value is the share of resampled means at least |mean| from 0. scipy's own bootstrap
    distribution of the centred mean gives the same p within Monte-Carlo error."""
    import numpy as np
    from scipy import stats

    from harness.compare.resampling import bootstrap_pvalues

    c = harness.compare(QRELS, [BM25, ANCE], ["trec_eval:map", "trec_eval:recip_rank"],
                        baseline="org_manual_bm25", test="bootstrap", resamples=20_000)
    for m in c.measures:
        both = pd.concat([c.per_query["org_manual_ance"][m],
                          c.per_query["org_manual_bm25"][m]], axis=1).dropna().to_numpy()
        d = both[:, 0] - both[:, 1]
        dist = stats.bootstrap(((d - d.mean()),), np.mean, n_resamples=20_000,
                               rng=np.random.default_rng(7)).bootstrap_distribution
        theirs = (np.sum(np.abs(dist) >= abs(d.mean())) + 1) / (20_000 + 1)
        ours = c.table.loc["org_manual_ance", (m, "p")]
        assert abs(ours - theirs) <= 6 * (max(ours, theirs) / 20_000) ** 0.5, (m, ours, theirs)
        assert c.table.loc["org_manual_ance", (m, "significant")]
    # a constant difference is never reached by its centred resamples; a symmetric one always
    p = bootstrap_pvalues(np.array([[0.1] * 30, [1.0, -1.0] * 15]), resamples=999)
    assert p.tolist() == [1 / 1000, 1.0]
