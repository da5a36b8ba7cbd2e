"""Evaluate on a Dask cluster: a ``dask.dataframe`` partitioned by qid, the engine's own
numpy kernel on each partition.

A parquet run is cut at query boundaries: the client reads the qid column once (batch by
batch, memory bounded) to find where each query starts, which also checks that the file is
clustered by qid; each partition of the ``dask.dataframe`` (:func:`dask.dataframe.from_map`)
is then a range of whole queries that a worker reads itself, so the file must be readable
at the same path from every worker. An in-memory run is grouped by qid (stable, so each
query keeps its row order) and its partitions are scattered to the workers. Either way,
every query is evaluated whole by :func:`harness.evaluate`, so the per-query table is
identical to the local engine's.

``address`` attaches to a running scheduler (``tcp://host:8786``); without it a local
cluster of processes starts for the call and stops after it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.engines.parts import (
    QrelsByQuery,
    assemble,
    check_options,
    cut_at_queries,
    evaluate_part,
    file_columns,
    memory_parts,
    needs_top_label,
    top_label,
)
from harness.engines.stream import iter_query_batches
from harness.errors import InputError
from harness.metrics.engine.blocked import collection_top_label as memory_top_label
from harness.metrics.engine.evaluate import MetricLike, evaluate
from harness.metrics.vocabulary.definition import Metric
from harness.progress import bars_on, progress

__all__ = ["evaluate_dask", "dask_client", "query_ranges"]

#: Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also fixes glibc's
#: mmap threshold: every large temporary array is then mapped and unmapped afresh, and the
#: engine's kernels ran 2.2x slower with it (7x the page faults). The local cluster leaves it
#: unset, as in the client process.
TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"


@contextlib.contextmanager
def dask_client(address: str | None = None, *, n_workers: int | None = None,
                threads_per_worker: int = 1, memory_limit: str | float | None = "auto"
                ) -> Iterator[Any]:
    """A ``distributed.Client``: attached to the scheduler at ``address``, or to a local
    cluster of ``n_workers`` processes (default: one per core) started here and stopped on
    exit."""
    import dask
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.WARNING)  # not every worker's start/stop
    if address:
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"no Dask scheduler answers at {address}: {exc}",
                             column="engine.address") from None
        with client:
            yield client
        return
    workers = n_workers or os.cpu_count() or 1
    with dask.config.set({TRIM: None}):  # read as the workers start
        cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker,
                               processes=True, memory_limit=memory_limit,
                               dashboard_address=":0")  # any free port
    with cluster, Client(cluster) as client:
        yield client


def query_ranges(path: str | os.PathLike[str], *, partition_rows: int = 2_000_000,
                 qid_column: str = "qid", scan_rows: int = 4_000_000
                 ) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Cut a parquet run at query boundaries into ranges of about ``partition_rows`` rows.

    Returns the ``(start, stop)`` row ranges and the qids in file order. Reads only the qid
    column, ``scan_rows`` at a time, with :func:`~harness.engines.stream.iter_query_batches`,
    which raises :class:`~harness.engines.stream.NotClustered` naming the first query whose
    rows are not contiguous.
    """
    import pyarrow.parquet as pq

    if int(partition_rows) < 1:
        raise InputError(f"partition_rows must be >= 1, got {partition_rows}",
                         column="partition_rows")
    p = Path(path)
    starts: list[np.ndarray] = []
    firsts: list[np.ndarray] = []
    for part in iter_query_batches(p, batch_rows=scan_rows, columns={qid_column: "qid"}):
        q = part["qid"].to_numpy()
        change = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
        starts.append(part.index.to_numpy()[change])
        firsts.append(q[change])
    if not starts:
        raise InputError(f"{p.name} has no rows", table=p.name)
    n_rows = pq.ParquetFile(p).metadata.num_rows
    return cut_at_queries(np.concatenate(starts), n_rows, partition_rows), \
        np.concatenate(firsts)


def _read_rows(part: tuple[str, int, int], roles: Mapping[str, str]) -> pd.DataFrame:
    """Rows ``start:stop`` of a parquet file (the row groups holding them, then a slice),
    indexed by file row, columns renamed to their roles."""
    import pyarrow.parquet as pq

    path, start, stop = part
    f = pq.ParquetFile(path)
    md = f.metadata
    offsets = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])
    first = int(np.searchsorted(offsets, start, side="right")) - 1
    last = int(np.searchsorted(offsets, stop, side="left"))
    table = f.read_row_groups(list(range(first, max(last, first + 1))), columns=list(roles))
    frame = table.slice(start - int(offsets[first]), stop - start).to_pandas()
    frame = frame.rename(columns=dict(roles))
    frame.index = pd.RangeIndex(start, stop)
    return frame


def _evaluate_partition(part: pd.DataFrame, qrels: QrelsByQuery | None,
                        metrics: list[Metric], options: Mapping[str, Any], table: str | None,
                        meta: pd.DataFrame) -> pd.DataFrame:
    out, _ = evaluate_part(part, qrels, metrics, options, table=table)
    if out is None or out.empty:
        return meta
    out.attrs = {}
    return out


def _meta(qid: Any, qrels: pd.DataFrame | None, metrics: list[Metric],
          options: Mapping[str, Any]) -> pd.DataFrame:
    """The empty per-query table the partitions produce (its columns and dtypes)."""
    run = pd.DataFrame({"qid": [qid], "docid": ["d"], "score": [1.0]})
    judged = pd.DataFrame({"qid": [qid], "docid": ["d"], "label": [0]})  # within any scale
    if qrels is not None and "subtopic" in qrels.columns:  # the intent-aware measures
        judged["subtopic"] = ["0"]
    if qrels is None:
        run["label"] = [0]
    out = evaluate(run, None if qrels is None else judged, metrics,
                   **{k: v for k, v in options.items() if k != "nan_scores"})
    out.attrs = {}
    return out.iloc[:0]


def _partitions_bar(client: Any, frame: Any, name: str) -> Any:
    """``frame`` persisted on the cluster, returned once every partition has finished, with
    a bar over the partitions completed (rate and ETA) on stderr meanwhile. The caller then
    computes the persisted frame exactly as it would have computed ``frame``: same graph,
    same partitions in the same order, so the result is unchanged. A failed partition ends
    its wait too; the compute then raises its error."""
    from distributed import as_completed, futures_of

    persisted = client.persist(frame)
    futures = futures_of(persisted)
    for _ in progress(as_completed(futures), desc=f"evaluate {name}", total=len(futures),
                      unit="part"):
        pass
    return persisted


def evaluate_dask(run: str | os.PathLike[str] | pd.DataFrame, qrels: pd.DataFrame | None = None,
                  metrics: MetricLike | Iterable[MetricLike] = ("ndcg@10",), *,
                  address: str | None = None, client: Any = None,
                  n_workers: int | None = None, threads_per_worker: int = 1,
                  partition_rows: int = 2_000_000, names: Mapping[str, str] | None = None,
                  **options: Any) -> pd.DataFrame:
    """:func:`harness.evaluate` on a Dask cluster.

    Parameters
    ----------
    run : path of a parquet run clustered by qid (readable at that path by every worker),
        or an in-memory run DataFrame
        Columns ``qid``, ``docid``, ``score`` (and ``label`` when ``qrels`` is None).
    qrels, metrics, **options : as in :func:`harness.evaluate` (``weights`` excepted). The
        qrels are grouped by qid and sent once to every worker; each partition is evaluated
        against the judgments of its queries.
    address : str, optional
        Scheduler to attach to, e.g. ``"tcp://10.0.0.5:8786"``. Without it (and without
        ``client``) a local cluster of ``n_workers`` processes runs for this call.
    client : distributed.Client, optional
        A client to use as is (it is not closed).
    partition_rows : int, default 2,000,000
        Rows per partition, on average: partitions hold whole queries, each starting at
        the first query start at or past a multiple of it. A worker holds a few at a time.
    names : mapping, optional
        For a parquet run, the file's column for a role when it differs, e.g.
        ``{"score": "bm25"}``.

    Returns
    -------
    DataFrame
        The per-query table :func:`harness.evaluate` gives for the whole run, value for
        value. Errors in the data name the file row (or the row of the DataFrame).
    """
    import dask.dataframe as dd

    mlist, missing = check_options(metrics, options, "evaluate_dask", qrels)
    if int(partition_rows) < 1:
        raise InputError(f"partition_rows must be >= 1, got {partition_rows}",
                         column="partition_rows")
    if isinstance(run, pd.DataFrame):
        name = "run"
        parts, run_qids = memory_parts(run, partition_rows)
        if needs_top_label(mlist, options):
            options["top_label"] = memory_top_label(run, qrels)
        first_qid = run_qids[0] if len(run_qids) else None
    else:
        path = Path(run).resolve()
        name = path.name
        columns = file_columns(path, qrels, names)
        qid_column = next(c for c, role in columns.items() if role == "qid")
        ranges, run_qids = query_ranges(path, partition_rows=partition_rows,
                                        qid_column=qid_column)
        if needs_top_label(mlist, options):
            options["top_label"] = top_label(path, qrels, names)
        first_qid = run_qids[0]
    if first_qid is None:
        raise InputError("run is empty", table="run")
    meta = _meta(first_qid, qrels, mlist, options)
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(address, n_workers=n_workers, threads_per_worker=threads_per_worker)
          ) as c:
        # grouped by qid once here, so each partition takes its queries' judgments in time
        # that follows the partition (an isin over every judgment per partition grows with
        # rows x partitions)
        judged = None if qrels is None else c.scatter(QrelsByQuery(qrels), broadcast=True,
                                                      hash=False)
        if isinstance(run, pd.DataFrame):
            futures = c.scatter(parts, hash=False)
            frame = dd.from_delayed(futures, meta=parts[0].iloc[:0], verify_meta=False)
        else:
            read = functools.partial(_read_rows, roles=columns)
            frame = dd.from_map(read, [(str(path), a, b) for a, b in ranges],
                                meta=read((str(path), 0, 0)), enforce_metadata=False)
        per_query = frame.map_partitions(_evaluate_partition, judged, mlist, options, name,
                                         meta, meta=meta, enforce_metadata=False,
                                         align_dataframes=False)
        if bars_on():
            per_query = _partitions_bar(c, per_query, name)
        frames = [per_query.compute()]
    if qrels is None:
        unjudged: list[Any] = []
    else:
        known = pd.Index(pd.unique(qrels["qid"]))
        unjudged = [q for q, ok in zip(run_qids, pd.Index(run_qids).isin(known)) if not ok]
    return assemble(frames, qrels, mlist, run_qids, unjudged, missing, name)
