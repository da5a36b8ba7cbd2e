"""Several score columns of one run evaluated together (laid out once) give each column's
table exactly as evaluating that column alone does, and raise the error evaluating the
columns one by one meets first."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import evaluate
from harness.errors import InputError
from harness.metrics.engine.columns import evaluate_columns, score_column

METRICS = ["ndcg@5", "ndcg@10(ties=input,gain=linear)", "ndcg", "mndcg@5", "AP@10", "AP",
           "RR", "P@5(ties=input)", "R@10", "err@10", "bpref", "AP@10(unjudged=condensed)",
           "ndcg(ties=docid)", "infap(ties=docid)", "ndcg@10(unjudged=relevant)",
           "P@5(ties=random)", "ndcg@3(ties=optimistic)"]
SCORES = ["bm25", "dense", "weak"]


@pytest.fixture(scope="module")
def run() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 6_000
    frame = pd.DataFrame({"qid": np.repeat([f"query-{i:04d}" for i in range(n // 40)], 40),
                          "docid": [f"document-{i:06d}" for i in range(n)],
                          "bm25": rng.integers(0, 5, n).astype(float),  # many ties
                          "dense": rng.random(n).round(1),
                          "weak": rng.integers(0, 2, n).astype(float)})
    return frame.sample(frac=1.0, random_state=3).reset_index(drop=True)  # queries mixed


@pytest.fixture(scope="module")
def qrels(run: pd.DataFrame) -> pd.DataFrame:
    rng = np.random.default_rng(12)
    judged = run.sample(frac=0.5, random_state=2)[["qid", "docid"]].iloc[:-40]
    return judged.assign(label=rng.integers(-1, 4, len(judged)))


@pytest.mark.parametrize("options", [{}, {"missing": "zero"}, {"nan_scores": "last"}])
@pytest.mark.parametrize("source", ["qrels", "labelled"])
def test_each_column_gets_the_table_it_gets_alone(run, qrels, source: str,
                                                  options: dict) -> None:
    if source == "labelled":
        run = run.assign(label=np.random.default_rng(4).integers(0, 4, len(run)))
        qrels = None
    options = {**options, "negative_labels": "unjudged"}
    times: list[float] = []
    tables = evaluate_columns(run, qrels, METRICS, SCORES, times=times, **options)
    assert len(tables) == len(times) == 3 and all(t > 0 for t in times)
    for column, table in zip(SCORES, tables):
        alone = evaluate(score_column(run, column, SCORES), qrels, METRICS, **options)
        pd.testing.assert_frame_equal(table, alone, check_exact=True)
        assert table.attrs == alone.attrs
    assert not tables[0].equals(tables[1])


def _with_nan(run: pd.DataFrame, cells: dict[str, int]) -> pd.DataFrame:
    bad = run.copy()
    for column, row in cells.items():
        bad.loc[row, column] = np.nan
    return bad


@pytest.mark.parametrize("cells, row", [({"dense": 70}, 70),
                                        ({"bm25": 900, "dense": 70}, 900),
                                        ({"dense": 70, "weak": 5}, 70)])
def test_the_error_is_the_first_one_by_one_evaluation_meets(run, qrels, cells: dict,
                                                            row: int) -> None:
    bad = _with_nan(run, cells)
    with pytest.raises(InputError) as together:
        evaluate_columns(bad, qrels, METRICS, SCORES, negative_labels="unjudged")
    first = next(c for c in SCORES if c in cells)
    with pytest.raises(InputError) as alone:
        evaluate(score_column(bad, first, SCORES), qrels, METRICS, negative_labels="unjudged")
    assert together.value.row == alone.value.row == row
    assert str(together.value) == str(alone.value)


def test_a_bad_docid_is_met_before_any_score(run, qrels) -> None:
    bad = _with_nan(run, {"dense": 10})
    bad.loc[20, "docid"] = bad.loc[21, "docid"]
    bad.loc[20, "qid"] = bad.loc[21, "qid"]  # a duplicate (qid, docid) pair
    with pytest.raises(InputError, match="duplicate"):
        evaluate_columns(bad, qrels, METRICS, SCORES, negative_labels="unjudged")
