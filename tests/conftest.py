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
