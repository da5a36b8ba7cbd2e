"""Judgment intervals in a study (issue 24): per ranker and metric variant, each query's
least and greatest value over every labeling of the unjudged documents any ranker retrieved
(:func:`~harness.metrics.unjudged.judgment_interval.judgment_interval` with the union of
the rankers' retrieved documents as its pool: one set of labelings for every ranker),
whether both bounds are exact, and the query's Judged@10; written to
``judgments/<ranker>.parquet`` (long format, :data:`COLUMNS`) and summarised in
``judgments.csv``; and per compared pair of rankers, whether the sign of the mean
difference holds over every labeling."""

from __future__ import annotations

import itertools
import logging
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.app.judged_share import judged_distribution
from harness.errors import InputError, MetricDefinitionError
from harness.metrics import Metric
from harness.metrics.unjudged.judgment_summary import difference_bounds

__all__ = ["COLUMNS", "WIDE", "Judgments", "study_judgments", "write_judgments",
           "pair_verdicts"]

log = logging.getLogger("harness")

#: The columns of ``judgments/<ranker>.parquet``, one row per query and variant.
COLUMNS = ("qid", "variant", "low", "high", "exact", "judged_at_10")
#: An interval wider than this is worth printing.
WIDE = 1e-12


@dataclass
class Judgments:
    """A study's judgment intervals: ``tables`` (ranker -> its long table, :data:`COLUMNS`),
    ``dists`` (ranker -> :func:`~harness.app.judged_share.judged_distribution`),
    ``computed`` (judgment_interval was called; False: no ranker retrieved an unjudged
    document and every interval is the value itself) and ``pairs``
    (:func:`pair_verdicts` over the headline variants)."""

    tables: dict[str, pd.DataFrame]
    dists: dict[str, dict[str, float | None]]
    computed: bool
    variants: list[str] = field(default_factory=list)  # with intervals, in study order
    pairs: list[dict[str, Any]] = field(default_factory=list)

    def wide(self) -> bool:
        """Whether some query's interval is wider than :data:`WIDE`."""
        return any(bool(((t["high"] - t["low"]) > WIDE).any()) for t in self.tables.values())

    def means(self, ranker: str) -> pd.DataFrame:
        """Per variant (study order): the mean of ``low`` and of ``high`` over the queries
        with bounds, the share of exact rows, and that many queries."""
        t, variants = self.tables[ranker], self.variants
        shape = (len(variants), -1)  # the rows are variant-major, one query set each
        low, high = (t[c].to_numpy(dtype=float).reshape(shape) for c in ("low", "high"))
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a variant without bounds
            return pd.DataFrame({"low": np.nanmean(low, axis=1),
                                 "high": np.nanmean(high, axis=1),
                                 "exact": t["exact"].to_numpy().reshape(shape).mean(axis=1),
                                 "n_queries": (low == low).sum(axis=1)}, index=variants)


def study_judgments(mode: str, max_labelings: int, metrics: Sequence[Metric],
                    runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame,
                    per_query: Mapping[str, pd.DataFrame],
                    judged: Mapping[str, pd.Series | None], options: Mapping[str, Any], *,
                    headline: Sequence[str] = (), baseline: str | None = None) -> Judgments:
    """Every ranker's judgment intervals under each variant of ``metrics``.

    ``mode``: ``auto`` (judgment_interval only when some ranker retrieved an unjudged
    document; else low = high = the value, exact) or ``on`` (always). Variants differing
    only in ``unjudged`` share one computation (the grade ``unjudged_grade`` does not);
    a variant judgment_interval refuses is left out with one log line. ``options``: the
    study's evaluate options (``missing``, ``nan_scores``)."""
    unjudged = _any_unjudged(runs, qrels)
    computed = mode == "on" or unjudged
    # name -> variant -> low, high and exact per query of the per-query table
    bounds: dict[str, dict[str, tuple[np.ndarray, ...]]] = {n: {} for n in per_query}
    if not computed:
        for name, pq in per_query.items():
            block = pq[[m.display_name for m in metrics]].to_numpy(dtype=float)
            exact = np.ones(len(pq), dtype=bool)
            for m, value in zip(metrics, block.T):
                bounds[name][m.display_name] = (value, value, exact)
    else:
        from harness.metrics.unjudged.judgment_interval import judgment_interval
        from harness.progress import progress

        groups: dict[tuple[Metric, Any], list[Metric]] = {}
        for m in metrics:
            groups.setdefault((m.with_options(unjudged="nonrelevant"), m.unjudged_grade),
                              []).append(m)
        pool = pd.concat([run[["qid", "docid"]] for run in runs.values()]).drop_duplicates()
        for group in progress(list(groups.values()), desc="judgment intervals",
                              unit="variant"):
            t0 = time.perf_counter()
            try:
                tables = {name: judgment_interval(run, qrels, group[0], pool=pool,
                                                  max_labelings=max_labelings, **options)
                          for name, run in runs.items()}
            except (MetricDefinitionError, InputError) as exc:
                log.info("judgment intervals: %s left out: %s",
                         ", ".join(m.display_name for m in group), str(exc).splitlines()[0])
                continue
            log.info("judgment intervals: %s: %d ranker(s) in %.1fs",
                     ", ".join(m.display_name for m in group), len(tables),
                     time.perf_counter() - t0)
            for name, t in tables.items():
                t = t.reindex(per_query[name].index)
                frame = (t["low"].to_numpy(dtype=float), t["high"].to_numpy(dtype=float),
                         t["exact"].fillna(False).to_numpy(dtype=bool))
                for m in group:
                    bounds[name][m.display_name] = frame
    tables = {name: _long(per_query[name], bounds[name], [m.display_name for m in metrics],
                          judged.get(name)) for name in per_query}
    dists = {name: (judged_distribution(j) if (j := judged.get(name)) is not None else {})
             for name in per_query}
    kept = [m.display_name for m in metrics if any(m.display_name in b
                                                   for b in bounds.values())]
    out = Judgments(tables, dists, computed, kept)
    if computed and out.wide():  # else every verdict holds: the intervals are points
        out.pairs = pair_verdicts(out, per_query, [v for v in headline if v in kept],
                                  baseline=baseline,
                                  treatments={m.display_name: m for m in metrics})
    return out


def _any_unjudged(runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame) -> bool:
    """Whether some ranker retrieved a document that ``qrels`` does not judge (no label, or
    a negative one, as the pool of judgment_interval reads it) for a query it judges."""
    if not runs:
        return False
    labels = pd.to_numeric(qrels["label"], errors="coerce").to_numpy()
    judged = qrels[labels >= 0] if (labels < 0).any() else qrels
    run = pd.concat([r[["qid", "docid"]] for r in runs.values()], ignore_index=True)
    n = len(judged)
    key = []
    for column in ("qid", "docid"):
        a, b = judged[column], run[column]
        if pd.api.types.is_numeric_dtype(a) != pd.api.types.is_numeric_dtype(b):
            a, b = a.astype(str), b.astype(str)  # ids read differently: compared as text
        codes, uniques = pd.factorize(np.concatenate([a.to_numpy(dtype=object),
                                                      b.to_numpy(dtype=object)]))
        key.append((codes.astype(np.int64), len(uniques)))
    (q, _), (d, n_docs) = key
    pair = q * max(n_docs, 1) + d
    evaluated = np.isin(q[n:], q[:n])  # queries without judgments are not evaluated
    return bool((~np.isin(pair[n:][evaluated], pair[:n])).any())


def _long(pq: pd.DataFrame, bounds: Mapping[str, tuple[np.ndarray, ...]],
          variants: Sequence[str],
          judged: pd.Series | None) -> pd.DataFrame:
    """One ranker's rows of :data:`COLUMNS`, variants in study order."""
    share = (judged.reindex(pq.index).to_numpy(dtype=float) if judged is not None
             else np.full(len(pq), np.nan))
    kept = [v for v in variants if v in bounds]
    n = len(kept)

    def stack(column: int, dtype: type) -> np.ndarray:
        if not n:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([bounds[v][column] for v in kept]).astype(dtype, copy=False)

    return pd.DataFrame({"qid": pd.Index(np.tile(pq.index.to_numpy(), n),
                                         dtype=pq.index.dtype),
                         "variant": np.repeat(np.array(kept, dtype=object), len(pq)),
                         "low": stack(0, float), "high": stack(1, float),
                         "exact": stack(2, bool), "judged_at_10": np.tile(share, n)})


def pair_verdicts(judgments: Judgments, per_query: Mapping[str, pd.DataFrame],
                  variants: Sequence[str], *, baseline: str | None = None,
                  treatments: Mapping[str, Metric] | None = None) -> list[dict[str, Any]]:
    """Per compared pair (each ranker against ``baseline``, else every pair) and variant:
    the mean difference ``diff`` = a − b over the queries where both have a value and
    bounds, ``worst`` = mean of (a.low − b.high), ``best`` = mean of (a.high − b.low),
    ``holds`` (the sign of ``diff`` is the sign of every difference in [worst, best]),
    ``exact`` (the share of those queries whose bounds are exact for both) and ``unjudged``
    (the variant's treatment)."""
    names = list(per_query)
    pairs = ([(n, baseline) for n in names if n != baseline] if baseline in names
             else list(itertools.combinations(names, 2)))
    out = []
    for variant in variants:
        m = (treatments or {}).get(variant)
        for a, b in pairs:
            ta, tb = (_indexed(judgments.tables[n], variant) for n in (a, b))
            va, vb = per_query[a][variant], per_query[b][variant]
            frame = pd.DataFrame({"va": va, "vb": vb, "al": ta["low"], "ah": ta["high"],
                                  "bl": tb["low"], "bh": tb["high"],
                                  "ex": ta["exact"] & tb["exact"]}).dropna()
            if not len(frame):
                continue
            diff = float((frame["va"] - frame["vb"]).mean())
            worst, best, _ = difference_bounds(ta.loc[frame.index], tb.loc[frame.index])
            holds = (worst > 0) if diff > 0 else (best < 0) if diff < 0 else worst == best == 0
            out.append({"a": a, "b": b, "variant": variant, "diff": diff, "worst": worst,
                        "best": best, "n_queries": len(frame), "holds": bool(holds),
                        "exact": float(frame["ex"].astype(bool).mean()),
                        "unjudged": m.unjudged if m is not None else "nonrelevant"})
    return out


def _indexed(table: pd.DataFrame, variant: str) -> pd.DataFrame:
    rows = table[table["variant"] == variant]
    return rows.set_index("qid")[["low", "high", "exact"]]


def write_judgments(judgments: Judgments, per_query: Mapping[str, pd.DataFrame],
                    out: Path) -> dict[str, Any]:
    """``out/judgments/<ranker>.parquet`` per ranker and ``out/judgments.csv`` (per ranker
    and variant: mean, low, high, share exact, queries; and the ranker's Judged@10
    distribution); returns their paths by role."""
    import pyarrow as pa
    import pyarrow.parquet as parquet

    folder = out / "judgments"
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    rows = []
    for name, table in judgments.tables.items():
        path = folder / f"{name}.parquet"
        parquet.write_table(pa.Table.from_pandas(table, preserve_index=False, nthreads=1), path)
        paths[name] = path
        means = judgments.means(name)
        dist = {f"judged_at_10_{k}": v for k, v in judgments.dists.get(name, {}).items()
                if k != "n"}
        values = per_query[name][list(means.index)]
        rows.append(pd.DataFrame({"ranker": name, "variant": means.index,
                                  "mean": values.mean().to_numpy(),
                                  "low": means["low"].to_numpy(),
                                  "high": means["high"].to_numpy(),
                                  "exact": means["exact"].to_numpy(),
                                  "n_queries": values.count().to_numpy(), **dist}))
    csv = out / "judgments.csv"
    (pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()).to_csv(csv, index=False)
    return {"judgments": paths, "judgments_csv": csv}
