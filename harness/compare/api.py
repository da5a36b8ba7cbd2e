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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import pandas as pd

from harness.compare.core import build_comparison, check_options
from harness.compare.result import Comparison
from harness.errors import CompareError, InputError
from harness.metrics.layout.peer_inputs import as_table

__all__ = ["Comparison", "compare"]

RunLike: TypeAlias = "pd.DataFrame | str | Path"


def _read(value: RunLike, what: str) -> pd.DataFrame:
    """A run or a per-query table from a DataFrame, a peer's run (a ranx ``Run``,
    pytrec_eval's dict of dicts, ir_measures' records, a PyTerrier frame) or a file (TREC
    text, gzip, parquet)."""
    value = as_table(value, "run")
    if isinstance(value, pd.DataFrame):
        return value
    if not isinstance(value, (str, Path)):
        raise InputError(f"{what}: expected a DataFrame, a peer's run or a file path, got "
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
    from harness.metrics.engine.evaluate import evaluate

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
    qrels : DataFrame (qid, docid, label), path of a TREC qrels file, a peer's qrels, or None
        None when every run holds a ``label`` column or is a per-query table. A peer's
        qrels: a ranx ``Qrels``, pytrec_eval's ``{qid: {docid: label}}``, ir_measures'
        ``Qrel`` records or an iterator of them, a PyTerrier frame (``qid, docno, label``).
    runs : mapping of name -> run, or a sequence of runs
        A run is a DataFrame (``qid, docid, score``), a peer's run (as ``qrels``: a ranx
        ``Run``, a dict of dicts, ``ScoredDoc`` records, a PyTerrier frame with ``docno``),
        a TREC run file (text or ``.gz``) or a parquet file, or a per-query table (``qid``
        and one column per measure display name, as :func:`harness.evaluate` returns). A
        sequence names each run by its file's stem (``org_manual_bm25``), or ``run1``,
        ``run2``, ... for other runs.
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
    from harness.metrics.vocabulary.definition import parse_metric

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
    check_options(test, correction)
    mlist = [m if not isinstance(m, str) else parse_metric(m) for m in metrics]
    if not mlist:
        raise InputError("metrics: name at least one measure")
    qrels = as_table(qrels, "qrels")
    if qrels is not None and not isinstance(qrels, pd.DataFrame):
        from harness.data.eval_inputs import read_eval_qrels

        qrels = read_eval_qrels(qrels)[["qid", "docid", "label"]]
    per_query = {name: _per_query(name, run, qrels, mlist) for name, run in named.items()}
    return build_comparison(per_query, [m.display_name for m in mlist], baseline, test=test,
                            correction=correction, alpha=alpha, seed=seed,
                            resamples=resamples, every_test=False)
