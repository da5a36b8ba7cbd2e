"""The MLflow run descriptions (``mlflow.note.content``) as MLflow's run page renders them:
Markdown tables, read back with markdown-it-py's CommonMark + GFM-table parser (the rules
MLflow's renderer follows for tables), not with the code that wrote them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from harness.app.notes import NOTE_LIMIT, ranker_description, study_description
from harness.metrics import parse_metric
from tests.test_compare import SWEEP_ARGS, SmallSweep, small_sweep  # noqa: F401 - fixture


def _tables(text: str) -> list[list[list[str]]]:
    """Every table of ``text`` as rows of cell texts (header row first)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type in ("th_open", "td_open"):
            inline = tokens[i + 1]
            assert row is not None
            text = inline.content if inline.type == "inline" else ""
            row.append(text.removesuffix("&emsp;"))  # the padding MLflow's style lacks
        elif tok.type == "tr_close":
            assert row is not None
            tables[-1].append(row)
    return tables


def _summary(means: dict[str, float], n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"mean": list(means.values()), "ci_low": [v - 0.01 for v in means.values()],
                         "ci_high": [v + 0.01 for v in means.values()],
                         "n_queries": [n] * len(means)}, index=list(means))


METRICS = [parse_metric(t) for t in ("ndcg@10", "ndcg@10(ties=input)", "P@10")]


def test_the_job_description_is_a_table_with_the_result_first() -> None:
    names = [m.display_name for m in METRICS]
    summaries = {"a|b": _summary(dict(zip(names, [0.5, 0.7, 0.2]))),
                 "oracle": _summary(dict(zip(names, [0.9, 0.7, 0.1])))}
    note = study_description(summaries, METRICS, study="s", dataset="d", title="ranker=x")
    # the first line is all MLflow's collapsed description box shows sharply: the result
    assert note.splitlines()[0] == ("**Best on nDCG@10: oracle 0.9000** · the best means of the "
                                    "3 variants: a\\|b 2, oracle 2")
    (table,) = _tables(note)
    header, *rows = table
    # three columns: the escaped pipe in the ranker's name stays inside its cell
    assert header == ["variant", "a|b", "oracle"]
    assert rows == [["`nDCG@10`", "0.5000", "**0.9000**"],
                    ["`nDCG@10(ties=input)`", "**0.7000**", "**0.7000**"],  # a tie: both
                    ["`P@10`", "**0.2000**", "0.1000"]]
    html = MarkdownIt("commonmark").enable("table").render(note)
    # a number column is right-aligned; an em space keeps the headers apart
    assert '<th style="text-align:right">a|b\u2003</th>' in html


def test_the_ranker_description_leads_with_its_headline_mean() -> None:
    names = [m.display_name for m in METRICS]
    note = ranker_description("oracle", _summary(dict(zip(names, [0.9, 0.7, 0.1]))), METRICS,
                              study="s", dataset="d")
    assert note.splitlines()[0] == "**oracle: nDCG@10 0.9000 [0.890, 0.910]** over 40 queries"
    (table,) = _tables(note)
    assert table[1] == ["`nDCG@10`", "0.9000", "[0.8900, 0.9100]", "40"]
    assert len(table) == 1 + len(METRICS)


def test_a_long_description_is_cut_at_a_row_and_says_so() -> None:
    """MLflow keeps 8,000 characters of a tag: 48 variants x 20 rankers would lose the end
    of the table (and the defaults line) silently."""
    metrics = [parse_metric(f"ndcg@{k}(gain={g},ties={t})") for k in range(1, 25)
               for g in ("exp2", "linear") for t in ("average",)]
    names = [m.display_name for m in metrics]
    summaries = {f"ranker_{i:02d}": _summary({n: 0.5 + i / 100 for n in names})
                 for i in range(20)}
    note = study_description(summaries, metrics, study="s", dataset="d", title="")
    assert len(note) <= NOTE_LIMIT
    (table,) = _tables(note)
    shown = len(table) - 2  # less the header and the "more rows" row
    assert 0 < shown < len(metrics)
    assert table[-1][0] == f"… {len(metrics) - shown} more rows: summary.csv"
    assert all(len(row) == 21 for row in table[:-1])  # no row cut in its middle
    assert note.rstrip().splitlines()[-1].startswith("A variant's name lists only")


def test_a_sweep_parent_describes_its_jobs_and_links_its_report(
        small_sweep: SmallSweep,  # noqa: F811 - fixture
) -> None:
    """The real sweep of tests/test_compare.py (4 jobs: noisy_oracle's sigma x the tie
    rule): its parent run's description, read through the client, is one table row per job
    and ranker with the means each job's summary.csv holds, and the report's link."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=small_sweep.uri)
    parent = client.get_run(small_sweep.parent_run_id)
    named = "compare_test sweep: " + " ".join(a for a in SWEEP_ARGS[1:]
                                             if not a.startswith("tracking.figures"))
    assert named.startswith(parent.info.run_name.removesuffix("…"))  # 200 characters kept
    note = parent.data.tags["mlflow.note.content"]
    (table,) = _tables(note)
    header, *rows = table
    assert header[:3] == ["job", "overrides", "ranker"]
    jobs = sorted(p for p in small_sweep.sweep_dir.iterdir() if p.name.isdigit())
    assert len(jobs) == 4
    expected = []
    for job in jobs:
        summary = pd.read_csv(job / "summary.csv")
        for ranker, group in summary.groupby("ranker", sort=False):
            means = group.set_index("variant")["mean"]
            expected.append((job.name, ranker, [f"{means[v]:.4f}" if v in means.index else ""
                                                for v in header[3:]]))
    got, job = [], ""
    for row in rows:
        job = row[0] or job  # a job's number and overrides only on its first row
        got.append((job, row[2], [c.strip("*") for c in row[3:]]))
    assert got == expected
    assert rows[0][1] == "`ranker.noisy_oracle.sigma=0.5 metric.ties=optimistic`"
    # the best of each column in bold, and only it
    for i, column in enumerate(zip(*(r[3:] for r in rows))):
        values = [float(c.strip("*")) for c in column if c]
        assert [c for c in column if c.startswith("**")] == \
            [c for c in column if c and float(c.strip("*")) == max(values)], header[3 + i]
    exp = parent.info.experiment_id
    assert (f"(#/experiments/{exp}/runs/{parent.info.run_id}/artifacts/report/summary.html)"
            in note)
    assert f"harness compare {parent.info.run_id}" in note
    # its page shows what was swept and the jobs' results, not "Parameters (0)" and
    # "Metrics (0)" (issue 41)
    params = parent.data.params
    assert params["study"] == "compare_test"
    assert params["ranker.noisy_oracle.sigma"] == "0.5,2.0"
    assert params["metric.ties"] == "optimistic,pessimistic" and "ranker.hgb" in params
    logged = parent.data.metrics
    expected_metrics = {}
    for job in jobs:
        summary = pd.read_csv(job / "summary.csv")
        for ranker, group in summary.groupby("ranker"):
            # each job's own definition: nDCG@5 and @10 under its tie rule (exp2 gain, the
            # grid's first), AP@10, RR
            for variant in group["variant"]:
                metric = parse_metric(variant)
                if metric.name != "ndcg" or metric.gain == "exp2":
                    expected_metrics[f"job{job.name}.{ranker}.{metric.key}"] = \
                        float(group.set_index("variant").at[variant, "mean"])
    assert len(expected_metrics) == 4 * 4 * 4
    assert logged == pytest.approx(expected_metrics, rel=0, abs=0)


def test_three_sweeps_are_not_all_named_alike() -> None:
    from omegaconf import OmegaConf

    from harness.app.callbacks import sweep_run_name

    def config(task: list[str]) -> object:
        return OmegaConf.create({"study": "synthetic", "hydra": {
            "overrides": {"task": task},
            "job": {"config": {"override_dirname": {"exclude_keys": ["hydra.sweep.dir"]}}}}})

    names = {sweep_run_name(config(t)) for t in (["ranker=oracle,random"], ["metric.k=5,10"],
                                                 ["seed=1,2", "hydra.sweep.dir=/x"])}
    assert names == {"synthetic sweep: ranker=oracle,random", "synthetic sweep: metric.k=5,10",
                     "synthetic sweep: seed=1,2"}


@pytest.mark.parametrize(("uri", "hint"), [
    ("http://127.0.0.1:5077/", "open http://127.0.0.1:5077/#/experiments/7/runs/abc"
                               "?workflowType=machine_learning"),
    ("sqlite:////tmp/x.db", "mlflow ui --backend-store-uri sqlite:////tmp/x.db    # then open "
                            "http://127.0.0.1:5000/#/experiments/7/runs/abc"
                            "?workflowType=machine_learning")])
def test_the_open_hint_names_the_experiment_and_the_run(uri: str, hint: str) -> None:
    from harness.app.notes import open_hint

    assert open_hint(uri, "7", "abc").endswith(hint)


def test_a_job_prints_the_page_of_its_run_with_its_experiment(tmp_path: Path) -> None:
    """The closing summary's link, checked against the store through the client: the
    experiment id in the address is the job run's own, and the run exists there."""
    import re

    from mlflow.tracking import MlflowClient

    from harness.app.study import run_study
    from tests.test_tracking_worker import _config

    uri = f"sqlite:///{tmp_path}/m.db"
    result = run_study(_config(tmp_path, uri), tmp_path / "out")
    text = result.closing_summary("worker")
    found = re.search(r"http://127\.0\.0\.1:5000/#/experiments/(\w+)/runs/(\w+)"
                      r"\?workflowType=machine_learning", text)
    assert found, text
    run = MlflowClient(tracking_uri=uri).get_run(found.group(2))
    assert run.info.experiment_id == found.group(1)
    assert run.data.tags["harness.role"] == "job"
    assert f"experiment 'worker' (id {found.group(1)})" in text


def test_a_rankers_notes_are_passed_typed_beside_its_summary() -> None:
    """Issue 38: the study handed warnings, Judged@10 and judgment intervals to the texts
    through the summary's untyped ``attrs``; now a RankerNotes passed explicitly. The ranker
    description and the closing summary say what the notes hold; no module reads those
    keys from a DataFrame's attrs."""
    import re

    import harness.paths
    from harness.app.notes import closing_summary
    from harness.app.ranker_notes import RankerNotes

    names = [m.display_name for m in METRICS]
    summary = _summary(dict(zip(names, [0.9, 0.7, 0.1])))
    notes = RankerNotes(warnings=("scores constant",), judged_at_10=0.8125,
                        judged_dist={"median": 0.9, "p10": 0.6, "full": 0.41,
                                     "below_half": 0.03},
                        intervals={"nDCG@10": (0.25, 0.5, 1.0)})
    note = ranker_description("bm25", summary, METRICS, study="s", dataset="d", notes=notes)
    assert "Judged@10 0.812" in note and "median 0.900, 10th percentile 0.600" in note
    assert "[0.2500, 0.5000] on `nDCG@10`" in note and "- ⚠ scores constant" in note
    text = " ".join(closing_summary(
        study="s", seconds=1.0, summaries={"bm25": summary}, notes={"bm25": notes},
        metrics=METRICS, n_queries=40, output_dir=Path("out"), run_ids={},
        tracking_uri=None, experiment=None, width=100, bold=False).split())
    assert "bm25 0.812" in text and "nDCG@10: bm25 [0.250, 0.500]" in text
    source = "\n".join(p.read_text() for p in Path(harness.paths.PROJECT_ROOT, "harness")
                       .rglob("*.py"))
    assert not re.search(r"attrs(\.get\(|\[)\s*[\"'](warnings|judged_at_10|judged_dist|"
                         r"intervals)[\"']", source)
