"""Query codes by sorted qid (harness.metrics.layout.qids) against pandas' sorted factorisation of
both tables' qids together: the same codes and uniques for Arrow text grouped by query
(sorted or not, one set of queries or two, string or large_string), and for text that is
not grouped, which takes the general path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from harness.metrics.layout.qids import factorize_qid, joint_qid_codes

QIDS = st.text(alphabet="abz019é\u00ff\U0001f600", min_size=0, max_size=4)


def _column(values: list[str], large: bool = False) -> pd.Series:
    kind = pa.large_string() if large else pa.string()
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, type=kind))
                     if large else pd.array(values, dtype="str"))


def _expected(run: list[str], qrels: list[str]) -> tuple[np.ndarray, np.ndarray, list]:
    codes, uniques = pd.factorize(pd.Series(run + qrels, dtype=object), sort=True)
    return codes[:len(run)], codes[len(run):], list(uniques)


def _grouped(qids: list[str], sizes: list[int]) -> list[str]:
    return [q for q, n in zip(qids, sizes) for _ in range(n)]


@settings(max_examples=200, deadline=None)
@given(run_q=st.lists(QIDS, unique=True, max_size=8),
       j_q=st.lists(QIDS, unique=True, max_size=8),
       sizes=st.lists(st.integers(1, 3), min_size=8, max_size=8),
       large=st.tuples(st.booleans(), st.booleans()),
       shuffle_rows=st.booleans())
def test_codes_are_pandas_sorted_factorisation(run_q: list[str], j_q: list[str],
                                               sizes: list[int], large: tuple[bool, bool],
                                               shuffle_rows: bool) -> None:
    run = _grouped(run_q, sizes)
    qrels = _grouped(j_q, sizes[::-1])
    if shuffle_rows:  # a qid in two places: not grouped
        run = run[1::2] + run[::2]
    rq, jq, uniques = joint_qid_codes(_column(run, large[0]), _column(qrels, large[1]))
    want_r, want_j, want_u = _expected(run, qrels)
    assert rq.tolist() == want_r.tolist()
    assert jq.tolist() == want_j.tolist()
    assert list(uniques) == want_u
    assert all(type(u) is str for u in uniques)


def test_one_set_of_queries_in_both_tables_sorted_and_not() -> None:
    for qids in (["q01", "q02", "q10"], ["q10", "q01", "q02"]):
        run = _grouped(qids, [2, 1, 3])
        qrels = _grouped(qids, [1, 2, 1])
        rq, jq, uniques = joint_qid_codes(_column(run), _column(qrels))
        assert list(uniques) == ["q01", "q02", "q10"]
        by_qid = {"q01": 0, "q02": 1, "q10": 2}
        assert rq.tolist() == [by_qid[q] for q in run]
        assert jq.tolist() == [by_qid[q] for q in qrels]


def test_a_qid_coming_back_is_still_one_code() -> None:
    run = ["b", "b", "a", "b"]  # "b" in two runs of rows
    codes, uniques, counts = factorize_qid(_column(run))
    assert codes.tolist() == [1, 1, 0, 1] and list(uniques) == ["a", "b"]
    assert counts is None or counts.tolist() == [1, 3]


@pytest.mark.parametrize("qids", [["3", "20", "100"], ["100", "20", "3"]])
def test_text_qids_sort_as_text_not_numbers(qids: list[str]) -> None:
    codes, uniques, counts = factorize_qid(_column(_grouped(qids, [1, 2, 1])))
    assert list(uniques) == ["100", "20", "3"]
    assert counts.tolist() == [1, 2, 1]
    assert codes.tolist() == [list(uniques).index(q) for q in _grouped(qids, [1, 2, 1])]
