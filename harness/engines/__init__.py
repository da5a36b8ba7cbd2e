"""Evaluation engines by registry name: where the per-query table is computed. One module
each, over the part evaluation they share (:mod:`harness.engines.parts`):

- ``local``: the whole run in memory, :func:`harness.evaluate`;
- ``stream``: whole-query batches of about ``batch_rows`` rows, read from a parquet file
  (:func:`harness.evaluate_parquet`) or cut from an in-memory run; peak memory follows the
  batch, not the data;
- ``dask``: partitions of whole queries on a Dask cluster (:func:`harness.evaluate_dask`),
  the scheduler at ``address`` or a local cluster started for the study.

Every engine evaluates each query whole with the same kernel, so all three give the same
table, value for value (tests/test_dask_engine.py, tests/test_engines.py).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from harness.engines import local, stream
from harness.engines.parts import PassClock
from harness.errors import InputError
from harness.metrics.vocabulary.definition import Metric

__all__ = ["ENGINES", "Engine"]

#: The engine names ``engine.kind`` accepts.
ENGINES = ("local", "stream", "dask")
#: The stream engine's batches hold at most this many rows x variants (x score columns of
#: one pass): a batch's working memory grows with both (about 340 bytes per row at the
#: default grid's 32 variants), so a large grid takes smaller batches (500,000 rows at 32
#: variants, 250,000 for two score columns), a few metrics the whole ``batch_rows``.
BATCH_ROW_VARIANTS = 32_000_000
#: The fewest rows a batch is cut to by :data:`BATCH_ROW_VARIANTS`.
MIN_BATCH_ROWS = 100_000


@dataclass
class Engine:
    """An engine and its settings; use as a context manager (the dask engine holds one
    cluster connection for the whole study)."""

    kind: str = "local"
    batch_rows: int = 2_000_000
    partition_rows: int = 2_000_000
    address: str | None = None
    n_workers: int | None = None
    threads_per_worker: int = 1
    _client: Any = field(default=None, repr=False)
    _stack: contextlib.ExitStack | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in ENGINES:
            raise InputError(f"unknown engine {self.kind!r}; known: {', '.join(ENGINES)}",
                             key="engine.kind")
        for key in ("batch_rows", "partition_rows", "threads_per_worker"):
            if int(getattr(self, key)) < 1:
                raise InputError(f"engine.{key} must be >= 1, got {getattr(self, key)}",
                                 key=f"engine.{key}")
        if self.n_workers is not None and int(self.n_workers) < 1:
            raise InputError(f"engine.n_workers must be >= 1 or null, got {self.n_workers}",
                             key="engine.n_workers")

    @classmethod
    def from_config(cls, options: Mapping[str, Any] | None) -> Engine:
        known = {f.name for f in fields(cls) if not f.name.startswith("_")}
        options = dict(options or {})
        unknown = sorted(set(options) - known)
        if unknown:
            raise InputError(f"unknown engine option(s) {unknown}; known: {sorted(known)}",
                             key=f"engine.{unknown[0]}")
        return cls(**options)

    def __enter__(self) -> Engine:
        if self.kind == "dask":
            from harness.engines.dask import dask_client

            self._stack = contextlib.ExitStack()
            self._client = self._stack.enter_context(dask_client(
                self.address, n_workers=self.n_workers,
                threads_per_worker=self.threads_per_worker))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self._client = None

    def describe(self) -> str:
        if self.kind == "dask":
            if self.address:
                where = f"scheduler {self.address}"
            else:
                workers = len(self._client.scheduler_info()["workers"]) if self._client else \
                    self.n_workers
                where = f"local cluster of {workers} workers"
            return f"dask ({where}, {self.partition_rows:,} rows per partition)"
        if self.kind == "stream":
            return (f"stream (batches of {self.batch_rows:,} rows, fewer for a large grid: "
                    f"at most {BATCH_ROW_VARIANTS:,} rows x variants)")
        return "local (in memory)"

    def rows_per_batch(self, n_variants: int, n_scores: int = 1) -> int:
        """The stream engine's batch for a grid: ``batch_rows``, cut so that rows x variants
        x score columns stays within :data:`BATCH_ROW_VARIANTS` (never below
        :data:`MIN_BATCH_ROWS`, nor above ``batch_rows``)."""
        cap = BATCH_ROW_VARIANTS // max(1, int(n_variants) * int(n_scores))
        return int(min(self.batch_rows, max(MIN_BATCH_ROWS, cap)))

    def column_workers(self, path: str | Path, n_scores: int) -> int:
        """The stream engine's processes for the score columns of one pass: ``n_workers``
        (at most one per column), or when it is null one per core for a file of at least
        :data:`~harness.engines.workers.WORKER_MIN_ROWS` rows (a worker takes about a second
        to start) and this process alone below it; this process alone, too, where it may
        not start workers (:func:`~harness.engines.workers.can_start`)."""
        from harness.engines.workers import WORKER_MIN_ROWS, can_start, cores

        if n_scores < 2:
            return 1
        why = can_start()
        if why is not None:  # e.g. a sweep job of hydra's joblib launcher: the job alone
            if self.n_workers is not None and int(self.n_workers) > 1:
                logging.getLogger("harness").warning(
                    "engine.n_workers=%s: the score columns are evaluated in this process "
                    "alone (%s)", self.n_workers, why)
            return 1
        if self.n_workers is not None:
            return min(int(self.n_workers), n_scores)
        rows = stream.row_count(Path(path)) or 0
        return min(cores(), n_scores) if rows >= WORKER_MIN_ROWS else 1

    def evaluate(self, run: pd.DataFrame, qrels: pd.DataFrame | None,
                 metrics: Iterable[Metric], **options: Any) -> pd.DataFrame:
        """The per-query table of an in-memory run."""
        if self.kind == "local":
            return local.evaluate_run(run, qrels, metrics, **options)
        if self.kind == "dask":
            return self._dask(run, qrels, metrics, None, options)
        metrics = list(metrics)
        return stream.evaluate_memory(run, qrels, metrics,
                                      batch_rows=self.rows_per_batch(len(metrics)),
                                      **options)

    def evaluate_file(self, path: str | Path, qrels: pd.DataFrame | None,
                      metrics: Iterable[Metric], names: Mapping[str, str] | None = None,
                      **options: Any) -> pd.DataFrame:
        """The per-query table of a parquet run, read where it lies (``names`` maps roles
        to the file's columns)."""
        if self.kind == "stream":
            metrics = list(metrics)
            return stream.evaluate_parquet(path, qrels, metrics,
                                           batch_rows=self.rows_per_batch(len(metrics)),
                                           names=names, **options)
        if self.kind == "dask":
            return self._dask(path, qrels, metrics, names, options)
        return local.evaluate_file(path, qrels, metrics, names, **options)

    def evaluate_file_scores(self, path: str | Path, qrels: pd.DataFrame | None,
                             metrics: Iterable[Metric], scores: list[str],
                             names: Mapping[str, str] | None = None,
                             meanwhile: Iterable[Callable[[], Any]] = (), **options: Any
                             ) -> tuple[dict[str, pd.DataFrame], PassClock]:
        """The per-query table of each score column of a parquet run (``names`` maps the
        other roles): in one pass over the file for the stream engine, one evaluation per
        column otherwise; and where the time went. The callables of ``meanwhile`` run in
        this process during the pass (the stream engine: while its workers have work in
        hand), before the columns otherwise."""
        clock = PassClock()
        metrics = list(metrics)
        if self.kind == "stream":
            out = stream.evaluate_parquet_scores(path, qrels, list(metrics), scores,
                                                 batch_rows=self.rows_per_batch(
                                                     len(metrics), len(scores)),
                                                 names=names, clock=clock,
                                                 workers=self.column_workers(path, len(scores)),
                                                 meanwhile=meanwhile, **options)
            return out, clock
        for task in meanwhile:
            task()
        out = {}
        for score in scores:
            t = time.perf_counter()
            out[score] = self.evaluate_file(path, qrels, metrics,
                                            {**(names or {}), "score": score}, **options)
            clock.scores[score] = time.perf_counter() - t
        return out, clock

    def _dask(self, source: Any, qrels: pd.DataFrame | None, metrics: Iterable[Metric],
              names: Mapping[str, str] | None, options: dict[str, Any]) -> pd.DataFrame:
        from harness.engines.dask import evaluate_dask

        if self._client is None:
            raise RuntimeError("the dask engine is used inside `with engine:`")
        return evaluate_dask(source, qrels, metrics, client=self._client,
                             partition_rows=self.partition_rows, names=names, **options)

