"""Learning-to-rank rankers: LightGBM's ``LGBMRanker``, XGBoost's ``XGBRanker`` and
CatBoost's ``CatBoostRanker``, trained on the dataset's train split grouped by query and
early-stopped on a seeded validation split of whole train queries, then scoring the test
split.

Each model's validation metric as its library reports it (LightGBM ``ndcg@k``, XGBoost
``ndcg@k``, CatBoost ``NDCG:top=k``) is set beside the harness's value of the same scores
under that library's convention preset (:mod:`harness.rankers.trainer_check`); the outcome
is returned beside the run (:attr:`LtrFit.tags`, the ``trainer.*`` tags of its MLflow run).
Parameters are passed through to the library after a check against the library's own list:
an unknown key is a one-line error naming it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from harness.datasets import Dataset
from harness.errors import InputError
from harness.progress import bars_on

__all__ = ["LIBRARIES", "OBJECTIVES", "Grouped", "LtrFit", "Trained", "train_ltr", "known_params",
           "check_params", "check_ltr", "split_queries", "grouped"]

#: kind -> (module, the library's name)
LIBRARIES = {"lightgbm": ("lightgbm", "LightGBM"), "xgboost": ("xgboost", "XGBoost"),
             "catboost": ("catboost", "CatBoost")}
#: kind -> its ranking objectives, the default first
OBJECTIVES = {"lightgbm": ("lambdarank", "rank_xendcg"),
              "xgboost": ("rank:ndcg", "rank:pairwise", "rank:map"),
              "catboost": ("YetiRank", "PairLogit", "QueryRMSE")}
#: Options of the kind that are not library parameters (and may not be given in params:
#: each has its own ranker option).
_OWN = {"lightgbm": ("objective", "random_state", "n_jobs"),
        "xgboost": ("objective", "random_state", "n_jobs", "eval_metric",
                    "early_stopping_rounds"),
        "catboost": ("loss_function", "random_seed", "thread_count", "eval_metric")}


@dataclass(frozen=True)
class Grouped:
    """Rows of one split grouped by query (contiguous, in first-appearance order)."""

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray  # the dataset's query ids, one per row
    docid: np.ndarray  # the dataset's document ids (trec_eval breaks ties by them)
    codes: np.ndarray  # 0, 1, 2, ... per query, non-decreasing
    sizes: np.ndarray  # rows per query, in order


@dataclass(frozen=True)
class Trained:
    """A fitted model, its validation metric as the library reported it and its scores of
    the validation rows at the iteration kept."""

    model: Any
    metric: str
    value: float
    valid_scores: np.ndarray
    best_iteration: int
    predict: Callable[[np.ndarray], np.ndarray]


def _library(spec: Any) -> Any:
    module, name = LIBRARIES[spec.kind]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"ranker {spec.name!r} (kind {spec.kind}) needs {name}, which is not "
                         "installed: pip install 'harness[ltr]'",
                         key=f"ranker.{spec.name}.kind") from None


def grouped(frame: pd.DataFrame, cols: list[str]) -> Grouped:
    """``frame``'s rows grouped by query (stable: a query's rows keep their order)."""
    codes, _ = pd.factorize(frame["qid"], sort=False)
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    part = frame.iloc[order]
    return Grouped(part[cols].to_numpy(dtype=np.float64), part["label"].to_numpy(dtype=float),
                   part["qid"].to_numpy(), part["docid"].to_numpy(), codes,
                   np.bincount(codes))


def split_queries(train: pd.DataFrame, fraction: float, seed: int, name: str
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fit rows, validation rows): a seeded sample of ``fraction`` of the train queries,
    whole, held out for early stopping."""
    if not 0 < fraction < 1:
        raise InputError(f"ranker {name!r}: valid_fraction must be in (0, 1), got {fraction}",
                         key=f"ranker.{name}.valid_fraction")
    qids = pd.unique(train["qid"])
    if len(qids) < 2:
        raise InputError(f"ranker {name!r} needs at least 2 train queries (one to fit, one "
                         f"to validate); the train split has {len(qids)}",
                         key=f"ranker.{name}")
    n_valid = min(len(qids) - 1, max(1, int(round(fraction * len(qids)))))
    rng = np.random.default_rng(seed)
    valid = set(rng.choice(qids, size=n_valid, replace=False).tolist())
    held = train["qid"].isin(valid).to_numpy()
    return train[~held], train[held]


def known_params(kind: str, lib: Any) -> set[str]:
    """The parameter names the library itself accepts (its estimator's, and for LightGBM
    every documented alias, for XGBoost every booster parameter of a dry model's config)."""
    if kind == "lightgbm":
        names = set(lib.LGBMRanker().get_params())
        for canonical, aliases in lib.basic._ConfigAliases._get_all_param_aliases().items():
            names |= {canonical, *aliases}
        return names
    if kind == "xgboost":
        rows = np.arange(8, dtype=float).reshape(4, 2)
        booster = lib.train({"objective": "rank:ndcg"}, lib.DMatrix(
            rows, label=[0, 1, 0, 1], qid=[0, 0, 1, 1]), num_boost_round=1)
        names = set(lib.XGBRanker().get_params())
        stack = [json.loads(booster.save_config())]
        while stack:
            for key, value in stack.pop().items():
                stack.append(value) if isinstance(value, dict) else names.add(key)
        return names
    return set(inspect.signature(lib.CatBoostRanker.__init__).parameters) - {"self"}


def check_params(spec: Any, lib: Any, params: dict[str, Any]) -> None:
    """A one-line error for a parameter the library does not know, or one the kind sets
    from its own option."""
    known = known_params(spec.kind, lib)
    for key in params:
        if key in _OWN[spec.kind]:
            raise InputError(f"ranker {spec.name!r}: set {key!r} with the ranker's own option "
                             "(objective, seed, threads, eval_at, early_stopping), not in "
                             "params", key=f"ranker.{spec.name}.params.{key}")
        if key not in known:
            raise InputError(f"ranker {spec.name!r}: {LIBRARIES[spec.kind][1]} has no "
                             f"parameter {key!r}", key=f"ranker.{spec.name}.params.{key}")


class _Bar:
    """A per-round tqdm bar on a terminal; nothing otherwise."""

    def __init__(self, desc: str) -> None:
        self.bar = None
        if bars_on():
            import sys

            from tqdm.auto import tqdm

            self.bar = tqdm(desc=desc, unit="round", leave=False, file=sys.stderr,
                            dynamic_ncols=True)

    def step(self, *_: Any) -> bool:
        if self.bar is not None:
            self.bar.update(1)
        return True

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _fit_lightgbm(lgb: Any, base: dict[str, Any], fit: Grouped, valid: Grouped, k: int,
                  patience: int, bar: _Bar) -> Trained:
    model = lgb.LGBMRanker(**{"verbose": -1, **base})
    callbacks = [lgb.early_stopping(patience, first_metric_only=True, verbose=False)]
    if bar.bar is not None:
        callbacks.append(bar.step)
    evals = ({"eval_X": (valid.X,), "eval_y": (valid.y,)}  # eval_set: before 4.7
             if "eval_X" in inspect.signature(model.fit).parameters
             else {"eval_set": [(valid.X, valid.y)]})
    model.fit(fit.X, fit.y, group=fit.sizes, eval_group=[valid.sizes], eval_at=[k],
              callbacks=callbacks, **evals)
    name = f"ndcg@{k}"
    return Trained(model, name, float(model.best_score_["valid_0"][name]),
                   np.asarray(model.predict(valid.X), dtype=np.float64),
                   int(model.best_iteration_), model.predict)


def _fit_xgboost(xgb: Any, base: dict[str, Any], fit: Grouped, valid: Grouped, k: int,
                 patience: int, bar: _Bar) -> Trained:
    name = f"ndcg@{k}"
    callbacks = []
    if bar.bar is not None:
        class Step(xgb.callback.TrainingCallback):
            def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
                bar.step()
                return False

        callbacks.append(Step())
    model = xgb.XGBRanker(**{"tree_method": "hist", "eval_metric": name,
                             "early_stopping_rounds": patience, "callbacks": callbacks or None,
                             **base})
    model.fit(fit.X, fit.y, qid=fit.codes, eval_set=[(valid.X, valid.y)],
              eval_qid=[valid.codes], verbose=False)
    best = int(model.best_iteration)
    value = model.evals_result()["validation_0"][name][best]
    return Trained(model, name, float(value),
                   np.asarray(model.predict(valid.X), dtype=np.float64), best, model.predict)


def _fit_catboost(cb: Any, base: dict[str, Any], fit: Grouped, valid: Grouped, k: int,
                  patience: int, bar: _Bar) -> Trained:
    name = f"NDCG:top={k}"
    model = cb.CatBoostRanker(**{"eval_metric": name, "allow_writing_files": False,
                                 "logging_level": "Silent", "use_best_model": True,
                                 "od_type": "Iter", "od_wait": patience, **base})

    class Step:
        def after_iteration(self, info: Any) -> bool:
            return bar.step()

    model.fit(cb.Pool(fit.X, fit.y, group_id=fit.codes),
              eval_set=cb.Pool(valid.X, valid.y, group_id=valid.codes),
              callbacks=[Step()] if bar.bar is not None else None)
    best = int(model.get_best_iteration())
    history = model.get_evals_result()["validation"]
    reported = next(key for key in history if key.startswith(f"{name};") or key == name)
    return Trained(model, reported, float(history[reported][best]),
                   np.asarray(model.predict(valid.X), dtype=np.float64), best, model.predict)


_FIT = {"lightgbm": _fit_lightgbm, "xgboost": _fit_xgboost, "catboost": _fit_catboost}


def _error(lib: Any) -> type[Exception]:
    """The library's own exception class (XGBoostError is a ValueError)."""
    if hasattr(lib, "CatBoostError"):
        return lib.CatBoostError
    return getattr(getattr(lib, "basic", None), "LightGBMError", ValueError)


def _base(spec: Any, objective: str) -> dict[str, Any]:
    """The kind's own options as the library's parameters, then ``params``."""
    threads = spec.option("threads")
    seed = int(spec.option("seed", 0))
    own = dict(zip(_OWN[spec.kind][:3], (objective, seed,
                                         -1 if threads is None else int(threads)),
                   strict=True))
    return own | dict(spec.option("params", {}) or {})


def check_ltr(spec: Any) -> tuple[str, int]:
    """The options checked before any data is read; returns the objective and eval_at."""
    objective = str(spec.option("objective", OBJECTIVES[spec.kind][0]))
    if objective not in OBJECTIVES[spec.kind]:
        raise InputError(f"ranker {spec.name!r}: objective {objective!r} is not one of "
                         f"{LIBRARIES[spec.kind][1]}'s ranking objectives: "
                         f"{', '.join(OBJECTIVES[spec.kind])}",
                         key=f"ranker.{spec.name}.objective")
    for key, default in (("eval_at", 10), ("early_stopping", 20)):
        if int(spec.option(key, default)) < 1:
            raise InputError(f"ranker {spec.name!r}: {key} must be >= 1, got "
                             f"{spec.option(key)}", key=f"ranker.{spec.name}.{key}")
    fraction = float(spec.option("valid_fraction", 0.2))
    if not 0 < fraction < 1:
        raise InputError(f"ranker {spec.name!r}: valid_fraction must be in (0, 1), got "
                         f"{fraction}", key=f"ranker.{spec.name}.valid_fraction")
    return objective, int(spec.option("eval_at", 10))


class LtrFit(NamedTuple):
    """What :func:`train_ltr` returns: the test split's ``run``, the ``trained`` model, the
    ``valid`` rows, and the ``tags`` of the ranker's MLflow run (``trainer.*``: the trainer
    check, the fit's seconds, the best iteration, the validation queries)."""

    run: pd.DataFrame
    trained: Trained
    valid: Grouped
    tags: dict[str, str]


def train_ltr(spec: Any, ds: Dataset) -> LtrFit:
    """Train ``spec``'s model on ``ds``; return the test split's run, the fitted model, the
    validation rows and the trainer's tags."""
    from harness.rankers.trainer_check import trainer_check

    objective, k = check_ltr(spec)
    lib = _library(spec)
    params = dict(spec.option("params", {}) or {})
    check_params(spec, lib, params)
    train = ds.split("train")
    if len(train) == 0:
        raise InputError(f"ranker {spec.name!r} needs a train split; dataset {ds.name!r} "
                         "has none", key=f"ranker.{spec.name}")
    cols = [str(c) for c in spec.option("features", ds.features)]
    missing = [c for c in cols if c not in train.columns]
    if missing:
        raise InputError(f"ranker {spec.name!r}: no feature {missing[0]!r} in dataset "
                         f"{ds.name!r}", key=f"ranker.{spec.name}.features")
    fit_rows, valid_rows = split_queries(train, float(spec.option("valid_fraction", 0.2)),
                                         int(spec.option("seed", 0)), spec.name)
    fit, valid = grouped(fit_rows, cols), grouped(valid_rows, cols)
    if objective == "rank:map" and not np.isin(train["label"], (0, 1)).all():
        raise InputError(f"ranker {spec.name!r}: objective rank:map needs binary labels (0 or "
                         f"1); the train split has labels up to {train['label'].max():g}",
                         key=f"ranker.{spec.name}.objective")
    bar = _Bar(f"train {spec.name}")
    t = time.perf_counter()
    try:
        trained = _FIT[spec.kind](lib, _base(spec, objective), fit, valid, k,
                                  int(spec.option("early_stopping", 20)), bar)
    except (ValueError, TypeError, RuntimeError, _error(lib)) as exc:  # a value refused
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"ranker {spec.name!r}: {LIBRARIES[spec.kind][1]} refused its "
                         f"parameters: {text}", key=f"ranker.{spec.name}.params") from None
    finally:
        bar.close()
    seconds = time.perf_counter() - t
    test = ds.test
    run = pd.DataFrame({"qid": test["qid"].to_numpy(), "docid": test["docid"].to_numpy(),
                        "score": np.asarray(trained.predict(test[cols].to_numpy(
                            dtype=np.float64)), dtype=np.float64)})
    tags = trainer_check(spec, trained, valid, k) | {
        "trainer.seconds": f"{seconds:.3f}", "trainer.best_iteration":
        str(trained.best_iteration), "trainer.valid_queries": str(len(valid.sizes))}
    return LtrFit(run, trained, valid, tags)
