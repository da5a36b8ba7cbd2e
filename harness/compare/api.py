"""``harness.compare(qrels, runs, metrics)``: is B better than A, in one call, on what a
practitioner holds: run DataFrames, TREC run files (text or gzip), parquet runs, or per-query
tables already evaluated.

Each run is evaluated with :func:`harness.evaluate` (the metric definitions exactly as
named: ``trec_eval:ndcg``, ``nDCG@10(ties=average)``, ...), the per-query values are compared
pair by pair with :func:`harness.compare.stats.compare_table` (paired tests from
:mod:`scipy.stats`, corrected for multiple testing), and the result is a
:class:`Comparison`: its tables and renderers.

>>> import pandas as pd, harness
>>> qrels = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2", "q3"],
...                       "docid": ["a", "b", "a", "c", "b"], "label": [1, 0, 1, 1, 1]})
>>> a = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2", "q3", "q3"],
...                   "docid": ["a", "b", "a", "c", "a", "b"],
...                   "score": [2.0, 1.0, 2.0, 1.0, 2.0, 1.0]})
>>> b = a.assign(score=[1.0, 2.0, 1.0, 2.0, 1.0, 2.0])
>>> c = harness.compare(qrels, {"a": a, "b": b}, ["RR"], baseline="a", resamples=100)
>>> row = c.table.loc["b", "RR"]  # q1: 0.5 (a: 1), q2: 1 (1), q3: 1 (a: 0.5)
>>> float(row["mean"]), int(row["wins"]), int(row["ties"]), int(row["losses"])
(0.8333333333333334, 1, 1, 1)
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import CompareError, InputError
from harness.compare.stats import CORRECTIONS, TESTS, compare_table

__all__ = ["Comparison", "compare"]

RunLike = pd.DataFrame | str | Path
#: the cells of :attr:`Comparison.table` per measure
STATS = ("mean", "delta", "wins", "ties", "losses", "p", "p_adj", "significant")
_SUP = str.maketrans("abcdefghijklmnoprstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ")


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
    settings : dict
        baseline, test, correction, alpha, seed, resamples.
    """

    table: pd.DataFrame
    per_query: dict[str, pd.DataFrame]
    tests: pd.DataFrame
    measures: list[str]
    settings: dict[str, Any] = field(default_factory=dict)

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
        how = ("randomised Tukey HSD" if s["test"] == "tukey" else
               f"{s['test']}, {s['correction']}-corrected")
        return (f"Mean per query; * the best of each column; a letter marks a system "
                f"significantly better than the system of that letter ({how} p < "
                f"{s['alpha']:g}, {self.n_queries} queries).")

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
        out: dict[str, Any] = {"settings": dict(self.settings), "systems": {}}
        for s in self.systems:
            out["systems"][s] = {
                m: {k: _plain(self.table.loc[s, (m, k)]) for k in STATS}
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


def _read(value: RunLike, what: str) -> pd.DataFrame:
    """A run or a per-query table from a DataFrame or a file (TREC text, gzip, parquet)."""
    if isinstance(value, pd.DataFrame):
        return value
    if not isinstance(value, (str, Path)):
        raise InputError(f"{what}: expected a DataFrame or a file path, got "
                         f"{type(value).__name__}")
    path = Path(value)
    if not path.is_file():
        raise InputError(f"{what}: file not found: {path}")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    from harness.data.eval_inputs import read_eval_run

    return read_eval_run(path)[0]


def _per_query(name: str, value: RunLike, qrels: pd.DataFrame | None,
               metrics: list[Any]) -> pd.DataFrame:
    from harness.metrics.evaluate import evaluate

    frame = _read(value, f"run {name!r}")
    if "docid" not in frame.columns:  # already evaluated: a per-query table
        table = frame.set_index("qid") if "qid" in frame.columns else frame
        missing = [m.display_name for m in metrics if m.display_name not in table.columns]
        if missing:
            raise InputError(f"run {name!r} is a per-query table without column(s) "
                             f"{', '.join(map(repr, missing))}; it has "
                             f"{', '.join(map(str, table.columns))}")
        return table[[m.display_name for m in metrics]]
    if qrels is None and "label" not in frame.columns:
        raise InputError(f"run {name!r}: no qrels given and no label column")
    out = evaluate(frame, qrels, metrics)
    return out[[m.display_name for m in metrics]]


def compare(qrels: pd.DataFrame | str | Path | None,
            runs: Mapping[str, RunLike] | Sequence[RunLike],
            metrics: Sequence[Any] = ("nDCG@10",), *, baseline: str | None = None,
            test: str = "ttest", correction: str = "holm", alpha: float = 0.05,
            seed: int = 0, resamples: int = 10_000) -> Comparison:
    """Compare systems on the same queries: means, paired tests, corrected p-values.

    Parameters
    ----------
    qrels : DataFrame (qid, docid, label), path of a TREC qrels file, or None
        None when every run holds a ``label`` column or is a per-query table.
    runs : mapping of name -> run, or a sequence of runs
        A run is a DataFrame (``qid, docid, score``), a TREC run file (text or ``.gz``) or a
        parquet file, or a per-query table (``qid`` and one column per measure display
        name, as :func:`harness.evaluate` returns). A sequence names each run by its file's
        stem (``org_manual_bm25``), or ``run1``, ``run2``, ... for DataFrames.
    metrics : sequence of str or Metric, default ("nDCG@10",)
        Any name :func:`harness.parse_metric` reads (``trec_eval:ndcg``, ``P(rel=2)@5``).
    baseline : str, optional
        Compare every other system with this one; default every pair, the first system
        being the reference of :attr:`Comparison.table`'s deltas.
    test : {'ttest', 'wilcoxon', 'permutation', 'bootstrap', 'tukey'}, default 'ttest'
        The paired test whose corrected p-value decides significance, the only one
        computed; ``bootstrap`` the paired bootstrap test
        (:func:`~harness.compare.resampling.bootstrap_pvalues`, columns ``p_bootstrap``);
        ``tukey`` the randomised Tukey HSD over all systems
        (:func:`~harness.compare.resampling.tukey_pvalues`), family-wise already, so its p
        is not corrected again (columns ``p_tukey``).
    correction : {'holm', 'bh', 'bonferroni'}, default 'holm'
        Holm's step-down or Bonferroni (family-wise), or Benjamini-Hochberg (false
        discovery rate), over the comparisons of each measure.
    alpha : float, default 0.05
    seed, resamples : int
        The permutation test's and the bootstrap's seed and number of resamples.

    Returns
    -------
    Comparison
    """
    from harness.metrics.definition import parse_metric

    if isinstance(runs, Mapping):
        named = dict(runs)
    else:
        named = {}
        for i, run in enumerate(runs):
            name = (Path(run).name.split(".")[0] if isinstance(run, (str, Path))
                    else f"run{i + 1}")
            if name in named:
                raise InputError(f"two runs are named {name!r}: give runs as a mapping "
                                 "{name: run}")
            named[name] = run
    if len(named) < 2:
        raise CompareError(f"a comparison needs at least two runs; got {len(named)}")
    if baseline is not None and baseline not in named:
        raise InputError(f"baseline {baseline!r} is not among the runs: {', '.join(named)}")
    if test not in (*TESTS, "bootstrap", "tukey"):
        raise CompareError(f"test must be one of {', '.join(TESTS)}, bootstrap, tukey; got "
                           f"{test!r}")
    if correction not in CORRECTIONS:
        raise CompareError(f"correction must be one of {', '.join(CORRECTIONS)}; got "
                           f"{correction!r}")
    mlist = [m if not isinstance(m, str) else parse_metric(m) for m in metrics]
    if not mlist:
        raise InputError("metrics: name at least one measure")
    if qrels is not None and not isinstance(qrels, pd.DataFrame):
        from harness.data.eval_inputs import read_eval_qrels

        qrels = read_eval_qrels(qrels)[["qid", "docid", "label"]]
    per_query = {name: _per_query(name, run, qrels, mlist) for name, run in named.items()}
    measures = [m.display_name for m in mlist]
    first = test if test in TESTS else "ttest"
    tests = compare_table(per_query, measures, baseline=baseline, correction=correction,
                          alpha=alpha, test=first, seed=seed, resamples=resamples,
                          tests=[first], intervals=False)
    if test == "tukey":
        tests = _with_tukey(tests, per_query, measures, alpha, seed, resamples)
    elif test == "bootstrap":
        tests = _with_bootstrap(tests, per_query, alpha, correction, seed, resamples)
    reference = baseline if baseline is not None else next(iter(named))
    table = _summary(per_query, tests, measures, reference, test)
    settings = {"baseline": baseline, "reference": reference, "test": test,
                "correction": correction, "alpha": alpha, "seed": seed,
                "resamples": resamples}
    return Comparison(table, per_query, tests.reset_index(drop=True), measures, settings)


def _with_tukey(tests: pd.DataFrame, per_query: dict[str, pd.DataFrame], measures: list[str],
                alpha: float, seed: int, resamples: int) -> pd.DataFrame:
    """The randomised Tukey HSD of each measure over every system, on the queries all of
    them hold, as the columns ``p_tukey`` (= ``p_tukey_adj``) and ``significant``."""
    from harness.compare.resampling import tukey_pvalues

    tests = tests.copy()
    tests["p_tukey"] = np.nan
    names = list(per_query)
    for m in measures:
        joined = pd.concat([per_query[s][m].rename(s) for s in names], axis=1).dropna()
        p = tukey_pvalues(joined.to_numpy(np.float64), seed=seed, resamples=resamples)
        rows = tests["variant"] == m
        tests.loc[rows, "p_tukey"] = [p[names.index(a), names.index(b)] for a, b in
                                      zip(tests.loc[rows, "ranker_a"],
                                          tests.loc[rows, "ranker_b"])]
    tests["p_tukey_adj"] = tests["p_tukey"]
    tests["significant"] = tests["p_tukey_adj"] < alpha
    return tests


def _with_bootstrap(tests: pd.DataFrame, per_query: dict[str, pd.DataFrame], alpha: float,
                    correction: str, seed: int, resamples: int) -> pd.DataFrame:
    """The paired bootstrap test of each row (:func:`~harness.compare.resampling.
    bootstrap_pvalues`), corrected within each measure: ``p_bootstrap``,
    ``p_bootstrap_adj`` and ``significant``."""
    from harness.compare.resampling import bootstrap_pvalues
    from harness.compare.stats import adjust_pvalues

    tests = tests.copy()
    p = []
    for m, a, b in zip(tests["variant"], tests["ranker_a"], tests["ranker_b"]):
        both = pd.concat([per_query[a][m], per_query[b][m]], axis=1).dropna().to_numpy()
        d = (both[:, 0] - both[:, 1])[None, :]
        p.append(float(bootstrap_pvalues(d, seed=seed, resamples=resamples)[0]))
    tests["p_bootstrap"] = p
    tests["p_bootstrap_adj"] = np.nan
    for _, idx in tests.groupby("variant", sort=False).indices.items():
        tests.loc[tests.index[idx], "p_bootstrap_adj"] = adjust_pvalues(
            tests["p_bootstrap"].to_numpy()[idx], correction)
    tests["significant"] = tests["p_bootstrap_adj"] < alpha
    return tests


def _summary(per_query: dict[str, pd.DataFrame], tests: pd.DataFrame, measures: list[str],
             reference: str, test: str) -> pd.DataFrame:
    """Systems x (measure, statistic): means over the queries every system holds, and each
    system against the reference."""
    columns = pd.MultiIndex.from_product([measures, STATS])
    table = pd.DataFrame(index=list(per_query), columns=columns, dtype=object)
    for m in measures:
        rows = tests[tests["variant"] == m]
        a, b = rows["ranker_a"].to_numpy(), rows["ranker_b"].to_numpy()
        pair = pd.DataFrame({"s": a, "mean": rows["mean_a"].to_numpy(),
                             "delta": rows["mean_diff"].to_numpy(),
                             "wins": rows["wins"].to_numpy(), "losses": rows["losses"].to_numpy(),
                             "ok": b == reference})
        flip = pd.DataFrame({"s": b, "mean": rows["mean_b"].to_numpy(),
                             "delta": -rows["mean_diff"].to_numpy(),
                             "wins": rows["losses"].to_numpy(), "losses": rows["wins"].to_numpy(),
                             "ok": a == reference})
        common = {"ties": rows["ties"].to_numpy(), "p": rows[f"p_{test}"].to_numpy(),
                  "p_adj": rows[f"p_{test}_adj"].to_numpy(),
                  "significant": rows["significant"].to_numpy(dtype=bool)}
        order = np.arange(len(rows))
        both = pd.concat([pair.assign(**common, pos=order), flip.assign(**common, pos=order)],
                         ignore_index=True).sort_values("pos", kind="stable")
        against = both[both["ok"]].drop_duplicates("s").set_index("s")
        # the reference itself: its mean over the queries it shares with the first other
        means = both.drop_duplicates("s").set_index("s")["mean"]
        for k in STATS:
            values = against[k] if k in against.columns else pd.Series(dtype=object)
            column = values.reindex(table.index).astype(object)
            if k == "mean":
                column = column.where(column.notna(), means.reindex(table.index))
            table[(m, k)] = column.to_numpy()
        for k in ("wins", "ties", "losses"):
            table[(m, k)] = np.array([np.nan if v != v else int(v) for v in table[(m, k)]],
                                     dtype=object)
        table[(m, "significant")] = np.array([np.nan if v != v else bool(v)
                                              for v in table[(m, "significant")]], dtype=object)
    for m in measures:
        table[(m, "mean")] = table[(m, "mean")].astype(float)
        table[(m, "delta")] = table[(m, "delta")].astype(float)
    return table
