"""``unjudged='condensed'`` costs what its rows need (issue 25): on a fully judged run it is
the non-relevant metric, in memory as in value; where rows are unjudged, the rows it drops
are never ranked for it. Memory is measured with :mod:`tracemalloc` (allocations, not
time, so the bounds do not depend on the machine's load) on inputs small enough that no
work goes to the other core, with the cyclic garbage collector off, so a Prepared kept
alive by a reference to itself shows as memory that is never given back."""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import numpy as np
import pandas as pd
import pytest

import harness
from harness.metrics.engine import blocked
from harness.metrics.layout.prepare import prepare


def _run(queries: int, per_query: int, seed: int = 0) -> pd.DataFrame:
    """A run of ``queries`` x ``per_query`` rows, scores with ties, labels 0-3 on every row."""
    rng = np.random.default_rng(seed)
    n = queries * per_query
    return pd.DataFrame({"qid": np.repeat(np.arange(queries), per_query),
                         "docid": np.tile(np.arange(per_query), queries),
                         "score": rng.integers(0, 50, n) / 4.0,
                         "label": rng.integers(0, 4, n)})


def _peak(run: pd.DataFrame, qrels: pd.DataFrame | None, metric: str
          ) -> tuple[int, pd.Series]:
    """tracemalloc's peak while ``metric`` is evaluated (cyclic collector off), and its
    values."""
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        out = harness.evaluate(run, qrels, [metric])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        gc.enable()
    return peak, out[metric]


def test_condensed_on_a_fully_judged_run_costs_what_the_nonrelevant_metric_costs(
        monkeypatch):
    # 20 blocks of 6,000 rows: what one block leaves behind would pile up 20 times
    monkeypatch.setattr(blocked, "BLOCKED_ABOVE", 0)
    monkeypatch.setattr(blocked, "BLOCK_ROWS", 6_000)
    run = _run(1_200, 100)
    plain_peak, plain = _peak(run, None, "AP@10")
    condensed_peak, condensed = _peak(run, None, "AP@10(unjudged=condensed)")
    # every row judged: no row leaves the ranking, so the values are AP@10's, bit for bit
    np.testing.assert_array_equal(condensed.to_numpy(), plain.to_numpy())
    assert plain.notna().all() and (plain > 0).any()
    assert condensed_peak <= 1.2 * plain_peak, (condensed_peak, plain_peak)


def test_condensed_ranks_only_the_judged_rows_where_some_are_unjudged():
    # a third of the rows judged: AP over all rows ranks every row; the condensed twin
    # ranks only its third, and the rows it drops are not ranked for it meanwhile
    run = _run(1_500, 100, seed=1)
    judged = run.sample(frac=1 / 3, random_state=2)
    qrels = judged[["qid", "docid", "label"]]
    run = run[["qid", "docid", "score"]]
    everything_peak, _ = _peak(run, qrels, "AP")
    condensed_peak, condensed = _peak(run, qrels, "AP(unjudged=condensed)")
    # the condensed value is the value of AP on the judged rows alone
    alone = harness.evaluate(judged[["qid", "docid", "score"]], qrels, ["AP"])["AP"]
    pd.testing.assert_series_equal(condensed, alone, check_names=False)
    assert condensed_peak <= 0.7 * everything_peak, (condensed_peak, everything_peak)


@pytest.mark.parametrize("ties", ["average", "docid"])
@pytest.mark.parametrize("every_row_judged", [True, False])
def test_prepared_rows_are_freed_without_the_cyclic_collector(ties, every_row_judged):
    # the twins a Prepared hands out (its float32 scores, its condensed rows) do not hold
    # it, nor themselves: its arrays go as soon as the last reference does
    run = _run(30, 20)
    qrels = run[["qid", "docid", "label"]]
    if not every_row_judged:
        qrels = qrels.iloc[::2]
    gc.collect()
    gc.disable()
    try:
        prep = prepare(run[["qid", "docid", "score"]], qrels)
        prep.wait()
        condensed = prep.condensed
        assert (condensed is prep) == every_row_judged
        for p in (prep, condensed, prep.float32, condensed.float32):
            p.ranking(ties)
            p.ranking(ties, top=3)
        watched = [weakref.ref(p) for p in (prep, condensed, prep.float32)]
        del prep, condensed, p
        assert [w() for w in watched] == [None, None, None]
    finally:
        gc.enable()
