"""Issue 9: figures by mode, lazy imports, quiet progress, batched MLflow logging.

Import checks run in fresh subprocesses and read ``sys.modules`` there, since this test
process has long imported everything.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import harness.paths
from harness import InputError, parse_metric
from harness.progress import Phases, progress
from harness.reporting.figures import figure_mode, headline_variants, study_figures
from harness.tracking.log_plan import batches

PROJECT = Path(harness.paths.PROJECT_ROOT)
HEAVY = ("sklearn.datasets", "matplotlib", "mlflow", "dask", "scipy.stats")


def _modules_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The top-level names of ``sys.modules`` after ``code`` ran in a fresh interpreter."""
    script = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout.splitlines()[-1]))


# --------------------------------------------------------------------------------------
# start-up


def test_import_harness_leaves_the_heavy_libraries_alone() -> None:
    loaded = _modules_after("import harness")
    assert not {m for m in HEAVY if m in loaded}
    assert "pandas" not in loaded  # the metric engine loads on first use of a name


def test_public_names_still_resolve_on_first_use() -> None:
    loaded = _modules_after("import harness\nassert harness.parse_metric('ndcg@10').k == 10\n"
                            "from harness import evaluate, evaluate_parquet, Metric")
    assert "harness.metrics.engine.evaluate" in loaded and "harness.engines.stream" in loaded
    assert not {m for m in ("mlflow", "dask", "matplotlib") if m in loaded}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = harness.nope  # type: ignore[attr-defined]


def test_the_entry_point_module_imports_no_engine() -> None:
    """What ``python -m harness --help`` and a compose-time config error pay for."""
    loaded = _modules_after("import harness.app.main")
    assert not {m for m in (*HEAVY, "pandas", "sklearn") if m in loaded}


# --------------------------------------------------------------------------------------
# figures


VARIANTS = ["ndcg@10", "ndcg@10(gain=linear)", "ndcg@5", "rr", "P@10(ties=input)"]


def _tables() -> tuple[dict[str, pd.DataFrame], list[Any]]:
    metrics = [parse_metric(v) for v in VARIANTS]
    rng = np.random.default_rng(3)
    tables = {r: pd.DataFrame({m.display_name: rng.random(40) for m in metrics})
              for r in ("a", "b")}
    tables["b"].iloc[:5, 0] = np.nan  # a variant without a value for some queries
    return tables, metrics


def test_headline_variants_are_the_default_convention_ones_per_family() -> None:
    _, metrics = _tables()
    names = [m.display_name for m in headline_variants(metrics)]
    # ndcg: both default-convention cut-offs; rr: itself; precision has only a variant
    # with an option, so its first (only) one stands for it
    assert names == ["nDCG@10", "nDCG@5", "RR", "P@10(ties=input)"]


@pytest.mark.parametrize(("mode", "expected"), [
    ("headline", {"overview.png", "family-ndcg.png"}),
    (True, {"overview.png", "family-ndcg.png"}),
    ("all", {"overview.png", "family-ndcg.png", "ndcg_at_10.png", "ndcg_at_10__gain_linear.png",
             "ndcg_at_5.png", "rr.png", "precision_at_10__ties_input.png"}),
    ("off", set()),
    (False, set()),
])
def test_figures_written_per_mode(mode: Any, expected: set[str], tmp_path: Path) -> None:
    from matplotlib.image import imread

    tables, metrics = _tables()
    paths = study_figures(tables, metrics, tmp_path / "fig", mode=mode)
    assert {p.name for p in paths} == expected
    on_disk = {p.name for p in (tmp_path / "fig").glob("*")} if expected else set()
    assert on_disk == expected
    for p in paths:
        image = imread(p)
        assert image.shape[0] > 150 and image[..., :3].std() > 0.05  # something was drawn


def test_bad_figure_mode_names_the_option() -> None:
    assert figure_mode("ALL") == "all" and figure_mode("false") == "off"
    with pytest.raises(InputError, match=r"tracking.figures must be one of headline, all, "
                                         r"off .*got 'some'"):
        figure_mode("some")


# --------------------------------------------------------------------------------------
# the app without MLflow: figures still on disk, mlflow never imported, no bars in a pipe


def _small_study(tmp: Path, figures: str) -> dict[str, Any]:
    return {
        "study": "speed", "seed": 0, "cache_dir": str(tmp / "cache"),
        "dataset": {"kind": "synthetic", "name": "synthetic", "n_queries": 30,
                    "n_train_queries": 0},
        "ranker": {"oracle": {"kind": "oracle"}, "random": {"kind": "random", "seed": 1}},
        "metric": {"name": "ndcg", "gain": "exp2", "discount": "log2", "k": [5, 10],
                   "ties": "average", "ideal": "judged"},
        "tracking": {"enabled": False, "figures": figures, "bootstrap_resamples": 50},
        "check": {"sklearn": "fail", "tolerance": 1e-9},
    }


def test_tracking_off_never_imports_mlflow_and_still_draws(tmp_path: Path) -> None:
    cfg = _small_study(tmp_path, "all")
    code = (f"import json, pathlib\nfrom harness.app.study import run_study\n"
            f"r = run_study(json.loads({json.dumps(json.dumps(cfg))}), "
            f"pathlib.Path({str(tmp_path / 'out')!r}))\nassert r.run_ids == {{}}")
    loaded = _modules_after(code)
    assert "mlflow" not in loaded
    assert "matplotlib" in loaded  # the positive control: figures were drawn
    drawn = {p.name for p in (tmp_path / "out" / "figures").glob("*.png")}
    assert drawn == {"overview.png", "family-ndcg.png", "ndcg_at_5.png", "ndcg_at_10.png"}


def test_no_progress_bars_when_stderr_is_a_pipe(tmp_path: Path) -> None:
    cfg = _small_study(tmp_path, "off")
    code = (f"import json, logging, pathlib\nlogging.basicConfig(level=logging.INFO)\n"
            f"from harness.app.study import run_study\n"
            f"run_study(json.loads({json.dumps(json.dumps(cfg))}), "
            f"pathlib.Path({str(tmp_path / 'out')!r}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ranker oracle" in proc.stderr  # logs arrive (basicConfig logs to stderr) ...
    assert "phases: setup" in proc.stderr  # ... with the per-phase timing line
    assert "\r" not in proc.stderr and "rankers:" not in proc.stderr  # ... but no bar


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    items = [1, 2, 3]
    assert progress(items, desc="work") is items  # not even wrapped
    terminal = _FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert list(progress(items, desc="work")) == items
    assert "work:" in terminal.getvalue() and "/3 [" in terminal.getvalue()  # a bar
    assert pipe.getvalue() == ""


def test_phases_add_up_per_name_in_first_run_order() -> None:
    phases = Phases()
    phases.add("score", 0.25)
    phases.add("check", 1.5)
    phases.add("score", 0.5)
    assert phases.line() == "phases: score 0.75s, check 1.50s (slowest: check)"


# --------------------------------------------------------------------------------------
# MLflow batching


def test_log_batches_respect_mlflow_limits_and_order() -> None:
    params, metrics = list(range(250)), list(range(1900))
    calls = batches(params, metrics)
    # worked by hand: 100 params leave room for 900 metrics, twice; then 50 params + 100
    assert [(len(p), len(m)) for p, m in calls] == [(100, 900), (100, 900), (50, 100)]
    assert [x for p, _ in calls for x in p] == params
    assert [x for _, m in calls for x in m] == metrics
    assert batches([], list(range(2500))) == [([], list(range(1000))),
                                              ([], list(range(1000, 2000))),
                                              ([], list(range(2000, 2500)))]
    assert batches([], []) == []



# --------------------------------------------------------------------------------------
# the sklearn ranker: staged training behind a bar fits the same model


@pytest.mark.parametrize("n_rows", [600, 12_000])  # early stopping is on above 10,000 rows
def test_staged_fit_gives_the_model_of_one_fit(n_rows: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from sklearn.ensemble import HistGradientBoostingRegressor

    from harness.rankers import fit

    rng = np.random.default_rng(7)
    X = rng.normal(size=(n_rows, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(0, 0.5, n_rows)), 0, 4)
    one = HistGradientBoostingRegressor(max_iter=35, random_state=0).fit(X, y)
    monkeypatch.setattr(sys, "stderr", _FakeTerminal())  # a bar is drawn
    staged = fit(HistGradientBoostingRegressor(max_iter=35, random_state=0), X, y,
                 staged=True)
    assert "train:" in sys.stderr.getvalue()  # type: ignore[attr-defined]
    assert staged.do_early_stopping_ == (n_rows > 10_000)
    assert staged.n_iter_ == one.n_iter_
    assert staged.get_params()["max_iter"] == 35 and staged.get_params()["warm_start"] is False
    np.testing.assert_array_equal(staged.predict(X), one.predict(X))


def test_threads_option_scores_the_same_and_is_checked(tmp_path: Path) -> None:
    from threadpoolctl import threadpool_limits

    from harness.app.study import validate
    from harness.datasets import load_dataset
    from harness.rankers import RankerSpec, score

    ds = load_dataset("synthetic", name="s", n_queries=20, n_train_queries=40)
    opts = {"estimator": "hist_gradient_boosting", "params": {"max_iter": 15}}
    # two threads (conftest.py sets OMP_NUM_THREADS=1 for the suite) against one
    with threadpool_limits(limits=2, user_api="openmp"):
        free, _, _, _ = score(RankerSpec("h", "sklearn", opts), ds)
    one, _, _, _ = score(RankerSpec("h", "sklearn", {**opts, "threads": 1}), ds)
    np.testing.assert_array_equal(free["score"].to_numpy(), one["score"].to_numpy())
    cfg = _small_study(tmp_path, "off")
    cfg["ranker"] = {"h": {"kind": "sklearn", "threads": 0}}
    with pytest.raises(InputError, match=r"ranker 'h': threads must be >= 1"):
        validate(cfg)


def test_mlflow_artifact_bars_off_unless_a_terminal_or_the_user_asks() -> None:
    code = ("import os, harness\n"
            "print(os.environ.get('MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR'))")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"}
    piped = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert piped.stdout.split() == ["false"], piped.stderr
    chosen = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True,
                            env={**env, "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "true"},
                            text=True, timeout=120)
    assert chosen.stdout.split() == ["true"], chosen.stderr
