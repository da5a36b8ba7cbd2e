"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

# keras_rs is checked on JAX's CPU build; keras reads its backend once, at first import.
os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest

from tests.shared import shared_data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only reference-data folder (never skipped: a missing folder fails)."""
    try:
        return shared_data_dir()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


#: The test modules whose tests (or module fixtures) cost the most, costliest first: with
#: ``--dist loadfile`` (make test) each module runs on one worker, so its module and session
#: fixtures are built once, not once per worker, and these start first instead of leaving
#: one worker alone with a long module at the end. From a full run's ``--durations``.
SLOW_FIRST = ("test_readme_commands", "test_bench_scale", "test_compare", "test_walkthrough",
              "test_ltr_rankers", "test_ranx_names", "test_sweep_signals", "test_measure_names",
              "test_ci_gate", "test_interop_inputs", "test_peer_edges", "test_app_e2e",
              "test_fusion", "test_notebook", "test_launchers", "test_journeys", "test_stream",
              "test_tracking", "test_compare_runs")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).stem, len(rank)))
