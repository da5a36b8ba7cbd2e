"""Output folders that cannot be written: one line naming the folder and what failed,
exit 2, never a traceback (issue 26: a read-only runs/ raised OSError from inside Hydra, a
full disk a raw traceback); a score cache that cannot be written is a warning."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from harness.app.config import register_configs
from harness.datasets import load_dataset
from harness.errors import OutputError
from harness.paths import PROJECT_ROOT
from harness.rankers import RankerSpec, score


def _harness(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args, "tracking=off"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HYDRA_FULL_ERROR": "0"})


@pytest.mark.parametrize("sweep", [False, True])
def test_output_folder_that_cannot_be_made(tmp_path: Path, sweep: bool) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    folder = blocker / "runs" / "job"  # its nearest existing ancestor is a file
    key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
    args = (["-m", "metric.k=5,10"] if sweep else []) + [f"{key}={folder}",
                                                         f"cache_dir={tmp_path / 'cache'}"]
    proc = _harness(args)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: config: "), proc.stderr
    assert f"{key}: the output folder {folder} cannot be created" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache").exists()  # refused before any work


def test_read_only_system_folder() -> None:
    proc = _harness(["hydra.run.dir=/sys/harness_cannot_write_here"])
    assert proc.returncode == 2 and "cannot be created" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_full_disk_while_writing_results(tmp_path: Path, monkeypatch) -> None:
    from harness.app import write
    from harness.app.study import run_study

    real = write.write_outputs

    def fills_the_disk(plan, dataset, results, out):
        (out / "per_query").mkdir(parents=True, exist_ok=True)
        (out / "per_query" / "first.parquet").write_bytes(b"x")
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "summary.csv"))

    monkeypatch.setattr(write, "write_outputs", fills_the_disk)
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
        cfg = compose("config", overrides=["tracking=off", "ranker=oracle",
                                           f"cache_dir={tmp_path / 'cache'}"])
    out = tmp_path / "job"
    with pytest.raises(OutputError) as info:
        run_study(cfg, out)
    message = str(info.value)
    assert f"writing the results to {out} failed: No space left on device" in message
    assert "summary.csv" in message and "file(s) were written before it" in message
    assert "nothing was sent to MLflow" in message
    assert (out / "INCOMPLETE").is_file()
    assert real is not fills_the_disk


def test_score_cache_that_cannot_be_written_is_a_warning(tmp_path: Path, caplog) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    ds = load_dataset("synthetic", n_queries=5, n_train_queries=5, min_docs=3, max_docs=5,
                      seed=1)
    with caplog.at_level(logging.WARNING, logger="harness"):
        run, _, hit, _ = score(RankerSpec("o", "oracle"), ds, blocker / "cache")
    assert not hit and len(run) == len(ds.test)
    assert any("score cache not written" in r.getMessage() for r in caplog.records)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]
