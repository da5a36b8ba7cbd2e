"""The measure registry: each measure is one declaration.

A :class:`Measure` names the measure (canonical name, display name, aliases), the options
that change its number (declared in :mod:`harness.metrics.vocabulary.options`), whether it is binary
(``label >= level``), graded, cut at ``k``, whether it reads which ranked documents are
judged, its formula for the docs, and its kernel. :class:`~harness.Metric`,
:func:`~harness.parse_metric`, :func:`~harness.evaluate`, the Hydra ``metric`` config and the
report read measures from here only; the built-in ones are declared in
:mod:`harness.metrics.measures`.

Users add their own with :func:`register_measure`:

>>> import numpy as np
>>> from harness.metrics.vocabulary.registry import register_measure, unregister_measure
>>> @register_measure("in_top", display="InTop", binary=True,
...                   formula="number of relevant documents in the top k")
... def in_top(x):
...     return x.top_k_sum(x.relevant()), x.n_relevant() == 0
>>> unregister_measure("in_top")
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from harness.errors import MetricDefinitionError
from harness.metrics.vocabulary.measure import (
    DECLARED,
    Cache,
    Kernel,
    Measure,
    MeasureInput,
    make_measure,
)

__all__ = ["Measure", "MeasureInput", "Cache", "register_measure", "unregister_measure",
           "get_measure", "lookup", "measures", "measure_table", "load_plugins",
           "ENTRY_POINT_GROUP"]

_REGISTRY: dict[str, Measure] = {}
_ALIASES: dict[str, str] = {}


def register_measure(name: str, kernel: Kernel | None = None, *, display: str | None = None,
                     options: Iterable[str] = ("empty", "empty_weight"),
                     aliases: Iterable[str] = (), cutoff: bool = True, binary: bool = False,
                     graded: bool = False, reads_judged: bool = False, top_grade: bool = False,
                     reads_top_k: bool = False, formula: str = "", matches: str = "",
                     sklearn: bool = False,
                     aggregate: str = "mean", unjudged_bounds: str = "",
                     unit_range: bool = False, subtopics: bool = False, replace: bool = False,
                     builtin: bool = False) -> Any:
    """Declare a measure, usable by name everywhere a metric is named.

    Called with a kernel it registers it and returns the :class:`Measure`; without one it
    is a decorator that registers the function and returns it unchanged. The kernel gets a
    :class:`MeasureInput` and returns ``(values, empty)``: per query code, the value and
    whether the query has no relevant document. ``options`` lists what changes the number
    (default: the empty policy only; ``binary=True`` adds ``level``). A name or alias
    already taken raises unless ``replace=True``.
    """
    def add(fn: Kernel) -> Measure:
        spec = make_measure(name, fn, display=display, options=options, aliases=aliases,
                            cutoff=cutoff, binary=binary, graded=graded,
                            reads_judged=reads_judged, reads_top_k=reads_top_k,
                            top_grade=top_grade, formula=formula, matches=matches,
                            sklearn=sklearn, aggregate=aggregate,
                            unjudged_bounds=unjudged_bounds, unit_range=unit_range,
                            subtopics=subtopics, builtin=builtin)
        return _add(spec, replace=replace)

    if kernel is not None:
        return add(kernel)

    def decorator(fn: Kernel) -> Kernel:
        add(fn)
        return fn

    return decorator


def _add(spec: Measure, *, replace: bool = False) -> Measure:
    _builtins()
    spellings = {spec.name, spec.display.lower(), *(a.lower() for a in spec.aliases)}
    if not replace:
        taken = sorted(s for s in spellings if s in _ALIASES)
        if taken:
            raise MetricDefinitionError(
                f"measure {spec.name!r}: {', '.join(map(repr, taken))} already name(s) "
                f"measure {_ALIASES[taken[0]]!r}; pass replace=True to replace it")
    elif spec.name in _REGISTRY:
        unregister_measure(spec.name)
    _REGISTRY[spec.name] = spec
    for s in spellings:
        _ALIASES[s] = spec.name
    return spec


_loaded = False


def _builtins() -> None:
    """Register the built-in measures, once: importing :mod:`harness.metrics.measures`
    declares them (:func:`~harness.metrics.vocabulary.measure.builtin_measure`)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import sys

    import harness.metrics.measures  # noqa: F401 - its modules declare the built-ins

    def family(declared: tuple[str, Measure]) -> int:  # its module's place in the table
        return int(getattr(sys.modules.get(declared[0]), "TABLE_ORDER", 1_000))

    for _, spec in sorted(DECLARED, key=family):  # stable: a family's own order kept
        _add(spec)


def unregister_measure(name: str) -> None:
    """Remove a measure registered by :func:`register_measure` (not a built-in one)."""
    _builtins()
    spec = _REGISTRY.get(name)
    if spec is None:
        raise MetricDefinitionError(f"no measure {name!r} is registered")
    if spec.builtin:
        raise MetricDefinitionError(f"measure {name!r} is built in and cannot be removed")
    del _REGISTRY[name]
    for alias in [a for a, n in _ALIASES.items() if n == name]:
        del _ALIASES[alias]


def lookup(spelling: str) -> Measure | None:
    """The measure a name or alias stands for (case-insensitive), or None; installed
    plugins (:func:`load_plugins`) are looked at when the name is not found."""
    _builtins()
    name = _ALIASES.get(spelling.strip().lower())
    if name is None and not _plugins_loaded:
        load_plugins()
        name = _ALIASES.get(spelling.strip().lower())
    return None if name is None else _REGISTRY[name]


#: The entry-point group through which installed packages declare measures: a package's
#: ``[project.entry-points."harness.measures"]`` table names modules that call
#: :func:`register_measure` when imported. They are imported the first time a name is not
#: found, so the app and every command know them without any configuration.
ENTRY_POINT_GROUP: Final = "harness.measures"
_plugins_loaded = False


def load_plugins() -> None:
    """Import the modules installed packages declare under :data:`ENTRY_POINT_GROUP`."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:  # a broken plugin names itself, not a traceback
            raise MetricDefinitionError(
                f"the measures of {ep.name!r} ({ep.value}, entry point group "
                f"{ENTRY_POINT_GROUP!r}) failed to load: {type(exc).__name__}: {exc}") from exc


def get_measure(name: str) -> Measure:
    """The measure ``name`` (or an alias) stands for; raises naming the known ones."""
    spec = lookup(name) if isinstance(name, str) else None
    if spec is None and isinstance(name, str) and not _plugins_loaded:
        load_plugins()
        spec = lookup(name)
    if spec is None:
        raise MetricDefinitionError(f"unknown metric {name!r}; known metrics: "
                                    f"{', '.join(_REGISTRY)}")
    return spec


def measures() -> tuple[Measure, ...]:
    """Every registered measure, built-in ones first, in declaration order."""
    _builtins()
    return tuple(_REGISTRY.values())


def measure_table() -> str:
    """The Markdown table of every registered measure, as docs/measures.md shows it."""
    rows = ["| measure | aliases | k | relevance | options | formula | tested against |",
            "|---|---|---|---|---|---|---|"]
    for m in measures():
        kind = "binary (label ≥ level)" if m.binary else ("graded" if m.graded else "–")
        opts = ", ".join(o for o in m.options if o not in ("ties", "seed", "unjudged_grade"))
        rows.append(f"| `{m.display}` (`{m.name}`) | {', '.join(f'`{a}`' for a in m.aliases)} "
                    f"| {'yes' if m.cutoff else 'no'} | {kind} | {opts} | {m.formula} "
                    f"| {m.matches} |")
    return "\n".join(rows) + "\n"


#: How the docs mark the generated table.
TABLE_MARKERS: Final = ("<!-- measures:begin -->", "<!-- measures:end -->")
