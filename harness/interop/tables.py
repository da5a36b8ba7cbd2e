"""Results given back in the peers' forms: a per-query table as a ranx ``Run``-compatible
dict ``{qid: {measure: value}}``, and trec_eval's ``-q`` text or a TREC run file.

>>> import pandas as pd, harness
>>> run = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [2.0, 1.0]})
>>> table = harness.evaluate(run, pd.DataFrame({"qid": ["q1"], "docid": ["b"], "label": [1]}),
...                          ["RR", "P@1"])
>>> harness.per_query_dict(table)
{'q1': {'RR': 0.5, 'P@1': 0.0}}
>>> print(harness.to_trec(table), end="")
RR                    \tq1\t0.5000
P@1                   \tq1\t0.0000
RR                    \tall\t0.5000
P@1                   \tall\t0.0000
>>> print(harness.to_trec(run, run_name="mine"), end="")
q1 Q0 a 1 2.0 mine
q1 Q0 b 2 1.0 mine
"""

from __future__ import annotations

import math
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.metrics.engine.evaluate import STAT_COLUMNS, aggregate
from harness.metrics.layout.peer_inputs import as_table

__all__ = ["per_query_dict", "to_trec"]

#: columns of a per-query table that are not measures
_NOT_MEASURES = (*STAT_COLUMNS, "weight")


def _measures(table: pd.DataFrame) -> list[str]:
    return [str(c) for c in table.columns if c not in _NOT_MEASURES]


def per_query_dict(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    """A per-query table (:func:`harness.evaluate`'s) as ``{qid: {measure: value}}``, the
    dict of dicts ``ranx.Run`` and pytrec_eval's results hold; a query's NaN values (a
    measure ``empty='exclude'`` left out) are left out of its dict."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"per_query_dict: expected a per-query DataFrame, got "
                         f"{type(table).__name__}")
    names = _measures(table)
    out: dict[str, dict[str, float]] = {}
    for qid, values in zip(table.index, table[names].to_numpy(dtype=np.float64)):
        out[str(qid)] = {n: float(v) for n, v in zip(names, values) if not math.isnan(v)}
    return out


def to_trec(value: Any, path: str | PathLike[str] | None = None, *,
            run_name: str = "harness") -> str:
    """TREC text of a per-query table or of a run, written to ``path`` when given.

    A per-query table (indexed by qid, as :func:`harness.evaluate` returns) becomes
    trec_eval's ``-q`` lines, ``measure<TAB>qid<TAB>value`` with ``%6.4f``, query after
    query, then each measure's ``all`` line (its :func:`harness.aggregate` summary). A run
    (a DataFrame ``qid, docid, score`` or a peer's run, see
    :mod:`harness.metrics.layout.peer_inputs`) becomes a TREC run file, ``qid Q0 docid rank score
    run_name``, each query's documents by decreasing score (ties by decreasing docid, the
    order trec_eval ranks them in).
    """
    frame = as_table(value, "run")
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"to_trec: expected a per-query table or a run, got "
                         f"{type(value).__name__}")
    text = (_run_text(frame, run_name) if {"docid", "score"} <= set(frame.columns)
            else _per_query_text(frame))
    if path is not None:
        Path(path).write_text(text)
    return text


def _per_query_text(table: pd.DataFrame) -> str:
    names = _measures(table)
    lines = [f"{n:<22}\t{qid}\t{v:6.4f}" for qid, values in
             zip(table.index, table[names].to_numpy(dtype=np.float64))
             for n, v in zip(names, values) if not math.isnan(v)]
    summary = aggregate(table)["mean"]
    lines += [f"{n:<22}\tall\t{float(summary[n]):6.4f}" for n in names]
    return "\n".join(lines) + "\n"


def _run_text(run: pd.DataFrame, run_name: str) -> str:
    if " " in run_name or not run_name:
        raise InputError(f"to_trec: run_name must be one word, got {run_name!r}",
                         key="run_name")
    ordered = run.sort_values(["qid", "score", "docid"], ascending=[True, False, False],
                              kind="stable")
    rank = ordered.groupby("qid", sort=False).cumcount() + 1
    lines = [f"{q} Q0 {d} {r} {s!r} {run_name}" for q, d, r, s in
             zip(ordered["qid"], ordered["docid"], rank, ordered["score"].astype(float))]
    return "\n".join(lines) + "\n"
