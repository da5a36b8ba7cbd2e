"""The TREC text readers (:mod:`harness.data.eval_inputs` for ``harness eval``, with its
fast Arrow path, and :mod:`harness.data.trec`): they read what trec_eval reads and refuse
what it refuses, the Arrow path as the line-by-line one.

trec_eval splits a line on whitespace and needs 6 fields for a run line, 4 for a qrels
line (its ``get_trec_results.c`` / ``get_qrels.c``): a line with a field missing is an
error wherever the separators around it are doubled, leading or trailing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.commands.base import run_command
from harness.commands.eval import main as eval_main
from harness.data.eval_inputs import _fast_columns, read_eval_qrels, read_eval_run
from harness.data.trec import read_qrels, read_run
from harness.errors import InputError


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("line", [
    "q1  d1 1 2.0 r",  # Q0 missing, two spaces where it was: 6 space-separated fields
    " q1 d1 1 2.0 r",  # a field missing, a leading space
    "q1 d1 1 2.0 r ",  # a field missing, a trailing space
])
def test_run_line_with_a_missing_field_is_refused(tmp_path: Path, line: str) -> None:
    rows = "".join(f"q1 Q0 d{i} {i} {9 - i}.5 r\n" for i in range(2, 6))
    path = _write(tmp_path, "run.txt", rows + line + "\n")
    with pytest.raises(InputError, match=r"run.txt line 5 has 5 fields, expected 6"):
        read_eval_run(path)


def test_qrels_line_with_a_missing_field_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1  d2 1\n")
    with pytest.raises(InputError, match=r"qrels.txt line 2 has 3 fields, expected 4"):
        read_eval_qrels(path)


def test_plain_and_commented_files_read_alike(tmp_path: Path) -> None:
    """The same lines read by the Arrow path (plain) and line by line (a comment)."""
    lines = "".join(f"q{q} Q0 d{d} {d} {d / 4:.2f} run-x\n" for q in (2, 10) for d in range(6))
    plain = read_eval_run(_write(tmp_path, "a.txt", lines))
    commented = read_eval_run(_write(tmp_path, "b.txt", "# a comment\n" + lines))
    assert plain[1] == commented[1] == "run-x"
    assert plain[0].astype(object).equals(commented[0].astype(object))
    assert list(plain[0]["docid"][:3]) == ["d0", "d1", "d2"]
    assert list(plain[0]["score"][:3]) == [0.0, 0.25, 0.5]


# Issue 26. trec_eval splits fields on C's isspace (space, \t, \v, \f; get_qrels.c,
# get_trec_results.c): a no-break space (UTF-8 c2 a0), an ideographic space or an ASCII
# control such as \x1c is part of a docid, though Python's str.split() splits on each.
ODD_DOCIDS = ["b\u00a0x", "b\u3000x", "b\x1cx", "b\u2028x"]


def _reads(tmp_path: Path, name: str, text: str, comment: bool) -> tuple:
    """The run as harness eval reads it (Arrow's path, or line by line after a comment)
    and as the library's read_run reads it."""
    path = _write(tmp_path, name, ("# first\n" if comment else "") + text)
    return read_eval_run(path)[0], read_run(path)


@pytest.mark.parametrize("docid", ODD_DOCIDS)
@pytest.mark.parametrize("comment", [False, True])
def test_a_unicode_space_does_not_split_a_docid(tmp_path: Path, docid: str,
                                                comment: bool) -> None:
    text = f"1 Q0 {docid} 9 0.5 r\n1 Q0 c 10 0.25 r\n"
    for run in _reads(tmp_path, "run.txt", text, comment):
        assert list(run["docid"]) == [docid, "c"]
        assert list(run["score"]) == [0.5, 0.25]
    qrels = _write(tmp_path, "qrels.txt", ("# c\n" if comment else "") + f"1 0 {docid} 2\n")
    for table in (read_eval_qrels(qrels), read_qrels(qrels)):
        assert list(table["docid"]) == [docid] and list(table["label"]) == [2]


@pytest.mark.parametrize("odd", ["\x0b", "\x0c"])
def test_vertical_tab_and_form_feed_stay_in_their_field(tmp_path: Path, odd: str) -> None:
    """Only spaces and tabs separate fields (issue 26): ``b<VT>x`` is one docid, and the
    run line keeps its columns (split at the VT, the rank 9 would become the score)."""
    text = f"1 Q0 b{odd}x 9 0.5 r\n1 Q0 c 10 0.25 r\n"
    for run in (read_eval_run(_write(tmp_path, "run.txt", text))[0],
                read_run(_write(tmp_path, "run2.txt", text))):
        assert list(run["docid"]) == [f"b{odd}x", "c"]
        assert list(run["score"]) == [0.5, 0.25]
    path = _write(tmp_path, "qrels.txt", f"q1 0 d{odd}1 1\nq1 0 d2 2\n")
    for table in (read_eval_qrels(path), read_qrels(path)):
        assert list(table["docid"]) == [f"d{odd}1", "d2"] and list(table["label"]) == [1, 2]


@pytest.mark.parametrize("end", ["\r", "\r\n", "\n"])
@pytest.mark.parametrize("comment", [False, True])
def test_cr_crlf_and_lf_line_ends_read_alike(tmp_path: Path, end: str, comment: bool) -> None:
    judgments = [("301", "d1", 1), ("301", "d2", 0), ("302", "d9", 3)]
    text = ("# judged by hand" + end if comment else "") + "".join(
        f"{q} 0 {d} {r}{end}" for q, d, r in judgments) + end  # and a blank line
    path = _write(tmp_path, "qrels.txt", text)
    for table in (read_eval_qrels(path), read_qrels(path)):
        got = list(zip(table["qid"], table["docid"], table["label"]))
        assert got == judgments  # a CR-only file used to give the first judgment only
    run = _write(tmp_path, "run.txt", end.join(["301 Q0 d1 1 2.5 a", "301 Q0 d2 2 1.5 b"]))
    frame, runid = read_eval_run(run)
    assert list(frame["docid"]) == ["d1", "d2"] and runid == "b"


def test_crlf_files_keep_the_arrow_path(tmp_path: Path) -> None:
    """CR and CRLF line ends are read by Arrow's reader, not line by line (speed)."""
    path = _write(tmp_path, "run.txt", "1 Q0 a 1 2.5 r\r\n1 Q0 b 2 1.5 r\r\n")
    assert _fast_columns(path, 6, 4, (0, 2, 4, 5)) is not None
    tab = _write(tmp_path, "q.txt", "1\t0\ta\t1\r1\t0\tb\t0\r")
    assert _fast_columns(tab, 4, 3, (0, 1, 2, 3)) is not None
    odd = _write(tmp_path, "odd.txt", "1 0 a\x0b1\n")  # 3 fields: the line reader names it
    assert _fast_columns(odd, 4, 3, (0, 1, 2, 3)) is None


def test_comment_lines_keep_the_arrow_path(tmp_path: Path) -> None:
    """Lines starting with '#' are dropped before Arrow reads (a '#' inside a docid
    stays); a 1M-line run with a comment took seconds line by line."""
    text = "# run of 2026\r\n1 Q0 a#1 1 2.5 r\r\n#\r\n# more\r\n1 Q0 b 2 1.5 r\r\n# end"
    path = _write(tmp_path, "run.txt", text)
    fast = _fast_columns(path, 6, 4, (0, 2, 4, 5))
    assert fast is not None and list(fast[2]) == ["a#1", "b"] and list(fast[4]) == [2.5, 1.5]
    assert list(read_run(path)["docid"]) == ["a#1", "b"]  # the line reader agrees
    cr = _write(tmp_path, "cr.txt", text.replace("\r\n", "\r"))  # CR only: line by line
    assert _fast_columns(cr, 6, 4, (0, 2, 4, 5)) is None
    assert list(read_eval_run(cr)[0]["docid"]) == ["a#1", "b"]


def test_a_run_ignores_fields_after_the_sixth_as_trec_eval_does(tmp_path: Path) -> None:
    path = _write(tmp_path, "run.txt", "q1 Q0 d1 1 2.5 r extra words\nq1 Q0 d2 2 1.5 r\n")
    frame, runid = read_eval_run(path)
    assert list(frame["docid"]) == ["d1", "d2"] and runid == "r"


@pytest.mark.parametrize("name, text, message", [
    # a field too many in a qrels line (trec_eval refuses it; a run's are ignored)
    ("qrels.txt", "q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 1 extra\n",
     r"qrels.txt line 3 has 5 fields, expected 4 \(qrels: qid iter docno rel\): "
     r"'q1 0 d3 1 extra'"),
    # a file of another format given as qrels, or as the run: what it looks like
    ("qrels.txt", "q1 Q0 d1 1 2.5 r\n" * 3,
     r"qrels.txt line 1 has 6 fields, expected 4 .*the file looks like a run"),
    ("qrels.txt", "q1 0 0 d1 1\n" * 3,
     r"qrels.txt line 1 has 5 fields, expected 4 .*the file looks like preferences"),
    ("run.txt", "q1 0 d1 1\nq1 0 d2 0\n",
     r"run.txt line 1 has 4 fields, expected 6 .*the file looks like qrels"),
])
def test_a_wrong_number_of_fields_is_refused(tmp_path: Path, name: str, text: str,
                                             message: str) -> None:
    path = _write(tmp_path, name, text)
    readers = (read_eval_run, read_run) if name == "run.txt" else (read_eval_qrels, read_qrels)
    for read in readers:
        with pytest.raises(InputError, match=message):
            read(path)


def test_harness_eval_names_the_swapped_files(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """QRELS and RUN given the wrong way round: one line, exit 2, what the qrels look like."""
    run = _write(tmp_path, "run.txt", "q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 1.5 r\n")
    qrels = _write(tmp_path, "qrels.txt", "q1 0 d1 1\n")
    code = run_command(eval_main, [str(run), str(qrels)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "run.txt line 1 has 6 fields, expected 4" in err and "looks like a run" in err
