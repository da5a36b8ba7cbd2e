"""The metric engine against the ndcg@k LightGBM reported for saved lambdarank predictions.

Data (read in place, see the shared data ``README.md``): labels are the first token of each
line of ``rank.{train,test}``, query groups are the consecutive row counts in
``rank.{train,test}.query``, scores are ``reference/rank.{train,test}.pred`` and the expected
means are ``reference/reference_ndcg.json`` (written from LightGBM's own evaluation).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_svmlight_file

import harness

SPLITS = ("train", "test")
KS = (1, 3, 5, 10)
TOL = 1e-12


@functools.cache
def _load(split: str, data: Path) -> pd.DataFrame:
    """The run: qid = group index, docid = row index within the file, score, label."""
    folder = data / "lightgbm_lambdarank"
    _, labels = load_svmlight_file(str(folder / f"rank.{split}"), n_features=301)
    sizes = np.loadtxt(folder / f"rank.{split}.query", dtype=np.int64, ndmin=1)
    scores = np.loadtxt(folder / "reference" / f"rank.{split}.pred", dtype=np.float64, ndmin=1)
    assert sizes.sum() == len(labels) == len(scores), "groups, labels and predictions disagree"
    return pd.DataFrame({
        "qid": np.repeat(np.arange(len(sizes)), sizes),
        "docid": np.arange(len(labels)),
        "score": scores,
        "label": labels,
    })


@functools.cache
def _reference(data: Path) -> dict:
    with (data / "lightgbm_lambdarank" / "reference" / "reference_ndcg.json").open() as fh:
        return json.load(fh)


@pytest.fixture
def run(shared_data: Path):
    return lambda split: _load(split, shared_data)


@pytest.fixture
def reference(shared_data: Path) -> dict:
    return _reference(shared_data)


def _means(run: pd.DataFrame, **options) -> dict[int, float]:
    metrics = {k: harness.Metric("ndcg", k=k, convention="lightgbm", **options) for k in KS}
    summary = harness.aggregate(harness.evaluate(run, metrics=list(metrics.values())))
    return {k: float(summary.loc[m.display_name, "mean"]) for k, m in metrics.items()}


@pytest.mark.parametrize("split", SPLITS)
def test_data_matches_documented_counts(run, split: str) -> None:
    df = run(split)
    rows, queries = {"train": (3005, 201), "test": (768, 50)}[split]
    assert len(df) == rows and df["qid"].nunique() == queries
    assert set(np.unique(df["label"])) <= {0.0, 1.0, 2.0, 3.0, 4.0}


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("split", SPLITS)
def test_ndcg_matches_lightgbm(run, reference, split: str, k: int) -> None:
    expected = reference[f"ndcg_{split}"][f"ndcg@{k}"]
    actual = _means(run(split))[k]
    assert abs(actual - expected) <= TOL, f"{split} ndcg@{k}: {actual!r} != {expected!r}"


def test_all_zero_queries_score_one(run) -> None:
    """LightGBM counts a query whose labels are all 0 as NDCG 1 (3 such train queries)."""
    df = run("train")
    zero = df.groupby("qid")["label"].max() == 0
    assert int(zero.sum()) == 3
    m = harness.Metric("ndcg", k=10, convention="lightgbm")
    per_query = harness.evaluate(df, metrics=[m])
    assert (per_query.loc[zero[zero].index, m.display_name] == 1.0).all()


def test_train_ties_need_stable_sort(run, reference) -> None:
    """The train predictions hold tied scores: averaging over tie orders must change at
    least one ndcg@k, so matching LightGBM above really relies on ties="input"."""
    df = run("train")
    tied = df.duplicated(["qid", "score"], keep=False)
    assert tied.any()
    averaged = _means(df, ties="average")
    expected = reference["ndcg_train"]
    differs = {k: (averaged[k], expected[f"ndcg@{k}"]) for k in KS
               if abs(averaged[k] - expected[f"ndcg@{k}"]) > TOL}
    assert differs, "ties='average' reproduces every train value; the tie test is vacuous"
