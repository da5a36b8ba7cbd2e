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
from typing import Any

import pandas as pd

from harness.errors import InputError
from harness.metrics.vocabulary.definition import CONVENTIONS, parse_metric

__all__ = ["ExplainPlan", "explain_plan", "explain_ranker", "write_explanations",
           "explanation_lines"]

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
    from matplotlib.figure import Figure

    folder.mkdir(parents=True, exist_ok=True)
    frames = [e.table.assign(from_definition=e.a.display_name, to_definition=e.b.display_name,
                             mean_from=e.mean_a, mean_to=e.mean_b) for e in explanations]
    csv = folder / f"{ranker}.csv"
    pd.concat(frames, ignore_index=True).to_csv(csv, index=False)
    fig = Figure(figsize=(7, 2.6 * len(explanations) + 0.4), dpi=72)
    for i, e in enumerate(explanations):
        ax = fig.add_subplot(len(explanations), 1, i + 1)
        labels = [f"a = {e.mean_a:.4f}", *e.table["option"], f"b = {e.mean_b:.4f}"]
        level, bottoms, heights, colors = e.mean_a, [0.0], [e.mean_a], ["0.5"]
        for c in e.table["contribution"]:
            bottoms.append(level if c >= 0 else level + c)
            heights.append(abs(c))
            colors.append("#009E73" if c >= 0 else "#D55E00")
            level += c
        bottoms.append(0.0)
        heights.append(e.mean_b)
        colors.append("0.5")
        ax.barh(range(len(labels))[::-1], heights, left=bottoms, color=colors)
        ax.set_yticks(range(len(labels))[::-1], labels, fontsize=7)
        ax.set_title(f"{ranker}: b - a = {e.difference:+.4f}, by option\na: "
                     f"{e.a.display_name}\nb: {e.b.display_name}", fontsize=7, loc="left")
        ax.tick_params(axis="x", labelsize=7)
    fig.subplots_adjust(left=0.2, right=0.97, top=0.86, bottom=0.08, hspace=1.0)
    png = folder / f"{ranker}.png"
    fig.savefig(png)
    for line in explanation_lines(explanations, ranker, csv):
        log.info("%s", line)
    return [csv, png]


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
