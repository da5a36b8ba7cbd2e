"""The engine: metrics evaluated over a laid-out run, per query, and aggregated.

:mod:`.evaluate` holds the public entry points (``evaluate``, ``evaluate_dense``,
``aggregate``, ``tie_interval``); :mod:`.kernels` applies a measure to a ranking;
:mod:`.weighting` averages over queries; :mod:`.blocked` evaluates a large run in blocks of
whole queries; :mod:`.columns` evaluates several score columns of one run together;
:mod:`.background` runs validation on the other core.
"""
