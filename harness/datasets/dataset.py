"""The Dataset every ranker scores and every evaluation reads, and its content digest."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Dataset", "content_digest"]


@dataclass(frozen=True)
class Dataset:
    """Candidates to rank plus the judgments to evaluate them with.

    Attributes
    ----------
    name, kind : the configured name and the registry kind (``synthetic``, ``letor``, ...).
    docs : DataFrame with ``qid``, ``docid``, ``split`` ('train' or 'test'), ``label`` (0 where
        unjudged) and the feature columns; the rows rankers score.
    qrels : DataFrame ``qid``, ``docid``, ``label`` of the test split: every judgment, retrieved
        or not, so ``ideal='judged'`` sees unretrieved relevant documents.
    features : names of the feature columns of ``docs``.
    digest : sha256 over the canonical arrays of ``docs`` and ``qrels`` (all rows).
    source : where the data came from (absolute paths, or the generator's settings).
    """

    name: str
    kind: str
    docs: pd.DataFrame
    qrels: pd.DataFrame
    features: tuple[str, ...]
    digest: str
    source: str

    def split(self, name: str) -> pd.DataFrame:
        """The rows of ``docs`` in one split."""
        return self.docs[self.docs["split"] == name]

    @property
    def test(self) -> pd.DataFrame:
        return self.split("test")

    def summary(self) -> dict[str, object]:
        test = self.test
        return {
            "name": self.name,
            "kind": self.kind,
            "digest": self.digest,
            "rows": int(len(self.docs)),
            "test_queries": int(test["qid"].nunique()),
            "test_rows": int(len(test)),
            "judgments": int(len(self.qrels)),
            "features": len(self.features),
        }


def _column_bytes(series: pd.Series) -> bytes:
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        kind = "i8" if pd.api.types.is_integer_dtype(series) else "f8"
        return np.ascontiguousarray(series.to_numpy(dtype="<" + kind)).tobytes()
    joined = _arrow_text_bytes(series)
    if joined is not None:
        return joined
    return "\x1f".join(series.astype(str).tolist()).encode("utf-8")


def _arrow_text_bytes(series: pd.Series) -> bytes | None:
    """The UTF-8 bytes of an Arrow-backed text column without nulls, its values joined by
    ``\x1f``, read from the Arrow buffers (the same bytes as joining the Python strings,
    without making them); None for any other column."""
    import pyarrow as pa

    array = getattr(series.array, "_pa_array", None)
    if array is None or not isinstance(series.dtype, pd.StringDtype):
        return None
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if array.null_count or not (pa.types.is_string(array.type)
                                or pa.types.is_large_string(array.type)) or len(array) == 0:
        return None
    _, off_buf, data_buf = array.buffers()
    kind = np.int64 if pa.types.is_large_string(array.type) else np.int32
    offsets = np.frombuffer(off_buf, dtype=kind)[array.offset: array.offset + len(array) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8)[int(offsets[0]): int(offsets[-1])] \
        if data_buf is not None else np.zeros(0, np.uint8)
    return np.insert(data, offsets[1:-1] - offsets[0], 0x1F).tobytes()


def content_digest(*frames: pd.DataFrame) -> str:
    """sha256 over every row of the frames: column names, dtypes kind and values, in order.

    Unlike MLflow's own dataset digest (which samples the first rows), every value counts.
    """
    h = hashlib.sha256()
    for frame in frames:
        h.update(f"frame:{len(frame)}:{len(frame.columns)}".encode())
        for column in frame.columns:
            h.update(f"\x1e{column}".encode())
            h.update(_column_bytes(frame[column]))
    return h.hexdigest()


#: Dataset options that name files (resolved against the project, logged absolute).
PATH_OPTIONS = ("test_path", "train_path", "qrels_path", "run_path", "path")


def input_files(kind: str, options: Mapping[str, Any]) -> dict[str, Path]:
    """The files a dataset is read from, by role (its path options, and LightGBM ``.query``
    group files beside LETOR data), for digests that name which file changed."""
    files = {k: Path(options[k]) for k in PATH_OPTIONS if options.get(k)}
    if kind == "letor":
        files |= {f"{k}.query": Path(f"{p}.query") for k, p in list(files.items())
                  if Path(f"{p}.query").is_file()}
    return files


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, read in 1 MB blocks: the one file digest of the package
    (input-file tags, the score cache's key of a run file, a parquet run's digest)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
