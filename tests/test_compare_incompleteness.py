"""Issue 24 in the sensitivity analysis: the incompleteness group, the rankers' ordering under
each unjudged treatment and Kendall's tau against unjudged=nonrelevant.

Crafted data: per query one relevant document r and judged non-relevant ones n0, n1.

- a retrieves n0, r: nDCG@10 1/log2(3) = 0.6309 under nonrelevant and condensed;
- b retrieves u0, u1, u2 (unjudged), r: 1/log2(5) = 0.4307 under nonrelevant, 1 condensed;
- c retrieves n0, n1, r: 1/log2(4) = 0.5 under nonrelevant and condensed.

Nonrelevant orders a > c > b, condensed b > a > c: of the three pairs, (a, c) agrees and
(a, b), (c, b) disagree, so tau = (1 - 2) / 3 = -1/3 (also scipy's kendalltau below).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from harness import evaluate
from harness.compare import build_comparison, sensitivity
from harness.compare.incompleteness import incompleteness_taus
from harness.compare.report import build_report
from tests.test_report import fake_sweep

# ties=docid throughout (infAP refuses tie averaging); no run has tied scores
NDCG, CONDENSED = "nDCG@10(ties=docid)", "nDCG@10(ties=docid,unjudged=condensed)"
AP = "AP(ties=docid)"
VARIANTS = [NDCG, CONDENSED, "nDCG@10(ties=docid,unjudged=relevant)", AP,
            "AP(ties=docid,unjudged=condensed)", "Bpref(ties=docid)", "infAP(ties=docid)",
            "P@5(ties=docid)"]
ORDERS = {"a": ["n0", "r"], "b": ["u0", "u1", "u2", "r"], "c": ["n0", "n1", "r"]}


def _per_query(n_queries: int = 6) -> dict[str, pd.DataFrame]:
    qrels = pd.DataFrame([(f"q{q}", d, int(d == "r")) for q in range(n_queries)
                          for d in ("r", "n0", "n1")], columns=["qid", "docid", "label"])
    runs = {name: pd.DataFrame([(f"q{q}", d, float(10 - i)) for q in range(n_queries)
                                for i, d in enumerate(order)], columns=["qid", "docid", "score"])
            for name, order in ORDERS.items()}
    return {name: evaluate(run, qrels, VARIANTS) for name, run in runs.items()}


def test_the_ordering_that_flips_when_unjudged_documents_are_condensed() -> None:
    per_query = _per_query()
    s = sensitivity(per_query, build_comparison(per_query, resamples=100))
    by_hand = {NDCG: {"a": 1 / math.log2(3), "b": 1 / math.log2(5), "c": 0.5},
               CONDENSED: {"a": 1 / math.log2(3), "b": 1.0, "c": 0.5}}
    for variant, means in by_hand.items():
        assert s.means.loc[variant].to_dict() == pytest.approx(means)
    table = s.unjudged[s.unjudged["metric"] == NDCG].set_index("treatment")
    assert list(table.index) == ["nonrelevant", "condensed", "relevant", "Bpref(ties=docid)",
                                 "infAP(ties=docid)"]
    assert table.loc["nonrelevant", "order"] == "a > c > b"
    assert table.loc["condensed", "order"] == "b > a > c"
    expected = stats.kendalltau([by_hand[NDCG][r] for r in "abc"],
                                [by_hand[CONDENSED][r] for r in "abc"])
    assert expected.statistic == pytest.approx(-1 / 3)
    assert table.loc["condensed", "tau"] == pytest.approx(expected.statistic)
    assert table.loc["nonrelevant", "tau"] == pytest.approx(1.0)
    assert table.loc["condensed", "n_rankers"] == 3
    # bpref and infAP sit beside every metric measured under two treatments (AP too);
    # P@5, under one treatment only, is not in the group
    ap = s.unjudged[s.unjudged["metric"] == AP].set_index("treatment")
    assert list(ap.index) == ["nonrelevant", "condensed", "Bpref(ties=docid)",
                              "infAP(ties=docid)"]
    for reference, rows in ((NDCG, table), (AP, ap)):
        for variant in ("Bpref(ties=docid)", "infAP(ties=docid)"):
            tau = stats.kendalltau(s.means.loc[reference], s.means.loc[variant]).statistic
            assert rows.loc[variant, "tau"] == pytest.approx(tau, nan_ok=True)
    assert "P@5(ties=docid)" not in set(s.unjudged["variant"])
    note = next(n for n in s.notes if n.startswith("incompleteness:"))
    assert f"{CONDENSED} against {NDCG}: tau -0.333 (b > a > c)" in note
    assert "harness judgments" in note


def test_the_report_shows_the_group_only_when_the_sweep_has_one(tmp_path: Path) -> None:
    per_query = _per_query()
    comparison = build_comparison(per_query, resamples=100)
    paths = build_report(fake_sweep(per_query), comparison,
                         sensitivity(per_query, comparison), tmp_path / "with")
    html = paths.html.read_text()
    assert "Incompleteness: the ordering under each unjudged treatment" in html
    assert "b &gt; a &gt; c" in html or "b > a > c" in html
    written = pd.read_csv(paths.directory / "incompleteness.csv")
    assert written.loc[written["variant"] == CONDENSED, "tau"].iloc[0] \
        == pytest.approx(-1 / 3, abs=1e-3)
    plain = {n: f[["P@5(ties=docid)"]] for n, f in _per_query().items()}
    paths = build_report(fake_sweep(plain), build_comparison(plain, resamples=100),
                         sensitivity(plain), tmp_path / "without")
    assert "Incompleteness" not in paths.html.read_text()
    assert not (paths.directory / "incompleteness.csv").exists()


def test_a_group_without_its_nonrelevant_reference_is_left_out() -> None:
    means = pd.DataFrame({"a": [0.5, 0.2], "b": [0.4, 0.3]},
                         index=["AP(unjudged=condensed)", "AP(unjudged=relevant)"])
    assert incompleteness_taus(means).empty
