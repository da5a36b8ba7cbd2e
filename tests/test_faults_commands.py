"""Issue 40's command-line cases: a negative ``--seed`` or ``--max-queries`` given to
``harness compare`` (a numpy traceback; -1 queries silently meant "always the normal
approximation"), and output that cannot be written (``> /dev/full``: a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands.compare import main as compare_main

ROOT = Path(__file__).resolve().parents[1]


def _files(shared_data: Path) -> tuple[str, str]:
    folder = shared_data / "trec_eval_test"
    return str(folder / "qrels.test"), str(folder / "results.test")


@pytest.mark.parametrize("option", ["--seed", "--max-queries"])
def test_compare_refuses_a_negative_count_naming_the_option(
        shared_data: Path, option: str, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = _files(shared_data)
    code = compare_main(["--qrels", qrels, f"a={run}", f"b={run}", "--test", "bootstrap",
                         option, "-1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {option} must be an int >= 0; got -1")


def test_compare_library_refuses_a_negative_seed() -> None:
    import pandas as pd

    from harness.compare.stats import compare_table
    from harness.errors import CompareError

    frame = pd.DataFrame({"nDCG": [0.1, 0.2, 0.3]}, index=pd.Index(["1", "2", "3"], name="qid"))
    with pytest.raises(CompareError, match="seed must be an int >= 0; got -1"):
        compare_table({"a": frame, "b": frame}, seed=-1)


def test_eval_into_a_full_device_is_one_line_exit_2(shared_data: Path) -> None:
    qrels, run = _files(shared_data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "harness", "eval", qrels, run],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=ROOT, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0] == ("error: writing the output failed: [Errno 28] No space left on device; "
                        "what was written is incomplete")
    # a short output fails only at exit, when the buffer is flushed: the same line
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "harness", "eval", "-m", "P.5", qrels,
                               run], stdout=full, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == lines
