"""A comparison as its own MLflow run: what it compared (``comparison.json``: the ranker runs
of each version and the sha256 of each per-query artifact read, every option), the report,
the verdict table, and the verdict as tags and metrics, so that decisions can be searched
(``tags.`harness.verdict` = 'worse'``) and ``harness reproduce`` can recompute one.

Everything is written to the report folder first; the run is then sent as a log plan
(:mod:`harness.tracking.log_plan`): a store that cannot be reached leaves the plan pending
for ``harness sync``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from harness.compare.labeling_verdicts import labeling_count, labeling_lines
from harness.compare.load import Sweep
from harness.compare.verdict_shifts import CHANGES_FILE, change_markdown
from harness.compare.verdicts import PASSING, VERDICT_CODES, VERDICTS
from harness.errors import CompareError, TrackingUnavailable
from harness.paths import ARTIFACT_ROOT, PENDING_DIR, project_path
from harness.version import __version__

if TYPE_CHECKING:
    from harness.compare.result import Comparison
    from harness.compare.verdicts import VerdictSettings

__all__ = ["SPEC_ARTIFACT", "COMPARISON_ROLE", "VERDICT_TAG", "comparison_spec", "log_record",
           "overall_verdict", "write_spec", "log_comparison"]

SPEC_ARTIFACT = "comparison.json"
COMPARISON_ROLE = "comparison"
VERDICT_TAG = "harness.verdict"


def comparison_spec(sweep: Sweep, comparison: Comparison, verdicts: pd.DataFrame | None,
                    variants: list[str] | None,
                    verdict_settings: VerdictSettings | None = None) -> dict[str, Any]:
    """Everything a recomputation needs: the runs of each version, the digests of their
    per-query artifacts, the query rule and every option of the tests and verdicts."""
    if verdicts is not None and verdict_settings is None:
        raise CompareError("the spec of verdicts needs their settings (verdict_settings)")
    p, s = sweep.provenance, comparison.settings
    return {
        "harness_version": __version__, "tracking_uri": sweep.tracking_uri,
        "dataset": {"name": sweep.dataset_name, "digest": sweep.dataset_digest},
        "versions": p["versions"], "per_query_sha256": p["per_query_sha256"],
        "sources": p.get("sources", {}), "allow_subset": bool(p.get("allow_subset", False)),
        "parent_run_id": sweep.parent_run_id, "variants": variants,
        "baselines": list(s.baselines), "options": s.options(),
        "verdicts": None if verdicts is None or verdict_settings is None else {
            "test": verdict_settings.test, "equivalence": verdict_settings.equivalence,
            "margins": verdict_settings.margins, "changes": CHANGES_FILE},
    } | ({"judgments_sha256": p["judgments_sha256"]} if p.get("judgments_sha256") else {})


def overall_verdict(verdicts: pd.DataFrame | None) -> str:
    """The worst verdict among the gated rows (every row when none is gated); ``none``
    without verdicts."""
    if verdicts is None or verdicts.empty:
        return "none"
    rows = verdicts[verdicts["gated"]] if verdicts["gated"].any() else verdicts
    return max(rows["verdict"], key=lambda v: VERDICTS.index(v))


def write_spec(directory: Path, spec: Mapping[str, Any], verdicts: pd.DataFrame | None,
               changes: pd.DataFrame | None = None) -> None:
    """``comparison.json``, ``verdicts.csv`` and the verdict's changes across metric
    definitions (:data:`~harness.compare.verdict_shifts.CHANGES_FILE`) beside the report."""
    (directory / SPEC_ARTIFACT).write_text(json.dumps(spec, indent=1, default=str))
    if verdicts is not None:
        verdicts.to_csv(directory / "verdicts.csv", index=False)
    if changes is not None:
        changes.to_csv(directory / CHANGES_FILE, index=False)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60]


def _tags(sweep: Sweep, spec: Mapping[str, Any], verdicts: pd.DataFrame | None,
          changes: pd.DataFrame | None) -> dict[str, str]:
    ranker_runs = [r for ids in spec["versions"].values() for r in ids]
    baselines = spec["baselines"]
    tags = {"harness.role": COMPARISON_ROLE, VERDICT_TAG: overall_verdict(verdicts),
            "harness.version": __version__, "dataset.digest": sweep.dataset_digest,
            "dataset.name": sweep.dataset_name,
            "harness.compared_runs": ",".join(ranker_runs)[:5000],
            "harness.compared_versions": "; ".join(spec["versions"])[:5000],
            "harness.baselines": "; ".join(baselines)[:5000],
            "harness.baseline_runs": ",".join(r for b in baselines
                                             for r in spec["versions"][b])[:5000]}
    if spec["sources"]:
        tags["harness.compared_ids"] = ",".join(spec["sources"])[:5000]
    if sweep.parent_run_id:
        tags["harness.parent_run"] = sweep.parent_run_id
    if verdicts is not None:
        for verdict in VERDICTS:
            tags[f"{VERDICT_TAG}.{_slug(verdict)}"] = str(int((verdicts["verdict"]
                                                               == verdict).sum()))
    if changes is not None:  # metrics (per pair) whose verdict changes with the definition
        tags["harness.verdict_changes"] = str(len(changes))
    if verdicts is not None and (counts := labeling_count(verdicts)) is not None:
        # decisive verdicts that do not hold over every labeling of the unjudged documents
        tags["harness.verdict_labelings"] = str(counts[0])
        tags["harness.verdict_labelings_bounded"] = str(counts[1])
    return tags


def _metrics(verdicts: pd.DataFrame | None, keys: Mapping[str, str]) -> dict[str, float]:
    if verdicts is None:
        return {}
    pairs = list(dict.fromkeys(zip(verdicts["candidate"], verdicts["baseline"])))
    out = {"verdict.n_passing": float(verdicts["verdict"].isin(PASSING).sum()),
           "verdict.n_rows": float(len(verdicts))}
    for r in verdicts.itertuples():
        pair = "" if len(pairs) == 1 else f"{pairs.index((r.candidate, r.baseline))}."
        key = keys.get(r.variant, _slug(r.variant))
        out[f"verdict.{pair}{key}"] = VERDICT_CODES[r.verdict]
        out[f"diff.{pair}{key}"] = float(r.mean_diff)
    return out


def _description(sweep: Sweep, verdicts: pd.DataFrame | None,
                 changes: pd.DataFrame | None = None) -> str:
    lines = [f"**Comparison** of {len(sweep.versions)} ranker versions on dataset "
             f"`{sweep.dataset_name}`: overall verdict **{overall_verdict(verdicts)}**."]
    counts = None if verdicts is None else labeling_count(verdicts)
    if counts is not None and counts[0]:  # first, as MLflow's collapsed box shows ~100 px
        lines[0] += (f" Over every labeling of the unjudged documents **{counts[0]} of "
                     f"{counts[1]}** decisive verdict(s) do not hold (below).")
    if verdicts is not None:
        shown = verdicts[verdicts["gated"]] if verdicts["gated"].any() else verdicts.head(10)
        pad = "&emsp;"  # MLflow's tables have no cell padding: the cells would run together
        lines += ["", f"| variant{pad} | candidate{pad} | baseline{pad} | diff{pad} | "
                  f"verdict{pad} | decided by |", "|---|---|---|---|---|---|"]
        lines += [f"| `{r.variant}`{pad} | {r.candidate}{pad} | {r.baseline}{pad} | "
                  f"{r.mean_diff:+.4f}{pad} | {r.verdict}{pad} | {r.decided_by} |"
                  for r in shown.itertuples()]
    if changes is not None:
        lines += change_markdown(changes)
    if verdicts is not None and (labelings := labeling_lines(verdicts, markdown=True)):
        lines += ["", *labelings]
    lines += ["", "Recompute it: `harness reproduce <this run id>`."]
    return "\n".join(lines)


def log_comparison(sweep: Sweep, directory: Path, spec: Mapping[str, Any],
                   verdicts: pd.DataFrame | None, *, experiment: str,
                   changes: pd.DataFrame | None = None,
                   pending_dir: str | os.PathLike[str] = PENDING_DIR,
                   artifact_root: str = ARTIFACT_ROOT) -> str:
    """Log the comparison whose files are in ``directory`` as a run of ``experiment``;
    returns its id. Raises TrackingUnavailable (the plan left pending) when the store
    cannot be reached."""
    from harness.metrics import parse_metric
    from harness.tracking import RunRecord

    keys = {}
    for variant in sweep.variants:
        try:
            keys[variant] = parse_metric(variant).key
        except ValueError:
            keys[variant] = _slug(variant)
    names = list(spec["versions"])
    name = (f"compare: {', '.join(n for n in names if n not in spec['baselines'])} vs "
            f"{', '.join(spec['baselines'])}" if spec["baselines"]
            else f"compare: {', '.join(names)}")[:250]
    params = {"correction": spec["options"]["correction"],
              "family": spec["options"]["family"], "test": spec["options"]["test"],
              "alpha": str(spec["options"]["alpha"]),
              "resamples": str(spec["options"]["resamples"]),
              "seed": str(spec["options"]["seed"]), "allow_subset": str(spec["allow_subset"])}
    if spec["verdicts"]:
        params |= {"verdict_test": spec["verdicts"]["test"],
                   "equivalence": str(spec["verdicts"]["equivalence"])}
        params |= {f"margin.{keys.get(v, _slug(v))}": str(m)
                   for v, m in spec["verdicts"]["margins"].items()}
    now = int(time.time() * 1000)
    record = RunRecord(key=COMPARISON_ROLE, name=name,
                       tags=_tags(sweep, spec, verdicts, changes) | {
                           "mlflow.note.content": _description(sweep, verdicts, changes)},
                       params=params, metrics=_metrics(verdicts, keys),
                       artifacts=[[str(directory), ""]], start_ms=now, end_ms=now)
    return log_record(record, sweep.tracking_uri, experiment, directory,
                      pending_dir=pending_dir, artifact_root=artifact_root)


def log_record(record: Any, tracking_uri: str, experiment: str, directory: Path, *,
               pending_dir: str | os.PathLike[str] = PENDING_DIR,
               artifact_root: str = ARTIFACT_ROOT, suffix: str = "compare") -> str:
    """Log a comparison's run record through a log plan saved under ``pending_dir`` first;
    returns the run's id. Raises TrackingUnavailable (the plan left pending for ``harness
    sync``) when the store cannot be reached."""
    from harness.tracking import LogPlan, execute

    plan = LogPlan(tracking_uri=tracking_uri, experiment=experiment,
                   artifact_root=str(project_path(artifact_root)), runs=[record])
    marker = project_path(pending_dir) / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-" \
                                         f"{suffix}.json"
    plan.save(marker)
    try:
        return execute(plan, marker)[COMPARISON_ROLE]
    except Exception as exc:  # the store is down or refused: the plan stays for a replay
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        raise TrackingUnavailable(f"could not log the comparison to MLflow at "
                                  f"{tracking_uri} ({reason}); its files are in "
                                  f"{directory}, the log plan is pending in {marker}; replay "
                                  "it with: harness sync") from exc
