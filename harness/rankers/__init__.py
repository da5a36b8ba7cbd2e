"""Rankers by registry name, and the on-disk score cache.

A ranker turns a :class:`~harness.datasets.Dataset` into a run: a DataFrame ``qid``,
``docid``, ``score`` over the test split (or, for ``run_file``, the file's own rows), with
the tags of its MLflow run where it trained or tuned something (:class:`Scored`).
Rankers are chosen by ``kind`` from :data:`RANKERS`; nothing is imported or instantiated
from a name taken out of the configuration.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from harness.data.trec import read_run, warn_on_few_judged
from harness.datasets import Dataset, file_sha256
from harness.errors import InputError
from harness.progress import bars_on, progress

__all__ = ["RANKERS", "TRAINERS", "ESTIMATORS", "RankerSpec", "Scored", "Fitted", "score",
           "cache_key", "fit", "check_options"]

CACHE_VERSION = 1
#: The cached run's parquet metadata key holding its tags (JSON).
TAGS_KEY = b"harness.tags"


class Fitted(NamedTuple):
    """What a :data:`TRAINERS` kind returns: the run, the fitted model, and the
    ``trainer.*`` tags of its MLflow run."""

    run: pd.DataFrame
    model: Any
    tags: dict[str, str]


class Scored(NamedTuple):
    """What :func:`score` returns: the ranker's ``run``, its cache ``key``, whether it came
    from the cache (``hit``), and ``tags``: the ``trainer.*`` (a fitted model's check and
    seconds) or ``fusion.*`` (tuned weights) tags of its MLflow run, empty for the other
    kinds; a cached run keeps its tags."""

    run: pd.DataFrame
    key: str
    hit: bool
    tags: dict[str, str]


@dataclass(frozen=True)
class RankerSpec:
    """A configured ranker: its name in the study, registry kind and options."""

    name: str
    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def option(self, key: str, default: Any = None) -> Any:
        value = self.options.get(key, default)
        return default if value is None else value

    def require(self, key: str) -> Any:
        value = self.options.get(key)
        if value is None:
            raise InputError(f"ranker {self.name!r} (kind {self.kind}) needs option {key!r}",
                             key=f"ranker.{self.name}.{key}")
        return value


def _frame(test: pd.DataFrame, scores: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"qid": test["qid"].to_numpy(), "docid": test["docid"].to_numpy(),
                         "score": np.asarray(scores, dtype=np.float64)})


def _oracle(spec: RankerSpec, ds: Dataset) -> pd.DataFrame:
    test = ds.test
    return _frame(test, test["label"].to_numpy(dtype=float))


def _random(spec: RankerSpec, ds: Dataset) -> pd.DataFrame:
    test = ds.test
    rng = np.random.default_rng(int(spec.option("seed", 0)))
    return _frame(test, rng.random(len(test)))


def _noisy_oracle(spec: RankerSpec, ds: Dataset) -> pd.DataFrame:
    test = ds.test
    sigma = float(spec.option("sigma", 1.0))
    if sigma < 0:
        raise InputError(f"sigma must be >= 0, got {sigma}", key=f"ranker.{spec.name}.sigma")
    rng = np.random.default_rng(int(spec.option("seed", 0)))
    return _frame(test, test["label"].to_numpy(dtype=float) + rng.normal(0, sigma, len(test)))


def _column(spec: RankerSpec, ds: Dataset) -> pd.DataFrame:
    key = "feature" if spec.kind == "feature" else "column"
    name = spec.require(key)
    pool = ds.features if spec.kind == "feature" else tuple(ds.docs.columns)
    if name not in pool:
        raise InputError(f"ranker {spec.name!r}: no {key} {name!r}; available: "
                         f"{', '.join(map(str, pool))}", key=f"ranker.{spec.name}.{key}")
    test = ds.test
    return _frame(test, pd.to_numeric(test[name], errors="raise").to_numpy(dtype=float))


def _estimators() -> dict[str, Callable[..., Any]]:
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import LinearRegression, Ridge

    return {"hist_gradient_boosting": HistGradientBoostingRegressor,
            "random_forest": RandomForestRegressor, "ridge": Ridge,
            "linear": LinearRegression}


ESTIMATORS = ("hist_gradient_boosting", "random_forest", "ridge", "linear")


def estimator(spec: RankerSpec) -> Any:
    """The (unfitted) estimator of a ``sklearn`` ranker, its ``params`` checked as sklearn
    checks them at fit: an unknown or invalid one is an :class:`InputError` naming
    ``ranker.<name>.params.<param>``."""
    import difflib
    import re

    name = spec.option("estimator", "hist_gradient_boosting")
    cls = _estimators()[name]
    params = dict(spec.option("params", {}) or {})
    known = sorted(cls().get_params())
    for param in params:
        if param not in known:
            close = difflib.get_close_matches(str(param), known, n=1)
            raise InputError(f"ranker {spec.name!r}: {cls.__name__} takes no parameter "
                             f"{param!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; it takes: {', '.join(known)}",
                             key=f"ranker.{spec.name}.params.{param}")
    est = cls(**params)
    try:
        est._validate_params()  # what fit checks first
    except (ValueError, TypeError) as exc:
        found = re.search(r"The '(\w+)' parameter", str(exc))
        param = found.group(1) if found else ""
        raise InputError(f"ranker {spec.name!r}: {exc}", key=f"ranker.{spec.name}.params"
                         + (f".{param}" if param else "")) from None
    return est


def _sklearn(spec: RankerSpec, ds: Dataset) -> Fitted:
    name = spec.option("estimator", "hist_gradient_boosting")
    table = _estimators()
    if name not in table:
        raise InputError(f"ranker {spec.name!r}: unknown estimator {name!r}; known: "
                         f"{', '.join(table)}", key=f"ranker.{spec.name}.estimator")
    params = dict(spec.option("params", {}) or {})
    est = estimator(spec)
    if "random_state" in est.get_params() and "random_state" not in params:
        est.set_params(random_state=int(spec.option("seed", 0)))
    train = ds.split("train")
    if len(train) == 0:
        raise InputError(f"ranker {spec.name!r} needs a train split; dataset {ds.name!r} "
                         "has none", key=f"ranker.{spec.name}")
    cols = list(spec.option("features", ds.features))
    test = ds.test
    with _threads(spec.option("threads")):
        t = time.perf_counter()
        fit(est, train[cols].to_numpy(), train["label"].to_numpy(dtype=float),
            staged=bars_on(), desc=f"train {spec.name}")
        run = _frame(test, est.predict(test[cols].to_numpy()))
    return Fitted(run, est, {"trainer.seconds": f"{time.perf_counter() - t:.3f}"})


def _threads(threads: int | None) -> Any:
    """Limit the native thread pools (OpenMP, BLAS) to ``threads`` while inside; no limit
    when None. Scoped, so nothing global changes."""
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=int(threads))


#: Boosting rounds fitted between two updates of the training progress bar.
STAGE_ROUNDS = 10


def fit(est: Any, X: np.ndarray, y: np.ndarray, *, staged: bool, desc: str = "train") -> Any:
    """Fit ``est``; with ``staged`` and an estimator that boosts ``max_iter`` rounds with
    ``warm_start``, fit :data:`STAGE_ROUNDS` rounds at a time behind a progress bar. The
    fitted model is the same either way (warm starts keep the seed, the bins and the early
    stopping split); the staged fit only lets a person see it advance."""
    params = est.get_params()
    if not staged or "warm_start" not in params or "max_iter" not in params:
        return est.fit(X, y)
    total = int(params["max_iter"])
    rounds = list(range(min(STAGE_ROUNDS, total), total, STAGE_ROUNDS)) + [total]
    est.set_params(warm_start=True)
    try:
        bar = progress(rounds, desc=desc, unit="stage")
        for done in bar:
            est.set_params(max_iter=done)
            est.fit(X, y)
            if est.n_iter_ < done:  # early stopping ended it
                break
    finally:
        est.set_params(max_iter=total, warm_start=params["warm_start"])
    return est


def _run_file(spec: RankerSpec, ds: Dataset) -> pd.DataFrame:
    path = spec.require("path")
    run = read_run(path)
    warn_on_few_judged(run["qid"].unique(), ds.qrels["qid"].unique(), run=Path(path).name,
                       qrels=f"the judgments of dataset {ds.name!r}")
    qids = set(ds.test["qid"])
    return run.loc[run["qid"].isin(qids), ["qid", "docid", "score"]].reset_index(drop=True)


def _mlflow_model(spec: RankerSpec, ds: Dataset) -> pd.DataFrame:
    """Score with a logged model. ``models:/`` and ``runs:/`` URIs resolve against the
    option ``tracking_uri`` (the study's store, filled in by the app), set only while the
    model loads."""
    import mlflow.pyfunc

    from harness.tracking.store import tracking_env

    uri = spec.require("uri")
    store = spec.option("tracking_uri")
    try:
        with tracking_env(store):
            model = mlflow.pyfunc.load_model(uri)
    except Exception as exc:  # noqa: BLE001 - MLflow raises many kinds; name the ranker
        raise InputError(f"ranker {spec.name!r}: cannot load model {uri!r} from "
                         f"{store or 'the default MLflow store'}: {exc}",
                         key=f"ranker.{spec.name}.uri") from None
    test = ds.test
    cols = list(spec.option("features", ds.features))
    pred = model.predict(test[cols])
    return _frame(test, np.asarray(pred, dtype=float).reshape(-1))


def _ltr(spec: RankerSpec, ds: Dataset) -> Fitted:
    from harness.rankers.ltr import train_ltr  # imports its library only when used

    fitted = train_ltr(spec, ds)
    return Fitted(fitted.run, fitted.trained.model, fitted.tags)


def _run_of(trainer: Callable[[RankerSpec, Dataset], Fitted]
            ) -> Callable[[RankerSpec, Dataset], tuple[pd.DataFrame, dict[str, str]]]:
    def run(spec: RankerSpec, ds: Dataset) -> tuple[pd.DataFrame, dict[str, str]]:
        fitted = trainer(spec, ds)
        return fitted.run, fitted.tags

    return run


def _fusion(spec: RankerSpec, ds: Dataset) -> tuple[pd.DataFrame, dict[str, str]]:
    from harness.rankers.fusion import fusion

    return fusion(spec, ds, score)


#: The kinds that fit a model on the train split (:class:`Fitted`); the model is saved in
#: MLflow's format by :func:`score` (:mod:`harness.rankers.models`).
TRAINERS: Mapping[str, Callable[[RankerSpec, Dataset], Fitted]] = {
    "sklearn": _sklearn, "lightgbm": _ltr, "xgboost": _ltr, "catboost": _ltr}

#: Every kind: its run, or its run and the tags of its MLflow run.
RANKERS: Mapping[str, Callable[[RankerSpec, Dataset],
                               pd.DataFrame | tuple[pd.DataFrame, dict[str, str]]]] = {
    "oracle": _oracle,
    "random": _random,
    "noisy_oracle": _noisy_oracle,
    "feature": _column,
    "column": _column,
    "sklearn": _run_of(_sklearn),
    "run_file": _run_file,
    "mlflow_model": _mlflow_model,
    "lightgbm": _run_of(_ltr),
    "xgboost": _run_of(_ltr),
    "catboost": _run_of(_ltr),
    "fusion": _fusion,
}


def check_options(spec: RankerSpec) -> RankerSpec:
    """``spec`` once what can be checked without data is (the learning-to-rank kinds'
    objective and numbers, a fusion's method, normalisation, weights and inputs)."""
    if spec.kind in ("lightgbm", "xgboost", "catboost"):
        from harness.rankers.ltr import check_ltr

        check_ltr(spec)
    elif spec.kind == "sklearn" and spec.option("estimator", "hist_gradient_boosting") \
            in ESTIMATORS:
        estimator(spec)
    elif spec.kind == "fusion":
        from harness.rankers.fusion import check_fusion

        for sub in check_fusion(spec).values():
            if sub.kind not in RANKERS:
                raise InputError(f"ranker {sub.name!r}: unknown kind {sub.kind!r}; known: "
                                 f"{', '.join(RANKERS)}", key=f"ranker.{sub.name}.kind")
            check_options(sub)
    return spec


def cache_key(spec: RankerSpec, ds: Dataset) -> str:
    """sha256 of (dataset digest, ranker kind and options, input files' digests)."""
    extra: dict[str, Any] = {}
    if spec.kind == "run_file":
        extra["file"] = file_sha256(spec.require("path"))
    if spec.kind == "fusion":  # the inputs' own keys: their files' digests
        from harness.rankers.fusion import input_specs

        extra["inputs"] = {n: cache_key(sub, ds) for n, sub in input_specs(spec).items()}
    payload = json.dumps({"v": CACHE_VERSION, "dataset": ds.digest, "kind": spec.kind,
                          "options": spec.options, "extra": extra}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def score(spec: RankerSpec, ds: Dataset, cache_dir: Path | None = None, *,
          model_dir: Path | None = None) -> Scored:
    """The ranker's run, from the cache when present: (run, cache key, cache hit, tags).

    ``mlflow_model`` runs are not cached unless the URI pins a version (``models:/m/3`` or
    ``runs:/...``), since an alias can move. With ``model_dir``, a ranker of the
    :data:`TRAINERS` kinds leaves its fitted model there in MLflow's format (the cache keeps
    a copy as ``<key>.model``; a cached run without one is trained again).
    """
    if spec.kind not in RANKERS:
        raise InputError(f"unknown ranker kind {spec.kind!r} for ranker {spec.name!r}; known: "
                         f"{', '.join(RANKERS)}", key=f"ranker.{spec.name}.kind")
    key = cache_key(spec, ds)
    cacheable = cache_dir is not None and (spec.kind != "mlflow_model" or _pinned(
        str(spec.option("uri", ""))))
    path = cache_dir / f"{key}.parquet" if cacheable and cache_dir else None
    trains = model_dir is not None and spec.kind in TRAINERS
    cached_model = path.with_suffix(".model") if path is not None else None
    if path is not None and path.is_file() and (
            not trains or (cached_model is not None and cached_model.is_dir())):
        cached = _read_cached(path)
        if cached is not None:
            if trains and model_dir is not None and cached_model is not None:
                from harness.rankers.models import copy_model

                copy_model(cached_model, model_dir)
            return Scored(cached[0], key, True, cached[1])
    if trains and model_dir is not None:
        from harness.rankers.models import copy_model, save_model

        fitted = TRAINERS[spec.kind](spec, ds)
        run, tags = fitted.run, fitted.tags
        save_model(spec.kind, fitted.model, model_dir)
        if cached_model is not None:
            with contextlib.suppress(OSError):  # as for the scores: a warning-free extra
                copy_model(model_dir, cached_model)
    else:
        out = RANKERS[spec.kind](spec, ds)
        run, tags = out if isinstance(out, tuple) else (out, {})
    if path is not None:
        _write_cached(run, tags, path)
    return Scored(run, key, False, tags)


def _write_cached(run: pd.DataFrame, tags: Mapping[str, str], path: Path) -> None:
    """Cache ``run`` at ``path``, its ``tags`` in the file's metadata (:data:`TAGS_KEY`),
    with its digest beside it; a cache that cannot be written (a full disk, a read-only
    folder) is a warning, since the scores are in hand."""
    import logging

    import pyarrow as pa
    import pyarrow.parquet as pq

    token = np.random.default_rng().integers(1 << 30)
    tmp = path.with_suffix(f".tmp{token}")
    tmp_digest = path.with_name(f"{path.stem}.sha256.tmp{token}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pandas(run, preserve_index=False)
        pq.write_table(table.replace_schema_metadata(
            {**(table.schema.metadata or {}), TAGS_KEY: json.dumps(dict(tags)).encode()}), tmp)
        tmp_digest.write_text(file_sha256(tmp) + "\n")
        tmp_digest.replace(path.with_suffix(".sha256"))  # the digest first: a file without
        tmp.replace(path)  # one is never trusted
    except OSError as exc:
        for leftover in (tmp, tmp_digest):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
        logging.getLogger("harness").warning(
            "score cache not written (%s: %s); the study goes on without it (cache_dir)",
            exc.strerror or exc, exc.filename or path.parent)


def _read_cached(path: Path) -> tuple[pd.DataFrame, dict[str, str]] | None:
    """A cached run whose bytes match the digest written beside it, and its tags; ``None``
    (with a warning, and the run scored again) when the file was altered, truncated, has no
    digest or no tags (:data:`TAGS_KEY`; written by an older harness)."""
    import logging

    import pyarrow.parquet as pq

    digest = path.with_suffix(".sha256")
    expected = digest.read_text().strip() if digest.is_file() else None
    problem = None
    if expected is None:
        problem = "has no digest beside it"
    elif file_sha256(path) != expected:
        problem = "does not match its digest (altered or truncated)"
    else:
        try:
            tags = (pq.read_schema(path).metadata or {}).get(TAGS_KEY)
            if tags is not None:
                return pd.read_parquet(path), {str(k): str(v)
                                               for k, v in json.loads(tags).items()}
            problem = "was written before cached runs kept their tags"
        except Exception as exc:  # noqa: BLE001 - any unreadable cache is rebuilt
            problem = f"is unreadable ({type(exc).__name__})"
    logging.getLogger("harness").warning("score cache %s %s: scoring again", path.name, problem)
    return None


def _pinned(uri: str) -> bool:
    if uri.startswith("runs:/"):
        return True
    parts = uri.split("/")
    return uri.startswith("models:/") and len(parts) >= 3 and parts[-1].isdigit()
