"""Bad input found by the fault sweep: each gets a clear error naming what and where, not a
traceback from a library or a silently wrong number."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import harness
from harness.datasets.parquet_run import load_parquet_run
from harness.errors import InputError, MetricDefinitionError
from harness.metrics.engine.evaluate import evaluate_dense


def _run(qids: list) -> pd.DataFrame:
    return pd.DataFrame({"qid": qids, "docid": ["a", "b", "a", "b"], "score": [1, 2, 3, 4],
                         "label": [1, 0, 1, 0]})


def test_int_and_str_ids_in_one_column_are_refused() -> None:
    # 1 and "1" would be two queries that both print as 1
    with pytest.raises(InputError, match=r"1 \(int\) at row 0 and '1' \(str\) at row 1") as e:
        harness.evaluate(_run([1, "1", 2, 2]))
    assert "column 'qid'" in str(e.value) and ".astype(str)" in str(e.value)
    qrels = pd.DataFrame({"qid": [1, 1], "docid": ["a", 7], "label": [1, 0]})
    with pytest.raises(InputError, match=r"column 'docid'") as e:
        harness.evaluate(_run([1, 1, 2, 2]).drop(columns="label"), qrels)
    assert "table 'qrels'" in str(e.value)
    # one type per column is fine, whatever the type
    assert len(harness.evaluate(_run(["1", "1", "2", "2"]))) == 2
    assert len(harness.evaluate(_run([1, 1, 2, 2]))) == 2


def test_all_zero_weights_are_an_error_not_a_nan_mean() -> None:
    per_query = harness.evaluate(_run(["x", "x", "y", "y"]))
    with pytest.raises(InputError, match="sum to 0"):
        harness.aggregate(per_query, weights={"x": 0, "y": 0})
    mean = harness.aggregate(per_query, weights={"x": 0, "y": 2}).at["nDCG@10", "mean"]
    assert mean == pytest.approx(per_query.at["y", "nDCG@10"])


def test_unknown_metric_options_list_the_known_ones() -> None:
    with pytest.raises(MetricDefinitionError, match="unknown Metric option") as e:
        harness.Metric("ndcg", foo=1)
    for known in ("gain", "discount", "ideal", "ties", "empty", "level", "convention"):
        assert known in str(e.value)
    with pytest.raises(MetricDefinitionError, match="did you mean 'gain'"):
        harness.Metric("ndcg", gian="linear")


@pytest.mark.parametrize("y_true, y_score, message", [
    ([[1, 0], [1]], [[0.1, 0.2], [0.3]], "row 0 has 2 items, row 1 has 1"),
    ([["a", "b"]], [[0.1, 0.2]], "y_true must hold numbers, got 'a' at row 0, item 0"),
    ([[1, 0]], [[0.5, "x"]], "y_score must hold numbers, got 'x' at row 0, item 1"),
])
def test_dense_lists_that_are_ragged_or_not_numbers(y_true: list, y_score: list,
                                                    message: str) -> None:
    with pytest.raises(InputError, match=message):
        evaluate_dense(y_true, y_score)


def test_a_parquet_run_with_text_labels_is_refused_when_described(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pd.DataFrame({"qid": ["a", "a"], "docid": ["d1", "d2"], "label": ["1", "0"],
                  "score": [0.1, 0.2]}).to_parquet(path)
    with pytest.raises(InputError, match=r"label column 'label' holds .*string.*\['1', '0'\]"):
        load_parquet_run(name="x", path=str(path))
    pd.DataFrame({"qid": ["a", "a"], "docid": ["d1", "d2"], "label": np.array([1, 0]),
                  "score": [0.1, 0.2]}).to_parquet(path)
    assert load_parquet_run(name="x", path=str(path)).features == ("score",)


@pytest.mark.parametrize("top", [float("nan"), float("inf"), -float("inf"), "high", True])
def test_top_label_must_be_a_finite_number(top) -> None:
    """ERR with top_label=inf gave 2.0 and nan an unrelated message (issue 26)."""
    run = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [1.0, 0.5]})
    qrels = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["a", "b"], "label": [1, 0]})
    with pytest.raises(InputError, match="top_label must be a finite number") as info:
        harness.evaluate(run, qrels, ["err@10"], top_label=top)
    assert info.value.key == "top_label"
    with pytest.raises(InputError, match="above the top grade 0"):  # below a label
        harness.evaluate(run, qrels, ["err@10"], top_label=0)
