"""Checks of the options whose values are numbers: those trec_eval takes as measure
parameters, a positive number (``mult``, ``beta``), utility's four ``weights`` and the
recall ``levels`` of an interpolated-precision average; and grades (``min_label``,
``unjudged_grade``, the top grade ``max_label``). Each names its option in its one-line error."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from harness.errors import MetricDefinitionError

__all__ = ["positive", "weights_check", "levels_check", "number_list", "grade_check",
           "top_grade_check"]


def positive(option: str) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = math.nan
        if isinstance(value, (bool, np.bool_)) or not (math.isfinite(x) and x > 0):
            raise MetricDefinitionError(f"{option} must be a finite number > 0, got {value!r}")
        return x

    return check


def _numbers(value: Any) -> tuple[Any, ...] | None:
    """A sequence of numbers as a tuple (text ``'(1,-1,0,0)'`` or ``'1,-1,0,0'`` too), or
    None when it is not one."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        value = [v for v in text.split(",") if v.strip()]
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        return None
    try:
        items = tuple(value)
        numbers = tuple(float(v) for v in items)
    except (TypeError, ValueError):
        return None
    if any(isinstance(v, (bool, np.bool_)) for v in items):
        return None
    return numbers


def weights_check(value: Any) -> tuple[float, ...]:
    numbers = _numbers(value)
    if numbers is None or len(numbers) != 4 or not all(map(math.isfinite, numbers)):
        raise MetricDefinitionError(
            f"weights must be 4 finite numbers (a, b, c, d), got {value!r}")
    return numbers


def levels_check(value: Any) -> tuple[float, ...]:
    numbers = _numbers(value)
    if numbers is None or not numbers or not all(0.0 <= v <= 1.0 for v in numbers):
        raise MetricDefinitionError(
            f"levels must be one or more recall levels in [0, 1], got {value!r}")
    return tuple(sorted(numbers))


def number_list(value: str) -> tuple[float, ...]:
    numbers = _numbers(value)
    if numbers is None:
        raise ValueError(value)
    return numbers


def grade_check(option: str, allow_none: bool = False) -> Callable[[Any], float | None]:
    """A check of a grade: a finite number >= 0 (or None)."""
    def check(value: Any) -> float | None:
        if value is None and allow_none:
            return None
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = math.nan
        if isinstance(value, (bool, np.bool_)) or not (math.isfinite(x) and x >= 0):
            raise MetricDefinitionError(f"{option} must be a number >= 0"
                                        f"{' or None' if allow_none else ''}, got {value!r}")
        return x

    return check


def top_grade_check(value: Any) -> float | None:
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise MetricDefinitionError(f"max_label must be a number, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise MetricDefinitionError(f"max_label must be finite and > 0, got {value!r}")
    return x
