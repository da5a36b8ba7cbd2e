"""engine=local|stream|dask in the app: the same per-query tables, for in-memory runs (the
default synthetic study) and for a parquet_run dataset evaluated where it lies."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

import harness
import harness.paths
from harness import InputError
from harness.app.config import register_configs
from harness.app.study import run_study, validate
from harness.data.trec import read_qrels
from harness.datasets.parquet_run import write_scored_run
from harness.engines import Engine
from harness.metrics.sklearn_check import check_against_sklearn

CONF = Path(harness.paths.PROJECT_ROOT) / "conf"
ENGINES = [["engine=local"], ["engine=stream", "engine.batch_rows=1500"],
           ["engine=dask", "engine.partition_rows=2500", "engine.n_workers=2"]]


def _compose(overrides: list[str]) -> DictConfig:
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=overrides)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scored") / "scored.parquet"
    write_scored_run(path, 120, chunk_queries=50, min_docs=5, max_docs=60)
    return path


def _tables(cfg: DictConfig, out: Path) -> dict[str, pd.DataFrame]:
    result = run_study(cfg, out)
    assert not result.check_failures
    tables = {name: r.per_query for name, r in result.rankers.items()}
    for name, table in tables.items():  # what reached disk is what was computed
        disk = pd.read_parquet(out / "per_query" / f"{name}.parquet").set_index("qid")
        pd.testing.assert_frame_equal(disk, table, check_exact=True, check_index_type=False,
                                      check_names=False)
    return tables


def test_engines_agree_on_the_default_study(tmp_path: Path) -> None:
    base = ["tracking=off", "tracking.figures=false", "dataset.n_queries=60",
            "dataset.n_train_queries=60", "ranker=oracle", "+ranker.rnd={kind:random}",
            "cache_dir=" + str(tmp_path / "cache")]
    tables = [_tables(_compose(base + e), tmp_path / e[0].split("=")[1]) for e in ENGINES]
    assert set(tables[0]) == {"oracle", "rnd"} and len(tables[0]["rnd"].columns) == 3 + 32
    for other in tables[1:]:
        for name, table in tables[0].items():
            pd.testing.assert_frame_equal(other[name], table, check_exact=True)


def test_engines_agree_on_a_parquet_run_evaluated_in_place(tmp_path: Path,
                                                          scored: Path) -> None:
    base = ["tracking=off", "tracking.figures=false", "dataset=parquet_run",
            f"dataset.path={scored}", "ranker=scored_columns", "check.sample_rows=2000"]
    whole = pd.read_parquet(scored)
    for e in ENGINES:
        cfg = _compose(base + e)
        result = run_study(cfg, tmp_path / e[0])
        assert result.dataset.kind == "parquet_run" and result.dataset.rows == len(whole)
        for column in ("score", "weak"):
            # independently: the whole file in memory, harness.evaluate
            expected = harness.evaluate(whole.assign(score=whole[column]).drop(
                columns=["weak"]), metrics=result.metrics)
            r = result.rankers[column]
            pd.testing.assert_frame_equal(r.per_query, expected, check_exact=True,
                                          check_index_type=False)
            checked = [c for c in r.checks if c.status == "checked"]
            assert checked and all(0 < c.n_checked < len(expected) for c in checked)
            assert max(c.max_abs_diff for c in checked) < 1e-12


@pytest.mark.parametrize("workers", ["null", "2"])
def test_stream_engine_reads_a_parquet_run_once_for_every_ranker(
        tmp_path: Path, scored: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, workers: str) -> None:
    """Two rankers reading score columns of one file: one pass over it (each batch read
    once), each ranker's table as harness.evaluate gives it, the time split logged; with
    engine.n_workers=2 the second column is evaluated in a worker process, with the same
    tables (null: a file this small is evaluated in the study's process alone)."""
    import logging

    from harness.engines import stream

    passes = []
    real = stream.iter_query_batches

    def counted(*args, **kwargs):
        passes.append(sorted(kwargs.get("columns") or []))
        return real(*args, **kwargs)

    monkeypatch.setattr(stream, "iter_query_batches", counted)
    cfg = _compose(["tracking=off", "tracking.figures=false", "dataset=parquet_run",
                    f"dataset.path={scored}", "ranker=scored_columns", "engine=stream",
                    "engine.batch_rows=700", "check.sklearn=off", "metric=ndcg10",
                    f"engine.n_workers={workers}"])
    with caplog.at_level(logging.INFO, logger="harness"):
        result = run_study(cfg, tmp_path / "out")
    if workers == "2":  # each process reads its own row groups (harness.engines.units)
        assert passes == [] and pq.ParquetFile(scored).metadata.num_row_groups > 1
    else:
        assert passes == [["docid", "label", "qid", "score", "weak"]]  # one pass, both columns
    whole = pd.read_parquet(scored)
    for column in ("score", "weak"):
        expected = harness.evaluate(whole.assign(score=whole[column]).drop(columns="weak"),
                                    metrics="ndcg@10")
        pd.testing.assert_frame_equal(result.rankers[column].per_query, expected,
                                      check_exact=True, check_index_type=False)
    split = [r.getMessage() for r in caplog.records if r.getMessage().startswith("one pass")]
    assert len(split) == 1 and f"{len(whole):,} rows" in split[0]
    assert "reading" in split[0] and "score " in split[0] and "weak " in split[0]
    assert ("side by side in 2 processes" in split[0]) == (workers == "2")


def test_the_sklearn_check_of_a_parquet_run_is_computed_during_its_pass(
        tmp_path: Path, scored: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sklearn's side of each ranker's check is computed once, while the pass's worker
    evaluates (harness.engines.workers.Meanwhile), not again afterwards; the verdicts are
    those of a check run here on the same sample and the study's tables."""
    from harness.app import in_place
    from harness.engines.stream import iter_query_batches
    from harness.metrics import sklearn_check

    during, after = [], []
    for module, calls in ((in_place, during), (sklearn_check, after)):
        real = module.sklearn_side
        monkeypatch.setattr(module, "sklearn_side",
                            lambda *a, _real=real, _calls=calls, **k: _calls.append(1) or
                            _real(*a, **k))
    result = run_study(_compose(["tracking=off", "tracking.figures=false",
                                 "dataset=parquet_run", f"dataset.path={scored}",
                                 "ranker=scored_columns", "engine=stream",
                                 "engine.batch_rows=700", "engine.n_workers=2",
                                 "check.sample_rows=2000"]), tmp_path / "out")
    assert len(during) == 2 and after == []
    import hashlib  # the file's digest, hashed during the pass too

    assert result.dataset.digest == hashlib.sha256(scored.read_bytes()).hexdigest()
    for column in ("score", "weak"):
        sample = next(iter_query_batches(scored, batch_rows=2000, columns={
            "qid": "qid", "docid": "docid", "label": "label", column: "score"}))
        r = result.rankers[column]
        expected = check_against_sklearn(sample.reset_index(drop=True), None, result.metrics,
                                         r.per_query.loc[pd.unique(sample["qid"])])
        assert [(c.variant, c.status, c.n_checked, c.max_abs_diff) for c in r.checks
                if c.status == "checked"] == [(c.variant, c.status, c.n_checked,
                                               c.max_abs_diff) for c in expected
                                              if c.status == "checked"]
        assert any(c.status == "checked" for c in r.checks)


def test_a_digest_computed_later_is_the_digest_computed_at_load(tmp_path: Path,
                                                               scored: Path) -> None:
    from harness.datasets.parquet_run import load_parquet_run

    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("0 0 1 2\n1 0 7 1\n")
    for extra in ({}, {"qrels_path": str(qrels_path)}):
        now = load_parquet_run(name="x", path=str(scored), **extra)
        later = load_parquet_run(name="x", path=str(scored), digest_later=True, **extra)
        assert later.digest == "" and len(now.digest) == 64
        later.hash_file()
        assert later.digest == now.digest


def test_parquet_run_with_a_qrels_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    run = pd.DataFrame({"q": np.repeat(["a", "b", "c"], 4), "doc": [f"d{i}" for i in range(12)],
                        "bm25": rng.integers(0, 4, 12) / 2.0})
    path = tmp_path / "run.parquet"
    run.to_parquet(path, index=False)
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("a 0 d0 2\na 0 d3 1\nb 0 d5 1\nb 0 zz 3\nz 0 d9 1\n")
    qrels = read_qrels(qrels_path)
    expected = harness.evaluate(run.rename(columns={"q": "qid", "doc": "docid", "bm25": "score"}),
                                qrels, ["ndcg@3", "ap"], missing="zero")
    for engine in ENGINES:
        cfg = _compose(["tracking=off", "tracking.figures=false", "dataset=parquet_run",
                        f"dataset.path={path}", f"dataset.qrels_path={qrels_path}",
                        "dataset.qid=q", "dataset.docid=doc", "ranker=scored_columns",
                        "~ranker.weak", "ranker.score.column=bm25", "metric.name=ndcg",
                        "metric.k=3", "metric.gain=exp2", "metric.ties=average",
                        "metric.extra=[ap]", "metric.missing=zero", *engine])
        got = run_study(cfg, tmp_path / engine[0]).rankers["score"].per_query
        pd.testing.assert_frame_equal(got, expected, check_exact=True, check_dtype=False,
                                      check_index_type=False)
        assert list(got.index) == ["a", "b", "z"]  # c unjudged; z judged, absent: 0


@pytest.mark.parametrize("override, where", [
    (["engine=stream", "engine.batch_rows=0"], "engine.batch_rows"),
    (["engine=dask", "engine.n_workers=0"], "engine.n_workers"),
    (["engine.kind=spark"], "engine.kind"),
    (["dataset=parquet_run", "dataset.path=PATH", "ranker=oracle"], "ranker.oracle.kind"),
])
def test_bad_engine_settings_fail_before_any_data_is_read(override: list[str], where: str,
                                                          scored: Path) -> None:
    cfg = _compose([o.replace("PATH", str(scored)) for o in override])
    with pytest.raises(InputError) as exc:
        validate(cfg)
    assert exc.value.key == where and f"key {where!r}" in str(exc.value)


def test_a_score_column_the_file_lacks_is_named(tmp_path: Path, scored: Path) -> None:
    cfg = _compose(["tracking=off", "dataset=parquet_run", f"dataset.path={scored}",
                    "ranker=scored_columns", "+ranker.mine={kind:column,column:nope}"])
    with pytest.raises(InputError, match=r"no numeric column 'nope' in scored.parquet; "
                       r"score columns: score, weak") as exc:
        run_study(cfg, tmp_path / "out")
    assert exc.value.key == "ranker.mine.column"


def test_dask_config_attaches_to_a_running_scheduler(tmp_path: Path, scored: Path) -> None:
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster:
        cfg = _compose(["tracking=off", "tracking.figures=false", "dataset=parquet_run",
                        f"dataset.path={scored}", "ranker=scored_columns", "engine=dask",
                        f"engine.address={cluster.scheduler_address}", "check.sklearn=off"])
        with Engine.from_config(cfg.engine) as engine:
            assert cluster.scheduler_address in engine.describe()
        got = run_study(cfg, tmp_path / "out").rankers["score"].per_query
        assert len(cluster.scheduler.workers) == 1  # still up: attached, not owned
    whole = pd.read_parquet(scored)
    pd.testing.assert_frame_equal(got, harness.evaluate(whole, metrics=list(got.columns[3:])),
                                  check_exact=True, check_index_type=False)



def test_app_with_the_dask_engine_logs_to_mlflow_and_reproduces(tmp_path: Path,
                                                               scored: Path) -> None:
    """`python -m harness ... engine=dask` end to end: MLflow holds the engine's parameters
    and per-query tables equal to evaluate's, and each ranker run reproduces identically
    (reproduce reads the file with the stream engine)."""
    import subprocess
    import sys

    from mlflow.tracking import MlflowClient

    from harness.reproduce import reproduce_run

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "dataset=parquet_run", f"dataset.path={scored}",
         "ranker=scored_columns", "engine=dask", "engine.n_workers=2", "metric=ndcg10",
         f"tracking.uri={uri}", "tracking.experiment=engines", "tracking.figures=false",
         f"tracking.artifact_root={tmp_path / 'artifacts'}",
         f"tracking.pending_dir={tmp_path / 'pending'}", f"hydra.run.dir={tmp_path / 'out'}"],
        cwd=harness.paths.PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "engine: dask (local cluster of 2 workers" in proc.stderr + proc.stdout
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("engines")
    runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])
            if r.data.tags.get("harness.role") == "ranker"}
    assert set(runs) == {"score", "weak"}
    whole = pd.read_parquet(scored)
    for name, run in runs.items():
        assert run.data.params["engine.kind"] == "dask"
        assert run.data.params["dataset.kind"] == "parquet_run"
        expected = harness.evaluate(whole.assign(score=whole[name]), metrics="ndcg@10")
        assert run.data.metrics["ndcg_at_10"] == pytest.approx(
            float(expected["nDCG@10"].mean()), abs=1e-15)
        result = reproduce_run(run.info.run_id, tracking_uri=uri)
        assert result.identical and result.n_queries == len(expected)
    assert not list((tmp_path / "pending").glob("*.json"))
