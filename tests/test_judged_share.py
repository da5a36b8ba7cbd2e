"""Issue 24 in the app: each ranker's mean judged@10 in the closing table and its run's
description, and a warning naming ``harness judgments`` when it is below 0.9. On TREC CAsT
2021 the expected shares come from ir_measures' Judged@10; on synthetic data by hand."""

from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

import harness.paths
from harness.app.config import register_configs
from harness.app.judged_share import judged_at_k, judged_warning
from harness.app.notes import closing_summary, ranker_description
from harness.engines import Engine
from tests.shared import shared_data_dir

CONF = Path(harness.paths.PROJECT_ROOT) / "conf"


def _ir_measures_judged_at_10(run_file: Path, qrels_file: Path) -> float:
    """Mean Judged@10 by ir_measures over the run's queries that have judgments."""
    import ir_measures
    from ir_measures import Judged

    qrels = list(ir_measures.read_trec_qrels(str(qrels_file)))
    judged_qids = {q.query_id for q in qrels}
    run = [r for r in ir_measures.read_trec_run(str(run_file)) if r.query_id in judged_qids]
    return statistics.mean(m.value for m in ir_measures.iter_calc([Judged @ 10], qrels, run))


def test_cast2021_job_reports_judged_at_10_and_warns(tmp_path: Path) -> None:
    from harness.app.study import run_study

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        cfg = compose("config", overrides=["experiment=cast2021", "ranker=cast_runs",
                                           "tracking=off",
                                           "tracking.figures=off", "check.sklearn=off",
                                           f"cache_dir={tmp_path / 'cache'}"])
    result = run_study(cfg, tmp_path / "job")
    cast = shared_data_dir() / "trec_cast_2021"
    qrels = cast / "trec-cast-qrels-docs.2021.qrel"
    expected = {"bm25": _ir_measures_judged_at_10(cast / "org_manual_bm25.run", qrels),
                "ance": _ir_measures_judged_at_10(cast / "org_manual_ance.run", qrels)}
    assert expected["ance"] < expected["bm25"] < 0.9  # both warned (0.77 and 0.86)
    for name, share in expected.items():
        assert result.rankers[name].judged_at_10 == pytest.approx(share, abs=1e-12)
    text = result.closing_summary("cast2021")
    line = " ".join(text[text.index("judged@10 (the share"):].split("\n\n")[0].split())
    assert line.endswith(f"bm25 {expected['bm25']:.3f}, ance {expected['ance']:.3f}")
    warnings = " ".join(text[text.index("Warnings:"):].split())
    for name, share in expected.items():
        assert (f"ranker {name}: judged@10 is {share:.3f} (below 0.9)") in warnings
    assert warnings.count("bound them with harness judgments") == 2
    # the ranker run's MLflow description states its share and carries the warning
    note = ranker_description("ance", result.summaries["ance"], result.metrics,
                              study="cast2021", dataset="cast2021_bm25",
                              notes=result.notes["ance"])
    # the study hands its notes over typed, beside the table, not in its attrs
    assert result.notes["ance"].judged_at_10 == result.rankers["ance"].judged_at_10
    assert not {"warnings", "judged_at_10", "judged_dist", "intervals"} & set(
        result.summaries["ance"].attrs)
    assert f"Judged@10 {expected['ance']:.3f}" in note
    assert "**Warnings**" in note and "bound them with harness judgments" in note


def _run_and_qrels(n_judged: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One query of 12 documents with distinct scores; the top 10 hold ``n_judged`` judged
    ones (the first n), and the two below the cut-off are judged too."""
    docs = [f"d{i:02d}" for i in range(12)]
    run = pd.DataFrame({"qid": "q", "docid": docs, "score": [float(12 - i) for i in range(12)]})
    judged = docs[:n_judged] + docs[10:]
    qrels = pd.DataFrame({"qid": "q", "docid": judged, "label": 1})
    return run, qrels


@pytest.mark.parametrize("n_judged, warned", [(10, False), (9, False), (8, True)])
def test_the_warning_starts_below_0_9(n_judged: int, warned: bool) -> None:
    run, qrels = _run_and_qrels(n_judged)
    with Engine("local") as engine:
        share = judged_at_k(engine, run, qrels, {"missing": "exclude"})
    assert share == pytest.approx(n_judged / 10)  # by hand: judged among the top 10
    assert (judged_warning("r", share) is not None) is warned


def test_no_judged_line_when_every_top_document_is_judged() -> None:
    from harness.app.ranker_notes import RankerNotes
    from harness.metrics import parse_metric

    summaries = {name: pd.DataFrame({"mean": [0.5], "ci_low": [0.4], "ci_high": [0.6],
                                     "n_queries": [1]}, index=["nDCG@10"]) for name in "ab"}
    notes = {name: RankerNotes(judged_at_10=1.0) for name in "ab"}
    kwargs = dict(study="s", seconds=1.0, metrics=[parse_metric("ndcg@10")], n_queries=1,
                  output_dir=Path("out"), run_ids={}, tracking_uri=None, experiment=None,
                  width=100, bold=False, summaries=summaries)
    assert "judged@10" not in closing_summary(notes=notes, **kwargs)
    notes["b"] = RankerNotes(judged_at_10=0.95)  # incomplete but above the warning
    text = " ".join(closing_summary(notes=notes, **kwargs).split())  # unwrapped
    assert "a 1.000, b 0.950" in text and "Warnings:" not in text
