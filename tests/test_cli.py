"""Every command's exit code and one-line error: 0 ok, 2 bad input, 3 store unreachable
(harness.commands.base); 1 (differences) is tested with reproduce in test_reproduce."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from harness.commands import cluster, compare as compare_cli, reproduce, scored_run, sync
from harness.commands.base import run_command
from harness.errors import InputError, TrackingUnavailable

DEAD = "http://127.0.0.1:9"  # nothing listens on the discard port


@pytest.fixture(autouse=True)
def _no_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")


def _run(main: Callable[[list[str] | None], int], args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run_command(main, args)
        except SystemExit as exc:  # argparse rejects the arguments
            code = int(exc.code)
    return code, out.getvalue(), err.getvalue()


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error: " in lines[0] and "Traceback" not in err, err
    return lines[0]


def test_run_command_maps_errors_to_one_line_and_a_code() -> None:
    def raises(exc: Exception) -> Callable[[list[str] | None], int]:
        def main(argv: list[str] | None) -> int:
            raise exc
        return main

    assert _run(lambda argv: 1, [])[0] == 1
    code, _, err = _run(raises(InputError("bad score\nmore", column="score")), [])
    assert code == 2 and _one_error_line(err) == "error: bad score"
    code, _, err = _run(raises(TrackingUnavailable("store down")), [])
    assert (code, _one_error_line(err)) == (3, "error: store down")
    with pytest.raises(RuntimeError):  # a bug is not bad input: it keeps its traceback
        run_command(raises(RuntimeError("bug")), [])


@pytest.mark.parametrize("main", [compare_cli.main, reproduce.main], ids=["compare", "reproduce"])
def test_store_commands_unreachable_exit_3(main: Callable[[list[str] | None], int]) -> None:
    code, _, err = _run(main, ["a" * 32, "--tracking-uri", DEAD])
    assert code == 3
    assert DEAD in _one_error_line(err)


def test_store_commands_bad_input_exit_2(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for main, args in ((compare_cli.main, ["f" * 32, "--tracking-uri", uri, "--no-log"]),
                       (compare_cli.main, ["--tracking-uri", uri]),  # no run named
                       (reproduce.main, ["f" * 32, "--tracking-uri", uri]),
                       (sync.main, ["--timeout", "soon"])):
        code, _, err = _run(main, args)
        assert code == 2, (main.__module__, args, err)
        assert "error: " in err and "Traceback" not in err


def test_sync_ok_with_nothing_pending(tmp_path: Path) -> None:
    assert _run(sync.main, ["--pending-dir", str(tmp_path), "--tracking-uri", DEAD])[0] == 0


def test_file_commands_ok_and_bad_input(tmp_path: Path) -> None:
    src, dst = tmp_path / "run.parquet", tmp_path / "clustered.parquet"
    code, out, _ = _run(scored_run.main, [str(src), "--queries", "5", "--seed", "1"])
    assert code == 0 and "5 queries" in out
    assert _run(cluster.main, [str(src), str(dst)])[0] == 0
    pd.testing.assert_frame_equal(pd.read_parquet(dst).sort_values(["qid", "docid"])
                                  .reset_index(drop=True),
                                  pd.read_parquet(src).sort_values(["qid", "docid"])
                                  .reset_index(drop=True), check_dtype=False)
    code, _, err = _run(cluster.main, [str(tmp_path / "missing.parquet"), str(dst)])
    assert code == 2 and "missing.parquet" in _one_error_line(err)
    code, _, err = _run(scored_run.main, [str(src), "--queries", "0"])
    assert code == 2 and "--queries" in err



def test_cluster_and_explain_faults_are_one_line(tmp_path: Path) -> None:
    """A truncated parquet file, --batch-rows 0, and an output folder that does not exist:
    one line naming the file, the option or the folder, exit 2 (issue 26)."""
    from harness.commands import explain

    good = tmp_path / "run.parquet"
    pd.DataFrame({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [1.0, 0.5]}).to_parquet(good)
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(good.read_bytes()[:200])
    code, _, err = _run(cluster.main, [str(truncated), str(tmp_path / "out.parquet")])
    assert code == 2 and "truncated.parquet is not a readable parquet file" in _one_error_line(err)
    code, _, err = _run(cluster.main, [str(good), str(tmp_path / "out.parquet"),
                                       "--batch-rows", "0"])
    assert code == 2 and "batch_rows must be an integer >= 1" in _one_error_line(err)
    assert not (tmp_path / "out.parquet").exists()
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 a 1 1.0 r\nq1 Q0 b 2 0.5 r\n")
    qrels.write_text("q1 0 a 1\n")
    missing = tmp_path / "no_such_folder" / "table.csv"
    code, out, err = _run(explain.main, ["--run", str(run), "--qrels", str(qrels),
                                         "--csv", str(missing)])
    assert code == 2 and "the folder" in _one_error_line(err) and "does not exist" in err
    assert out == ""  # refused before any work
