"""The ecosystem's doors: the objects IR practitioners already hold, read and given back.

- :mod:`harness.metrics.layout.peer_inputs`: runs and qrels as ranx, pytrec_eval, ir_measures and
  PyTerrier hold them, read by :func:`harness.evaluate` and :func:`harness.compare` (it
  lives in the metric layer, which the engine's entry point reads it from);
- :mod:`~harness.interop.tables`: per-query tables given back as a ranx ``Run``-compatible
  dict or trec_eval's ``-q`` text, and runs as TREC run files (:func:`to_trec`);
- :mod:`~harness.interop.ir_measure`: a harness definition as an ir_measures measure, which
  ``ir_measures.calc_aggregate`` and PyTerrier's ``pt.Experiment`` accept;
- :mod:`~harness.interop.ir_datasets_qrels`: qrels read through ``ir_datasets`` from its
  cache (the dataset kind ``ir_datasets``);
- :mod:`~harness.interop.mlflow_evaluator`: ``mlflow.models.evaluate(...,
  evaluators="harness")``.

docs/interop.md shows each door in a runnable example.
"""

from __future__ import annotations

from harness.lazy import lazy_names

__all__ = ["as_ir_measure", "per_query_dict", "to_trec", "read_ir_dataset",
           "HarnessEvaluator"]

__getattr__ = lazy_names(__name__, {
    "as_ir_measure": "harness.interop.ir_measure",
    "per_query_dict": "harness.interop.tables",
    "to_trec": "harness.interop.tables",
    "read_ir_dataset": "harness.interop.ir_datasets_qrels",
    "HarnessEvaluator": "harness.interop.mlflow_evaluator",
}, globals())
