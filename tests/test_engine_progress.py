"""Progress of the stream and Dask engines: a bar on a terminal only, results unchanged."""

from __future__ import annotations

import functools
import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tqdm.auto

import harness
from harness.engines.dask import dask_client, evaluate_dask
from harness.engines.stream import evaluate_memory
from harness.metrics.vocabulary.definition import parse_metric

METRICS = ["ndcg@10", "ap", "rr", "P@5", "err@10(ties=input)"]


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(n_queries: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_queries)
    order = rng.permutation(n_queries)
    qid = np.repeat([f"q{i:04d}" for i in order], sizes[order])
    n = len(qid)
    return pd.DataFrame({"qid": qid, "docid": [f"d{j}" for j in range(n)],
                         "score": rng.integers(0, 6, n) / 2.0,
                         "label": rng.integers(0, 4, n)})


def _evaluate(monkeypatch: pytest.MonkeyPatch, stderr: io.StringIO, fn: Any, *args: Any,
              **kwargs: Any) -> tuple[pd.DataFrame, str]:
    with monkeypatch.context() as m:
        m.setattr(sys, "stderr", stderr)
        m.setattr(tqdm.auto, "tqdm",  # every update drawn, however fast the test runs
                  functools.partial(tqdm.auto.tqdm, mininterval=0, miniters=1))
        out = fn(*args, **kwargs)
    return out, stderr.getvalue()


def _reached(shown: str, total: int, unit: str) -> bool:
    """The bar's text shows ``total/total`` (tqdm's scaled counts, e.g. ``2.31k/2.31k``)."""
    n = tqdm.auto.tqdm.format_sizeof(total) if unit == "row" else str(total)
    return f"{n}/{n} [" in shown


def test_stream_engine_shows_rows_on_a_terminal_only(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capfd: pytest.CaptureFixture[str]) -> None:
    run = _run()
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False)
    quiet, silent = _evaluate(monkeypatch, io.StringIO(), harness.evaluate_parquet, path,
                              metrics=METRICS, batch_rows=97)
    shown_run, shown = _evaluate(monkeypatch, _FakeTerminal(), harness.evaluate_parquet,
                                 path, metrics=METRICS, batch_rows=97)
    assert silent == ""  # a pipe or a log: no bar at all
    assert "evaluate run.parquet:" in shown and "row" in shown and "\r" in shown, shown
    assert shown.count("\r") > 3  # redrawn as the batches (about 16) come
    assert _reached(shown, len(run), "row"), shown  # the total from the file's metadata
    pd.testing.assert_frame_equal(shown_run, quiet, check_exact=True)
    assert shown_run.attrs == quiet.attrs
    pd.testing.assert_frame_equal(quiet, harness.evaluate(run, metrics=METRICS),
                                  check_exact=True, check_index_type=False)
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # nothing reached the real stderr


def test_stream_engine_on_a_run_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(seed=1)
    metrics = [parse_metric(m) for m in METRICS]
    quiet, silent = _evaluate(monkeypatch, io.StringIO(), evaluate_memory, run, None,
                              metrics, batch_rows=150)
    shown_run, shown = _evaluate(monkeypatch, _FakeTerminal(), evaluate_memory, run, None,
                                 metrics, batch_rows=150)
    assert silent == ""
    assert "evaluate run:" in shown and _reached(shown, len(run), "row"), shown
    pd.testing.assert_frame_equal(shown_run, quiet, check_exact=True)


def test_stream_engine_errors_are_unchanged_under_a_bar(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(seed=2)
    run.loc[len(run) - 10, "score"] = np.nan
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False)
    rows = []
    for stderr in (io.StringIO(), _FakeTerminal()):
        with monkeypatch.context() as m, pytest.raises(harness.InputError) as err:
            m.setattr(sys, "stderr", stderr)
            harness.evaluate_parquet(path, metrics=METRICS, batch_rows=50)
        rows.append((err.value.row, str(err.value)))
    assert rows[0] == rows[1] and rows[0][0] == len(run) - 10


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask_client(n_workers=2) as c:
        yield c


def test_dask_engine_shows_partitions_on_a_terminal_only(tmp_path: Path, client: Any,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    run = _run(seed=3)
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False, row_group_size=64)
    expected = harness.evaluate(run, metrics=METRICS)
    for source in (path, run):
        quiet, silent = _evaluate(monkeypatch, io.StringIO(), evaluate_dask, source,
                                  metrics=METRICS, client=client, partition_rows=200)
        shown_run, shown = _evaluate(monkeypatch, _FakeTerminal(), evaluate_dask, source,
                                     metrics=METRICS, client=client, partition_rows=200)
        assert silent == ""
        name = "run.parquet" if source is path else "run"
        assert f"evaluate {name}:" in shown and "part" in shown, shown
        done = re.findall(r"\| (\d+)/(\d+) \[", shown)  # every partition completed
        assert done and done[-1][0] == done[-1][1] and int(done[-1][1]) > 3, shown
        pd.testing.assert_frame_equal(shown_run, quiet, check_exact=True)
        assert list(shown_run.index) == list(quiet.index)
        pd.testing.assert_frame_equal(quiet, expected, check_exact=True,
                                      check_index_type=False)


def test_dask_engine_errors_are_unchanged_under_a_bar(tmp_path: Path, client: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(seed=4)
    run.loc[len(run) - 40, "score"] = np.nan
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False, row_group_size=64)
    for source in (path, run):
        rows = []
        for stderr in (io.StringIO(), _FakeTerminal()):
            with monkeypatch.context() as m, pytest.raises(harness.InputError) as err:
                m.setattr(sys, "stderr", stderr)
                evaluate_dask(source, client=client, partition_rows=50)
            rows.append((err.value.row, err.value.qid, str(err.value)))
        assert rows[0] == rows[1] and rows[0][0] == len(run) - 40
