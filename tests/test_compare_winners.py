"""The winner of a variant counts only when its lead is significant (issue 22), and the
console's headline table of ``harness compare``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.compare import build_comparison, sensitivity
from harness.compare.report import headline_display

QIDS = [f"q{i:02d}" for i in range(20)]
BASE = np.linspace(0.2, 0.8, 20)
ALT = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)


def _frames() -> dict[str, pd.DataFrame]:
    """nDCG@10: a leads b by a mean of 0.005, far from significant (a tie at the top);
    nDCG@5: a well ahead of b and c; nDCG@3: b well ahead of a and c."""
    noise = ALT * 0.01
    a = {"nDCG@10": BASE + np.where(ALT > 0, 0.05, -0.04), "nDCG@5": BASE + 0.1 + noise,
         "nDCG@3": BASE}
    b = {"nDCG@10": BASE, "nDCG@5": BASE, "nDCG@3": BASE + 0.1 + noise}
    c = {v: BASE - 0.15 - noise for v in ("nDCG@10", "nDCG@5", "nDCG@3")}
    return {name: pd.DataFrame({"qid": QIDS, **cols}) for name, cols in
            (("a", a), ("b", b), ("c", c))}


def test_a_lead_that_is_not_significant_is_a_tie_not_a_winner() -> None:
    frames = _frames()
    comparison = build_comparison(frames, resamples=200)
    t = comparison.tests
    row = t[(t["variant"] == "nDCG@10") & (t["ranker_a"] == "a") & (t["ranker_b"] == "b")].iloc[0]
    assert row["mean_diff"] == pytest.approx(0.005) and not row["significant"]
    s = sensitivity(frames, comparison)
    w = s.winners
    # the leader by mean is unchanged; the significance columns say whether it wins
    assert list(w["winner"]) == ["a", "a", "b"]
    assert list(w.columns[-3:]) == ["significant", "p_adj", "top"]
    assert w.loc["nDCG@10", "significant"] is False
    assert w.loc["nDCG@10", "top"] == "a = b"
    assert w.loc["nDCG@10", "p_adj"] == pytest.approx(row["p_ttest_adj"])
    assert w.loc["nDCG@5", "significant"] is True and w.loc["nDCG@5", "top"] == "a"
    assert w.loc["nDCG@3", "significant"] is True and w.loc["nDCG@3", "top"] == "b"
    note = next(n for n in s.notes if n.startswith("the winner changes with the variant"))
    assert note == ("the winner changes with the variant: a under 1 (nDCG@5); b under 1 "
                    "(nDCG@3); no significant winner (a tie at the top) under 1 "
                    "(nDCG@10 (a = b))")
    assert s.winner_changes
    assert s.rule == "ttest p adj < 0.05, holm per variant"


def test_only_ties_and_one_winner_never_say_the_winner_changes() -> None:
    frames = {k: f.drop(columns="nDCG@3") for k, f in _frames().items()}
    s = sensitivity(frames, build_comparison(frames, resamples=200))
    assert not s.winner_changes
    assert "a wins under 1 of 2 variants (nDCG@5); no significant winner (a tie at the top) " \
           "under 1 (nDCG@10 (a = b))" in s.notes
    only_tie = {k: f[["qid", "nDCG@10"]] for k, f in frames.items()}
    s = sensitivity(only_tie, build_comparison(only_tie, resamples=200))
    assert not s.winner_changes
    assert s.notes[0].startswith("no ranker wins significantly under any variant (1)")


def test_the_chosen_test_and_correction_decide() -> None:
    """A lead significant under Holm for one test can be a tie under another setting."""
    frames = _frames()
    strict = build_comparison(frames, resamples=200, alpha=1e-30)
    s = sensitivity(frames, strict)
    assert not any(v is True for v in s.winners["significant"])
    assert s.rule == "ttest p adj < 1e-30, holm per variant"
    wil = sensitivity(frames, build_comparison(frames, resamples=200, test="wilcoxon",
                                            correction="bh"))
    assert wil.rule == "wilcoxon p adj < 0.05, bh per variant"


def test_without_a_table_or_with_a_baseline_table_the_lead_is_untested() -> None:
    frames = _frames()
    s = sensitivity(frames)
    assert all(v is None for v in s.winners["significant"]) and s.rule == ""
    assert any(n.startswith("the winner by mean changes with the variant (significance not "
                            "tested") for n in s.notes)
    base = build_comparison(frames, baseline="c", resamples=200)  # a vs b never compared
    s = sensitivity(frames, base)
    assert all(v is None for v in s.winners["significant"])
    assert s.notes[0].startswith("the leads are untested under every variant (3)")
    assert "discriminative power over the comparisons with the baseline c only, not over " \
           "every ranker pair" in s.notes
    assert set(s.power["n_comparisons"]) == {2}


def test_the_headline_table_marks_significance_and_names_the_winner_or_a_tie() -> None:
    frames = _frames()
    comparison = build_comparison(frames, resamples=200)
    s = sensitivity(frames, comparison)
    table, letters = headline_display(s.means, comparison, s.winners)
    assert letters == {"a": "a", "b": "b", "c": "c"}
    assert list(table.index) == ["nDCG@10", "nDCG@5", "nDCG@3"]  # all default conventions
    assert table.loc["nDCG@10", "winner"] == "tie: a = b"  # the letters of the top group
    assert table.loc["nDCG@5", "winner"] == "a"
    assert table.loc["nDCG@5", "a"] == f"{s.means.at['nDCG@5', 'a']:.4f}^bc"
    assert table.loc["nDCG@10", "a"] == f"{s.means.at['nDCG@10', 'a']:.4f}^c"
    untested, _ = headline_display(s.means, comparison, sensitivity(frames).winners)
    assert untested.loc["nDCG@5", "winner"] == "a (untested)"
