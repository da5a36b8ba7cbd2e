"""Metric definitions: a frozen, hashable description of exactly which number to compute.

A :class:`Metric` holds every choice that changes an NDCG-family number (gain, discount,
cut-off, ideal ranking, tie rule, empty-query policy, relevance level, top grade), has a
canonical display name that leaves out defaults (``nDCG@10``, ``nDCG@10(gain=linear)``), and
an MLflow-safe key (``ndcg_at_10__gain_linear``). Display names parse back:
``parse_metric(m.display_name) == m``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.errors import MetricDefinitionError
from harness.metrics.vocabulary.conventions import CONVENTIONS
from harness.metrics.vocabulary.names import parse_tool_name, split_top_level
from harness.metrics.vocabulary.options import (
    EMPTY_POLICIES,
    EMPTY_WEIGHTS,
    IDEAL_MODES,
    OPTIONS,
    TIE_MODES,
    DiscountSpec,
    GainSpec,
    check_k,
    discount_function,
    display_value,
    gain_function,
    key_value,
    refuse_unknown,
)
from harness.metrics.vocabulary.registry import (
    Measure,
    MeasureInput,
    get_measure,
    lookup,
    measures,
    register_measure,
    unregister_measure,
)

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
    "Measure",
    "MeasureInput",
    "register_measure",
    "unregister_measure",
]

#: The built-in measures' names, in the order the docs' measure table lists them.
METRIC_NAMES = tuple(m.name for m in measures() if m.builtin)
_OPTIONS = tuple(OPTIONS)
_DEFAULTS = {name: o.default for name, o in OPTIONS.items()}

_UNSET: Any = object()


@dataclass(frozen=True, init=False, eq=False)
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
        :mod:`harness.metrics.vocabulary.formula`). Negative labels always have gain 0.
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
        docid descending as strings among equal scores (trec_eval 10.0; gdeval: ir_measures'
        ``nDCG(dcg=exp-log2)``, ``ERR``; ``docid_exact`` reads as ``docid``);
        ``docid_float32`` the same after rounding scores to float32 (trec_eval 9.x,
        pytrec_eval); ``docid_ascending`` docid ascending among equal scores (ir_measures'
        ``Judged``); ``optimistic`` / ``pessimistic`` relevant documents first / last;
        ``quicksort`` the order numba's unstable quicksort
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
    mult : float > 0, default 1
        ``rprec_mult``: precision at ``mult`` times R (trec_eval ``Rprec_mult_0.20``).
    weights : 4 numbers, default (1, -1, 0, 0)
        ``utility``'s weights of relevant retrieved, non-relevant retrieved, relevant missed
        and non-relevant missed documents (trec_eval ``utility.a,b,c,d``).
    collection_size : int >= 0, default 0
        ``utility``: the collection's size N (trec_eval ``-N``), read by the fourth weight.
    levels : tuple of recall levels in [0, 1], default (0, 0.1, ..., 1)
        ``iprec_avg``: the levels of interpolated precision it averages (``11pt_avg``).
    recall_cutoff : {'plus_0.9', 'nearest'}, default 'plus_0.9'
        ``iprec``, ``iprec_avg``: recall level x is reached at the ``floor(x R + 0.9)``-th
        relevant document (trec_eval 9, pytrec_eval) or the ``round(x R)``-th (trec_eval 10).
    beta : float > 0, default 1
        ``set_f``: :math:`(1 + beta) P R / (beta P + R)`, as trec_eval's ``set_F`` (beta
        not squared).
    target : float > 0, default 1
        ``inst``, ``insq``, ``bpm``, ``nerr11``: the total gain T the user wants, with gains
        scaled to [0, 1] by ``min_label`` and ``max_label`` (cwl_eval's and ir_measures' T).
    convention : str or None, default None
        A preset from :data:`CONVENTIONS` (``sklearn``, ``trec_eval`` (10.0), ``trec_eval9``
        (9.x, pytrec_eval), ``lightgbm``, ``xgboost``, ``keras_rs``, ``ranx``, ``catboost``)
        setting every option it names; options given explicitly win. ``xgboost`` also sets
        ``k=32`` when ``k`` is not given (XGBoost's ``ndcg`` without ``@k`` counts 32).

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
    min_label: float
    graded: bool
    unjudged: str
    unjudged_grade: float | None
    no_nonrelevant: str
    mult: float
    weights: tuple[float, ...]
    collection_size: int
    levels: tuple[float, ...]
    recall_cutoff: str
    beta: float
    target: float
    alpha: float
    normalize: bool
    convention: str | None = field(compare=False, hash=False)

    def __init__(self, name: str, *, k: Any = _UNSET, convention: str | None = None,
                 **options: Any) -> None:
        unknown = [o for o in options if o not in OPTIONS]
        if unknown:
            refuse_unknown(unknown)
        spec = get_measure(name)
        preset: dict[str, Any] = {}
        if convention is not None:
            if convention not in CONVENTIONS:
                raise MetricDefinitionError(
                    "convention must be one of "
                    f"{', '.join(repr(c) for c in CONVENTIONS)}; got {convention!r}")
            preset = CONVENTIONS[convention]
        put = object.__setattr__
        checked = {}
        for opt, decl in OPTIONS.items():
            given = options.get(opt, _UNSET)
            value = given if given is not _UNSET else preset.get(opt, decl.default)
            value = checked[opt] = decl.check(value)  # valid even where it has no effect
            put(self, opt, value if opt in spec.options else decl.default)
        _check_grade(checked["unjudged_grade"], checked["max_label"])
        if self.ties != "random":
            put(self, "seed", 0)
        if self.unjudged != "relevant":
            put(self, "unjudged_grade", None)
        elif getattr(spec, "subtopics", False):
            raise MetricDefinitionError(f"{spec.display}: unjudged='relevant' judges documents, "
                                        "not subtopics, and it reads subtopic judgments")
        if self.empty in ("exclude", "nan") or (self.empty, self.empty_weight) == \
                ("zero", "unweighted"):
            put(self, "empty_weight", "own")
        if k is _UNSET:
            k = preset.get("k")
        k = check_k(k)
        put(self, "name", spec.name)
        put(self, "k", k if spec.cutoff else None)  # over the whole list: k changes nothing
        put(self, "convention", convention)

    # -- derived -------------------------------------------------------------------------
    @property
    def measure(self) -> Measure:
        """The measure's declaration (:class:`~harness.metrics.vocabulary.registry.Measure`)."""
        return get_measure(self.name)

    def options(self) -> dict[str, Any]:
        """The options that differ from the defaults, in canonical order."""
        spec = self.measure
        return {opt: getattr(self, opt) for opt in spec.options
                if getattr(self, opt) != _DEFAULTS[opt]}

    @property
    def display_name(self) -> str:
        """Canonical readable name, e.g. ``nDCG@10(gain=linear,ties=docid)``."""
        text = self.measure.display + (f"@{self.k}" if self.k is not None else "")
        opts = self.options()
        if opts:
            text += "(" + ",".join(f"{o}={display_value(v)}" for o, v in opts.items()) + ")"
        return text

    @property
    def key(self) -> str:
        """MLflow-safe key (only ``[A-Za-z0-9_.-]``), unique per definition."""
        text = self.name + (f"_at_{self.k}" if self.k is not None else "")
        for opt, value in self.options().items():
            text += f"__{opt}_{key_value(value)}"
        return text

    @property
    def binary(self) -> bool:
        """Whether relevance is binary (``label >= level``) for this metric."""
        return self.measure.binary

    def with_options(self, **changes: Any) -> Metric:
        """A copy with some options changed (``k``, ``ties``, ...)."""
        current = {"k": self.k, **{o: getattr(self, o) for o in _OPTIONS}}
        current.update(changes)
        gain = current.pop("gain")
        return Metric(self.name, gain=dict(gain) if isinstance(gain, tuple) else gain, **current)

    def gain_function(self) -> Any:
        """Vectorised gain: labels (float array) -> gains; negative labels, and labels below
        ``min_label``, get 0."""
        base = gain_function(self.gain)
        if not self.min_label:
            return base
        low = self.min_label
        return lambda rel: np.where(np.asarray(rel) >= low, base(rel), 0.0)

    @property
    def gain_key(self) -> tuple[Any, ...]:
        """What the gains depend on (for memos shared between metrics of one call)."""
        return (self.gain, self.min_label)

    def discount_function(self) -> Any:
        """Vectorised discount: 0-based positions (int array) -> discounts."""
        return discount_function(self.discount)

    def _identity(self) -> tuple[Any, ...]:
        """What makes two definitions equal: the measure, k and every declared option
        (options a measure does not read hold their defaults, so they agree)."""
        return (self.name, self.k, *(getattr(self, o) for o in OPTIONS))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Metric):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return f"Metric({self.display_name!r})"

    def __str__(self) -> str:
        return self.display_name


def _check_grade(grade: float | None, top: float | None) -> None:
    """``unjudged_grade`` may not exceed the scale's top grade (``max_label``) when set."""
    if grade is not None and top is not None and grade > top:
        raise MetricDefinitionError(f"unjudged_grade={grade:g} is above max_label={top:g}, "
                                    "the scale's top grade")


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
    tool = parse_tool_name(text, lookup)  # trec_eval, ir_measures and ranx spellings
    if tool is not None:
        name, written = tool
        return Metric(name, **{**written, **options})
    m = _NAME_RE.match(text)
    if not m or lookup(m.group(1)) is None:
        raise MetricDefinitionError(
            f"unknown metric {text!r}; known metrics: {', '.join(_known())} "
            "(written like 'ndcg@10', 'P@5', 'map' or 'nDCG@10(gain=linear)')")
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
                f"in {whole!r}: unknown option {key!r}; options: {', '.join(_OPTIONS)}")
        out[key] = _parse_value(key, value)
    return out


def _parse_value(key: str, value: str) -> Any:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    try:
        return OPTIONS[key].parse(value)
    except ValueError:
        raise MetricDefinitionError(f"option {key}={value!r} is not a valid value") from None


def _known() -> list[str]:
    return [m.name for m in measures()]
