"""Rewrite a parquet run clustered by qid, out of core (``harness cluster``):
the streaming and Dask engines need the rows of each query contiguous. A TREC run given
as text is read in blocks and written as parquet the same way, so a run too large to read
as text in memory can be converted first."""

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

    from harness.engines.parts import parquet_reader
    from harness.errors import InputError

    source, target = Path(src), Path(dst)
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InputError(f"batch_rows must be an integer >= 1, got {batch_rows!r}",
                         key="batch_rows")
    if _is_trec_text(source):
        batches, schema, rows = trec_run_batches(source, batch_rows)
    else:
        try:
            reader = parquet_reader(source)
        except pa.ArrowInvalid as exc:  # truncated, or not parquet at all
            raise InputError(f"{source} is not a readable parquet file: "
                             f"{str(exc).splitlines()[0]}") from None
        batches = (pa.Table.from_batches([b], schema=reader.schema_arrow)
                   for b in reader.iter_batches(batch_size=int(batch_rows)))
        schema, rows = reader.schema_arrow, reader.metadata.num_rows
    n_buckets = buckets or max(1, -(-rows // int(batch_rows)))
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        paths = [Path(tmp) / f"bucket{i}.parquet" for i in range(n_buckets)]
        writers: list[Any] = [None] * n_buckets
        try:
            # Arrow tables throughout: every column is kept as stored, the index pandas
            # wrote (``__index_level_0__``) and the schema's pandas metadata included
            for table in batches:
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


def _is_trec_text(path: Path) -> bool:
    """A TREC run as text (plain or gzip), not parquet: parquet files start with PAR1."""
    import gzip

    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
        return fh.read(4) != b"PAR1"


def trec_run_batches(path: Path, batch_rows: int) -> tuple[Any, Any, int]:
    """A TREC run text file (``qid Q0 docid rank score runid``, one space or one tab between
    fields) read in blocks with Arrow's streaming CSV reader, so memory holds one block:
    tables of ``qid``, ``docid`` (strings), ``score`` (float64) and ``run_id``; their schema;
    an estimate of the rows (the file size over the first line's length, for the bucket
    count). A file the streaming reader cannot read is an error naming it and what to do."""
    import gzip

    import pyarrow as pa
    import pyarrow.csv as pcsv

    from harness.errors import InputError

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        first = fh.readline()
    names = ["qid", "q0", "docid", "rank", "score", "run_id"]
    tab = b"\t" in first
    schema = pa.schema([("qid", pa.string()), ("docid", pa.string()),
                        ("score", pa.float64()), ("run_id", pa.string())])
    stream = pa.input_stream(str(path), compression="gzip" if path.suffix == ".gz" else None)
    try:
        reader = pcsv.open_csv(stream, read_options=pcsv.ReadOptions(
            column_names=names, block_size=64 << 20), parse_options=pcsv.ParseOptions(
            delimiter="\t" if tab else " ", quote_char=False), convert_options=pcsv.
            ConvertOptions(column_types={n: schema.field(n).type for n in schema.names},
                           include_columns=schema.names))
    except pa.ArrowInvalid as exc:
        raise InputError(f"{path}: not a TREC run the streaming reader can read "
                         f"({str(exc).splitlines()[0]}); it needs one space or one tab "
                         "between its six fields") from None

    def tables() -> Any:
        try:
            for batch in reader:
                yield pa.Table.from_batches([batch]).select(schema.names).cast(schema)
        except pa.ArrowInvalid as exc:
            raise InputError(f"{path}: not a TREC run the streaming reader can read "
                             f"({str(exc).splitlines()[0]}); it needs one space or one tab "
                             "between its six fields") from None

    size = path.stat().st_size * (4 if path.suffix == ".gz" else 1)
    return tables(), schema, max(1, size // max(len(first), 1))


def _qids(table: Any) -> np.ndarray:
    """The ``qid`` column as a NumPy array of its values (a dictionary column decoded)."""
    return np.asarray(table.column("qid").to_pandas())
