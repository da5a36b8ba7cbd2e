"""Figures a person can read: one colour per ranker in every figure of a job and of its
report, legends outside the curves, an ECDF's 0 and 1 off the frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

from harness.reporting import figures
from harness.reporting.colors import PALETTE, ranker_colors


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every Figure the module saves, kept instead of written."""
    kept: list[Any] = []

    def keep(fig: Any, path: Path) -> Path:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig).draw()  # lay out the legend, as saving would
        kept.append(fig)
        return Path(path)

    monkeypatch.setattr(figures, "_save", keep)
    return kept


def _tables(names: list[str], seed: int = 0) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    values = {n: np.r_[rng.uniform(0, 1, 30), np.ones(10)] for n in names}  # many at 1.0
    return {n: pd.DataFrame({"nDCG@10": v, "AP@10": v[::-1]}) for n, v in values.items()}


def _legend_colors(fig: Any) -> dict[str, str]:
    (legend,) = fig.legends
    return {t.get_text().split(" (")[0]: mcolors.to_hex(h.get_color())
            for t, h in zip(legend.get_texts(), legend.legend_handles)}


def test_a_ranker_keeps_its_colour_whatever_the_order_and_figure(drawn: list[Any]) -> None:
    names = ["zeta", "alpha", "mid"]
    figures.overview_figure(_tables(names), ["nDCG@10", "AP@10"], Path("o.png"))
    figures.ecdf_figure({n: t["nDCG@10"] for n, t in _tables(names[::-1]).items()},
                        "nDCG@10", Path("e.png"))
    expected = ranker_colors(names)
    assert expected == {"alpha": PALETTE[0], "mid": PALETTE[1], "zeta": PALETTE[2]}
    for fig in drawn:
        assert _legend_colors(fig) == {n: c.lower() for n, c in expected.items()}


def test_legends_sit_outside_the_plotting_area(drawn: list[Any]) -> None:
    figures.ecdf_figure({n: t["nDCG@10"] for n, t in _tables(["a", "b", "c", "d"]).items()},
                        "nDCG@10", Path("e.png"))
    (fig,) = drawn
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    for ax in fig.axes:
        assert not legend.overlaps(ax.get_window_extent(renderer))


def test_an_ecdf_at_one_is_drawn_inside_the_frame(drawn: list[Any]) -> None:
    figures.family_figure(_tables(["a", "b"]), ["nDCG@10", "AP@10"], Path("f.png"))
    (fig,) = drawn
    (ax,) = fig.axes
    lines = ax.get_lines()
    frame = lines[-1].get_xydata()  # the panels' frames are drawn last, as one line
    # the light grid first (its lines span the frames), then the curves
    curves = np.vstack([line.get_xydata() for line in lines[1:-1]])
    curves = curves[~np.isnan(curves).any(axis=1)]
    tops = np.nanmax(frame[:, 1])
    bottoms = np.nanmin(frame[:, 1])
    # each panel: the ECDF reaches 1 below its frame's top and starts at 0 above its bottom
    assert curves[:, 1].max() < tops and curves[:, 1].min() > bottoms
    right = np.nanmax(frame[:, 0])
    assert curves[:, 0].max() < right  # values of exactly 1.0 stay left of the frame
