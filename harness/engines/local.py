"""The local engine: the whole run in memory, evaluated by :func:`harness.evaluate`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from harness.engines.parts import file_columns
from harness.metrics.engine.evaluate import evaluate
from harness.metrics.vocabulary.definition import Metric

__all__ = ["evaluate_run", "evaluate_file"]


def evaluate_run(run: pd.DataFrame, qrels: pd.DataFrame | None, metrics: Iterable[Metric],
                 **options: Any) -> pd.DataFrame:
    """The per-query table of an in-memory run."""
    return evaluate(run, qrels, metrics, **options)


def evaluate_file(path: str | Path, qrels: pd.DataFrame | None, metrics: Iterable[Metric],
                  names: Mapping[str, str] | None = None, **options: Any) -> pd.DataFrame:
    """The per-query table of a parquet run read whole into memory (``names`` maps roles
    to the file's columns)."""
    import pyarrow.parquet as pq

    p = Path(path)
    columns = file_columns(p, qrels, names)
    run = pq.read_table(p, columns=list(columns)).to_pandas().rename(columns=columns)
    return evaluate(run, qrels, metrics, **options)
