"""trec_eval's prefs measures (harness.metrics.trec_eval.prefs) against trec_eval's own expected
outputs: out.test.prefs (``-m all_prefs -q -R prefs prefs.test prefs.results.test``, the
same from prefs.comment.test) and out.test.qrels_prefs (``-m all_prefs -q -R qrels_prefs
qrels.test results.test``). Every per-query and ``all`` value must match at the printed 4
decimals, the counts exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.data.trec import read_prefs, read_qrels, read_run
from harness.errors import InputError, MetricDefinitionError
from harness.metrics.trec_eval.prefs import (
    PREFS_MEASURES,
    PREFS_SUMMARY,
    prefs_from_qrels,
    prefs_measures,
    prefs_summary,
)
from tests.shared import shared_data_dir

DATA = shared_data_dir() / "trec_eval_test"
CASES = {
    "prefs": ("prefs.results.test", "prefs.test", "out.test.prefs"),
    "prefs_comment": ("prefs.results.test", "prefs.comment.test", "out.test.prefs"),
    "qrels_prefs": ("results.test", "qrels.test", "out.test.qrels_prefs"),
}


def _expected(name: str) -> list[tuple[str, str, str]]:
    """(measure, qid, printed value) per line of a trec_eval output file."""
    lines = (DATA / name).read_text().splitlines()
    return [(m.strip(), q, v) for m, q, v in (line.split("\t") for line in lines)]


def _computed(case: str) -> pd.DataFrame:
    run_file, rel_file, _ = CASES[case]
    rel = (prefs_from_qrels(read_qrels(DATA / rel_file)) if case == "qrels_prefs"
           else read_prefs(DATA / rel_file))
    return prefs_measures(read_run(DATA / run_file), rel)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_value_matches_trec_eval(case: str) -> None:
    table = _computed(case)
    summary = prefs_summary(table)
    expected = _expected(CASES[case][2])
    checked, wrong = 0, []
    for measure, qid, printed in expected:
        if measure == "runid":
            continue
        if measure == "num_q":
            assert len(table) == int(printed)
            continue
        got = summary[measure] if qid == "all" else table.loc[qid, measure]
        if PREFS_SUMMARY[measure] == "sum":
            ok = "." not in printed and int(got) == int(printed) and float(got) == int(got)
        else:
            ok = abs(float(got) - float(printed)) <= 5e-5
        checked += 1
        if not ok:
            wrong.append((measure, qid, got, printed))
    assert wrong == []
    assert checked == len(PREFS_MEASURES) * (len(table) + 1)


@pytest.mark.parametrize("case", sorted(CASES))
def test_measures_and_queries_in_trec_eval_order(case: str) -> None:
    table = _computed(case)
    expected = [(m, q) for m, q, _ in _expected(CASES[case][2]) if m.startswith("prefs_")]
    per_query = [(m, q) for m, q in expected if q != "all"]
    assert per_query == [(m, q) for q in table.index for m in table.columns]
    assert [m for m, q in expected if q == "all"] == list(PREFS_MEASURES)
    assert all(table[m].dtype == np.int64 for m in PREFS_MEASURES if PREFS_SUMMARY[m] == "sum")
    assert [m for m in PREFS_MEASURES if PREFS_SUMMARY[m] == "sum"] == [
        "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret"]


def _run(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["qid", "docid", "score"])


def _prefs(rows: list[tuple[str, str, str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["qid", "jg", "jsg", "docid", "rel"])


def test_tied_scores_rank_by_docno_ascending() -> None:
    """The prefs code breaks score ties by docno ascending (unlike trec_eval's other
    measures): with a tie, "a" is ranked above "b", so a > b is fulfilled."""
    prefs = _prefs([("q", "0", "0", "a", 1), ("q", "0", "0", "b", 0)])
    out = prefs_measures(_run([("q", "b", 1.0), ("q", "a", 1.0)]), prefs)
    assert out.loc["q", "prefs_num_prefs_ful_ret"] == 1
    out = prefs_measures(_run([("q", "a", 1.0), ("q", "b", 2.0)]), prefs)
    assert out.loc["q", "prefs_num_prefs_ful_ret"] == 0


def test_transitive_preferences_across_sub_groups() -> None:
    # a > b in one sub-group, b > c in another: a > c is implied (3 preferences)
    prefs = _prefs([("q", "0", "s1", "a", 2), ("q", "0", "s1", "b", 1),
                    ("q", "0", "s2", "b", 5), ("q", "0", "s2", "c", 4)])
    out = prefs_measures(_run([("q", "c", 3.0), ("q", "a", 2.0), ("q", "b", 1.0)]), prefs)
    assert out.loc["q", "prefs_num_prefs_poss"] == 3
    assert out.loc["q", "prefs_num_prefs_ful"] == 1  # a > b only
    assert out.loc["q", "prefs_simp"] == pytest.approx(1 / 3)


def test_names_select_columns_in_trec_eval_order() -> None:
    prefs = _prefs([("q", "0", "0", "a", 1), ("q", "0", "0", "b", 0)])
    run = _run([("q", "a", 1.0)])
    out = prefs_measures(run, prefs, names=["prefs_simp", "prefs_num_prefs_poss"])
    assert list(out.columns) == ["prefs_num_prefs_poss", "prefs_simp"]
    with pytest.raises(MetricDefinitionError, match="not a prefs measure"):
        prefs_measures(run, prefs, names=["prefs_nope"])
    empty = prefs_measures(_run([("other", "a", 1.0)]), prefs)
    assert empty.empty and list(empty.columns) == list(PREFS_MEASURES)


def test_qrels_iter_column_is_the_judgment_group() -> None:
    qrels = pd.DataFrame({"qid": ["q"] * 4, "iter": [0, 0, 1, 1],
                          "docid": ["a", "b", "a", "b"], "label": [1, 0, 0, 1]})
    prefs = prefs_from_qrels(qrels)
    assert list(prefs["jg"]) == ["0", "0", "1", "1"] and set(prefs["jsg"]) == {"0"}
    out = prefs_measures(_run([("q", "a", 2.0), ("q", "b", 1.0)]), prefs)
    assert out.loc["q", "prefs_simp"] == 0.5  # two judges disagree
    assert out.loc["q", "prefs_pair"] == 0.5 and out.loc["q", "prefs_avgjg"] == 0.5
    one_group = prefs_from_qrels(qrels.drop(columns="iter"))
    assert set(one_group["jg"]) == {"0"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.prefs"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, words", [
    ("q 0 0 d1 1\nq 0 0 d2\n", "line 2 has 4 fields, expected 5"),
    ("q 0 0 d1 1\n# comment\nq 0 0 d2 1 extra\n", "line 3 has 6 fields, expected 5"),
    ("q 0 0 d1 high\n", "line 1: rel_level 'high' is not a finite number"),
])
def test_bad_prefs_lines_name_file_and_line(tmp_path: Path, text: str, words: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_prefs(path)
    message = str(info.value)
    assert words in message and "bad.prefs" in message and "\n" not in message
    assert info.value.row == len(text.splitlines())


def test_bad_inputs_to_the_measures() -> None:
    prefs = _prefs([("q", "0", "0", "a", 1), ("q", "0", "0", "b", 0)])
    with pytest.raises(InputError, match="retrieved twice"):
        prefs_measures(_run([("q", "a", 1.0), ("q", "a", 2.0)]), prefs)
    with pytest.raises(InputError, match="two levels"):
        prefs_measures(_run([("q", "a", 1.0)]),
                       _prefs([("q", "0", "0", "a", 1), ("q", "0", "0", "a", 2),
                               ("q", "0", "0", "b", 0)]))
    cycle = _prefs([("q", "0", "s1", "a", 2), ("q", "0", "s1", "b", 1),
                    ("q", "0", "s2", "b", 2), ("q", "0", "s2", "a", 1)])
    with pytest.raises(InputError, match="contradictory"):
        prefs_measures(_run([("q", "a", 1.0)]), cycle)
    with pytest.raises(InputError, match="lacks column"):
        prefs_measures(_run([("q", "a", 1.0)]), prefs.drop(columns="jsg"))
