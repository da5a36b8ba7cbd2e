"""The metric engine against trec_eval's own expected outputs (read in place, never copied).

Every expected number comes from a trec_eval output file in the shared data folder (see its
``README.md`` for the exact command line behind each file). Those files print ``%.4f``, so a
value matches when it is within half a unit of the 4th decimal.

Measures checked, with the :class:`harness.Metric` each maps to (``convention="trec_eval"``):

=====================  ======================================================
trec_eval              harness
=====================  ======================================================
``ndcg``               ``Metric("ndcg")``
``ndcg_cut_K``         ``Metric("ndcg", k=K)``
``ndcg_1=3,2=9,...``   ``Metric("ndcg", gain={1: 3, 2: 9, ...})``
``map`` / ``map_cut_K``  ``Metric("ap")`` / ``Metric("ap", k=K)``
``recip_rank``         ``Metric("rr")``
``P_K``                ``Metric("precision", k=K)``
``recall_K``           ``Metric("recall", k=K)``
=====================  ======================================================

Binary measures use ``level`` = trec_eval's ``-l``; ``-c`` is ``missing="zero"``.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

import harness
from harness.data import read_qrels, read_run

# Half a unit of the 4th decimal (values are printed %.4f), plus room for float noise.
TOL = 0.5e-4 + 1e-12
SUMMARY = "all"
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


# --------------------------------------------------------------------------------------
# Expected-output parser
# --------------------------------------------------------------------------------------
_LINE = re.compile(r"^(\S+)\s+(\S+)\s+(\S*)\s*$")


def parse_trec_eval(path: Path) -> dict[str, dict[str, str]]:
    """``{measure: {qid: value text}}`` from trec_eval output (``measure qid value`` lines).

    Values stay text (``runid`` and ``relstring`` are not numbers); ``all`` is the summary.
    """
    out: dict[str, dict[str, str]] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            m = _LINE.match(line.rstrip("\n"))
            if m is None:
                raise ValueError(f"{path.name}:{lineno}: not 'measure qid value': {line!r}")
            measure, qid, value = m.groups()
            per_qid = out.setdefault(measure, {})
            if qid in per_qid:
                raise ValueError(f"{path.name}:{lineno}: {measure} {qid} given twice")
            per_qid[qid] = value
    return out


def test_parser_reads_tabs_and_padding(tmp_path: Path) -> None:
    p = tmp_path / "out"
    p.write_text("map                   \t301\t0.0324\nrunid\tall\tSTANDARD\n"
                 "relstring             \t302\t'1101110110'\nP_5 all 0.2667\n")
    assert parse_trec_eval(p) == {
        "map": {"301": "0.0324"}, "runid": {"all": "STANDARD"},
        "relstring": {"302": "'1101110110'"}, "P_5": {"all": "0.2667"},
    }


# --------------------------------------------------------------------------------------
# trec_eval measure name -> Metric
# --------------------------------------------------------------------------------------
_NUM = r"\d+(?:\.\d*)?|\.\d+"
_GAIN_PARAMS = re.compile(rf"ndcg_((?:(?:{_NUM})=(?:{_NUM}),)*(?:{_NUM})=(?:{_NUM}))")


def metric_for(measure: str, level: int = 1) -> harness.Metric:
    """The harness definition of a trec_eval measure (``level`` is trec_eval's ``-l``)."""
    conv = {"convention": "trec_eval"}
    if measure == "ndcg":
        return harness.Metric("ndcg", **conv)
    if m := re.fullmatch(r"ndcg_cut_(\d+)", measure):
        return harness.Metric("ndcg", k=int(m.group(1)), **conv)
    if m := _GAIN_PARAMS.fullmatch(measure):
        table = {float(a): float(b) for a, b in
                 (pair.split("=") for pair in m.group(1).split(","))}
        return harness.Metric("ndcg", gain=table, **conv)
    if measure == "map":
        return harness.Metric("ap", level=level, **conv)
    if m := re.fullmatch(r"map_cut_(\d+)", measure):
        return harness.Metric("ap", k=int(m.group(1)), level=level, **conv)
    if measure == "recip_rank":
        return harness.Metric("rr", level=level, **conv)
    if m := re.fullmatch(r"P_(\d+)", measure):
        return harness.Metric("precision", k=int(m.group(1)), level=level, **conv)
    if m := re.fullmatch(r"recall_(\d+)", measure):
        return harness.Metric("recall", k=int(m.group(1)), level=level, **conv)
    raise KeyError(measure)


def test_metric_for_gain_table() -> None:
    m = metric_for("ndcg_1=3,2=9,4=4.5")
    assert m == harness.Metric("ndcg", gain={1: 3, 2: 9, 4: 4.5}, convention="trec_eval")
    assert m.gain == ((1.0, 3.0), (2.0, 9.0), (4.0, 4.5))
    assert metric_for("P_5", level=2).level == 2
    assert metric_for("ndcg_cut_23").k == 23


# --------------------------------------------------------------------------------------
# Cases: input files, flags, expected output, measures
# --------------------------------------------------------------------------------------
NDCG = ["ndcg", *(f"ndcg_cut_{k}" for k in CUTS)]
MAP = ["map", *(f"map_cut_{k}" for k in CUTS)]
P = [f"P_{k}" for k in CUTS]
RECALL = [f"recall_{k}" for k in CUTS]
ALL_TREC = [*NDCG, *MAP, "recip_rank", *P, *RECALL]  # what -m all_trec prints of ours
DEFAULT = ["map", "recip_rank", *P]  # what the default measure set prints of ours


@dataclass(frozen=True)
class Case:
    expected: str  # paths relative to the shared data folder
    qrels: str
    run: str
    measures: tuple[str, ...]
    level: int = 1  # trec_eval -l
    missing: str = "exclude"  # "zero" = trec_eval -c
    num_q: int | None = None  # documented number of evaluated queries


TE = "trec_eval_test"
CAST = "trec_cast_2021"
CAST_QRELS = f"{CAST}/trec-cast-qrels-docs.2021.qrel"

CASES: dict[str, Case] = {
    # -m all_trec -q qrels.test results.test
    "aq": Case(f"{TE}/out.test.aq", f"{TE}/qrels.test", f"{TE}/results.test",
               tuple(ALL_TREC), num_q=3),
    # -m all_trec qrels.test results.test (summary only)
    "a": Case(f"{TE}/out.test.a", f"{TE}/qrels.test", f"{TE}/results.test",
              tuple(ALL_TREC), num_q=3),
    # -m all_trec -q -l2 qrels.rel_level results.test: binary measures count rel >= 2,
    # ndcg uses the raw grades, negative grades are unjudged
    "aql": Case(f"{TE}/out.test.aql", f"{TE}/qrels.rel_level", f"{TE}/results.test",
                tuple(ALL_TREC), level=2, num_q=3),
    # -m all_trec -q -c qrels.test results.trunc: topic 302 is not in the run, scores 0
    "aqc": Case(f"{TE}/out.test.aqc", f"{TE}/qrels.test", f"{TE}/results.trunc",
                tuple(ALL_TREC), missing="zero", num_q=3),
    # -q -m P.5,7,3 -m recall.20,2000 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 ...
    "meas_params": Case(f"{TE}/out.test.meas_params", f"{TE}/qrels.test", f"{TE}/results.test",
                        ("ndcg_1=3,2=9,4=4.5", "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23",
                         "P_3", "P_5", "P_7", "recall_20", "recall_2000")),
    # default measures, summary only
    "default": Case(f"{TE}/out.test", f"{TE}/qrels.test", f"{TE}/results.test",
                    tuple(DEFAULT), num_q=3),
    # the README: the same output is expected from the qrels with '#' comment lines
    "default_qrels_with_comments": Case(f"{TE}/out.test", f"{TE}/qrels.test.with-comments",
                                        f"{TE}/results.test", tuple(DEFAULT), num_q=3),
    # graded 0-3 RAG 2024 qrels, docids with '#', 301 run topics of which 31 are judged
    "comment": Case(f"{TE}/out.comment.test", f"{TE}/qrels.comment.test",
                    f"{TE}/results.comment.test", tuple(DEFAULT), num_q=31),
    # TREC CAsT 2021: -q -m all_trec, default -l1, no -c
    "cast_bm25": Case(f"{CAST}/expected.org_manual_bm25.all_trec.q.txt", CAST_QRELS,
                      f"{CAST}/org_manual_bm25.run", tuple(ALL_TREC), num_q=158),
    "cast_ance": Case(f"{CAST}/expected.org_manual_ance.all_trec.q.txt", CAST_QRELS,
                      f"{CAST}/org_manual_ance.run", tuple(ALL_TREC), num_q=158),
}

# Per-query output is expected for these (trec_eval -q).
PER_QUERY_CASES = {"aq", "aql", "aqc", "meas_params", "cast_bm25", "cast_ance"}


@dataclass(frozen=True)
class Result:
    expected: dict[str, dict[str, str]]
    per_query: pd.DataFrame
    summary: pd.DataFrame
    columns: dict[str, str]  # trec_eval measure -> per_query column


@functools.cache
def _evaluate_case(name: str, data: Path) -> Result:
    case = CASES[name]
    metrics = {measure: metric_for(measure, case.level) for measure in case.measures}
    run = read_run(data / case.run)[["qid", "docid", "score"]]
    qrels = read_qrels(data / case.qrels)
    per_query = harness.evaluate(run, qrels, list(metrics.values()), missing=case.missing)
    columns = {measure: m.display_name for measure, m in metrics.items()}
    assert len(set(columns.values())) == len(columns), "two measures map to one column"
    return Result(parse_trec_eval(data / case.expected), per_query,
                  harness.aggregate(per_query), columns)


@pytest.fixture
def evaluated(shared_data: Path):
    return lambda name: _evaluate_case(name, shared_data)


def _close(actual: float, expected: float) -> bool:
    return math.isfinite(actual) and abs(actual - expected) <= TOL


def _params() -> list:
    return [pytest.param(name, measure, id=f"{name}-{measure}")
            for name, case in CASES.items() for measure in case.measures]


@pytest.mark.parametrize(("case", "measure"), _params())
def test_measure_matches_trec_eval(evaluated, case: str, measure: str) -> None:
    res = evaluated(case)
    assert measure in res.expected, f"{measure} is not in {CASES[case].expected}"
    expected = res.expected[measure]
    column = res.columns[measure]

    per_qid = {q: float(v) for q, v in expected.items() if q != SUMMARY}
    if case in PER_QUERY_CASES:
        assert per_qid, f"{CASES[case].expected} has no per-query {measure} line"
    if per_qid:
        actual = res.per_query[column]
        assert sorted(map(str, actual.index)) == sorted(per_qid), "evaluated qids differ"
        values = {str(q): float(v) for q, v in actual.items()}
        bad = {q: (values[q], e) for q, e in per_qid.items() if not _close(values[q], e)}
        assert not bad, (
            f"{len(bad)} of {len(per_qid)} queries differ from trec_eval "
            f"(qid: (harness, trec_eval)), first ones: {dict(list(bad.items())[:10])}")

    want = float(expected[SUMMARY])
    mean = float(res.summary.loc[column, "mean"])
    assert _close(mean, want), f"{column}: aggregate mean {mean!r} != trec_eval all {want}"


@pytest.mark.parametrize("case", list(CASES))
def test_query_counts_match_trec_eval(evaluated, case: str) -> None:
    res = evaluated(case)
    spec = CASES[case]
    n_queries = res.summary["n_queries"]
    assert (n_queries == len(res.per_query)).all()
    if "num_q" in res.expected:
        assert int(res.expected["num_q"][SUMMARY]) == len(res.per_query)
    if spec.num_q is not None:  # the count the README documents
        assert (n_queries == spec.num_q).all()


def test_cast_has_158_judged_queries_of_239(evaluated) -> None:
    for case in ("cast_bm25", "cast_ance"):
        res = evaluated(case)
        assert (res.summary["n_queries"] == 158).all()
        assert len(res.per_query.attrs["unjudged_qids"]) == 239 - 158
        assert res.per_query.attrs["missing_qids"] == []


def test_trunc_missing_topic_scores_zero(evaluated) -> None:
    """-c: topic 302 (judged, not in the run) is a row of zeros, and the mean is over 3."""
    res = evaluated("aqc")
    row = res.per_query.loc["302"]
    assert row["n_docs"] == 0
    assert row["n_relevant"] == 77
    assert (row[list(res.columns.values())] == 0).all()
    assert (res.summary["n_queries"] == 3).all()


def test_comment_docids_with_hash_are_kept(evaluated, shared_data: Path) -> None:
    run = read_run(shared_data / CASES["comment"].run)
    qrels = read_qrels(shared_data / CASES["comment"].qrels)
    assert len(run) == 30100 and len(qrels) == 5890
    assert run["docid"].str.contains("#").all()
    res = evaluated("comment")
    assert len(res.per_query.attrs["unjudged_qids"]) == 301 - 31


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_checks_every_supported_measure_in_file(evaluated, case: str) -> None:
    """No measure the engine can compute is left unchecked in an expected file."""
    res = evaluated(case)
    supported = set()
    for measure in res.expected:
        try:
            metric_for(measure)
        except KeyError:
            continue
        supported.add(measure)
    assert supported == set(CASES[case].measures)
