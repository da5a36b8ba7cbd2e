"""The result of a comparison, :class:`Comparison` (its tables, settings, notes and
renderers), whichever way it was asked for: :func:`harness.compare`, ``harness compare`` on
run files or on MLflow runs, ``harness reproduce``; :func:`harness.compare.core.
build_comparison` builds it."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["STATS", "Comparison", "Settings"]

_SUP = str.maketrans("abcdefghijklmnoprstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ")


#: the cells of :attr:`Comparison.table` per measure
STATS = ("mean", "delta", "wins", "ties", "losses", "p", "p_adj", "significant")


@dataclass(frozen=True)
class Settings:
    """How a comparison was computed (:attr:`Comparison.settings`).

    ``baselines`` the systems every other is compared with (empty: every pair); ``reference``
    the system the table's deltas are to (the first baseline, else the first system);
    ``family`` the comparisons corrected together (:func:`~harness.compare.stats.
    compare_table`); ``max_queries`` the size above which normal approximations replace the
    resampling; ``every_test``: every paired test and the bootstrap interval were computed,
    not only ``test``.
    """

    test: str = "ttest"
    correction: str = "holm"
    alpha: float = 0.05
    seed: int = 0
    resamples: int = 10_000
    baselines: tuple[str, ...] = ()
    reference: str = ""
    family: str = "variant"
    max_queries: int | None = 20_000
    confidence: float = 0.95
    every_test: bool = False

    @property
    def baseline(self) -> str | None:
        """The baselines as one string (``"a, b"``), None for every pair."""
        return ", ".join(self.baselines) or None

    def options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~harness.compare.stats.compare_table`."""
        return {"correction": self.correction, "alpha": self.alpha, "test": self.test,
                "seed": self.seed, "resamples": self.resamples,
                "confidence": self.confidence, "family": self.family,
                "max_queries": self.max_queries}


@dataclass(frozen=True, repr=False)
class Comparison:
    """The result of :func:`compare`.

    Attributes
    ----------
    table : DataFrame
        Systems (rows, in the order given) x (measure, statistic) columns: ``mean``; against
        the baseline (or, without one, the first system), ``delta`` (system - baseline),
        ``wins``/``ties``/``losses`` per query, ``p`` (the chosen test), ``p_adj``
        (corrected), ``significant`` (``p_adj < alpha``). The baseline's row holds its
        mean only.
    per_query : dict of system -> DataFrame
        Each system's per-query values (qid index, one column per measure).
    tests : DataFrame
        Every pair compared (:func:`~harness.compare.stats.compare_table`): means, W/T/L,
        d_z, and the p-values of the test asked for only (``p_<test>``, corrected
        ``p_<test>_adj``; with ``bootstrap`` and ``tukey`` also the t-test's).
    measures : list of str
        The measures' display names, in the order asked.
    settings : Settings
        How it was computed (:class:`harness.compare.core.Settings`): test, correction,
        alpha, seed, resamples, the baselines and the reference, ...
    notes : tuple of str
        What the tests could not do as asked (a measure held by one system only, p-values
        that cannot reach alpha), in words.
    """

    table: pd.DataFrame
    per_query: dict[str, pd.DataFrame]
    tests: pd.DataFrame
    measures: list[str]
    settings: Settings = field(default_factory=Settings)
    notes: tuple[str, ...] = ()

    @property
    def systems(self) -> list[str]:
        return list(self.table.index)

    def beats(self, system: str, measure: str) -> list[str]:
        """The systems ``system`` is significantly better than on ``measure``."""
        t = self.tests[(self.tests["variant"] == measure) & self.tests["significant"]]
        return ([b for a, b, d in zip(t["ranker_a"], t["ranker_b"], t["mean_diff"]) if
                 a == system and d > 0] +
                [a for a, b, d in zip(t["ranker_a"], t["ranker_b"], t["mean_diff"]) if
                 b == system and d < 0])

    def _cells(self, mark: str) -> pd.DataFrame:
        """Systems x measures: the mean, 4 decimals; ``mark`` formats the letters of the
        systems a cell is significantly better than (``{}`` is the letters) and the best
        mean of each column is starred."""
        letters = {s: chr(ord("a") + i) for i, s in enumerate(self.systems)}
        out = pd.DataFrame(index=[f"({letters[s]}) {s}" for s in self.systems],
                           columns=self.measures, dtype=object)
        for m in self.measures:
            means = self.table[(m, "mean")]
            best = means.max()
            for s, label in zip(self.systems, out.index):
                beaten = "".join(sorted(letters[o] for o in self.beats(s, m)))
                cell = f"{means[s]:.4f}" + ("*" if means[s] == best else "")
                out.loc[label, m] = cell + (mark.format(beaten) if beaten else "")
        return out

    def _footnote(self) -> str:
        s = self.settings
        how = ("randomised Tukey HSD" if s.test == "tukey" else
               f"{s.test}, {s.correction}-corrected")
        return (f"Mean per query; * the best of each column; a letter marks a system "
                f"significantly better than the system of that letter ({how} p < "
                f"{s.alpha:g}, {self.n_queries} queries).")

    @property
    def n_queries(self) -> int:
        return int(self.tests["n"].max()) if len(self.tests) else 0

    def to_markdown(self) -> str:
        cells = self._cells("<sup>{}</sup>")
        head = "| system | " + " | ".join(self.measures) + " |"
        rule = "|---|" + "---:|" * len(self.measures)
        rows = [f"| {i} | " + " | ".join(cells.loc[i]) + " |" for i in cells.index]
        return "\n".join([head, rule, *rows, "", self._footnote()]) + "\n"

    def to_string(self, width: int = 100) -> str:
        """Plain text for a terminal ``width`` columns wide (the table's columns wrap into
        blocks, the footnote into lines): the letters as superscripts."""
        import textwrap

        cells = self._cells("\0{}").map(
            lambda c: c.split("\0")[0] + c.split("\0")[1].translate(_SUP) if "\0" in c else c)
        return (cells.to_string(line_width=width) + "\n"
                + textwrap.fill(self._footnote(), width=width) + "\n")

    def to_latex(self, caption: str = "") -> str:
        """A booktabs ``longtable`` (:func:`harness.compare.latex.latex_table`); the
        caption is ``caption`` followed by the footnote."""
        from harness.compare.latex import latex_table

        cells = self._cells("^{}").reset_index(names="system")
        return latex_table(cells, " ".join(filter(None, [caption, self._footnote()])),
                           marks=True)

    def to_html(self) -> str:
        cells = self._cells("<sup>{}</sup>")
        head = "".join(f"<th>{html.escape(m)}</th>" for m in self.measures)
        body = "".join(
            f"<tr><th>{html.escape(i)}</th>" + "".join(
                f'<td style="text-align:right">{_bold_best(c)}</td>' for c in cells.loc[i])
            + "</tr>" for i in cells.index)
        note = self._footnote().replace("* the best of each column", "bold: the best of each "
                                        "column")
        return (f"<table><thead><tr><th>system</th>{head}</tr></thead><tbody>{body}"
                f"</tbody></table><p>{html.escape(note)}</p>")

    def _repr_html_(self) -> str:
        return self.to_html()

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:  # a REPL shows the table, not the frames' reprs
        return self.to_string()

    def to_dict(self) -> dict[str, Any]:
        """``{system: {measure: {statistic: value}}}``, plus the settings (JSON-ready)."""
        s = self.settings
        out: dict[str, Any] = {"settings": {
            "baseline": s.baseline, "reference": s.reference, "test": s.test,
            "correction": s.correction, "alpha": s.alpha, "seed": s.seed,
            "resamples": s.resamples}, "systems": {}}
        for system in self.systems:
            out["systems"][system] = {
                m: {k: _plain(self.table.loc[system, (m, k)]) for k in STATS}
                for m in self.measures}
        return out


def _bold_best(cell: str) -> str:
    """``0.47*<sup>a</sup>`` -> ``<b>0.47</b><sup>a</sup>``: the best of a column in bold."""
    if "*" not in cell:
        return cell
    number, rest = cell.split("*", 1)
    return f"<b>{number}</b>{rest}"


def _plain(value: Any) -> Any:
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if np.isnan(value) else float(value)
    return value
