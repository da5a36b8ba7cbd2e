"""Rewrite a parquet run clustered by qid, out of core (``harness cluster``):
the streaming and Dask engines need the rows of each query contiguous."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["cluster_parquet"]


def cluster_parquet(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
                    batch_rows: int = 1_000_000, buckets: int | None = None) -> Path:
    """Rewrite a parquet file so the rows of each query are contiguous, out of core.

    Pass 1 streams the file and appends each row to one of ``buckets`` temporary files
    chosen by a hash of its qid; pass 2 sorts each bucket by qid (stable: a query keeps its
    row order) and appends it to ``dst``. Memory holds one batch or one bucket at a time;
    ``buckets`` defaults to the number of ``batch_rows`` batches in the file.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.errors import InputError

    source, target = Path(src), Path(dst)
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InputError(f"batch_rows must be an integer >= 1, got {batch_rows!r}",
                         key="batch_rows")
    try:
        reader = pq.ParquetFile(source)
    except pa.ArrowInvalid as exc:  # truncated, or not parquet at all
        raise InputError(f"{source} is not a readable parquet file: "
                         f"{str(exc).splitlines()[0]}") from None
    n_buckets = buckets or max(1, -(-reader.metadata.num_rows // int(batch_rows)))
    schema = reader.schema_arrow
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        paths = [Path(tmp) / f"bucket{i}.parquet" for i in range(n_buckets)]
        writers: list[Any] = [None] * n_buckets
        try:
            # Arrow tables throughout: every column is kept as stored, the index pandas
            # wrote (``__index_level_0__``) and the schema's pandas metadata included
            for batch in reader.iter_batches(batch_size=int(batch_rows)):
                table = pa.Table.from_batches([batch], schema=schema)
                bucket = pd.util.hash_array(_qids(table)) % np.uint64(n_buckets)
                for b in np.unique(bucket):
                    if writers[b] is None:
                        writers[b] = pq.ParquetWriter(paths[b], schema)
                    writers[b].write_table(table.filter(pa.array(bucket == b)))
        finally:
            for w in writers:
                if w is not None:
                    w.close()
        with pq.ParquetWriter(target, schema) as out:
            for path in paths:
                if path.is_file():
                    table = pq.read_table(path, schema=schema)
                    order = np.argsort(pd.factorize(_qids(table))[0], kind="stable")
                    out.write_table(table.take(pa.array(order)))
    return target


def _qids(table: Any) -> np.ndarray:
    """The ``qid`` column as a NumPy array of its values (a dictionary column decoded)."""
    return np.asarray(table.column("qid").to_pandas())
