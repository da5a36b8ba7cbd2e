"""The explain stage of a study, the convention diff: ``explain.pairs=[[sklearn,trec_eval]]``
splits, for each ranker, the gap between each pair of definitions of ``explain.metric`` by
option, and writes ``explain/<ranker>.csv`` and a waterfall figure ``explain/<ranker>.png``
(logged to the ranker's MLflow run with its other files). The split itself is the library's
(:func:`harness.explain.explain_difference`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from harness.errors import InputError
from harness.metrics.vocabulary.definition import CONVENTIONS, parse_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ExplainPlan", "explain_plan", "explain_ranker", "write_explanations",
           "explanation_lines", "waterfall_figure"]

log = logging.getLogger("harness")


@dataclass(frozen=True)
class ExplainPlan:
    """The ``explain`` section, checked: the metric and the (a, b) pairs to split (none: the
    stage is off)."""

    metric: str
    pairs: tuple[tuple[str, str], ...] = ()


def explain_plan(metric: str, pairs: Sequence[Any]) -> ExplainPlan:
    """The ``explain`` section checked before any work: each side of a pair a convention or
    a metric name (and the metric a metric name when there is a pair)."""
    checked = []
    for i, pair in enumerate(pairs):
        if len(pair) != 2:
            raise InputError(f"explain.pairs[{i}] must be [a, b], got {list(pair)}",
                             key=f"explain.pairs[{i}]")
        for side in pair:
            if str(side) not in CONVENTIONS:
                try:
                    parse_metric(str(side))
                except Exception:  # noqa: BLE001 - one message for both kinds of mistake
                    raise InputError(f"explain.pairs[{i}]: {side!r} is neither a convention "
                                     f"({', '.join(CONVENTIONS)}) nor a metric name",
                                     key=f"explain.pairs[{i}]") from None
        checked.append((str(pair[0]), str(pair[1])))
    if checked:
        parse_metric(str(metric))
    return ExplainPlan(str(metric), tuple(checked))


def explain_ranker(run: pd.DataFrame, qrels: pd.DataFrame | None, metric: str,
                   pairs: Sequence[tuple[str, str]]) -> list[Any]:
    from harness.explain.shapley import explain_difference

    return [explain_difference(run, qrels, metric, a, b) for a, b in pairs]


def write_explanations(explanations: Sequence[Any], folder: Path, ranker: str) -> list[Path]:
    """``<ranker>.csv`` (one row per pair and option) and ``<ranker>.png`` (a waterfall per
    pair: from a's mean, each option's contribution, to b's mean)."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = [e.table.assign(from_definition=e.a.display_name, to_definition=e.b.display_name,
                             mean_from=e.mean_a, mean_to=e.mean_b) for e in explanations]
    csv = folder / f"{ranker}.csv"
    pd.concat(frames, ignore_index=True).to_csv(csv, index=False)
    from harness.reporting.figures import DPI

    png = folder / f"{ranker}.png"
    waterfall_figure(explanations, ranker).savefig(png, dpi=DPI)
    for line in explanation_lines(explanations, ranker, csv):
        log.info("%s", line)
    return [csv, png]


def waterfall_figure(explanations: Sequence[Any], ranker: str) -> Figure:
    """A waterfall per pair, one under the other: from a's mean, each option's contribution
    (green up, vermilion down; its value beside its name), to b's mean. Text of
    :data:`~harness.reporting.figures.FONT` pt, saved at its DPI like the study's figures;
    laid out by matplotlib's constrained layout, so the labels (however long the ranker's
    name or the definitions) stay on the canvas."""
    from matplotlib.figure import Figure

    from harness.reporting.figures import FONT, axis_ticks

    rows = [len(e.table) + 2 for e in explanations]
    fig = Figure(figsize=(10, sum(0.38 * r + 1.5 for r in rows)), layout="constrained")
    axes = fig.subplots(len(explanations), 1, squeeze=False,
                        height_ratios=[0.38 * r + 1.5 for r in rows])[:, 0]
    for ax, e in zip(axes, explanations):
        labels = [f"a = {e.mean_a:.4f}", *(f"{o} {c:+.4f}" for o, c in zip(
            e.table["option"], e.table["contribution"])), f"b = {e.mean_b:.4f}"]
        level, bottoms, heights, colors = e.mean_a, [0.0], [e.mean_a], ["0.5"]
        for c in e.table["contribution"]:
            bottoms.append(level if c >= 0 else level + c)
            heights.append(abs(c))
            colors.append("#009E73" if c >= 0 else "#D55E00")
            level += c
        bottoms.append(0.0)
        heights.append(e.mean_b)
        colors.append("0.5")
        ys = list(range(len(labels)))[::-1]
        ax.barh(ys, heights, left=bottoms, color=colors, zorder=2)
        ax.set_yticks(ys, labels, fontsize=FONT)
        top = max([1.0, *(b + h for b, h in zip(bottoms, heights))])
        ax.set_xlim(0, top)
        ax.set_xticks(axis_ticks(0.0, top))
        ax.grid(axis="x", color="0.88", lw=0.6, zorder=0)
        ax.tick_params(axis="x", labelsize=FONT)
        ax.set_title(f"{ranker}: b - a = {e.difference:+.4f}, by option\na: "
                     f"{e.a.display_name}\nb: {e.b.display_name}", fontsize=FONT + 1,
                     loc="left")
    return fig


def explanation_lines(explanations: Sequence[Any], ranker: str, csv: Path) -> list[str]:
    """What the console says of a ranker's convention diffs: per pair, both means, the gap
    and the options that move it (largest first, those that move it by 1e-4 or more), and
    where the table and the figure are."""
    out = []
    for e in explanations:
        moves = e.table[e.table["contribution"].abs() >= 1e-4].sort_values(
            "contribution", key=abs, ascending=False)
        parts = ", ".join(f"{row.option} {row.contribution:+.4f}" for row in
                          moves.itertuples()) or "no option moves it by 1e-4 or more"
        out.append(f"explain {ranker}: {e.a.display_name} {e.mean_a:.4f} -> "
                   f"{e.b.display_name} {e.mean_b:.4f} ({e.difference:+.4f}): {parts}")
    out.append(f"explain {ranker}: the table by option in {csv}, the waterfall in "
               f"{csv.with_suffix('.png')}")
    return out
