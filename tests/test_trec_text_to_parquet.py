"""A TREC run too large to read as text in memory: ``harness cluster run.txt run.parquet``
converts it in blocks (Arrow's streaming CSV reader), clustered by qid; the readers' out of
memory error says so (issue 26: a 1 GB run peaked at 5.1 GB and failed with a raw
ArrowMemoryError)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.commands import cluster
from harness.commands.base import run_command
from harness.data import eval_inputs, trec
from harness.data.eval_inputs import read_eval_run
from harness.data.trec import read_run
from harness.engines.clustering import cluster_parquet
from harness.errors import InputError


def _text_run(path: Path, seed: int, sep: str = " ") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in rng.permutation(40):  # queries interleaved: the rows of one are not together
        for d in range(int(rng.integers(1, 30))):
            rows.append((f"topic-{q:05d}", f"clueweb-{q:03d}-{d:06d}",
                         float(rng.integers(0, 5)) / 4))
    frame = pd.DataFrame(rows, columns=["qid", "docid", "score"]).sample(frac=1,
                                                                       random_state=seed)
    lines = [sep.join([q, "Q0", d, str(i + 1), repr(s), "bm25-run"])
             for i, (q, d, s) in enumerate(frame.itertuples(index=False))]
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return frame


@pytest.mark.parametrize("name, sep", [("run.txt", " "), ("run.tsv", "\t"),
                                       ("run.txt.gz", " ")])
def test_text_run_converted_in_blocks_clustered(tmp_path, name, sep):
    src = tmp_path / name
    _text_run(src, 3, sep)
    dst = tmp_path / "run.parquet"
    cluster_parquet(src, dst, batch_rows=50)  # many blocks and buckets
    out = pd.read_parquet(dst)
    assert list(out.columns) == ["qid", "docid", "score", "run_id"]
    # the rows of each query together, every row kept with its values
    firsts = out["qid"].ne(out["qid"].shift()).cumsum()
    assert firsts.groupby(out["qid"]).nunique().max() == 1
    expected = read_run(src) if src.suffix != ".gz" else read_eval_run(src)[0]
    key = ["qid", "docid"]
    pd.testing.assert_frame_equal(
        out[["qid", "docid", "score"]].sort_values(key).reset_index(drop=True),
        expected[["qid", "docid", "score"]].sort_values(key).reset_index(drop=True))
    assert (out["run_id"] == "bm25-run").all()
    # harness eval reads the parquet run as it read the text
    back, runid = read_eval_run(dst)
    assert runid == "bm25-run" and len(back) == len(expected)


def test_text_the_stream_cannot_read_is_one_line(tmp_path, capsys):
    src = tmp_path / "run.txt"
    src.write_text("1 Q0 a 1 2.5 r\n1  Q0 b 2 1.5 r\n")  # two spaces: an empty field
    code = run_command(cluster.main, [str(src), str(tmp_path / "out.parquet")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "not a TREC run the streaming reader" in err[0]


def test_out_of_memory_says_how_to_convert(tmp_path, monkeypatch):
    src = tmp_path / "big.run"
    _text_run(src, 1)

    def no_memory(*args, **kwargs):
        raise MemoryError("simulated")

    monkeypatch.setattr(trec, "trec_fields", no_memory)
    with pytest.raises(InputError) as info:
        trec.read_run(src)
    assert f"harness cluster {src} {src.with_suffix('.parquet')}" in str(info.value)
    monkeypatch.setattr(eval_inputs, "_fast_columns", no_memory)
    with pytest.raises(InputError, match="does not fit in memory as text"):
        read_eval_run(src)
