"""Summaries of per-query distributions and their figures (imported on first use, PEP 562:
``harness eval``'s output module needs neither pandas nor matplotlib)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names

_LAZY = {"ecdf_figure": "harness.reporting.figures", "STATS": "harness.reporting.summary",
         "summarize": "harness.reporting.summary"}

__all__ = ["STATS", "ecdf_figure", "summarize"]

if TYPE_CHECKING:
    from harness.reporting.figures import ecdf_figure
    from harness.reporting.summary import STATS, summarize


__getattr__ = lazy_names(__name__, _LAZY, globals())
