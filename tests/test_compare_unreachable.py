"""``harness compare`` against a tracking server that is down answers at once (issue 26):
MLflow's own HTTP retries (seven, with back-off: 252 s to the first answer) are bounded as a
study's log stage bounds them (counted here, not timed)."""

from __future__ import annotations

import contextlib
import io

import pytest

from harness.commands import compare as compare_cli
from harness.commands.base import run_command

DEAD = "http://127.0.0.1:9"  # nothing listens on the discard port


@pytest.mark.parametrize("ids", [["a" * 32], ["a" * 32, "b" * 32]], ids=["one", "two"])
def test_compare_against_a_down_server_exits_3_after_few_attempts(
        monkeypatch: pytest.MonkeyPatch, ids: list[str]) -> None:
    """Counted, not timed: the connections tried and the back-off asked for (MLflow's
    defaults: 8 connections and 252 s of back-off before the first answer)."""
    import urllib3.util.connection
    import urllib3.util.retry

    for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"):
        monkeypatch.setenv(name, "0")  # recorded, so the test leaves the environment as it was
        monkeypatch.delenv(name)  # MLflow's defaults, as a user has them
    attempts: list[object] = []
    slept: list[float] = []

    def refuse(address: object, *args: object, **kwargs: object) -> None:
        attempts.append(address)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(urllib3.util.connection, "create_connection", refuse)
    monkeypatch.setattr(urllib3.util.retry.time, "sleep", slept.append)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = run_command(compare_cli.main, [*ids, "--tracking-uri", DEAD])
    assert code == 3, err.getvalue()
    assert 1 <= len(attempts) <= 4, attempts
    assert sum(slept) <= 10, slept
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and DEAD in lines[0] and "Traceback" not in err.getvalue()
