"""The verdict across metric definitions (issue 23 ★): the variants under which a candidate's
verdict against its baseline changes, and the options that account for the largest change.

Crafted data: per query, one document of grade 3, six of grade 1 and six of grade 0. The
candidate ranks the grade-3 document first and pushes the grade-1 ones down; the baseline
ranks every grade-1 document first. Exponential gain (2^3 - 1 = 7 against 1) rewards the
candidate, linear gain (3 against 1) much less: the candidate is better under nDCG@10 and
inconclusive under nDCG@10(gain=linear), and gain is the option that accounts for it. The
expected differences come from scikit-learn's ``ndcg_score`` (linear gain on the labels;
exponential gain on 2^label - 1), not from the code under test.
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
from sklearn.metrics import ndcg_score

from harness import evaluate
from harness.compare import build_comparison
from harness.compare.verdict_shifts import (
    CHANGES_FILE,
    change_lines,
    split_change,
    verdict_changes,
)
from harness.compare.verdicts import BETTER, INCONCLUSIVE, WORSE, verdict_settings, verdict_table
from harness.explain import explain_difference

GAIN_VARIANTS = ["ndcg@10", "ndcg@10(gain=linear)"]


def crafted(seed: int = 3, n_queries: int = 30) -> tuple[pd.DataFrame, pd.DataFrame,
                                                         pd.DataFrame]:
    """The candidate's and the baseline's runs (qid, docid, score) and the qrels."""
    rng = np.random.default_rng(seed)
    runs: dict[str, list[tuple[str, str, float]]] = {"cand": [], "base": []}
    qrels = []
    ones, zeros = [f"m{i}" for i in range(6)], [f"n{i}" for i in range(6)]
    for q in range(n_queries):
        qid = f"q{q:02d}"
        labels = {"h": 3, **dict.fromkeys(ones, 1), **dict.fromkeys(zeros, 0)}
        qrels += [(qid, d, g) for d, g in labels.items()]
        cand = ["h", *rng.permutation(zeros)[:int(rng.integers(3, 6))]]
        cand += list(rng.permutation([d for d in labels if d not in cand]))
        base = [*rng.permutation(ones)[:int(rng.integers(3, 6))], "h"]
        base += list(rng.permutation([d for d in labels if d not in base]))
        for name, order in (("cand", cand), ("base", base)):
            runs[name] += [(qid, d, float(100 - order.index(d))) for d in labels]
    frame = lambda rows: pd.DataFrame(rows, columns=["qid", "docid", "score"])
    return (frame(runs["cand"]), frame(runs["base"]),
            pd.DataFrame(qrels, columns=["qid", "docid", "label"]))


def sklearn_ndcg(run: pd.DataFrame, qrels: pd.DataFrame, k: int, gain: str) -> pd.Series:
    """nDCG@k per query by scikit-learn (every judged document is in the run)."""
    merged = run.merge(qrels, on=["qid", "docid"])
    out = {}
    for qid, g in merged.groupby("qid"):
        labels = g["label"].to_numpy(dtype=float)
        gains = 2 ** labels - 1 if gain == "exp2" else labels
        out[qid] = ndcg_score([gains], [g["score"].to_numpy()], k=k)
    return pd.Series(out)


def diff(runs: dict[str, pd.DataFrame], qrels: pd.DataFrame, k: int, gain: str) -> float:
    return float((sklearn_ndcg(runs["cand"], qrels, k, gain)
                  - sklearn_ndcg(runs["base"], qrels, k, gain)).mean())


@pytest.fixture(scope="module")
def data() -> tuple[dict[str, pd.DataFrame], pd.DataFrame, dict[str, pd.DataFrame]]:
    """The runs, the qrels, and the per-query tables (as a job's artifacts hold them) of
    nDCG@10 and nDCG@5 under exponential and linear gain."""
    cand, base, qrels = crafted()
    runs = {"cand": cand, "base": base}
    metrics = [*GAIN_VARIANTS, "ndcg@5", "ndcg@5(gain=linear)"]
    per_query = {name: evaluate(run, qrels, metrics) for name, run in runs.items()}
    return runs, qrels, per_query


def only(per_query: dict[str, pd.DataFrame], columns: list[str]) -> dict[str, pd.DataFrame]:
    return {name: frame[columns] for name, frame in per_query.items()}


def verdicts_of(per_query: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return verdict_table(per_query, build_comparison(per_query, baseline=["base"],
                                                  resamples=200))


def test_the_verdict_flips_with_the_gain_and_gain_accounts_for_all_of_it(data) -> None:
    runs, qrels, per_query = data
    pq = only(per_query, ["nDCG@10", "nDCG@10(gain=linear)"])
    verdicts = verdicts_of(pq)
    assert dict(zip(verdicts["variant"], verdicts["verdict"])) == {
        "nDCG@10": BETTER, "nDCG@10(gain=linear)": INCONCLUSIVE}
    changes = verdict_changes(verdicts, pq)
    assert len(changes) == 1
    row = changes.iloc[0]
    assert (row["candidate"], row["baseline"], row["metric"]) == ("cand", "base", "nDCG")
    assert row["verdicts"] == "better under nDCG@10; inconclusive under nDCG@10(gain=linear)"
    assert (row["variant_a"], row["verdict_a"], row["variant_b"], row["verdict_b"]) == (
        "nDCG@10", BETTER, "nDCG@10(gain=linear)", INCONCLUSIVE)
    d_exp2, d_linear = diff(runs, qrels, 10, "exp2"), diff(runs, qrels, 10, "linear")
    assert d_exp2 > 0.2 and abs(d_linear) < 0.02  # the construction, by scikit-learn
    assert row["diff_a"] == pytest.approx(d_exp2, abs=1e-9)
    assert row["change"] == pytest.approx(d_linear - d_exp2, abs=1e-9)
    cand_change = (sklearn_ndcg(runs["cand"], qrels, 10, "linear")
                   - sklearn_ndcg(runs["cand"], qrels, 10, "exp2")).mean()
    assert row["candidate_change"] == pytest.approx(cand_change, abs=1e-9)
    assert row["candidate_change"] - row["baseline_change"] == pytest.approx(row["change"])
    assert row["largest"] and row["split_exact"]
    split = split_change(pq, "cand", "base", "nDCG@10", "nDCG@10(gain=linear)")
    assert split.table[["option", "a", "b"]].values.tolist() == [["gain", "exp2", "linear"]]
    assert split.table["contribution"].iloc[0] == pytest.approx(d_linear - d_exp2, abs=1e-9)
    assert split.table["share"].iloc[0] == pytest.approx(1.0)
    assert row["split"] == f"gain exp2 -> linear {d_linear - d_exp2:+.4f} (100%)"
    lines = change_lines(changes)
    assert lines[0].startswith("Verdict across metric definitions: it changes for 1 pair(s)")
    assert lines[1] == (f"  cand vs base, nDCG: better under nDCG@10 (diff {d_exp2:+.4f}), "
                        f"inconclusive under nDCG@10(gain=linear) (diff {d_linear:+.4f})")
    assert lines[2].endswith(f"by option: gain exp2 -> linear {d_linear - d_exp2:+.4f} (100%)")


def test_two_options_split_by_shapley_as_explain_difference_splits_each_side(data) -> None:
    runs, qrels, per_query = data
    split = split_change(per_query, "cand", "base", "nDCG@10", "nDCG@5(gain=linear)")
    assert split.exact and list(split.table["option"]) == ["k", "gain"]
    # by hand: each option's marginal effect averaged over the two orders of switching
    v = {(k, g): diff(runs, qrels, k, g) for k in (10, 5) for g in ("exp2", "linear")}
    phi_k = ((v[5, "exp2"] - v[10, "exp2"]) + (v[5, "linear"] - v[10, "linear"])) / 2
    phi_gain = ((v[10, "linear"] - v[10, "exp2"]) + (v[5, "linear"] - v[5, "exp2"])) / 2
    np.testing.assert_allclose(split.table["contribution"], [phi_k, phi_gain], atol=1e-9)
    assert split.table["contribution"].sum() == pytest.approx(v[5, "linear"] - v[10, "exp2"])
    # linear in the value: the candidate's split minus the baseline's, from run and qrels
    sides = [explain_difference(runs[name], qrels, "ndcg@10", "ndcg@10",
                                "ndcg@5(gain=linear)").table.set_index("option")
             for name in ("cand", "base")]
    np.testing.assert_allclose(split.table.set_index("option")["contribution"],
                               (sides[0]["contribution"] - sides[1]["contribution"])
                               [["k", "gain"]], atol=1e-9)


def test_options_whose_hybrids_were_not_measured_are_reported_together(data) -> None:
    runs, qrels, per_query = data
    pq = only(per_query, ["nDCG@10", "nDCG@5(gain=linear)"])
    split = split_change(pq, "cand", "base", "nDCG@10", "nDCG@5(gain=linear)")
    assert not split.exact
    assert split.missing == ["nDCG@10(gain=linear)", "nDCG@5"]
    assert split.table[["option", "a", "b"]].values.tolist() == [["k+gain", "10, exp2",
                                                                  "5, linear"]]
    assert split.table["contribution"].iloc[0] == pytest.approx(
        diff(runs, qrels, 5, "linear") - diff(runs, qrels, 10, "exp2"), abs=1e-9)
    assert split.table["share"].iloc[0] == pytest.approx(1.0)


def frames(diffs: dict[str, float], n: int = 40, seed: int = 1) -> dict[str, pd.DataFrame]:
    """A baseline and a candidate whose per-query differences centre on ``diffs``."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(n)]
    base = pd.DataFrame({v: rng.uniform(0.3, 0.6, n) for v in diffs}, index=qids)
    cand = base + pd.DataFrame({v: d + rng.normal(0, 0.02, n) for v, d in diffs.items()},
                               index=qids)
    return {"cand": cand, "base": base}


def test_the_largest_change_is_the_widest_verdict_gap_then_the_largest_difference() -> None:
    pq = frames({"nDCG@10": 0.10, "nDCG@10(gain=linear)": 0.05,
                 "nDCG@10(ties=optimistic)": -0.10, "AP@10": 0.05, "AP@5": 0.0,
                 "RR": 0.05})
    verdicts = verdicts_of(pq)
    assert list(verdicts["verdict"]) == [BETTER, BETTER, WORSE, BETTER, INCONCLUSIVE, BETTER]
    changes = verdict_changes(verdicts, pq).set_index("metric")
    assert sorted(changes.index) == ["AP", "nDCG"]  # RR has one variant: nothing to change
    ndcg = changes.loc["nDCG"]
    # better -> worse (gap 3) twice; from nDCG@10 the difference moves most (+0.10 -> -0.10)
    assert (ndcg["variant_a"], ndcg["variant_b"]) == ("nDCG@10", "nDCG@10(ties=optimistic)")
    assert ndcg["verdicts"] == ("better under nDCG@10, nDCG@10(gain=linear); worse under "
                                "nDCG@10(ties=optimistic)")
    assert ndcg["split"].startswith("ties average -> optimistic ")
    assert ndcg["largest"] and not changes.loc["AP", "largest"]
    assert changes.loc["AP", "split"].startswith("k 10 -> 5 ")


def test_a_change_that_can_split_is_preferred_and_one_that_cannot_says_why() -> None:
    pq = frames({"nDCG@10": 0.10, "nDCG@10(gain=linear)": 0.0, "nDCG@5": 0.15})
    verdicts = verdicts_of(pq)
    assert list(verdicts["verdict"]) == [BETTER, INCONCLUSIVE, BETTER]
    row = verdict_changes(verdicts, pq).iloc[0]
    # nDCG@5 vs linear gain moves further but differs in k and gain, and nDCG@5(gain=linear)
    # was not measured: the change of one option is explained instead
    assert (row["variant_a"], row["variant_b"]) == ("nDCG@10", "nDCG@10(gain=linear)")
    assert row["split_exact"] and row["split"].startswith("gain exp2 -> linear -0.")
    pq = frames({"nDCG@10": 0.10, "nDCG@5(gain=linear)": -0.10})
    row = verdict_changes(verdicts_of(pq), pq).iloc[0]
    assert (row["verdict_a"], row["verdict_b"], row["split_exact"]) == (BETTER, WORSE, False)
    assert row["split"] == (f"k, gain together (10, exp2 -> 5, linear) {row['change']:+.4f}; "
                            "the runs did not measure nDCG@10(gain=linear), nDCG@5, which "
                            "would split them")


def test_the_same_verdict_everywhere_says_so_and_one_variant_says_nothing() -> None:
    pq = frames({"nDCG@10": 0.1, "nDCG@10(gain=linear)": 0.1})
    changes = verdict_changes(verdicts_of(pq), pq)
    assert changes.empty
    assert change_lines(changes) == ["Verdict across metric definitions: the same under "
                                     "every variant of each metric, for every pair"]
    pq = frames({"nDCG@10": 0.1, "AP@10": -0.1})
    verdicts = verdicts_of(pq)
    assert change_lines(verdict_changes(verdicts, pq), verdicts) == []


# --- through the command: console, report, the comparison's run, reproduce --------------

def fake_ranker(client: MlflowClient, root: Path, name: str, frame: pd.DataFrame) -> str:
    """A ranker run tagged as a job's log stage tags one, holding ``frame`` as its
    per-query artifact."""
    exp = client.get_experiment_by_name("shifts")
    exp_id = exp.experiment_id if exp else client.create_experiment(
        "shifts", artifact_location=(root / "artifacts").as_uri())
    path = root / name / f"{name}.parquet"
    path.parent.mkdir(parents=True)
    frame.reset_index().to_parquet(path, index=False)
    run = client.create_run(exp_id, run_name=name, tags={
        "harness.role": "ranker", "ranker.name": name, "ranker.cache_key": f"key-{name}",
        "dataset.digest": "d" * 64, "dataset.name": "crafted",
        "per_query.sha256": hashlib.sha256(path.read_bytes()).hexdigest()}).info.run_id
    client.log_param(run, "metric.missing", "exclude")
    client.log_param(run, "metric.nan_scores", "error")
    client.log_artifact(run, str(path))
    client.set_terminated(run)
    return run


def quiet(main, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_compare_shows_logs_reports_and_reproduces_the_change(data, tmp_path: Path) -> None:
    from harness.commands.compare import main as compare_main
    from harness.commands.reproduce import main as reproduce_main

    _, _, per_query = data
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    ids = {name: fake_ranker(client, tmp_path, name, frame[["nDCG@10", "nDCG@10(gain=linear)"]])
           for name, frame in per_query.items()}
    code, out, err = quiet(compare_main, [
        ids["cand"], ids["base"], "--baseline", "base", "--tracking-uri", uri,
        "--resamples", "200", "--out-dir", str(tmp_path / "reports"),
        "--pending-dir", str(tmp_path / "pending")])
    assert code == 0, err
    assert "cand vs base, nDCG: better under nDCG@10 (diff +" in out
    assert re.search(r"by option: gain exp2 -> linear -0\.\d{4} \(100%\)", out)
    run_id = re.search(r"^comparison logged as run ([0-9a-f]{32}) ", out, re.M).group(1)
    run = client.get_run(run_id)
    assert run.data.tags["harness.verdict_changes"] == "1"
    note = run.data.tags["mlflow.note.content"]
    assert "**Verdict across metric definitions**" in note
    assert "- cand vs base: better under `nDCG@10`" in note and "gain exp2 -> linear" in note
    assert CHANGES_FILE in {a.path for a in client.list_artifacts(run_id)}
    folder = Path(re.search(r"^report: (\S+)", out, re.M).group(1)).parent
    logged = pd.read_csv(folder / CHANGES_FILE)
    assert len(logged) == 1 and logged["split"][0].startswith("gain exp2 -> linear -0.")
    # the verdict table and the change in the HTML and Markdown reports
    html, md = (folder / "report.html").read_text(), (folder / "report.md").read_text()
    for text in (html, md):
        assert "Verdicts (ttest one-sided, alpha 0.05, holm per variant)" in text
        assert "Verdict across metric definitions" in text
        assert "gain exp2 -&gt; linear" in text or "gain exp2 -> linear" in text
    assert re.search(r"\| nDCG@10 \| cand \| base \| 30 \| \+0\.\d{4} \| 0 \| better \| "
                     r"t one-sided p adj [^|]+ \|  \|", md)
    assert re.search(r"\| nDCG@10\(gain=linear\) \| cand \| base \| 30 \| [+-]0\.\d{4} \| 0 "
                     r"\| inconclusive \|", md)
    assert "<td>inconclusive</td>" in html
    assert "Verdicts" in (folder / "report.tex").read_text()
    # recomputed from the runs' artifacts, the change included
    code, out, err = quiet(reproduce_main, [run_id, "--tracking-uri", uri])
    assert code == 0, err + out
    assert re.match(rf"comparison run {run_id}: identical — \d+ values recomputed", out)
    path = Path(client.download_artifacts(run_id, CHANGES_FILE, str(tmp_path / "dl")))
    assert pd.read_csv(path)["verdict_b"].tolist() == [INCONCLUSIVE]


def test_the_report_shows_verdicts_only_when_there_are_some(tmp_path: Path) -> None:
    from harness.compare import sensitivity
    from harness.compare.report import build_report
    from tests.test_report import fake_sweep

    pq = frames({"nDCG@10": 0.10, "nDCG@10(gain=linear)": -0.10})
    sweep = fake_sweep(pq)
    plain = build_comparison(pq, resamples=100)
    paths = build_report(sweep, plain, sensitivity(pq, plain), tmp_path / "plain")
    assert "Verdict" not in paths.html.read_text() + paths.markdown.read_text()
    against = build_comparison(pq, baseline=["base"], resamples=100)
    verdicts = verdict_table(pq, against, {"nDCG@10": 0.01})
    changes = verdict_changes(verdicts, pq)
    paths = build_report(sweep, against, sensitivity(pq, against), tmp_path / "judged",
                         verdicts=verdicts, changes=changes,
                         verdict_settings=verdict_settings(against, {"nDCG@10": 0.01}))
    md = paths.markdown.read_text()
    assert "| variant | candidate | baseline | n | diff | margin | verdict | decided by | " \
           "gated |" in md
    section = md[md.index("## Verdicts"):md.index("## Verdict across")]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in section.splitlines()
            if "| cand | base | 40 |" in line}
    assert rows["nDCG@10"].endswith(" | yes |") and " | better | " in rows["nDCG@10"]
    assert " | worse | " in rows["nDCG@10(gain=linear)"]
    assert md.index("## Verdicts") < md.index("## Mean per query")
    assert "better under nDCG@10; worse under nDCG@10(gain=linear)" in md
    html = paths.html.read_text()
    assert "<td>better</td>" in html and "<td>worse</td>" in html
    assert "gain exp2 -&gt; linear" in html
