"""trec_eval's evaluation procedure around the metric engine: which queries are evaluated,
``-M`` / ``-J`` / ``-c`` / ``-l``, judge groups (``-R qrels_jg``), the ``relstring``,
``runid`` and ``num_q`` lines, Z-scores (``-Z``) and each measure's summary.

:func:`evaluate_trec` returns an :class:`Evaluation`: per-query values in trec_eval's
query order (qid as strings, ``strcmp`` order) and the summary values, one entry per
printed line. Measures come from the registry (:func:`harness.evaluate`); a measure the
registry does not have is reported in ``Evaluation.unavailable``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.errors import MetricDefinitionError
from harness.metrics.engine.weighting import summary
from harness.metrics.vocabulary.measure import GMEAN_FLOOR
from harness.metrics.vocabulary.tool_names.trec_eval_measures import Column

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Evaluation", "Line", "evaluate_trec", "trec_order", "plan_lines", "finish",
           "relstring_chars", "in_head", "MISSING_ZSCORE", "LEVEL", "COLLECTION_SIZE"]

#: What trec_eval prints for a query or measure the -Z file does not have.
MISSING_ZSCORE = -1000000.0
#: trec_eval's defaults of ``-l`` (a label at least this is relevant) and ``-N`` (documents
#: in the collection, 0: unknown), the evaluation's and ``harness eval``'s.
LEVEL = 1
COLLECTION_SIZE = 0


@dataclass
class Line:
    """One printed measure: its name, how it prints and how it summarises."""

    name: str
    kind: str = "float"  # "float", "int", "text"
    aggregate: str = "mean"  # "mean", "sum", "gmean", "count"
    per_query: bool = True
    summary: bool = True
    metric: Any = None  # the harness Metric, where one computes it


@dataclass
class Evaluation:
    """Values of one run: ``values[name]`` per query (aligned with ``qids``) and
    ``summary[name]``; ``lines`` in printing order."""

    runid: str
    qids: list[str]
    lines: list[Line]
    values: dict[str, list[Any] | np.ndarray] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # line name -> why
    path: str = ""  # the run's file, as given
    #: queries in the summary but not printed per query (``-c`` under trec_eval 9.x)
    unprinted: list[str] = field(default_factory=list)


def trec_order(run: pd.DataFrame, *, float32: bool = False) -> pd.DataFrame:
    """The run in trec_eval's order: queries by qid (``strcmp``), each score descending
    (compared as double, as trec_eval 10.0 stores them; as float32 with ``float32``, as
    trec_eval 9.x does), ties by docno descending.

    One integer sort on (query, score); only the rows of tied scores are then ordered by
    docno, by Arrow's string sort (a sort of every row on the three keys took a second on
    a 1M-line run). Rows equal on all three keep their order."""
    import pandas as pd

    from harness.metrics.layout.ranking import trec_order_rows

    if len(run) == 0:
        return run
    qcode = pd.factorize(run["qid"], sort=True)[0]
    score = run["score"].to_numpy(dtype=np.float32 if float32 else np.float64)
    order = trec_order_rows(qcode, score, run["docid"])
    return run.take(order)


def _qid_set(qid: pd.Series) -> set[str]:
    """The distinct qids of a column (one hash pass; no Python loop over its rows)."""
    import pandas as pd

    return set(np.asarray(pd.unique(qid), dtype=object).tolist())


_METRICS: dict[tuple[str, int, str, int], Any] = {}  # one Metric per line and options


def _metric(col: Column, level: int, convention: str, collection_size: int) -> Any:
    from harness.metrics.vocabulary.definition import Metric
    from harness.metrics.vocabulary.registry import get_measure

    key = (col.name, level, convention, collection_size)  # a printed name: one line
    if key not in _METRICS:  # harness eval qrels run1 ... run100: built once, not 100 times
        fam = col.family
        assert fam.measure is not None  # plan_lines asks for the families with a measure
        opts = {**dict(fam.fixed), **col.options}
        if "collection_size" in get_measure(fam.measure).options:
            opts["collection_size"] = collection_size
        _METRICS[key] = Metric(fam.measure, convention=convention, level=level, **opts)
    return _METRICS[key]


def _aggregate_of(metric: Any) -> str:
    return getattr(metric.measure, "aggregate", "mean")


def _summarise(values: np.ndarray, how: str) -> float:
    """The measure's declared summary (``harness.aggregate``'s rule), 0 over no query.

    A mean is trec_eval's arithmetic: the values added one after another in query order,
    then divided by their number (numpy's pairwise sum can differ in the last bit, and
    so in the fourth decimal when the exact mean ends in 5); a geometric mean is the exp
    of such a mean of the logs of the values floored at 1e-5."""
    if len(values) == 0:
        return 0.0
    if how == "mean":
        return float(np.cumsum(values)[-1] / len(values))
    if how == "gmean":
        logs = np.log(np.maximum(values, GMEAN_FLOOR))
        return float(np.exp(np.cumsum(logs)[-1] / len(values)))
    return float(summary(values, np.ones(len(values)), None, "own", how))


def _relstring(ranked: pd.DataFrame, qrels: pd.DataFrame, qids: list[str],
               length: int) -> list[str]:
    """Per query, the labels of its first ``length`` ranked documents as one character
    each: the grade, ``>`` above 9, ``.`` negative, ``-`` unjudged (trec_eval's relstring)."""
    import pandas as pd

    qcode = pd.factorize(ranked["qid"])[0]  # rows come grouped by query, in trec order
    head = ranked.loc[in_head(qcode, max(length, 0)), ["qid", "docid"]].reset_index(drop=True)
    head["_row"] = np.arange(len(head))
    # a document judged twice (judge groups) reads its first judgment
    head = head.merge(qrels[["qid", "docid", "label"]], on=["qid", "docid"], how="left",
                      sort=False).drop_duplicates("_row")
    chars = relstring_chars(head["label"].to_numpy(dtype=np.float64))
    hq = head["qid"].to_numpy(dtype=object)
    none = np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(np.concatenate(([True], hq[1:] != hq[:-1]))) if len(hq) else none
    ends = np.append(first[1:], len(hq)) if len(hq) else none
    joined = {hq[a]: "".join(chars[a:b].tolist()) for a, b in zip(first, ends)}
    return ["'" + joined.get(q, "") + "'" for q in qids]


def in_head(q: np.ndarray, depth: int) -> np.ndarray:
    """Per row (rows grouped by query code ``q``), whether it is among its query's first
    ``depth`` rows."""
    start = np.flatnonzero(np.concatenate(([True], q[1:] != q[:-1]))) if len(q) else q
    rank = np.arange(len(q)) - np.repeat(start, np.diff(np.append(start, len(q))))
    return rank < depth


def relstring_chars(rel: np.ndarray) -> np.ndarray:
    """trec_eval's relstring character of each judgment: the grade, ``>`` above 9, ``.``
    negative, ``-`` unjudged (NaN)."""
    chars = np.full(len(rel), "-", dtype="<U1")
    known = ~np.isnan(rel)
    chars[known & (rel < 0)] = "."
    chars[known & (rel > 9)] = ">"
    digit = known & (rel >= 0) & (rel <= 9)
    chars[digit] = rel[digit].astype(np.int64).astype("<U1")
    return chars


def _judge_groups(run: pd.DataFrame, qrels: pd.DataFrame, metric: Any,
                  qids: list[str]) -> np.ndarray:
    """Per query, the metric averaged over the judge groups (the qrels' ``iter``) that
    judged it (trec_eval's ``*_avgjg``); a query the run lacks scores 0."""
    import pandas as pd

    from harness.metrics.engine.evaluate import evaluate

    total = pd.Series(0.0, index=qids)
    groups = pd.Series(0, index=qids)
    for _, jq in qrels.groupby("iter", sort=False) if len(run) else ():
        pq = evaluate(run, jq[["qid", "docid", "label"]], [metric], missing="zero",
                      negative_labels="unjudged")
        judged = pd.Index(jq["qid"].unique()).intersection(total.index)
        vals = pq[metric.display_name].reindex(judged).fillna(0.0)
        total.loc[judged] += vals
        groups.loc[judged] += 1
    return (total / groups.clip(lower=1)).to_numpy()


def evaluate_trec(run: pd.DataFrame, qrels: pd.DataFrame, columns: list[Column],
                  extra: Sequence[tuple[str, Any]] = (), *, level: int = LEVEL,
                  depth: int | None = None, judged_only: bool = False,
                  complete: bool = False, zscores: dict[tuple[str, str], tuple[float, float]]
                  | None = None, prefs: Any = None, runid: str = "",
                  convention: str = "trec_eval", collection_size: int = COLLECTION_SIZE
                  ) -> Evaluation:
    """Evaluate one run as trec_eval does: 10.0 (``convention="trec_eval"``) or 9.x
    (``"trec_eval9"``: scores compared as float32, recall levels at ``floor(x R + 0.9)``).
    ``collection_size`` is ``-N``, which ``utility``'s fourth weight reads.

    ``run`` has ``qid``, ``docid``, ``score`` (strings, strings, floats); ``qrels`` has
    ``qid``, ``docid``, ``label`` and, for judge groups, ``iter``. ``columns`` are the
    expanded ``-m`` families; ``extra`` are ``(printed name, Metric)`` pairs named in other
    tools' spellings. ``prefs`` is the preference input (``-R prefs``), handed to
    :mod:`harness.metrics.trec_eval.prefs`.
    """
    import pandas as pd

    from harness.metrics.engine.evaluate import evaluate

    qrels_q, run_q = _qid_set(qrels["qid"]), _qid_set(run["qid"])
    ranked = run if run_q <= qrels_q else run[run["qid"].isin(qrels_q)]
    run_q &= qrels_q
    # trec_eval's order matters to -M and to relstring only (the engine ranks for itself)
    ordered = depth is not None or any(c.family.name == "relstring" for c in columns)
    if ordered:
        ranked = trec_order(ranked, float32=convention == "trec_eval9")
    # a query is evaluated when it has results (before -J empties any) and judgments
    qids = sorted(qrels_q if complete else run_q)
    if depth is not None:
        ranked = ranked.groupby("qid", sort=False).head(depth)
    emptied: list[str] = []  # queries -J leaves without a document
    if judged_only:
        judged = qrels.loc[qrels["label"] >= 0, ["qid", "docid"]].drop_duplicates()
        ranked = ranked.merge(judged, on=["qid", "docid"], how="inner")
        # with -c, trec_eval 10 ranks one unjudged document for a query the run lacks,
        # which -J removes too: those queries are left without a document as well
        emptied = sorted((run_q if convention == "trec_eval9" else set(qids))
                         - _qid_set(ranked["qid"]))
        run_q = _qid_set(ranked["qid"])
    absent = sorted(set(qids) - run_q)  # scored 0 (-c, or -J left nothing)
    plain_qrels = qrels[["qid", "docid", "label"]]
    if any(getattr(m.measure, "subtopics", False) for _, m in extra):
        # intent-aware measures: the second column is the subtopic (ndeval's qrels)
        plain_qrels = qrels.rename(columns={"iter": "subtopic"})[
            ["qid", "subtopic", "docid", "label"]]
    elif "iter" in qrels and qrels["iter"].nunique() > 1:  # judge groups judge again
        plain_qrels = qrels.drop_duplicates(["qid", "docid"])[["qid", "docid", "label"]]

    ev = Evaluation(runid, qids, [])
    if complete and convention == "trec_eval9":  # 9.x averages them in, prints none
        ev.unprinted = sorted(set(qids) - _qid_set(run["qid"]))
    wanted = plan_lines(ev, columns, extra, level, convention, collection_size)
    plain = [ln.metric for ln, col in wanted
             if ln.metric is not None and (col is None or col.family.source == "qrels")]
    per_query = pd.DataFrame(0.0, index=qids, columns=[m.display_name for m in plain])
    if plain and qids and len(ranked):
        per_query = evaluate(ranked[["qid", "docid", "score"]], plain_qrels,
                             list(dict.fromkeys(plain)), missing="zero",
                             negative_labels="unjudged")
        per_query.index = per_query.index.astype(str)
        per_query = per_query.reindex(qids)
    prefs_table = None
    if any(col is not None and col.family.source == "prefs" for _, col in wanted):
        prefs_table = _prefs(ranked, prefs if prefs is not None else qrels, qids)

    for line, col in wanted:
        fam = col.family if col is not None else None
        if fam is not None and fam.name == "runid":
            ev.summary[line.name] = runid
            continue
        if fam is not None and fam.name == "num_q":
            ev.summary[line.name] = len(qids)
            continue
        if col is not None and col.family.name == "relstring":
            ev.values[line.name] = _relstring(ranked, qrels, qids,
                                              int(col.options["length"][0]))
            continue
        if fam is not None and fam.source == "prefs":
            assert prefs_table is not None  # computed above for the prefs lines
            vals = prefs_table[line.name].reindex(qids).fillna(0.0).to_numpy(float)
        elif fam is not None and fam.source == "jg":
            vals = _judge_groups(ranked[["qid", "docid", "score"]], qrels, line.metric, qids)
        else:
            vals = per_query[line.metric.display_name].to_numpy(float)
            if fam is not None and fam.judged_count and absent:
                rel = plain_qrels[plain_qrels["label"] >= level].groupby("qid").size()
                fill = rel.reindex(absent).fillna(0)
                vals = pd.Series(vals, index=qids).fillna(0.0)
                vals.loc[absent] = fill.to_numpy(float)
                vals = vals.to_numpy(float)
            if emptied and "recall_cutoff" in line.metric.measure.options:
                vals = _emptied_recall_levels(vals, qids, emptied, line.metric, plain_qrels)
        ev.values[line.name] = list(vals)
    finish(ev, wanted, zscores, _complete_num_rel(qrels) if complete else None)
    return ev


def plan_lines(ev: Evaluation, columns: list[Column], extra: Any, level: int,
               convention: str, collection_size: int) -> list[tuple[Line, Column | None]]:
    """The printed lines of ``columns`` (the expanded ``-m`` families) and ``extra`` (other
    tools' names), each with the Metric that computes it; ``ev.lines`` set to them and
    ``ev.unavailable`` to the lines no registered measure computes."""
    wanted: list[tuple[Line, Column | None]] = []
    for col in columns:
        fam = col.family
        line = Line(col.name, "text" if fam.name in ("runid", "relstring") else
                    "int" if fam.integer else "float",
                    "count" if fam.name == "num_q" else "sum" if fam.integer else
                    "gmean" if fam.name.startswith("gm_") else "mean",
                    fam.per_query, fam.summary)
        # num_q is counted here, not computed (its measure is what parse_metric reads)
        if fam.measure is not None and fam.source != "prefs" and fam.name != "num_q":
            try:
                line.metric = _metric(col, level, convention, collection_size)
                line.aggregate = "count" if fam.name == "num_q" else _aggregate_of(line.metric)
            except MetricDefinitionError as exc:
                ev.unavailable[col.name] = str(exc).splitlines()[0]
                continue
        wanted.append((line, col))
    for name, metric in extra:
        wanted.append((Line(name, aggregate=_aggregate_of(metric), metric=metric), None))
    ev.lines = [line for line, _ in wanted]
    return wanted


def finish(ev: Evaluation, wanted: list[tuple[Line, Column | None]],
           zscores: dict[tuple[str, str], tuple[float, float]] | None,
           complete_num_rel: int | None) -> None:
    """Z-scores (``-Z``), then each line's summary; under ``-c`` the summary of ``num_rel``
    is ``complete_num_rel`` (:func:`_complete_num_rel`)."""
    if zscores is not None:
        _to_zscores(ev, zscores)
    for line in ev.lines:
        if line.name in ev.values and line.kind != "text":
            ev.summary[line.name] = _summarise(np.asarray(ev.values[line.name], float),
                                               line.aggregate)
    if complete_num_rel is not None:
        for line, col in wanted:
            if col is not None and col.family.judged_count and line.name in ev.summary:
                ev.summary[line.name] = complete_num_rel


def _complete_num_rel(qrels: pd.DataFrame) -> int:
    """The summary of the count of relevant documents (``num_rel``) under ``-c``: trec_eval counts the qrels lines whose
    label is above 0, whatever ``-l`` says and however many times a document is judged
    (judge groups), while each query's line counts ``label >= -l`` once per document."""
    return int((qrels["label"].to_numpy(dtype=np.float64) > 0).sum())


def _emptied_recall_levels(vals: np.ndarray, qids: list[str], emptied: list[str],
                           metric: Any, qrels: pd.DataFrame) -> np.ndarray:
    """``iprec_at_recall`` and ``11pt_avg`` of the queries ``-J`` left without a document:
    NaN at the recall levels that need no relevant document (trec_eval starts from the
    precision 0 / 0 there), as :func:`harness.metrics.measures.recall_levels.interpolated_at`
    computes it for ``unjudged='condensed'``; their other levels stay 0."""
    import pandas as pd

    from harness.metrics.layout.ranked import recall_count

    rel = qrels.loc[qrels["label"] >= metric.level].groupby("qid").size()
    n_rel = rel.reindex(emptied).fillna(0).to_numpy(np.float64)
    levels = (metric.at_recall,) if "at_recall" in metric.measure.options else metric.levels
    nan = np.zeros(len(emptied), dtype=bool)
    for level in levels:
        nan |= recall_count(level, n_rel, metric.recall_cutoff) == 0
    out = pd.Series(np.asarray(vals, dtype=np.float64), index=qids)
    out.loc[[q for q, n in zip(emptied, nan) if n]] = np.nan
    return out.to_numpy()


def _to_zscores(ev: Evaluation, zscores: dict[tuple[str, str], tuple[float, float]]) -> None:
    """trec_eval -Z: every numeric per-query value becomes (value - mean) / stddev."""
    for line in ev.lines:
        if line.kind == "text" or line.name not in ev.values:
            continue
        out = []
        for q, v in zip(ev.qids, ev.values[line.name]):
            ms = zscores.get((q, line.name))
            if ms is None:
                out.append(MISSING_ZSCORE)
            elif ms[1]:
                out.append((v - ms[0]) / ms[1])
            else:
                out.append(0.0 if v == ms[0] else MISSING_ZSCORE)
        ev.values[line.name] = out
        if line.kind == "int":
            line.kind = "float"


def _prefs(ranked: pd.DataFrame, prefs: pd.DataFrame, qids: list[str]) -> pd.DataFrame:
    """The prefs measures of :mod:`harness.metrics.trec_eval.prefs`; ``prefs`` is a preferences table
    (``qid jg jsg docid rel``) or qrels (``-R qrels_prefs``)."""
    try:
        from harness.metrics.trec_eval.prefs import prefs_from_qrels, prefs_measures
    except ImportError:
        raise MetricDefinitionError("the prefs measures (-R prefs / qrels_prefs) are not "
                                    "available yet: harness.metrics.trec_eval.prefs does not exist"
                                    ) from None
    if "jg" not in prefs.columns:
        prefs = prefs_from_qrels(prefs)
    table = prefs_measures(ranked[["qid", "docid", "score"]], prefs)
    table.index = table.index.astype(str)
    return table


def is_missing(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)
