"""Evaluate a parquet run larger than memory, streaming it in batches of whole queries.

The file must be *clustered by qid*: the rows of a query are contiguous (any query order).
Batches of about ``batch_rows`` rows are read with pyarrow; the rows of the last query of a
batch are held back and joined to the next batch, so every query is evaluated whole, by the
same vectorised engine as :func:`harness.evaluate`. Peak memory follows ``batch_rows``, not
the file size. A qid that reappears after its rows ended means the file is not clustered;
the error names the query and the command that rewrites the file clustered,
``python -m harness.cluster IN OUT`` (an out-of-core rewrite, see :func:`cluster_parquet`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.metrics.evaluate import MetricLike, as_metrics, evaluate

__all__ = ["evaluate_parquet", "iter_query_batches", "cluster_parquet", "NotClustered"]


class NotClustered(InputError):
    """The rows of a query are not contiguous in the file."""


def _columns(path: Path, qrels: pd.DataFrame | None) -> list[str]:
    import pyarrow.parquet as pq

    names = pq.ParquetFile(path).schema_arrow.names
    wanted = ["qid", "docid", "score"] + (["label"] if qrels is None else [])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(f"parquet run {path.name} lacks column(s) {missing}; it has {names}",
                         table=path.name, column=missing[0])
    return wanted


def iter_query_batches(path: str | os.PathLike[str], *, batch_rows: int = 1_000_000,
                       columns: list[str] | None = None) -> Iterator[pd.DataFrame]:
    """Yield DataFrames of whole queries, about ``batch_rows`` rows each, from a parquet
    file clustered by qid. Raises :class:`NotClustered` naming the first qid seen twice."""
    import pyarrow.parquet as pq

    if int(batch_rows) < 1:
        raise InputError(f"batch_rows must be >= 1, got {batch_rows}", column="batch_rows")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"parquet run not found: {p}")
    reader = pq.ParquetFile(p)
    seen: set[Any] = set()
    carry: pd.DataFrame | None = None
    offset = 0  # file row of the first row of ``carry`` / the batch
    for batch in reader.iter_batches(batch_size=int(batch_rows), columns=columns):
        frame = batch.to_pandas()
        if carry is not None:
            frame = pd.concat([carry, frame], ignore_index=True)
        if frame.empty:
            continue
        qid = frame["qid"].to_numpy()
        last = qid[-1]
        tail = len(frame) - int(np.argmax(qid[::-1] != last)) if (qid != last).any() else 0
        done, carry = frame.iloc[:tail], frame.iloc[tail:]
        if len(done):
            _check_new(done, seen, p, offset)
            yield done.reset_index(drop=True)
            offset += len(done)
    if carry is not None and len(carry):
        _check_new(carry, seen, p, offset)
        yield carry.reset_index(drop=True)


def _check_new(frame: pd.DataFrame, seen: set[Any], path: Path, offset: int) -> None:
    """Every qid of ``frame`` must be new, and contiguous within ``frame``."""
    qid = frame["qid"]
    change = np.flatnonzero(qid.to_numpy()[1:] != qid.to_numpy()[:-1]) + 1
    starts = np.concatenate(([0], change))
    firsts = qid.iloc[starts]
    repeated = firsts.duplicated() | firsts.isin(seen)
    if repeated.any():
        i = int(np.flatnonzero(repeated.to_numpy())[0])
        row = offset + int(starts[i])
        raise NotClustered(
            f"the rows of query {firsts.iloc[i]!r} are not contiguous in {path.name} (it "
            f"appears again at row {row}); rewrite the file clustered by qid with: "
            f"python -m harness.cluster {path} {path.with_name(path.stem + '.clustered.parquet')}",
            table=path.name, column="qid", qid=firsts.iloc[i], row=row)
    seen.update(firsts.tolist())


def evaluate_parquet(path: str | os.PathLike[str], qrels: pd.DataFrame | None = None,
                     metrics: MetricLike | Iterable[MetricLike] = ("ndcg@10",), *,
                     batch_rows: int = 1_000_000, **options: Any) -> pd.DataFrame:
    """:func:`harness.evaluate` over a parquet run too large for memory.

    Parameters
    ----------
    path : parquet file with columns ``qid``, ``docid``, ``score`` (and ``label`` when
        ``qrels`` is None), clustered by qid.
    qrels, metrics, **options : as in :func:`harness.evaluate` (``weights`` excepted). The
        qrels are held in memory; each batch is evaluated against the judgments of its
        queries, so ``missing='zero'`` adds the judged queries no batch held at the end.
    batch_rows : int, default 1,000,000
        Rows read at a time; peak memory grows with it, not with the file.

    Returns
    -------
    DataFrame
        The same per-query table :func:`harness.evaluate` gives for the whole file, sorted
        by qid (values are identical: each query is evaluated whole, by the same code).
    """
    mlist = as_metrics(metrics)
    if "weights" in options:
        raise InputError("evaluate_parquet does not take weights; pass them to aggregate",
                         column="weights")
    p = Path(path)
    columns = _columns(p, qrels)
    missing = options.pop("missing", "exclude")
    if options.get("top_label") is None and any(
            m.name in ("mndcg", "err") and m.max_label is None for m in mlist):
        options["top_label"] = _top_label(p, qrels)  # one top grade for every batch
    frames, unjudged = [], []
    by_qid = qrels.groupby("qid", sort=False) if qrels is not None else None
    judged_seen: set[Any] = set()
    for chunk in iter_query_batches(p, batch_rows=batch_rows, columns=columns):
        sub = None
        if by_qid is not None:
            keys = [q for q in pd.unique(chunk["qid"]) if q in by_qid.groups]
            judged_seen.update(keys)
            if not keys:
                unjudged.extend(pd.unique(chunk["qid"]).tolist())
                continue
            sub = qrels.loc[np.concatenate([by_qid.indices[k] for k in keys])]
        out = evaluate(chunk, sub, mlist, missing="exclude", **options)
        unjudged.extend(out.attrs.get("unjudged_qids", []))
        frames.append(out)
    if not frames:
        raise InputError(f"no query of {p.name} is judged", table=p.name)
    result = pd.concat(frames).sort_index()
    absent = [] if qrels is None else sorted(set(qrels["qid"]) - judged_seen, key=str)
    if missing == "zero" and absent:
        zeros = pd.DataFrame(0.0, index=pd.Index(absent, name="qid"), columns=result.columns)
        stats = qrels[qrels["qid"].isin(absent)].groupby("qid")["label"]
        zeros["n_docs"] = 0
        zeros["n_judged"] = stats.size().reindex(absent).to_numpy()
        level = {m.level for m in mlist if m.binary}
        threshold = level.pop() if len(level) == 1 else 1
        zeros["n_relevant"] = stats.apply(lambda s: int((s >= threshold).sum())).reindex(
            absent).to_numpy()
        result = pd.concat([result, zeros.astype(result.dtypes.to_dict())]).sort_index()
        absent = []
    result.attrs["missing_qids"] = absent
    result.attrs["unjudged_qids"] = unjudged
    return result


def _top_label(path: Path, qrels: pd.DataFrame | None) -> float:
    """The highest label of the whole collection: the qrels', or the file's (read from the
    label column alone, batch by batch)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if qrels is not None:
        return float(pd.to_numeric(qrels["label"]).max())
    top = -np.inf
    for batch in pq.ParquetFile(path).iter_batches(columns=["label"]):
        value = pc.max(batch.column(0)).as_py()
        if value is not None:
            top = max(top, float(value))
    return float(top)


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

    source, target = Path(src), Path(dst)
    reader = pq.ParquetFile(source)
    n_buckets = buckets or max(1, -(-reader.metadata.num_rows // int(batch_rows)))
    schema = reader.schema_arrow
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        paths = [Path(tmp) / f"bucket{i}.parquet" for i in range(n_buckets)]
        writers: list[Any] = [None] * n_buckets
        try:
            for batch in reader.iter_batches(batch_size=int(batch_rows)):
                frame = batch.to_pandas()
                bucket = pd.util.hash_array(frame["qid"].to_numpy()) % np.uint64(n_buckets)
                for b in np.unique(bucket):
                    part = pa.Table.from_pandas(frame[bucket == b], schema=schema,
                                                preserve_index=False)
                    if writers[b] is None:
                        writers[b] = pq.ParquetWriter(paths[b], schema)
                    writers[b].write_table(part)
        finally:
            for w in writers:
                if w is not None:
                    w.close()
        with pq.ParquetWriter(target, schema) as out:
            for path in paths:
                if path.is_file():
                    frame = pq.read_table(path).to_pandas()
                    order = np.argsort(pd.factorize(frame["qid"])[0], kind="stable")
                    out.write_table(pa.Table.from_pandas(frame.iloc[order], schema=schema,
                                                         preserve_index=False))
    return target
