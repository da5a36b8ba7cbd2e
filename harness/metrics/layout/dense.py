"""The 2-D arrays :func:`harness.evaluate_dense` takes, checked: a rectangle of numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.errors import InputError

__all__ = ["dense_array"]


def dense_array(name: str, values: Any) -> np.ndarray:
    """A 2-D float array, or an InputError naming the argument and the row that breaks it
    (a list of another length, a value that is not a number)."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (ValueError, TypeError):
        pass
    rows = list(values) if not isinstance(values, np.ndarray) else list(values)
    lengths = [len(r) if hasattr(r, "__len__") and not isinstance(r, str) else None
               for r in rows]
    if lengths and lengths[0] is not None and any(n != lengths[0] for n in lengths):
        i = next(i for i, n in enumerate(lengths) if n != lengths[0])
        raise InputError(f"{name} must be a rectangle of lists of one length (pad and mask "
                         f"shorter lists): row 0 has {lengths[0]} items, row {i} has "
                         f"{lengths[i]}", column=name, row=i)
    for i, row in enumerate(rows):
        for j, value in enumerate(row if lengths[i] is not None else [row]):
            try:
                float(value)
            except (ValueError, TypeError):
                raise InputError(f"{name} must hold numbers, got {value!r} at row {i}, item "
                                 f"{j}", column=name, row=i) from None
    raise InputError(f"{name} cannot be read as a 2-D array of numbers", column=name)
