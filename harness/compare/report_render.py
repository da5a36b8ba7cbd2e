"""Rendering a comparison report's parts (:class:`ReportParts`, computed once by
:func:`harness.compare.report.build_report`) as Markdown, LaTeX and self-contained HTML."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from harness.compare.load import Sweep

__all__ = ["LONG_TABLE", "ReportParts", "markdown_report", "latex_report", "html_report",
           "summary_html"]


_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px;color:#222}
table{border-collapse:collapse;font-size:12px;margin:.6em 0}th,td{border:1px solid #ccc;
padding:2px 6px;text-align:right;white-space:nowrap}th{background:#f3f3f3}
td:first-child{text-align:left}
.note{color:#555;font-size:13px}img{max-width:100%;border:1px solid #eee;margin:.3em 0}
pre{background:#f7f7f7;padding:.6em;font-size:11px;overflow-x:auto}
.wide{overflow-x:auto;max-width:100%}.fit td{white-space:normal;min-width:5em}
summary h2{display:inline}summary{cursor:pointer;margin:.8em 0}
.wide td:first-child,.wide th:first-child{position:sticky;
left:0;background:#fff}.wide th:first-child{background:#f3f3f3}"""


#: Above this many variants the Kendall tau matrix is shown as a heatmap only (and CSV).
_MAX_TAU_TABLE = 12
#: A table of more rows is collapsed in the HTML report (``<details>``), after the figures.
LONG_TABLE = 15


@dataclass(frozen=True)
class ReportParts:
    """Everything a report shows, computed once and rendered per format."""

    title: str
    settings: list[tuple[str, str]]
    findings: list[str]
    tables: dict[str, tuple[str, pd.DataFrame, bool]]
    notes: list[str]
    figures: dict[str, list[tuple[str, Path]]]
    provenance: dict[str, pd.DataFrame]
    sweep: Sweep


def _markdown(df: pd.DataFrame, index: bool = False, marks: bool = False) -> str:
    """A GitHub-flavoured Markdown table (``|`` in cells escaped); ``marks``: a cell
    ``0.91^ac`` shows its letters as a real superscript (``<sup>ac</sup>``)."""
    if index:
        df = df.reset_index()
    def cell(v: Any) -> str:
        text = str(v).replace("|", "\\|").replace("\n", " ")
        if marks and "^" in text:
            number, _, sup = text.partition("^")
            text = f"{number}<sup>{html.escape(sup)}</sup>"
        return text
    lines = ["| " + " | ".join(cell(c) for c in df.columns) + " |",
             "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines)


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _ties_note(parts: ReportParts) -> str:
    return next((n for n in parts.findings if n.startswith("tie-sensitivity")), "")


#: The headline table's caption, in every format.
_HEADLINE = ("Headline variants: mean per query (superscripts: the rankers it is significantly "
             "better than) and winner")


def _md_figures(parts: ReportParts, group: str) -> list[str]:
    """Markdown images of a figure group, by their path in the report's folder, a paragraph
    each (one under the other)."""
    return [line for name, path in parts.figures[group]
            for line in (f"![{_md_escape(name)}](figures/{path.name})", "")]


def _md_escape(text: str) -> str:
    """Text in Markdown brackets (an image's alt text): ``[`` and ``]`` escaped."""
    return re.sub(r"([][\\])", r"\\\1", text)


def _md_table(key: str, caption: str, frame: pd.DataFrame, index: bool) -> list[str]:
    """A table under its caption; a long one (more than :data:`LONG_TABLE` rows) collapsed
    in ``<details>`` as in the HTML report (GitHub and most viewers render it)."""
    table = _markdown(frame, index, marks=key == "means")
    if len(frame) <= LONG_TABLE:
        return [f"## {caption}", "", table, ""]
    return [f"<details><summary><b>{html.escape(caption)} ({len(frame)} rows)</b></summary>",
            "", table, "", "</details>", ""]


def markdown_report(parts: ReportParts) -> str:
    """The report as Markdown, in the HTML report's order: the findings, the headline means
    and the figures first; the settings and the tables after them, the long ones collapsed;
    notes and provenance last. Figures are linked from ``figures/`` beside it."""
    prov, sweep = parts.provenance, parts.sweep
    md = [f"# {parts.title}", "", "## Findings", "", *[f"- {n}" for n in parts.findings], ""]
    headline = _headline(parts)
    if headline is not None:
        md += [f"## {_HEADLINE}", "", _markdown(headline, True, marks=True), ""]
    md += ["## Per-query distributions", "", *_md_figures(parts, "distributions"),
           "## Paired differences per comparison", "", *_md_figures(parts, "differences"),
           "## Settings", "", *[f"- **{k}**: {v}" for k, v in parts.settings], ""]
    for key, (caption, frame, index) in parts.tables.items():
        if key == "ties" and frame.empty:
            md += [f"## {caption}", "", _ties_note(parts), ""]
        elif key == "tau" and len(frame) > _MAX_TAU_TABLE:
            md += [f"## {caption}", "", f"{len(frame)} x {len(frame)}: see kendall_tau.csv", ""]
        else:
            md += _md_table(key, caption, frame, index)
        if key == "tau":
            md += _md_figures(parts, "tau")
    md += ["## Notes", "", *[f"- {n}" for n in parts.notes], ""]
    md += ["## Provenance", "", *_md_table("runs", "Runs", prov["runs"], False),
           f"- git commits: {', '.join(sweep.provenance['git_commits'])}",
           f"- harness versions: {', '.join(sweep.provenance['harness_versions'])}", "",
           *_md_table("environments", "Environments", prov["environments"], True)]
    return "\n".join(md) + "\n"


def latex_report(parts: ReportParts) -> str:
    from harness.compare.latex import latex_document_tables

    tables = []
    for key in ("verdicts", "means", "comparison", "winners", "power", "ties"):
        if key not in parts.tables:  # no verdicts without a baseline
            continue
        caption, frame, index = parts.tables[key]
        if frame.empty:
            continue
        if key == "verdicts":  # the numbers that decided each are in the HTML and CSV
            frame = frame.drop(columns=["decided by"])
        frame = frame.reset_index() if index else frame
        if key == "comparison":  # the deciding test's corrected p-value is enough on paper
            drop = ["p t", "p Wilcoxon", "p perm"]
            if not frame["dropped"].astype(float).any():
                drop.append("dropped")
            frame = frame.drop(columns=drop)
        tables.append((caption, frame, key == "means"))
    return latex_document_tables(parts.title, tables)


def _html_marked(frame: pd.DataFrame) -> str:
    """The means table with its ``^letters`` marks as superscripts (escaped by hand)."""
    shown = frame.map(lambda v: "<sup>".join(map(html.escape, str(v).split("^", 1)))
                      + ("</sup>" if "^" in str(v) else ""))
    shown.index = [html.escape(str(i)) for i in shown.index]
    shown.columns = [html.escape(str(c)) for c in shown.columns]
    return shown.to_html(border=0, escape=False)


def _headline(parts: ReportParts) -> pd.DataFrame | None:
    """The means of the headline variants (per metric family the one with every convention
    at its default), with their marks and the winner: the table the report opens on."""
    from harness.reporting.figures import headline_names

    if "means" not in parts.tables or "winners" not in parts.tables:
        return None
    means, winners = parts.tables["means"][1], parts.tables["winners"][1]
    heads = headline_names(means.index)
    out = means.loc[heads].copy()
    out["winner"] = [_winner(winners, v) if v in winners.index else "" for v in heads]
    return out


def _winner(winners: pd.DataFrame, variant: str) -> str:
    """The leader when significant, ``tie: a = b`` (the rankers the test cannot separate
    from it) when not, ``<leader> (untested)`` without a test."""
    significant = winners.at[variant, "significant"]
    if significant == "yes":
        return str(winners.at[variant, "winner"])
    if significant == "no: tie":
        return f"tie: {winners.at[variant, 'top']}"
    return f"{winners.at[variant, 'winner']} (untested)"


def _table_html(key: str, caption: str, frame: pd.DataFrame, index: bool) -> str:
    """A table in its own scrolling box (first column fixed); a long one (more than
    :data:`LONG_TABLE` rows) collapsed under its caption, the verdicts' open; text columns of
    the verdicts wrap instead of running off the page."""
    inner = _html_marked(frame) if key == "means" else frame.to_html(index=index, border=0,
                                                                     na_rep="")
    box = f'<div class="wide{" fit" if key == "verdicts" else ""}">{inner}</div>'
    if len(frame) <= LONG_TABLE:
        return f"<h2>{html.escape(caption)}</h2>{box}"
    return (f"<details{' open' if key == 'verdicts' else ''}><summary><h2>"
            f"{html.escape(caption)} ({len(frame)} rows)</h2></summary>{box}</details>")


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _opening(parts: ReportParts) -> list[str]:
    """The title, the findings and the headline table: what both pages open on."""
    body = [f"<h1>{html.escape(parts.title)}</h1>", "<h2>Findings</h2><ul>"]
    body += [f"<li>{html.escape(n)}</li>" for n in parts.findings] + ["</ul>"]
    headline = _headline(parts)
    if headline is not None:
        body.append(_table_html("means", _HEADLINE, headline, True))
    return body


def summary_html(parts: ReportParts) -> str:
    """The light page of the report (``summary.html``, a few hundred kB): the findings, the
    headline table and the overview figure only, for MLflow's artifact preview; it names
    ``report.html`` beside it, with every table and figure."""
    body = _opening(parts)
    body.insert(1, '<p class="note">The summary of this comparison; every table and figure '
                "is in <code>report.html</code> in the same folder (in MLflow: Artifacts, "
                "then download it).</p>")
    body += [_img(p, n) for n, p in parts.figures["distributions"][:1]]
    return _page(f"{parts.title} (summary)", body)


def html_report(parts: ReportParts) -> str:
    """The report in one page: the findings, the headline means and the figures first; the
    settings and the tables after them, the long ones collapsed; notes and provenance last."""
    prov, sweep = parts.provenance, parts.sweep
    body = _opening(parts) + ["<h2>Per-query distributions</h2>"]
    body += [_img(p, n) for n, p in parts.figures["distributions"]]
    body.append("<h2>Paired differences per comparison</h2>")
    body += [_img(p, n) for n, p in parts.figures["differences"]]
    body += ["<h2>Settings</h2><table>"]
    body += [f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
             for k, v in parts.settings] + ["</table>"]
    for key, (caption, frame, index) in parts.tables.items():
        if key == "ties" and frame.empty:
            body.append(f'<h2>{html.escape(caption)}</h2><p class="note">'
                        f"{html.escape(_ties_note(parts))}</p>")
        elif key != "tau" or len(frame) <= _MAX_TAU_TABLE:
            body.append(_table_html(key, caption, frame, index))
        else:
            body.append(f"<h2>{html.escape(caption)}</h2>")
        if key == "tau":
            body += [_img(p, n) for n, p in parts.figures["tau"]]
    body += ["<h2>Notes</h2><ul>", *[f"<li>{html.escape(n)}</li>" for n in parts.notes],
             "</ul>"]
    body += ["<h2>Provenance</h2>", _table_html("runs", "Runs", prov["runs"], False),
             f"<p>git commits: {html.escape(', '.join(sweep.provenance['git_commits']))}; "
             "harness versions: "
             f"{html.escape(', '.join(sweep.provenance['harness_versions']))}</p>",
             _table_html("environments", "Environments", prov["environments"], True)]
    if not prov["varying"].empty:
        body.append(_table_html("varying", "Params that differ between runs",
                                prov["varying"], True))
    overrides = sweep.provenance["parent_tags"].get("sweep.overrides")
    if overrides:
        body.append(f"<p>sweep overrides: <code>{html.escape(overrides)}</code></p>")
    body.append(f"<details><summary>resolved config of run "
                f"{html.escape(sweep.provenance['config_run_id'])}</summary>"
                f"<pre>{html.escape(sweep.provenance['config'])}</pre></details>")
    return _page(parts.title, body)
