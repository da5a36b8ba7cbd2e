"""Judgment intervals in a study (issue 24): ``judgments/<ranker>.parquet`` and
``judgments.csv``, the judged@10 distribution, and the pair flags of the closing summary.

Expected values: on TREC CAsT 2021, :func:`harness.judgment_interval` called directly with
the pool of both runs read from their files (a separate, separately tested function) and
ir_measures' Judged@10 per query; on crafted data, P@2 computed by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

import harness.paths
from harness import InputError, judgment_interval, parse_metric
from harness.app.config import register_configs
from harness.data.trec import read_qrels, read_run
from tests.shared import shared_data_dir

CONF = Path(harness.paths.PROJECT_ROOT) / "conf"
COLUMNS = ["qid", "variant", "low", "high", "exact", "judged_at_10"]
CAST_METRICS = ["nDCG@10(gain=linear,ties=docid)", "AP(ties=docid)",
                "AP(ties=docid,unjudged=condensed)"]


def _compose(overrides: list[str]) -> Any:
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=overrides)


def _quiet(folder: Path) -> list[str]:
    """No tracking, no figures, no sklearn check; the score cache in ``folder`` (not the
    project's runs/, which tests/test_readme_commands.py checks while other modules run)."""
    return ["tracking=off", "tracking.figures=off", "check.sklearn=off",
            f"cache_dir={folder / 'cache'}"]


@pytest.fixture(scope="module")
def cast_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    from harness.app.study import run_study

    out = tmp_path_factory.mktemp("cast") / "job"
    cfg = _compose(["experiment=cast2021", "metric=judgments",
                    'metric.extra=["AP(ties=docid)","AP(ties=docid,unjudged=condensed)"]',
                    *_quiet(out.parent)])
    return run_study(cfg, out), out


def _cast_inputs() -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    d = shared_data_dir() / "trec_cast_2021"
    runs = {"bm25": read_run(d / "org_manual_bm25.run"),
            "ance": read_run(d / "org_manual_ance.run")}
    return runs, read_qrels(d / "trec-cast-qrels-docs.2021.qrel")


def test_cast_judgments_file_equals_judgment_interval_with_the_pool(cast_job: Any) -> None:
    result, out = cast_job
    runs, qrels = _cast_inputs()
    pool = pd.concat([r[["qid", "docid"]] for r in runs.values()]).drop_duplicates()
    assert [m.display_name for m in result.metrics] == CAST_METRICS
    for name, run in runs.items():
        table = pd.read_parquet(out / "judgments" / f"{name}.parquet")
        assert list(table.columns) == COLUMNS
        assert table["qid"].dtype == result.rankers[name].per_query.index.dtype
        assert table[["low", "high", "judged_at_10"]].dtypes.eq("float64").all()
        assert table["exact"].dtype == bool
        for variant in CAST_METRICS:
            expected = judgment_interval(run, qrels, parse_metric(variant), pool=pool)
            got = table[table["variant"] == variant].set_index("qid")
            assert got.index.equals(result.rankers[name].per_query.index)
            expected = expected.reindex(got.index)
            np.testing.assert_allclose(got["low"], expected["low"], rtol=0, atol=1e-12)
            np.testing.assert_allclose(got["high"], expected["high"], rtol=0, atol=1e-12)
            assert (got["exact"] == expected["exact"]).all()
        assert (table["high"] - table["low"]).max() > 0.5  # some query's bounds are far apart


def test_cast_judged_at_10_per_query_equals_ir_measures(cast_job: Any) -> None:
    import ir_measures
    from ir_measures import Judged

    result, out = cast_job
    d = shared_data_dir() / "trec_cast_2021"
    qrels = list(ir_measures.read_trec_qrels(str(d / "trec-cast-qrels-docs.2021.qrel")))
    judged_qids = {q.query_id for q in qrels}
    for name, file in (("bm25", "org_manual_bm25.run"), ("ance", "org_manual_ance.run")):
        run = [r for r in ir_measures.read_trec_run(str(d / file)) if r.query_id in judged_qids]
        expected = {m.query_id: m.value for m in ir_measures.iter_calc([Judged @ 10], qrels, run)}
        table = pd.read_parquet(out / "judgments" / f"{name}.parquet")
        one = table[table["variant"] == CAST_METRICS[0]].set_index("qid")["judged_at_10"]
        assert len(one) == len(expected) == 158
        for qid, value in expected.items():
            assert one[qid] == pytest.approx(value, abs=1e-12), qid
        # every variant's rows repeat the query's share
        assert table.groupby("qid")["judged_at_10"].nunique().max() == 1
        # the CSV: the mean of the bounds and the distribution of the shares
        csv = pd.read_csv(out / "judgments.csv")
        row = csv[(csv["ranker"] == name) & (csv["variant"] == CAST_METRICS[0])].iloc[0]
        values = np.array(list(expected.values()))
        assert row["judged_at_10_mean"] == pytest.approx(values.mean(), abs=1e-12)
        assert row["judged_at_10_median"] == pytest.approx(np.median(values), abs=1e-12)
        assert row["judged_at_10_full"] == pytest.approx((values == 1).mean(), abs=1e-12)
        assert row["judged_at_10_below_half"] == pytest.approx((values < 0.5).mean(), abs=1e-12)
        rows = table[table["variant"] == CAST_METRICS[0]]
        assert row["low"] == pytest.approx(rows["low"].mean(), abs=1e-12)
        assert row["high"] == pytest.approx(rows["high"].mean(), abs=1e-12)
        assert row["n_queries"] == 158


def test_cast_closing_summary_flags_ance_over_bm25(cast_job: Any) -> None:
    result, _ = cast_job
    runs, qrels = _cast_inputs()
    pool = pd.concat([r[["qid", "docid"]] for r in runs.values()]).drop_duplicates()
    variant = CAST_METRICS[0]
    a, b = (judgment_interval(runs[n], qrels, parse_metric(variant), pool=pool)
            for n in ("ance", "bm25"))
    worst, best = (a["low"] - b["high"]).mean(), (a["high"] - b["low"]).mean()
    assert worst < 0 < best  # the verdict does not hold over every labeling
    text = " ".join(result.closing_summary("cast2021").split())
    assert (f"ance > bm25 on {variant} only if unjudged documents are non-relevant (over "
            f"every labeling the difference lies in [{worst:+.3f}, {best:+.3f}])") in text
    assert f"bm25 [{b['low'].mean():.3f}, {b['high'].mean():.3f}]" in text
    assert "judged@10 per query: bm25 median" in text


def _trec_job(tmp_path: Path, base: dict[str, list[str]], cand: dict[str, list[str]],
              qrels: dict[str, dict[str, int]]) -> tuple[Any, str]:
    """A study of two run files (``base``: the baseline) on P@2; returns it and its closing
    summary, one line per paragraph."""
    from harness.app.study import run_study

    def run_file(name: str, ranking: dict[str, list[str]]) -> str:
        path = tmp_path / f"{name}.run"
        path.write_text("".join(f"{q} Q0 {d} {i + 1} {len(docs) - i} {name}\n"
                                for q, docs in ranking.items() for i, d in enumerate(docs)))
        return str(path)

    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {label}\n" for q, labels in qrels.items()
                                  for d, label in labels.items()))
    cfg = _compose(["dataset=cast2021_bm25", f"dataset.qrels_path={qrels_path}",
                    f"dataset.run_path={run_file('base', base)}", "ranker=cast_runs",
                    f"ranker.bm25.path={run_file('base', base)}",
                    f"ranker.ance.path={run_file('cand', cand)}", "baseline=bm25",
                    "metric=ndcg10", "metric.name=P", "metric.k=2", "metric.gain=linear",
                    "metric.ties=average", *_quiet(tmp_path)])
    result = run_study(cfg, tmp_path / "job")
    return result, " ".join(result.closing_summary("crafted").split())


QRELS = {"q1": {"d1": 1, "d2": 1, "d3": 0}}


def test_the_flag_fires_when_the_candidate_ranks_unjudged_documents_first(
        tmp_path: Path) -> None:
    # bm25: d1 (relevant), d3 (not): P@2 = 0.5 whatever the labeling; ance: u1, u2, both
    # unjudged, then d1: P@2 = 0 if they are non-relevant, 1 if relevant. By hand, bm25 -
    # ance lies in [0.5 - 1, 0.5 - 0] = [-0.5, +0.5]: bm25 wins only if they are non-relevant
    result, text = _trec_job(tmp_path, {"q1": ["d1", "d3"]}, {"q1": ["u1", "u2", "d1"]},
                             QRELS)
    assert ("bm25 > ance on P@2 only if unjudged documents are non-relevant (over every "
            "labeling the difference lies in [-0.500, +0.500])") in text
    assert "bm25 [0.500, 0.500], ance [0.000, 1.000]" in text
    table = pd.read_parquet(tmp_path / "job" / "judgments" / "ance.parquet")
    assert table[["low", "high"]].iloc[0].tolist() == [0.0, 1.0]
    assert table["judged_at_10"].iloc[0] == pytest.approx(1 / 3)  # d1 of u1, u2, d1


def test_the_flag_does_not_fire_when_the_verdict_holds(tmp_path: Path) -> None:
    # bm25: d1, d2 (both relevant): 1; ance: d3 (not), u1 (unjudged): 0 or 0.5. By hand,
    # bm25 - ance lies in [0.5, 1]: it holds over every labeling
    result, text = _trec_job(tmp_path, {"q1": ["d1", "d2"]}, {"q1": ["d3", "u1"]}, QRELS)
    assert ("bm25 > ance on P@2: holds over every labeling (over every labeling the "
            "difference lies in [+0.500, +1.000])") in text
    assert "only if unjudged" not in text


def test_default_study_writes_points_without_calling_judgment_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.metrics.unjudged.judgment_interval as module
    from harness.app.study import run_study

    calls = []
    monkeypatch.setattr(module, "judgment_interval", lambda *a, **k: calls.append(a))
    result = run_study(_compose(_quiet(tmp_path)), tmp_path / "job")
    assert calls == []
    for name, r in result.rankers.items():
        table = pd.read_parquet(tmp_path / "job" / "judgments" / f"{name}.parquet")
        assert list(table.columns) == COLUMNS
        assert len(table) == len(r.per_query) * len(result.metrics)
        for variant, rows in table.groupby("variant", sort=False):
            value = r.per_query[variant].to_numpy()
            assert (rows["low"].to_numpy() == value).all()
            assert (rows["high"].to_numpy() == value).all()
        assert table["exact"].all() and (table["judged_at_10"] == 1.0).all()
    text = result.closing_summary("default")
    assert "judged@10" not in text and "Judgment intervals" not in text


def test_interval_on_calls_judgment_interval_and_off_writes_nothing(tmp_path: Path) -> None:
    from harness.app.study import run_study

    small = ["dataset.n_queries=20", "metric=ndcg10", "ranker=random", *_quiet(tmp_path)]
    run_study(_compose(["judgments.interval=on", *small]), tmp_path / "on")
    table = pd.read_parquet(tmp_path / "on" / "judgments" / "random.parquet")
    assert len(table) == 20 and (table["low"] == table["high"]).all()  # every doc judged
    run_study(_compose(["judgments.interval=off", *small]), tmp_path / "off")
    assert not (tmp_path / "off" / "judgments").exists()
    assert not (tmp_path / "off" / "judgments.csv").exists()


@pytest.mark.parametrize("override, key", [
    ("judgments.interval=maybe", "judgments.interval"),
    ("judgments.interval=3", "judgments.interval"),
    ("judgments.max_labelings=0", "judgments.max_labelings"),
    ("judgments.max_labelings=many", "judgments.max_labelings"),
])
def test_bad_judgments_values_fail_in_one_line_naming_the_key(override: str, key: str) -> None:
    from harness.app.plan import build_plan

    with pytest.raises(InputError) as info:
        build_plan(_compose([override]))
    assert key in str(info.value) and "\n" not in str(info.value)
