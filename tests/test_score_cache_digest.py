"""The score cache is trusted only when its bytes match the digest written beside it: an
altered, truncated or digest-less cache file is scored again, with a warning naming it
(issue 26: altered scores were used as they were, a truncated file raised ArrowInvalid)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.datasets import load_dataset
from harness.rankers import RankerSpec, score

SPEC = RankerSpec("r", "random", {"seed": 4})


@pytest.fixture(scope="module")
def synthetic():
    return load_dataset("synthetic", n_queries=20, n_train_queries=20, min_docs=5,
                        max_docs=10, seed=3)


def _alter(path: Path) -> None:
    run = pd.read_parquet(path)
    run.loc[0, "score"] = 1e9  # a score someone changed by hand
    run.to_parquet(path, index=False)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _drop_digest(path: Path) -> None:
    path.with_suffix(".sha256").unlink()


@pytest.mark.parametrize("damage, said", [(_alter, "does not match its digest"),
                                          (_truncate, "does not match its digest"),
                                          (_drop_digest, "has no digest")])
def test_damaged_cache_is_scored_again(synthetic, tmp_path, caplog, damage, said):
    fresh, key, hit, _ = score(SPEC, synthetic, tmp_path)
    assert not hit
    path = tmp_path / f"{key}.parquet"
    damage(path)
    with caplog.at_level(logging.WARNING, logger="harness"):
        again, _, hit, _ = score(SPEC, synthetic, tmp_path)
    assert not hit
    assert np.array_equal(again["score"].to_numpy(), fresh["score"].to_numpy())
    assert any(said in r.getMessage() and path.name in r.getMessage() for r in caplog.records)
    third, _, hit, _ = score(SPEC, synthetic, tmp_path)  # the rebuilt cache is trusted again
    assert hit and np.array_equal(third["score"].to_numpy(), fresh["score"].to_numpy())
