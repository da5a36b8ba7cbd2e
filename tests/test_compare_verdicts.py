"""Several baselines and the correction family; non-inferiority, equivalence (TOST) and the
verdicts, checked against scipy and hand computations on crafted data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.compare import build_comparison, compare_table
from harness.errors import CompareError


def table(qids: list[str], **columns: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"qid": qids, **columns})


def three() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(5)
    qids = [f"q{i}" for i in range(30)]
    base = rng.uniform(0.2, 0.7, 30)
    return {name: table(qids, **{"nDCG@10": base + shift + rng.normal(0, 0.05, 30),
                                 "RR": base / 2 + shift + rng.normal(0, 0.05, 30)})
            for name, shift in (("good", 0.1), ("mid", 0.05), ("bad", 0.0))}


def test_several_baselines_give_each_pair_once() -> None:
    c = build_comparison(three(), baseline=["bad", "mid"], resamples=100)
    t = c.tests
    pairs = t[t["variant"] == "RR"][["ranker_a", "ranker_b"]].apply(tuple, axis=1)
    # against bad: good and mid; against mid: good (bad vs mid is mid vs bad, already in)
    assert list(pairs) == [("good", "bad"), ("mid", "bad"), ("good", "mid")]
    assert c.settings.baselines == ("bad", "mid") and c.settings.reference == "bad"


@pytest.mark.parametrize("family", ["variant", "baseline", "all"])
def test_the_correction_family_is_the_one_named(family: str) -> None:
    t = compare_table(three(), baseline=["bad", "mid"], correction="bh", family=family,
                      resamples=100)
    key = {"variant": t["variant"], "baseline": t["ranker_b"], "all": pd.Series(0, t.index)}
    for _, rows in t.groupby(key[family]):
        np.testing.assert_allclose(rows["p_ttest_adj"],
                                   stats.false_discovery_control(rows["p_ttest"]))
    sizes = {"variant": 3, "baseline": 4, "all": 6}  # rows corrected together
    assert max(len(r) for _, r in t.groupby(key[family])) == sizes[family]


def test_family_baseline_needs_a_baseline() -> None:
    with pytest.raises(CompareError, match="family 'baseline' corrects per baseline"):
        compare_table(three(), family="baseline")


# --- non-inferiority and equivalence ------------------------------------------------------

from harness.compare.verdicts import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    NOT_WORSE,
    WORSE,
    gate_lines,
    parse_margins,
    verdict_table,
)

# d: 8 per-query differences with mean 0.004 and sd 0.0138...; the baseline is arbitrary
D = np.array([0.01, -0.02, 0.015, 0.0, 0.005, -0.01, 0.02, 0.012])
BASE = np.array([0.30, 0.52, 0.41, 0.77, 0.25, 0.60, 0.48, 0.35])
QIDS = [f"q{i}" for i in range(8)]


def pair(d: np.ndarray, base: np.ndarray = BASE, variant: str = "nDCG@10"
         ) -> dict[str, pd.DataFrame]:
    qids = [f"q{i}" for i in range(len(d))]
    return {"cand": table(qids, **{variant: base + d}), "base": table(qids, **{variant: base})}


def verdicts(frames: dict[str, pd.DataFrame], margins: dict[str, float], **options: object
             ) -> pd.DataFrame:
    comparison = build_comparison(frames, baseline="base", resamples=2000, seed=3)
    return verdict_table(frames, comparison, margins, **options)  # type: ignore[arg-type]


def test_tost_equals_two_one_sided_scipy_tests() -> None:
    delta = 0.02
    v = verdicts(pair(D), {"nDCG@10": delta}, equivalence=True).iloc[0]
    cand, base = BASE + D, BASE
    lower = stats.ttest_rel(cand + delta, base, alternative="greater").pvalue
    upper = stats.ttest_rel(cand - delta, base, alternative="less").pvalue
    assert v["p_not_worse"] == pytest.approx(lower, rel=1e-9)
    assert v["p_upper"] == pytest.approx(upper, rel=1e-9)
    assert v["p_equivalent"] == pytest.approx(max(lower, upper), rel=1e-9)
    assert v["p_equivalent_adj"] == v["p_equivalent"]  # a family of one comparison
    assert v["p_better"] == pytest.approx(
        stats.ttest_rel(cand, base, alternative="greater").pvalue, rel=1e-9)
    assert v["verdict"] == EQUIVALENT and "TOST" in v["decided_by"]


def test_tost_against_a_hand_computation() -> None:
    # by hand: mean(D) = 0.032 / 8 = 0.004; the squared deviations sum to 0.001266, so
    # s = sqrt(0.001266 / 7) = 0.0134483, se = s / sqrt(8) = 0.0047547. TOST at alpha 0.05
    # with 7 degrees of freedom rejects both one-sided nulls when both t exceed the table's
    # t(0.95, 7) = 1.895: t_low = (0.004 + delta) / se, t_up = (delta - 0.004) / se.
    assert D.mean() == pytest.approx(0.004, abs=1e-15)
    se = np.sqrt(np.sum((D - 0.004) ** 2) / 7) / np.sqrt(8)
    assert se == pytest.approx(0.0047547, rel=1e-4)
    # delta = 0.0132: t_up = 0.0092 / se = 1.935 > 1.895: equivalent
    # delta = 0.0129: t_up = 0.0089 / se = 1.872 < 1.895: not shown (t_low = 3.55: not worse)
    assert verdicts(pair(D), {"nDCG@10": 0.0132}, equivalence=True).iloc[0]["verdict"] \
        == EQUIVALENT
    v = verdicts(pair(D), {"nDCG@10": 0.0129}, equivalence=True).iloc[0]
    assert v["verdict"] == NOT_WORSE and 0.05 < v["p_upper"] < 0.06
    # without a margin: t = 0.004 / se = 0.806 < 1.895 and nothing else holds
    assert verdicts(pair(D), {}).iloc[0]["verdict"] == INCONCLUSIVE


def test_verdicts_better_worse_inconclusive_and_their_numbers() -> None:
    assert verdicts(pair(D + 0.05), {}).iloc[0]["verdict"] == BETTER
    worse = verdicts(pair(D - 0.05), {"nDCG@10": 0.01}).iloc[0]
    assert worse["verdict"] == WORSE
    p = stats.ttest_rel(BASE + D - 0.05 + 0.01, BASE, alternative="less").pvalue
    assert worse["p_worse"] == pytest.approx(p, rel=1e-9)
    assert f"{p:.3g} < 0.05: diff < -0.01" in worse["decided_by"]
    # 0.004 lower than the baseline on average, well within a margin of 0.03
    nw = verdicts(pair(D - 0.008), {"nDCG@10": 0.03}).iloc[0]
    assert nw["verdict"] == NOT_WORSE and nw["mean_diff"] == pytest.approx(-0.004)


def test_wilcoxon_and_bootstrap_verdicts_equal_scipy() -> None:
    delta = 0.015
    w = verdicts(pair(D), {"nDCG@10": delta}, test="wilcoxon").iloc[0]
    assert w["p_not_worse"] == pytest.approx(
        stats.wilcoxon(D + delta, alternative="greater").pvalue, rel=1e-9)
    b = verdicts(pair(D), {"nDCG@10": delta}, test="bootstrap", equivalence=True).iloc[0]
    d = (BASE + D) - BASE  # the differences as the tables hold them (rounded)
    ci = stats.bootstrap((d,), np.mean, n_resamples=2000, confidence_level=0.90,
                         rng=np.random.default_rng(3)).confidence_interval
    assert (b["bound_low"], b["bound_high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
    expected = EQUIVALENT if -delta < ci.low and ci.high < delta else (
        NOT_WORSE if ci.low > -delta else INCONCLUSIVE)
    assert b["verdict"] == expected


def test_identical_runs_are_not_worse_within_a_margin_and_the_gate_passes() -> None:
    frames = pair(np.zeros(8))
    v = verdicts(frames, {"nDCG@10": 0.01})
    assert v.iloc[0]["verdict"] == NOT_WORSE and v.iloc[0]["p_not_worse"] == 0.0
    assert gate_lines(v)[0]
    assert verdicts(frames, {"nDCG@10": 0.0}).iloc[0]["verdict"] == INCONCLUSIVE
    failed = verdicts(pair(D - 0.05), {"nDCG@10": 0.01})
    passed, lines = gate_lines(failed)
    assert not passed and lines[0] == "gate: FAILED (1 of 1 gated comparison(s))"
    assert lines[1].startswith("  nDCG@10, cand vs base: worse (diff -0.0460, margin 0.01;")


@pytest.mark.parametrize(("item", "message"), [
    ("nDCG@10=abc", "--margin 'nDCG@10=abc': the margin 'abc' is not a number"),
    ("nDCG@10=-0.1", "the margin must be a finite number >= 0; got -0.1"),
    ("nDCG@10=nan", "the margin must be a finite number >= 0; got nan"),
    ("AP@5=0.1", "no compared run has variant 'AP@5'; known: nDCG@10, RR"),
    ("0.1", "expected VARIANT=DELTA"),
])
def test_bad_margins_name_what_is_wrong(item: str, message: str) -> None:
    with pytest.raises(CompareError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_margins([item], ["nDCG@10", "RR"])


def test_margins_read_any_spelling_and_variants_with_options() -> None:
    got = parse_margins(["ndcg_cut_10=0.01", "nDCG@10(gain=linear)=0.02"],
                        ["nDCG@10(gain=linear,ties=docid)", "nDCG@10(gain=linear)"])
    assert got == {"nDCG@10(gain=linear,ties=docid)": 0.01, "nDCG@10(gain=linear)": 0.02}


def test_equivalence_needs_a_margin() -> None:
    with pytest.raises(CompareError, match="--equivalence tests"):
        verdicts(pair(D), {}, equivalence=True)
