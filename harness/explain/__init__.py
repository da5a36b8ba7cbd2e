"""The convention diff: which option of a metric's definition moves its number, and by how
much (:func:`explain_difference`; ``harness explain``)."""

from harness.explain.shapley import DATA_OPTIONS, METRIC_OPTIONS, Explanation, explain_difference

__all__ = ["Explanation", "explain_difference", "DATA_OPTIONS", "METRIC_OPTIONS"]
