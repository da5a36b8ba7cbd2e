"""``harness compare`` against a tracking server that is down answers in seconds (issue 26):
MLflow's own HTTP retries (seven, with back-off: 252 s to the first answer) are bounded as a
study's log stage bounds them."""

from __future__ import annotations

import contextlib
import io
import time

import pytest

from harness.commands import compare as compare_cli
from harness.commands.base import run_command

DEAD = "http://127.0.0.1:9"  # nothing listens on the discard port


@pytest.mark.parametrize("ids", [["a" * 32], ["a" * 32, "b" * 32]], ids=["one", "two"])
def test_compare_against_a_down_server_exits_3_within_10_s(
        monkeypatch: pytest.MonkeyPatch, ids: list[str]) -> None:
    for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"):
        monkeypatch.setenv(name, "0")  # recorded, so the test leaves the environment as it was
        monkeypatch.delenv(name)  # MLflow's defaults, as a user has them
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = run_command(compare_cli.main, [*ids, "--tracking-uri", DEAD])
    elapsed = time.perf_counter() - start
    assert code == 3, err.getvalue()
    assert elapsed < 10, f"answered after {elapsed:.1f} s"
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and DEAD in lines[0] and "Traceback" not in err.getvalue()
