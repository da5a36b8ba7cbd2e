"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared import shared_data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only reference-data folder (never skipped: a missing folder fails)."""
    try:
        return shared_data_dir()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
