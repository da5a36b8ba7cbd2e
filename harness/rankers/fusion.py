"""Kind ``fusion``: one run from the runs of other rankers (RRF, CombSUM, CombMNZ, CombMAX,
weighted sum), each input's scores normalised per query first.

Inputs are rankers of any kind, named under the option ``inputs``: a mapping of a name to
a ranker's options (``${ranker.bm25}`` in a config reuses a ranker of the study) or to a
run file's path. The definitions are ranx's (``ranx.fuse``), checked against it in
tests/test_fusion.py:

- normalisations per query of one input: ``min-max`` (s - min) / (max - min), ``max``
  s / max, ``sum`` (s - min) / (sum - n min), ``z-score`` (s - mean) / std (population),
  ``rank`` 1 - i / n (i = 0 for the first document), ``none``; a denominator below 1e-9
  counts as 1e-9;
- methods, over the inputs that retrieved the document: ``rrf`` sum of 1 / (k + rank)
  (no normalisation: ranks only), ``combsum`` sum, ``combmnz`` sum times their number,
  ``combmax`` maximum, ``wsum`` sum of weight x score.

With ``tune`` (method ``wsum``), the weights are chosen on the dataset's training queries
(each input scores the train split) by ranx's grid (``ranx.optimize_fusion``: each weight
in 0, step, ..., 1, the combinations summing to 1; the last best on a tie, as ranx), under
any metric variant (``tune: {metric: "ndcg@10", convention: ranx, step: 0.1}``).

Ranks within an input follow trec_eval's order: score descending, equal scores by docid
descending (ranx leaves equal scores in its sort's order, so its ranks of tied documents
may differ). Ties in the fused scores are the study's to break (``metric.ties``), as for
any ranker.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.datasets import Dataset
from harness.errors import InputError

__all__ = ["METHODS", "NORMS", "fuse", "normalise", "fusion", "weight_grid", "tune_weights",
           "check_fusion", "input_specs"]

METHODS = ("rrf", "combsum", "combmnz", "combmax", "wsum")
NORMS = ("min-max", "z-score", "sum", "max", "rank", "none")
_FLOOR = 1e-9  # ranx's floor of a normaliser's denominator


def _ordered(run: pd.DataFrame) -> pd.DataFrame:
    """``run`` by query, score descending, equal scores by docid descending; ``pos`` is a
    document's 0-based rank and ``n`` its query's length."""
    out = run[["qid", "docid", "score"]].sort_values(
        ["qid", "score", "docid"], ascending=[True, False, False], kind="stable")
    out = out.reset_index(drop=True)
    grouped = out.groupby("qid", sort=False)
    return out.assign(pos=grouped.cumcount().to_numpy(),
                      n=grouped["score"].transform("size").to_numpy())


def normalise(run: pd.DataFrame, norm: str) -> np.ndarray:
    """The scores of ``run`` (as :func:`_ordered` returns it) normalised per query."""
    s = run["score"].to_numpy(dtype=np.float64)
    if norm == "none":
        return s
    if norm == "rank":
        return 1.0 - run["pos"].to_numpy() / run["n"].to_numpy()
    g = run.groupby("qid", sort=False)["score"]
    lo = g.transform("min").to_numpy()
    if norm == "min-max":
        return (s - lo) / np.maximum(g.transform("max").to_numpy() - lo, _FLOOR)
    if norm == "max":
        return s / np.maximum(g.transform("max").to_numpy(), _FLOOR)
    if norm == "sum":
        total = g.transform("sum").to_numpy() - lo * run["n"].to_numpy()
        return (s - lo) / np.maximum(total, _FLOOR)
    mean = g.transform("mean").to_numpy()
    return (s - mean) / np.maximum(g.transform(lambda x: np.std(x.to_numpy())).to_numpy(),
                                   _FLOOR)


def fuse(runs: Mapping[str, pd.DataFrame], method: str = "rrf", norm: str = "min-max", *,
         k: float = 60, weights: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One run (``qid``, ``docid``, ``score``) from ``runs`` by ``method`` after ``norm``;
    the documents are the union of the inputs', by query."""
    parts = []
    for name, run in runs.items():
        ordered = _ordered(run)
        if method == "rrf":
            value = 1.0 / (k + ordered["pos"].to_numpy() + 1.0)
        else:
            value = normalise(ordered, norm)
        if method == "wsum":
            value = value * float((weights or {})[name])
        parts.append(pd.DataFrame({"qid": ordered["qid"].to_numpy(),
                                   "docid": ordered["docid"].to_numpy(), "value": value}))
    every = pd.concat(parts, ignore_index=True)
    g = every.groupby(["qid", "docid"], sort=True)["value"]
    if method == "combmax":
        fused = g.max()
    elif method == "combmnz":
        fused = g.sum() * g.count()
    else:
        fused = g.sum()
    return fused.rename("score").reset_index()


def _input_spec(spec: Any, name: str, value: Any) -> Any:
    make = type(spec)  # RankerSpec (passed in, so that this module does not import it)
    label = f"{spec.name}.inputs.{name}"
    if isinstance(value, str):
        return make(label, "run_file", {"path": value})
    if not isinstance(value, Mapping) or "kind" not in value:
        raise InputError(f"ranker {spec.name!r}: input {name!r} must be a run file's path or "
                         f"a ranker's options with its kind, got {value!r}",
                         key=f"ranker.{label}")
    options = {k: v for k, v in value.items() if k != "kind" and v not in (None, {})}
    return make(label, str(value["kind"]), options)


def input_specs(spec: Any) -> dict[str, Any]:
    """The fused rankers by name, as specs (their names ``<fusion>.inputs.<name>``)."""
    inputs = spec.require("inputs")
    if not isinstance(inputs, Mapping) or len(inputs) < 2:
        raise InputError(f"ranker {spec.name!r}: inputs must name two rankers or run files "
                         f"or more, got {inputs!r}", key=f"ranker.{spec.name}.inputs")
    return {str(name): _input_spec(spec, str(name), value) for name, value in inputs.items()}


def check_fusion(spec: Any) -> dict[str, Any]:
    """The inputs' specs, once the fusion's options are checked (before any data is read)."""
    specs = input_specs(spec)
    _options(spec, list(specs))
    if spec.option("tune") and str(spec.option("method", "rrf")) != "wsum":
        raise InputError(f"ranker {spec.name!r}: tune chooses wsum's weights; method is "
                         f"{spec.option('method', 'rrf')}", key=f"ranker.{spec.name}.tune")
    return specs


def _options(spec: Any, names: list[str]) -> dict[str, Any]:
    method = str(spec.option("method", "rrf"))
    if method not in METHODS:
        raise InputError(f"ranker {spec.name!r}: unknown fusion method {method!r}; known: "
                         f"{', '.join(METHODS)}", key=f"ranker.{spec.name}.method")
    norm = str(spec.option("norm", "none" if method == "rrf" else "min-max"))
    if norm not in NORMS:
        raise InputError(f"ranker {spec.name!r}: unknown normalisation {norm!r}; known: "
                         f"{', '.join(NORMS)}", key=f"ranker.{spec.name}.norm")
    weights = dict(spec.option("weights", {}) or {})
    if method == "wsum" and not spec.option("tune"):
        missing = [n for n in names if n not in weights]
        if missing:
            raise InputError(f"ranker {spec.name!r}: method wsum needs a weight for input "
                             f"{missing[0]!r}", key=f"ranker.{spec.name}.weights.{missing[0]}")
    unknown = [n for n in weights if n not in names]
    if unknown:
        raise InputError(f"ranker {spec.name!r}: a weight for {unknown[0]!r}, which is not an "
                         f"input ({', '.join(names)})", key=f"ranker.{spec.name}.weights")
    k = float(spec.option("rrf_k", 60))
    if k < 0:
        raise InputError(f"ranker {spec.name!r}: rrf_k must be >= 0, got {k:g}",
                         key=f"ranker.{spec.name}.rrf_k")
    return {"method": method, "norm": norm, "k": k, "weights": weights}


def weight_grid(step: float, n: int) -> list[tuple[float, ...]]:
    """ranx's candidate weights: 0, step, ..., 1 for each of ``n`` inputs, the combinations
    whose sum is 1."""
    digits = str(step)[::-1].find(".")
    values = [round(float(x), digits) for x in np.arange(0, 1 + step, step)]
    return [w for w in itertools.product(values, repeat=n) if sum(w) == 1.0]


def _train_view(spec: Any, ds: Dataset) -> Dataset:
    """``ds`` with its train split as the split scored (and judged by its labels)."""
    train = ds.split("train")
    if len(train) == 0:
        raise InputError(f"ranker {spec.name!r}: tune chooses weights on the training queries; "
                         f"dataset {ds.name!r} has no train split", key=f"ranker.{spec.name}.tune")
    return dataclasses.replace(
        ds, docs=pd.concat([train, train.assign(split="test")], ignore_index=True),
        qrels=train[["qid", "docid", "label"]].reset_index(drop=True),
        digest=f"{ds.digest}:train")


def tune_weights(spec: Any, ds: Dataset, specs: Mapping[str, Any], norm: str, score: Any
                 ) -> tuple[dict[str, float], float, int]:
    """The weights of the best weighted sum on the training queries, its value and the
    number of those queries."""
    from harness.metrics import parse_metric
    from harness.metrics.engine.evaluate import aggregate, evaluate

    tune = dict(spec.option("tune", {}) or {})
    unknown = sorted(set(tune) - {"metric", "convention", "step"})
    if unknown:
        raise InputError(f"ranker {spec.name!r}: tune has no option {unknown[0]!r} (metric, "
                         "convention, step)", key=f"ranker.{spec.name}.tune.{unknown[0]}")
    options = {"convention": str(tune["convention"])} if tune.get("convention") else {}
    metric = parse_metric(str(tune.get("metric", "ndcg@10")), **options)
    step = float(tune.get("step", 0.1))
    if not 0 < step <= 0.5:
        raise InputError(f"ranker {spec.name!r}: tune.step must be in (0, 0.5], got {step:g}",
                         key=f"ranker.{spec.name}.tune.step")
    grid = weight_grid(step, len(specs))
    if not grid:  # no candidate: step does not divide 1
        raise InputError(f"ranker {spec.name!r}: no weights in steps of {step:g} sum to 1; "
                         "give a tune.step that divides 1 (0.1, 0.2, 0.25, 0.5)",
                         key=f"ranker.{spec.name}.tune.step")
    view = _train_view(spec, ds)
    runs = {name: score(sub, view)[0] for name, sub in specs.items()}
    best: tuple[float, ...] = ()
    best_value = -np.inf
    for weights in grid:
        fused = fuse(runs, "wsum", norm, weights=dict(zip(runs, weights, strict=True)))
        summary = aggregate(evaluate(fused, view.qrels, metrics=[metric]))
        value = float(summary.loc[metric.display_name, "mean"])
        if value >= best_value:
            best, best_value = weights, value
    return dict(zip(runs, best, strict=True)), best_value, int(view.qrels["qid"].nunique())


def fusion(spec: Any, ds: Dataset, score: Any) -> tuple[pd.DataFrame, dict[str, str]]:
    """The registry's entry: score every input on ``ds`` (``score``: harness.rankers's),
    then fuse their runs; with ``tune``, the weights chosen on the training queries first.
    Returns the fused run and the ``fusion.*`` tags of its MLflow run (the tuned weights;
    empty without ``tune``)."""
    specs = check_fusion(spec)
    options = _options(spec, list(specs))
    tags: dict[str, str] = {}
    if spec.option("tune"):
        options["weights"], value, n = tune_weights(spec, ds, specs, options["norm"], score)
        tags = {"fusion.weights": json.dumps(options["weights"]),
                "fusion.tuned_value": repr(value), "fusion.tuned_queries": str(n)}
    runs = {name: score(sub, ds)[0] for name, sub in specs.items()}
    return fuse(runs, **options), tags
