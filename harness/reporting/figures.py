"""Distribution figures of a study, drawn from per-query tables, cheaply.

What a person looks at first is how the rankers' per-query values are distributed under the
headline variants, so that is one figure, ``overview.png``. Every variant's distribution is
in one small-multiples figure per metric family (``family-<name>.png``). The two-panel
figure of one variant (ECDF and histogram, :func:`ecdf_figure`) is drawn for the headline
variants, or for all variants on request (``mode="all"``).

All figures are :class:`matplotlib.figure.Figure` objects (no pyplot state), laid out with
fixed margins (no ``tight_layout``), rendered by Agg at :data:`DPI`. They are sized to be
read where they are shown (MLflow's artifact view, the compare report): about 1,650-1,910
px wide, every text at least :data:`FONT` pt at the saved size, ticks at 0, 0.25, 0.5, 0.75
and 1 on a [0, 1] axis with a light grid, one colour-blind-safe colour per ranker
(:func:`harness.reporting.colors.ranker_colors`). ECDFs are drawn through at most
:data:`PANEL_POINTS` order statistics per line, exact at each of them. matplotlib is
imported only when a figure is drawn. A legend too wide for its figure wraps onto more rows
and a title wider than the panels widens the canvas: nothing runs off it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.reporting.colors import ranker_colors

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from harness.metrics import Metric

__all__ = ["FIGURE_MODES", "figure_mode", "headline_variants", "headline_names",
           "study_figures", "overview_figure", "family_figure", "ecdf_figure", "ecdf_steps",
           "axis_ticks"]

#: ``tracking.figures``: headline (overview, families, headline variants) | all (every
#: variant's own figure too) | off. ``true`` means headline, ``false`` off.
FIGURE_MODES = ("headline", "all", "off")
#: Above this many queries the two-panel ECDF is drawn through this many order statistics.
ECDF_POINTS = 4000
#: Order statistics per ECDF line in a small-multiples panel.
PANEL_POINTS = 256
#: Pixels per inch of the saved PNGs: a 4-column small-multiples figure is 1,912 px wide.
DPI = 150
#: The smallest text (tick labels, legend) in points; titles are larger.
FONT = 10
#: Ticks of an axis spanning [0, 1].
UNIT_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
_PANEL, _GAP = (2.6, 1.9), (0.4, 0.75)  # inches per small-multiples panel, between panels
_MARGIN = {"left": 0.85, "right": 0.3, "top": 1.05, "bottom": 0.4}  # inches
_GRID: dict[str, Any] = {"color": "0.88", "lw": 0.6}  # the light grid behind the curves
_YPAD = 0.04  # share of a panel's height kept free below 0 and above 1
_LEGEND_ROW, _LEGEND_SIDE = 0.27, 0.1  # inches: one more legend row; kept free at the sides


def figure_mode(value: Any) -> str:
    """The figure mode of a ``tracking.figures`` value: one of :data:`FIGURE_MODES`, or a
    boolean (``true``: headline, ``false``: off, as before modes existed)."""
    if isinstance(value, bool) or value is None:
        return "headline" if value else "off"
    text = str(value).strip().lower()
    text = {"true": "headline", "false": "off", "none": "off"}.get(text, text)
    if text not in FIGURE_MODES:
        raise InputError(f"tracking.figures must be one of {', '.join(FIGURE_MODES)} "
                         f"(or true/false); got {value!r}", column="tracking.figures")
    return text


def headline_variants(metrics: Sequence[Metric]) -> list[Metric]:
    """Per metric family (``name``), the variants with every convention at its default (the
    ones printed without options, such as ``nDCG@10``); the family's first variant when it
    has none."""
    out: list[Metric] = []
    for name in dict.fromkeys(m.name for m in metrics):
        family = [m for m in metrics if m.name == name]
        out += [m for m in family if not m.options()] or family[:1]
    return out


def headline_names(variants: Iterable[str]) -> list[str]:
    """The headline variants (:func:`headline_variants`) among display names, in their
    order; a name that is no metric is skipped; every name when none is a headline."""
    from harness.errors import MetricDefinitionError
    from harness.metrics import parse_metric

    names, metrics = list(variants), []
    for variant in names:
        try:
            metrics.append(parse_metric(variant))
        except MetricDefinitionError:
            continue
    return [m.display_name for m in headline_variants(metrics)
            if m.display_name in names] or names


def study_figures(per_query: Mapping[str, pd.DataFrame], metrics: Sequence[Metric],
                  out_dir: Path, *, mode: str = "headline",
                  progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None
                  ) -> list[Path]:
    """Draw a study's figures into ``out_dir``; returns their paths.

    Parameters
    ----------
    per_query : mapping of str to DataFrame
        Ranker name -> per-query table with one column per variant display name.
    metrics : sequence of Metric
        The variants, in study order.
    out_dir : Path
        Folder for the PNG files (created).
    mode : {'headline', 'all', 'off'}, default 'headline'
        ``headline``: ``overview.png``, ``family-<name>.png`` for families of several
        variants, and ``<key>.png`` for each headline variant; ``all``: ``<key>.png`` for
        every variant as well; ``off``: nothing.
    progress : callable, optional
        Wraps the iterable of figures to draw (e.g. a progress bar).
    """
    mode = figure_mode(mode)
    if mode == "off":
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    headline = headline_variants(metrics)
    families = {m.name: [v for v in metrics if v.name == m.name] for m in metrics}
    jobs: list[tuple[Path, Callable[[Path], Path]]] = [(out_dir / "overview.png", lambda p: (
        overview_figure(per_query, [m.display_name for m in headline], p)))]
    for name, family in families.items():
        if len(family) > 1:
            jobs.append((out_dir / f"family-{name}.png", partial(
                family_figure, per_query, [m.display_name for m in family],
                title=f"{name} family: every variant (ECDF)")))
    for m in metrics if mode == "all" else []:
        jobs.append((out_dir / f"{m.key}.png", partial(
            ecdf_figure, {r: t[m.display_name] for r, t in per_query.items()}, m.display_name)))
    return [draw(path) for path, draw in (progress or iter)(jobs)]


def overview_figure(per_query: Mapping[str, pd.DataFrame], variants: Sequence[str],
                    path: Path) -> Path:
    """One ECDF panel per variant (the headline ones), every ranker in each panel, each
    ranker's mean marked by a triangle; saved as PNG at ``path``."""
    return _small_multiples(per_query, variants, path, title="per-query distributions of the "
                            "headline variants (ECDF; triangles: means)", mark_means=True)


def family_figure(per_query: Mapping[str, pd.DataFrame], variants: Sequence[str],
                  path: Path, *, title: str = "") -> Path:
    """Small multiples: one ECDF panel per variant of a metric family; saved at ``path``."""
    return _small_multiples(per_query, variants, path, title=title, mark_means=False)


def _small_multiples(per_query: Mapping[str, pd.DataFrame], variants: Sequence[str],
                     path: Path, *, title: str, mark_means: bool) -> Path:
    """Panels drawn on one canvas in inch coordinates: one line per ranker through every
    panel (NaN-separated), one line for all frames, figure text for titles and tick labels. A
    matplotlib Axes per panel costs ~35 ms in ticks and layout; this costs a few ms."""
    from matplotlib.figure import Figure

    cols = min(len(variants), 4 if len(variants) <= 16 else 6)
    rows = -(-len(variants) // cols)
    (pw, ph), (gx, gy) = _PANEL, _GAP
    width = _MARGIN["left"] + cols * pw + (cols - 1) * gx + _MARGIN["right"]
    height = _MARGIN["bottom"] + rows * ph + (rows - 1) * gy + _MARGIN["top"]
    fig = Figure(figsize=(width, height), dpi=DPI)
    left = _MARGIN["left"] + max(0.0, _text_width(fig, title, FONT + 3) - width) / 2
    width += 2 * (left - _MARGIN["left"])  # a title wider than the panels widens the canvas
    fig.set_size_inches(width, height)
    colors = list(ranker_colors(per_query).items())
    legend = {"handles": _handles(dict(colors)), "fontsize": FONT + 1, "frameon": False,
              "handlelength": 2.5, "columnspacing": 2.0}
    ncol = _legend_columns(fig, legend, min(len(per_query), 6))
    height += _LEGEND_ROW * (-(-len(per_query) // ncol) - 1)  # a row more each, above
    fig.set_size_inches(width, height)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set(xlim=(0, width), ylim=(0, height))

    def put(x: float, y: float, text: str, **options: Any) -> None:  # at (x, y) inches
        fig.text(x, y, text, transform=fig.dpi_scale_trans, **options)  # no clip path

    lines: dict[str, list[np.ndarray]] = {r: [] for r in per_query}
    frames, grid, marks, mark_colors = [], [], [], []
    for n, variant in enumerate(variants):
        r, c = divmod(n, cols)
        x0 = left + c * (pw + gx)
        y0 = _MARGIN["bottom"] + (rows - 1 - r) * (ph + gy)
        data = [(name, color, _finite(per_query[name][variant])) for name, color in colors
                if variant in per_query[name]]  # a compare may hold a variant for a few
        lo = min([0.0, *(float(d.min()) for _, _, d in data if len(d))])
        hi = max([1.0, *(float(d.max()) for _, _, d in data if len(d))])

        def at(v: Any, x0: float = x0, lo: float = lo, hi: float = hi) -> Any:
            pad = 0.03 * pw  # so a step at the range's ends stays off the frame
            return x0 + pad + (v - lo) / (hi - lo) * (pw - 2 * pad)

        def up(share: Any, y0: float = y0) -> Any:  # the ECDF's 0 and 1 stay off the frame
            return y0 + _YPAD * ph + share * (1 - 2 * _YPAD) * ph

        for name, color, values in data:
            if len(values):
                x, y = ecdf_steps(values, PANEL_POINTS)
                lines[name].append(np.c_[at(x), up(y)])
                marks.append((at(values.mean()), y0 + 0.5 * _YPAD * ph))
                mark_colors.append(color)
        frames.append(np.array([[x0, y0], [x0 + pw, y0], [x0 + pw, y0 + ph], [x0, y0 + ph],
                                [x0, y0]]))
        put(x0 + pw / 2, y0 + ph + 0.05, variant, fontsize=FONT, ha="center", va="bottom")
        tick = 0.05  # inches: tick marks outside the frame
        for value in axis_ticks(lo, hi):  # x: the range of this panel
            grid.append(np.array([[at(value), y0], [at(value), y0 + ph]]))
            frames.append(np.array([[at(value), y0], [at(value), y0 - tick]]))
            put(at(value), y0 - tick - 0.03, f"{value:g}", fontsize=FONT, ha="center",
                va="top")
        for value in UNIT_TICKS:  # y: the share of queries, in every panel
            grid.append(np.array([[x0, up(value)], [x0 + pw, up(value)]]))
            if c == 0:
                frames.append(np.array([[x0, up(value)], [x0 - tick, up(value)]]))
                put(x0 - tick - 0.03, up(value), f"{value:g}", fontsize=FONT, ha="right",
                    va="center")
    xy = _joined(grid)
    ax.plot(xy[:, 0], xy[:, 1], zorder=0, **_GRID)
    for name, color in colors:
        if lines[name]:
            xy = _joined(lines[name])
            ax.plot(xy[:, 0], xy[:, 1], drawstyle="steps-post", color=color, lw=1.6)
    xy = _joined(frames)
    ax.plot(xy[:, 0], xy[:, 1], color="0.3", lw=0.8)
    if mark_means and marks:
        mark_x, mark_y = np.array(marks).T
        ax.scatter(mark_x, mark_y, c=mark_colors, marker="^", s=45, zorder=3,
                   edgecolors="white", linewidths=0.5)
    fig.text(0.12 / width, 0.5, "share of queries <= x", rotation=90, fontsize=FONT + 1,
             va="center", ha="left")
    fig.legend(loc="upper center", ncol=ncol, bbox_to_anchor=(0.5, 1 - 0.4 / height),
               **legend)
    fig.suptitle(title, fontsize=FONT + 3, y=1 - 0.08 / height, va="top")
    return _save(fig, path)


def axis_ticks(lo: float, hi: float) -> list[float]:
    """Tick values of an axis from ``lo`` to ``hi``: :data:`UNIT_TICKS` on [0, 1], else
    about five round values within the range (its ends included when they are round). A
    range off [0, 1] by rounding error only (an nDCG of 1.0000000000000002) counts as [0, 1]."""
    if abs(lo) <= 1e-9 and abs(hi - 1.0) <= 1e-9:
        return list(UNIT_TICKS)
    from matplotlib.ticker import MaxNLocator

    values = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
    span = hi - lo
    return [round(float(v), 12) for v in values if lo - 1e-9 * span <= v <= hi + 1e-9 * span]


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """Polylines as one (n, 2) array, a NaN row between them (so one Line2D draws all)."""
    gap = np.full((1, 2), np.nan)
    return np.concatenate([p for part in parts for p in (part, gap)][:-1])


def ecdf_steps(data: np.ndarray, points: int = ECDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The ECDF at about ``points`` evenly spaced order statistics (and 0 before the
    smallest): exact at each of them, for drawing with ``where="post"``."""
    x = np.sort(data)
    i = np.unique(np.linspace(0, len(x) - 1, points).round().astype(np.int64))
    at = x[i]
    return np.r_[x[0], at], np.r_[0.0, np.searchsorted(x, at, side="right") / len(x)]


def ecdf_figure(values: Mapping[str, pd.Series], title: str, path: Path, *,
                rankers: Iterable[str] | None = None) -> Path:
    """Save a PNG with the ECDF (left) and histogram (right) of each ranker's per-query
    values of one metric variant. ``rankers``: every ranker of the study or comparison
    (default: those in ``values``), so that a ranker keeps its colour in a figure of a
    variant only some rankers hold."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    width = 11.0
    fig = Figure(figsize=(width, 5.0), dpi=DPI)
    finite = [_finite(v) for v in values.values()]
    colors = ranker_colors([*values, *(rankers or ())])
    handles = [Line2D([], [], color=colors[name], lw=1.6, label=f"{name} (mean "
                      f"{data.mean():.4f})") for name, data in zip(values, finite) if len(data)]
    legend = {"handles": handles, "fontsize": FONT, "frameon": False, "handlelength": 2.5}
    ncol = _legend_columns(fig, legend, max(1, min(len(handles), 3)))
    legend_rows = max(1, -(-len(handles) // ncol))
    top = 0.75 + _LEGEND_ROW * legend_rows  # inches: title and legend above the axes
    height = top + 3.8 + 0.65
    fig.set_size_inches(width, height)
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.2 / width, bottom=0.65 / height,
                        top=1 - top / height, wspace=0.22)
    ax_ecdf, ax_hist = fig.subplots(1, 2)
    upper = max((float(f.max()) for f in finite if len(f)), default=1.0)
    bins = np.linspace(0, max(upper, 1.0), 21)
    for name, data in zip(values, finite):
        if not len(data):
            continue
        ax_ecdf.step(*ecdf_steps(data), where="post", color=colors[name], lw=1.6)
        ax_hist.hist(data, bins=bins, histtype="step", color=colors[name], label=name, lw=1.6)
    lower = min((float(f.min()) for f in finite if len(f)), default=0.0)
    xticks = axis_ticks(min(lower, 0.0), max(upper, 1.0))
    ax_ecdf.set_ylim(-0.02, 1.04)
    ax_ecdf.set_yticks(UNIT_TICKS, [f"{v:g}" for v in UNIT_TICKS])
    ax_ecdf.set_ylabel("share of queries <= x", fontsize=FONT + 1)
    ax_hist.set_ylabel("queries", fontsize=FONT + 1)
    for ax, name in ((ax_ecdf, "ECDF"), (ax_hist, "histogram")):
        ax.set_title(name, fontsize=FONT + 1)
        ax.set_xlabel(title, fontsize=FONT + 1)
        ax.set_xticks(xticks, [f"{v:g}" for v in xticks])
        ax.tick_params(labelsize=FONT)
        ax.grid(True, **_GRID)
        ax.set_axisbelow(True)
        ax.margins(x=0.03)  # a step at the range's end stays inside the frame
    # the legend above the panels, where it cannot hide a curve
    fig.legend(loc="upper center", ncol=ncol, bbox_to_anchor=(0.5, 1 - 0.5 / height),
               **legend)
    fig.suptitle(title, fontsize=FONT + 3, y=1 - 0.08 / height, va="top")
    return _save(fig, path)


# -- helpers ---------------------------------------------------------------------------


def _legend_columns(fig: Figure, legend: Mapping[str, Any], most: int) -> int:
    """The most columns (at most ``most``) in which the figure legend of ``legend``'s
    options fits the figure's width, side margins of :data:`_LEGEND_SIDE` inches kept: long
    ranker names wrap onto more rows instead of running off the canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    room = fig.bbox.width - 2 * _LEGEND_SIDE * fig.dpi
    for ncol in range(max(most, 1), 1, -1):
        trial = fig.legend(ncol=ncol, **legend)
        wide = trial.get_window_extent(renderer).width
        trial.remove()
        if wide <= room:
            return ncol
    return 1


def _text_width(fig: Figure, text: str, size: float) -> float:
    """Inches that ``text`` takes at ``size`` points, side margins included."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    trial = fig.text(0, 0, text, fontsize=size)
    wide = trial.get_window_extent(FigureCanvasAgg(fig).get_renderer()).width
    trial.remove()
    return float(wide) / fig.dpi + 2 * _LEGEND_SIDE


def _handles(colors: Mapping[str, str]) -> list[Any]:
    from matplotlib.lines import Line2D

    return [Line2D([], [], color=c, lw=2.0, label=r) for r, c in colors.items()]


def _finite(values: pd.Series) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    return data[np.isfinite(data)]


def _save(fig: Figure, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    return path
