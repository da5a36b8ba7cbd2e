"""benchmarks/bench_scale.py end to end on tiny data: the table's columns and rows, the
means it prints against values computed here (nDCG@10 by hand, ranx, pytrec_eval), the
scaled pytrec_eval row said to be scaled, and the targets printed with their figures."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_scale.py"
COLUMNS = ["rows", "ids", "metrics", "engine", "first call", "warm call", "input",
           "RSS before the call", "peak RSS", "notes"]
SPAN = re.compile(r"(\d+\.\d+) s \((\d+\.\d+)–(\d+\.\d+)\)")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    directory = tmp_path_factory.mktemp("scale")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--quick", "--dir", str(directory),
         "--sizes", "10k", "20k", "--peer-sizes", "20k", "--rounds", "1", "--ids", "int",
         "--metrics", "ndcg10", "--slice-rows", "5000"],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, directory


def _table(out: str) -> tuple[list[str], list[dict[str, str]]]:
    lines = [x for x in out.splitlines() if x.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(header, (c.strip() for c in x.strip("|").split("|")))) for x in lines[1:]]
    return header, rows


def _ndcg10_exp2_tie_averaged(run: pd.DataFrame, qrels: pd.DataFrame) -> float:
    """nDCG@10, gain 2^label - 1, log2 discount, ideal over every judged document, tied
    scores sharing the mean gain of their group over the positions they span."""
    disc = 1 / np.log2(np.arange(2, 12))
    labels = qrels.set_index(["qid", "docid"])["label"]
    values = []
    for qid, docs in run.groupby("qid"):
        gains = 2.0 ** labels.reindex(list(zip(docs["qid"], docs["docid"]))).fillna(0)
        gains = (gains - 1).to_numpy()
        scores = docs["score"].to_numpy()
        order = np.argsort(-scores, kind="stable")
        s, g = scores[order], gains[order]
        dcg, start = 0.0, 0
        while start < min(len(s), 10):
            stop = start + int((s[start:] == s[start]).sum())
            dcg += g[start:stop].mean() * disc[start:min(stop, 10)].sum()
            start = stop
        ideal = np.sort(2.0 ** qrels.loc[qrels["qid"] == qid, "label"].to_numpy() - 1)[::-1]
        idcg = (ideal[:10] * disc[:len(ideal[:10])]).sum()
        values.append(dcg / idcg if idcg > 0 else 0.0)
    return float(np.mean(values))


def test_the_table_has_every_column_and_configuration(bench: tuple[str, Path]) -> None:
    header, rows = _table(bench[0])
    assert header == COLUMNS
    got = {(r["rows"], r["ids"], r["engine"]) for r in rows}
    assert got == {("10k", "int", "memory"), ("10k", "int", "stream"), ("10k", "int", "dask"),
                   ("20k", "int", "memory"), ("20k", "int", "stream"), ("20k", "int", "dask"),
                   ("20k", "str", "ranx"), ("20k", "str", "pytrec_eval (scaled)")}
    for r in rows:
        for column in ("first call", "warm call"):
            median, low, high = map(float, SPAN.fullmatch(r[column]).groups())
            assert low <= median <= high, (r, column)
        for column in ("input", "RSS before the call", "peak RSS"):
            assert re.fullmatch(r"\d+\.\d+ GB", r[column]), (r, column)
    notes = {r["engine"]: r["notes"] for r in rows}
    assert "2 workers" in notes["dask"] and "scheduler + workers" in notes["dask"]
    assert "from_df" in notes["ranx"]
    assert "SCALED x4.0 from 5,000 rows" in notes["pytrec_eval (scaled)"]


def test_the_printed_means_are_the_values_computed_here(bench: tuple[str, Path]) -> None:
    out, directory = bench
    runs = {s: pd.read_parquet(directory / f"run_{s}.parquet") for s in ("10k", "20k")}
    qrels = {s: pd.read_parquet(directory / f"qrels_{s}.parquet") for s in ("10k", "20k")}
    for s in ("10k", "20k"):
        line = next(x for x in out.splitlines() if x.startswith(f"agreement, {s}, nDCG@10"))
        assert "memory (int ids), stream (int ids), dask (int ids), 6 calls" in line
        printed = float(re.search(r"mean (\S+)", line)[1])
        run = runs[s][["qid", "docid", "score"]]
        judged = qrels[s][["qid", "docid", "label"]]
        assert math.isclose(printed, _ndcg10_exp2_tie_averaged(run, judged), abs_tol=1e-12)

    import warnings

    import pytrec_eval
    from ranx import Qrels, Run, evaluate

    text = {"qid": object, "docid": object}
    run = runs["20k"][["qid_str", "docid_str", "score"]].set_axis(
        ["qid", "docid", "score"], axis=1).astype(text)
    judged = qrels["20k"][["qid_str", "docid_str", "label"]].set_axis(
        ["qid", "docid", "label"], axis=1).astype(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = evaluate(Qrels.from_df(judged, "qid", "docid", "label"),
                          Run.from_df(run, "qid", "docid", "score"), "ndcg@10")
    line = next(x for x in out.splitlines() if x.startswith("agreement, 20k: ranx"))
    ranx_printed, harness_printed = map(float, re.findall(r"\d\.\d{15}", line))
    assert math.isclose(ranx_printed, theirs, abs_tol=1e-12)
    assert math.isclose(harness_printed, theirs, abs_tol=1e-9)

    head = run.iloc[:5000]  # 50 whole queries of 100 documents
    q: dict = {}
    for qid, doc, label in judged[judged["qid"].isin(head["qid"])].itertuples(index=False):
        q.setdefault(qid, {})[doc] = int(label)
    r: dict = {}
    for qid, doc, score in head.itertuples(index=False):
        r.setdefault(qid, {})[doc] = float(score)
    per_query = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut.10"}).evaluate(r)
    theirs = float(np.mean([v["ndcg_cut_10"] for v in per_query.values()]))
    line = next(x for x in out.splitlines() if x.startswith("agreement, 20k: pytrec_eval"))
    pytrec_printed, harness_printed = map(float, re.findall(r"\d\.\d{15}", line))
    assert len(per_query) == 50
    assert math.isclose(pytrec_printed, theirs, abs_tol=1e-12)
    assert math.isclose(harness_printed, theirs, abs_tol=1e-9)


def test_the_targets_are_printed_with_their_figures(bench: tuple[str, Path]) -> None:
    out = bench[0]
    for what in ("first call", "warm call"):
        line = next(x for x in out.splitlines()
                    if x.startswith(f"target: memory, int ids, nDCG@10, {what}: 20k within "
                                    "1.1x of 2x the 10k time: "))
        verdict, t_big, t_small, ratio = re.search(
            r": (MET|NOT MET) \((\S+) s / \(2 x (\S+) s\) = (\S+)\)", line).groups()
        assert math.isclose(float(ratio), float(t_big) / (2 * float(t_small)), rel_tol=0.02,
                            abs_tol=0.006)
        if abs(float(ratio) - 1.1) > 0.005:  # the verdict reads the ratio before it is
            assert (verdict == "MET") == (float(ratio) <= 1.1)  # printed to 2 decimals
    line = next(x for x in out.splitlines()
                if x.startswith("target: memory, int ids, nDCG@10: 20k peak RSS <= input + 2 "
                                "GB: "))
    extra = float(re.search(r"peak - frames = (\S+) GB", line)[1])
    assert ("NOT MET" not in line) == (extra <= 2)
    assert any(x.startswith("growth (no target): dask, int ids, nDCG@10, first call")
               for x in out.splitlines())


def test_the_last_line_counts_the_targets_met(bench: tuple[str, Path]) -> None:
    lines = bench[0].splitlines()
    verdicts = [x for x in lines if x.startswith("target: memory, ")
                and "NOT MEASURED" not in x]
    met = sum(": MET (" in x for x in verdicts)
    summary = next(x for x in lines if x.startswith("targets: "))
    assert summary.startswith(f"targets: {met} of {len(verdicts)} met")
    assert ("NOT MET" in summary) == (met < len(verdicts))
    assert summary.endswith("engines and peers agree")
