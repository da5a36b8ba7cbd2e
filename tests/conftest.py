"""Shared fixtures."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# keras_rs is checked on JAX's CPU build; keras reads its backend once, at first import.
os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# One OpenMP (and BLAS) thread in every test process and the commands they start: the
# xdist workers already fill the cores, and OpenMP threads on busy cores spin-wait on
# each other (a 0.4 s HistGradientBoosting fit took 67 s). Tests of thread counts set them.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest

from tests.shared import shared_data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only reference-data folder (never skipped: a missing folder fails)."""
    try:
        return shared_data_dir()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def copy_empty_store(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], str]:
    """Puts ``mlflow.db`` in a folder: a copy of an empty SQLite store whose schema MLflow
    built once per worker; returns its URI. For tests of something other than a store's
    creation (tests/test_journeys.py starts jobs on a fresh one): MLflow builds a new store
    with its ~50 migrations, seconds in every process that finds it empty."""
    from mlflow.tracking import MlflowClient

    template = tmp_path_factory.mktemp("empty_store") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{template}").search_experiments()

    def copy(folder: Path) -> str:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, folder / "mlflow.db")
        return f"sqlite:///{folder / 'mlflow.db'}"

    return copy


#: The test modules whose tests (or module fixtures) cost the most, costliest first: with
#: ``--dist loadfile`` (make test) each module runs on one worker, so its module and session
#: fixtures are built once, not once per worker, and these start first instead of leaving
#: one worker alone with a long module at the end. From a full run's ``--durations``.
#: (``--no-loadscope-reorder`` in the Makefile: else xdist hands out the modules with the
#: most tests first, whatever this order says.)
SLOW_FIRST = ("test_readme_commands", "test_sweep_signals", "test_journeys", "test_compare",
              "test_ranx_names", "test_compare_runs", "test_kill_resume", "test_reproduce",
              "test_judgment_interval", "test_tracking_claims",
              "test_app_e2e", "test_bench_scale", "test_engines", "test_tracking_worker",
              "test_report", "test_sweep_truth", "test_tracking", "test_dask_engine",
              "test_app_config", "test_launchers", "test_properties", "test_notebook",
              "test_app_speed", "test_app_judgments", "test_ltr_rankers", "test_blocked_evaluate",
              "test_explain", "test_console_report", "test_ci_gate", "test_stream",
              "test_datasets", "test_config_values")

#: Modules that call ranx in their own process, run last: on a fresh venv ranx's numba
#: functions compile on first use (about a minute) and are saved in numba's on-disk cache;
#: test_ranx_names, early in :data:`SLOW_FIRST`, compiles every one of them, so these load
#: them from the cache on either worker instead of compiling them again at the same time.
RANX_AFTER = ("test_measure_names", "test_interop_inputs", "test_fusion", "test_tie_conventions",
              "test_peer_edges")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    rank |= {name: len(rank) + 1 for name in RANX_AFTER}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).stem, len(SLOW_FIRST)))


# --- scompare (issue 38: compare, reproduce, datasets): commands in the test's own process ---

@contextlib.contextmanager
def mlflow_env_kept() -> Iterator[None]:
    """Puts the ``MLFLOW_*`` variables of ``os.environ`` back as they were on leaving: a
    study or a command run in the test's process sets MLflow's HTTP timeouts there."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("MLFLOW_")]:
            del os.environ[key]
        os.environ.update(saved)


@pytest.fixture
def kept_mlflow_env() -> Iterator[None]:
    """:func:`mlflow_env_kept` around a test that calls a command's entry point."""
    with mlflow_env_kept():
        yield


@pytest.fixture(scope="session")
def study_here() -> Callable[[list[str], Path], Any]:
    """Runs a study in this process, its config composed from command-line overrides as
    ``harness run`` composes it, into an output folder; returns its ``StudyResult``. For
    tests of what a job computes and logs rather than of its process: the worker has paid
    the imports a ``python -m harness`` pays again (seconds each)."""
    from hydra import compose, initialize_config_dir

    from harness.app.config import register_configs
    from harness.app.study import run_study
    from harness.paths import PROJECT_ROOT

    register_configs()

    def run(overrides: list[str], out: Path) -> Any:
        with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
            cfg = compose("config", overrides=overrides)
        with mlflow_env_kept():
            return run_study(cfg, out)

    return run


# --- ssweeps (issue 38: the CPU of the sweep, signal and tracking modules) ----------------


@pytest.fixture
def sync_in_process() -> Callable[..., tuple[int, str]]:
    """``harness sync ARGS`` run by the command line's own entry in this process, whose
    imports are paid: its exit code and everything it said (stdout, stderr, its log). For
    tests of what a sync sends; a real ``python -m harness sync`` costs ~4 s of CPU in
    imports (tests/test_kill_resume.py and tests/test_tracking_claims.py start real ones)."""
    import io
    import logging
    from unittest import mock

    from harness.commands.dispatch import main

    def sync(*args: str) -> tuple[int, str]:
        said = io.StringIO()
        handler = logging.StreamHandler(said)
        logger = logging.getLogger("harness.sync")
        level = logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:  # it sets MLflow's HTTP limits in the environment: put back afterwards
            with mock.patch.dict(os.environ), contextlib.redirect_stdout(said), \
                    contextlib.redirect_stderr(said):
                code = main(["sync", *args])
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
        return code, said.getvalue()

    return sync
