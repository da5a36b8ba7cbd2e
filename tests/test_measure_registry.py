"""A measure registered from outside harness/ works by name everywhere a metric is named:
``harness.evaluate``, ``parse_metric``, a Hydra ``metric`` config (through the app) and the
comparison report. Also: the registry's refusals, and the measure table the docs show,
generated from the declarations."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import harness
from harness import MetricDefinitionError
from harness.metrics.vocabulary.registry import TABLE_MARKERS, measure_table, measures

PROJECT = Path(harness.__file__).resolve().parent.parent


def _hits(x: harness.MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    """How many relevant documents the top k holds (tie-averaged)."""
    return x.top_k_sum(x.relevant()), x.n_relevant() == 0


@pytest.fixture
def hits() -> Iterator[None]:
    harness.register_measure("in_top", _hits, display="InTop", binary=True,
                             formula="$\\sum_{i \\le k} [rel_i \\ge level]$")
    try:
        yield
    finally:
        harness.unregister_measure("in_top")


RUN = pd.DataFrame({
    "qid": ["q1"] * 4 + ["q2"] * 3,
    "docid": ["a", "b", "c", "d", "e", "f", "g"],
    "score": [3.0, 2.0, 2.0, 1.0, 1.0, 1.0, 0.5],
})
QRELS = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2", "q2"],
                      "docid": ["b", "c", "d", "g", "zz"], "label": [1, 2, 1, 0, 0]})


def test_a_registered_measure_evaluates_by_name(hits: None) -> None:
    out = harness.evaluate(RUN, QRELS, ["in_top@2", "InTop@2(level=2)", "in_top@2(ties=input)"],
                           missing="zero")
    # worked by hand. q1: a (0) first, then b (1) and c (2) tied for ranks 2-3.
    # level 1: both tied documents relevant, so rank 2 holds one relevant document: 1.
    # level 2: only c; the tie is averaged, rank 2 holds it half the time: 0.5.
    # ties=input: b (row order) takes rank 2: 1 at level 1.
    # q2 has no relevant document: empty, scored 0 (empty='zero').
    assert out.loc["q1", "InTop@2"] == 1.0
    assert out.loc["q1", "InTop@2(level=2)"] == 0.5
    assert out.loc["q1", "InTop@2(ties=input)"] == 1.0
    assert out.loc["q2"].filter(like="InTop").tolist() == [0.0, 0.0, 0.0]
    excluded = harness.evaluate(RUN, QRELS, ["in_top@2(empty=exclude)"])
    assert np.isnan(excluded.loc["q2", "InTop@2(empty=exclude)"])


def test_a_registered_measure_parses_and_round_trips(hits: None) -> None:
    m = harness.parse_metric("InTop@5(level=2,ties=docid)")
    assert (m.name, m.k, m.level, m.ties) == ("in_top", 5, 2, "docid")
    assert harness.parse_metric(m.display_name) == m
    assert m.key == "in_top_at_5__ties_docid__level_2"
    # options its declaration does not list are reset, so equal definitions compare equal
    assert harness.Metric("in_top", k=5, gain="linear") == harness.Metric("in_top", k=5)
    with pytest.raises(MetricDefinitionError, match="unknown option 'gian'"):
        harness.parse_metric("InTop@5(gian=linear)")


def test_registration_refuses_clashes_and_unknown_options(hits: None) -> None:
    with pytest.raises(MetricDefinitionError, match="'in_top' already name"):
        harness.register_measure("in_top", _hits)
    with pytest.raises(MetricDefinitionError, match="'map' already name.*'ap'"):
        harness.register_measure("my_ap", _hits, aliases=("map",))
    with pytest.raises(MetricDefinitionError, match="unknown option.*'persistence'"):
        harness.register_measure("in_top2", _hits, options=("persistence",))
    with pytest.raises(MetricDefinitionError, match="a measure name is lower-case"):
        harness.register_measure("In Top 2", _hits)
    with pytest.raises(MetricDefinitionError, match="built in and cannot be removed"):
        harness.unregister_measure("ndcg")
    with pytest.raises(MetricDefinitionError, match="unknown metric 'hitz'.*in_top"):
        harness.Metric("hitz")


def test_a_registered_measure_through_the_app_and_the_report(hits: None,
                                                             tmp_path: Path) -> None:
    from mlflow import MlflowClient

    from harness.app.study import run_study
    from harness.commands.compare import main as compare

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    cfg: dict[str, Any] = {
        "study": "plugin", "seed": 0, "cache_dir": str(tmp_path / "cache"),
        "dataset": {"kind": "synthetic", "n_queries": 30, "n_train_queries": 0},
        "ranker": {"oracle": {"kind": "oracle"}, "random": {"kind": "random"}},
        "metric": {"name": ["in_top", "precision"], "gain": "exp2", "discount": "log2",
                   "k": 10, "ties": "average", "ideal": "judged"},
        "tracking": {"enabled": True, "uri": uri, "experiment": "plugin", "worker": False,
                     "artifact_root": str(tmp_path / "art"),
                     "pending_dir": str(tmp_path / "pending"), "figures": False,
                     "bootstrap_resamples": 100},
        "check": {"sklearn": "fail"},
    }
    result = run_study(cfg, tmp_path / "out")
    assert [m.display_name for m in result.metrics] == ["InTop@10", "P@10"]
    for ranker in ("oracle", "random"):
        per_query = result.rankers[ranker].per_query
        # InTop@10 = 10 x P@10 (precision at a cut-off divides by k)
        np.testing.assert_allclose(per_query["InTop@10"], 10 * per_query["P@10"], rtol=1e-12)
    client = MlflowClient(tracking_uri=uri)
    oracle = client.get_run(result.run_ids["ranker:oracle"])
    assert "in_top_at_10" in oracle.data.metrics
    parent = result.run_ids["job"]
    assert compare([parent, "--tracking-uri", uri, "--baseline", "random", "--resamples",
                    "200", "--out-dir", str(tmp_path / "report"), "--no-log"]) == 0
    html = next((tmp_path / "report").rglob("*.html")).read_text()
    assert "InTop@10" in html


def test_an_installed_package_declares_measures_through_an_entry_point(tmp_path: Path) -> None:
    """A package's ``harness.measures`` entry point is imported the first time a name is not
    found, so a fresh process (the app, ``harness compare``) knows its measures."""
    (tmp_path / "my_measures.py").write_text(textwrap.dedent("""
        import harness

        @harness.register_measure("found", display="Found", binary=True)
        def found(x):
            return x.top_k_sum(x.relevant()) > 0, x.n_relevant() == 0
    """))
    dist = tmp_path / "my_measures-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-measures\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[harness.measures]\nfound = my_measures\n")
    code = ("import harness, pandas as pd;"
            "run = pd.DataFrame({'qid': ['q', 'q'], 'docid': ['a', 'b'], 'score': [2, 1],"
            " 'label': [0, 1]});"
            "print(harness.evaluate(run, metrics=['found@1', 'found@2']).iloc[0, -2:].tolist())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": f"{tmp_path}:{PROJECT}",
                                             "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[0.0, 1.0]"


def test_the_docs_measure_table_is_generated_from_the_declarations() -> None:
    """docs/measures.md holds, between its markers, exactly :func:`measure_table`'s text;
    regenerate it with ``python -m harness.metrics.vocabulary.measure_docs``."""
    text = (PROJECT / "docs" / "measures.md").read_text()
    begin, end = TABLE_MARKERS
    inside = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, re.S)
    assert inside, f"docs/measures.md has no {begin} ... {end} block"
    assert inside.group(1) == measure_table(), (
        "docs/measures.md's measure table drifted from the declarations: run "
        "`python -m harness.metrics.vocabulary.measure_docs` to regenerate it")
    for m in measures():
        assert f"`{m.display}` (`{m.name}`)" in inside.group(1)
