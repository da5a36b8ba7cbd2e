"""What a person reads about a study: MLflow run descriptions and the closing summary.

MLflow shows a run's ``mlflow.note.content`` tag (Markdown) as its description; the closing
summary is printed when a job ends, with the run ids and the follow-up commands filled in.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.app.judgment_notes import closing_lines, pair_markdown, ranker_sentence
from harness.app.ranker_notes import NO_NOTES, RankerNotes
from harness.app.sweep_columns import SweepJobs
from harness.metrics import Metric
from harness.metrics.vocabulary.options import display_value

__all__ = ["DEFAULTS_LINE", "ranker_description", "study_description", "closing_summary",
           "results_table", "interval", "open_hint", "sweep_description"]

_MEANING = {
    "gain": {"exp2": "2^rel - 1", "linear": "rel"},
    "discount": {"log2": "1 / log2(rank + 1)", "ln": "1 / ln(rank + 1)",
                 "reciprocal": "1 / rank"},
    "ideal": {"judged": "every judged document", "retrieved": "the retrieved list"},
    "ties": {"average": "averaged over their orders", "docid": "docid descending",
             "input": "in input order"},
    "empty": {"zero": "0", "one": "1", "exclude": "left out", "nan": "NaN"},
}


def _defaults_line() -> str:
    from harness.metrics.vocabulary.options import OPTIONS

    d = {k: OPTIONS[k].default for k in _MEANING}
    say = {k: _MEANING[k].get(str(v), str(v)) for k, v in d.items()}
    return ("A variant's name lists only what differs from the defaults: "
            f"gain {d['gain']} ({say['gain']}), discount {d['discount']} ({say['discount']}), "
            f"ideal {d['ideal']} (IDCG over {say['ideal']}), ties {d['ties']} (tied scores "
            f"{say['ties']}), empty {d['empty']} (a query without relevant documents scores "
            f"{say['empty']}).")


#: What a variant name without options means (the defaults of :class:`harness.Metric`).
DEFAULTS_LINE = _defaults_line()


def python_command() -> str:
    """How to call this interpreter in a printed command: ``.venv/bin/python`` when it is
    the project's own environment (as ``make run`` uses it), else ``python``."""
    import sys

    from harness.paths import PROJECT_ROOT

    venv = PROJECT_ROOT / ".venv"
    return ".venv/bin/python" if Path(sys.prefix).resolve() == venv.resolve() else "python"


def interval(row: pd.Series) -> str:
    """``0.8123 [0.801, 0.824]`` from a summary row."""
    if row["ci_low"] != row["ci_low"]:  # NaN: no interval
        return f"{row['mean']:.4f}"
    return f"{row['mean']:.4f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


#: MLflow keeps the first 8,000 characters of a tag's value (a run's description is the tag
#: ``mlflow.note.content``) and drops the rest without a word.
NOTE_LIMIT = 8000


def _cell(text: object) -> str:
    """Text in a Markdown table cell: ``|`` escaped (it would end the cell), one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table, as MLflow's run page renders it: the first column
    left-aligned (names), the others right-aligned (numbers, where a renderer honours it); a
    blank line before it, or a paragraph right above swallows it."""
    return ["", _row(header), "|:---|" + "---:|" * (len(header) - 1)] + [_row(r) for r in rows]


def _row(cells: Sequence[str]) -> str:
    """A table row. MLflow's table style has no cell padding: an em space (as an entity,
    which a cell's trimming keeps) after each non-empty cell keeps "noisy_oraclefeature_f0"
    and "1.00000.9033" apart."""
    return "| " + " | ".join(f"{c}&emsp;" if c else c for c in cells) + " |"


def _bold_best(values: Sequence[float], *, missing: str = "nan") -> list[str]:
    """Means as ``0.1234``, the largest (all of them when tied) in bold; NaN as ``missing``."""
    finite = [v for v in values if v == v]
    best = max(finite) if finite else None
    return [(missing if v != v else f"**{v:.4f}**" if v == best else f"{v:.4f}") for v in values]


def _fit(head: list[str], rows: list[str], tail: list[str], *, rest: str) -> str:
    """``head + rows + tail`` joined, rows dropped from the end until it fits
    :data:`NOTE_LIMIT`, with a row saying how many more are in ``rest``."""
    text = "\n".join(head + rows + tail)
    kept = len(rows)
    while len(text) > NOTE_LIMIT and kept > 0:
        kept -= 1
        more = f"| … {len(rows) - kept} more rows: {rest} |"
        text = "\n".join(head + rows[:kept] + [more] + tail)
    return text


def _lead(summaries: Mapping[str, pd.DataFrame], metrics: Sequence[Metric]) -> str:
    """The description's first line, all that MLflow's collapsed description box shows
    sharply: the best mean under the first headline variant, and how many variants each
    ranker has the best mean under."""
    from harness.reporting.figures import headline_variants

    if not metrics or not summaries:
        return ""
    first = headline_variants(metrics)[0].display_name
    means = {n: float(s.at[first, "mean"]) for n, s in summaries.items()}
    finite = {n: v for n, v in means.items() if v == v}
    if not finite:
        return ""
    top = max(finite, key=finite.__getitem__)
    wins: dict[str, int] = {}
    for m in metrics:
        column = {n: float(s.at[m.display_name, "mean"]) for n, s in summaries.items()}
        best = max((v for v in column.values() if v == v), default=None)
        for n, v in column.items():
            if best is not None and v == best:
                wins[n] = wins.get(n, 0) + 1
    order = list(summaries)  # most wins first; among equals, in the study's order
    told = ", ".join(f"{_cell(n)} {k}" for n, k in sorted(
        wins.items(), key=lambda i: (-i[1], order.index(i[0]))))
    return (f"**Best on {_cell(first)}: {_cell(top)} {finite[top]:.4f}**"
            + f" · the best means of the {len(metrics)} variants: {told}")


def ranker_description(name: str, summary: pd.DataFrame, metrics: Sequence[Metric], *,
                       study: str, dataset: str, notes: RankerNotes = NO_NOTES) -> str:
    """Markdown: the ranker's mean under the first headline variant first (what MLflow's
    collapsed description box shows), then its table of every variant (mean, 95% CI,
    queries); its ``notes`` (Judged@10, judgment intervals, warnings) where they apply."""
    from harness.reporting.figures import headline_variants

    first = summary.loc[headline_variants(metrics)[0].display_name] if metrics else None
    head = ["" if first is None else f"**{_cell(name)}: {_cell(first.name)} "
            f"{interval(first)}** over {int(first['n_queries'])} queries", "",
            f"**{_cell(name)}** on dataset `{_cell(dataset)}` (study `{_cell(study)}`): mean "
            "per query with its 95% bootstrap CI." + ranker_sentence(notes)]
    rows = []
    for m in metrics:
        row = summary.loc[m.display_name]
        ci = "" if row["ci_low"] != row["ci_low"] else \
            f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
        rows.append(_row([f"`{_cell(m.display_name)}`", f"{row['mean']:.4f}", ci,
                          str(int(row["n_queries"]))]))
    table = _table(["variant", "mean", "95% CI", "queries"], [])
    tail = ["", DEFAULTS_LINE, "", "Per-query values: `per_query.csv` (viewable here) and "
            "the exact `*.parquet` among the artifacts."]
    return _fit(head + table, rows, tail + _warning_lines(notes.warnings), rest="summary.csv")


def _warning_lines(warnings: Sequence[str]) -> list[str]:
    """Markdown: the study's warnings (:attr:`RankerNotes.warnings`)."""
    return ["", "**Warnings**", ""] + [f"- ⚠ {w}" for w in warnings] if warnings else []


def study_description(summaries: Mapping[str, pd.DataFrame], metrics: Sequence[Metric], *,
                      study: str, dataset: str, title: str,
                      pairs: Sequence[Mapping[str, Any]] = (),
                      notes: Mapping[str, RankerNotes] | None = None) -> str:
    """Markdown: the best mean under the first headline variant (the line MLflow's collapsed
    description box shows), then the variant x ranker table of means, the best of each row
    in bold; the pairs' verdicts over every labeling and each ranker's warnings (``notes``)
    after it."""
    names = list(summaries)
    head = [_lead(summaries, metrics), "",
            f"Study `{_cell(study)}` on dataset `{_cell(dataset)}`"
            + (f" ({_cell(title)})" if title else "")
            + f": {len(names)} ranker(s) x {len(metrics)} variant(s). Mean per query, the best "
            "of each row in bold; each ranker run's description has the 95% CIs."]
    rows = []
    for m in metrics:
        cells = _bold_best([float(summaries[n].at[m.display_name, "mean"]) for n in names])
        rows.append(_row([f"`{_cell(m.display_name)}`", *cells]))
    table = _table(["variant", *(_cell(n) for n in names)], [])
    warnings = [w for n in names for w in (notes or {}).get(n, NO_NOTES).warnings]
    return _fit(head + table, rows, ["", DEFAULTS_LINE] + pair_markdown(pairs)
                + _warning_lines(warnings), rest="summary.csv")


def _header(metric: Metric) -> list[str]:
    """A column's header lines: the measure and cut-off, then each option off its default."""
    head = metric.measure.display + (f"@{metric.k}" if metric.k is not None else "")
    return [head] + [f"{o}={display_value(v)}" for o, v in metric.options().items()]


def results_table(summaries: Mapping[str, pd.DataFrame], metrics: Sequence[Metric], *,
                  baseline: str | None = None, width: int | None = None,
                  bold: bool = False, missing: str = "nan") -> list[str]:
    """The rankers x variants table of means, in the style of PyTerrier's ``pt.Experiment``.

    One row per ranker, one column per variant (the measure on the first header line, the
    options that differ from the defaults below it); ``*`` marks the best mean of each
    column (bold as well when ``bold``); with a ``baseline``, every other ranker's mean is
    followed by its difference from the baseline's. Columns that do not fit in ``width``
    characters (default: the terminal's, ``shutil.get_terminal_size``) continue in further
    blocks, each repeating the ranker column.
    """
    import shutil

    width = width or shutil.get_terminal_size((100, 24)).columns
    names = list(summaries)
    label = [n + (" (baseline)" if n == baseline else "") for n in names]
    first = max([len(s) for s in label] + [len("ranker")])
    columns = []  # (header lines, cells, bold flags)
    for m in metrics:
        means = [float(summaries[n].at[m.display_name, "mean"]) for n in names]
        finite = [v for v in means if v == v]
        best = max(finite) if finite else None
        base = means[names.index(baseline)] if baseline in names else None
        cells, marks = [], []
        for n, v in zip(names, means):
            top = best is not None and v == best
            text = (missing if v != v else f"{v:.4f}") + ("*" if top else " ")
            if base is not None and n != baseline:
                text += " " + ("   n/a " if v != v or base != base else f"{v - base:+.4f}")
            cells.append(text)
            marks.append(top)
        columns.append((_header(m), cells, marks))
    blocks: list[list[tuple[list[str], list[str], list[bool]]]] = [[]]
    used = 2 + first
    for col in columns:
        w = max(len(s) for s in col[0] + col[1])
        if blocks[-1] and used + 2 + w > width:
            blocks.append([])
            used = 2 + first
        blocks[-1].append(col)
        used += 2 + w
    out: list[str] = []
    for block in blocks:
        if out:
            out.append("")
        widths = [max(len(s) for s in head + cells) for head, cells, _ in block]
        depth = max(len(head) for head, _, _ in block)
        for line in range(depth):
            left = "ranker" if line == 0 else ""
            out.append(("  " + left.ljust(first) + "".join(
                "  " + (head[line] if line < len(head) else "").ljust(w)
                for (head, _, _), w in zip(block, widths))).rstrip())
        for i, n in enumerate(label):
            row = "  " + n.ljust(first)
            for (_, cells, marks), w in zip(block, widths):
                cell = cells[i].ljust(w)
                row += "  " + (f"\033[1m{cell}\033[0m" if bold and marks[i] else cell)
            out.append(row.rstrip())
    return out


def bold_ok() -> bool:
    """Bold on a terminal unless ``NO_COLOR`` is set."""
    import os
    import sys

    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and \
        os.environ.get("TERM") != "dumb"


def open_hint(tracking_uri: str, experiment_id: str | None, run_id: str | None) -> str:
    """How to look at a run in MLflow's UI: the command that serves the store (none for a
    tracking server, which serves its own UI) and the run's page, experiment id included
    (``<base>/#/experiments/<id>/runs/<run>``)."""
    from harness.paths import project_path
    from harness.tracking.store import UI_BASE, ui_base, ui_url

    base = ui_base(tracking_uri)
    page = ui_url(experiment_id, run_id, base=base) if experiment_id else base
    if base != UI_BASE or tracking_uri.startswith(("http://", "https://")):
        return f"open {page}"
    if tracking_uri == f"sqlite:///{project_path('runs/mlflow.db')}":  # what make ui serves
        return f"make ui    # then open {page}"
    mlflow = python_command().removesuffix("python") + "mlflow" if python_command() != \
        "python" else "mlflow"
    return f"{mlflow} ui --backend-store-uri {shlex.quote(tracking_uri)}    # then open {page}"


def closing_summary(*, study: str, seconds: float, summaries: Mapping[str, pd.DataFrame],
                    metrics: Sequence[Metric], n_queries: int, output_dir: Path,
                    run_ids: Mapping[str, str], tracking_uri: str | None,
                    experiment: str | None, baseline: str | None = None,
                    warnings: Sequence[str] = (), width: int | None = None,
                    bold: bool | None = None, pairs: Sequence[Mapping[str, Any]] = (),
                    training: str = "", notes: Mapping[str, RankerNotes] | None = None) -> str:
    """The text printed when a job ends: the rankers x variants table (:func:`results_table`),
    each ranker's Judged@10 and judgment intervals (``notes``), warnings, run ids, files,
    next commands."""
    import shutil
    import textwrap

    names = list(summaries)
    pad = max([len(n) for n in names] + [6])
    cols = width or shutil.get_terminal_size((100, 24)).columns
    say = (f"; after each mean its difference from {baseline!r}" if baseline else "")
    out = textwrap.wrap(f"Study {study!r} done in {seconds:.1f}s: {len(names)} ranker(s) x "
                        f"{len(metrics)} variant(s) x {n_queries} queries. Mean per query, * "
                        f"the best of each column{say}:", width=max(cols, 40),
                        break_on_hyphens=False, break_long_words=False) + [""]
    if training:  # the time spent fitting models, apart from evaluating
        out[-1:] = textwrap.wrap(training, width=max(cols, 40), break_on_hyphens=False) + [""]
    out += results_table(summaries, metrics, baseline=baseline, width=cols,
                         bold=bold_ok() if bold is None else bold)
    out += closing_lines({n: (notes or {}).get(n, NO_NOTES) for n in names}, pairs, cols)
    out += [""] + textwrap.wrap(DEFAULTS_LINE, width=max(cols, 40), break_on_hyphens=False,
                                break_long_words=False)
    out.append(f"95% CIs and more statistics: {output_dir / 'summary.csv'}")
    if warnings:
        out += ["", "Warnings:"] + [line for w in warnings for line in textwrap.wrap(
            w, width=max(cols - 2, 40), initial_indent="  ! ", subsequent_indent="    ",
            break_on_hyphens=False, break_long_words=False)]
    out += ["", f"Files: {output_dir}"]
    job = run_ids.get("job")
    if not run_ids or not tracking_uri:
        out.append("MLflow: not logged (tracking off).")
        return "\n".join(out)
    from harness.tracking import resolve_tracking_uri
    from harness.tracking.log_plan import EXPERIMENT_ID

    exp_id = run_ids.get(EXPERIMENT_ID)
    out.append(f"MLflow: {tracking_uri}, experiment {experiment!r}"
               + (f" (id {exp_id})" if exp_id else ""))
    if job:
        out.append(f"  {'job run'.ljust(pad)}   {job}")
    for n in names:
        if run_ids.get(f"ranker:{n}"):
            out.append(f"  {n.ljust(pad)}   {run_ids[f'ranker:{n}']}")
    default = tracking_uri == resolve_tracking_uri(None)
    uri = "" if default else f" --tracking-uri {shlex.quote(tracking_uri)}"
    first = run_ids.get(f"ranker:{names[0]}") if names else None
    out += ["", "Next:"]
    if job and len(names) > 1:
        out.append(f"  {python_command().removesuffix('python')}harness compare {job} "
                   f"--baseline {baseline or ('random' if 'random' in names else names[0])}{uri}")
    if first:
        out.append(f"  {python_command().removesuffix('python')}harness reproduce {first}{uri}")
    out.append("  " + open_hint(tracking_uri, exp_id, job or first))
    return "\n".join(out)


#: The most headline variants a sweep's description shows as columns (MLflow's description
#: box is about 550 px wide); every variant is in each job's ``summary.csv``.
SWEEP_COLUMNS = 8


def sweep_description(jobs: SweepJobs, *, study: str, overrides: str,
                      failed: Sequence[str] = (), report_link: str = "",
                      parent_run_id: str = "") -> str:
    """Markdown for a sweep's parent run: one row per job and ranker (the job's overrides
    that not every job shares, the ranker, its means), a column per headline measure,
    cut-off and metric definition as the sweep's console table has them
    (:func:`~harness.app.sweep_columns.definition_columns`), the best of each column in
    bold (so only among means of one definition), then where the report comes from and its
    link.

    ``jobs`` maps a job's number to (its overrides, ranker -> summary table indexed by
    variant display name); ``report_link`` is where the report will be in MLflow's UI."""
    from harness.app.sweep_columns import definition_columns

    definitions, cells = definition_columns(jobs)
    columns = [m.display_name for m in definitions]
    shown = columns[:SWEEP_COLUMNS]
    shared = set.intersection(*(set(o) for o, _ in jobs.values())) if jobs else set()
    rows = [(num, " ".join(o for o in jobs[num][0] if o not in shared), ranker,
             [row.get(c, float("nan")) for c in shown]) for (num, ranker), row in cells.items()]
    by_column = [_bold_best(column, missing="") for column in zip(*(r[3] for r in rows))]
    shown_cells = list(zip(*by_column)) if by_column else [()] * len(rows)  # back to rows
    lead = ""
    if rows and shown:
        values = [r[3][0] for r in rows]
        best = max(range(len(rows)), key=lambda i: -1.0 if values[i] != values[i] else values[i])
        num, label, ranker, _ = rows[best]
        lead = (f"**Best on {_cell(shown[0])}: {_cell(ranker)} {values[best]:.4f}** in job "
                f"{num}" + (f" (`{_cell(label)}`)" if label else ""))
    head = [lead, "", f"Sweep `{_cell(overrides) or '(no overrides)'}` of study "
            f"`{_cell(study)}`: {len(jobs)} job(s) finished"
            + (f", {len(failed)} failed (job {', '.join(failed)})" if failed else "")
            + ". Mean per query under the headline variants, a column per metric definition, "
            "the best of each column in bold"
            + (f" ({len(columns) - len(shown)} more columns; " if columns[len(shown):]
               else " (") + "every variant: each job's `summary.csv` under `jobs/<n>/`)."]
    lines, previous = [], None
    for (num, label, ranker, _), row in zip(rows, shown_cells):
        first = num != previous
        previous = num
        lines.append(_row([num if first else "", f"`{_cell(label)}`" if first and label else "",
                           _cell(ranker), *row]))
    table = _table(["job", "overrides", "ranker", *(_cell(c) for c in shown)], [])
    table[2] = "|:---|:---|:---|" + "---:|" * len(shown)
    tail = ["", "**Report**: `harness compare " + (parent_run_id or "<this run's id>")
            + "` tests every pair of rankers for significance and logs its report to this run "
            "under `report/`" + (f" ([report/summary.html]({report_link}), report.html "
                                 "beside it, once written)" if report_link else "") + "."]
    return _fit(head + table, lines, tail, rest="each job's summary.csv")
