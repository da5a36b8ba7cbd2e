"""harness.forked: a function's value, or its exception, back from a forked child; and where
``harness eval`` cuts a run for it (:func:`harness.data.trec_arrays.query_start`)."""

from __future__ import annotations

import gzip
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from harness.data.trec_arrays import query_start, run_blocks
from harness.forked import Forked


def test_the_childs_value_comes_back_and_the_parent_is_untouched() -> None:
    seen = []

    def work() -> dict[str, np.ndarray]:
        seen.append(os.getpid())  # in the child's memory: the parent's list stays empty
        return {"pid": np.array([os.getpid()]), "x": np.arange(200_000) * 0.5}

    out = Forked(work).result()
    assert out["pid"][0] != os.getpid() and seen == []
    assert np.array_equal(out["x"], np.arange(200_000) * 0.5)  # 1.6 MB through the pipe


def test_the_childs_exception_is_raised_in_the_parent() -> None:
    def work() -> None:
        raise MemoryError("in the child")

    with pytest.raises(MemoryError, match="in the child"):
        Forked(work).result()


def test_an_exception_that_does_not_pickle_comes_back_as_its_text() -> None:
    class Local(Exception):  # a class defined in a function does not pickle
        pass

    def work() -> None:
        raise Local("odd")

    with pytest.raises(RuntimeError, match="Local: odd"):
        Forked(work).result()


def test_a_child_that_dies_without_answering_is_named() -> None:
    def work() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(ChildProcessError, match="killed by signal 9"):
        Forked(work).result()


def test_cancel_kills_and_reaps_the_child() -> None:
    child = Forked(lambda: time.sleep(60))
    child.cancel()
    with pytest.raises(ChildProcessError):  # reaped: no such child any more
        os.waitpid(child.pid, os.WNOHANG)


def _run(path: Path, queries: list[tuple[str, int]], blank: bool = False) -> Path:
    lines = [f"{q} Q0 d{i} {i + 1} {1.0 / (i + 1):.4f} r\n" for q, n in queries
             for i in range(n)]
    if blank:
        lines.insert(len(lines) // 2, "\n")
    path.write_text("".join(lines))
    return path


def test_query_start_cuts_between_two_queries(tmp_path: Path) -> None:
    run = _run(tmp_path / "run.txt", [("q1", 30), ("q2", 30), ("q3", 30)], blank=True)
    data = run.read_bytes()
    for near in range(1, len(data)):
        cut = query_start(run, near)
        line = near if data[near - 1:near] == b"\n" else data.index(b"\n", near) + 1
        if cut is None:  # the first line from ``near`` on is the last query's
            assert line >= data.index(b"q3 ")
            continue
        assert cut >= near and data[cut - 1:cut] == b"\n"
        before = [ln.split()[0] for ln in data[:cut].splitlines() if ln.strip()]
        after = [ln.split()[0] for ln in data[cut:].splitlines() if ln.strip()]
        assert before[-1] != after[0] and not set(before) & set(after)
        assert cut == min(data.index(q) for q in (b"q2 ", b"q3 ") if data.index(q) > line)


def test_query_start_gives_none_for_one_query_or_a_compressed_file(tmp_path: Path) -> None:
    one = _run(tmp_path / "one.txt", [("q1", 50)])
    assert query_start(one, one.stat().st_size // 2) is None
    packed = tmp_path / "run.txt.gz"
    packed.write_bytes(gzip.compress(_run(tmp_path / "r.txt", [("a", 9), ("b", 9)]).read_bytes()))
    assert query_start(packed, 10) is None
    many = _run(tmp_path / "many.txt", [("q1", 5000), ("q2", 5)])
    assert query_start(many, 10, limit=1000) is None  # no query starts within the limit
    assert query_start(many, 10) == many.read_bytes().index(b"q2 ")


def test_a_runs_two_parts_read_as_blocks_are_its_lines(tmp_path: Path) -> None:
    run = _run(tmp_path / "run.txt", [(f"query-{i:03d}", 7 + i % 5) for i in range(120)])
    cut = query_start(run, run.stat().st_size // 2)
    assert cut is not None
    first = list(run_blocks(run, 300, end=cut))
    second = list(run_blocks(run, 300, start=cut))
    ids = [q for part in first + second for q in part.text[0].to_pylist()]
    assert ids == [ln.split()[0] for ln in run.read_text().splitlines()]
    assert first[-1].runid == second[-1].runid == "r"
