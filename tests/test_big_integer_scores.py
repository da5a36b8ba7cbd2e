"""Integer scores beyond 2**53 are ranked by their exact integer order: float64 would
round 2**53 + 1 down to 2**53 and turn a strict order into a tie (nDCG 0.815 instead
of 1.0). The expected values come from the same run with small scores of the same order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import harness

METRICS = ["ndcg@10", "ap", "P@2", "rr", "ndcg@10(ties=docid)"]


def _runs(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows, judged = [], []
    for q in range(30):
        n = int(rng.integers(1, 12))
        offsets = rng.integers(0, 5, n)  # small offsets: several equal scores per query
        for d in range(n):
            rows.append((f"query-{q:06d}", f"document-{q:03d}-{d:04d}", int(offsets[d])))
            judged.append((f"query-{q:06d}", f"document-{q:03d}-{d:04d}",
                           int(rng.integers(0, 3))))
    small = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    big = small.copy()
    big["score"] = (np.int64(2 ** 62) + small["score"].to_numpy(dtype=np.int64)).astype(np.int64)
    qrels = pd.DataFrame(judged, columns=["qid", "docid", "label"])
    return small, big, qrels


@pytest.mark.parametrize("seed", [0, 1])
def test_big_integer_scores_keep_their_order(seed):
    small, big, qrels = _runs(seed)
    assert (big["score"].to_numpy(np.float64) == 2.0 ** 62).all()  # float64 would tie all
    expected = harness.evaluate(small, qrels, METRICS)
    got = harness.evaluate(big, qrels, METRICS)
    pd.testing.assert_frame_equal(got, expected)
    nullable = big.astype({"score": "Int64"})
    pd.testing.assert_frame_equal(harness.evaluate(nullable, qrels, METRICS), expected)


def test_big_integer_scores_streamed(tmp_path):
    small, big, qrels = _runs(2)
    path = tmp_path / "run.parquet"
    big.to_parquet(path)
    expected = harness.evaluate(small, qrels, METRICS)
    got = harness.evaluate_parquet(path, qrels, METRICS)
    pd.testing.assert_frame_equal(got.sort_index(), expected.sort_index(), check_like=True,
                                  check_dtype=False)
