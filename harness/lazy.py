"""Public names a package imports on first use (PEP 562), so that importing the package
costs nothing until a name is used: ``harness eval`` reads the metric engine's definitions
without importing pandas, which only the per-query tables need."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, names: dict[str, str], namespace: dict[str, Any]
               ) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a name of ``names`` (name -> module that
    defines it) is imported when first used, then kept in ``namespace`` (the package's
    ``globals()``), so later look-ups skip this function.

    >>> import harness.metrics
    >>> harness.metrics.parse_metric("ndcg@10").display_name
    'nDCG@10'
    """
    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
