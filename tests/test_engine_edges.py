"""Edges a bad-input sweep found: huge cut-offs and boolean labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import harness
from harness.errors import InputError

HUGE = 10**12


def _run(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(f"q{q}", f"d{d}", float(np.round(rng.random(), 1)), int(rng.integers(0, 4)))
            for q in range(30) for d in range(int(rng.integers(1, 25)))]
    return pd.DataFrame(rows, columns=["qid", "docid", "score", "label"])


@pytest.mark.parametrize("name", ["ndcg", "dcg", "ap", "rr", "recall", "err"])
def test_a_cut_off_beyond_every_list_is_the_whole_list(name: str) -> None:
    run = _run()
    whole = harness.evaluate(run, metrics=[harness.Metric(name)]).iloc[:, -1]
    huge = harness.evaluate(run, metrics=[harness.Metric(name, k=HUGE)]).iloc[:, -1]
    np.testing.assert_array_equal(huge.to_numpy(), whole.to_numpy())


def test_precision_at_a_huge_k_divides_by_k_without_allocating_it() -> None:
    run = _run(1)
    hits = run.assign(rel=run["label"] >= 1).groupby("qid")["rel"].sum()
    got = harness.evaluate(run, metrics=["precision@1000000000000"]).iloc[:, -1]
    np.testing.assert_allclose(got.to_numpy(), (hits / HUGE).reindex(got.index).to_numpy(),
                               rtol=1e-15, atol=0)


def test_mndcg_refuses_a_cut_off_it_cannot_sum() -> None:
    with pytest.raises(InputError, match="k above 10,000,000 is refused"):
        harness.evaluate(_run(), metrics=[harness.Metric("mndcg", k=HUGE)])
    # a k beyond the lists but within the bound still divides by k top-grade positions
    run = pd.DataFrame({"qid": ["a", "a"], "docid": ["x", "y"], "score": [2.0, 1.0],
                        "label": [3, 0]})
    got = harness.evaluate(run, metrics=[harness.Metric("mndcg", k=4, max_label=3)]).iloc[0, -1]
    ideal = 7 * sum(1 / np.log2(i + 2) for i in range(4))
    assert got == pytest.approx(7 / ideal, rel=1e-15)


def test_boolean_labels_are_zero_and_one() -> None:
    run = _run(2)
    binary = run.assign(label=run["label"] >= 2)
    as_int = binary.assign(label=binary["label"].astype(int))
    metrics = ["ndcg@10", "ap", "rr", "precision@5"]
    pd.testing.assert_frame_equal(harness.evaluate(binary, metrics=metrics),
                                  harness.evaluate(as_int, metrics=metrics))
    qrels = binary[["qid", "docid", "label"]]
    pd.testing.assert_frame_equal(
        harness.evaluate(binary[["qid", "docid", "score"]], qrels, metrics),
        harness.evaluate(as_int[["qid", "docid", "score"]], as_int[["qid", "docid", "label"]],
                         metrics))
    with pytest.raises(InputError, match="booleans"):  # a boolean score is still refused
        harness.evaluate(run.assign(score=run["score"] > 0.5), metrics=metrics)
