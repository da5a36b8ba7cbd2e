"""Preference judgments for trec_eval's prefs measures (:mod:`harness.metrics.trec_eval.prefs`).

A preferences file (trec_eval ``-R prefs``) holds ``qid jg jsg docno rel_level`` lines:
within one judgment sub-group (``jsg``) of a judgment group (``jg``) every document is
preferred to every document with a lower ``rel_level``; a level of 0 marks a document the
judge found non-relevant. Ordinary qrels (``-R qrels_prefs``) are read the same way, with
the qrels' ``iter`` column as the judgment group and one sub-group per group.

Both give a table with columns ``qid``, ``jg``, ``jsg``, ``docid`` (strings) and ``rel``
(float64); the file is read by :func:`harness.data.trec.read_prefs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.errors import InputError

__all__ = ["PREFS_COLUMNS", "prefs_from_qrels", "checked_prefs"]

PREFS_COLUMNS = ("qid", "jg", "jsg", "docid", "rel")


def prefs_from_qrels(qrels: pd.DataFrame) -> pd.DataFrame:
    """The preferences ordinary qrels imply (trec_eval ``-R qrels_prefs``).

    Each query's judgments form one judgment group per ``iter`` value (one group when the
    table has no ``iter`` column, as :func:`harness.data.trec.read_qrels` gives) with a
    single sub-group, so every document is preferred to every document of a lower grade.

    Parameters
    ----------
    qrels : columns ``qid``, ``docid`` and ``label`` (a grade), optionally ``iter``.
    """
    missing = [c for c in ("qid", "docid", "label") if c not in qrels.columns]
    if missing:
        raise InputError(f"qrels table lacks column(s) {missing}", column=missing[0])
    jg = qrels["iter"].astype(str) if "iter" in qrels.columns else "0"
    out = pd.DataFrame({"qid": qrels["qid"].astype(str).to_numpy(),
                        "jg": jg if isinstance(jg, str) else jg.to_numpy(),
                        "jsg": "0",
                        "docid": qrels["docid"].astype(str).to_numpy(),
                        "rel": pd.to_numeric(qrels["label"], errors="coerce")
                        .astype("float64").to_numpy()})
    return checked_prefs(out)


def checked_prefs(prefs: pd.DataFrame) -> pd.DataFrame:
    """``prefs`` with string ids and float levels, or an InputError naming the fault."""
    missing = [c for c in PREFS_COLUMNS if c not in prefs.columns]
    if missing:
        raise InputError(f"prefs table lacks column(s) {missing}; expected "
                         f"{list(PREFS_COLUMNS)}", column=missing[0])
    out = pd.DataFrame({c: prefs[c].astype(str).to_numpy() for c in PREFS_COLUMNS[:4]})
    rel = pd.to_numeric(prefs["rel"], errors="coerce").astype("float64").to_numpy()
    bad = np.flatnonzero(~np.isfinite(rel))
    if len(bad):
        i = int(bad[0])
        raise InputError(f"prefs rel {prefs['rel'].iloc[i]!r} is not a finite number",
                         column="rel", qid=out["qid"].iloc[i], row=i)
    out["rel"] = rel
    return out
