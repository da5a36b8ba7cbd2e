"""Issue 22: what the console tells. The closing table of a study (golden text at a fixed
width), the warnings about constant scores and a feature other than the ranker's name, the
hints for a misspelt override, no folder left by a job that failed validation, and
``harness cluster`` on a parquet file pandas wrote with its index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def test_cluster_keeps_the_index_pandas_wrote(tmp_path: Path) -> None:
    src, dst = tmp_path / "run.parquet", tmp_path / "clustered.parquet"
    frame = pd.DataFrame({"qid": ["b", "a", "b", "a", "c"], "docid": list("12345"),
                          "score": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=[10, 11, 12, 13, 14])
    frame.to_parquet(src)  # index=None: a non-default index is stored as __index_level_0__
    done = subprocess.run([sys.executable, "-m", "harness", "cluster", str(src), str(dst),
                           "--batch-rows", "2"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    back = pd.read_parquet(dst)
    # each query's rows contiguous, in their original order, with the index pandas wrote
    qids = back["qid"].tolist()
    assert sum(a != b for a, b in zip(qids, qids[1:])) + 1 == len(set(qids))
    assert back.sort_index().equals(frame)
    for _, group in back.groupby("qid"):
        assert group.index.is_monotonic_increasing
