"""The measure registry: each measure is one declaration.

A :class:`Measure` names the measure (canonical name, display name, aliases), the options
that change its number (declared in :mod:`harness.metrics.vocabulary.options`), whether it is binary
(``label >= level``), graded, cut at ``k``, whether it reads which ranked documents are
judged, its formula for the docs, and its kernel. :class:`~harness.Metric`,
:func:`~harness.parse_metric`, :func:`~harness.evaluate`, the Hydra ``metric`` config and the
report read measures from here only; the built-in ones are declared in
:mod:`harness.metrics.measures`.

Users add their own with :func:`register_measure`:

>>> import numpy as np
>>> from harness.metrics.vocabulary.registry import register_measure, unregister_measure
>>> @register_measure("in_top", display="InTop", binary=True,
...                   formula="number of relevant documents in the top k")
... def in_top(x):
...     return x.top_k_sum(x.relevant()), x.n_relevant() == 0
>>> unregister_measure("in_top")
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from harness.errors import MetricDefinitionError
from harness.metrics.vocabulary.options import EMPTY, OPTIONS

if TYPE_CHECKING:
    from harness.metrics.vocabulary.definition import Metric
    from harness.metrics.layout.prepared import Prepared
    from harness.metrics.layout.ranking import Ranking

__all__ = ["Measure", "MeasureInput", "Cache", "register_measure", "unregister_measure",
           "get_measure", "lookup", "measures", "measure_table", "load_plugins",
           "ENTRY_POINT_GROUP"]

#: A kernel: per-query values (float64, one per query code) and the mask of queries with
#: no relevant document (their value is then set by the ``empty`` option).
Kernel = Callable[["MeasureInput"], tuple[np.ndarray, np.ndarray]]


class Cache(dict[tuple[Any, ...], Any]):
    """Per-call memo of gains, discounts and ideal orders shared between metrics."""

    def get_or(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        if key not in self:
            self[key] = make()
        return self[key]


@dataclass(frozen=True)
class Measure:
    """The declaration of one measure.

    Parameters
    ----------
    name : str
        Canonical name, lower case (``ndcg``); what :class:`~harness.Metric` stores.
    display : str
        Display name (``nDCG``), the stem of every display name of the measure.
    kernel : callable
        ``kernel(x: MeasureInput) -> (values, empty)``.
    options : tuple of str
        The options of :data:`~harness.metrics.vocabulary.options.OPTIONS` that change its number;
        the others are reset to their defaults. ``ties`` and ``seed`` apply to every
        measure; ``empty`` and ``empty_weight`` to every measure with an ``empty`` mask.
    aliases : tuple of str
        Other names it is written by (``map`` for ``ap``), matched without case.
    cutoff : bool
        Whether ``k`` cuts the ranking (False: ``k`` is reset to None).
    binary, graded : bool
        Relevance is ``label >= level``, or the measure reads the grades.
    reads_judged : bool
        It looks at whether each ranked document is judged (not only at its label), so it
        ranks every retrieved row.
    reads_top_k : bool
        With ``ideal='judged'`` where it has that option, its value reads only the ranked
        rows that can reach the top k (all rows without k) and of the query's judgments
        their relevance (``label >= level``) or gains, not the rows below, the list's
        length nor how many are judged: :func:`harness.judgment_interval` evaluates its
        labelings on those rows, without the judgments 0 of documents off the list.
    top_grade : bool
        It is scaled by the scale's top grade (``max_label``).
    formula : str
        The formula, for the docs (Markdown).
    matches : str
        The other tools' names of the measure that it is tested against, for the docs.
    sklearn : bool
        ``sklearn.metrics.ndcg_score`` computes it (for the cross-check), where its options
        allow (:func:`harness.metrics.sklearn_check.sklearn_expressible`).
    aggregate : {'mean', 'sum', 'gmean'}
        How its per-query values summarise over queries: their mean; their sum (counts
        such as trec_eval's ``num_ret``); or their geometric mean with each value floored
        at 1e-5 (trec_eval's ``gm_map``, ``gm_bpref``).
    unjudged_bounds : {'', 'monotone', 'swap', 'ideal'}
        How its value moves with the labels of unjudged retrieved documents, which gives
        :func:`harness.judgment_interval` exact bounds without trying every labeling:
        ``monotone``, in one direction with each label and reading no R or ideal (the
        extremes are all-lowest, all-highest or one document labelled); ``swap``, binary,
        a function of the ranked relevance and R that moving relevance up (R fixed) changes
        in one direction only (the extremes label the top or the bottom s of them, for some
        s); ``ideal``, a gain sum over its ideal ranking's (the extremes sort a multiset of
        grades over the ranks); '' nothing declared.
    unit_range : bool
        Its per-query value lies in [0, 1] under any labels (the bound
        :func:`harness.judgment_interval` gives where it finds none closer).
    subtopics : bool
        It reads subtopic (intent) judgments, the qrels' ``subtopic`` column (``harness
        eval`` then reads the TREC qrels' second column as the subtopic).
    """

    name: str
    display: str
    kernel: Kernel
    options: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    cutoff: bool = True
    binary: bool = False
    graded: bool = False
    reads_judged: bool = False
    reads_top_k: bool = False
    top_grade: bool = False
    formula: str = ""
    matches: str = ""
    sklearn: bool = False
    aggregate: str = "mean"
    unjudged_bounds: str = ""
    unit_range: bool = False
    subtopics: bool = False
    builtin: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise MetricDefinitionError(f"a measure name is lower-case letters, digits and _, "
                                        f"starting with a letter; got {self.name!r}")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", self.display):
            raise MetricDefinitionError(f"measure {self.name!r}: display name must be letters, "
                                        f"digits and _, got {self.display!r}")
        unknown = [o for o in self.options if o not in OPTIONS]
        if unknown:
            raise MetricDefinitionError(f"measure {self.name!r}: unknown option(s) "
                                        f"{', '.join(map(repr, unknown))}; options: "
                                        f"{', '.join(OPTIONS)}")
        if self.unjudged_bounds not in UNJUDGED_BOUNDS:
            raise MetricDefinitionError(f"measure {self.name!r}: unjudged_bounds must be one "
                                        f"of {UNJUDGED_BOUNDS}, got {self.unjudged_bounds!r}")
        if self.aggregate not in AGGREGATES:
            raise MetricDefinitionError(f"measure {self.name!r}: aggregate must be one of "
                                        f"{', '.join(AGGREGATES)}, got {self.aggregate!r}")
        if not callable(self.kernel):
            raise MetricDefinitionError(f"measure {self.name!r}: kernel must be callable, got "
                                        f"{self.kernel!r}")
        if self.binary and "level" not in self.options:
            object.__setattr__(self, "options", (*self.options, "level"))
        # every measure orders ties and says what an unjudged document is; its options in
        # the canonical order of OPTIONS
        wanted = {*self.options, "ties", "seed", "unjudged", "unjudged_grade"}
        object.__setattr__(self, "options", tuple(o for o in OPTIONS if o in wanted))

    @property
    def has_empty(self) -> bool:
        """Whether a query can be empty for it (it reads the ``empty`` options)."""
        return all(o in self.options for o in EMPTY)


#: How per-query values summarise (see :attr:`Measure.aggregate`).
AGGREGATES: Final = ("mean", "sum", "gmean")
#: How a measure's value moves with unjudged documents' labels (Measure.unjudged_bounds).
UNJUDGED_BOUNDS: Final = ("", "monotone", "swap", "ideal")
#: The floor of a value in a geometric mean (trec_eval's MIN_GEO_MEAN).
GMEAN_FLOOR: Final = 1e-5

_REGISTRY: dict[str, Measure] = {}
_ALIASES: dict[str, str] = {}


def register_measure(name: str, kernel: Kernel | None = None, *, display: str | None = None,
                     options: Iterable[str] = ("empty", "empty_weight"),
                     aliases: Iterable[str] = (), cutoff: bool = True, binary: bool = False,
                     graded: bool = False, reads_judged: bool = False, top_grade: bool = False,
                     reads_top_k: bool = False, formula: str = "", matches: str = "",
                     sklearn: bool = False,
                     aggregate: str = "mean", unjudged_bounds: str = "",
                     unit_range: bool = False, subtopics: bool = False, replace: bool = False,
                     builtin: bool = False) -> Any:
    """Declare a measure, usable by name everywhere a metric is named.

    Called with a kernel it registers it and returns the :class:`Measure`; without one it
    is a decorator that registers the function and returns it unchanged. The kernel gets a
    :class:`MeasureInput` and returns ``(values, empty)``: per query code, the value and
    whether the query has no relevant document. ``options`` lists what changes the number
    (default: the empty policy only; ``binary=True`` adds ``level``). A name or alias
    already taken raises unless ``replace=True``.
    """
    def add(fn: Kernel) -> Measure:
        spec = Measure(name=name, display=display or name, kernel=fn, options=tuple(options),
                       aliases=tuple(aliases), cutoff=cutoff, binary=binary, graded=graded,
                       reads_judged=reads_judged, reads_top_k=reads_top_k,
                       top_grade=top_grade, formula=formula,
                       matches=matches, sklearn=sklearn, aggregate=aggregate,
                       unjudged_bounds=unjudged_bounds, unit_range=unit_range,
                       subtopics=subtopics,
                       builtin=builtin)
        spellings = {spec.name, spec.display.lower(), *(a.lower() for a in spec.aliases)}
        if not replace:
            taken = sorted(s for s in spellings if s in _ALIASES)
            if taken:
                raise MetricDefinitionError(
                    f"measure {name!r}: {', '.join(map(repr, taken))} already name(s) measure "
                    f"{_ALIASES[taken[0]]!r}; pass replace=True to replace it")
        elif name in _REGISTRY:
            unregister_measure(name)
        _REGISTRY[spec.name] = spec
        for s in spellings:
            _ALIASES[s] = spec.name
        return spec

    if kernel is not None:
        return add(kernel)

    def decorator(fn: Kernel) -> Kernel:
        add(fn)
        return fn

    return decorator


def unregister_measure(name: str) -> None:
    """Remove a measure registered by :func:`register_measure` (not a built-in one)."""
    spec = _REGISTRY.get(name)
    if spec is None:
        raise MetricDefinitionError(f"no measure {name!r} is registered")
    if spec.builtin:
        raise MetricDefinitionError(f"measure {name!r} is built in and cannot be removed")
    del _REGISTRY[name]
    for alias in [a for a, n in _ALIASES.items() if n == name]:
        del _ALIASES[alias]


def lookup(spelling: str) -> Measure | None:
    """The measure a name or alias stands for (case-insensitive), or None; installed
    plugins (:func:`load_plugins`) are looked at when the name is not found."""
    name = _ALIASES.get(spelling.strip().lower())
    if name is None and not _plugins_loaded:
        load_plugins()
        name = _ALIASES.get(spelling.strip().lower())
    return None if name is None else _REGISTRY[name]


#: The entry-point group through which installed packages declare measures: a package's
#: ``[project.entry-points."harness.measures"]`` table names modules that call
#: :func:`register_measure` when imported. They are imported the first time a name is not
#: found, so the app and every command know them without any configuration.
ENTRY_POINT_GROUP: Final = "harness.measures"
_plugins_loaded = False


def load_plugins() -> None:
    """Import the modules installed packages declare under :data:`ENTRY_POINT_GROUP`."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:  # a broken plugin names itself, not a traceback
            raise MetricDefinitionError(
                f"the measures of {ep.name!r} ({ep.value}, entry point group "
                f"{ENTRY_POINT_GROUP!r}) failed to load: {type(exc).__name__}: {exc}") from exc


def get_measure(name: str) -> Measure:
    """The measure ``name`` (or an alias) stands for; raises naming the known ones."""
    spec = lookup(name) if isinstance(name, str) else None
    if spec is None and isinstance(name, str) and not _plugins_loaded:
        load_plugins()
        spec = lookup(name)
    if spec is None:
        raise MetricDefinitionError(f"unknown metric {name!r}; known metrics: "
                                    f"{', '.join(_REGISTRY)}")
    return spec


def measures() -> tuple[Measure, ...]:
    """Every registered measure, built-in ones first, in declaration order."""
    return tuple(_REGISTRY.values())


class MeasureInput:
    """What a kernel reads: the ranked rows of every query under the metric's tie rule.

    Arrays "per ranked row" are in ranked order, query after query (query code ``query``,
    0-based ``position``); arrays "per query" are indexed by query code. ``prep``,
    ``ranking`` and ``cache`` are the engine's own objects, for the built-in kernels.
    """

    def __init__(self, prep: Prepared, metric: Metric, ranking: Ranking, cache: Cache):
        self.prep, self.metric, self.ranking, self.cache = prep, metric, ranking, cache

    @property
    def n_queries(self) -> int:
        return self.prep.n_queries

    @property
    def query(self) -> np.ndarray:
        """Query code per ranked row."""
        return self.ranking.q

    @property
    def position(self) -> np.ndarray:
        """0-based rank per ranked row."""
        return self.ranking.pos

    @property
    def label(self) -> np.ndarray:
        """Label per ranked row (0 where unjudged)."""
        return self.ranking.label

    def relevant(self) -> np.ndarray:
        """Per ranked row, 1.0 when ``label >= level`` (the metric's level), else 0.0."""
        return self.cache.get_or(("rel", id(self.ranking), self.metric.level),
                                 lambda: (self.ranking.label >= self.metric.level)
                                 .astype(np.float64))

    def n_relevant(self) -> np.ndarray:
        """Per query, the judged documents with ``label >= level``, retrieved or not."""
        return self.prep.relevant_counts(self.metric.level).astype(np.float64)

    def n_docs(self) -> np.ndarray:
        """Per query, the retrieved documents."""
        return self.prep.n_docs.astype(np.float64)

    def top_k_sum(self, values: np.ndarray) -> np.ndarray:
        """Per query, the sum of per-ranked-row ``values`` over the top ``k`` (all rows
        without a cut-off); with ``ties='average'`` each value is first replaced by its tie
        group's mean, the exact expectation over the orders of the group."""
        from harness.metrics.layout.ranked import topk_sum

        r = self.ranking
        return topk_sum(r, r.group_mean(values), self.metric.k, self.prep.n_queries)

    @cached_property
    def judged(self) -> np.ndarray:
        """Per ranked row, 1.0 when the document is judged (measures with
        ``reads_judged=True`` only: others rank the rows that can reach the top k)."""
        judged = self.ranking.grouped_judged
        if judged is None:  # pragma: no cover - prepare() always records it
            raise MetricDefinitionError(f"{self.metric.display_name} needs to know which "
                                        "ranked documents are judged; this input does not say")
        return judged[self.ranking.perm].astype(np.float64)

    @cached_property
    def negative(self) -> np.ndarray:
        """Per ranked row, 1.0 when the document is judged with a negative label (under
        ``negative_labels='unjudged'``: trec_eval's "in the pool, not judged", which infAP
        counts apart from documents outside the pool); such a row is not judged."""
        negative = self.ranking.grouped_negative
        if negative is None:
            return np.zeros(len(self.ranking.perm))
        return negative[self.ranking.perm].astype(np.float64)


def measure_table() -> str:
    """The Markdown table of every registered measure, as docs/measures.md shows it."""
    rows = ["| measure | aliases | k | relevance | options | formula | tested against |",
            "|---|---|---|---|---|---|---|"]
    for m in measures():
        kind = "binary (label ≥ level)" if m.binary else ("graded" if m.graded else "–")
        opts = ", ".join(o for o in m.options if o not in ("ties", "seed", "unjudged_grade"))
        rows.append(f"| `{m.display}` (`{m.name}`) | {', '.join(f'`{a}`' for a in m.aliases)} "
                    f"| {'yes' if m.cutoff else 'no'} | {kind} | {opts} | {m.formula} "
                    f"| {m.matches} |")
    return "\n".join(rows) + "\n"


#: How the docs mark the generated table.
TABLE_MARKERS: Final = ("<!-- measures:begin -->", "<!-- measures:end -->")
