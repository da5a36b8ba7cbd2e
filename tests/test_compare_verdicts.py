"""Several baselines and the correction family; non-inferiority, equivalence (TOST) and the
verdicts, checked against scipy and hand computations on crafted data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.compare import compare_table
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
    t = compare_table(three(), baseline=["bad", "mid"], resamples=100)
    pairs = t[t["variant"] == "RR"][["ranker_a", "ranker_b"]].apply(tuple, axis=1)
    # against bad: good and mid; against mid: good (bad vs mid is mid vs bad, already in)
    assert list(pairs) == [("good", "bad"), ("mid", "bad"), ("good", "mid")]
    assert t.attrs["baselines"] == ["bad", "mid"]


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
