"""Recompute a logged comparison (``harness reproduce <comparison run id>``).

A comparison of run files (``harness compare --qrels ... --log``) names its files and their
sha256 instead: they are checked and the comparison computed again from them.

The comparison run's ``comparison.json`` names the ranker runs of every version and the
sha256 of each per-query artifact it read. They are downloaded again and checked against
those digests (an altered or deleted artifact is an error naming it), the paired tests and
the verdicts (and their changes across metric definitions) are recomputed with the options
recorded, and every number of the logged ``comparison.csv``, ``verdicts.csv`` and
``verdict_changes.csv`` is compared with the recomputed one (as both read back from CSV, so
the same rounding applies to both).
"""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.compare.file_record import FILES_KIND, recompute
from harness.compare.record import COMPARISON_ROLE, SPEC_ARTIFACT
from harness.compare.runs import load_versions
from harness.compare.verdict_shifts import CHANGES_FILE
from harness.compare.workflow import sweep_tables
from harness.errors import HarnessError
from harness.reproduce.checks import ReproduceError, read_artifact

__all__ = ["ComparisonResult", "reproduce_comparison", "is_comparison", "comparison_lines"]

#: Columns naming a row of each table (the rest are its numbers and words).
KEYS = {"comparison.csv": ("variant", "ranker_a", "ranker_b"),
        "verdicts.csv": ("variant", "candidate", "baseline"),
        CHANGES_FILE: ("candidate", "baseline", "metric")}


@dataclass(frozen=True)
class ComparisonResult:
    """``differences``: one ``(table, row, column, logged, now)`` per value that differs."""

    run_id: str
    identical: bool
    n_values: int
    differences: list[tuple[str, str, str, Any, Any]] = field(default_factory=list)
    notes: tuple[str, ...] = ()


def is_comparison(run: Any) -> bool:
    return run.data.tags.get("harness.role") == COMPARISON_ROLE


def _roundtrip(frame: pd.DataFrame) -> pd.DataFrame:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    buffer.seek(0)
    return pd.read_csv(buffer)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (a != a and b != b) or a == b
    return bool(a == b) or (pd.isna(a) and pd.isna(b))


def _diff(name: str, logged: pd.DataFrame, now: pd.DataFrame
          ) -> tuple[int, list[tuple[str, str, str, Any, Any]]]:
    keys = list(KEYS[name])
    old, new = logged.set_index(keys), _roundtrip(now).set_index(keys)
    out = []
    for row in old.index.union(new.index, sort=False):
        label = " / ".join(map(str, row))
        if row not in new.index or row not in old.index:
            out.append((name, label, "(row)", "present" if row in old.index else "absent",
                        "present" if row in new.index else "absent"))
            continue
        for column in old.columns.union(new.columns, sort=False):
            a = old.at[row, column] if column in old.columns else "(absent)"
            b = new.at[row, column] if column in new.columns else "(absent)"
            a, b = (v.item() if isinstance(v, np.generic) else v for v in (a, b))
            if not _same(a, b):
                out.append((name, label, column, a, b))
    return old.size, out


def reproduce_comparison(client: Any, run: Any) -> ComparisonResult:
    """Recompute the comparison logged as ``run`` (an MLflow run of role comparison)."""
    run_id = run.info.run_id
    listed = {a.path for a in client.list_artifacts(run_id)}
    if SPEC_ARTIFACT not in listed:
        raise ReproduceError(f"comparison run {run_id} has no {SPEC_ARTIFACT}; it holds "
                             f"{', '.join(sorted(listed)) or 'none'}")
    with tempfile.TemporaryDirectory(prefix="harness-reproduce-") as tmp:
        files = {name: Path(client.download_artifacts(run_id, name, tmp))
                 for name in (SPEC_ARTIFACT, *KEYS) if name in listed}
        spec = read_artifact(run_id, files[SPEC_ARTIFACT], lambda p: json.loads(p.read_text()))
        logged = {name: read_artifact(run_id, path, pd.read_csv)
                  for name, path in files.items() if name in KEYS}
    if spec.get("kind") == FILES_KIND:  # harness compare --qrels ... --log
        return _reproduce_files(run_id, spec, logged)
    try:
        sweep = load_versions(client.tracking_uri, spec["versions"],
                              allow_subset=spec["allow_subset"],
                              digests=spec["per_query_sha256"], sources=spec["sources"],
                              judgment_digests=spec.get("judgments_sha256"))
        # the tables harness compare computed (comparisons logged before issue 23's ★ have
        # no verdict changes)
        comparison, verdicts, changes = sweep_tables(
            sweep.per_query, spec["variants"], spec["baselines"], spec["options"],
            spec["verdicts"], sweep.intervals)
        now = {"comparison.csv": comparison.tests}
        if verdicts is not None:
            now["verdicts.csv"] = verdicts
        if changes is not None:
            now[CHANGES_FILE] = changes
    except HarnessError as exc:
        raise ReproduceError(f"comparison run {run_id}: {exc}") from None
    n_values, differences = 0, []
    for name, frame in now.items():
        if name not in logged:
            differences.append((name, "(table)", "(all)", "not logged", "recomputed"))
            continue
        n, found = _diff(name, logged[name], frame)
        n_values += n
        differences += found
    notes = (f"versions: {'; '.join(spec['versions'])}; their per-query artifacts match the "
             f"{len(spec['per_query_sha256'])} digests recorded",)
    return ComparisonResult(run_id, not differences, n_values, differences, notes)


def _reproduce_files(run_id: str, spec: dict[str, Any],
                     logged: dict[str, pd.DataFrame]) -> ComparisonResult:
    """A comparison of run files: the files' digests checked, the comparison recomputed and
    its every pair and test compared with the logged ``comparison.csv``."""
    try:
        now = recompute(spec).tests
    except HarnessError as exc:
        raise ReproduceError(f"comparison run {run_id}: {exc}") from None
    if "comparison.csv" not in logged:
        raise ReproduceError(f"comparison run {run_id} has no comparison.csv")
    n_values, differences = _diff("comparison.csv", logged["comparison.csv"], now)
    notes = (f"runs: {', '.join(spec['runs'])}; they and the qrels match the sha256 "
             "recorded",)
    return ComparisonResult(run_id, not differences, n_values, differences, notes)


def comparison_lines(result: ComparisonResult, limit: int = 50) -> list[str]:
    """What ``harness reproduce`` prints for a comparison."""
    head = f"comparison run {result.run_id}:"
    if result.identical:
        lines = [f"{head} identical — {result.n_values} values recomputed"]
    else:
        lines = [f"{head} DIFFERENT — {len(result.differences)} of {result.n_values} values"]
        lines += [f"  {table} {row}, {column}: logged {a!r}, now {b!r}"
                  for table, row, column, a, b in result.differences[:limit]]
        if len(result.differences) > limit:
            lines.append(f"  ... {len(result.differences) - limit} more")
    return lines + [f"  {note}" for note in result.notes]
