"""The write stage of a study: every result file in the job's output folder (per-query
tables, summaries with their bootstrap CIs, the check table, config, dataset profile,
environment) and the figures, all before anything is sent to MLflow."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from harness.app.check import check_table
from harness.app.plan import StudyPlan
from harness.app.provenance import environment
from harness.app.results import dump_json, metric_key_map
from harness.datasets import Dataset
from harness.reporting import STATS
from harness.reporting.figures import study_figures
from harness.reporting.summary import summarize_study

__all__ = ["write_outputs", "write_figures"]

log = logging.getLogger("harness")

def write_outputs(plan: StudyPlan, dataset: Dataset, results: Mapping[str, Any],
                  out: Path) -> dict[str, Any]:
    """Write every result file to ``out``; returns their paths by role."""
    metrics = plan.metrics
    max_queries = plan.tracking.bootstrap_max_queries
    written: dict[str, Any] = {"per_query": {}, "summary": {}}
    (out / "per_query").mkdir(parents=True, exist_ok=True)
    # the per-query files are written by a thread while the summaries are computed here:
    # Arrow encodes and compresses without the GIL, numpy sorts and sums likewise (at 1M
    # queries each takes about a second per ranker); both are done before this returns. One
    # thread: each file's conversion holds two copies of its table (0.6 GB at 1M queries)
    # and two at once took the 110M-row study's peak from 1.8 to 1.97 GB. What the thread
    # needs is imported here first: a signal that stops this thread mid-import while the
    # writer imports too can leave the import lock held and the writer waiting for ever
    _import_what_the_writer_needs()
    with ThreadPoolExecutor(max_workers=1) as pool:
        writes = {name: pool.submit(_write_per_query, r.per_query,
                                    out / "per_query" / f"{name}.parquet")
                  for name, r in results.items()}
        # one paired bootstrap for the whole study: a shared resample-index matrix per
        # query set
        summaries = summarize_study({name: r.per_query for name, r in results.items()},
                                    resamples=int(plan.tracking.bootstrap_resamples),
                                    seed=int(plan.seed),
                                    bootstrap_max_queries=max_queries)
        for name, future in writes.items():
            written["per_query"][name] = future.result()
    frames = []
    for name, summary in summaries.tables.items():
        normal = [c for c, m in summaries.ci_methods[name].items() if m == "normal"]
        if normal:
            log.info("ranker %s: 95%% CI of %d variant(s) by the normal approximation "
                     "(more than tracking.bootstrap_max_queries=%s queries)", name, len(normal),
                     max_queries)
        written["summary"][name] = summary
        frames.append(summary.rename_axis("variant").reset_index().assign(ranker=name))
    table = pd.concat(frames, ignore_index=True)[["ranker", "variant", *STATS]]
    table.to_csv(out / "summary.csv", index=False)
    written["summary_csv"] = out / "summary.csv"
    checks = check_table(results)
    checks.to_csv(out / "sklearn_check.csv", index=False)
    written["check_csv"] = out / "sklearn_check.csv"
    written["keys_json"] = dump_json(out / "metric_keys.json", metric_key_map(metrics))
    (out / "config_resolved.yaml").write_text(yaml.safe_dump(plan.record, sort_keys=False))
    written["config_yaml"] = out / "config_resolved.yaml"
    written["dataset_json"] = dump_json(out / "dataset.json", dataset.summary() | {
        "source": dataset.source})
    written["environment_json"] = dump_json(out / "environment.json", environment())
    return written


def _import_what_the_writer_needs() -> None:
    """The modules :func:`_write_per_query` imports on its first call (pandas' parquet
    writer, Arrow's pandas conversion and parquet modules), so that its thread imports
    nothing (tests/test_app_threads.py)."""
    import pandas.io.parquet  # noqa: F401 - imported for the writer thread (docstring)
    import pyarrow.pandas_compat
    import pyarrow.parquet  # noqa: F401 - as above
    from pandas.core.arrays.arrow import extension_types  # noqa: F401 - as above


def _write_per_query(per_query: pd.DataFrame, path: Path) -> Path:
    """One ranker's per-query table as parquet (qid a column, not the index). The
    measures' float columns are written without a dictionary: their values are mostly
    distinct, and trying one cost a third of the write (0.9 against 0.6 s for 1M queries x
    33 columns) for a fifth of the bytes."""
    table = per_query.reset_index()
    table.to_parquet(path, index=False, use_dictionary=[
        c for c in table.columns if not pd.api.types.is_float_dtype(table[c])])
    return path


def write_figures(plan: StudyPlan, results: Mapping[str, Any], out: Path) -> Path | None:
    """Draw the study's figures once into ``out/figures`` (``tracking.figures``: headline,
    all or off; see :func:`harness.reporting.figures.study_figures`); returns the folder,
    or None when no figure was drawn."""
    from harness.progress import progress

    paths = study_figures({name: r.per_query for name, r in results.items()}, plan.metrics,
                          out / "figures", mode=plan.figures, progress=lambda jobs: progress(
                              jobs, desc="figures", unit="fig"))
    return out / "figures" if paths else None
