"""Issue 24 in harness compare: a verdict that does not hold across the unjudged treatments
is flagged per pair and metric.

Crafted data: per query three relevant documents and three judged non-relevant ones. The
baseline ranks the relevant ones first. The candidate ranks one to three unjudged documents
first, then the baseline's order. So, by construction:

- unjudged non-relevant: the candidate's relevant documents sit lower on every query, so its
  nDCG@10 is below the baseline's on every query (worse);
- condensed: the unjudged documents leave the ranking and both rankings are the same (a
  difference of 0 on every query: inconclusive);
- relevant: every candidate document above the judged non-relevant ones is relevant, as for
  the baseline, so both score 1 on every query (inconclusive).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness import evaluate
from harness.compare import build_comparison
from harness.compare.unjudged_verdicts import unjudged_flags, unjudged_lines
from harness.compare.verdicts import (
    INCONCLUSIVE,
    WORSE,
    VerdictSettings,
    verdict_lines,
    verdict_table,
)

TREATMENTS = ["nDCG@10", "nDCG@10(unjudged=condensed)", "nDCG@10(unjudged=relevant)"]


def _crafted(n_queries: int = 20, seed: int = 1) -> tuple[dict[str, pd.DataFrame],
                                                           pd.DataFrame]:
    rng = np.random.default_rng(seed)
    runs: dict[str, list[tuple[str, str, float]]] = {"cand": [], "base": []}
    qrels = []
    for q in range(n_queries):
        qid = f"q{q:02d}"
        judged = ["r0", "r1", "r2", "n0", "n1", "n2"]
        qrels += [(qid, d, 1 if d.startswith("r") else 0) for d in judged]
        unjudged = [f"u{i}" for i in range(int(rng.integers(1, 4)))]
        for name, order in (("base", judged), ("cand", unjudged + judged)):
            runs[name] += [(qid, d, float(100 - i)) for i, d in enumerate(order)]
    columns = ["qid", "docid", "score"]
    return ({n: pd.DataFrame(r, columns=columns) for n, r in runs.items()},
            pd.DataFrame(qrels, columns=["qid", "docid", "label"]))


def _verdicts(variants: list[str]) -> pd.DataFrame:
    runs, qrels = _crafted()
    per_query = {n: evaluate(run, qrels, variants) for n, run in runs.items()}
    return verdict_table(per_query, build_comparison(per_query, baseline=["base"],
                                                  resamples=200))


def test_a_verdict_that_rests_on_unjudged_documents_is_flagged() -> None:
    verdicts = _verdicts(TREATMENTS + ["P@5"])
    assert dict(zip(verdicts["variant"], verdicts["verdict"])) == {
        "nDCG@10": WORSE, "nDCG@10(unjudged=condensed)": INCONCLUSIVE,
        "nDCG@10(unjudged=relevant)": INCONCLUSIVE, "P@5": WORSE}
    flags = dict(zip(verdicts["variant"], verdicts["unjudged"]))
    expected = ("worse only if unjudged documents are non-relevant: inconclusive under "
                "unjudged=condensed; inconclusive under unjudged=relevant")
    assert {v: flags[v] for v in TREATMENTS} == dict.fromkeys(TREATMENTS, expected)
    assert flags["P@5"] == ""  # measured under one treatment only: nothing to say
    lines = verdict_lines(verdicts, VerdictSettings())  # verdict_table's defaults
    at = lines.index(next(x for x in lines if x.startswith("Verdict across unjudged")))
    assert "harness judgments" in lines[at]
    assert lines[at + 1:] == [f"  cand vs base, nDCG@10: {expected}"]  # once per metric


def test_a_verdict_that_holds_is_said_to_hold() -> None:
    # the same verdict under nonrelevant and relevant is not flagged as changing
    verdicts = pd.DataFrame({"variant": ["AP", "AP(unjudged=relevant,unjudged_grade=2)"],
                             "candidate": "a", "baseline": "b", "verdict": "better"})
    assert unjudged_flags(verdicts).tolist() == ["holds under unjudged=relevant (grade 2)"] * 2
    said = unjudged_lines(verdicts.assign(unjudged=unjudged_flags(verdicts)))
    assert len(said) == 1 and said[0].startswith("Verdict across unjudged treatments: the same")
    # other options split the groups: nDCG@10 and nDCG@5 are not compared with each other
    other = pd.DataFrame({"variant": ["nDCG@10", "nDCG@5(unjudged=condensed)"],
                          "candidate": "a", "baseline": "b", "verdict": ["better", "worse"]})
    assert unjudged_flags(other).tolist() == ["", ""]


def test_no_column_without_two_treatments_of_a_metric() -> None:
    # comparisons of studies without unjudged variants keep verdicts.csv's columns (a
    # comparison logged before reproduces without an added column)
    assert "unjudged" not in _verdicts(["nDCG@10", "P@5"]).columns
