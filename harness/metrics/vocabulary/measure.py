"""A measure as data: its declaration (:class:`Measure`), what its kernel reads
(:class:`MeasureInput`), and the built-in measures' declarations.

A built-in measure module declares its measures with :func:`builtin_measure`; the registry
(:mod:`harness.metrics.vocabulary.registry`) imports :mod:`harness.metrics.measures` and
registers what they declared. Nothing here imports the registry or the definition
(:class:`~harness.Metric`): a kernel reads a definition through :class:`MetricOptions`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np

from harness.errors import MetricDefinitionError
from harness.metrics.vocabulary.options import EMPTY, OPTIONS, GainSpec

if TYPE_CHECKING:
    from harness.metrics.layout.prepared import Prepared
    from harness.metrics.layout.ranking import Ranking

__all__ = ["Measure", "MeasureInput", "MetricOptions", "Cache", "Kernel", "builtin_measure",
           "make_measure", "DECLARED", "AGGREGATES", "UNJUDGED_BOUNDS", "GMEAN_FLOOR"]


class MetricOptions(Protocol):
    """What a kernel reads of a metric definition (:class:`~harness.Metric` is one)."""

    @property
    def k(self) -> int | None: ...
    @property
    def level(self) -> float: ...
    @property
    def gain(self) -> GainSpec: ...
    @property
    def gain_key(self) -> Any: ...
    def gain_function(self) -> Callable[[np.ndarray], np.ndarray]: ...
    @property
    def discount(self) -> str: ...
    def discount_function(self) -> Callable[[np.ndarray], np.ndarray]: ...
    @property
    def ideal(self) -> str: ...
    @property
    def ties(self) -> str: ...
    @property
    def display_name(self) -> str: ...
    @property
    def max_label(self) -> float | None: ...
    @property
    def min_label(self) -> float: ...
    @property
    def graded(self) -> Any: ...
    @property
    def normalize(self) -> Any: ...
    @property
    def p(self) -> float: ...
    @property
    def alpha(self) -> float: ...
    @property
    def beta(self) -> float: ...
    @property
    def mult(self) -> float: ...
    @property
    def target(self) -> Any: ...
    @property
    def levels(self) -> Any: ...
    @property
    def weights(self) -> Any: ...
    @property
    def recall_cutoff(self) -> Any: ...
    @property
    def no_nonrelevant(self) -> Any: ...
    @property
    def collection_size(self) -> Any: ...
    @property
    def at_recall(self) -> Any: ...


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


#: The built-in measures, each with the module that declared it, in declaration order; the
#: registry registers them on first use.
DECLARED: list[tuple[str, Measure]] = []


def make_measure(name: str, kernel: Kernel, *, display: str | None = None,
                 options: Iterable[str] = ("empty", "empty_weight"),
                 aliases: Iterable[str] = (), **flags: Any) -> Measure:
    """A :class:`Measure` from :func:`~harness.register_measure`'s arguments (``flags``:
    the declaration's other fields: ``binary``, ``formula``, ``aggregate``, ...)."""
    return Measure(name=name, display=display or name, kernel=kernel, options=tuple(options),
                   aliases=tuple(aliases), **flags)


def builtin_measure(name: str, kernel: Kernel | None = None, **declaration: Any) -> Any:
    """Declare a built-in measure (the registry registers it; see
    :func:`~harness.register_measure` for the arguments): with ``kernel``, returns its
    :class:`Measure`; without, a decorator returning the kernel unchanged."""
    declaration["builtin"] = True
    module = sys._getframe(1).f_globals.get("__name__", "")  # the family declaring it

    def declare(fn: Kernel) -> Measure:
        DECLARED.append((module, make_measure(name, fn, **declaration)))
        return DECLARED[-1][1]

    if kernel is not None:
        return declare(kernel)

    def decorator(fn: Kernel) -> Kernel:
        declare(fn)
        return fn

    return decorator


class MeasureInput:
    """What a kernel reads: the ranked rows of every query under the metric's tie rule.

    Arrays "per ranked row" are in ranked order, query after query (query code ``query``,
    0-based ``position``); arrays "per query" are indexed by query code. ``prep``,
    ``ranking`` and ``cache`` are the engine's own objects, for the built-in kernels.
    """

    def __init__(self, prep: Prepared, metric: MetricOptions, ranking: Ranking,
                 cache: Cache):
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
