"""The built-in measures: one module per family, each declaring its measures with
:func:`~harness.metrics.vocabulary.measure.builtin_measure`. Importing this package imports
every module in it, so a new family is one new file; the registry
(:mod:`harness.metrics.vocabulary.registry`) then registers what they declared, ordered by
each module's ``TABLE_ORDER`` (a module without one comes last)."""

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_info.name}")
