"""A scored parquet run evaluated where it lies: ``dataset.kind=parquet_run``.

Click logs and judged sets too large for memory arrive as one parquet file with a row per
(query, document): a qid, a docid, a label (or judgments in a separate qrels file) and one
score column per ranker. The file is never loaded whole: rankers of kind ``column`` name a
score column and the configured engine (``stream`` or ``dask``; ``local`` reads the needed
columns into memory) evaluates it in place. The digest is the sha256 of the file's bytes.

``harness scored-run OUT.parquet --queries N`` writes a synthetic run of this
shape (clustered by qid) to try it on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from harness.data.trec import read_qrels
from harness.datasets.dataset import Dataset, content_digest, file_sha256
from harness.errors import InputError

__all__ = ["ParquetRun", "load_parquet_run", "write_scored_run"]


@dataclass(frozen=True)
class ParquetRun(Dataset):
    """A :class:`Dataset` whose rows stay on disk: ``path``, the file column of each role
    (``roles``: qid, docid and label unless the judgments come from ``qrels_path``), and its
    score columns (``features``)."""

    path: Path = Path()
    roles: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    labels_in_file: bool = True
    qrels_path: Path | None = None

    def hash_file(self) -> None:
        """The digest of a run loaded with ``digest_later=True`` (empty until then):
        hashing 0.8 GB takes about a second, which a study spends during its pass over the
        file rather than before it. The one change a frozen dataset allows."""
        if not self.digest:
            object.__setattr__(self, "digest", _digest(self.path, self.qrels_path, self.qrels))

    def names(self, score: str) -> dict[str, str]:
        """Role -> file column for a ranker scoring with column ``score``."""
        return {**self.roles, "score": score}

    def summary(self) -> dict[str, object]:
        return {"name": self.name, "kind": self.kind, "digest": self.digest,
                "rows": self.rows, "test_rows": self.rows, "path": str(self.path),
                "judgments": self.rows if self.labels_in_file else int(len(self.qrels)),
                "features": len(self.features)}


def load_parquet_run(*, name: str, path: str, qid: str = "qid", docid: str = "docid",
                     label: str = "label", qrels_path: str | None = None,
                     digest_later: bool = False) -> ParquetRun:
    """Describe a parquet run without loading it; judgments from its ``label`` column or
    from a TREC qrels file. ``digest_later``: the digest is left empty until
    :meth:`ParquetRun.hash_file`."""
    import pyarrow.parquet as pq
    import pyarrow.types as pat

    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise InputError(f"path file not found: {p}", key="dataset.path")
    try:
        meta = pq.ParquetFile(p)
    except Exception as exc:  # pyarrow raises several types for a file that is not parquet
        raise InputError(f"cannot read {p.name} as parquet: {exc}", table=p.name) from None
    schema = meta.schema_arrow
    roles = {"qid": qid, "docid": docid} | ({} if qrels_path else {"label": label})
    missing = [c for c in roles.values() if c not in schema.names]
    if missing:
        raise InputError(f"parquet run {p.name} lacks column(s) {missing}; it has "
                         f"{schema.names}", table=p.name, column=missing[0])
    if not qrels_path:  # judgments in the file: the label column must hold numbers
        kind = schema.field(label).type
        if not (pat.is_floating(kind) or pat.is_integer(kind) or pat.is_boolean(kind)):
            sample = meta.read_row_group(0, columns=[label]).column(0)[:3].to_pylist() \
                if meta.num_row_groups else []
            raise InputError(f"parquet run {p.name}: label column {label!r} holds {kind}, not "
                             f"numbers (first values {sample}); write grades as integers or "
                             "floats, or give judgments in a TREC file with "
                             "dataset.qrels_path", table=p.name, column=label,
                             key="dataset.label")
    scores = tuple(f.name for f in schema if f.name not in roles.values() and f.name != label
                   and (pat.is_floating(f.type) or pat.is_integer(f.type)))
    if qrels_path:
        qpath = Path(qrels_path).expanduser().resolve()
        if not qpath.is_file():
            raise InputError(f"qrels_path file not found: {qpath}", key="dataset.qrels_path")
        qrels = read_qrels(qpath)
        source = f"{p} + {qpath}"
    else:
        qrels = pd.DataFrame({"qid": [], "docid": [], "label": []})
        qpath, source = None, str(p)
    docs = pd.DataFrame({"qid": [], "docid": [], "split": [], "label": []})
    return ParquetRun(name=name, kind="parquet_run", docs=docs, qrels=qrels, features=scores,
                      digest="" if digest_later else _digest(p, qpath, qrels), source=source,
                      path=p, roles=roles, rows=meta.metadata.num_rows,
                      labels_in_file=not qrels_path, qrels_path=qpath)


def _digest(path: Path, qrels_path: Path | None, qrels: pd.DataFrame | None = None) -> str:
    """The file's sha256; with judgments from a qrels file, the sha256 of that and of the
    judgments' canonical digest."""
    if qrels_path is None:
        return file_sha256(path)
    qrels = read_qrels(qrels_path) if qrels is None else qrels
    return hashlib.sha256((file_sha256(path) + content_digest(qrels)).encode()).hexdigest()


def write_scored_run(path: str | Path, n_queries: int, *, seed: int = 7,
                     chunk_queries: int = 50_000, min_docs: int = 20,
                     max_docs: int = 200) -> int:
    """Write a synthetic scored run clustered by qid, in chunks (memory stays small).

    Columns: ``qid``, ``docid`` (int64), ``label`` (grades 0-4), ``score`` (label-correlated,
    rounded to 2 decimals so ties occur) and ``weak`` (a noisier ranker). Returns the number
    of rows.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    rows = 0
    schema = pa.schema([("qid", pa.int64()), ("docid", pa.int64()), ("score", pa.float64()),
                        ("label", pa.int64()), ("weak", pa.float64())])
    with pq.ParquetWriter(path, schema) as writer:
        for first in range(0, n_queries, chunk_queries):
            nq = min(chunk_queries, n_queries - first)
            sizes = rng.integers(min_docs, max_docs + 1, nq)
            n = int(sizes.sum())
            label = rng.choice(5, size=n, p=[0.5, 0.25, 0.15, 0.07, 0.03])
            noise = rng.normal(size=n)
            writer.write_table(pa.table({
                "qid": np.repeat(np.arange(first, first + nq), sizes),
                "docid": np.arange(rows, rows + n),
                "score": np.round(0.3 * label + noise, 2),
                "label": label,
                "weak": np.round(0.1 * label + noise, 2)}, schema=schema))
            rows += n
    return rows
