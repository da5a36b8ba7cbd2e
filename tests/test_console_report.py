"""Issue 22: what the console tells. The closing table of a study (golden text at a fixed
width), the warnings about constant scores and a feature other than the ranker's name, the
hints for a misspelt override, no folder left by a job that failed validation, and
``harness cluster`` on a parquet file pandas wrote with its index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def test_cluster_keeps_the_index_pandas_wrote(tmp_path: Path) -> None:
    src, dst = tmp_path / "run.parquet", tmp_path / "clustered.parquet"
    frame = pd.DataFrame({"qid": ["b", "a", "b", "a", "c"], "docid": list("12345"),
                          "score": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=[10, 11, 12, 13, 14])
    frame.to_parquet(src)  # index=None: a non-default index is stored as __index_level_0__
    done = subprocess.run([sys.executable, "-m", "harness", "cluster", str(src), str(dst),
                           "--batch-rows", "2"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    back = pd.read_parquet(dst)
    # each query's rows contiguous, in their original order, with the index pandas wrote
    qids = back["qid"].tolist()
    assert sum(a != b for a, b in zip(qids, qids[1:])) + 1 == len(set(qids))
    assert back.sort_index().equals(frame)
    for _, group in back.groupby("qid"):
        assert group.index.is_monotonic_increasing


def _harness(args: list[str], tmp_path: Path, columns: int = 64,
             **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", **env}
    environ.pop("LINES", None)
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, cwd=ROOT, env=environ, timeout=600)


GOLDEN = """\
Study 'default' done in <s>s: 5 ranker(s) x 5 variant(s) x 12
queries. Mean per query, * the best of each column; after each
mean its difference from 'random':

  ranker             nDCG@10          nDCG@10
                                      gain=linear
  random (baseline)  0.2786           0.3651
  noisy_oracle       0.8588  +0.5802  0.8888  +0.5237
  feature_f0         0.9549  +0.6764  0.9600* +0.5949
  top_grades         0.9564* +0.6778  0.9349  +0.5697
  relevance          0.7744  +0.4959  0.8394  +0.4743

  ranker             mnDCG@10         mnDCG@10
                                      gain=linear
  random (baseline)  0.0778           0.1877
  noisy_oracle       0.3204  +0.2427  0.5106  +0.3229
  feature_f0         0.3589  +0.2811  0.5523* +0.3646
  top_grades         0.3635* +0.2858  0.5391  +0.3514
  relevance          0.2735  +0.1957  0.4695  +0.2818

  ranker             RR
  random (baseline)  0.8287
  noisy_oracle       1.0000* +0.1713
  feature_f0         1.0000* +0.1713
  top_grades         1.0000* +0.1713
  relevance          1.0000* +0.1713

A variant's name lists only what differs from the defaults: gain
exp2 (2^rel - 1), discount log2 (1 / log2(rank + 1)), ideal
judged (IDCG over every judged document), ties average (tied
scores averaged over their orders), empty zero (a query without
relevant documents scores 0).
95% CIs and more statistics: <out>/summary.csv

Files: <out>
MLflow: not logged (tracking off).
"""


def test_closing_table_golden_at_a_fixed_width(tmp_path: Path) -> None:
    """Every variant the study computed, the best of each column starred, the differences
    from the baseline, in blocks of columns that fit 64 characters."""
    import re

    out = tmp_path / "job"
    done = _harness(["study=default", "dataset.n_queries=12", "dataset.n_train_queries=12", "metric.k=[10]",
                     "metric.ties=[average]", "metric.gain=[exp2,linear]", "metric.extra=[rr]",
                     "baseline=random", "tracking=off", "tracking.figures=off",
                     f"hydra.run.dir={out}"], tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout[done.stdout.index("Study 'default'"):]
    text = re.sub(r"done in [0-9.]+s", "done in <s>s", text).replace(str(out), "<out>")
    assert text == GOLDEN
    assert "Warnings:" not in text  # the synthetic features vary within every query


def _lightgbm_sample():  # type: ignore[no-untyped-def]
    from harness.datasets import load_dataset
    from tests.shared import shared_data_dir

    folder = shared_data_dir() / "lightgbm_lambdarank"
    return load_dataset("letor", name="lightgbm_sample", test_path=str(folder / "rank.test"),
                        train_path=str(folder / "rank.train"), n_features=300)


def test_constant_scores_and_a_feature_other_than_the_name_are_warned() -> None:
    """On lightgbm_sample f4 and f5 are 0 everywhere, so top_grades and relevance tie every
    document; feature_f0 scores f1 there (dataset.default_feature, no f0 in SVMlight)."""
    from harness.app.notes import ranker_description, study_description
    from harness.app.study import score_warnings
    from harness.metrics import parse_metric
    from harness.rankers import RankerSpec, score

    ds = _lightgbm_sample()
    record = {"dataset": {"default_feature": "f1"}}
    said = {}
    for name, feature in (("feature_f0", "f1"), ("top_grades", "f4"), ("relevance", "f5"),
                          ("feature_f1", "f1")):
        spec = RankerSpec(name, "feature", {"feature": feature})
        run, _, _, _ = score(spec, ds)
        said[name] = score_warnings(spec, run, ds, record)
    assert said["feature_f1"] == []
    assert said["feature_f0"] == [
        "ranker feature_f0 scores feature f1, not f0 as its name says (its feature is "
        "dataset.default_feature, f1 on dataset 'lightgbm_sample'; the dataset has no feature "
        "f0); set ranker.feature_f0.feature to choose"]
    for name, feature in (("top_grades", "f4"), ("relevance", "f5")):
        assert said[name] == [
            f"ranker {name}: feature {feature} is constant within each of its 50 queries, 0 "
            "on every document: every document ties, so its values are decided by the tie "
            "rule (metric.ties) alone, not by the ranker"]
    # a ranker whose scores vary is not warned about
    spec = RankerSpec("noisy", "noisy_oracle", {"sigma": 1.0})
    assert score_warnings(spec, score(spec, ds)[0], ds, record) == []
    # the runs' descriptions (MLflow's note) carry them, read from the rankers' notes
    from harness.app.ranker_notes import RankerNotes

    metric = parse_metric("ndcg@10")
    summaries, notes = {}, {}
    for name in ("feature_f0", "top_grades"):
        summaries[name] = pd.DataFrame({"mean": [0.5831], "ci_low": [0.5], "ci_high": [0.6],
                                        "n_queries": [50]}, index=[metric.display_name])
        notes[name] = RankerNotes(warnings=tuple(said[name]))
    note = ranker_description("top_grades", summaries["top_grades"], [metric], study="s",
                              dataset="lightgbm_sample", notes=notes["top_grades"])
    assert "**Warnings**" in note and said["top_grades"][0] in note
    note = study_description(summaries, [metric], study="s", dataset="lightgbm_sample",
                             title="", notes=notes)
    assert said["feature_f0"][0] in note and said["top_grades"][0] in note


def test_the_warnings_are_printed_by_a_job(tmp_path: Path) -> None:
    # ranker=contenders: on lightgbm_sample the default rankers are the LTR models
    done = _harness(["study=default", "dataset=lightgbm_sample", "ranker=contenders",
                     "metric=ndcg10", "check.sklearn=off",
                     "tracking=off", "tracking.figures=off", f"hydra.run.dir={tmp_path / 'job'}"],
                    tmp_path, columns=200)
    assert done.returncode == 0, done.stderr
    summary = done.stdout[done.stdout.index("Warnings:"):]
    for text in ("ranker feature_f0 scores feature f1, not f0 as its name says",
                 "ranker top_grades: feature f4 is constant within each of its 50 queries",
                 "ranker relevance: feature f5 is constant within each of its 50 queries"):
        assert text in summary  # in the closing summary
        assert f"[WARNING] - {text}" in done.stdout + done.stderr  # and in the job's log


def test_a_misspelt_group_option_suggests_the_closest(tmp_path: Path) -> None:
    done = _harness(["ranker=oracel", "tracking=off", f"hydra.run.dir={tmp_path / 'job'}"],
                    tmp_path)
    assert done.returncode == 1
    assert "hint: ranker=oracel: there is no ranker config 'oracel'; did you mean " \
        "ranker=oracle?" in done.stderr
    assert not (tmp_path / "job").exists()


def test_an_unknown_key_lists_the_valid_keys(tmp_path: Path) -> None:
    done = _harness(["metric.kk=5", "tracking=off", f"hydra.run.dir={tmp_path / 'job'}"],
                    tmp_path)
    assert done.returncode == 1
    assert "hint: metric.kk: metric has no key 'kk'; did you mean metric.k? Valid keys: " \
        "name, gain, discount, k, ties, ideal, unjudged, unjudged_grade, empty, max_label, " \
        "extra, nan_scores, missing" in done.stderr
    assert not (tmp_path / "job").exists()


def test_a_job_failing_validation_leaves_no_folder(tmp_path: Path) -> None:
    done = _harness(["metric.k=0", "tracking=off", f"hydra.run.dir={tmp_path / 'job'}"],
                    tmp_path)
    assert done.returncode == 2
    assert "k must be an int" in done.stdout + done.stderr
    assert not (tmp_path / "job").exists()
    # nor a baseline that is not a ranker of the study, with the ranker it meant
    done = _harness(["baseline=randon", "tracking=off", f"hydra.run.dir={tmp_path / 'b'}"],
                    tmp_path)
    assert done.returncode == 2
    assert "baseline 'randon' is not a ranker of this study (did you mean 'random'?)" \
        in done.stdout + done.stderr
    assert not (tmp_path / "b").exists()
    assert list(tmp_path.iterdir()) == []
