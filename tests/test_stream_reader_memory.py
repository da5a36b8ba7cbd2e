"""The streaming readers hold one batch of a parquet file, not every row group read so far.

pyarrow's ``ParquetFile`` pre-buffers by default, and its reader then kept the bytes of each
row group it had read until the reader was dropped: one pass over a 110M-row file left 0.85 GB
in Arrow's memory pool (issue 25). The bytes Arrow holds are read off its pool at every batch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.engines import parts
from harness.engines.clustering import cluster_parquet
from harness.engines.stream import iter_query_batches

GROUP_ROWS = 100_000
GROUPS = 20


@pytest.fixture(scope="module")
def many_groups(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    n = GROUP_ROWS * GROUPS
    table = pa.table({"qid": np.repeat(np.arange(n // 100), 100),
                      "docid": rng.permutation(n), "score": rng.random(n),
                      "label": rng.integers(0, 3, n)})
    path = tmp_path_factory.mktemp("groups") / "run.parquet"
    pq.write_table(table, path, row_group_size=GROUP_ROWS)
    return path


def _held(path: Path) -> int:
    """The most bytes Arrow held while the file was streamed, above what it held before
    (read after each batch, the batch itself dropped)."""
    before = pa.default_memory_pool().bytes_allocated()
    held = [before]
    for batch in iter_query_batches(path, batch_rows=GROUP_ROWS // 2):
        del batch
        held.append(pa.default_memory_pool().bytes_allocated())
    assert len(held) > GROUPS
    return max(held) - before


def test_streaming_holds_about_one_row_group(many_groups: Path) -> None:
    group_bytes = GROUP_ROWS * 4 * 8  # one row group, decoded
    assert _held(many_groups) < 4 * group_bytes


def test_a_pre_buffering_reader_grows_with_the_file(many_groups: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same measurement sees the growth the readers avoid (it would catch a return
    to pyarrow's default)."""
    monkeypatch.setattr(parts, "parquet_reader", lambda path: pq.ParquetFile(path))
    monkeypatch.setattr("harness.engines.stream.parquet_reader", parts.parquet_reader)
    group_bytes = GROUP_ROWS * 4 * 8
    assert _held(many_groups) > 8 * group_bytes


def test_top_label_and_clustering_read_without_pre_buffering(
        many_groups: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[bool] = []
    real = pq.ParquetFile

    def spy(path, *args, **kwargs):
        opened.append(kwargs.get("pre_buffer", True))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", spy)
    assert parts.top_label(many_groups, None) == 2.0
    cluster_parquet(many_groups, tmp_path / "clustered.parquet", batch_rows=GROUP_ROWS * 5)
    assert opened and not any(opened)
