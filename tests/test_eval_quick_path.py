"""``harness eval``'s two paths print the same lines: the quick one (column arrays, no
pandas: :mod:`harness.metrics.trec_eval.trec_eval_arrays`) and the DataFrame one
(:func:`harness.metrics.trec_eval.trec_eval_compute.evaluate_trec`), whose output trec_eval 10.0's
own files check (tests/test_trec_eval10_edges.py, tests/test_eval_command.py).

Seeded random files with what trips evaluations: tied scores (two decimals), unjudged and
never-retrieved documents, negative and graded labels, queries only in the run or only in
the qrels, ids of 10-16 characters, a query whose judgments are all negative; each read
both ways (split in Python, and by Arrow's reader as large files are)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import harness.data.trec_arrays as trec_arrays
import harness.metrics.trec_eval.trec_eval_arrays as arrays
from harness.commands.base import run_command
from harness.commands.eval import main

FLAGS = [[], ["-c"], ["-M", "7"], ["-l", "2"], ["-c", "-M", "4", "-l", "2"],
         ["--compat", "9"], ["--compat", "9", "-c", "-M", "5"], ["-N", "300", "-c"]]


def _files(tmp: Path, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(30):
        qid = f"topic-{q:03d}-{rng.integers(10**6):06d}"
        docs = [f"doc{rng.integers(10**9):010d}" for _ in range(25)]
        if q % 10 != 3:  # some queries only in the run
            for d in docs[:12] + [f"unretrieved{q:05d}"]:
                label = 0 if q == 7 else rng.choice([-1, 0, 0, 1, 2, 3])
                qrels.append(f"{qid} 0 {d} {label if q != 8 else -1}")
        if q % 10 != 5:  # some queries only in the qrels
            n = int(rng.integers(1, 25))
            scores = np.round(rng.random(n), 2)
            for rank, (d, s) in enumerate(zip(docs[5:5 + n], scores), start=1):
                run.append(f"{qid} Q0 {d} {rank} {s} run-{seed}")
    order = rng.permutation(len(run))  # a run need not be grouped by query
    qp, rp = tmp / f"qrels{seed}.txt", tmp / f"run{seed}.txt"
    qp.write_text("\n".join(qrels) + "\n")
    rp.write_text("\n".join(run[i] for i in order) + "\n")
    return qp, rp


def _printed(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = run_command(main, argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("flags", FLAGS, ids=" ".join)
def test_the_quick_path_prints_what_the_dataframe_path_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        seed: int, flags: list[str]) -> None:
    qrels, run = _files(tmp_path, seed)
    argv = ["-q", "-m", "all_trec", *flags, str(qrels), str(run)]
    calls = []
    real = arrays.evaluate_arrays
    monkeypatch.setattr(arrays, "evaluate_arrays",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(trec_arrays, "_split_in_python", lambda path: True)
    quick = _printed(capsys, argv)
    assert calls, "the quick path was not taken"
    monkeypatch.setattr(trec_arrays, "_split_in_python", lambda path: False)  # Arrow's reader,
    monkeypatch.setattr(trec_arrays, "BLOCK", 700)  # in blocks of 700 bytes
    arrow = _printed(capsys, argv)
    monkeypatch.setattr(arrays, "quick_path", lambda *a, **k: False)
    frames = _printed(capsys, argv)
    assert quick[0] == 0 and len(calls) == 2
    assert quick == frames
    assert arrow == frames


COLLIDING = {  # keys for the (query, docid) pairs read by Arrow that are not one per pair
    "alike within a query": lambda q, words, lengths: (q.astype(np.uint64) * 1000 + lengths.astype(
        np.uint64)) << np.uint64(40),
    "matching other pairs": lambda q, words, lengths: np.arange(len(q), dtype=np.uint64)
    << np.uint64(40),
}


@pytest.mark.parametrize("keys", COLLIDING)
def test_keys_alike_for_unequal_pairs_send_the_run_to_the_dataframe_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        keys: str) -> None:
    """Files read by Arrow join the run to the qrels on a 64-bit hash of the pair: a
    repeat of a key, or a match of pairs that are not the same, takes the exact path."""
    qrels, run = _files(tmp_path, 6)
    argv = ["-q", "-c", "-m", "all_trec", str(qrels), str(run)]
    monkeypatch.setattr(trec_arrays, "_split_in_python", lambda path: False)
    expected = _printed(capsys, argv)
    quick = []
    real = arrays.evaluate_arrays
    monkeypatch.setattr(arrays, "evaluate_arrays",
                        lambda *a, **k: quick.append(real(*a, **k)) or quick[-1])
    monkeypatch.setattr(arrays, "_hashed", COLLIDING[keys])
    assert _printed(capsys, argv) == expected and expected[0] == 0
    assert quick == [None]  # the quick path declined; the DataFrame path printed


WAYS = {  # a run over STREAM_FROM in bounded memory, one over PARALLEL_FROM in parts, its
    # second half's blocks in a fork; or every block in this process
    "streamed": {"STREAM_FROM": 0, "BLOCK": 1500},
    "parts": {"PARALLEL_FROM": 0, "BLOCK": 1500},
    "one process": {"PARALLEL_FROM": 0, "BLOCK": 1500, "TWO_PROCESSES_UPTO": 0},
}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("flags", [["-q"], ["-q", "-c", "-M", "5"], ["-c", "--compat", "9"],
                                   ["-q", "-l", "2", "-N", "50"]], ids=" ".join)
def test_a_run_read_block_by_block_prints_what_the_whole_run_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        flags: list[str], way: str) -> None:
    """Large runs are evaluated a block of lines at a time, two blocks at once on threads
    (memory follows the blocks): here blocks of 1,500 bytes, so queries straddle blocks. A
    run not grouped by query (the seeded one) is read whole instead, with the same
    output."""
    import harness.commands.eval as command
    import harness.forked as forked
    import harness.metrics.trec_eval.trec_eval_blocks as blocks

    qrels, shuffled = _files(tmp_path, 5)
    lines = shuffled.read_text().splitlines()
    grouped = tmp_path / "grouped.txt"
    grouped.write_text("\n".join(sorted(lines, key=lambda ln: ln.split()[0][::-1])) + "\n")
    whole = {run: _printed(capsys, ["-m", "all_trec", *flags, str(qrels), str(run)])
             for run in (grouped, shuffled)}
    both = _printed(capsys, ["-m", "all_trec", *flags, str(qrels), str(grouped), str(shuffled)])
    calls = []
    real = blocks.evaluate_blocks
    monkeypatch.setattr(blocks, "evaluate_blocks",
                        lambda *a, **k: calls.append(r := real(*a, **k)) or r)
    for name, value in WAYS[way].items():
        monkeypatch.setattr(command, name, value)
    forks, fork = [], forked.Forked
    monkeypatch.setattr(forked, "Forked", lambda work: forks.append(fork(work)) or forks[-1])
    for run in (grouped, shuffled):
        assert _printed(capsys, ["-m", "all_trec", *flags, str(qrels), str(run)]) == whole[run]
    assert calls[0] is not None and calls[1] is None  # grouped: in blocks; shuffled: whole
    assert len(forks) == (0 if way == "one process" else 2)
    # one command, both runs: the qrels' query ids, let go for the blocks, come back whole
    assert _printed(capsys, ["-m", "all_trec", *flags, str(qrels), str(grouped),
                             str(shuffled)]) == both
    assert whole[grouped][0] == 0 and "map" in whole[grouped][1]


def test_a_query_in_both_halves_of_a_run_sends_it_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each half of the run is grouped by query, but its first query comes back at the end:
    the fork's queries and this process's meet, and the run is read whole (same lines)."""
    import harness.commands.eval as command
    import harness.metrics.trec_eval.trec_eval_blocks as blocks

    qrels, run = _files(tmp_path, 7)
    lines = sorted(run.read_text().splitlines(), key=lambda ln: ln.split()[0])
    first = lines[0].split()[0]
    assert first in qrels.read_text()  # judged: the halves' judged queries meet
    run.write_text("\n".join(lines[1:] + lines[:1]) + "\n")
    argv = ["-q", "-m", "all_trec", str(qrels), str(run)]
    whole = _printed(capsys, argv)
    calls = []
    real = blocks.evaluate_blocks
    monkeypatch.setattr(blocks, "evaluate_blocks",
                        lambda *a, **k: calls.append((k["rest"], r := real(*a, **k))) or r)
    monkeypatch.setattr(command, "PARALLEL_FROM", 0)
    assert _printed(capsys, argv) == whole and whole[0] == 0
    assert calls[0][0] is not None and calls[0][1] is None  # in two parts, then whole


def test_a_fork_refused_by_the_os_leaves_both_halves_to_this_process(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.commands.eval as command
    import harness.forked as forked

    qrels, run = _files(tmp_path, 8)
    run.write_text("".join(sorted(run.read_text().splitlines(keepends=True))))
    argv = ["-q", "-m", "all_trec", str(qrels), str(run)]
    whole = _printed(capsys, argv)

    def refused(work: object) -> None:
        raise OSError(12, "Cannot allocate memory")
    monkeypatch.setattr(forked, "Forked", refused)
    monkeypatch.setattr(command, "PARALLEL_FROM", 0)
    assert _printed(capsys, argv) == whole and whole[0] == 0


def test_a_document_twice_takes_the_dataframe_path_which_names_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = _files(tmp_path, 3)
    lines = run.read_text().splitlines()
    run.write_text("\n".join(lines + [lines[0]]) + "\n")
    code, out, err = _printed(capsys, [str(qrels), str(run)])
    assert code == 2 and out == ""
    qid, _, docid = lines[0].split()[:3]
    assert "more than once" in err and docid in err and qid in err


SETUPS = {  # how the files are read: split in Python, by Arrow's reader, in blocks
    "split": "",
    "arrow": "import harness.data.trec_arrays as t; t.SMALL_FILE = 0\n",
    "blocks": ("import harness.data.trec_arrays as t, harness.commands.eval as e\n"
               "t.SMALL_FILE = 0; e.STREAM_FROM = 0; e.BLOCK = 1500\n"),
}


@pytest.mark.parametrize("how", SETUPS)
def test_harness_eval_on_plain_files_imports_no_pandas(tmp_path: Path, how: str) -> None:
    """The quick path's point: the start of a process (pandas' import alone is several
    times numpy's). Read by Arrow, the values go to numpy through their buffers: pyarrow's
    own conversions would import pandas."""
    qrels, run = _files(tmp_path, 4)
    sorted_run = tmp_path / "sorted.txt"  # grouped by query, so that blocks are taken
    sorted_run.write_text("".join(sorted(run.read_text().splitlines(keepends=True))))
    code = (SETUPS[how] + "import sys, runpy; sys.argv = ['harness', 'eval', '-m', "
            f"'all_trec', '-q', {str(qrels)!r}, {str(sorted_run)!r}]\n"
            "try:\n    runpy.run_module('harness', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print('pandas' in sys.modules, 'pyarrow' in sys.modules, file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert any(line.split()[:2] == ["map", "all"] for line in res.stdout.splitlines())
    assert res.stderr.split()[-2:] == ["False", str(how != "split")]
    whole = subprocess.run([sys.executable, "-m", "harness", "eval", "-m", "all_trec", "-q",
                            str(qrels), str(run)], capture_output=True, text=True,
                           timeout=120)
    assert res.stdout == whole.stdout  # the same lines, whichever way the files were read


@pytest.mark.parametrize("run", ["org_manual_bm25", "org_manual_ance"])
def test_cast_read_by_arrow_prints_trec_eval_10s_lines(
        shared_data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        run: str) -> None:
    """CAsT 2021's docids (``MARCO_...``, ``KILT_...``, ``WAPO_...``) differ in length: the
    join on their padded bytes, read by Arrow, against trec_eval 10.0's ``-q`` output."""
    cast = shared_data / "trec_cast_2021"
    monkeypatch.setattr(trec_arrays, "SMALL_FILE", 0)
    quick = []
    real = arrays.evaluate_arrays
    monkeypatch.setattr(arrays, "evaluate_arrays",
                        lambda *a, **k: quick.append(real(*a, **k)) or quick[-1])
    code, out, _ = _printed(capsys, ["-q", "-m", "all_trec",
                                     str(cast / "trec-cast-qrels-docs.2021.qrel"),
                                     str(cast / f"{run}.run")])
    assert code == 0 and out == (cast / f"expected.{run}.all_trec.q.txt").read_text()
    assert len(quick) == 1 and quick[0] is not None  # the quick path printed them
