"""The Dask engine gives exactly the local engine's per-query table (harness.evaluate on the
whole run in memory), from parquet and from memory, with and without qrels."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import harness
from harness.engines.dask import dask_client, evaluate_dask, query_ranges
from harness.engines.stream import NotClustered

METRICS = ["ndcg@10", "ndcg(gain=linear,ties=docid)", "mndcg@5", "ap", "rr", "P@5",
           "recall@10(ideal=retrieved)", "err@10(ties=input)", "ndcg@3(ties=random)",
           "ndcg@5(ties=pessimistic)", "P@3(ties=optimistic)", "ap@5(ties=quicksort)",
           "rr(ties=quicksort2)", "ndcg@3(ties=quicksort_reversed)", "ndcg@5(ties=docid_float32)",
           "judged@5(ties=docid_ascending)"]


def _run(n_queries: int = 150, seed: int = 0, int_qids: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, n_queries)
    order = rng.permutation(n_queries)  # queries in random order, each contiguous
    qid = np.repeat(order if int_qids else [f"q{i:04d}" for i in order], sizes[order])
    n = len(qid)
    run = pd.DataFrame({"qid": qid, "docid": [f"d{j}" for j in range(n)],
                        "score": rng.integers(0, 6, n) / 2.0,  # ties
                        "label": rng.integers(0, 4, n)})
    run.loc[run["qid"] == run["qid"].iloc[0], "label"] = 1  # a first part without grade 3
    run.loc[run.index[-1], "label"] = 7  # the top grade only in the very last row
    return run


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask_client(n_workers=2) as c:
        yield c


def test_every_tie_rule_is_covered() -> None:
    assert {harness.parse_metric(m).ties for m in METRICS} == set(harness.TIE_MODES)


@pytest.mark.parametrize("partition_rows", [1, 37, 10**7])
@pytest.mark.parametrize("int_qids", [False, True])
def test_dask_equals_local_from_parquet(tmp_path: Path, client: Any, partition_rows: int,
                                        int_qids: bool) -> None:
    run = _run(int_qids=int_qids)
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False, row_group_size=100)  # partitions straddle row groups
    expected = harness.evaluate(run, metrics=METRICS)
    got = evaluate_dask(path, metrics=METRICS, client=client, partition_rows=partition_rows)
    pd.testing.assert_frame_equal(got, expected, check_exact=True, check_index_type=False)


@pytest.mark.parametrize("partition_rows", [1, 500])
def test_dask_equals_local_from_memory(client: Any, partition_rows: int) -> None:
    run = _run(seed=3).sample(frac=1.0, random_state=4)  # not clustered: grouped first
    expected = harness.evaluate(run, metrics=METRICS)
    got = evaluate_dask(run, metrics=METRICS, client=client, partition_rows=partition_rows)
    pd.testing.assert_frame_equal(got, expected, check_exact=True, check_index_type=False)


def test_dask_with_qrels_and_missing_queries(tmp_path: Path, client: Any) -> None:
    run = _run(seed=1)
    qrels = run[["qid", "docid", "label"]].sample(frac=0.7, random_state=0)
    qrels = qrels[~qrels["qid"].isin(["q0007", "q0042"])]  # two run queries unjudged
    extra = pd.DataFrame({"qid": ["zz1", "zz1", "q0003"], "docid": ["a", "b", "unretrieved"],
                          "label": [2, 0, 3]})  # a judged query absent from the run
    qrels = pd.concat([qrels, extra], ignore_index=True)
    runs = run.drop(columns="label")
    path = tmp_path / "run.parquet"
    runs.rename(columns={"score": "bm25"}).to_parquet(path, index=False)
    for missing in ("exclude", "zero"):
        expected = harness.evaluate(runs, qrels, METRICS, missing=missing)
        for source, names in ((path, {"score": "bm25"}), (runs, None)):
            got = evaluate_dask(source, qrels, METRICS, client=client, partition_rows=97,
                                missing=missing, names=names)
            pd.testing.assert_frame_equal(got, expected, check_exact=True, check_dtype=False,
                                          check_index_type=False)
            assert sorted(got.attrs["missing_qids"]) == sorted(expected.attrs["missing_qids"])
            assert sorted(got.attrs["unjudged_qids"]) == sorted(expected.attrs["unjudged_qids"])
            assert {"q0007", "q0042"} <= set(got.attrs["unjudged_qids"])


def test_attach_to_a_running_scheduler(tmp_path: Path) -> None:
    from distributed import LocalCluster

    run = _run(seed=5)
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                      dashboard_address=":0") as cluster:
        got = evaluate_dask(path, metrics=METRICS, address=cluster.scheduler_address,
                            partition_rows=200)
        assert len(cluster.scheduler.workers) == 1  # the cluster outlives the call
    pd.testing.assert_frame_equal(got, harness.evaluate(run, metrics=METRICS),
                                  check_exact=True, check_index_type=False)


def test_local_workers_keep_the_default_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dask's nanny would start workers with MALLOC_TRIM_THRESHOLD_=65536 (its
    distributed.yaml) and write it into the client process's environment; with it the
    kernels ran 2.2x slower. The engine's local cluster does neither."""
    import os

    import dask

    assert dask.config.get("distributed.nanny.pre-spawn-environ")["MALLOC_TRIM_THRESHOLD_"]
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # as a fresh process has it
    with dask_client(n_workers=1) as c:
        seen = c.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert list(seen.values()) == [None]
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ


def test_no_scheduler_at_the_address() -> None:
    with pytest.raises(harness.InputError, match=r"no Dask scheduler answers at "
                       r"tcp://127.0.0.1:9.*engine.address"):
        evaluate_dask(_run(n_queries=3), address="tcp://127.0.0.1:9")


def test_unclustered_parquet_is_refused_with_the_fix(tmp_path: Path, client: Any) -> None:
    run = _run(seed=2)
    shuffled = run.sample(frac=1.0, random_state=3).reset_index(drop=True)
    path = tmp_path / "shuffled.parquet"
    shuffled.to_parquet(path, index=False)
    with pytest.raises(NotClustered, match=r"not contiguous.*harness cluster") as e:
        evaluate_dask(path, client=client)
    q, row = e.value.qid, e.value.row  # the named row really starts a second stretch of q
    assert shuffled["qid"].iloc[row] == q and shuffled["qid"].iloc[row - 1] != q
    assert (shuffled["qid"].iloc[:row - 1] == q).any()


def test_errors_name_the_source_row(tmp_path: Path, client: Any) -> None:
    run = _run(seed=6)
    run.loc[len(run) - 40, "score"] = np.nan  # in a late partition
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False, row_group_size=64)
    with pytest.raises(harness.InputError) as local:
        harness.evaluate(run)
    assert local.value.row == len(run) - 40
    for source in (path, run):
        with pytest.raises(harness.InputError) as remote:
            evaluate_dask(source, client=client, partition_rows=50)
        assert remote.value.row == local.value.row
        assert remote.value.qid == local.value.qid and remote.value.column == "score"
        assert "NaN" in str(remote.value)


def test_query_ranges_cut_at_query_starts(tmp_path: Path) -> None:
    run = _run(seed=7)
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False, row_group_size=33)
    ranges, qids = query_ranges(path, partition_rows=100, scan_rows=17)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(run)
    assert all(b == c for (_, b), (c, _) in zip(ranges[:-1], ranges[1:]))
    assert len(ranges) <= -(-len(run) // 100)
    for a, _ in ranges:  # each starts the first query starting at or past a multiple of 100
        assert a == 0 or run["qid"].iloc[a] != run["qid"].iloc[a - 1]
        mark = a // 100 * 100
        assert run["qid"].iloc[mark:a].nunique() <= 1  # rows since the mark: one query
    assert list(qids) == list(pd.unique(run["qid"]))
