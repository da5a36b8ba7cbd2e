"""Why two definitions of one metric disagree, option by option.

:func:`explain_difference` takes two definitions of a metric (conventions such as
``sklearn`` and ``trec_eval``, or explicit :class:`~harness.Metric` objects or names) and
splits the gap between their numbers into one contribution per option that differs: gain,
discount, ideal, ties, empty, level, unjudged, k (and the rest of a Metric's options), plus the
data-level choices of :func:`harness.evaluate` (``missing``: judged queries the run lacks;
``negative_labels``: how negative grades count).

Attribution is by exact Shapley values. Each subset of the differing options gives a hybrid
definition (definition A with those options switched to B's); an option's contribution is
its marginal effect averaged over every order in which the options could be switched:

    phi_i = sum over S not holding i of |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S))

so the result does not depend on any order, and the contributions add up to v(all) - v(none)
= B - A exactly (up to float rounding). With n options, 2^n hybrids are evaluated, all in one
engine call per data-level setting (they share its sorts); n is the number of options
that differ.

Two value functions are explained. On the mean, v(S) is the hybrid's mean over the queries
it averages (so options that change which queries count, such as ``empty='exclude'`` or
``missing``, are attributed their effect on the mean like any other). Per query, v_q(S) is
the query's value under the hybrid, 0 where the hybrid does not evaluate or excludes it;
each query's contributions add up to its own difference.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import MetricDefinitionError
from harness.metrics.vocabulary.conventions import TREC_EVAL_CONVENTIONS
from harness.metrics.vocabulary.definition import CONVENTIONS, Metric, parse_metric
from harness.metrics.vocabulary.options import OPTIONS

__all__ = ["Explanation", "explain_difference", "DATA_OPTIONS", "METRIC_OPTIONS",
           "differing_options", "hybrid", "shapley_terms", "shown"]

#: Options of a Metric that can differ between two definitions of one metric family: the
#: cut-off and every declared option (ties, gain, ..., unjudged, unjudged_grade).
METRIC_OPTIONS = ("k", *OPTIONS)
#: Options of :func:`harness.evaluate` that change which queries and labels count.
DATA_OPTIONS = ("missing", "negative_labels")
_DATA_DEFAULTS = {"missing": "exclude", "negative_labels": None}


@dataclass(frozen=True)
class Explanation:
    """The gap between two definitions, split by option.

    Attributes
    ----------
    a, b : the two Metric definitions; ``data_a``, ``data_b`` their data-level options.
    mean_a, mean_b : their means; ``difference`` = mean_b - mean_a.
    table : DataFrame, one row per differing option: ``option``, ``a`` and ``b`` (its two
        values), ``contribution`` to the difference of the means, ``share`` of it.
    per_query : DataFrame indexed by qid: ``a``, ``b`` (each as :func:`harness.evaluate`
        gives it: NaN where that definition has no value, e.g. a query excluded by
        ``empty='exclude'`` or not evaluated), one column per option (its contribution to
        that query's difference) and ``difference``; where ``a`` or ``b`` is NaN, so are
        the difference and the contributions (the means leave such queries out).
    """

    a: Metric
    b: Metric
    data_a: dict[str, Any]
    data_b: dict[str, Any]
    mean_a: float
    mean_b: float
    table: pd.DataFrame
    per_query: pd.DataFrame
    hybrids: int = field(default=0)

    @property
    def difference(self) -> float:
        return self.mean_b - self.mean_a

    def __str__(self) -> str:
        lines = [f"{self.a.display_name} {_data_text(self.data_a)}= {self.mean_a:.6f}",
                 f"{self.b.display_name} {_data_text(self.data_b)}= {self.mean_b:.6f}",
                 f"difference (b - a): {self.difference:+.6f}, split by option (exact "
                 f"Shapley values over {len(self.table)} option(s), {self.hybrids} hybrid "
                 "definitions):"]
        for row in self.table.itertuples(index=False):
            share = f"{row.share:7.1%}" if math.isfinite(row.share) else "    n/a"
            lines.append(f"  {row.option:<16} {str(row.a):>12} -> {str(row.b):<12} "
                         f"{row.contribution:+.6f}  {share}")
        return "\n".join(lines)


def _data_text(data: Mapping[str, Any]) -> str:
    shown = {k: v for k, v in data.items() if v != _DATA_DEFAULTS[k]}
    return "".join(f"[{k}={v}] " for k, v in shown.items())


def _definition(side: Metric | str, base: Metric) -> Metric:
    """A convention name applied to ``base``'s family and cut-off, or a metric itself."""
    if isinstance(side, Metric):
        return side
    if isinstance(side, str) and side in CONVENTIONS:
        return Metric(base.name, k=base.k, convention=side)
    return parse_metric(side)


def _options(m: Metric) -> dict[str, Any]:
    return {opt: getattr(m, opt) for opt in METRIC_OPTIONS if hasattr(m, opt)}


def differing_options(a: Metric, b: Metric) -> tuple[str, ...]:
    """The options of :data:`METRIC_OPTIONS` whose values differ between ``a`` and ``b``.

    >>> differing_options(parse_metric("ndcg@10"), parse_metric("ndcg@5(gain=linear)"))
    ('k', 'gain')
    """
    oa, ob = _options(a), _options(b)
    return tuple(o for o in METRIC_OPTIONS if oa.get(o) != ob.get(o))


def hybrid(a: Metric, b: Metric, switched: Any) -> Metric:
    """Definition ``a`` with the options named in ``switched`` taken from ``b``.

    >>> hybrid(parse_metric("ndcg@10"), parse_metric("ndcg@5(gain=linear)"), {"gain"})
    Metric('nDCG@10(gain=linear)')
    """
    oa, ob = _options(a), _options(b)
    return Metric(a.name, **{o: (ob if o in switched else oa)[o] for o in oa})


def shapley_terms(players: tuple[str, ...]
                  ) -> list[tuple[str, frozenset[str], float]]:
    """Every ``(player, S, weight)`` of the exact Shapley value of each player:
    phi_player = sum of weight * (v(S + player) - v(S)) over the coalitions S without it.

    >>> [(p, sorted(s), w) for p, s, w in shapley_terms(("x", "y")) if p == "x"]
    [('x', [], 0.5), ('x', ['y'], 0.5)]
    """
    n, out = len(players), []
    for player in players:
        others = [p for p in players if p != player]
        for r in range(len(others) + 1):
            weight = math.factorial(r) * math.factorial(n - r - 1) / math.factorial(n)
            out += [(player, frozenset(c), weight) for c in itertools.combinations(others, r)]
    return out


def _data(convention: Any, given: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(_DATA_DEFAULTS)
    if isinstance(convention, str) and convention in TREC_EVAL_CONVENTIONS:
        out["negative_labels"] = "unjudged"  # as evaluate() does for trec_eval metrics
    unknown = set(given or {}) - set(DATA_OPTIONS)
    if unknown:
        raise MetricDefinitionError(f"unknown data option(s) {sorted(unknown)}; known: "
                                    f"{', '.join(DATA_OPTIONS)}")
    return out | dict(given or {})


def explain_difference(run: pd.DataFrame, qrels: pd.DataFrame | None = None,
                       metric: Metric | str = "ndcg@10", a: Metric | str = "sklearn",
                       b: Metric | str = "trec_eval", *,
                       data_a: Mapping[str, Any] | None = None,
                       data_b: Mapping[str, Any] | None = None) -> Explanation:
    """Split the gap between two definitions of ``metric`` into one part per option.

    Parameters
    ----------
    run, qrels : as in :func:`harness.evaluate`.
    metric : Metric or str, default ``"ndcg@10"``
        The metric family and cut-off that conventions ``a`` and ``b`` apply to.
    a, b : str or Metric
        A convention name (``sklearn``, ``trec_eval``, ``lightgbm``, ...), or a definition
        of its own (a Metric or a name such as ``"ndcg@10(gain=linear)"``).
    data_a, data_b : mapping, optional
        Data-level options of :func:`harness.evaluate` on each side (``missing``,
        ``negative_labels``); the trec_eval convention implies
        ``negative_labels='unjudged'``.

    Returns
    -------
    Explanation

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"qid": ["q"] * 3, "docid": ["a", "b", "c"],
    ...                     "score": [1.0, 1.0, 0.0], "label": [0, 2, 1]})
    >>> e = explain_difference(run, metric="ndcg@2", a="sklearn", b="lightgbm")
    >>> list(e.table["option"]), round(e.difference, 6)
    (['gain', 'ties', 'empty', 'empty_weight'], -0.09861)
    >>> [round(x, 6) for x in e.table["contribution"]]
    [0.047765, -0.146375, 0.0, 0.0]
    >>> bool(abs(e.table["contribution"].sum() - e.difference) < 1e-12)
    True
    """
    base = metric if isinstance(metric, Metric) else parse_metric(metric)
    ma, mb = _definition(a, base), _definition(b, base)
    if ma.name != mb.name:
        raise MetricDefinitionError(f"a and b must define the same metric; got "
                                    f"{ma.display_name} and {mb.display_name}")
    da, db = _data(a, data_a), _data(b, data_b)
    oa, ob = _options(ma), _options(mb)
    differing = [*differing_options(ma, mb), *(o for o in DATA_OPTIONS if da[o] != db[o])]
    players = tuple(differing)
    n = len(players)
    values: dict[frozenset[str], pd.Series] = {}
    means: dict[frozenset[str], float] = {}
    subsets = [frozenset(c) for r in range(n + 1) for c in itertools.combinations(players, r)]
    by_data: dict[tuple[Any, ...], list[tuple[frozenset[str], Metric]]] = {}
    for s in subsets:
        data = {o: (db if o in s else da)[o] for o in DATA_OPTIONS}
        by_data.setdefault(tuple(data.values()), []).append((s, hybrid(ma, mb, s)))
    from harness.metrics.engine.evaluate import aggregate, evaluate

    for data_values, members in by_data.items():
        data = dict(zip(DATA_OPTIONS, data_values))
        unique = list(dict.fromkeys(m for _, m in members))
        frame = evaluate(run, qrels, unique, **data)
        summary = aggregate(frame)
        for s, m in members:
            values[s] = frame[m.display_name]
            means[s] = float(summary.at[m.display_name, "mean"])
    qids = pd.Index(sorted(set().union(*(v.index for v in values.values()))), name="qid")
    phi_mean = dict.fromkeys(players, 0.0)
    per_query = {p: np.zeros(len(qids)) for p in players}
    for player, s, weight in shapley_terms(players):
        phi_mean[player] += weight * (means[s | {player}] - means[s])
        per_query[player] += weight * (_dense(values[s | {player}], qids)
                                       - _dense(values[s], qids))
    table_rows = []
    for player in players:
        source = oa if player in oa else da
        target = ob if player in ob else db
        table_rows.append({"option": player, "a": shown(source[player]),
                           "b": shown(target[player]), "contribution": phi_mean[player]})
    empty: frozenset[str] = frozenset()
    mean_a, mean_b = means[empty], means[frozenset(players)]
    table = pd.DataFrame(table_rows, columns=["option", "a", "b", "contribution"])
    gap = mean_b - mean_a
    table["share"] = table["contribution"] / gap if gap else float("nan")
    side_a = values[empty].reindex(qids).to_numpy(dtype=np.float64)
    side_b = values[frozenset(players)].reindex(qids).to_numpy(dtype=np.float64)
    undefined = np.isnan(side_a) | np.isnan(side_b)
    pq = pd.DataFrame({"a": side_a, "b": side_b,
                       **{p: np.where(undefined, np.nan, v) for p, v in per_query.items()}},
                      index=qids)
    pq["difference"] = pq["b"] - pq["a"]
    return Explanation(ma, mb, da, db, mean_a, mean_b, table, pq, hybrids=len(subsets))


def _dense(values: pd.Series, qids: pd.Index) -> np.ndarray:
    """Values on every query of the union: 0 where this definition has none (not evaluated,
    or excluded)."""
    return values.reindex(qids).fillna(0.0).to_numpy(dtype=np.float64)


def shown(value: Any) -> str:
    """An option's value as the explanation tables show it (``auto`` for None, a gain
    table as ``{label: gain, ...}``)."""
    if value is None:
        return "auto"
    if isinstance(value, tuple):  # a gain table
        return "{" + ", ".join(f"{k:g}: {v:g}" for k, v in value) + "}"
    return str(value)
