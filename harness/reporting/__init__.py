"""Summaries of per-query distributions and their figures."""

from harness.reporting.figures import ecdf_figure
from harness.reporting.summary import STATS, summarize

__all__ = ["STATS", "ecdf_figure", "summarize"]
