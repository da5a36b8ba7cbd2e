"""The stream engine cuts its batches for a large grid (rows x variants x score columns within
harness.engines.BATCH_ROW_VARIANTS), and the values do not depend on the cut."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import parse_metric
from harness.engines import BATCH_ROW_VARIANTS, MIN_BATCH_ROWS, Engine


def test_rows_per_batch_follows_the_grid() -> None:
    engine = Engine(kind="stream", batch_rows=2_000_000)
    assert engine.rows_per_batch(1) == 2_000_000  # a few metrics: the whole batch_rows
    assert engine.rows_per_batch(16) == 2_000_000 == BATCH_ROW_VARIANTS // 16
    assert engine.rows_per_batch(32) == 1_000_000
    assert engine.rows_per_batch(32, 2) == 500_000
    assert engine.rows_per_batch(10_000, 2) == MIN_BATCH_ROWS
    assert Engine(kind="stream", batch_rows=50).rows_per_batch(64) == 50  # never above it


def test_cut_batches_give_the_same_values(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    n_q, per = 40, 25
    qid = np.repeat([f"query-{i:06d}" for i in range(n_q)], per)
    docid = [f"document-{i:07d}" for i in range(n_q * per)]
    frame = pd.DataFrame({"qid": qid, "docid": docid,
                          "score": rng.integers(0, 5, n_q * per).astype(float),
                          "weak": rng.integers(0, 3, n_q * per).astype(float),
                          "label": rng.integers(0, 3, n_q * per)})
    path = tmp_path / "run.parquet"
    frame.to_parquet(path, index=False)
    metrics = [parse_metric(m) for m in ("ndcg@10", "AP", "P@5(ties=input)", "err@10")]
    whole, _ = Engine(kind="stream", batch_rows=10**6).evaluate_file_scores(
        path, None, metrics, ["score", "weak"])
    import harness.engines as engines

    monkeypatch.setattr(engines, "BATCH_ROW_VARIANTS", len(metrics) * 2 * per)
    monkeypatch.setattr(engines, "MIN_BATCH_ROWS", 1)
    cut = Engine(kind="stream", batch_rows=10**6)
    assert cut.rows_per_batch(len(metrics), 2) == per  # a query per batch
    import harness.engines.stream as stream

    seen: list[int] = []
    read = stream.iter_query_batches

    def counted(*args, **kwargs):
        for batch in read(*args, **kwargs):
            seen.append(batch["qid"].nunique())
            yield batch

    monkeypatch.setattr(stream, "iter_query_batches", counted)
    parts, _ = cut.evaluate_file_scores(path, None, metrics, ["score", "weak"])
    assert seen == [1] * n_q  # the pass was cut into a batch per query
    for column in ("score", "weak"):
        pd.testing.assert_frame_equal(parts[column], whole[column], check_exact=True)
        assert len(parts[column]) == n_q


@pytest.mark.parametrize("join_bytes", [1, 300])  # every part; every third (128 bytes each)
def test_tables_joined_during_the_pass_give_the_same_table(
        tmp_path, monkeypatch: pytest.MonkeyPatch, join_bytes: int) -> None:
    """The per-query tables of a pass are joined as they come (Tables.JOIN_BYTES): after
    every part, or every few, the table and its empty queries are the unjoined ones."""
    from harness import evaluate, evaluate_parquet
    from harness.engines.parts import Tables

    rng = np.random.default_rng(11)
    n_q, per = 30, 12
    frame = pd.DataFrame({"qid": np.repeat([f"q{i:04d}" for i in range(n_q)], per),
                          "docid": [f"d{i:06d}" for i in range(n_q * per)],
                          "score": rng.integers(0, 4, n_q * per).astype(float),
                          "label": (rng.random(n_q * per) < 0.1).astype(int)})
    path = tmp_path / "run.parquet"
    frame.to_parquet(path, index=False)
    metrics = ["ndcg@10", "AP(empty_weight=mean)", "RR(empty=exclude)", "P@5(ties=input)",
               "err@10(empty_weight=unweighted)"]
    expected = evaluate(frame, None, metrics)
    assert expected.attrs["empty_qids"]["AP(empty_weight=mean)"]  # some queries have no relevant document
    joins: list[int] = []
    real = Tables.append

    def counted(self, table):
        before = self._joined
        real(self, table)
        joins.append(self._joined - before)

    monkeypatch.setattr(Tables, "JOIN_BYTES", join_bytes)
    monkeypatch.setattr(Tables, "append", counted)
    got = evaluate_parquet(path, None, metrics, batch_rows=per * 2)
    assert sum(joins) >= 3  # the pass did join its tables
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.attrs["empty_qids"] == expected.attrs["empty_qids"]
