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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError, plain
from harness.metrics.definition import Metric
from harness.metrics.evaluate import MetricLike, as_metrics, evaluate
from harness.metrics.weighting import EMPTY_ATTR, merge_empty

__all__ = ["evaluate_parquet", "iter_query_batches", "cluster_parquet", "NotClustered"]


class NotClustered(InputError):
    """The rows of a query are not contiguous in the file."""


ROLES = ("qid", "docid", "score", "label")


def column_names(names: Mapping[str, str] | None) -> dict[str, str]:
    """The file column of each role (qid, docid, score, label); unnamed roles keep theirs."""
    out = {r: r for r in ROLES}
    for role, column in (names or {}).items():
        if role not in out:
            raise InputError(f"unknown column role {role!r}; roles are {list(ROLES)}",
                             column=str(role))
        out[role] = str(column)
    return out


def file_columns(path: Path, qrels: pd.DataFrame | None,
             names: Mapping[str, str] | None = None) -> dict[str, str]:
    """File column -> role, for the roles this evaluation reads (checked against the file)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise InputError(f"parquet run not found: {path}")
    have = pq.ParquetFile(path).schema_arrow.names
    roles = column_names(names)
    wanted = ["qid", "docid", "score"] + (["label"] if qrels is None else [])
    missing = [roles[r] for r in wanted if roles[r] not in have]
    if missing:
        raise InputError(f"parquet run {path.name} lacks column(s) {missing}; it has {have}",
                         table=path.name, column=missing[0])
    return {roles[r]: r for r in wanted}


def iter_query_batches(path: str | os.PathLike[str], *, batch_rows: int = 1_000_000,
                       columns: Mapping[str, str] | list[str] | None = None
                       ) -> Iterator[pd.DataFrame]:
    """Yield DataFrames of whole queries, about ``batch_rows`` rows each, from a parquet
    file clustered by qid; each is indexed by file row. ``columns`` lists the columns to
    read, or maps file columns to the names they take (the qid column must end up ``qid``).
    Raises :class:`NotClustered` naming the first qid seen twice."""
    import pyarrow.parquet as pq

    if int(batch_rows) < 1:
        raise InputError(f"batch_rows must be >= 1, got {batch_rows}", column="batch_rows")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"parquet run not found: {p}")
    rename = dict(columns) if isinstance(columns, Mapping) else None
    reader = pq.ParquetFile(p)
    seen: set[Any] = set()
    carry: pd.DataFrame | None = None
    offset = 0  # file row of the first row of ``carry`` / the batch
    for batch in reader.iter_batches(batch_size=int(batch_rows),
                                     columns=None if columns is None else list(columns)):
        frame = batch.to_pandas()
        if rename:
            frame = frame.rename(columns=rename)
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
            done.index = pd.RangeIndex(offset, offset + len(done))
            yield done
            offset += len(done)
    if carry is not None and len(carry):
        _check_new(carry, seen, p, offset)
        carry.index = pd.RangeIndex(offset, offset + len(carry))
        yield carry


def _check_new(frame: pd.DataFrame, seen: set[Any], path: Path, offset: int) -> None:
    """Every qid of ``frame`` must be new, and contiguous within ``frame``."""
    qid = frame["qid"]
    change = np.flatnonzero(qid.to_numpy()[1:] != qid.to_numpy()[:-1]) + 1
    starts = np.concatenate(([0], change))
    firsts = qid.iloc[starts]
    values = firsts.tolist()  # set lookups: O(batch), not O(queries seen so far) as isin
    repeated = firsts.duplicated().to_numpy() | np.fromiter(
        (q in seen for q in values), dtype=bool, count=len(values))
    if repeated.any():
        i = int(np.flatnonzero(repeated)[0])
        raise not_clustered(path, firsts.iloc[i], offset + int(starts[i]))
    seen.update(values)


def not_clustered(path: Path, qid: Any, row: int) -> NotClustered:
    """The error for a query whose rows resume at ``row`` after another query's."""
    return NotClustered(
        f"the rows of query {plain(qid)!r} are not contiguous in {path.name} (it appears "
        f"again at row {row}); rewrite the file clustered by qid with: python -m "
        f"harness.cluster {path} {path.with_name(path.stem + '.clustered.parquet')}",
        table=path.name, column="qid", qid=qid, row=row)


def evaluate_part(part: pd.DataFrame, qrels: pd.DataFrame | None, metrics: list[Metric],
                  options: Mapping[str, Any], table: str | None = None
                  ) -> tuple[pd.DataFrame | None, list[Any]]:
    """Evaluate whole queries ``part`` (indexed by source row) against the judgments of its
    queries; returns (per-query table or None when no query is judged, unjudged qids).
    Errors name the source row (``part``'s index), not the row within the part."""
    if qrels is not None:
        sub = qrels[qrels["qid"].isin(pd.unique(part["qid"]))]
        if sub.empty:
            return None, pd.unique(part["qid"]).tolist()
    else:
        sub = None
    try:
        out = evaluate(part.reset_index(drop=True), sub, metrics, missing="exclude",
                       **options)
    except InputError as exc:
        if exc.row is None or exc.table not in (None, "run") or not len(part):
            raise
        raise exc.at_row(int(part.index[exc.row]), table=table) from None
    return out, list(out.attrs.get("unjudged_qids", []))


def evaluate_parts(parts: Iterable[pd.DataFrame], qrels: pd.DataFrame | None,
                   metrics: list[Metric], options: Mapping[str, Any], missing: str,
                   name: str) -> pd.DataFrame:
    """:func:`evaluate_part` on each part of whole queries, then :func:`assemble`."""
    frames, unjudged, run_qids = [], [], []
    for part in parts:
        run_qids.extend(pd.unique(part["qid"]).tolist())
        out, skipped = evaluate_part(part, qrels, metrics, options, table=name)
        unjudged.extend(skipped)
        if out is not None:
            frames.append(out)
    return assemble(frames, qrels, metrics, run_qids, unjudged, missing, name)


def assemble(frames: list[pd.DataFrame], qrels: pd.DataFrame | None, metrics: list[Metric],
             run_qids: Iterable[Any], unjudged: list[Any], missing: str,
             name: str) -> pd.DataFrame:
    """The per-query tables of the parts as :func:`harness.evaluate` gives the whole: sorted
    by qid, judged queries absent from the run listed (``missing='exclude'``) or scored 0
    (``'zero'``), unjudged run queries in ``attrs``."""
    frames = [f for f in frames if len(f)]
    if not frames:
        raise InputError(f"no query of {name} is judged", table=name)
    empties = merge_empty(frames)
    result = pd.concat(frames).sort_index()
    absent = [] if qrels is None else sorted(set(qrels["qid"]) - set(run_qids), key=str)
    if missing == "zero" and absent:
        zeros = pd.DataFrame(0.0, index=pd.Index(absent, name="qid"), columns=result.columns)
        stats = qrels[qrels["qid"].isin(absent)].groupby("qid")["label"]
        zeros["n_docs"] = 0
        zeros["n_judged"] = stats.size().reindex(absent).to_numpy()
        level = {m.level for m in metrics if m.binary}
        threshold = level.pop() if len(level) == 1 else 1
        zeros["n_relevant"] = stats.apply(lambda s: int((s >= threshold).sum())).reindex(
            absent).to_numpy()
        result = pd.concat([result, zeros.astype(result.dtypes.to_dict())]).sort_index()
        absent = []
    result.attrs["missing_qids"] = absent
    result.attrs["unjudged_qids"] = unjudged
    if empties:
        result.attrs[EMPTY_ATTR] = empties
    return result


def check_options(metrics: MetricLike | Iterable[MetricLike], options: dict[str, Any],
                  engine: str) -> tuple[list[Metric], str]:
    """Parsed metrics and the ``missing`` policy; the rest of ``options`` go to evaluate."""
    mlist = as_metrics(metrics)
    if "weights" in options:
        raise InputError(f"{engine} does not take weights; pass them to aggregate",
                         column="weights")
    missing = options.pop("missing", "exclude")
    if missing not in ("exclude", "zero"):
        raise InputError(f"missing must be 'exclude' or 'zero', got {missing!r}",
                         column="missing")
    return mlist, missing


def needs_top_label(metrics: list[Metric], options: Mapping[str, Any]) -> bool:
    """Whether the collection's top grade must be found first (one for every part)."""
    return options.get("top_label") is None and any(
        m.name in ("mndcg", "err") and m.max_label is None for m in metrics)


def evaluate_parquet(path: str | os.PathLike[str], qrels: pd.DataFrame | None = None,
                     metrics: MetricLike | Iterable[MetricLike] = ("ndcg@10",), *,
                     batch_rows: int = 1_000_000, names: Mapping[str, str] | None = None,
                     **options: Any) -> pd.DataFrame:
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
    names : mapping, optional
        The file's column for a role when it is not the role's name, e.g.
        ``{"score": "bm25", "label": "clicked"}``.

    Returns
    -------
    DataFrame
        The same per-query table :func:`harness.evaluate` gives for the whole file, sorted
        by qid (values are identical: each query is evaluated whole, by the same code).
        Errors in the data name the file row.
    """
    mlist, missing = check_options(metrics, options, "evaluate_parquet")
    p = Path(path)
    columns = file_columns(p, qrels, names)
    if needs_top_label(mlist, options):
        options["top_label"] = top_label(p, qrels, names)  # one top grade for every batch
    parts = iter_query_batches(p, batch_rows=batch_rows, columns=columns)
    return evaluate_parts(parts, qrels, mlist, options, missing, p.name)


def top_label(path: Path, qrels: pd.DataFrame | None,
              names: Mapping[str, str] | None = None) -> float:
    """The highest label of the whole collection: the qrels', or the file's (read from the
    label column alone, batch by batch)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if qrels is not None:
        return float(pd.to_numeric(qrels["label"]).max())
    top = -np.inf
    label = column_names(names)["label"]
    for batch in pq.ParquetFile(path).iter_batches(columns=[label]):
        value = pc.max(batch.column(0)).as_py()
        if value is not None:
            top = max(top, float(value))
    return float(top)


def memory_top_label(run: pd.DataFrame, qrels: pd.DataFrame | None) -> float | None:
    """The top grade :func:`harness.evaluate` would find in the whole of an in-memory run."""
    source = run if qrels is None else qrels
    if "label" not in source.columns:
        return None  # evaluate names the missing column
    return float(pd.to_numeric(source["label"], errors="coerce").max())


def cut_at_queries(start: np.ndarray, n_rows: int, partition_rows: int) -> list[tuple[int, int]]:
    """Row ranges from the query starts: one begins at the first query start at or past
    each multiple of ``partition_rows``."""
    if not len(start):
        return [(0, n_rows)]
    marks = np.arange(0, n_rows, int(partition_rows))
    cuts = np.unique(start[np.minimum(np.searchsorted(start, marks), len(start) - 1)])
    bounds = np.append(cuts, n_rows)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def memory_parts(run: pd.DataFrame, partition_rows: int
                  ) -> tuple[list[pd.DataFrame], np.ndarray]:
    """An in-memory run grouped by qid (stable) and cut at query boundaries."""
    if "qid" not in run.columns:
        raise InputError(f"run lacks column 'qid'; it has {list(run.columns)}", table="run",
                         column="qid")
    codes, uniques = pd.factorize(run["qid"])
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise InputError("missing qid value(s)", table="run", column="qid", row=row)
    run = run.set_axis(pd.RangeIndex(len(run)))  # errors name the row position
    if len(codes) and np.any(np.diff(codes) < 0):
        order = np.argsort(codes, kind="stable")
        run, codes = run.iloc[order], codes[order]
    start = np.flatnonzero(np.diff(codes, prepend=-1)) if len(codes) else codes
    parts = [run.iloc[a:b] for a, b in cut_at_queries(start, len(run), partition_rows)]
    return parts, np.asarray(uniques, dtype=object)


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
