"""Streaming evaluation of parquet runs gives exactly the in-memory per-query values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import harness
from harness.engines.clustering import cluster_parquet
from harness.engines.stream import NotClustered, iter_query_batches

METRICS = ["ndcg@10", "ndcg(gain=linear,ties=docid)", "mndcg@5", "ap", "rr", "P@5",
           "recall@10(ideal=retrieved)", "err@10(ties=input)", "rr(ties=quicksort)"]


def _run(n_queries: int = 150, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, n_queries)
    order = rng.permutation(n_queries)  # queries in random order, each contiguous
    qid = np.repeat([f"q{i:04d}" for i in order], sizes[order])
    n = len(qid)
    return pd.DataFrame({"qid": qid, "docid": [f"d{j}" for j in range(n)],
                         "score": rng.integers(0, 6, n) / 2.0,  # ties
                         "label": rng.integers(0, 4, n)})


@pytest.mark.parametrize("batch_rows", [1, 37, 1000, 10**7])
def test_streaming_equals_in_memory(tmp_path: Path, batch_rows: int) -> None:
    run = _run()
    run.loc[run["qid"] == run["qid"].iloc[0], "label"] = 1  # a first batch without grade 3
    run.loc[run.index[-1], "label"] = 7  # the top grade only in the very last row
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False)
    expected = harness.evaluate(run, metrics=METRICS)
    got = harness.evaluate_parquet(path, metrics=METRICS, batch_rows=batch_rows)
    pd.testing.assert_frame_equal(got, expected, check_exact=True, check_index_type=False)


def test_streaming_with_qrels_and_missing_queries(tmp_path: Path) -> None:
    run = _run(seed=1)
    qrels = run[["qid", "docid", "label"]].sample(frac=0.7, random_state=0)
    extra = pd.DataFrame({"qid": ["zz1", "zz1", "q0003"], "docid": ["a", "b", "unretrieved"],
                          "label": [2, 0, 3]})  # a judged query absent from the run
    qrels = pd.concat([qrels, extra], ignore_index=True)
    runs = run.drop(columns="label")
    path = tmp_path / "run.parquet"
    runs.to_parquet(path, index=False)
    for missing in ("exclude", "zero"):
        expected = harness.evaluate(runs, qrels, METRICS, missing=missing)
        got = harness.evaluate_parquet(path, qrels, METRICS, batch_rows=53, missing=missing)
        pd.testing.assert_frame_equal(got, expected, check_exact=True, check_dtype=False,
                                      check_index_type=False)
        assert sorted(got.attrs["missing_qids"]) == sorted(expected.attrs["missing_qids"])


def test_unclustered_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    run = _run(seed=2)
    shuffled = run.sample(frac=1.0, random_state=3)
    path = tmp_path / "shuffled.parquet"
    shuffled.to_parquet(path, index=False)
    with pytest.raises(NotClustered, match=r"not contiguous.*harness cluster"):
        harness.evaluate_parquet(path, metrics="ndcg@10", batch_rows=64)
    fixed = cluster_parquet(path, tmp_path / "clustered.parquet", batch_rows=100)
    got = harness.evaluate_parquet(fixed, metrics=METRICS, batch_rows=64)
    expected = harness.evaluate(shuffled, metrics=METRICS)
    pd.testing.assert_frame_equal(got, expected, check_exact=True, check_index_type=False)
    # clustering keeps each query's rows in their original relative order
    back = pd.read_parquet(fixed)
    for q in ("q0000", "q0100"):
        assert back.loc[back.qid == q, "docid"].tolist() == \
            shuffled.loc[shuffled.qid == q, "docid"].tolist()


def test_batches_hold_whole_queries(tmp_path: Path) -> None:
    run = _run(seed=4)
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False)
    seen: list[str] = []
    for batch in iter_query_batches(path, batch_rows=10):
        qids = pd.unique(batch["qid"]).tolist()
        assert not set(qids) & set(seen)
        seen.extend(qids)
    assert len(seen) == run["qid"].nunique()
    with pytest.raises(harness.InputError, match="batch_rows must be >= 1"):
        next(iter_query_batches(path, batch_rows=0))


def test_cluster_command(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.parquet", tmp_path / "out.parquet"
    _run(seed=5).sample(frac=1.0, random_state=1).to_parquet(src, index=False)
    done = subprocess.run([sys.executable, "-m", "harness", "cluster", str(src), str(dst),
                           "--batch-rows", "200"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "clustered by qid" in done.stdout
    harness.evaluate_parquet(dst, metrics="ndcg@10", batch_rows=50)  # no NotClustered
    bad = subprocess.run([sys.executable, "-m", "harness", "cluster", str(tmp_path / "no.parquet"),
                          str(dst)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")


@pytest.mark.parametrize("batch_rows", [1, 53, 10**7])
def test_several_score_columns_in_one_pass(tmp_path: Path, batch_rows: int) -> None:
    """Each batch read once, every score column evaluated: each column's table is the one
    harness.evaluate gives for that column alone (labels in the file, or qrels with a
    judged query absent from the run and missing='zero')."""
    from harness.engines.parts import PassClock
    from harness.engines.stream import evaluate_parquet_scores

    # batches of 1 and 53 rows: 40 queries (~800 rows) cut at every row or mid-query
    run = _run(n_queries=40 if batch_rows < 100 else 150, seed=7)
    rng = np.random.default_rng(8)
    run["bm25"] = rng.integers(0, 4, len(run)) / 3.0
    run["dense"] = rng.normal(size=len(run)).round(1)
    path = tmp_path / "run.parquet"
    run.rename(columns={"qid": "q"}).to_parquet(path, index=False)
    clock = PassClock()
    got = evaluate_parquet_scores(path, None, METRICS, ["bm25", "dense", "score"],
                                  batch_rows=batch_rows, names={"qid": "q"}, clock=clock)
    for column in ("bm25", "dense", "score"):
        expected = harness.evaluate(run.drop(columns=["score", "bm25", "dense"]).assign(
            score=run[column]), metrics=METRICS)
        pd.testing.assert_frame_equal(got[column], expected, check_exact=True,
                                      check_index_type=False)
    assert clock.rows == len(run) and set(clock.scores) == {"bm25", "dense", "score"}
    assert all(s > 0 for s in clock.scores.values()) and clock.read > 0
    qrels = run[["qid", "docid", "label"]].sample(frac=0.6, random_state=1)
    qrels = pd.concat([qrels, pd.DataFrame({"qid": ["zz"], "docid": ["a"], "label": [2]})])
    got = evaluate_parquet_scores(path, qrels, METRICS, ["dense", "bm25"],
                                  batch_rows=batch_rows, names={"qid": "q"}, missing="zero")
    for column in ("dense", "bm25"):
        expected = harness.evaluate(run[["qid", "docid"]].assign(score=run[column]), qrels,
                                    METRICS, missing="zero")
        pd.testing.assert_frame_equal(got[column], expected, check_exact=True,
                                      check_dtype=False, check_index_type=False)
        assert "zz" in got[column].index


def test_score_columns_named_like_a_role_cannot_share_a_pass(tmp_path: Path) -> None:
    from harness.engines.stream import evaluate_parquet_scores

    run = _run(seed=9).rename(columns={"qid": "q"}).assign(qid=1.0)
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False)
    with pytest.raises(harness.InputError, match="'qid' is a role's name") as exc:
        evaluate_parquet_scores(path, None, "ndcg@10", ["score", "qid"], names={"qid": "q"})
    assert exc.value.column == "qid"
