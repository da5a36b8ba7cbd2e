"""``harness judgments`` on TREC CAsT 2021 (the organisers' BM25 and ANCE runs), the table
docs/measures.md shows: run as a command, its numbers checked against
independent sources: trec_eval's own output shipped with the data (the non-relevant
treatment), the data's README (judged@10), pytrec_eval on the qrels plus the unjudged
documents at grade 4 (relevant) and on the runs less them (condensed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.data.trec import read_qrels, read_run
from tests.shared import REPO_ROOT, shared_data_dir

RUNS = ("org_manual_bm25", "org_manual_ance")
METRICS = {"nDCG@10(gain=linear,ties=docid)": "ndcg_cut_10", "AP(ties=docid)": "map"}


def _cast() -> Path:
    return shared_data_dir() / "trec_cast_2021"


def _command(tmp: Path) -> list[str]:
    d = _cast()
    return [sys.executable, "-m", "harness", "judgments", "--qrels",
            str(d / "trec-cast-qrels-docs.2021.qrel"),
            *(a for r in RUNS for a in ("--run", str(d / f"{r}.run"))),
            "-m", "trec_eval:ndcg_cut.10", "-m", "trec_eval:map", "--csv-prefix",
            str(tmp / "cast")]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    tmp = tmp_path_factory.mktemp("judgments")
    proc = subprocess.run(_command(tmp), cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    runs = pd.read_csv(tmp / "cast.runs.csv").set_index(["run", "metric"])
    pairs = pd.read_csv(tmp / "cast.pairs.csv").set_index("metric")
    return runs, pairs, proc.stdout


def _trec_eval_all(run: str, measure: str) -> float:
    """The summary line trec_eval printed for this run (shipped with the data)."""
    path = _cast() / f"expected.{run}.all_trec.q.txt"
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        if name == measure and qid == "all":
            return float(value)
    raise AssertionError(f"{measure} not in {path}")


def _pytrec(run: pd.DataFrame, qrels: pd.DataFrame, measure: str) -> float:
    import pytrec_eval

    q: dict = {}
    for a, b, c in qrels[["qid", "docid", "label"]].itertuples(index=False):
        q.setdefault(str(a), {})[str(b)] = int(c)
    r: dict = {}
    for a, b, c in run[["qid", "docid", "score"]].itertuples(index=False):
        r.setdefault(str(a), {})[str(b)] = float(c)
    out = pytrec_eval.RelevanceEvaluator(q, {measure}).evaluate(r)
    return float(np.mean([v[measure] for v in out.values()]))


def test_the_nonrelevant_column_is_trec_eval_and_judged_at_10_the_datas(tables) -> None:
    runs, _, _ = tables
    for run in RUNS:
        for metric, measure in METRICS.items():
            assert runs.loc[(run, metric), "nonrelevant"] == pytest.approx(
                _trec_eval_all(run, measure), abs=5e-5)
            assert runs.loc[(run, metric), "n_queries"] == 158
            assert runs.loc[(run, metric), "n_not_judged"] == 81  # the data's README
    # the data's README: "Judged fraction in the top 10 is 0.859" (BM25), 0.770 (ANCE)
    ndcg = "nDCG@10(gain=linear,ties=docid)"
    assert runs.loc[(RUNS[0], ndcg), "judged_at_k"] == pytest.approx(0.859, abs=5e-4)
    assert runs.loc[(RUNS[1], ndcg), "judged_at_k"] == pytest.approx(0.770, abs=5e-4)


def test_relevant_and_condensed_are_pytrec_eval_on_changed_inputs(tables) -> None:
    runs, _, _ = tables
    qrels = read_qrels(_cast() / "trec-cast-qrels-docs.2021.qrel")
    judged = set(zip(qrels["qid"].astype(str), qrels["docid"].astype(str)))
    for name in RUNS:
        run = read_run(_cast() / f"{name}.run")
        run = run[run["qid"].isin(set(qrels["qid"]))]
        key = list(zip(run["qid"].astype(str), run["docid"].astype(str)))
        is_judged = np.array([k in judged for k in key])
        extra = run.loc[~is_judged, ["qid", "docid"]].assign(label=4)  # the top grade
        plus = pd.concat([qrels, extra])
        for metric, measure in METRICS.items():
            assert runs.loc[(name, metric), "relevant"] == pytest.approx(
                _pytrec(run, plus, measure), abs=1e-12)
            assert runs.loc[(name, metric), "condensed"] == pytest.approx(
                _pytrec(run[is_judged], qrels, measure), abs=1e-12)


def test_the_interval_brackets_the_treatments_and_is_exact(tables) -> None:
    runs, _, _ = tables
    for column in ("nonrelevant", "relevant"):  # both are labelings: all 0, all 4
        assert (runs["low"] <= runs[column] + 1e-12).all()
        assert (runs[column] <= runs["high"] + 1e-12).all()
    assert (runs["exact"] == 1.0).all()
    # AP is not monotone in the labels: every unjudged document relevant is not its maximum
    ap = runs.xs("AP(ties=docid)", level="metric")
    assert (ap["high"] > ap["relevant"]).any()


def test_ance_beats_bm25_under_each_treatment_but_not_every_labeling(tables) -> None:
    runs, pairs, stdout = tables
    for metric in METRICS:
        row = pairs.loc[metric]
        assert (row["run"], row["baseline"]) == RUNS[::-1]
        for t in ("nonrelevant", "relevant", "condensed"):
            assert row[t] == pytest.approx(runs.loc[(RUNS[1], metric), t]
                                           - runs.loc[(RUNS[0], metric), t], abs=1e-12)
            assert row[t] > 0
        assert row["worst"] < 0 < row["best"]
        assert row["verdict"] == ("org_manual_ance > org_manual_bm25 under the three "
                                  "treatments, not under every labeling")
    assert "| org_manual_bm25 | nDCG@10(gain=linear,ties=docid) | 0.8589 | 0.3764 |" in stdout


def test_the_docs_show_this_table_and_command(tables) -> None:
    _, _, stdout = tables
    docs = (REPO_ROOT / "docs" / "measures.md").read_text()
    rows = [line for line in stdout.splitlines() if line.startswith("| org_manual")]
    assert len(rows) == 6
    for line in rows:
        assert line in docs, line
    assert "-m trec_eval:ndcg_cut.10 -m trec_eval:map" in docs
