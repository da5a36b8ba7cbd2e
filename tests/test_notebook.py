"""notebooks/compare_rankers.ipynb runs top to bottom on a real sweep, in a kernel that is
this virtualenv's Python (registered once in a temporary Jupyter path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.paths import PROJECT_ROOT
from tests.test_compare import SmallSweep, small_sweep  # noqa: F401 - fixture

NOTEBOOK = PROJECT_ROOT / "notebooks" / "compare_rankers.ipynb"
KERNEL = "harness-test"


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Jupyter data folder (for ``JUPYTER_PATH``) holding the kernel ``harness-test``,
    installed by ipykernel: this interpreter."""
    prefix = tmp_path_factory.mktemp("jupyter")
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix),
                    "--name", KERNEL], check=True, capture_output=True, timeout=120)
    kernel_dir = prefix / "share" / "jupyter"
    spec = json.loads((kernel_dir / "kernels" / KERNEL / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable  # the kernel is this venv's interpreter
    return kernel_dir


def test_parameters_cell_reads_the_environment() -> None:
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    for text in ('TRACKING_URI = os.environ.get("HARNESS_TRACKING_URI"',
                 'PARENT_RUN_ID = os.environ.get("HARNESS_PARENT_RUN_ID"'):
        assert text in params.source


def test_notebook_executes_against_a_sweep(small_sweep: SmallSweep,  # noqa: F811 - fixture
                                           kernels: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import nbclient
    import nbformat

    monkeypatch.setenv("JUPYTER_PATH", str(kernels))
    monkeypatch.setenv("HARNESS_TRACKING_URI", small_sweep.uri)
    monkeypatch.setenv("HARNESS_PARENT_RUN_ID", small_sweep.parent_run_id)
    monkeypatch.setenv("HARNESS_RESAMPLES", "300")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=300,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = "".join(o.get("text", "") for o in outputs
                     if o.output_type == "stream" and o.get("name") == "stderr")
    assert "Warning" not in stderr, stderr  # e.g. tqdm's red "IProgress not found"
    # no cell hides it: importing MLflow imports tqdm.auto, which finds ipywidgets (test
    # extras) in this kernel instead of warning
    everything = json.dumps([o for o in outputs])
    assert "TqdmWarning" not in everything and "IProgress not found" not in everything
    assert not any("TqdmWarning" in c.source or "filterwarnings" in c.source
                   for c in nb.cells if c.cell_type == "code")
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "W/T/L" in html and "noisy_oracle [sigma=0.5]" in html  # the comparison table
    # harness.compare on two run files, shown as HTML: ANCE beats BM25 on all three
    assert ("<th>(b) org_manual_ance</th><td style=\"text-align:right\"><b>0.4716</b>"
            "<sup>a</sup></td>") in html
    assert "discriminative_power" in html and "feature_f0" in html
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4 + 1 + 1  # distributions, one paired difference, tau heatmap
    markdown = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert small_sweep.parent_run_id in markdown, markdown
    # a winner counts only where its lead is significant: under RR every ranker puts a
    # relevant document first (RR = 1 for all), a tie at the top
    assert "oracle wins under 9 of 10 variants" in markdown, markdown
    assert "no significant winner (a tie at the top) under 1 (RR (" in markdown, markdown


def test_nbconvert_renders_the_notebook_by_default_after_a_study(
        tmp_path: Path, kernels: Path, copy_empty_store: Callable[[Path], str]) -> None:
    """A new user's path: a study, then a newer one-ranker job, then
    ``jupyter nbconvert --execute`` with no run id: the notebook picks the newest parent a
    comparison can use and renders to HTML. (The two jobs run in this process, with the
    app's own config: what is tested is the notebook's pick and render.)"""
    from hydra import compose, initialize_config_dir

    from harness.app.config import register_configs
    from harness.app.study import run_study

    store = copy_empty_store(tmp_path)
    common = [f"tracking.uri={store}", f"tracking.artifact_root={tmp_path}/art",
              f"tracking.pending_dir={tmp_path}/pending", f"cache_dir={tmp_path}/cache",
              "tracking.figures=off", "tracking.worker=false", "dataset.n_queries=30",
              "metric=ndcg10"]
    register_configs()
    for i, extra in enumerate([[], ["ranker=oracle"]]):
        with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
            cfg = compose("config", overrides=[*extra, *common])
        result = run_study(cfg, tmp_path / f"out{i}")
        assert len(result.rankers) == (5 if i == 0 else 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HARNESS_"))}
    env |= {"JUPYTER_PATH": str(kernels), "HARNESS_TRACKING_URI": store,
            "HARNESS_RESAMPLES": "200"}
    out = tmp_path / "rendered"
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html",
                           "--execute", f"--ExecutePreprocessor.kernel_name={KERNEL}",
                           "--output-dir", str(out), str(NOTEBOOK)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (out / "compare_rankers.html").read_text()
    assert "W/T/L" in html and "top_grades" in html and "Traceback" not in html
