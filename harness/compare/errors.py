"""Errors of ``harness.compare``: each says what was asked, what was found and what to do.

All derive from :class:`harness.errors.HarnessError` (and :class:`ValueError`), so the CLI
prints them as one line and exits 2.
"""

from __future__ import annotations

from harness.errors import HarnessError

__all__ = ["CompareError", "RunNotFound", "DatasetMismatch", "NoOverlap", "TooFewRankers",
           "UnknownName"]


class CompareError(HarnessError, ValueError):
    """Bad input to a comparison: the runs asked for cannot be compared as they are."""

    exit_code = 2


class RunNotFound(CompareError):
    """A run id or experiment that the tracking store does not hold."""


class DatasetMismatch(CompareError):
    """Runs evaluated on different datasets (different ``dataset.digest`` tags)."""


class NoOverlap(CompareError):
    """Two rankers with no query that both evaluated (with a value) under a variant."""


class TooFewRankers(CompareError):
    """Fewer than two ranker versions: nothing to compare."""


class UnknownName(CompareError):
    """A baseline ranker or a variant that the sweep does not hold, or holds ambiguously."""
