"""Configuration values and input files that ended in a traceback (issue 40) are one line
naming the key, file or row, exit 2: each case runs the app as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.paths import PROJECT_ROOT, shared_data_dir

LONG = "a" * 300


def _harness(args: list[str], tmp_path: Path, run_dir: bool = True
             ) -> subprocess.CompletedProcess[str]:
    where = [f"hydra.run.dir={tmp_path}/out"] if run_dir else []
    return subprocess.run(
        [sys.executable, "-m", "harness", *args, "tracking=off", "tracking.figures=off",
         f"cache_dir={tmp_path}/cache", *where],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HYDRA_FULL_ERROR": "0"})


def _one_line(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    both = proc.stdout + proc.stderr  # a job's log is on stdout, Hydra's refusals on stderr
    assert "Traceback" not in both and "HYDRA_FULL_ERROR" not in both, both[-3000:]
    lines = [line for line in both.splitlines() if "error" in line.lower()]
    assert len(lines) == 1, both[-3000:]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_a_repeated_qrels_line(tmp_path):
    source = shared_data_dir() / "trec_cast_2021" / "trec-cast-qrels-docs.2021.qrel"
    lines = source.read_text().splitlines(keepends=True)
    qrels = tmp_path / "dup.qrel"
    qrels.write_text("".join(lines[:5] + [lines[2]] + lines[5:]))  # line 3 again as line 6
    qid, _, docid, _ = lines[2].split()
    line = _one_line(_harness(["dataset=cast2021_bm25", f"dataset.qrels_path={qrels}"],
                              tmp_path), "dup.qrel", "lines 3 and 6", repr(docid), repr(qid))
    assert "dataset.qrels_path" in line


def test_a_label_that_is_not_a_number(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("qid,docid,f1,label\nq1,d1,1.0,1\nq1,d2,0.5,high\nq2,d1,0.3,0\n")
    _one_line(_harness(["dataset=table", f"dataset.path={table}", "ranker=oracle"], tmp_path),
              "t.csv", "'high'", "column 'label'", "row 1", "qid 'q1'")


@pytest.mark.parametrize(("args", "words"), [
    (["+dataset._target_=os.getcwd"], ["dataset._target_", "n_queries"]),
    (["+dataset.foo=1"], ["dataset.foo", "n_queries"]),
    (["ranker=hgb", "+ranker.hgb.params.foo=1"], ["ranker.hgb.params.foo", "max_iter"]),
    (["ranker=hgb", "ranker.hgb.params.max_iter=-1"], ["ranker.hgb.params.max_iter", "-1"]),
    (["study=${oc.env:NOPE_UNSET}"], ["study", "NOPE_UNSET"]),
    (["study=${evil:x}"], ["study", "evil"]),
    (["~dataset"], ["dataset=", "synthetic"]),
    (["dataset.n_queries=1000000000"], ["dataset.n_queries", "GiB"]),
    ([f"+ranker.{LONG}={{kind:random}}"], [f"ranker.{LONG}", "bytes"]),
])
def test_a_value_that_cannot_be(args, words, tmp_path):
    _one_line(_harness(args, tmp_path), *words)
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()


def test_a_study_name_too_long_for_a_folder(tmp_path):
    # the default hydra.run.dir, where the study names a folder
    _one_line(_harness([f"study={LONG}"], tmp_path, run_dir=False), "study", "bytes")
    hydra_runs = PROJECT_ROOT / "runs" / "hydra"
    assert not hydra_runs.is_dir() or LONG not in os.listdir(hydra_runs)
