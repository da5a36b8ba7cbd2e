"""``harness eval`` against trec_eval's own expected outputs (its ``make quicktest``).

For every expected file in the shared ``trec_eval_test/`` folder, ``harness eval`` with the
flags that produced it (see that folder's README) must print the same lines: the same
names, the same query order, the same values as printed. A line the harness cannot print
yet (a measure not in the registry) fails the test, with the missing lines named.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from harness.commands.base import run_command
from harness.commands.eval import main
from tests.shared import shared_data_dir

TE = shared_data_dir() / "trec_eval_test"
MEAS_PARAMS = ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m",
               "recall.20,2000", "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m",
               "11pt_avg..25,.5,.75", "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4",
               "-msuccess.2,5,20", "qrels.test", "results.test"]

#: expected file -> trec_eval's flags and inputs (the README's table, quicktest's commands)
CASES = {
    "out.test": ["qrels.test", "results.test"],
    "out.test-with-comments": ["qrels.test.with-comments", "results.test"],
    "out.comment.test": ["qrels.comment.test", "results.comment.test"],
    "out.test.a": ["-m", "all_trec", "qrels.test", "results.test"],
    "out.test.aq": ["-m", "all_trec", "-q", "qrels.test", "results.test"],
    "out.test.aqc": ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
    "out.test.aqcM": ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"],
    "out.test.aql": ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", "qrels.rel_level",
                     "results.test"],
    "out.test.meas_params": MEAS_PARAMS,
    "out.test.prefs": ["-m", "all_prefs", "-q", "-R", "prefs", "prefs.test",
                       "prefs.results.test"],
    "out.test.prefs-comment": ["-m", "all_prefs", "-q", "-R", "prefs", "prefs.comment.test",
                               "prefs.results.test"],
    "out.test.qrels_prefs": ["-m", "all_prefs", "-q", "-R", "qrels_prefs", "qrels.test",
                             "results.test"],
    "out.test.qrels_jg": ["-m", "qrels_jg", "-q", "-R", "qrels_jg", "qrels.123",
                          "results.test"],
    "out.test.qrels_jg-comments": ["-m", "qrels_jg", "-q", "-R", "qrels_jg",
                                   "qrels.comments.123", "results.test"],
    "out.test.aqZ": ["-q", "-m", "all_trec", "-Z", "zscores_file", "qrels.test",
                     "results.test"],
}


def _argv(args: list[str]) -> list[str]:
    return [str(TE / a) if (TE / a).is_file() else a for a in args]


def _expected(case: str) -> list[str]:
    return (TE / case.split("-")[0]).read_text().splitlines()


def run_eval(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = run_command(main, argv)
    out, err = capsys.readouterr()
    return code, out, err


def _differences(expected: list[str], actual: list[str]) -> str:
    """What differs, by measure name: lines missing, extra, or with another value."""
    def key(line: str) -> tuple[str, str]:
        name, qid, _ = (line.split("\t") + ["", ""])[:3]
        return name.strip(), qid

    exp = {key(line): line for line in expected}
    act = {key(line): line for line in actual}
    missing = Counter(k[0] for k in exp if k not in act)
    extra = Counter(k[0] for k in act if k not in exp)
    values = [f"{exp[k].split(chr(9))[0].strip()} {k[1]}: trec_eval {exp[k].split(chr(9))[2]}"
              f" harness {act[k].split(chr(9))[2]}" for k in exp if k in act and exp[k] != act[k]]
    order = [k for k in act if k in exp] != [k for k in exp if k in act]
    parts = []
    if missing:
        parts.append(f"{sum(missing.values())} lines missing: {dict(missing)}")
    if extra:
        parts.append(f"{sum(extra.values())} lines extra: {dict(extra)}")
    if values:
        parts.append(f"{len(values)} values differ: {values[:12]}")
    if order:
        parts.append("the lines are in another order")
    return "; ".join(parts)


@pytest.mark.parametrize("case", list(CASES))
def test_prints_what_trec_eval_prints(capsys: pytest.CaptureFixture[str], case: str) -> None:
    code, out, err = run_eval(capsys, _argv(CASES[case]))
    assert code == 0, err
    expected, actual = _expected(case), out.splitlines()
    assert actual == expected, f"{case}: {_differences(expected, actual)} ({err.strip()})"


def _harness() -> list[str]:
    script = Path(sys.executable).parent / "harness"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "harness"]


@pytest.mark.parametrize("case", ["out.test.aqcM", "out.test.meas_params", "out.test.aql"])
def test_console_script_prints_the_same(case: str) -> None:
    """The installed ``harness eval`` (a subprocess), with flags glued as trec_eval allows."""
    res = subprocess.run([*_harness(), "eval", *_argv(CASES[case])], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == _expected(case), _differences(
        _expected(case), res.stdout.splitlines())


def test_python_m_harness_eval_prints_the_run_first() -> None:
    """``python -m harness eval`` (its speed lives in benchmarks/bench_trec_eval.py)."""
    res = subprocess.run([sys.executable, "-m", "harness", "eval", "-m", "all_trec",
                          *_argv(["qrels.test", "results.test"])], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("runid                 \tall\tSTANDARD\n")


def _measures(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[tuple[str, str], str]:
    code, out, err = run_eval(capsys, list(argv))
    assert code == 0, err
    return {(ln.split("\t")[0].strip(), ln.split("\t")[1]): ln.split("\t")[2]
            for ln in out.splitlines()}


def test_other_tools_names_after_the_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """Names that are not files are measures in any tool's spelling, printed as written;
    trec_eval's own spellings give trec_eval's numbers."""
    qrels, run = _argv(["qrels.test", "results.test"])
    got = _measures(capsys, qrels, run, "nDCG@10", "P(rel=1)@5", "ndcg_burges@10",
                    "ndcg_cut.10")
    assert [k[0] for k in got] == ["runid", "num_q", "nDCG@10", "P(rel=1)@5",
                                   "ndcg_burges@10", "ndcg_cut.10"]
    assert got[("P(rel=1)@5", "all")] == "0.2667"  # trec_eval's P_5
    assert got[("ndcg_cut.10", "all")] == _measures(
        capsys, "-m", "ndcg_cut.10", qrels, run)[("ndcg_cut_10", "all")]


def test_glued_and_spaced_flags_agree(capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = _argv(["qrels.rel_level", "results.test"])
    glued = _measures(capsys, "-qc", "-l2", "-M50", "-mP.5", qrels, run)
    spaced = _measures(capsys, "-q", "-c", "-l", "2", "-M", "50", "-m", "P.5", qrels, run)
    assert glued == spaced and ("P_5", "301") in glued


def test_depth_and_judged_only(capsys: pytest.CaptureFixture[str]) -> None:
    """-M keeps the first documents in trec_eval's order; -J drops unjudged ones first."""
    qrels, run = _argv(["qrels.test", "results.test"])
    full = _measures(capsys, "-q", "-m", "P.10", "-m", "map", qrels, run)
    cut = _measures(capsys, "-q", "-m", "P.10", "-M", "10", qrels, run)
    assert cut[("P_10", "301")] == full[("P_10", "301")]
    judged = _measures(capsys, "-q", "-J", "-m", "P.10", qrels, run)
    assert float(judged[("P_10", "303")]) >= float(full[("P_10", "303")])


def test_several_runs_one_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    qrels, run, trunc = _argv(["qrels.test", "results.test", "results.trunc"])
    code, out, _ = run_eval(capsys, ["-m", "P.5", "-m", "map", "--format", "json", qrels, run,
                                     trunc])
    rows = json.loads(out)
    assert [(r["run"], r["file"], r["qid"]) for r in rows] == [("STANDARD", run, "all"),
                                                               ("STANDARD", trunc, "all")]
    assert rows[0]["P_5"] == 0.26666666666666666 or abs(rows[0]["P_5"] - 0.2667) < 1e-4
    for fmt, sep in (("tsv", "\t"), ("csv", ",")):
        code, out, _ = run_eval(capsys, ["-q", "-m", "P.5", "--format", fmt, qrels, run,
                                         trunc])
        lines = out.splitlines()
        assert code == 0 and lines[0].split(sep) == ["run", "file", "qid", "P_5"]
        assert len(lines) == 1 + (3 + 1) + (2 + 1)  # header, per query and 'all' per run


def test_gzip_and_parquet_inputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    qrels, run = _argv(["qrels.test", "results.test"])
    want = _measures(capsys, "-q", qrels, run)
    gz_q, gz_r = tmp_path / "qrels.gz", tmp_path / "run.gz"
    for src, dst in ((qrels, gz_q), (run, gz_r)):
        with open(src, "rb") as fh, gzip.open(dst, "wb") as out:
            shutil.copyfileobj(fh, out)
    assert _measures(capsys, "-q", str(gz_q), str(gz_r)) == want
    q = pd.read_csv(qrels, sep=r"\s+", header=None, names=["qid", "iter", "docid", "label"],
                    dtype=str).astype({"label": int})
    r = pd.read_csv(run, sep=r"\s+", header=None,
                    names=["qid", "q0", "docid", "rank", "score", "run_id"],
                    dtype=str).astype({"score": float})
    q.to_parquet(tmp_path / "qrels.parquet")
    r.drop(columns=["q0", "rank"]).to_parquet(tmp_path / "run.parquet")
    assert _measures(capsys, "-q", str(tmp_path / "qrels.parquet"),
                     str(tmp_path / "run.parquet")) == want


@pytest.mark.parametrize(("argv", "words"), [
    (["-m", "nosuch", "qrels.test", "results.test"], ["-m nosuch", "unknown"]),
    (["-m", "P.0", "qrels.test", "results.test"], ["-m P.0", "positive"]),
    (["-l", "x", "qrels.test", "results.test"], ["-l"]),
    (["qrels.test", "nosuch_run.txt"], ["RUN", "nosuch_run.txt"]),
    (["qrels.test", "BAD"], ["BAD"]),
    (["-R", "nosuch", "qrels.test", "results.test"], ["-R"]),
])
def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                      words: list[str]) -> None:
    code, out, err = run_eval(capsys, _argv(argv))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert all(w in err for w in words), err


def test_bad_line_names_file_and_line(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    bad = tmp_path / "qrels.txt"
    bad.write_text("301 0 A 1\n# comment\n301 0 B x\n")
    code, _, err = run_eval(capsys, [str(bad), str(TE / "results.test")])
    assert code == 2 and f"{bad} line 3" in err and "'x'" in err
    short = tmp_path / "run.txt"
    short.write_text("301 Q0 A 1 2.0 r\n301 Q0 B 2\n")
    code, _, err = run_eval(capsys, [str(TE / "qrels.test"), str(short)])
    assert code == 2 and f"{short} line 2" in err and len(err.strip().splitlines()) == 1


def test_help_lists_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for flag in ("-q", "-m", "-c", "-M", "-l", "-J", "-R", "-Z", "-N", "--format"):
        assert f"  {flag}" in text
    assert os.path.basename("harness eval") in text


@pytest.mark.parametrize("flags", [[], ["-J"]], ids=["arrays", "frames"])
def test_a_run_memory_cannot_hold_is_one_line_naming_harness_cluster(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        flags: list[str]) -> None:
    """A MemoryError while evaluating (numpy's, Arrow's) becomes one line and exit 2, on
    the quick path (column arrays) and on the DataFrame path (-J takes it)."""
    import harness.metrics.trec_eval.trec_eval_arrays as arrays
    import harness.metrics.trec_eval.trec_eval_compute as compute

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("Unable to allocate 7.63 MiB")

    monkeypatch.setattr(compute, "evaluate_trec", no_memory)
    monkeypatch.setattr(arrays, "evaluate_arrays", no_memory)
    code, out, err = run_eval(capsys, flags + _argv(["qrels.test", "results.test"]))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "needs more memory" in err and "harness cluster" in err and "results.test" in err


@pytest.mark.parametrize("flags", [[], ["-J"]], ids=["arrays", "frames"])
def test_qrels_memory_cannot_hold_is_one_line(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch,
                                               flags: list[str]) -> None:
    import pyarrow as pa

    import harness.data.eval_inputs as inputs
    import harness.data.trec_arrays as trec_arrays

    def no_memory(*args: object, **kwargs: object) -> None:
        raise pa.ArrowMemoryError("malloc of size 932096 failed")

    monkeypatch.setattr(inputs, "_read_eval_qrels", no_memory)
    monkeypatch.setattr(trec_arrays, "read_columns", no_memory)
    code, out, err = run_eval(capsys, flags + _argv(["qrels.test", "results.test"]))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "QRELS" in err and "qrels.test" in err and "does not fit" in err


def test_under_a_memory_limit_files_are_read_on_one_thread() -> None:
    """Arrow's threaded CSV reader aborts the process on a failed allocation; under a
    limit (ulimit -v here) the reader takes one thread, whose failure raises."""
    code = ("import resource; from harness.data.eval_inputs import memory_limited; "
            "a = memory_limited(); resource.setrlimit(resource.RLIMIT_AS, (2**40, 2**40)); "
            "print(a, memory_limited())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    before, after = res.stdout.split()
    assert after == "True"
