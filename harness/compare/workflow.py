"""The comparison of ranker runs logged to MLflow (``harness compare RUN_ID ...``), step by
step and without printing: load the runs (:func:`load_compared`), compare them
(:func:`compare_sweep`, whose tables :func:`sweep_tables` computes, as ``harness reproduce``
does again from a logged comparison), write the report (:func:`write_sweep_report`) and log
it (:func:`log_sweep`). Every comparison is a :class:`~harness.compare.result.Comparison`
from :func:`~harness.compare.core.build_comparison`, as :func:`harness.compare`'s is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from harness.compare.core import build_comparison
from harness.compare.result import Comparison
from harness.errors import CompareError

if TYPE_CHECKING:
    from harness.compare.load import Sweep
    from harness.compare.report import ReportPaths
    from harness.compare.sensitivity import Sensitivity
    from harness.compare.verdicts import VerdictSettings

__all__ = ["SweepOptions", "SweepComparison", "SweepFiles", "load_compared", "sweep_tables",
           "compare_sweep", "judge", "write_sweep_report", "log_sweep"]


@dataclass(frozen=True)
class SweepOptions:
    """What ``harness compare`` on MLflow runs computes (its options, see its ``--help``);
    ``margin`` holds the ``VARIANT=DELTA`` texts, ``max_queries`` None for never."""

    variants: list[str] | None = None
    baseline: list[str] | None = None
    test: str = "ttest"
    correction: str = "holm"
    alpha: float = 0.05
    seed: int = 0
    resamples: int = 10_000
    family: str = "variant"
    max_queries: int | None = 20_000
    margin: tuple[str, ...] = ()
    equivalence: bool = False
    verdict_test: str = "ttest"
    gate: bool = False

    def test_options(self) -> dict[str, Any]:
        return {"test": self.test, "correction": self.correction, "alpha": self.alpha,
                "seed": self.seed, "resamples": self.resamples, "family": self.family,
                "max_queries": self.max_queries}


@dataclass(frozen=True)
class SweepComparison:
    """A sweep compared: ``comparison`` against the ``baselines`` (or every pair), with
    every test and interval; ``every_pair`` the same over every ranker pair (the winners'
    and the discriminative power's), ``comparison`` itself without a baseline; with a
    baseline the ``verdicts``, reached under ``verdict_settings``, and their ``changes``
    across metric definitions."""

    sweep: Sweep
    baselines: list[str] | None
    comparison: Comparison
    every_pair: Comparison
    sensitivity: Sensitivity
    verdicts: pd.DataFrame | None
    changes: pd.DataFrame | None
    variants: list[str] | None
    verdict_settings: VerdictSettings | None = None


@dataclass(frozen=True)
class SweepFiles:
    """Where :func:`write_sweep_report` wrote: the report, the pairwise table, the spec."""

    paths: ReportPaths
    pairwise: Path
    spec: dict[str, Any]


def load_compared(tracking_uri: str | None, run_ids: Sequence[str] = (), *,
                  parent_run_id: str | None = None, experiment: str | None = None,
                  filter_string: str | None = None, allow_subset: bool = False) -> Sweep:
    """Several runs (``run_ids``), else one sweep or job (``parent_run_id``) or every ranker
    run of ``experiment``."""
    from harness.compare.load import load_sweep
    from harness.compare.runs import load_runs

    if len(run_ids) > 1:
        return load_runs(tracking_uri, list(run_ids), allow_subset=allow_subset)
    first = run_ids[0] if run_ids else None
    return load_sweep(tracking_uri, parent_run_id=parent_run_id or first,
                      experiment=experiment, filter_string=filter_string)


def sweep_tables(per_query: Mapping[str, pd.DataFrame], variants: Sequence[str] | None,
                 baselines: Sequence[str] | None, options: Mapping[str, Any],
                 verdicts: Mapping[str, Any] | None = None,
                 intervals: Mapping[str, pd.DataFrame] | None = None
                 ) -> tuple[Comparison, pd.DataFrame | None, pd.DataFrame | None]:
    """The comparison (every test and interval), and with ``verdicts`` (``margins``,
    ``test``, ``equivalence``, ``changes``: as ``comparison.json`` records them) the
    verdicts and, when ``changes``, their changes across metric definitions."""
    from harness.compare.verdict_shifts import verdict_changes
    from harness.compare.verdicts import verdict_table

    comparison = build_comparison(per_query, variants, list(baselines or []) or None,
                                  every_test=True, **options)
    if not verdicts:
        return comparison, None, None
    table = verdict_table(per_query, comparison, verdicts["margins"], test=verdicts["test"],
                          equivalence=verdicts["equivalence"], intervals=intervals)
    changes = verdict_changes(table, per_query) if verdicts.get("changes") else None
    return comparison, table, changes


def _margins(options: SweepOptions, variants: list[str],
             baseline: list[str] | None) -> dict[str, float]:
    """The margins per variant; a gate or margin without a baseline is refused."""
    from harness.compare.verdicts import parse_margins

    if (options.margin or options.gate or options.equivalence) and not baseline:
        raise CompareError("--margin, --equivalence and --gate judge a candidate against a "
                           "baseline: name it with --baseline")
    margins = parse_margins(list(options.margin), variants)
    if options.gate and not margins:
        raise CompareError("--gate needs the variants it gates: give each a --margin "
                           "VARIANT=DELTA (0 for none)")
    return margins


def compare_sweep(sweep: Sweep, options: SweepOptions) -> SweepComparison:
    """The comparison of ``sweep``'s rankers: against the baselines, over every pair, the
    sensitivity to the metric definition, the verdicts and their changes."""
    from harness.compare.sensitivity import sensitivity
    from harness.compare.verdict_shifts import CHANGES_FILE
    from harness.compare.verdicts import verdict_settings

    baselines = list(dict.fromkeys(sweep.resolve(b) for b in options.baseline or [])) or None
    margins = _margins(options, sweep.variants if options.variants is None
                       else options.variants, baselines)
    spec = None if baselines is None else {
        "margins": margins, "test": options.verdict_test, "equivalence": options.equivalence,
        "changes": CHANGES_FILE}
    comparison, verdicts, changes = sweep_tables(
        sweep.per_query, options.variants, baselines, options.test_options(), spec,
        sweep.intervals)
    every_pair = comparison if baselines is None else build_comparison(
        sweep.per_query, options.variants, None, every_test=True, **(
            options.test_options() | {"family": "variant" if options.family == "baseline"
                                      else options.family}))
    sens = sensitivity(sweep.per_query, every_pair, variants=options.variants)
    if baselines is not None:
        sens = dataclasses.replace(sens, notes=(*sens.notes, (
            f"winners and discriminative power over every ranker pair "
            f"({len(every_pair.tests)} comparisons); the marks and the pairwise table "
            f"against {', '.join(baselines)} only")))
    settings = None if spec is None else verdict_settings(
        comparison, margins, test=options.verdict_test, equivalence=options.equivalence)
    return SweepComparison(sweep, baselines, comparison, every_pair, sens, verdicts, changes,
                           options.variants, settings)


def judge(comparison: Comparison, options: SweepOptions
          ) -> tuple[pd.DataFrame, VerdictSettings] | None:
    """The verdicts of a comparison against its baseline (``harness compare --qrels`` with
    ``--margin``, ``--equivalence``, ``--verdict-test`` or ``--gate``; :func:`harness.compare`'s
    result): :func:`~harness.compare.verdicts.verdict_table` on its per-query tables and the
    settings they were reached under; None when no verdict option is given."""
    from harness.compare.verdicts import verdict_settings, verdict_table

    if not (options.margin or options.equivalence or options.gate
            or options.verdict_test != SweepOptions.verdict_test):
        return None
    baselines = list(comparison.settings.baselines) or None
    margins = _margins(options, list(comparison.measures), baselines)
    if baselines is None:
        raise CompareError("--verdict-test judges a candidate against a baseline: name it "
                           "with --baseline")
    table = verdict_table(comparison.per_query, comparison, margins,
                          test=options.verdict_test, equivalence=options.equivalence)
    return table, verdict_settings(comparison, margins, test=options.verdict_test,
                                   equivalence=options.equivalence)


def write_sweep_report(result: SweepComparison, out: Path) -> SweepFiles:
    """The report (HTML, Markdown, LaTeX, CSVs, figures), ``comparison.txt`` (every pair,
    every test) and ``comparison.json`` (what ``harness reproduce`` recomputes) in
    ``out``."""
    from harness.compare.record import comparison_spec, write_spec
    from harness.compare.report import build_report, comparison_display

    paths = build_report(result.sweep, result.comparison, result.sensitivity, out,
                         verdicts=result.verdicts, changes=result.changes,
                         verdict_settings=result.verdict_settings)
    pairwise = paths.directory / "comparison.txt"
    with pd.option_context("display.width", 250, "display.max_rows", None,
                           "display.max_columns", None, "display.max_colwidth", 60):
        pairwise.write_text(comparison_display(result.comparison).to_string(index=False)
                            + "\n")
    spec = comparison_spec(result.sweep, result.comparison, result.verdicts, result.variants,
                           result.verdict_settings)
    write_spec(paths.directory, spec, result.verdicts, result.changes)
    return SweepFiles(paths, pairwise, spec)


def log_sweep(result: SweepComparison, files: SweepFiles, *, experiment: str | None,
              pending_dir: str) -> tuple[str, str]:
    """Log the comparison as its own MLflow run; returns its id and its experiment."""
    from harness.compare.record import log_comparison

    sweep = result.sweep
    experiment = experiment or sweep.provenance.get("experiments", [sweep.experiment])[0]
    run_id = log_comparison(sweep, files.paths.directory, files.spec, result.verdicts,
                            changes=result.changes, experiment=experiment,
                            pending_dir=pending_dir)
    return run_id, experiment
