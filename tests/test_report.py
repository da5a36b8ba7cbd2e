"""harness.compare.report: the self-contained HTML, the Markdown and LaTeX tables, and the
provenance, built from a real sweep loaded from MLflow (tests/test_compare.py's fixture)."""

from __future__ import annotations

import base64
import html
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.compare import RankerVersion, Sweep, build_comparison, load_sweep, sensitivity
from harness.compare.report import (
    ReportPaths,
    build_report,
    comparison_display,
    means_display,
    report_dir,
)
from harness.metrics import parse_metric
from harness.paths import PROJECT_ROOT
from tests.test_compare import VERSIONS, SmallSweep, small_sweep  # noqa: F401 - fixture


@pytest.fixture(scope="module")
def built(small_sweep: SmallSweep, tmp_path_factory: pytest.TempPathFactory  # noqa: F811 - fixture
          ) -> tuple[Sweep, pd.DataFrame, ReportPaths]:
    sweep = load_sweep(small_sweep.uri, parent_run_id=small_sweep.parent_run_id)
    comparison = build_comparison(sweep.per_query, resamples=300)
    paths = build_report(sweep, comparison, sensitivity(sweep.per_query, comparison),
                         tmp_path_factory.mktemp("report"))
    return sweep, comparison, paths


def test_html_is_self_contained(built: tuple[Sweep, pd.DataFrame, ReportPaths]) -> None:
    _, comparison, paths = built
    text = paths.html.read_text()
    # no resource from the network or another file: every src/href is inline or a fragment
    refs = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", text, flags=re.I)
    assert refs and all(r.startswith(("data:", "#")) for r in refs), \
        [r for r in refs if not r.startswith(("data:", "#"))]
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text, flags=re.I)
    assert "<link" not in text and "<script" not in text
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)"',
                        text)
    # distributions as in a job (overview, one small-multiples figure per family of several
    # variants), one paired-difference figure per pair, the tau heatmap
    names = [parse_metric(c).name for c in comparison.tests["variant"].unique()]
    families = sum(names.count(n) > 1 for n in set(names))
    assert len(images) == 1 + families + 10 + 1
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)


def test_html_holds_tables_marks_and_provenance(
        built: tuple[Sweep, pd.DataFrame, ReportPaths]) -> None:
    sweep, comparison, paths = built
    text = paths.html.read_text()
    for label in VERSIONS:
        assert html.escape(label) in text
    for heading in ("Paired comparisons", "Winner per variant", "Discriminative power",
                    "Kendall&#x27;s tau", "Tie-sensitivity interval", "Provenance"):
        assert heading in text, heading
    assert "<th>W/T/L</th>" in text and "<td>*</td>" in text
    # numbers and intervals never wrap; wide tables scroll in their own box
    assert "white-space:nowrap" in text and text.count('<div class="wide">') >= 4
    assert list(sweep.versions) == sorted(VERSIONS)  # a stable order, so stable letters
    assert "1.0000<sup>abce</sup>" in text  # (d) oracle beats the four others
    for run in sweep.provenance["runs"]:
        assert run["run_id"] in text
    assert sweep.parent_run_id in text and sweep.dataset_digest in text
    for commit in sweep.provenance["git_commits"]:
        assert commit in text
    assert "<th>scipy</th>" in text and "resolved config of run" in text
    assert "ranker.noisy_oracle.sigma" in text  # the params that differ between runs
    # the tie interval of the ranker that ties (feature_f0 scores by a rounded feature)
    ties = pd.read_csv(paths.directory / "tie_intervals.csv")
    assert (ties[ties["ranker"] == "feature_f0"]["interval"] > 0).all()
    assert (ties[ties["ranker"] == "oracle"]["interval"] == 0).all()
    saved = pd.read_csv(paths.directory / "comparison.csv")
    assert len(saved) == len(comparison.tests) == 100
    assert json.loads((paths.directory / "provenance.json").read_text())["parent_run_id"] \
        == sweep.parent_run_id


def test_markdown_and_latex_tables(built: tuple[Sweep, pd.DataFrame, ReportPaths]) -> None:
    _, _, paths = built
    md = paths.markdown.read_text()
    for label in VERSIONS:
        assert label in md
    assert "| W/T/L | p adj (ttest, holm) | sig |" in md and re.search(r"\| \* \| ", md)
    assert "![Kendall tau between variants](figures/kendall_tau.png)" in md
    assert "1.0000<sup>abce</sup>" in md and "^" not in md  # real superscripts only
    tex = paths.latex.read_text()
    assert tex.count(r"\begin{longtable}") == 5 and tex.count(r"\toprule") == 10
    assert tex.count(r"\bottomrule") == 5 and r"\usepackage{booktabs,longtable" in tex
    for label in ("oracle", "random", r"feature\_f0", r"noisy\_oracle [sigma=0.5]"):
        assert label in tex
    assert r"1.0000$^{\mathrm{abce}}$" in tex
    assert all(p.is_file() and p.suffix == ".png" for p in paths.figures)


@pytest.mark.parametrize("columns, rows", [(3, 5), (12, 120), (16, 30), (30, 4)])
def test_latex_tables_fit_the_page(columns: int, rows: int) -> None:
    """Each table takes the first layout whose estimated width fits: portrait, smaller type,
    landscape; long tables break across pages (longtable) with booktabs rules."""
    from harness.compare.latex import LANDSCAPE, PORTRAIT, estimated_width, latex_table

    frame = pd.DataFrame({f"col {j}": [f"{0.5 + i / 1000:.4f}" for i in range(rows)]
                          for j in range(columns)})
    frame.insert(0, "variant", [f"nDCG@10(discount=ln,gain=linear,ties=input,empty=one,k={i})"
                             for i in range(rows)])
    tex = latex_table(frame, "t")
    size = re.search(r"\\(footnotesize|scriptsize)", tex).group(1)
    limit = LANDSCAPE if r"\begin{landscape}" in tex else PORTRAIT
    fits = estimated_width(frame, size) <= limit
    assert fits or (limit == LANDSCAPE and size == "scriptsize")  # the last resort
    if estimated_width(frame, "footnotesize") <= PORTRAIT:
        assert size == "footnotesize" and limit == PORTRAIT
    assert tex.count(r"\\") - 2 * 1 - 1 == rows  # rows, twice the header, the caption
    assert r"\endhead" in tex and r"p{1.9in}" in tex  # header repeats; variant wraps
    assert r"gain=linear,\allowbreak{}ties" in tex


def fake_sweep(per_query: dict[str, pd.DataFrame]) -> Sweep:
    """A Sweep as load_sweep builds it, without MLflow."""
    versions = {label: RankerVersion(label, label, "feature", f"key{i}", (f"run{i}",), ())
                for i, label in enumerate(per_query)}
    runs = [{"label": label, "run_id": f"run{i}", "ranker": label, "kind": "feature",
             "job": "", "cache_key": f"key{i}"} for i, label in enumerate(per_query)]
    provenance = {"runs": runs, "environments": [{"environment": {
        "python": "3.11", "packages": {"numpy": "2"}}, "runs": ["run0", "run1"]}],
        "params_varying": {}, "parent_tags": {}, "git_commits": ["abc"],
        "harness_versions": ["0.1.0"], "config": "seed: 0\n", "config_run_id": "run0"}
    return Sweep("sqlite:///x.db", "exp/with space", "1", None, None, "fake", "d" * 64,
                 versions, per_query, provenance)


def test_report_without_tie_pairs_says_how_to_get_them(tmp_path: Path) -> None:
    qids = [f"q{i}" for i in range(12)]
    rng = np.random.default_rng(0)
    per_query = {"x_1 & co": pd.DataFrame({"nDCG@10": rng.uniform(0.5, 1, 12)}, index=qids),
                 "y%": pd.DataFrame({"nDCG@10": rng.uniform(0, 0.5, 12)}, index=qids)}
    sweep = fake_sweep(per_query)
    comparison = build_comparison(per_query, resamples=100)
    paths = build_report(sweep, comparison, sensitivity(per_query, comparison), tmp_path)
    text = paths.html.read_text()
    assert "tie-sensitivity interval not available" in text
    assert "metric.ties=[optimistic,pessimistic]" in paths.markdown.read_text()
    assert "x_1 &amp; co" in text
    tex = paths.latex.read_text()
    assert r"x\_1 \& co" in tex and r"y\%" in tex
    assert report_dir(sweep, tmp_path).parent == tmp_path / "exp_with_space"
    assert report_dir(sweep, "runs/reports").is_relative_to(PROJECT_ROOT / "runs" / "reports")


def test_display_tables_mark_significance() -> None:
    qids = [f"q{i}" for i in range(20)]
    base = np.linspace(0.1, 0.6, 20)
    frames = {"a": pd.DataFrame({"qid": qids, "RR": base + 0.3}),
              "b": pd.DataFrame({"qid": qids, "RR": base + 0.01 * (-1.0) ** np.arange(20)}),
              "c": pd.DataFrame({"qid": qids, "RR": base})}
    comparison = build_comparison(frames, resamples=100)
    shown = comparison_display(comparison)
    assert list(shown["sig"]) == ["*", "*", ""]  # b vs c: +-0.01 alternating, mean 0
    assert list(shown["W/T/L"]) == ["20/0/0", "20/0/0", "10/0/10"]
    means, letters = means_display(sensitivity(frames).means, comparison)
    assert letters == {"a": "a", "b": "b", "c": "c"}
    assert means.loc["(a) a", "RR"].endswith("^bc")
    assert "^" not in means.loc["(b) b", "RR"] and "^" not in means.loc["(c) c", "RR"]


def test_ranker_colors_are_fixed_by_the_sorted_names() -> None:
    from harness.reporting.colors import PALETTE, ranker_colors

    a = ranker_colors(["random", "bm25", "oracle", "bm25"])
    assert a == {"bm25": PALETTE[0], "oracle": PALETTE[1], "random": PALETTE[2]}
    assert ranker_colors(["oracle", "random", "bm25"]) == a  # order does not matter
    assert len(set(a.values())) == 3
    many = ranker_colors([f"r{i:02d}" for i in range(len(PALETTE) + 1)])
    assert many["r00"] == many[f"r{len(PALETTE):02d}"] == PALETTE[0]  # cycles


def test_permutation_p_at_its_floor_is_shown_as_a_bound() -> None:
    # a beats b on all 40 queries: no sign flip of 2000 reaches the observed mean, so
    # scipy's two-sided p is its floor 2/(2000+1) ~ 0.0009995
    qids = [f"q{i}" for i in range(40)]
    a = pd.DataFrame({"qid": qids, "nDCG@10": np.linspace(0.5, 0.9, 40)})
    b = pd.DataFrame({"qid": qids, "nDCG@10": np.linspace(0.1, 0.4, 40)})
    table = build_comparison({"a": a, "b": b}, resamples=2000)
    assert table.tests["p_permutation"].iloc[0] == pytest.approx(2 / 2001)
    assert comparison_display(table)["p perm"].iloc[0] == "< 0.001"


def test_winners_csv_says_whether_each_lead_is_significant(
        built: tuple[Sweep, pd.DataFrame, ReportPaths]) -> None:
    _, comparison, paths = built
    winners = pd.read_csv(paths.directory / "winners.csv", index_col=0)
    assert list(winners.columns) == ["winner", "mean", "margin", "order", "significant",
                                     "p_adj", "top"]
    assert set(winners["significant"]) <= {True, False}
    for variant, row in winners.iterrows():
        # significant: the leader alone at the top; else a tie of several
        assert (row["top"] == row["winner"] if row["significant"] else " = " in row["top"]), \
            variant


def test_html_opens_on_findings_and_figures_with_long_tables_collapsed(
        built: tuple[Sweep, pd.DataFrame, ReportPaths]) -> None:
    """Issue 41: two 128-row tables came before the first figure (8,300 px down)."""
    from html.parser import HTMLParser

    from harness.compare.report_render import LONG_TABLE

    class Outline(HTMLParser):
        """Each table's row count, whether it sits in a <details>, and what came first."""

        def __init__(self) -> None:
            super().__init__()
            self.order: list[str] = []
            self.tables: list[list[int]] = []  # [rows, inside details]
            self.open: list[list[int]] = []
            self.details = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "details":
                self.details += 1
            elif tag in ("img", "figure", "h2"):
                self.order.append(tag)
            elif tag == "table":
                self.open.append([0, self.details])
                self.tables.append(self.open[-1])
                self.order.append(f"table{len(self.tables) - 1}")
            elif tag == "tr" and self.open:
                self.open[-1][0] += 1

        def handle_endtag(self, tag: str) -> None:
            if tag == "details":
                self.details -= 1
            elif tag == "table":
                self.open.pop()

    outline = Outline()
    outline.feed(built[2].html.read_text())
    long = [i for i, (rows, _) in enumerate(outline.tables) if rows > LONG_TABLE + 1]
    assert long, "the small sweep's report has long tables (100 comparisons)"
    first_image = outline.order.index("img")
    assert first_image < min(outline.order.index(f"table{i}") for i in long)
    # before the figures: the findings and the short headline table only
    assert sum(o.startswith("table") for o in outline.order[:first_image]) <= 1
    assert all(outline.tables[i][1] for i in long), "every long table is collapsed"
    text = built[2].html.read_text()
    assert text.index("<h2>Findings</h2>") < text.index("<img")
    # the headline table's winner: the leader when significant, else the tie's members
    winners = pd.read_csv(built[2].directory / "winners.csv", index_col=0)
    shown = pd.read_html(io.StringIO(text[:text.index("<img")]), index_col=0)[-1]
    for variant, cell in shown["winner"].items():
        row = winners.loc[variant]
        assert cell == (row["winner"] if str(row["significant"]) == "True"
                        else f"tie: {row['top']}"), variant


def test_markdown_opens_on_findings_and_figures_with_long_tables_collapsed(
        built: tuple[Sweep, pd.DataFrame, ReportPaths]) -> None:
    """report.md in the HTML report's order (issue 41): the findings, the headline table,
    the figures (as images from figures/), then the settings and the long tables, collapsed
    in <details>; it opened on the settings and two 100-row tables, figures only linked."""
    from harness.compare.report_render import LONG_TABLE

    paths = built[2]
    order: list[str] = []  # "h2 <title>", "img", "table<i>"
    tables: list[tuple[int, bool]] = []  # (rows, inside <details>)
    details, previous = False, ""
    for line in paths.markdown.read_text().splitlines():
        if line.startswith("<details>"):
            details = True
        elif line.startswith("</details>"):
            details = False
        if line.startswith("## "):
            order.append("h2 " + line[3:])
        elif line.startswith("!["):
            target = re.fullmatch(r"!\[(?:[^][\\]|\\.)*\]\((figures/[^)]+)\)", line)
            assert target and (paths.directory / target.group(1)).is_file(), line
            order.append("img")
        elif line.startswith("|") and not previous.startswith("|"):
            tables.append((0, details))
            order.append(f"table{len(tables) - 1}")
        if line.startswith("|"):
            tables[-1] = (tables[-1][0] + 1, tables[-1][1])
        previous = line
    long = [i for i, (rows, _) in enumerate(tables) if rows > LONG_TABLE + 2]
    assert long, "the small sweep's report has long tables (100 comparisons)"
    first_image = order.index("img")
    assert order[0] == "h2 Findings" and order[1].startswith("h2 Headline variants")
    assert order[2] == "table0" and tables[0][0] - 2 <= LONG_TABLE  # the headline: short
    assert sum(o.startswith("table") for o in order[:first_image]) == 1
    assert first_image < order.index("h2 Settings") < min(order.index(f"table{i}")
                                                            for i in long)
    assert all(tables[i][1] for i in long), "every long table is collapsed"
    assert order.count("img") == len(paths.figures)  # every figure shown, not linked


def test_the_summary_page_is_light_and_names_the_full_report(
        built: tuple[Sweep, pd.DataFrame, ReportPaths]) -> None:
    """MLflow's artifact view previews a page of a few hundred kB at once, where the full
    report (every figure embedded, megabytes) can stay blank (issue 41)."""
    paths = built[2]
    assert paths.summary == paths.directory / "summary.html"
    text = paths.summary.read_text()
    assert paths.summary.stat().st_size < min(1_000_000, paths.html.stat().st_size / 2)
    assert text.count("<img") == 1 and "<code>report.html</code>" in text
    full = paths.html.read_text()
    first_image = re.search(r'<img alt="[^"]*" src="[^"]*">', full).group(0)
    assert first_image in text  # the overview figure, as in the report
    assert text.index("<h2>Findings</h2>") < text.index("Headline variants") < text.index("<img")
