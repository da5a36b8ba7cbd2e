"""A comparison of run files recorded (``harness compare --qrels ... --log``): its files on
disk first, then one MLflow run that ``harness reproduce`` recomputes.

The folder holds ``comparison.csv`` (every pair and test, :attr:`Comparison.tests`),
``table.csv`` (:attr:`Comparison.table`), ``comparison.md`` and ``comparison.json``: the
qrels' and each run's path and sha256, the measures and the settings. The run has the tags
``harness.role=comparison`` and ``harness.compared=files``, the settings as params and each
system's mean per measure as metrics (``mean.<system>.<measure key>``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.compare.api import Comparison
from harness.compare.record import COMPARISON_ROLE, SPEC_ARTIFACT, log_record
from harness.paths import ARTIFACT_ROOT, PENDING_DIR

__all__ = ["FILES_KIND", "file_spec", "write_file_comparison", "log_file_comparison",
           "record_file_comparison", "recompute"]

#: ``comparison.json``'s ``kind`` for a comparison of files
FILES_KIND = "files"


def file_spec(comparison: Comparison, qrels: str | os.PathLike[str],
              runs: Mapping[str, str | os.PathLike[str]]) -> dict[str, Any]:
    """What recomputes ``comparison``: the inputs (absolute paths, sha256) and options."""
    from harness.datasets.dataset import file_sha256

    def entry(path: str | os.PathLike[str]) -> dict[str, str]:
        p = Path(path).resolve()
        return {"path": str(p), "sha256": file_sha256(p)}

    return {"kind": FILES_KIND, "qrels": entry(qrels),
            "runs": {name: entry(path) for name, path in runs.items()},
            "metrics": list(comparison.measures), "options": {
                k: getattr(comparison.settings, k) for k in ("baseline", "test", "correction",
                                                             "alpha", "seed", "resamples")}}


def write_file_comparison(comparison: Comparison, directory: Path,
                          spec: Mapping[str, Any]) -> Path:
    """The comparison's files in ``directory`` (created), before anything is logged."""
    directory.mkdir(parents=True, exist_ok=True)
    comparison.tests.to_csv(directory / "comparison.csv", index=False)
    comparison.table.to_csv(directory / "table.csv")
    (directory / "comparison.md").write_text(comparison.to_markdown())
    (directory / SPEC_ARTIFACT).write_text(json.dumps(spec, indent=1) + "\n")
    return directory


def log_file_comparison(comparison: Comparison, directory: Path, spec: Mapping[str, Any],
                        *, tracking_uri: str | None, experiment: str,
                        pending_dir: str | os.PathLike[str] = PENDING_DIR,
                        artifact_root: str = ARTIFACT_ROOT) -> str:
    """Log the comparison written in ``directory`` as a run of ``experiment``; returns its
    id. Raises TrackingUnavailable (the log plan left pending for ``harness sync``) when
    the store cannot be reached."""
    from harness.metrics.vocabulary.definition import parse_metric
    from harness.tracking import RunRecord, resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    keys = {m: parse_metric(m).key for m in comparison.measures}
    options = spec["options"]
    params = {k: str(v) for k, v in options.items()} | {
        "runs": ", ".join(spec["runs"]), "qrels": Path(spec["qrels"]["path"]).name,
        "measures": ", ".join(comparison.measures)[:6000]}
    metrics = {f"mean.{system}.{keys[m]}"[:250]: float(comparison.table.loc[system, (m, "mean")])
               for system in comparison.systems for m in comparison.measures}
    reference = comparison.settings.reference
    now = int(time.time() * 1000)
    record = RunRecord(
        key=COMPARISON_ROLE, name=f"compare files: {', '.join(spec['runs'])}"[:250],
        tags={"harness.role": COMPARISON_ROLE, "harness.compared": FILES_KIND,
              "harness.baseline": str(options["baseline"] or ""),
              "mlflow.note.content": f"Runs compared against {reference}:\n\n"
                                     + comparison.to_markdown()},
        params=params, metrics=metrics, artifacts=[[str(directory), ""]],
        start_ms=now, end_ms=now)
    return log_record(record, uri, experiment, directory, pending_dir=pending_dir,
                      artifact_root=artifact_root, suffix="compare-files")


def record_file_comparison(comparison: Comparison, qrels: str | os.PathLike[str],
                           runs: Mapping[str, str | os.PathLike[str]], *, out_dir: str,
                           tracking_uri: str | None, experiment: str,
                           pending_dir: str | os.PathLike[str] = PENDING_DIR,
                           artifact_root: str = ARTIFACT_ROOT) -> tuple[Path, str]:
    """Write the comparison of these files under ``<out_dir>/files/<time>/`` and log it
    (:func:`write_file_comparison`, :func:`log_file_comparison`); returns the folder and
    the run id."""
    from harness.paths import project_path

    spec = file_spec(comparison, qrels, runs)
    directory = write_file_comparison(comparison, project_path(out_dir) / "files" /
                                      time.strftime("%Y-%m-%d_%H-%M-%S"), spec)
    run_id = log_file_comparison(comparison, directory, spec, tracking_uri=tracking_uri,
                                 experiment=experiment, pending_dir=pending_dir,
                                 artifact_root=artifact_root)
    return directory, run_id


def recompute(spec: Mapping[str, Any]) -> Comparison:
    """The comparison ``spec`` records, computed again from its files after checking each
    file's sha256 (a changed or missing file is an error naming it)."""
    from harness.compare.api import compare
    from harness.datasets.dataset import file_sha256
    from harness.errors import CompareError

    for what, entry in [("qrels", spec["qrels"]), *((f"run {n!r}", e)
                                                     for n, e in spec["runs"].items())]:
        path = Path(entry["path"])
        if not path.is_file():
            raise CompareError(f"{what}: {path} is gone; the comparison read it")
        if file_sha256(path) != entry["sha256"]:
            raise CompareError(f"{what}: {path} changed since the comparison read it (sha256 "
                               f"{entry['sha256'][:12]}... then)")
    return compare(spec["qrels"]["path"], {n: e["path"] for n, e in spec["runs"].items()},
                   spec["metrics"], **spec["options"])
