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


#: Test modules that cost the most, most first. Under ``make test`` (pytest-xdist,
#: ``--dist loadgroup`` in collection order) they start first, so the many short tests fill
#: in around them rather than one worker waiting for the other on a long test at the end.
#: Those whose module- or session-scoped fixture runs a study or a benchmark are an xdist
#: group each: all their tests run on one worker, which sets the fixture up once.
SLOW_FIRST = ("test_readme_commands", "test_walkthrough", "test_bench_scale", "test_compare",
              "test_sweep_signals", "test_ranx_names", "test_stream", "test_ci_gate",
              "test_new_measures", "test_journeys", "test_app_e2e", "test_tracking",
              "test_launchers", "test_notebook", "test_compare_runs", "test_reproduce",
              "test_engine_agreement")
ONE_WORKER = {"test_readme_commands", "test_bench_scale", "test_compare", "test_ranx_names",
              "test_compare_runs"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    for item in items:
        if item.path.stem in ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable
