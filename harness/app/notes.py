"""What a person reads about a study: MLflow run descriptions and the closing summary.

MLflow shows a run's ``mlflow.note.content`` tag (Markdown) as its description; the closing
summary is printed when a job ends, with the run ids and the follow-up commands filled in.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from harness.metrics import Metric
from harness.reporting.figures import headline_variants

__all__ = ["DEFAULTS_LINE", "ranker_description", "study_description", "closing_summary",
           "interval"]

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
    from harness.metrics.options import OPTIONS

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


def ranker_description(name: str, summary: pd.DataFrame, metrics: Sequence[Metric], *,
                       study: str, dataset: str) -> str:
    """Markdown: the ranker's table of every variant (mean, 95% CI, queries)."""
    lines = [f"**{name}** on dataset `{dataset}` (study `{study}`): mean per query with its "
             "95% bootstrap CI.", "", "| variant | mean | 95% CI | queries |", "|---|---|---|---|"]
    for m in metrics:
        row = summary.loc[m.display_name]
        ci = "" if row["ci_low"] != row["ci_low"] else \
            f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
        lines.append(f"| `{m.display_name}` | {row['mean']:.4f} | {ci} | "
                     f"{int(row['n_queries'])} |")
    lines += ["", DEFAULTS_LINE, "", "Per-query values: `per_query.csv` (viewable here) and "
              "the exact `*.parquet` among the artifacts."]
    return "\n".join(lines)


def study_description(summaries: Mapping[str, pd.DataFrame], metrics: Sequence[Metric], *,
                      study: str, dataset: str, title: str) -> str:
    """Markdown: the ranker x variant table of means with CIs."""
    names = list(summaries)
    lines = [f"Study `{study}` on dataset `{dataset}`" + (f" ({title})" if title else "")
             + f": {len(names)} ranker(s) x {len(metrics)} variant(s). Mean per query; "
             "each ranker run's description has the 95% CIs.", "",
             "| variant | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for m in metrics:
        cells = [f"{summaries[n].at[m.display_name, 'mean']:.4f}" for n in names]
        lines.append(f"| `{m.display_name}` | " + " | ".join(cells) + " |")
    lines += ["", DEFAULTS_LINE]
    return "\n".join(lines)


def closing_summary(*, study: str, seconds: float, summaries: Mapping[str, pd.DataFrame],
                    metrics: Sequence[Metric], n_queries: int, output_dir: Path,
                    run_ids: Mapping[str, str], tracking_uri: str | None,
                    experiment: str | None) -> str:
    """The text printed when a job ends: headline table, run ids, files, next commands."""
    heads = headline_variants(metrics)
    heads = ([m for m in heads if m.k in (10, None)] + [m for m in heads if m.k not in (10, None)])[:4]
    names = list(summaries)
    width = max([len(n) for n in names] + [6])
    cols = [m.display_name for m in heads]
    colw = [max(len(c), 26) for c in cols]
    out = [f"Study {study!r} done in {seconds:.1f}s: {len(names)} ranker(s) x "
           f"{len(metrics)} variant(s) x {n_queries} queries. Mean [95% CI]:", "",
           "  " + "ranker".ljust(width) + "  " + "  ".join(c.ljust(w) for c, w in
                                                          zip(cols, colw))]
    for n in names:
        cells = [interval(summaries[n].loc[c]).ljust(w) for c, w in zip(cols, colw)]
        out.append("  " + n.ljust(width) + "  " + "  ".join(cells))
    out += ["", f"Files: {output_dir}"]
    job = run_ids.get("job")
    if not run_ids or not tracking_uri:
        out.append("MLflow: not logged (tracking off).")
        return "\n".join(out)
    out.append(f"MLflow: {tracking_uri}, experiment {experiment!r}")
    if job:
        out.append(f"  {'job run'.ljust(width)}   {job}")
    for n in names:
        if run_ids.get(f"ranker:{n}"):
            out.append(f"  {n.ljust(width)}   {run_ids[f'ranker:{n}']}")
    from harness.tracking import resolve_tracking_uri

    default = tracking_uri == resolve_tracking_uri(None)
    uri = "" if default else f" --tracking-uri {shlex.quote(tracking_uri)}"
    first = run_ids.get(f"ranker:{names[0]}") if names else None
    out += ["", "Next:"]
    if job and len(names) > 1:
        out.append(f"  {python_command().removesuffix('python')}harness compare {job} "
                   f"--baseline {'random' if 'random' in names else names[0]}{uri}")
    if first:
        out.append(f"  {python_command().removesuffix('python')}harness reproduce {first}{uri}")
    mlflow = python_command().removesuffix("python") + "mlflow" if python_command() != \
        "python" else "mlflow"
    ui = ("make ui" if default else
          f"{mlflow} ui --backend-store-uri {shlex.quote(tracking_uri)}")
    out.append(f"  {ui}    # then open http://127.0.0.1:5000")
    return "\n".join(out)
