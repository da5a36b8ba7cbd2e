"""A comparison report: one self-contained HTML file, Markdown and LaTeX tables, CSVs, PNGs.

Like ranx's ``Report``, the same comparison renders as a DataFrame, Markdown, LaTeX and
HTML, with significance marks and win/tie/loss counts. The HTML needs nothing from the
network: figures are embedded as base64 PNG and the style sheet is inline. Everything comes
from a :class:`harness.compare.Sweep` (MLflow data) and the tables computed from it, so a
report can be regenerated from the run ids alone.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from harness.compare.labeling_verdicts import (
    interval_means,
    interval_table,
    judged_distribution,
    labeling_lines,
)
from harness.compare.report_render import (
    ReportParts,
    html_report,
    latex_report,
    markdown_report,
    summary_html,
)
from harness.errors import CompareError
from harness.paths import REPORTS_DIR, project_path

if TYPE_CHECKING:
    from harness.compare.load import Sweep
    from harness.compare.result import Comparison
    from harness.compare.sensitivity import Sensitivity
    from harness.compare.verdicts import VerdictSettings

__all__ = ["ReportPaths", "build_report", "comparison_display", "means_display",
           "headline_display", "report_dir", "log_report"]


@dataclass(frozen=True)
class ReportPaths:
    """Where :func:`build_report` wrote each file."""

    directory: Path
    html: Path
    markdown: Path
    latex: Path
    figures: tuple[Path, ...]
    tables: tuple[Path, ...]
    summary: Path | None = None  # the light page MLflow previews: findings, one figure


def _p(value: float) -> str:
    return "" if value != value else f"{value:.3g}"


def _p_perm(value: float, resamples: int | None) -> str:
    """A permutation p-value; at its floor 2/(R+1) (two-sided, R sign flips, no flip as
    extreme as observed) it reads "< 0.0002" instead of a made-up exact value."""
    if resamples and value == value and value <= 2 / (resamples + 1) * (1 + 1e-9):
        return f"< {2 / (resamples + 1):.2g}"
    return _p(value)


def comparison_display(comparison: Comparison) -> pd.DataFrame:
    """The comparison table formatted for reading: one row per (variant, pair), with
    ``sig`` = ``*`` where the corrected p-value of the deciding test is below alpha.

    >>> from harness.compare import build_comparison
    >>> a = pd.DataFrame({"qid": ["q1", "q2", "q3"], "nDCG@10": [0.9, 0.8, 0.7]})
    >>> b = pd.DataFrame({"qid": ["q1", "q2", "q3"], "nDCG@10": [0.5, 0.8, 0.6]})
    >>> comparison_display(build_comparison({"a": a, "b": b}, resamples=100))[
    ...     ["variant", "A", "B", "diff", "W/T/L", "sig"]]
       variant  A  B     diff  W/T/L sig
    0  nDCG@10  a  b  +0.1667  2/1/0
    """
    s = comparison.settings
    test, correction = s.test, s.correction
    c = comparison.tests
    return pd.DataFrame({
        "variant": c["variant"], "A": c["ranker_a"], "B": c["ranker_b"], "n": c["n"],
        "dropped": c["n_dropped"], "mean A": c["mean_a"].map("{:.4f}".format),
        "mean B": c["mean_b"].map("{:.4f}".format),
        "diff": c["mean_diff"].map("{:+.4f}".format),
        "95% CI": [f"[{lo:+.4f}, {hi:+.4f}]" for lo, hi in zip(c["ci_low"], c["ci_high"])],
        "d_z": c["d_z"].map("{:.2f}".format),
        "W/T/L": [f"{w}/{t}/{lo}" for w, t, lo in zip(c["wins"], c["ties"], c["losses"])],
        f"p adj ({test}, {correction})": c[f"p_{test}_adj"].map(_p),  # the deciding one first
        "sig": np.where(c["significant"], "*", ""),
        "p t": c["p_ttest"].map(_p), "p Wilcoxon": c["p_wilcoxon"].map(_p),
        "p perm": [_p_perm(v, s.resamples) for v in c["p_permutation"]],
    })


def means_display(means: pd.DataFrame, comparison: Comparison) -> tuple[pd.DataFrame,
                                                                          dict[str, str]]:
    """ranx-style table: rankers (rows) x variants (columns), each mean followed by the
    letters of the rankers it is significantly better than; returns it and the letters."""
    letters = {label: chr(ord("a") + i) if i < 26 else f"r{i}"
               for i, label in enumerate(means.columns)}
    beats: dict[tuple[str, str], list[str]] = {}
    rows = comparison.tests
    for row in rows[rows["significant"]].itertuples():
        winner, loser = ((row.ranker_a, row.ranker_b) if row.mean_diff > 0
                         else (row.ranker_b, row.ranker_a))
        beats.setdefault((winner, row.variant), []).append(letters[loser])
    cells = {variant: {label: "" if means.at[variant, label] != means.at[variant, label]
                       else f"{means.at[variant, label]:.4f}" + (
                           "^" + "".join(sorted(beats[(label, variant)]))
                           if (label, variant) in beats else "")
                       for label in means.columns} for variant in means.index}
    table = pd.DataFrame(cells)
    table.index = [f"({letters[label]}) {label}" for label in table.index]
    return table, letters


def _verdict(winner: str, significant: object, top: str, letters: dict[str, str]) -> str:
    if significant is None or significant != significant:
        return f"{winner} (untested)"
    return winner if significant else "tie: " + " = ".join(letters.get(t, t)
                                                           for t in top.split(" = "))


def headline_display(means: pd.DataFrame, comparison: Comparison, winners: pd.DataFrame
                     ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The console's headline table: the headline variants (rows; per metric family the
    variants with every convention at its default) x the rankers (columns, by letter), each
    mean followed by the letters of the rankers it is significantly better than
    (:func:`means_display`), and the ``winner``: the leader when its lead is significant
    (``winners`` of :func:`harness.compare.sensitivity`), else ``tie: a = b`` (the letters
    of the leader and of the rankers the test cannot separate from it). Returns it and the
    letters."""
    from harness.reporting.figures import headline_names

    table, letters = means_display(means, comparison)
    heads = headline_names(means.index)
    out = table[heads].T
    out.columns = [letters[label] for label in means.columns]
    out["winner"] = [_verdict(winners.at[v, "winner"], winners.at[v, "significant"],
                              winners.at[v, "top"], letters)
                     if v in winners.index else ""
                     for v in heads]
    return out.rename_axis("variant"), letters


def report_dir(sweep: Sweep, root: str | Path = REPORTS_DIR) -> Path:
    """``<root>/<experiment>/<parent run id, or a timestamp>``; a relative root resolves
    against the project (:func:`harness.paths.project_path`). A compare whose selection
    differs from the defaults writes below it (``harness.commands.compare.selection_slug``)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", sweep.experiment) or "experiment"
    return project_path(root) / name / (sweep.parent_run_id or time.strftime("%Y%m%d-%H%M%S"))


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)[:120]


def _figures(sweep: Sweep, comparison: Comparison, sens: Sensitivity,
             fig_dir: Path) -> dict[str, list[tuple[str, Path]]]:
    """The distributions as in a job (an overview of the headline variants, one panel per
    variant of each metric family), a paired-difference figure per pair, the tau heatmap."""
    from harness.compare.comparison_figures import paired_difference_figure, png_bytes, tau_heatmap
    from harness.metrics import parse_metric
    from harness.reporting.figures import study_figures

    fig_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[tuple[str, Path]]] = {"distributions": [], "differences": [],
                                              "tau": []}
    metrics = [parse_metric(v) for v in sens.means.index]
    for path in study_figures(sweep.per_query, metrics, fig_dir, mode="headline"):
        name = path.stem.removeprefix("family-")
        out["distributions"].append(("headline variants" if name == "overview" else
                                     f"every {name} variant", path))
    rows = comparison.tests
    pairs = rows[["ranker_a", "ranker_b"]].drop_duplicates().itertuples(index=False)
    for i, (a, b) in enumerate(pairs):
        path = fig_dir / f"difference_{i:02d}_{_safe(a)}_vs_{_safe(b)}.png"
        path.write_bytes(png_bytes(paired_difference_figure(sweep.per_query, rows, a, b)))
        out["differences"].append((f"{a} vs {b}", path))
    path = fig_dir / "kendall_tau.png"
    path.write_bytes(png_bytes(tau_heatmap(sens.tau)))
    out["tau"].append(("Kendall tau between variants", path))
    return out


def _verdict_tables(verdicts: pd.DataFrame | None, changes: pd.DataFrame | None,
                    settings: VerdictSettings | None
                    ) -> dict[str, tuple[str, pd.DataFrame, bool]]:
    """The verdicts of each candidate against each baseline, and where they change across
    metric definitions (none without a baseline)."""
    from harness.compare.verdict_shifts import changes_display
    from harness.compare.verdicts import verdicts_display

    if verdicts is None:
        return {}
    if (a := settings) is None:
        raise CompareError("a report of verdicts needs their settings (verdict_settings)")
    out = {"verdicts": (f"Verdicts ({a.test} one-sided, alpha {a.alpha}, "
                        f"{a.correction} per {a.family}"
                        + (", equivalence (TOST)" if a.equivalence else "") + ")"
                        + ("; labelings: whether the verdict holds over every labeling of "
                           "the unjudged documents, the mean difference lying in [worst, "
                           "best] under any (per query: harness judgments)"
                           if "labelings" in verdicts else ""),
                        verdicts_display(verdicts), False)}
    if changes is not None and not changes.empty:
        out["verdict_changes"] = ("Verdict across metric definitions: where it changes, "
                                  "and the options that account for the largest change",
                                  changes_display(changes), False)
    return out


def judged_shares(sweep: Sweep) -> dict[str, float]:
    """Per ranker version, the mean over its runs of the judged@10 they logged (the ranker
    run's metric ``judged_at_10``: the share of its top 10 documents that are judged); a
    version none of whose runs logged it is left out, so is every version of an older sweep.
    """
    logged: dict[str, list[float]] = {}
    for run in sweep.provenance.get("runs", []):
        value = run.get("judged_at_10")
        if value is not None and value == value:
            logged.setdefault(run["label"], []).append(float(value))
    return {label: float(np.mean(values)) for label, values in logged.items()}


def _tables(sweep: Sweep, comparison: Comparison, sens: Sensitivity,
            verdicts: pd.DataFrame | None = None, changes: pd.DataFrame | None = None,
            settings: VerdictSettings | None = None
            ) -> dict[str, tuple[str, pd.DataFrame, bool]]:
    """Title, table and whether the index is shown, per section."""
    means, letters = means_display(sens.means, comparison)
    versions = pd.DataFrame([{"letter": letters[v.label], "label": v.label,
                              "ranker": v.ranker, "kind": v.kind, "runs": len(v.run_ids),
                              "cache key": v.cache_key[:12]} for v in sweep.versions.values()])
    judged = judged_shares(sweep)
    if judged:
        versions["judged@10"] = versions["label"].map(
            lambda label: "" if judged.get(label) is None else f"{judged[label]:.3f}")
    spread = judged_distribution(sweep.intervals)  # per query, from the judgments artifact
    for i, column in enumerate(("judged@10 median", "judged@10 p10", "fully judged")):
        if spread:
            versions[column] = versions["label"].map(
                lambda label, i=i: f"{spread[label][i]:.3f}" if label in spread else "")
    winners = sens.winners.assign(mean=sens.winners["mean"].map("{:.4f}".format),
                                  margin=sens.winners["margin"].map(_p),
                                  significant=[{True: "yes", False: "no: tie"}.get(
                                      v, "untested") if v == v else "untested"
                                      for v in sens.winners["significant"]],
                                  p_adj=sens.winners["p_adj"].map(_p))
    intervals = interval_table(interval_means(sweep.intervals), list(sens.means.index))
    power = sens.power.assign(discriminative_power=sens.power["discriminative_power"].map(
        "{:.2f}".format)) if len(sens.power) else sens.power
    return {
        "versions": ("Ranker versions", versions, False),
        **_verdict_tables(verdicts, changes, settings),
        "means": ("Mean per query; superscripts: the rankers (letters) this one is "
                  "significantly better than", means.T.rename_axis("variant"), True),
        "comparison": ("Paired comparisons", comparison_display(comparison), False),
        "winners": ("Winner per variant", winners.rename_axis("variant"), True),
        "power": ("Discriminative power (share of compared pairs significant)",
                  power.rename_axis("variant"), True),
        "ties": ("Tie-sensitivity interval (optimistic - pessimistic mean)",
                 sens.ties.round(4), False),
        "tau": ("Kendall's tau between the ranker orderings", sens.tau.round(3), True),
        **({"intervals": ("Judgment intervals: the mean over every labeling of the unjudged "
                          "documents lies in [low, high] (* a bound not exact for every "
                          "query; per query: judgments/<ranker>.parquet of each run)",
                          intervals, True)} if len(intervals) else {}),
        **({"incompleteness": ("Incompleteness: the ordering under each unjudged treatment "
                               "and Kendall's tau against unjudged=nonrelevant",
                               sens.unjudged.round(3), False)} if len(sens.unjudged) else {}),
    }


def _settings(sweep: Sweep, comparison: Comparison) -> list[tuple[str, str]]:
    s = comparison.settings
    return [("experiment", sweep.experiment), ("parent run", sweep.parent_run_id or "none"),
            ("filter", sweep.filter_string or "none"), ("tracking store", sweep.tracking_uri),
            ("dataset", f"{sweep.dataset_name} (digest {sweep.dataset_digest})"),
            ("significance", f"{s.test} p-value, {s.correction} correction per "
                             f"{s.family}, alpha {s.alpha}"),
            ("resampling", f"{s.resamples} resamples (permutation sign flips and "
                           f"bootstrap), seed {s.seed}"),
            ("baseline", str(s.baseline or "none (all pairs)")),
            ("generated", time.strftime("%Y-%m-%d %H:%M:%S %Z"))]


def _notes(sweep: Sweep, comparison: Comparison) -> list[str]:
    """What was merged, left out or dropped, and the notes of single comparisons."""
    notes = list(sweep.notes) + list(comparison.notes)
    for row in comparison.tests.itertuples():
        if row.dropped:
            notes.append(f"{row.variant}, {row.ranker_a} vs {row.ranker_b}: dropped "
                         f"{row.dropped}")
        if row.note:
            notes.append(f"{row.variant}, {row.ranker_a} vs {row.ranker_b}: {row.note}")
    if not comparison.tests["n_dropped"].any():
        notes.append("no query was dropped: every pair was compared on all its queries")
    return notes


def _provenance_tables(sweep: Sweep) -> dict[str, pd.DataFrame]:
    p = sweep.provenance
    label_of = {r["run_id"]: r["label"] for r in p["runs"]}
    runs = pd.DataFrame(p["runs"])[["label", "run_id", "job", "cache_key"]]
    envs = pd.DataFrame({f"environment {i + 1} ({len(e['runs'])} runs)":
                         {"python": e["environment"].get("python", "?"),
                          **e["environment"].get("packages", {})}
                         for i, e in enumerate(p["environments"])})
    varying = pd.DataFrame(p["params_varying"]).rename(index=label_of).rename_axis("run")
    return {"runs": runs, "environments": envs.rename_axis("package"), "varying": varying}


def build_report(sweep: Sweep, comparison: Comparison, sensitivity: Sensitivity,
                 out_dir: str | Path, *, verdicts: pd.DataFrame | None = None,
                 changes: pd.DataFrame | None = None,
                 verdict_settings: VerdictSettings | None = None) -> ReportPaths:
    """Write the report of a comparison to ``out_dir``.

    Parameters
    ----------
    sweep : Sweep
        From :func:`harness.compare.load_sweep`.
    comparison : Comparison
        From :func:`harness.compare.core.build_comparison` on ``sweep.per_query``.
    sensitivity : Sensitivity
        From :func:`harness.compare.sensitivity`.
    out_dir : path
        Created if needed (see :func:`report_dir` for the conventional place).
    verdicts, changes, verdict_settings : optional
        From :func:`~harness.compare.verdicts.verdict_table`, :func:`~harness.compare.
        verdict_shifts.verdict_changes` and :func:`~harness.compare.verdicts.
        verdict_settings` (with a baseline): shown after the ranker versions.

    Returns
    -------
    ReportPaths
        ``report.html`` (self-contained), ``summary.html`` (its findings, headline table
        and overview figure: light for MLflow's preview), ``report.md``, ``report.tex``,
        the figures (``figures/*.png``) and the CSV tables, plus ``provenance.json``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labelings = labeling_lines(verdicts, limit=0) if verdicts is not None else []
    parts = ReportParts(f"Ranker comparison: {sweep.experiment}", _settings(sweep, comparison),
                   list(sensitivity.notes) + [line.removesuffix(":") for line in labelings[:1]],
                   _tables(sweep, comparison, sensitivity, verdicts, changes,
                           verdict_settings),
                   _notes(sweep, comparison),
                   _figures(sweep, comparison, sensitivity, out / "figures"),
                   _provenance_tables(sweep), sweep)
    csvs = []
    for name, frame in (("comparison", comparison.tests), ("means", sensitivity.means),
                        ("winners", sensitivity.winners), ("power", sensitivity.power),
                        ("tie_intervals", sensitivity.ties), ("kendall_tau", sensitivity.tau),
                        ("incompleteness", sensitivity.unjudged),
                        ("judgment_intervals", interval_means(sweep.intervals))):
        if name in ("incompleteness", "judgment_intervals") and frame.empty:
            continue
        path = out / f"{name}.csv"
        frame.to_csv(path, index=name not in ("comparison", "tie_intervals", "incompleteness",
                                              "judgment_intervals"))
        csvs.append(path)
    (out / "provenance.json").write_text(json.dumps(sweep.provenance, indent=1, default=str))
    csvs.append(out / "provenance.json")
    (out / "report.md").write_text(markdown_report(parts))
    (out / "report.tex").write_text(latex_report(parts))
    (out / "report.html").write_text(html_report(parts))
    (out / "summary.html").write_text(summary_html(parts))
    return ReportPaths(out, out / "report.html", out / "report.md", out / "report.tex",
                       tuple(p for group in parts.figures.values() for _, p in group),
                       tuple(csvs), out / "summary.html")


def log_report(paths: ReportPaths, tracking_uri: str, run_id: str,
               artifact_dir: str = "report") -> None:
    """Log every file of the report to run ``run_id`` under ``artifact_dir``."""
    from mlflow.tracking import MlflowClient

    from harness.compare.load import mlflow_call
    from harness.tracking.store import mark_experiment

    client = MlflowClient(tracking_uri=tracking_uri)
    mlflow_call(lambda: client.log_artifacts(run_id, str(paths.directory), artifact_dir),
                tracking_uri, f"log the report to run {run_id}")
    mlflow_call(lambda: mark_experiment(client, client.get_experiment(
        client.get_run(run_id).info.experiment_id)), tracking_uri, "tag the experiment")

