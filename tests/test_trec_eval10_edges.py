"""``harness eval`` against trec_eval 10.0 at the edges where 10.0 and 9.x part ways.

Every command of the shared ``trec_eval10_edges/COMMANDS.tsv`` (ten qrels/run pairs x eight
flag sets, each with ``-m all_trec``) is run through ``harness eval``; its lines must equal
trec_eval 10.0's output file ``out.<case>.<flags>`` line by line. Where trec_eval exited
with code 4 (a judged query the run lacks, without ``-c``: 10.0's regression; 9.x skipped
it), its file holds the lines it printed before stopping and its stderr message: the
harness prints those same lines first, then the summary of the queries it kept, and one
stderr line naming the query and ``-c``.

The cases' causes (issue 35) have a test of their own below, each with the value trec_eval
10.0 printed for it.
"""

from __future__ import annotations

import csv
import shlex
from pathlib import Path

import pytest

from harness.commands.base import run_command
from harness.commands.eval import main
from tests.shared import shared_data_dir

EDGES = shared_data_dir() / "trec_eval10_edges"


def _commands() -> list[dict[str, str]]:
    with open(EDGES / "COMMANDS.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


COMMANDS = _commands()


def _argv(command: str) -> list[str]:
    args = shlex.split(command)
    assert args[0] == "trec_eval"
    return [str(EDGES / a) if (EDGES / a).is_file() else a for a in args[1:]]


def _eval(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, list[str], str]:
    code = run_command(main, argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def _expected(case: str, flags: str) -> tuple[list[str], str]:
    lines = (EDGES / f"out.{case}.{flags}").read_text().splitlines()
    stderr = [ln for ln in lines if ln.startswith("# stderr: ")]
    return [ln for ln in lines if not ln.startswith("# stderr: ")], "".join(
        s.removeprefix("# stderr: ") for s in stderr)


def _first_differences(expected: list[str], actual: list[str]) -> str:
    diffs = [f"line {i + 1}: trec_eval {e!r} harness {a!r}"
             for i, (e, a) in enumerate(zip(expected, actual)) if e != a]
    return f"{len(diffs)} lines differ; first: {diffs[:6]}"


def test_the_shared_folder_holds_eighty_commands() -> None:
    assert len(COMMANDS) == 80
    assert {row["exit"] for row in COMMANDS} == {"0", "4"}


@pytest.mark.parametrize("row", COMMANDS, ids=[f"{r['case']}.{r['flags']}" for r in COMMANDS])
def test_prints_what_trec_eval_10_prints(capsys: pytest.CaptureFixture[str],
                                         row: dict[str, str]) -> None:
    code, actual, err = _eval(capsys, _argv(row["command"]))
    expected, their_err = _expected(row["case"], row["flags"])
    assert code == 0, err
    if row["exit"] == "0":
        assert actual == expected, _first_differences(expected, actual)
        return
    # trec_eval 10.0 stopped at the judged query the run lacks; the harness skips it (9.x)
    assert "not found in qrels" in their_err
    assert actual[:len(expected)] == expected, _first_differences(expected, actual)
    summary = actual[len(expected):]
    assert summary and all(line.split("\t")[1] == "all" for line in summary)
    note = [ln for ln in err.splitlines() if "no results for" in ln]
    assert len(note) == 1 and "'c'" in note[0] and "-c" in note[0], err


def _values(lines: list[str]) -> dict[tuple[str, str], str]:
    return {(ln.split("\t")[0].strip(), ln.split("\t")[1]): ln.split("\t")[2] for ln in lines}


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, run: str, qrels: str,
         *flags: str) -> tuple[dict[tuple[str, str], str], str]:
    (tmp_path / "r").write_text(run)
    (tmp_path / "q").write_text(qrels)
    code, out, err = _eval(capsys, [*flags, str(tmp_path / "q"), str(tmp_path / "r")])
    assert code == 0, err
    return _values(out), err


# -- the causes, one test each (values printed by trec_eval 10.0 for these inputs) --------------
def test_scores_are_compared_as_double(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    """0.100000001 and 0.1 are one float32 but two doubles: 10.0 ranks a first (RR 1);
    trec_eval 9.x and pytrec_eval (``--compat 9``) tie them and rank b first (docno
    descending: RR 0.5)."""
    run = "q1 Q0 a 1 0.100000001 r\nq1 Q0 b 2 0.1 r\n"
    qrels = "q1 0 a 1\nq1 0 b 0\n"
    ten, _ = _run(capsys, tmp_path, run, qrels, "-q", "-m", "recip_rank")
    nine, _ = _run(capsys, tmp_path, run, qrels, "-q", "-m", "recip_rank", "--compat", "9")
    assert ten["recip_rank", "q1"] == "1.0000"
    assert nine["recip_rank", "q1"] == "0.5000"


def test_one_score_written_two_ways_is_one_double(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """The file's own case: the values 10.0 printed for ``ties_double`` with ``-q``."""
    expected, _ = _expected("ties_double", "q")
    code, actual, err = _eval(capsys, _argv("trec_eval -q -m all_trec ties_double.qrels "
                                            "ties_double.run"))
    assert code == 0 and actual == expected, _first_differences(expected, actual)


def test_number_of_documents_reaches_utility(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    """``-N``: utility's fourth weight counts N + rel_ret - ret - rel; 2 retrieved, 1 of
    them relevant, 1 relevant: 1 - 1 + 0 + (5000 + 1 - 2 - 1) = 4998."""
    run = "q1 Q0 a 1 2 r\nq1 Q0 b 2 1 r\n"
    qrels = "q1 0 a 1\nq1 0 b 0\n"
    with_n, _ = _run(capsys, tmp_path, run, qrels, "-N", "5000", "-m", "utility.1,-1,0,1")
    without, _ = _run(capsys, tmp_path, run, qrels, "-m", "utility.1,-1,0,1")
    assert with_n["utility_1,-1,0,1", "all"] == "4998.0000"
    assert without["utility_1,-1,0,1", "all"] == "-2.0000"


def test_judged_only_query_left_empty_is_nan(capsys: pytest.CaptureFixture[str]) -> None:
    """``-J`` with a query whose retrieved documents are all unjudged: 10.0 prints -nan for
    the recall levels that need no relevant document, and for 11pt_avg, there and in
    the summary."""
    code, out, err = _eval(capsys, _argv("trec_eval -q -J -m all_trec "
                                         "judged_only_unjudged.qrels "
                                         "judged_only_unjudged.run"))
    values = _values(out)
    assert values["iprec_at_recall_0.00", "b"] == "  -nan"
    assert values["11pt_avg", "b"] == "  -nan"
    assert values["11pt_avg", "all"] == "  -nan"
    assert values["iprec_at_recall_1.00", "b"] == "0.0000"  # needs the one relevant


def test_complete_with_level_counts_every_relevant_line(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """``-c -l 2``: the summary's num_rel counts the qrels lines labelled above 0, not
    those at level 2 (3 in ``ties_double``: q1 a=1, q2 c=2, q2 d=1), while each query's
    line counts label >= 2."""
    code, out, err = _eval(capsys, _argv("trec_eval -q -c -l 2 -m all_trec "
                                         "ties_double.qrels ties_double.run"))
    values = _values(out)
    assert values["num_rel", "all"] == "3"
    assert values["num_rel", "q1"] == "0" and values["num_rel", "q2"] == "1"


def test_fractional_labels_are_truncated_with_a_note(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    code, out, err = _eval(capsys, _argv("trec_eval -q -m all_trec fractional_labels.qrels "
                                         "fractional_labels.run"))
    expected, _ = _expected("fractional_labels", "q")
    assert out == expected, _first_differences(expected, out)
    assert "not integers" in err and "truncated toward zero" in err


def test_relstring_of_a_query_the_run_lacks_under_complete(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``-c``: a judged query the run lacks prints an empty relstring (trec_eval ranks one
    unjudged placeholder document for it, then clears the string)."""
    code, out, err = _eval(capsys, _argv("trec_eval -q -c -m all_trec missing_query.qrels "
                                         "missing_query.run"))
    assert _values(out)["relstring", "c"] == "''"


def test_missing_query_without_complete_is_skipped_with_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _eval(capsys, _argv("trec_eval -q -m all_trec missing_query.qrels "
                                         "missing_query.run"))
    values = _values(out)
    assert values["num_q", "all"] == "1"
    assert not any(q == "c" for _, q in values)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "'c'" in lines[0] and "-c" in lines[0] and "exit 4" in lines[0]


def test_the_library_refuses_fractional_labels_under_trec_eval() -> None:
    """``harness.evaluate`` with a trec_eval convention cannot reproduce trec_eval on labels
    it would truncate: it says so, naming the label, column and query."""
    import pandas as pd

    import harness
    from harness.errors import InputError

    run = pd.DataFrame({"qid": "q7", "docid": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q7", "docid": ["a", "b"], "label": [1.5, 0.0]})
    for convention in ("trec_eval", "trec_eval9"):
        with pytest.raises(InputError, match=r"label 1.5 is not an integer; trec_eval "
                                             r"truncates.*'label'.*'q7'"):
            harness.evaluate(run, qrels, [harness.Metric("ndcg", convention=convention)])
