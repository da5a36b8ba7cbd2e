"""The vocabulary of metric definitions: the metric names and their display names and
aliases, the values each option takes, which options change which metric, the defaults,
and the checks and normal forms of option values (gains, discounts, integers, fractions)
and their display in names and MLflow keys."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from harness.errors import FormulaError, MetricDefinitionError
from harness.metrics.formula import Formula, compile_formula

__all__ = ["METRIC_NAMES", "TIE_MODES", "IDEAL_MODES", "EMPTY_POLICIES", "EMPTY_WEIGHTS",
           "GainSpec", "DiscountSpec"]

METRIC_NAMES: Final = ("dcg", "ndcg", "mndcg", "ap", "rr", "precision", "recall", "err",
                        "rprec", "bpref", "success", "judged", "rbp", "rbp_residual", "f1",
                        "iprec")
#: Measures over the whole list: their k is reset to None, as it changes nothing.
_NO_CUTOFF: Final = ("rprec", "bpref", "iprec")
TIE_MODES: Final = ("average", "random", "input", "docid", "optimistic", "pessimistic",
                    "quicksort", "quicksort2", "quicksort_reversed")
IDEAL_MODES: Final = ("judged", "retrieved")
EMPTY_POLICIES: Final = ("zero", "one", "exclude", "nan")
#: How a query with no relevant document is weighted in a weighted mean (see aggregate).
EMPTY_WEIGHTS: Final = ("own", "unweighted", "mean")
_NAMED_GAINS: Final = ("exp2", "linear")
_NAMED_DISCOUNTS: Final = ("log2", "ln", "reciprocal", "none")
_LOG_BASE = re.compile(r"^log(\d+(?:\.\d+)?)$")

_DISPLAY: Final = {
    "dcg": "DCG", "ndcg": "nDCG", "mndcg": "mnDCG", "ap": "AP", "rr": "RR",
    "precision": "P", "recall": "R", "err": "ERR", "rprec": "Rprec", "bpref": "Bpref",
    "success": "Success", "judged": "Judged", "rbp": "RBP", "rbp_residual": "RBPres",
    "f1": "F1", "iprec": "IPrec",
}
_ALIASES: Final = {
    **{v.lower(): k for k, v in _DISPLAY.items()},
    **{k: k for k in METRIC_NAMES},
    "map": "ap", "mrr": "rr", "recip_rank": "rr", "p": "precision", "r": "recall",
    "sdcg": "mndcg", "ndcg_cut": "ndcg", "map_cut": "ap", "r_precision": "rprec",
    "hit_rate": "success",
}

# Which options change each metric's number. Other options are reset to their default,
# so definitions that compute the same number compare and hash equal.
_OPTIONS: Final = ("gain", "discount", "ideal", "ties", "seed", "empty", "empty_weight",
                   "level", "max_label", "p", "at_recall")
_EMPTY: Final = {"empty", "empty_weight"}
_RELEVANT: Final = {
    "dcg": {"gain", "discount", "ties", "seed"},
    "ndcg": {"gain", "discount", "ideal", "ties", "seed", *_EMPTY},
    "mndcg": {"gain", "discount", "ties", "seed", *_EMPTY, "max_label"},
    "ap": {"ideal", "ties", "seed", *_EMPTY, "level"},
    "rr": {"ties", "seed", *_EMPTY, "level"},
    "precision": {"ties", "seed", *_EMPTY, "level"},
    "recall": {"ideal", "ties", "seed", *_EMPTY, "level"},
    "err": {"ties", "seed", *_EMPTY, "max_label"},
    **{name: {"ties", "seed", *_EMPTY, "level"} for name in ("rprec", "bpref", "success", "f1")},
    "judged": {"ties", "seed"},
    "rbp": {"ties", "seed", *_EMPTY, "level", "p"},
    "rbp_residual": {"ties", "seed", "p"},
    "iprec": {"ties", "seed", *_EMPTY, "level", "at_recall"},
}
_BINARY: Final = ("ap", "rr", "precision", "recall", "rprec", "bpref", "success", "rbp",
                  "f1", "iprec")
_DEFAULTS: Final[dict[str, Any]] = {
    "gain": "exp2", "discount": "log2", "ideal": "judged", "ties": "average", "seed": 0,
    "empty": "zero", "empty_weight": "own", "level": 1, "max_label": None,
    "p": 0.8, "at_recall": 0.0,
}

GainSpec = str | tuple[tuple[float, float], ...]
DiscountSpec = str


def _refuse_unknown_options(unknown: Mapping[str, Any]) -> None:
    import difflib

    known = ("k", *_OPTIONS, "convention")
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise MetricDefinitionError(f"unknown Metric option(s) {', '.join(parts)}; known options: "
                                f"{', '.join(known)}")


def _fmt_num(x: float) -> str:
    """Shortest text of a number: ``3`` for 3.0, ``4.5`` for 4.5."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _normalize_gain(gain: Any) -> GainSpec:
    if isinstance(gain, Mapping) or isinstance(gain, tuple):
        items = gain.items() if isinstance(gain, Mapping) else gain
        table = []
        for key, value in items:
            try:
                k, v = float(key), float(value)
            except (TypeError, ValueError):
                raise MetricDefinitionError(
                    f"gain table entries must be numbers, got {key!r}: {value!r}"
                ) from None
            if not (math.isfinite(k) and math.isfinite(v)) or v < 0:
                raise MetricDefinitionError(
                    f"gain table entry {key!r}: {value!r} must map a finite label to a finite "
                    "gain >= 0"
                )
            table.append((k, v))
        if not table:
            raise MetricDefinitionError("gain table is empty")
        if len({k for k, _ in table}) != len(table):
            raise MetricDefinitionError(f"gain table has a label twice: {gain!r}")
        return tuple(sorted(table))
    if isinstance(gain, str):
        text = gain.strip()
        if text in _NAMED_GAINS:
            return text
        try:
            return compile_formula(text, "rel").source
        except FormulaError as exc:
            raise FormulaError(f"gain {text!r} is not a named gain "
                               f"({', '.join(_NAMED_GAINS)}), nor a valid formula over "
                               f"'rel': {exc}") from None
    raise MetricDefinitionError(
        f"gain must be 'exp2', 'linear', a {{label: gain}} table or a formula over 'rel', "
        f"got {gain!r}"
    )


def _normalize_discount(discount: Any) -> DiscountSpec:
    if not isinstance(discount, str):
        raise MetricDefinitionError(
            f"discount must be one of {', '.join(_NAMED_DISCOUNTS)}, 'log<base>' (e.g. 'log10') "
            f"or a formula over 'rank', got {discount!r}"
        )
    text = discount.strip()
    if text in _NAMED_DISCOUNTS:
        return text
    m = _LOG_BASE.match(text)
    if m:
        base = float(m.group(1))
        if base <= 1:
            raise MetricDefinitionError(f"discount {text!r}: the log base must be > 1")
        return "log2" if base == 2 else f"log{_fmt_num(base)}"
    return compile_formula(text, "rank").source


def _check_choice(option: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise MetricDefinitionError(
            f"{option} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}"
        )
    return value


def _check_int(option: str, value: Any, *, low: int, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise MetricDefinitionError(
                f"{option} must be an int in the range [{low}, inf)"
                f"{' or None' if allow_none else ''}. Got {value!r} instead."
            )
    if value < low:
        raise MetricDefinitionError(
            f"{option} must be an int in the range [{low}, inf){' or None' if allow_none else ''}."
            f" Got {value!r} instead."
        )
    return int(value)


def _validate_options(values: dict[str, Any]) -> None:
    _normalize_gain(values["gain"])
    _normalize_discount(values["discount"])
    _check_choice("ideal", values["ideal"], IDEAL_MODES)
    _check_choice("ties", values["ties"], TIE_MODES)
    _check_int("seed", values["seed"], low=0)
    _check_choice("empty", values["empty"], EMPTY_POLICIES)
    _check_choice("empty_weight", values["empty_weight"], EMPTY_WEIGHTS)
    _check_int("level", values["level"], low=1)
    for option, low, high in (("p", 0.0, 1.0), ("at_recall", 0.0, 1.0)):
        _check_fraction(option, values[option], low, high, open_ends=option == "p")


def _check_fraction(option: str, value: Any, low: float, high: float, *,
                    open_ends: bool) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    inside = low < x < high if open_ends else low <= x <= high
    if isinstance(value, (bool, np.bool_)) or not inside:
        ends = f"({low:g}, {high:g})" if open_ends else f"[{low:g}, {high:g}]"
        raise MetricDefinitionError(f"{option} must be a number in {ends}, got {value!r}")
    return x


def _display_value(value: Any) -> str:
    if isinstance(value, tuple):
        return "{" + ",".join(f"{_fmt_num(k)}:{_fmt_num(v)}" for k, v in value) + "}"
    if isinstance(value, float):
        return _fmt_num(value)
    text = str(value)
    if isinstance(value, str) and re.search(r"[,()=]", text):
        return "'" + text + "'"
    return text


def _key_value(value: Any) -> str:
    if isinstance(value, tuple):
        parts = [f"{_fmt_num(k)}-{_fmt_num(v)}" for k, v in value]
        text = "_".join(parts)
        if re.fullmatch(r"[0-9._-]+", text) and "e" not in text and len(text) <= 60:
            return "t" + text
        return "t" + _short_hash(_display_value(value))
    if isinstance(value, float):
        return _fmt_num(value).replace("e+", "e")  # '+' is not allowed in MLflow keys
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9.]+", text):
        return text
    return "f" + _short_hash(text)


def _gain_function(spec: GainSpec) -> Any:
    if spec == "exp2":
        return lambda rel: np.where(rel > 0, np.exp2(np.maximum(rel, 0)) - 1.0, 0.0)
    if spec == "linear":
        return lambda rel: np.maximum(rel, 0.0)
    if isinstance(spec, tuple):
        keys = np.array([k for k, _ in spec])
        vals = np.array([v for _, v in spec])

        def table(rel: np.ndarray) -> np.ndarray:
            out = np.maximum(rel, 0.0).astype(np.float64, copy=True)
            idx = np.searchsorted(keys, rel)
            idx_c = np.minimum(idx, len(keys) - 1)
            hit = keys[idx_c] == rel
            out[hit] = vals[idx_c[hit]]
            out[rel < 0] = 0.0
            return out

        return table
    formula: Formula = compile_formula(spec, "rel")
    return lambda rel: np.where(rel < 0, 0.0, formula(rel))


def _discount_function(spec: DiscountSpec) -> Any:
    if spec == "log2":
        return lambda pos: 1.0 / np.log2(pos + 2.0)
    if spec == "ln":
        return lambda pos: 1.0 / np.log(pos + 2.0)
    if spec == "reciprocal":
        return lambda pos: 1.0 / (pos + 1.0)
    if spec == "none":
        return lambda pos: np.ones(np.shape(pos))
    m = _LOG_BASE.match(spec)
    if m:
        base = float(m.group(1))
        return lambda pos: np.log(base) / np.log(pos + 2.0)
    formula = compile_formula(spec, "rank")
    return lambda pos: formula(np.asarray(pos, dtype=np.float64) + 1.0)
