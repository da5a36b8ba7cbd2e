"""``harness compare --qrels`` with the verdict flags (``--margin``, ``--equivalence``,
``--verdict-test``, ``--gate``) of the MLflow form, on TREC CAsT 2021 (shared data).

The expectations come from the runs' known figures, not from the code: ANCE's mean nDCG
(``trec_eval:ndcg``) is 0.4716 against BM25's 0.3901, two-sided paired t p = 2.49e-6
(PyTerrier's ``pt.Experiment``), so ANCE is better than BM25 and BM25 is worse than ANCE
by more than a margin of 0.01: the gate passes with BM25 as the baseline and fails with ANCE.
"""

from __future__ import annotations

import json

import pytest

from tests.shared import shared_data_dir

CAST = shared_data_dir() / "trec_cast_2021"
QRELS = CAST / "trec-cast-qrels-docs.2021.qrel"
BM25, ANCE = CAST / "org_manual_bm25.run", CAST / "org_manual_ance.run"
NDCG = "nDCG(gain=linear,ties=docid)"  # trec_eval:ndcg's display name
FILES = ["--qrels", str(QRELS), str(BM25), str(ANCE), "-m", "trec_eval:ndcg"]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from harness.commands.base import run_command
    from harness.commands.compare import main

    code = run_command(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _gate(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("gate: "))
    return lines[start:]


def test_gate_passes_when_the_candidate_is_better(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = _cli(capsys, *FILES, "--baseline", "org_manual_bm25",
                          "--margin", "trec_eval:ndcg=0.01", "--gate")
    assert code == 0, err
    assert "0.4716*ᵃ" in out  # the table first
    assert f"  {NDCG}, org_manual_ance vs org_manual_bm25: better (diff +0.0815" in out
    assert _gate(out) == ["gate: passed (1 gated comparison(s) better or not worse)"]


def test_gate_fails_when_the_candidate_is_worse(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = _cli(capsys, *FILES, "--baseline", "org_manual_ance",
                          "--margin", f"{NDCG}=0.01", "--gate")
    assert code == 1, err
    gate = _gate(out)
    assert gate[0] == "gate: FAILED (1 of 1 gated comparison(s))"
    assert gate[1].startswith(f"  {NDCG}, org_manual_bm25 vs org_manual_ance: worse "
                              "(diff -0.0815, margin 0.01; t one-sided p adj")
    assert len(gate) == 2


def test_verdicts_without_the_gate_and_machine_formats_stay_parseable(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, *FILES, "--baseline", "org_manual_ance", "--margin",
                          "trec_eval:ndcg=0.01", "--verdict-test", "wilcoxon",
                          "--format", "json")
    assert code == 0, err  # no --gate: the verdicts are told, the exit code is not theirs
    assert json.loads(out)["settings"]["baseline"] == "org_manual_ance"
    assert "Verdicts (wilcoxon, alpha 0.05, holm per variant): 1 worse" in err
    assert "gate:" not in out + err


@pytest.mark.parametrize("extra, words", [
    (["--margin", "trec_eval:ndcg=0.01", "--gate"], "name it with --baseline"),
    (["--baseline", "org_manual_bm25", "--gate"], "give each a --margin"),
    (["--baseline", "org_manual_bm25", "--margin", "nDCG@10=0.01"], "no compared run has"),
    (["--baseline", "org_manual_bm25", "--equivalence"], "give a margin > 0"),
])
def test_bad_verdict_options_are_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                 extra: list[str], words: str) -> None:
    code, out, err = _cli(capsys, *FILES, *extra)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and words in err and len(err.splitlines()) == 1
