"""The TREC text readers of ``harness eval`` (:mod:`harness.data.eval_inputs`): the fast
Arrow path must refuse what trec_eval refuses, the same line by line.

trec_eval splits a line on whitespace and needs 6 fields for a run line, 4 for a qrels
line (its ``get_trec_results.c`` / ``get_qrels.c``): a line with a field missing is an
error wherever the separators around it are doubled, leading or trailing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.data.eval_inputs import read_eval_qrels, read_eval_run
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
    with pytest.raises(InputError, match=r"run.txt line 5: 5 fields, expected 6"):
        read_eval_run(path)


def test_qrels_line_with_a_missing_field_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1  d2 1\n")
    with pytest.raises(InputError, match=r"qrels.txt line 2: 3 fields, expected 4"):
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
