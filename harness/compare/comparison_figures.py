"""Figures of a comparison: paired differences per ranker pair, the Kendall tau heatmap.

Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot state, no
backend switch), so they work the same in scripts, tests and notebooks; :func:`png_bytes`
renders one at :data:`harness.reporting.figures.DPI` (150), about 1,650 px wide, every text
at least :data:`harness.reporting.figures.FONT` (10) pt. Per-ranker distributions reuse
:func:`harness.reporting.ecdf_figure`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from harness.compare.stats import TIE_TOLERANCE, align_pair, per_query_frame
from harness.reporting.figures import DPI, FONT

#: Okabe-Ito vermillion: the mean differences and their intervals.
_MEAN_COLOR = "#D55E00"

__all__ = ["distribution_figure", "paired_difference_figure", "tau_heatmap", "png_bytes"]


def png_bytes(fig: Figure, *, dpi: int = DPI) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def distribution_figure(per_query: Mapping[str, pd.DataFrame], variant: str,
                        path: str | Path) -> Path:
    """PNG of each ranker's per-query distribution (ECDF and histogram) under ``variant``,
    for the rankers that hold it (:func:`harness.reporting.ecdf_figure`)."""
    from harness.reporting.figures import ecdf_figure

    frames = {label: per_query_frame(f) for label, f in per_query.items()}
    return ecdf_figure({label: f[variant] for label, f in frames.items()
                        if variant in f.columns}, variant, Path(path), rankers=frames)


def paired_difference_figure(per_query: Mapping[str, pd.DataFrame], comparison: pd.DataFrame,
                             ranker_a: str, ranker_b: str) -> Figure:
    """Per-query differences ``a - b`` of one ranker pair, one row per variant.

    Each row shows the differences' box plot (queries as dots), the mean difference and its
    bootstrap interval from ``comparison`` (filled when significant) and the win/tie/loss
    counts.
    """
    rows = comparison[(comparison["ranker_a"] == ranker_a) & (comparison["ranker_b"]
                                                              == ranker_b)]
    fa, fb = per_query_frame(per_query[ranker_a]), per_query_frame(per_query[ranker_b])
    diffs = []
    for variant in rows["variant"]:
        x, y, _, _ = align_pair(fa[variant], fb[variant])
        d = x - y
        d[np.abs(d) <= TIE_TOLERANCE] = 0.0
        diffs.append(d)
    n = len(rows)
    fig = Figure(figsize=(11, 1.9 + 0.5 * n), dpi=DPI)
    ax = fig.add_subplot()
    positions = np.arange(n)[::-1]
    if n:
        box: dict[str, Any] = {"positions": positions, "widths": 0.5, "showfliers": False,
               "medianprops": {"color": "0.35"}}
        try:
            ax.boxplot(diffs, orientation="horizontal", **box)
        except TypeError:  # matplotlib < 3.10
            ax.boxplot(diffs, vert=False, **box)
        rng = np.random.default_rng(0)
        for pos, d in zip(positions, diffs):
            ax.scatter(d, pos + rng.uniform(-0.18, 0.18, len(d)), s=5, color="0.6",
                       alpha=0.6, linewidths=0)
        sig = rows["significant"].to_numpy(dtype=bool)
        mean = rows["mean_diff"].to_numpy(dtype=np.float64)
        # a constant difference: the CI equals the mean up to round-off, never beyond it
        err = np.vstack([mean - rows["ci_low"].to_numpy(dtype=np.float64),
                         rows["ci_high"].to_numpy(dtype=np.float64) - mean])
        ax.errorbar(mean, positions, xerr=np.clip(np.nan_to_num(err), 0, None), fmt="none",
                    ecolor=_MEAN_COLOR, capsize=3, zorder=3)
        ax.scatter(mean[sig], positions[sig], color=_MEAN_COLOR, zorder=4,
                   label="mean, significant")
        ax.scatter(mean[~sig], positions[~sig], facecolor="white", edgecolor=_MEAN_COLOR,
                   zorder=4, label="mean, not significant")
        labels = [f"{v}  ({w}/{t}/{lo})" for v, w, t, lo in
                  zip(rows["variant"], rows["wins"], rows["ties"], rows["losses"])]
        ax.set_yticks(positions, labels, fontsize=FONT)
        # above the plot, right of the title: it never hides a row
        ax.legend(fontsize=FONT, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2,
                  frameon=False, borderaxespad=0.2)
    ax.axvline(0, color="0.2", linewidth=0.8)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.grid(True, axis="x", color="0.88", lw=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel(f"per-query difference: {ranker_a} - {ranker_b}  (mean with 95% bootstrap "
                  "interval; W/T/L)", fontsize=FONT + 1)
    ax.set_title(f"{ranker_a} vs {ranker_b}", fontsize=FONT + 2, loc="left")
    fig.tight_layout()
    return fig


def tau_heatmap(tau: pd.DataFrame) -> Figure:
    """Kendall's tau between the ranker orderings under each pair of variants."""
    n = len(tau)
    size = min(4.0 + 0.55 * n, 11.0)  # at most 13 in (1,950 px) wide
    fig = Figure(figsize=(size + 2.0, size), dpi=DPI)
    ax = fig.add_subplot()
    image = ax.imshow(tau.to_numpy(dtype=np.float64), vmin=-1, vmax=1, cmap="RdBu")
    ax.set_xticks(range(n), tau.columns, rotation=60, ha="right", fontsize=FONT)
    ax.set_yticks(range(n), tau.index, fontsize=FONT)
    if n <= 16:
        for i in range(n):
            for j in range(n):
                value = tau.iat[i, j]
                ax.text(j, i, "-" if value != value else f"{value:.2f}", ha="center",
                        va="center", fontsize=FONT,
                        color="white" if value == value and abs(value) > 0.6 else "black")
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("Kendall's tau-b of the ranker orderings", fontsize=FONT + 1)
    bar.ax.tick_params(labelsize=FONT)
    ax.set_title("Do the variants order the rankers alike?", fontsize=FONT + 2)
    fig.tight_layout()
    return fig
