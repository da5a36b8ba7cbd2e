"""Figures drawn for reading (issue 22): saved at a resolution that stays sharp in MLflow's
artifact view and the compare report, text of at least 10 pt at the saved size, ticks at
0, 0.25, 0.5, 0.75 and 1 on a [0, 1] axis with a light grid, and one colour-blind-safe
colour per ranker, distinct from every other ranker's and the same in every figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from harness.compare import comparison_figures as cf
from harness.reporting import figures
from harness.reporting.colors import PALETTE, ranker_colors

UNIT = ["0", "0.25", "0.5", "0.75", "1"]
#: The rankers of the default study (conf/ranker/contenders.yaml).
STUDY = ["feature_f0", "noisy_oracle", "random", "relevance", "top_grades"]


def _tables(names: list[str], n: int = 60, seed: int = 0) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    out = {}
    for name in names:
        v = rng.uniform(0, 1, n)
        out[name] = pd.DataFrame({"nDCG@10": v, "AP@10": v ** 2, "RR": np.sqrt(v),
                                  "P@10": v.round(1), "R@10": 1 - v})
    return out


def _lab(color: str) -> np.ndarray:
    """CIELAB (D65) of a colour."""
    rgb = np.array(mcolors.to_rgb(color))
    rgb = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                  [0.0193, 0.1192, 0.9505]])
    xyz = m @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _min_distance(colors: list[str]) -> float:
    labs = [_lab(c) for c in colors]
    return min(float(np.linalg.norm(a - b)) for i, a in enumerate(labs) for b in labs[i + 1:])


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every Figure the module saves, laid out as saving would, kept instead of written."""
    kept: list[Any] = []

    def keep(fig: Any, path: Path) -> Path:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig).draw()
        kept.append(fig)
        return Path(path)

    monkeypatch.setattr(figures, "_save", keep)
    return kept


# -- resolution --------------------------------------------------------------------------


def test_saved_pngs_are_sharp_and_wide_enough(tmp_path: Path) -> None:
    tables = _tables(STUDY)
    variants = list(next(iter(tables.values())).columns)
    paths = [figures.overview_figure(tables, variants, tmp_path / "overview.png"),
             figures.family_figure(tables, variants[:2], tmp_path / "family.png", title="f"),
             figures.ecdf_figure({n: t["nDCG@10"] for n, t in tables.items()}, "nDCG@10",
                                 tmp_path / "ecdf.png")]
    for path in paths:
        with Image.open(path) as image:
            width, height = image.size
            dpi = image.info["dpi"]
        assert 150 <= round(dpi[0]) <= 200 and round(dpi[0]) == round(dpi[1]), path
        assert height >= 500, path
        if path.name != "family.png":  # two panels are narrower; 4 columns or two axes
            assert 1400 <= width <= 2000, (path, width)
    with Image.open(paths[1]) as image:
        assert image.size[0] >= 900  # even two panels


def test_compare_figures_are_sharp_and_wide_enough() -> None:
    import io

    tau = pd.DataFrame(np.eye(6), index=list("abcdef"), columns=list("abcdef"))
    with Image.open(io.BytesIO(cf.png_bytes(cf.tau_heatmap(tau)))) as image:
        assert round(image.info["dpi"][0]) >= 150
        assert 1000 <= image.size[0] <= 2000


# -- palette -----------------------------------------------------------------------------


def test_the_palette_is_okabe_ito_with_distinct_hues_first() -> None:
    okabe_ito = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#000000", "#56b4e9", "#d55e00",
                 "#f0e442"}
    assert {c.lower() for c in PALETTE[:8]} == okabe_ito
    assert len({c.lower() for c in PALETTE}) == len(PALETTE)
    # the first five (most studies) are far apart in CIELAB; all eight stay apart
    assert _min_distance(list(PALETTE[:5])) > 50
    assert _min_distance(list(PALETTE[:8])) > 25


def test_the_default_studys_rankers_get_clearly_different_colours() -> None:
    colors = ranker_colors(STUDY)
    assert len(set(colors.values())) == len(STUDY)
    assert _min_distance(list(colors.values())) > 50
    # noisy_oracle and relevance were two near-identical oranges
    assert float(np.linalg.norm(_lab(colors["noisy_oracle"]) - _lab(colors["relevance"]))) > 50


def test_a_ranker_keeps_its_colour_in_every_figure(drawn: list[Any]) -> None:
    tables = _tables(STUDY)
    figures.overview_figure(tables, ["nDCG@10", "AP@10"], Path("o.png"))
    figures.family_figure({n: tables[n] for n in STUDY[::-1]}, ["nDCG@10"], Path("f.png"))
    # a variant only some rankers hold: the rest keep their colours when told the rankers
    figures.ecdf_figure({n: tables[n]["nDCG@10"] for n in STUDY[2:]}, "nDCG@10",
                        Path("e.png"), rankers=STUDY)
    expected = {n: c.lower() for n, c in ranker_colors(STUDY).items()}
    for fig in drawn:
        (legend,) = fig.legends
        seen = {t.get_text().split(" (")[0]: mcolors.to_hex(h.get_color())
                for t, h in zip(legend.get_texts(), legend.legend_handles)}
        assert seen == {n: expected[n] for n in seen}


# -- ticks, grid, font sizes ----------------------------------------------------------------


def _texts(fig: Any) -> list[Any]:
    """Every visible text of a figure: its own, its legends', its axes' (ticks included)."""
    out = [t for t in fig.texts if t.get_text()]
    for legend in fig.legends:
        out += [t for t in legend.get_texts()]
    if fig._suptitle is not None:
        out.append(fig._suptitle)
    for ax in fig.axes:
        if not ax.axison:
            continue
        out += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        out += [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    return [t for t in out if t.get_text()]


def test_small_multiples_have_quarter_ticks_a_grid_and_10pt_text(drawn: list[Any]) -> None:
    tables = _tables(STUDY)
    tables["random"].loc[0, "nDCG@10"] = 1 + 2e-16  # rounding error keeps [0, 1] ticks
    figures.overview_figure(tables, list(tables["random"].columns), Path("o.png"))
    (fig,) = drawn
    texts = _texts(fig)
    assert min(t.get_fontsize() for t in texts) >= 10
    labels = [t.get_text() for t in fig.texts]
    # 5 panels in two rows (4 columns): every panel's x axis reads 0 0.25 0.5 0.75 1, each
    # row's y axis too
    for value in UNIT:
        assert labels.count(value) == 5 + 2, value
    (ax,) = fig.axes
    grid = ax.get_lines()[0]  # light, behind the curves
    assert grid.get_zorder() < 1 and min(mcolors.to_rgb(grid.get_color())) > 0.8
    segments = np.isnan(grid.get_xydata()[:, 0]).sum() + 1
    assert segments == 5 * (5 + 5)  # per panel: 5 vertical and 5 horizontal lines


def test_a_panel_beyond_zero_one_gets_round_ticks() -> None:
    assert figures.axis_ticks(0.0, 1.0) == [0, 0.25, 0.5, 0.75, 1]
    assert figures.axis_ticks(0.0, 1.0 + 2e-16) == [0, 0.25, 0.5, 0.75, 1]
    assert figures.axis_ticks(-0.3, 1.0) == [-0.25, 0, 0.25, 0.5, 0.75, 1]
    assert figures.axis_ticks(0.0, 5.7) == [0, 1, 2, 3, 4, 5]


def test_the_ecdf_figure_has_quarter_ticks_a_grid_and_10pt_text(drawn: list[Any]) -> None:
    tables = _tables(STUDY)
    figures.ecdf_figure({n: t["nDCG@10"] for n, t in tables.items()}, "nDCG@10",
                        Path("e.png"))
    (fig,) = drawn
    ecdf, hist = fig.axes
    assert [t.get_text() for t in ecdf.get_yticklabels()] == UNIT
    for ax in (ecdf, hist):
        assert [t.get_text() for t in ax.get_xticklabels()] == UNIT
        assert all(line.get_visible() for line in ax.get_xgridlines())
        assert min(mcolors.to_rgb(ax.get_xgridlines()[0].get_color())) > 0.8
        assert min(t.get_fontsize() for t in ax.get_xticklabels() + ax.get_yticklabels()) >= 10
    assert min(t.get_fontsize() for t in _texts(fig)) >= 10


def test_compare_figures_use_10pt_text() -> None:
    tables = _tables(["a", "b"])
    comparison = pd.DataFrame({"ranker_a": ["a", "a"], "ranker_b": ["b", "b"],
                               "variant": ["nDCG@10", "AP@10"], "wins": [30, 31],
                               "ties": [0, 0], "losses": [30, 29], "significant": [True, False],
                               "mean_diff": [0.01, -0.02], "ci_low": [0.0, -0.05],
                               "ci_high": [0.02, 0.01]})
    tau = pd.DataFrame(np.eye(3), index=list("xyz"), columns=list("xyz"))
    for fig in (cf.paired_difference_figure(tables, comparison, "a", "b"),
                cf.tau_heatmap(tau)):
        fig.canvas.draw()
        texts = _texts(fig) + [t for ax in fig.axes for t in ax.texts]
        assert min(t.get_fontsize() for t in texts) >= 10


# -- nothing runs off the canvas (issue 41: family-ap.png cut its legend at "top_g") ------


def _shipped_ranker_names() -> list[str]:
    """Every ranker name of conf/ranker/*.yaml (their top-level keys), longest first."""
    import yaml

    names: set[str] = set()
    for path in (Path(__file__).parents[1] / "conf" / "ranker").glob("*.yaml"):
        names |= {k for k in (yaml.safe_load(path.read_text()) or {}) if k != "defaults"}
    return sorted(names, key=lambda n: (-len(n), n))


def _outside(fig: Any) -> list[str]:
    """The texts and legends of a drawn figure whose extent leaves the canvas (1 px slack)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    canvas = fig.bbox
    drawn_ticks = set()  # matplotlib keeps labels of ticks beyond the view, never drawn
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            drawn_ticks |= {id(t.label1) for t in axis.get_major_ticks()
                            if lo - 1e-9 <= t.get_loc() <= hi + 1e-9}
    ticks = {id(t) for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()}
    parts = [(t.get_text(), t) for t in _texts(fig) if id(t) not in ticks - drawn_ticks]
    parts += [(f"legend {[t.get_text() for t in g.get_texts()]}", g)
              for g in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]]
    out = []
    for name, artist in parts:
        box = artist.get_window_extent(renderer)
        if (box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1 or box.x1 > canvas.x1 + 1
                or box.y1 > canvas.y1 + 1):
            out.append(f"{name}: {box.bounds} outside {canvas.bounds}")
    return out


@pytest.mark.parametrize("count", [2, 6])
def test_every_figure_kind_keeps_its_legend_and_labels_on_the_canvas(
        drawn: list[Any], count: int) -> None:
    names = _shipped_ranker_names()[:count]
    assert len(names[0]) >= len("catboost_ranker")  # the longest shipped names
    tables = _tables(names)
    for table in tables.values():  # the longest variant names of the default metric grid
        table["mnDCG@10(gain=linear,ties=input)"] = table["nDCG@10"] / 2
    long = "mnDCG@10(gain=linear,ties=input)"
    figures.overview_figure(tables, [long], Path("o1.png"))  # one panel: the narrowest
    figures.overview_figure(tables, list(tables[names[0]].columns), Path("o.png"))
    figures.family_figure(tables, ["nDCG@10", long], Path("f.png"), title="nDCG family: "
                          "every variant (ECDF)")
    figures.ecdf_figure({n: t[long] for n, t in tables.items()}, long, Path("e.png"))
    from harness.compare import build_comparison

    comparison = build_comparison(tables, resamples=50).tests
    drawn += [cf.paired_difference_figure(tables, comparison, names[0], names[1]),
              cf.tau_heatmap(pd.DataFrame(np.eye(6), index=[long] * 6, columns=[long] * 6))]
    assert len(drawn) == 6
    for fig in drawn:
        assert _outside(fig) == []


def _explanations() -> list[Any]:
    """Convention diffs of a small run: a pair of shipped conventions and a pair of the
    longest definitions of the default grid (every option that differs is a bar)."""
    from harness.explain import explain_difference

    rng = np.random.default_rng(3)
    n = 40 * 12
    run = pd.DataFrame({"qid": np.repeat([f"q{i}" for i in range(40)], 12),
                        "docid": [f"d{i}" for i in range(n)],
                        "score": rng.integers(0, 4, n).astype(float),
                        "label": rng.integers(0, 4, n)})
    return [explain_difference(run, metric="ndcg@10", a="sklearn", b="trec_eval"),
            explain_difference(run, metric="ndcg@10", a="ndcg@10",
                               b="ndcg@10(gain=linear,ties=input,ideal=retrieved)")]


def test_the_explain_waterfall_keeps_its_labels_on_the_canvas_and_is_readable(
        tmp_path: Path) -> None:
    """explain/<ranker>.png (issue 41): every label inside the canvas with the longest
    shipped ranker name, text of at least 10 pt and a PNG as sharp as the study's figures."""
    from harness.app.convention_diffs import waterfall_figure, write_explanations

    explanations = _explanations()
    assert len(explanations[1].table) >= 3  # several options: several bars and labels
    for name in _shipped_ranker_names()[:2]:
        fig = waterfall_figure(explanations, name)
        assert _outside(fig) == [], name
        texts = _texts(fig)
        assert any(name in t.get_text() for t in texts)
        assert min(t.get_fontsize() for t in texts) >= 10
    png = write_explanations(explanations, tmp_path, _shipped_ranker_names()[0])[1]
    with Image.open(png) as image:
        assert 150 <= round(image.info["dpi"][0]) <= 200
        assert image.size[0] >= 900
