"""Metric definitions: a frozen, hashable description of exactly which number to compute.

A :class:`Metric` holds every choice that changes an NDCG-family number (gain, discount,
cut-off, ideal ranking, tie rule, empty-query policy, relevance level, top grade), has a
canonical display name that leaves out defaults (``nDCG@10``, ``nDCG@10(gain=linear)``), and
an MLflow-safe key (``ndcg_at_10__gain_linear``). Display names parse back:
``parse_metric(m.display_name) == m``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from harness.errors import FormulaError, MetricDefinitionError
from harness.metrics.formula import Formula, compile_formula
from harness.metrics.names import parse_tool_name, split_top_level

__all__ = [
    "Metric",
    "parse_metric",
    "METRIC_NAMES",
    "TIE_MODES",
    "IDEAL_MODES",
    "EMPTY_POLICIES",
    "EMPTY_WEIGHTS",
    "CONVENTIONS",
    "GainSpec",
    "DiscountSpec",
]

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

#: Presets that reproduce a reference implementation's choices exactly (library versions
#: checked: xgboost 3.2.0, lightgbm 4.7.0, catboost 1.2.10, keras-rs 0.4.0). A ``k`` entry
#: is the cut-off a metric gets when ``k`` is not given.
CONVENTIONS: Final[dict[str, dict[str, Any]]] = {
    # sklearn.metrics.ndcg_score / dcg_score (y_true used as the gain, i.e. linear)
    "sklearn": {"gain": "linear", "discount": "log2", "ideal": "retrieved", "ties": "average",
                "empty": "zero"},
    # trec_eval ndcg / ndcg_cut_k / map / recip_rank / P_k (ties: docno descending)
    "trec_eval": {"gain": "linear", "discount": "log2", "ideal": "judged", "ties": "docid",
                  "empty": "zero"},
    # LightGBM ndcg@k: label_gain 2^i-1, std::stable_sort, all-zero query scores 1 and adds
    # that 1 unweighted to a weighted mean (its weight still counts in the denominator)
    "lightgbm": {"gain": "exp2", "discount": "log2", "ideal": "retrieved", "ties": "input",
                 "empty": "one", "empty_weight": "unweighted"},
    # XGBoost ndcg (default ndcg_exp_gain, stable sort, empty query scores 1, added
    # unweighted as LightGBM does); its metrics without '@k' cut at 32
    "xgboost": {"gain": "exp2", "discount": "log2", "ideal": "retrieved", "ties": "input",
                "empty": "one", "empty_weight": "unweighted", "k": 32},
    # keras_rs NDCG: exp2 gain, seeded shuffle of ties, masked dense lists, 0 when empty,
    # weighted by the mean weight of the lists with a relevant item
    "keras_rs": {"gain": "exp2", "discount": "log2", "ideal": "retrieved", "ties": "random",
                 "empty": "zero", "empty_weight": "mean"},
    # ranx 0.3 ndcg (Jarvelin: linear gain), ideal over the qrels, 0 when empty; ties in
    # the order its Run's quicksort leaves them (insertion order up to 15 documents)
    "ranx": {"gain": "linear", "discount": "log2", "ideal": "judged", "ties": "quicksort",
             "empty": "zero"},
    # CatBoost NDCG (type=Base: linear gain, denominator=LogPosition: log2; tied documents
    # ranked relevant-last; a group without relevant document scores 1, own group weight)
    "catboost": {"gain": "linear", "discount": "log2", "ideal": "retrieved",
                 "ties": "pessimistic", "empty": "one"},
}

GainSpec = str | tuple[tuple[float, float], ...]
DiscountSpec = str

_UNSET: Any = object()


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


@dataclass(frozen=True, init=False)
class Metric:
    """A ranking-metric definition: every choice that changes the number, made explicit.

    Parameters
    ----------
    name : str
        The measure, one of :data:`METRIC_NAMES`: 'dcg', 'ndcg', 'mndcg', 'ap', 'rr',
        'precision', 'recall', 'err', 'rprec', 'bpref', 'success', 'judged', 'rbp',
        'rbp_residual', 'f1', 'iprec' (aliases such as ``map``, ``mrr``, ``P`` are accepted;
        see :mod:`harness.metrics.measures` for the new ones).
    k : int >= 1 or None, default None
        Cut-off: only the first ``k`` ranked documents count. ``None`` means the whole list.
    gain : 'exp2', 'linear', dict or str, default 'exp2'
        Gain of a document with label ``rel``: ``exp2`` is :math:`2^{rel}-1`, ``linear`` is
        :math:`rel`; a ``{label: gain}`` table (labels it does not list keep their linear
        gain, as trec_eval's ``ndcg.1=3,2=9``), or a formula over ``rel`` (see
        :mod:`harness.metrics.formula`). Negative labels always have gain 0.
    discount : str, default 'log2'
        Discount of rank :math:`i` (1-based): ``log2`` :math:`1/\\log_2(i+1)`; ``ln`` or
        ``log<b>`` (e.g. ``log10``) :math:`1/\\log_b(i+1)`; ``reciprocal`` :math:`1/i`;
        ``none`` 1; or a formula over ``rank``.
    ideal : {'judged', 'retrieved'}, default 'judged'
        Which labels form the ideal ranking (nDCG) or count as relevant (AP, recall):
        every judged document of the query, retrieved or not (trec_eval, ranx), or only those
        of the ranked list (sklearn, keras_rs, LightGBM, XGBoost).
    ties : str, default 'average'
        Order of documents with equal scores: ``average`` the expected value over every
        order of each tied group (McSherry & Najork 2008; sklearn); ``random`` a shuffle
        seeded by ``seed`` (keras_rs); ``input`` row order (LightGBM, XGBoost); ``docid``
        docid descending as strings after rounding scores to float32, as trec_eval
        compares them (trec_eval); ``optimistic`` / ``pessimistic`` relevant
        documents first / last; ``quicksort`` the order numba's unstable quicksort
        ``argsort`` of the negated scores, in row order, leaves them: row order up to 15
        documents per query, a fixed scramble from 16 on (ranx 0.3's ``Run``);
        ``quicksort2`` that sort applied twice (ranx's ``make_comparable=True`` sorts the
        run again); ``quicksort_reversed`` the same quicksort of the scores ascending, read
        backwards (``ranx.evaluate`` given plain dicts: short queries' ties reversed).
    seed : int >= 0, default 0
        Seed of ``ties='random'``; the shuffle depends on (seed, qid, docid) only, not on row
        order.
    empty : {'zero', 'one', 'exclude', 'nan'}, default 'zero'
        Value of a query with no relevant document (ideal DCG 0): 0 (sklearn, trec_eval,
        keras_rs), 1 (LightGBM, XGBoost, CatBoost), left out of the mean (and counted), or
        NaN.
    empty_weight : {'own', 'unweighted', 'mean'}, default 'own'
        How such a query counts in a weighted mean (:func:`~harness.aggregate`; without
        weights all three agree): with its own weight (CatBoost); its value enters the
        numerator with weight 1 while its own weight stays in the denominator (LightGBM,
        XGBoost); or with the mean weight of the queries that have a relevant document and
        a positive weight, 1 if there are none (keras_rs, one batch). Reset to ``'own'``
        where it cannot change the mean (``empty`` 'exclude' or 'nan'; 'zero' with
        'unweighted').
    level : int >= 1, default 1
        Binary metrics (ap, rr, precision, recall) count ``label >= level`` as relevant
        (trec_eval ``-l``).
    max_label : float or None, default None
        Top grade of the scale, for ``mndcg`` and ``err``; ``None`` takes the highest label
        in the evaluated data.
    p : float in (0, 1), default 0.8
        Persistence of ``rbp`` and ``rbp_residual`` (rank-biased precision).
    at_recall : float in [0, 1], default 0
        Recall level of ``iprec`` (interpolated precision, trec_eval
        ``iprec_at_recall_0.50``).
    convention : str or None, default None
        A preset from :data:`CONVENTIONS` (``sklearn``, ``trec_eval``, ``lightgbm``,
        ``xgboost``, ``keras_rs``, ``ranx``, ``catboost``) that sets every option it names;
        options given explicitly win over it. ``xgboost`` also sets ``k=32`` when ``k`` is
        not given, as XGBoost's ``ndcg`` (``map``, ``pre``) without ``@k`` counts the first
        32 documents; an explicit ``k`` (``None`` included) wins.

    Notes
    -----
    With ranked gains :math:`g_i` and discounts :math:`d_i`,
    :math:`DCG@k = \\sum_{i=1}^{k} g_i d_i`, :math:`nDCG@k = DCG@k / IDCG@k` where IDCG sorts
    the ideal labels by gain, and :math:`mnDCG@k = DCG@k / \\sum_{i=1}^{L} g(max\\_label)
    d_i` with :math:`L = k` or the list length. Options that do not affect a metric are
    reset to their defaults, so equal definitions compare and hash equal.

    References
    ----------
    K. Järvelin and J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002. F. McSherry and M. Najork, "Computing information retrieval
    performance measures efficiently in the presence of tied scores", ECIR 2008.

    Examples
    --------
    >>> Metric("ndcg", k=10)
    Metric('nDCG@10')
    >>> Metric("ndcg", k=10, convention="trec_eval").display_name
    'nDCG@10(gain=linear,ties=docid)'
    >>> Metric("ndcg", k=10, gain="linear").key
    'ndcg_at_10__gain_linear'
    """

    name: str
    k: int | None
    gain: GainSpec
    discount: DiscountSpec
    ideal: str
    ties: str
    seed: int
    empty: str
    empty_weight: str
    level: int
    max_label: float | None
    p: float
    at_recall: float
    convention: str | None = field(compare=False, hash=False)

    def __init__(
        self,
        name: str,
        *,
        k: Any = _UNSET,
        gain: Any = _UNSET,
        discount: Any = _UNSET,
        ideal: Any = _UNSET,
        ties: Any = _UNSET,
        seed: Any = _UNSET,
        empty: Any = _UNSET,
        empty_weight: Any = _UNSET,
        level: Any = _UNSET,
        max_label: Any = _UNSET,
        p: Any = _UNSET,
        at_recall: Any = _UNSET,
        convention: str | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            _refuse_unknown_options(unknown)
        canonical = _ALIASES.get(str(name).strip().lower()) if isinstance(name, str) else None
        if canonical is None:
            raise MetricDefinitionError(
                f"unknown metric {name!r}; known metrics: {', '.join(METRIC_NAMES)}"
            )
        given = dict(gain=gain, discount=discount, ideal=ideal, ties=ties, seed=seed,
                     empty=empty, empty_weight=empty_weight, level=level,
                     max_label=max_label, p=p, at_recall=at_recall)
        preset: dict[str, Any] = {}
        if convention is not None:
            _check_choice("convention", convention, tuple(CONVENTIONS))
            preset = CONVENTIONS[convention]
        values = {
            opt: (val if val is not _UNSET else preset.get(opt, _DEFAULTS[opt]))
            for opt, val in given.items()
        }
        _validate_options(values)  # every value must be valid, even where it has no effect
        values = {
            opt: (val if opt in _RELEVANT[canonical] else _DEFAULTS[opt])
            for opt, val in values.items()
        }
        if values["ties"] != "random":
            values["seed"] = 0
        if values["empty"] in ("exclude", "nan") or (values["empty"], values["empty_weight"]) \
                == ("zero", "unweighted"):
            values["empty_weight"] = "own"
        if k is _UNSET:
            k = preset.get("k")
        put = object.__setattr__
        put(self, "name", canonical)
        put(self, "k", _check_int("k", k, low=1, allow_none=True))
        put(self, "gain", _normalize_gain(values["gain"]))
        put(self, "discount", _normalize_discount(values["discount"]))
        put(self, "ideal", _check_choice("ideal", values["ideal"], IDEAL_MODES))
        put(self, "ties", _check_choice("ties", values["ties"], TIE_MODES))
        put(self, "seed", _check_int("seed", values["seed"], low=0))
        put(self, "empty", _check_choice("empty", values["empty"], EMPTY_POLICIES))
        put(self, "empty_weight", values["empty_weight"])
        put(self, "level", _check_int("level", values["level"], low=1))
        ml = values["max_label"]
        if ml is not None:
            try:
                ml = float(ml)
            except (TypeError, ValueError):
                raise MetricDefinitionError(f"max_label must be a number, got {ml!r}") from None
            if not math.isfinite(ml) or ml <= 0:
                raise MetricDefinitionError(f"max_label must be finite and > 0, got {ml!r}")
        put(self, "max_label", ml)
        put(self, "p", _check_fraction("p", values["p"], 0.0, 1.0, open_ends=True))
        put(self, "at_recall", _check_fraction("at_recall", values["at_recall"], 0.0, 1.0,
                                               open_ends=False))
        if canonical in _NO_CUTOFF:  # over the whole list: a cut-off changes nothing
            put(self, "k", None)
        put(self, "convention", convention)

    # -- derived -------------------------------------------------------------------------
    def options(self) -> dict[str, Any]:
        """The options that differ from the defaults, in canonical order."""
        return {
            opt: getattr(self, opt)
            for opt in _OPTIONS
            if opt in _RELEVANT[self.name] and getattr(self, opt) != _DEFAULTS[opt]
        }

    @property
    def display_name(self) -> str:
        """Canonical readable name, e.g. ``nDCG@10(gain=linear,ties=docid)``."""
        text = _DISPLAY[self.name] + (f"@{self.k}" if self.k is not None else "")
        opts = self.options()
        if opts:
            text += "(" + ",".join(f"{o}={_display_value(v)}" for o, v in opts.items()) + ")"
        return text

    @property
    def key(self) -> str:
        """MLflow-safe key (only ``[A-Za-z0-9_.-]``), unique per definition."""
        text = self.name + (f"_at_{self.k}" if self.k is not None else "")
        for opt, value in self.options().items():
            text += f"__{opt}_{_key_value(value)}"
        return text

    @property
    def binary(self) -> bool:
        """Whether relevance is binary (``label >= level``) for this metric."""
        return self.name in _BINARY

    def with_options(self, **changes: Any) -> Metric:
        """A copy with some options changed (``k``, ``ties``, ...)."""
        current = {"k": self.k, **{o: getattr(self, o) for o in _OPTIONS}}
        current.update(changes)
        gain = current.pop("gain")
        return Metric(self.name, gain=dict(gain) if isinstance(gain, tuple) else gain, **current)

    def gain_function(self) -> Any:
        """Vectorised gain: labels (float array) -> gains; negative labels get 0."""
        return _gain_function(self.gain)

    def discount_function(self) -> Any:
        """Vectorised discount: 0-based positions (int array) -> discounts."""
        return _discount_function(self.discount)

    def __repr__(self) -> str:
        return f"Metric({self.display_name!r})"

    def __str__(self) -> str:
        return self.display_name


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


# -- parsing ---------------------------------------------------------------------------------
_NAME_RE = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_]*?)(?:(?:@|_cut_|_)(\d+))?\s*(?:\((.*)\))?\s*$", re.S)


def parse_metric(text: str, **options: Any) -> Metric:
    """Parse a metric name such as ``"ndcg@10"``, ``"P@5"``, ``"map"`` or a display name.

    Display names round-trip: ``parse_metric(m.display_name) == m``. Keyword options are
    passed to :class:`Metric` and win over options written in the text.

    Examples
    --------
    >>> parse_metric("ndcg@10", gain="linear")
    Metric('nDCG@10(gain=linear)')
    >>> parse_metric("nDCG@5(ties=input)").ties
    'input'
    """
    if not isinstance(text, str):
        raise MetricDefinitionError(f"a metric name must be a string, got {text!r}")

    tool = parse_tool_name(text)  # trec_eval, ir_measures and ranx spellings
    if tool is not None:
        name, written = tool
        return Metric(name, **{**written, **options})
    m = _NAME_RE.match(text)
    if not m or m.group(1).lower() not in _ALIASES:
        raise MetricDefinitionError(
            f"unknown metric {text!r}; known metrics: {', '.join(METRIC_NAMES)} "
            "(written like 'ndcg@10', 'P@5', 'map' or 'nDCG@10(gain=linear)')"
        )
    name, k, opts_text = m.group(1), m.group(2), m.group(3)
    parsed: dict[str, Any] = _parse_options(opts_text, text) if opts_text else {}
    if k is not None:
        parsed["k"] = int(k)
    parsed.update(options)
    return Metric(name, **parsed)


def _parse_options(text: str, whole: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in split_top_level(text):
        if "=" not in part:
            raise MetricDefinitionError(f"in {whole!r}: expected option=value, got {part!r}")
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in _OPTIONS:
            raise MetricDefinitionError(
                f"in {whole!r}: unknown option {key!r}; options: {', '.join(_OPTIONS)}"
            )
        out[key] = _parse_value(key, value)
    return out


def _parse_value(key: str, value: str) -> Any:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if value.startswith("{") and value.endswith("}"):
        table = {}
        for item in split_top_level(value[1:-1]):
            a, _, b = item.partition(":")
            table[float(a)] = float(b)
        return table
    if key in ("seed", "level"):
        return int(value)
    if key in ("p", "at_recall"):
        return float(value)
    if key == "max_label":
        return None if value == "None" else float(value)
    return value
