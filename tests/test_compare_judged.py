"""Issue 24 in harness compare's report: each ranker version's mean judged@10, from the metric
``judged_at_10`` its ranker runs logged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from harness.compare import build_comparison, load_sweep, sensitivity
from harness.compare.report import build_report, judged_shares
from tests.test_compare import SmallSweep, small_sweep  # noqa: F401 - fixture
from tests.test_report import fake_sweep


def _per_query() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(3)
    qids = [f"q{i}" for i in range(10)]
    return {name: pd.DataFrame({"nDCG@10": rng.uniform(0.2, 0.9, 10)}, index=qids)
            for name in ("x", "y")}


def test_the_versions_table_shows_the_logged_judged_share(tmp_path: Path) -> None:
    per_query = _per_query()
    sweep = fake_sweep(per_query)
    runs = sweep.provenance["runs"]
    # version x ran twice (two jobs) and logged 0.8 and 0.9; y logged nothing
    runs[:] = [runs[0] | {"judged_at_10": 0.8}, runs[0] | {"run_id": "run9",
                                                           "judged_at_10": 0.9}, runs[1]]
    assert judged_shares(sweep) == {"x": pytest.approx(0.85)}
    comparison = build_comparison(per_query, resamples=100)
    paths = build_report(sweep, comparison, sensitivity(per_query, comparison), tmp_path / "a")
    text = paths.markdown.read_text()
    header = next(line for line in text.splitlines() if "cache key" in line)
    assert header.rstrip(" |").endswith("judged@10")
    row = next(line for line in text.splitlines() if line.startswith("| a | x |"))
    assert row.rstrip(" |").endswith("0.850")
    assert "judged@10" in paths.html.read_text()
    # no run logged it (an older sweep): no column
    plain = fake_sweep(per_query)
    paths = build_report(plain, comparison, sensitivity(per_query, comparison), tmp_path / "b")
    assert "judged@10" not in paths.markdown.read_text()


def test_ranker_runs_log_judged_at_10(small_sweep: SmallSweep) -> None:  # noqa: F811 - fixture
    # the synthetic dataset labels every document it ranks, so every top 10 is judged
    sweep = load_sweep(small_sweep.uri, small_sweep.parent_run_id)
    client = MlflowClient(tracking_uri=small_sweep.uri)
    for run in sweep.provenance["runs"]:
        assert client.get_run(run["run_id"]).data.metrics["judged_at_10"] == 1.0
        assert run["judged_at_10"] == 1.0
    assert judged_shares(sweep) == dict.fromkeys(sweep.versions, 1.0)
