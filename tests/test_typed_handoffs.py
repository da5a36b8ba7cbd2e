"""Values handed from one module to another travel typed, not on a DataFrame's ``attrs``
(issue 38): the summaries' interval methods (:class:`harness.reporting.summary.StudySummary`)
and a ranker's ``trainer.*`` / ``fusion.*`` tags (:class:`harness.rankers.Scored`).
``harness.evaluate``'s own ``attrs`` (``missing_qids``, ``unjudged_qids``, ``empty_qids``)
are its documented output and stay there."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from harness.app.config import register_configs
from harness.paths import PROJECT_ROOT

#: keys once read back from ``attrs`` by another module
MOVED = ("ci_method", "trainer")


def test_no_module_reads_a_moved_key_from_attrs() -> None:
    """Neither read nor written: ``attrs["ci_method"]``, ``attrs.get("trainer")``,
    ``attrs.update(trainer=...)`` and the like."""
    keys = "|".join(MOVED)
    pattern = re.compile(rf"\.attrs\b.*([\"']({keys})[\"']|\b({keys})\s*=)")
    found = [f"{path.relative_to(PROJECT_ROOT)}:{n}: {line.strip()}"
             for path in sorted((PROJECT_ROOT / "harness").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line)]
    assert found == []


def _study(tmp_path: Path, overrides: list[str]) -> Any:
    from harness.app.study import run_study

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
        cfg = compose("config", overrides=["tracking=off", "tracking.figures=off",
                                           "check.sklearn=off", f"cache_dir={tmp_path / 'c'}",
                                           *overrides])
    return run_study(cfg, tmp_path / "job")


@pytest.mark.parametrize("limit", ["1", "null"])
def test_the_normal_interval_is_logged_per_ranker(tmp_path: Path, caplog: Any,
                                                  limit: str) -> None:
    """Above ``tracking.bootstrap_max_queries`` queries a column's interval is the normal
    one, and the job's log says how many variants of each ranker took it."""
    with caplog.at_level(logging.INFO, logger="harness"):
        result = _study(tmp_path, ["ranker=oracle", f"tracking.bootstrap_max_queries={limit}"])
    lines = [r.getMessage() for r in caplog.records if "normal approximation" in r.getMessage()]
    if limit == "null":
        assert lines == []
        return
    table = result.rankers["oracle"].per_query
    # every metric column holding more than one query's value (worked out from the table)
    n = sum(int(table[m.display_name].notna().sum()) > 1 for m in result.metrics)
    assert n > 0
    assert lines == [f"ranker oracle: 95% CI of {n} variant(s) by the normal approximation "
                     "(more than tracking.bootstrap_max_queries=1 queries)"]


def test_a_rankers_tags_reach_its_mlflow_run_from_the_cache_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fitted model's ``trainer.*`` tags and a tuned fusion's ``fusion.*`` tags, handed
    typed from the ranker (:class:`harness.rankers.Scored`), are its MLflow run's tags; a
    second job whose runs come from the score cache logs the same tags. Expected: the tags
    :func:`harness.rankers.score` returns for the same spec on the same dataset."""
    from mlflow import MlflowClient

    from harness.app.study import run_study
    from harness.rankers import RankerSpec, score

    for var in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"):
        monkeypatch.setenv(var, "0")  # run_study sets them: put back at teardown
        monkeypatch.delenv(var)
    fused = {"kind": "fusion", "method": "wsum", "norm": "min-max",
             "inputs": {"a": {"kind": "feature", "feature": "f0"},
                        "b": {"kind": "feature", "feature": "f1"}},
             "tune": {"metric": "ndcg@10", "step": 0.5}}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = ["ranker=hgb", "ranker.hgb.params.max_iter=5",
                 "+ranker.fused={kind:fusion,method:wsum,norm:min-max,inputs:{a:{kind:feature,"
                 "feature:f0},b:{kind:feature,feature:f1}},tune:{metric:'ndcg@10',step:0.5}}",
                 "metric=ndcg10", f"tracking.uri={uri}", "tracking.worker=false",
                 f"tracking.artifact_root={tmp_path / 'art'}",
                 f"tracking.pending_dir={tmp_path / 'pending'}", "tracking.figures=off",
                 "check.sklearn=off", f"cache_dir={tmp_path / 'cache'}"]
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
        cfg = compose("config", overrides=overrides)
    client = MlflowClient(uri)
    expected: dict[str, str] = {}
    for job in ("first", "cached"):
        result = run_study(cfg, tmp_path / job)
        if not expected:
            expected = score(RankerSpec("fused", "fusion", fused), result.dataset).tags
            assert set(expected) == {"fusion.weights", "fusion.tuned_value",
                                     "fusion.tuned_queries"}
        assert result.rankers["fused"].cache_hit is (job == "cached")
        tags = client.get_run(result.run_ids["ranker:fused"]).data.tags
        assert {k: tags[k] for k in expected} == expected
        hgb = client.get_run(result.run_ids["ranker:hgb"]).data.tags
        assert float(hgb["trainer.seconds"]) > 0
        if job == "first":
            seconds = hgb["trainer.seconds"]
        else:
            assert hgb["trainer.seconds"] == seconds  # the fit's, kept with the cached run


def test_a_cached_run_without_its_tags_is_scored_again(tmp_path: Path, caplog: Any) -> None:
    """A cache file written before runs kept their tags in its metadata (pandas' own
    ``to_parquet``, digest and all) is not trusted to hold them: the run is scored again."""
    from harness.datasets import load_dataset
    from harness.datasets.dataset import file_sha256
    from harness.rankers import RankerSpec, score

    ds = load_dataset("synthetic", n_queries=20, n_train_queries=20)
    spec = RankerSpec("o", "oracle")
    first = score(spec, ds, tmp_path)
    assert (first.hit, first.tags) == (False, {})
    path = tmp_path / f"{first.key}.parquet"
    first.run.to_parquet(path, index=False)  # as an older harness wrote it
    path.with_suffix(".sha256").write_text(file_sha256(path) + "\n")
    with caplog.at_level(logging.WARNING, logger="harness"):
        again = score(spec, ds, tmp_path)
    assert not again.hit
    assert "was written before cached runs kept their tags: scoring again" in caplog.text
    assert score(spec, ds, tmp_path).hit  # rewritten with its (empty) tags
