"""The options of a metric definition, each declared once: its default, the values it takes
(a check that also gives the value's normal form), how a value is read back from a display
name, and how it is written in display names and MLflow keys.

A measure declares which of these options change its number (:mod:`harness.metrics.vocabulary.registry`);
:class:`~harness.Metric` checks every option through its declaration here and resets the
ones its measure does not read to their defaults, so equal definitions compare equal.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from harness.errors import FormulaError, MetricDefinitionError
from harness.metrics.vocabulary.formula import (
    Formula,
    compile_formula,
    discount_formula,
    gain_formula,
)
from harness.metrics.vocabulary.number_options import (
    grade_check,
    levels_check,
    number_list,
    positive,
    top_grade_check,
    weights_check,
)

__all__ = ["OPTIONS", "Option", "TIE_MODES", "IDEAL_MODES", "EMPTY_POLICIES", "EMPTY_WEIGHTS",
           "RECALL_CUTOFFS",
           "GainSpec", "DiscountSpec", "check_k", "refuse_unknown", "display_value",
           "key_value", "gain_function", "discount_function"]

TIE_MODES: Final = ("average", "random", "input", "docid", "optimistic", "pessimistic",
                    "quicksort", "quicksort2", "quicksort_reversed", "docid_float32",
                    "docid_ascending")
#: Former names of tie rules, read as the rule they name now (``docid_exact``: before 10.0)
TIE_ALIASES: Final = {"docid_exact": "docid"}
IDEAL_MODES: Final = ("judged", "retrieved")
#: What an unjudged retrieved document counts as (see the ``unjudged`` option).
UNJUDGED: Final = ("nonrelevant", "condensed", "relevant")
EMPTY_POLICIES: Final = ("zero", "one", "exclude", "nan")
#: How a query with no relevant document is weighted in a weighted mean (see aggregate).
EMPTY_WEIGHTS: Final = ("own", "unweighted", "mean")
#: How a recall level x becomes a count of relevant documents (IPrec, IPrecAvg).
RECALL_CUTOFFS: Final = ("plus_0.9", "nearest")
_NAMED_GAINS: Final = ("exp2", "linear")
_NAMED_DISCOUNTS: Final = ("log2", "ln", "reciprocal", "none")
_LOG_BASE = re.compile(r"^log(\d+(?:\.\d+)?)$")

GainSpec = str | tuple[tuple[float, float], ...]
DiscountSpec = str


@dataclass(frozen=True)
class Option:
    """One option of a metric definition.

    ``check`` takes a value as a user gives it and returns its normal form, or raises
    :class:`MetricDefinitionError` naming the option; ``parse`` reads the text a display
    name writes (``ties=docid``) back into a value ``check`` accepts.
    """

    name: str
    default: Any
    check: Callable[[Any], Any]
    parse: Callable[[str], Any]
    doc: str


# -- checks ----------------------------------------------------------------------------------
def _choice(option: str, choices: tuple[str, ...], aliases: Mapping[str, str] | None = None
            ) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if aliases and isinstance(value, str):
            value = aliases.get(value, value)
        if value not in choices:
            raise MetricDefinitionError(
                f"{option} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}"
            )
        return value

    return check


def _integer(option: str, *, low: int, allow_none: bool = False) -> Callable[[Any], int | None]:
    def check(value: Any) -> int | None:
        if value is None and allow_none:
            return None
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            if isinstance(value, (float, np.floating)) and float(value).is_integer():
                value = int(value)
            else:
                raise MetricDefinitionError(
                    f"{option} must be an int in the range [{low}, inf)"
                    f"{' or None' if allow_none else ''}. Got {value!r} instead.")
        if value < low:
            raise MetricDefinitionError(
                f"{option} must be an int in the range [{low}, inf)"
                f"{' or None' if allow_none else ''}. Got {value!r} instead.")
        return int(value)

    return check


#: The cut-off ``k``: not an option of the table (every measure with a cut-off reads it).
check_k = _integer("k", low=1, allow_none=True)


def _fraction(option: str, *, open_ends: bool) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = math.nan
        inside = 0.0 < x < 1.0 if open_ends else 0.0 <= x <= 1.0
        if isinstance(value, (bool, np.bool_)) or not inside:
            ends = "(0, 1)" if open_ends else "[0, 1]"
            raise MetricDefinitionError(f"{option} must be a number in {ends}, got {value!r}")
        return x

    return check


def _gain(gain: Any) -> GainSpec:
    if isinstance(gain, Mapping) or isinstance(gain, tuple):
        items = gain.items() if isinstance(gain, Mapping) else gain
        table = []
        for key, value in items:
            try:
                k, v = float(key), float(value)
            except (TypeError, ValueError):
                raise MetricDefinitionError(
                    f"gain table entries must be numbers, got {key!r}: {value!r}") from None
            if not (math.isfinite(k) and math.isfinite(v)) or v < 0:
                raise MetricDefinitionError(
                    f"gain table entry {key!r}: {value!r} must map a finite label to a finite "
                    "gain >= 0")
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
            formula = compile_formula(text, "rel")
        except FormulaError as exc:
            raise FormulaError(f"gain {text!r} is not a named gain "
                               f"({', '.join(_NAMED_GAINS)}), nor a valid formula over "
                               f"'rel': {exc}") from None
        return gain_formula(formula)
    raise MetricDefinitionError(
        f"gain must be 'exp2', 'linear', a {{label: gain}} table or a formula over 'rel', "
        f"got {gain!r}")


def _discount(discount: Any) -> DiscountSpec:
    if not isinstance(discount, str):
        raise MetricDefinitionError(
            f"discount must be one of {', '.join(_NAMED_DISCOUNTS)}, 'log<base>' (e.g. 'log10') "
            f"or a formula over 'rank', got {discount!r}")
    text = discount.strip()
    if text in _NAMED_DISCOUNTS:
        return text
    m = _LOG_BASE.match(text)
    if m:
        base = float(m.group(1))
        if base <= 1:
            raise MetricDefinitionError(f"discount {text!r}: the log base must be > 1")
        return "log2" if base == 2 else f"log{_fmt_num(base)}"
    return discount_formula(compile_formula(text, "rank"))


# -- reading values back from display names ----------------------------------------------
def _text(value: str) -> str:
    return value


def _table_or_text(value: str) -> Any:
    if value.startswith("{") and value.endswith("}"):
        from harness.metrics.vocabulary.names import split_top_level

        table = {}
        for item in split_top_level(value[1:-1]):
            a, _, b = item.partition(":")
            table[float(a)] = float(b)
        return table
    return value


def _optional_float(value: str) -> float | None:
    return None if value == "None" else float(value)


#: trec_eval's recall levels of 11pt_avg: 0, 0.1, ..., 1.
ELEVEN_LEVELS: Final = tuple(i / 10 for i in range(11))


def _flag(option: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise MetricDefinitionError(f"{option} must be True or False, got {value!r}")

    return check


def _bool_text(value: str) -> Any:
    return {"True": True, "False": False, "true": True, "false": False}.get(value, value)


OPTIONS: Final[dict[str, Option]] = {o.name: o for o in (
    Option("gain", "exp2", _gain, _table_or_text,
           "gain of label rel: exp2 (2^rel - 1), linear (rel), a {label: gain} table or a "
           "formula over rel; negative labels get 0"),
    Option("discount", "log2", _discount, _text,
           "discount of rank i: log2 (1/log2(i+1)), ln, log<b>, reciprocal (1/i), none, or "
           "a formula over rank"),
    Option("ideal", "judged", _choice("ideal", IDEAL_MODES), _text,
           "which labels form the ideal ranking or count as relevant: every judged document "
           "(judged) or the retrieved ones (retrieved)"),
    Option("ties", "average", _choice("ties", TIE_MODES, TIE_ALIASES), _text,
           "order of equal scores (average: expectation over every order)"),
    Option("seed", 0, _integer("seed", low=0), int, "seed of ties=random"),
    Option("empty", "zero", _choice("empty", EMPTY_POLICIES), _text,
           "value of a query with no relevant document: zero, one, exclude or nan"),
    Option("empty_weight", "own", _choice("empty_weight", EMPTY_WEIGHTS), _text,
           "weight of such a query in a weighted mean: own, unweighted or mean"),
    Option("level", 1, _integer("level", low=1), int,
           "binary relevance: label >= level (trec_eval -l)"),
    Option("max_label", None, top_grade_check, _optional_float,
           "top grade of the scale (None: the highest label evaluated)"),
    Option("p", 0.8, _fraction("p", open_ends=True), float,
           "persistence of RBP, NERR10 and Compat"),
    Option("at_recall", 0.0, _fraction("at_recall", open_ends=False), float,
           "recall level of interpolated precision"),
    Option("min_label", 0.0, grade_check("min_label"), float,
           "graded measures: labels below it count as 0 (ranx's level suffix on ndcg, dcg)"),
    Option("graded", False, _flag("graded"), _bool_text,
           "RBP: weight each relevant document by its label instead of 1 (ranx's rbp)"),
    Option("unjudged", "nonrelevant", _choice("unjudged", UNJUDGED), _text,
           "an unjudged retrieved document: non-relevant (label 0), removed from the "
           "ranking (condensed: trec_eval -J, ir_measures judged_only=True), or judged "
           "with grade unjudged_grade (relevant)"),
    Option("unjudged_grade", None, grade_check("unjudged_grade", allow_none=True), _optional_float,
           "unjudged='relevant': the grade of an unjudged retrieved document (None: the "
           "highest grade in the judgments)"),
    Option("no_nonrelevant", "one", _choice("no_nonrelevant", ("one", "nan")), _text,
           "bpref of a query with no judged non-relevant document: each retrieved relevant "
           "document counts 1 (trec_eval) or the query is NaN (ranx)"),
    Option("mult", 1.0, positive("mult"), float,
           "multiple of R at which RprecMult reads precision"),
    Option("weights", (1.0, -1.0, 0.0, 0.0), weights_check, number_list,
           "utility's weights (a, b, c, d) of relevant retrieved, non-relevant retrieved, "
           "relevant missed and non-relevant missed documents"),
    Option("collection_size", 0, _integer("collection_size", low=0), int,
           "utility: the number of documents in the collection (trec_eval -N), of which "
           "N + h - n - R are non-relevant and not retrieved"),
    Option("levels", ELEVEN_LEVELS, levels_check, number_list,
           "recall levels whose interpolated precisions IPrecAvg averages"),
    Option("recall_cutoff", "plus_0.9", _choice("recall_cutoff", RECALL_CUTOFFS), _text,
           "the count of relevant documents at recall level x: floor(x R + 0.9) (plus_0.9, "
           "trec_eval 9, pytrec_eval) or x R rounded, halves up (nearest, trec_eval 10)"),
    Option("beta", 1.0, positive("beta"), float,
           "SetF's weight of recall: (1 + beta) P R / (beta P + R), as trec_eval's set_F"),
    Option("target", 1.0, positive("target"), float,
           "C/W/L measures (INST, INSQ, BPM, NERR11): the total gain T the user wants, "
           "gains scaled to [0, 1] (cwl_eval's T)"),
    Option("alpha", 0.5, _fraction("alpha", open_ends=False), float,
           "intent-aware measures: redundancy intolerance, a subtopic's gain falls by "
           "(1 - alpha) each time a document covers it again (ndeval's alpha)"),
    Option("normalize", True, _flag("normalize"), _bool_text,
           "Compat: divide the overlap with the ideal ranking by the ideal ranking's "
           "overlap with itself (ir_measures' normalize)"),
)}

#: Options that set how a query with no relevant document counts.
EMPTY: Final = ("empty", "empty_weight")


def refuse_unknown(unknown: Mapping[str, Any] | list[str], where: str = "") -> None:
    """Raise for options no declaration knows, suggesting the closest known one."""
    known = ("k", *OPTIONS, "convention")
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise MetricDefinitionError(f"{where}unknown Metric option(s) {', '.join(parts)}; known "
                                f"options: {', '.join(known)}")


# -- display --------------------------------------------------------------------------------
def _fmt_num(x: float) -> str:
    """Shortest text of a number: ``3`` for 3.0, ``4.5`` for 4.5."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def display_value(value: Any) -> str:
    """A value as a display name writes it (``{1:3,2:9}``, ``0.95``, ``'2**rel'``)."""
    if isinstance(value, tuple) and not _is_table(value):  # plain numbers: (1,-1,0,0)
        return "(" + ",".join(_fmt_num(v) for v in value) + ")"
    if isinstance(value, tuple):
        return "{" + ",".join(f"{_fmt_num(k)}:{_fmt_num(v)}" for k, v in value) + "}"
    if isinstance(value, float):
        return _fmt_num(value)
    text = str(value)
    if isinstance(value, str) and re.search(r"[,()=]", text):
        return "'" + text + "'"
    return text


def _is_table(value: tuple[Any, ...]) -> bool:
    """Whether a tuple option value is a gain table (pairs), not plain numbers."""
    return bool(value) and isinstance(value[0], tuple)


def key_value(value: Any) -> str:
    """A value as an MLflow key writes it (letters, digits, ``.``, ``_``, ``-`` only)."""
    if isinstance(value, tuple):
        parts = ([f"{_fmt_num(k)}-{_fmt_num(v)}" for k, v in value] if _is_table(value)
                 else [_fmt_num(v) for v in value])
        text = "_".join(parts)
        if re.fullmatch(r"[0-9._-]+", text) and "e" not in text and len(text) <= 60:
            return "t" + text
        return "t" + _short_hash(display_value(value))
    if isinstance(value, float):
        return _fmt_num(value).replace("e+", "e")  # '+' is not allowed in MLflow keys
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9.]+", text):
        return text
    return "f" + _short_hash(text)


# -- the functions a gain and a discount stand for ------------------------------------------
def gain_function(spec: GainSpec) -> Callable[[np.ndarray], np.ndarray]:
    """Vectorised gain: labels (float array) -> gains; negative labels get 0."""
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


def discount_function(spec: DiscountSpec) -> Callable[[np.ndarray], np.ndarray]:
    """Vectorised discount: 0-based positions (int array) -> discounts."""
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
