"""Distribution figures: one ECDF line and histogram per ranker for a metric variant."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["ecdf_figure"]


#: Above this many queries the ECDF is drawn through this many order statistics.
ECDF_POINTS = 4000


def ecdf_steps(data: np.ndarray, points: int = ECDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The ECDF at about ``points`` evenly spaced order statistics (and 0 before the
    smallest): exact at each of them, for drawing with ``where="post"``."""
    x = np.sort(data)
    i = np.unique(np.linspace(0, len(x) - 1, points).round().astype(np.int64))
    at = x[i]
    return np.r_[x[0], at], np.r_[0.0, np.searchsorted(x, at, side="right") / len(x)]


def ecdf_figure(values: Mapping[str, pd.Series], title: str, path: Path) -> Path:
    """Save a PNG with the ECDF (left) and histogram (right) of each ranker's per-query
    values of one metric variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_ecdf, ax_hist) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=90)
    bins = np.linspace(0, 1, 21)
    finite = [v.dropna().to_numpy() for v in values.values()]
    upper = max((float(f.max()) for f in finite if len(f)), default=1.0)
    if upper > 1:
        bins = np.linspace(0, upper, 21)
    for name, data in zip(values, finite):
        if not len(data):
            continue
        label = f"{name} (mean {data.mean():.4f})"
        if len(data) <= ECDF_POINTS:
            ax_ecdf.ecdf(data, label=label)
        else:  # the same picture, through ECDF_POINTS order statistics
            ax_ecdf.step(*ecdf_steps(data), where="post", label=label)
        ax_hist.hist(data, bins=bins, histtype="step", label=name)
    ax_ecdf.set(xlabel=title, ylabel="share of queries <= x", title="ECDF", ylim=(0, 1))
    ax_hist.set(xlabel=title, ylabel="queries", title="histogram")
    ax_ecdf.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
