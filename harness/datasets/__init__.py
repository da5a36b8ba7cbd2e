"""Datasets by registry name: ``synthetic``, ``letor``, ``trec``, ``ir_datasets``, ``table``,
``parquet_run``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.datasets.dataset import Dataset, content_digest, file_sha256
from harness.datasets.files import load_ir_datasets, load_letor, load_table, load_trec
from harness.datasets.parquet_run import ParquetRun, load_parquet_run
from harness.datasets.synthetic import make_synthetic
from harness.errors import InputError

__all__ = ["DATASETS", "Dataset", "ParquetRun", "content_digest", "file_sha256", "load_dataset"]

#: kind -> loader taking the config's options as keyword arguments. Never a ``_target_``.
DATASETS: Mapping[str, Callable[..., Dataset]] = {
    "synthetic": make_synthetic,
    "letor": load_letor,
    "trec": load_trec,
    "ir_datasets": load_ir_datasets,
    "table": load_table,
    "parquet_run": load_parquet_run,
}


def load_dataset(kind: str, **options: Any) -> Dataset:
    """Build the dataset of registry kind ``kind`` from its options."""
    if kind not in DATASETS:
        raise InputError(f"unknown dataset kind {kind!r}; known: {', '.join(DATASETS)}",
                         key="dataset.kind")
    return DATASETS[kind](**options)
