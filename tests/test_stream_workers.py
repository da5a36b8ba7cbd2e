"""The score columns of one stream pass evaluated side by side in worker processes give the
tables one process gives, value for value, and errors that name the file row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import parse_metric
from harness.engines import Engine
from harness.engines.parts import PassClock
from harness.engines.stream import evaluate_parquet_scores
from harness.errors import InputError

METRICS = [parse_metric(m) for m in ("ndcg@10", "AP", "P@5(ties=input)", "err@10",
                                     "bpref", "AP@10(unjudged=condensed)")]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory):
    rng = np.random.default_rng(5)
    n_q, per = 60, 30
    n = n_q * per
    frame = pd.DataFrame({"qid": np.repeat([f"query-{i:05d}" for i in range(n_q)], per),
                          "docid": [f"document-{i:07d}" for i in range(n)],
                          "bm25": rng.integers(0, 6, n).astype(float),
                          "dense": rng.random(n).round(1),
                          "weak": rng.integers(0, 2, n).astype(float)})
    judged = frame.sample(frac=0.6, random_state=1)
    qrels = pd.DataFrame({"qid": judged["qid"], "docid": judged["docid"],
                          "label": rng.integers(0, 3, len(judged))})
    extra = pd.DataFrame({"qid": ["query-99999"] * 2, "docid": ["a", "b"], "label": [1, 2]})
    qrels = pd.concat([qrels, extra], ignore_index=True)  # a judged query no run retrieved
    path = tmp_path_factory.mktemp("workers") / "run.parquet"
    frame.to_parquet(path, index=False)
    return path, qrels


@pytest.mark.parametrize("missing", ["exclude", "zero"])
def test_workers_give_the_tables_of_one_process(scored, missing: str) -> None:
    path, qrels = scored
    scores = ["bm25", "dense", "weak"]
    alone = evaluate_parquet_scores(path, qrels, METRICS, scores, batch_rows=200,
                                    missing=missing)
    clock = PassClock()
    side = evaluate_parquet_scores(path, qrels, METRICS, scores, batch_rows=200,
                                   missing=missing, workers=3, clock=clock)
    assert clock.workers == 2 and set(clock.scores) == set(scores)
    for s in scores:
        pd.testing.assert_frame_equal(side[s], alone[s], check_exact=True)
        assert side[s].attrs == alone[s].attrs
    assert not alone["bm25"].equals(alone["dense"])  # the columns were told apart


def test_an_error_in_a_worker_names_the_file_row(scored, tmp_path) -> None:
    path, qrels = scored
    frame = pd.read_parquet(path)
    frame.loc[777, "dense"] = np.nan
    bad = tmp_path / "bad.parquet"
    frame.to_parquet(bad, index=False)
    messages = []
    for workers in (1, 2):
        with pytest.raises(InputError) as info:
            evaluate_parquet_scores(bad, qrels, METRICS, ["bm25", "dense"], batch_rows=200,
                                    workers=workers)
        assert info.value.row == 777
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_the_engine_chooses_workers_by_file_size(scored, monkeypatch) -> None:
    import harness.engines.workers as workers

    path, _ = scored
    assert Engine(kind="stream").column_workers(path, 2) == 1  # 1,800 rows: not worth one
    assert Engine(kind="stream", n_workers=4).column_workers(path, 3) == 3  # one per column
    assert Engine(kind="stream", n_workers=4).column_workers(path, 1) == 1
    monkeypatch.setattr(workers, "WORKER_MIN_ROWS", 1_000)
    monkeypatch.setattr(workers, "cores", lambda: 2)
    assert Engine(kind="stream").column_workers(path, 3) == 2
