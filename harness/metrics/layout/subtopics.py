"""Subtopic (intent) judgments: qrels with a ``subtopic`` column, one judgment per
(query, subtopic, document), as ndeval's qrels (``topic subtopic docno judgment``) and
ir_measures' (the ``iteration`` column) give them.

The intent-aware measures (:mod:`harness.metrics.measures.diversity`) read them whole;
every other measure reads one judgment per document, its highest label over the subtopics
(:func:`one_judgment_per_document`).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pandas as pd

from harness.errors import InputError

__all__ = ["SUBTOPIC", "one_judgment_per_document"]

#: The qrels column that names a judgment's subtopic.
SUBTOPIC: Final = "subtopic"


def one_judgment_per_document(qrels: pd.DataFrame, label: np.ndarray
                              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(judgments, subtopics)``: one row per (qid, docid) with its highest label, in the
    order of each document's first row; and the subtopic judgments (qid, docid, subtopic,
    label as numbers). Refuses a missing subtopic and a document judged twice for one
    subtopic, naming the row."""
    sub = qrels[SUBTOPIC]
    missing = np.flatnonzero(sub.isna().to_numpy())
    if len(missing):
        i = int(missing[0])
        raise InputError("missing subtopic value(s)", table="qrels", column=SUBTOPIC, row=i,
                         qid=qrels["qid"].iloc[i])
    frame = pd.DataFrame({"qid": qrels["qid"].to_numpy(), "docid": qrels["docid"].to_numpy(),
                          SUBTOPIC: sub.to_numpy(), "label": label})
    twice = np.flatnonzero(frame.duplicated(["qid", SUBTOPIC, "docid"]).to_numpy())
    if len(twice):
        i = int(twice[0])
        raise InputError(f"document {frame['docid'].iloc[i]!r} is judged twice for subtopic "
                         f"{frame[SUBTOPIC].iloc[i]!r}", table="qrels", column=SUBTOPIC,
                         row=i, qid=frame["qid"].iloc[i])
    best = frame.groupby(["qid", "docid"], sort=False, as_index=False)["label"].max()
    return best.astype({"qid": qrels["qid"].dtype, "docid": qrels["docid"].dtype},
                       errors="ignore"), frame
