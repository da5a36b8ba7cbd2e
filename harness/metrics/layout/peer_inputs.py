"""Runs and qrels as the peer libraries hold them, read as the ``qid, docid, score`` and
``qid, docid, label`` tables every entry point takes: one conversion, used by
:func:`harness.evaluate` and :func:`harness.compare`.

The forms read (the user renames nothing):

- a ranx ``Qrels`` or ``Run`` (read through its ``to_dict()``);
- pytrec_eval's dict of dicts: ``{qid: {docid: label}}``, ``{qid: {docid: score}}``;
- ir_measures' and ir_datasets' records (``Qrel``, ``ScoredDoc``, ``TrecQrel``...: fields
  ``query_id, doc_id`` and ``relevance`` or ``score``), as a list or any iterator;
- a DataFrame with PyTerrier's columns (``qid, docno, score``; qrels ``qid, docno, label``),
  ir_measures' (``query_id, doc_id, relevance`` / ``score``) or ranx's (``q_id, doc_id``).
  ``docno`` wins over ``docid``: in a PyTerrier result frame ``docid`` is the index's
  internal number and ``docno`` the document's id.

A ranx ``Run`` keeps its documents sorted by score, so a definition with ``ties=input``
reads ranx's order; every other tie rule reads the same ranking as from the table.

>>> import harness
>>> run = {"q1": {"a": 2.0, "b": 1.0}}              # pytrec_eval's run
>>> qrels = {"q1": {"b": 1}}                        # and qrels
>>> float(harness.evaluate(run, qrels, ["RR"]).loc["q1", "RR"])
0.5
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError

__all__ = ["as_table", "PEER_COLUMNS"]

#: column -> the names other libraries give it, looked up in this order when it is absent
PEER_COLUMNS = {
    "qid": ("query_id", "q_id"),
    "docid": ("doc_id",),
    "label": ("relevance",),
}

#: the value each table holds, and the field of an ir_measures record holding it
_VALUE = {"run": ("score", "score"), "qrels": ("label", "relevance")}


def as_table(value: Any, table: str) -> Any:
    """``value`` (a run or qrels in any form above) as a DataFrame with the project's column
    names; a DataFrame that already has them, a path or None is returned as it came, and a
    value of any other type too (the table's own checks name its type).

    ``table`` is ``'run'`` or ``'qrels'``: the value of a dict of dicts is a score or a label.
    """
    column, field = _VALUE[table]
    if value is None or isinstance(value, (str, bytes, os.PathLike)):
        return value
    if isinstance(value, pd.DataFrame):
        return _renamed(value)
    if type(value).__module__.split(".")[0] == "ranx" and callable(
            getattr(value, "to_dict", None)):
        value = value.to_dict()
    if isinstance(value, Mapping):
        return _from_nested(value, table, column)
    if isinstance(value, Iterable) and not isinstance(value, (pd.Series, np.ndarray)):
        return _from_records(value, table, column, field)
    return value


def _renamed(df: pd.DataFrame) -> pd.DataFrame:
    names = {}
    if "docno" in df.columns:  # PyTerrier: docno is the id, docid the index's number
        names["docno"] = "docid"
    for ours, theirs in PEER_COLUMNS.items():
        if ours not in df.columns and ours not in names.values():
            found = next((c for c in theirs if c in df.columns), None)
            if found is not None:
                names[found] = ours
    if not names:
        return df
    dropped = [c for c in names.values() if c in df.columns]
    return df.drop(columns=dropped).rename(columns=names)


def _from_nested(value: Mapping[Any, Any], table: str, column: str) -> pd.DataFrame:
    """A dict of dicts ``{qid: {docid: value}}`` (pytrec_eval's, ranx's ``to_dict()``)."""
    qids: list[Any] = []
    docids: list[Any] = []
    values: list[Any] = []
    for qid, docs in value.items():
        if not isinstance(docs, Mapping):
            hint = (" (a dict of columns? pass pandas.DataFrame(...) of it)"
                    if isinstance(docs, (list, tuple, np.ndarray, pd.Series)) else "")
            raise InputError(
                f"{table} as a dict must map each qid to a dict {{docid: {column}}}; query "
                f"{qid!r} maps to {type(docs).__name__}{hint}", table=table, qid=qid)
        qids.extend([qid] * len(docs))
        docids.extend(docs)
        values.extend(docs.values())
    return _frame(qids, docids, values, column, table)


def _from_records(value: Iterable[Any], table: str, column: str,
                  field: str) -> pd.DataFrame:
    """Records with fields ``query_id``, ``doc_id`` and ``field`` (ir_measures' ``Qrel`` and
    ``ScoredDoc``, ir_datasets' ``TrecQrel``), from a list or an iterator."""
    qids: list[Any] = []
    docids: list[Any] = []
    values: list[Any] = []
    for row, record in enumerate(value):
        try:
            qids.append(record.query_id)
            docids.append(record.doc_id)
            values.append(getattr(record, field))
        except AttributeError:
            raise InputError(
                f"{table}: expected a DataFrame, a dict {{qid: {{docid: {column}}}}}, a ranx "
                f"{'Qrels' if table == 'qrels' else 'Run'} or records with fields query_id, "
                f"doc_id, {field}; item {row} is {type(record).__name__} {record!r:.60}",
                table=table, row=row) from None
    return _frame(qids, docids, values, column, table)


def _frame(qids: list[Any], docids: list[Any], values: list[Any], column: str,
           table: str) -> pd.DataFrame:
    if not qids:
        raise InputError(f"{table} is empty", table=table)
    return pd.DataFrame({"qid": qids, "docid": docids, column: values})
