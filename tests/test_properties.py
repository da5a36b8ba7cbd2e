"""Property tests of the metric engine.

The independent check of exact tie averaging is brute force: every order of every tied
group is enumerated with :func:`itertools.permutations`, each order is scored by the plain
reference implementations below (a loop over ranks, written from the textbook formulas,
sharing no code with the engine), and the mean over orders is compared with
``ties="average"``. The min and max over orders are compared with ``ties="pessimistic"`` /
``"optimistic"``, and the orders the deterministic rules pick with ``"input"`` / ``"docid"``.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from harness import Metric, evaluate, tie_interval

ATOL = 1e-12
NAMES = ("ndcg", "dcg", "ap", "rr", "precision", "recall", "err")

# -- reference implementations (one ranked list of labels; None = judged nowhere) ----------


def _gain(label: float, gain: str) -> float:
    return 2.0 ** label - 1.0 if gain == "exp2" else float(label)


def ref_dcg(ranked: Sequence[float], k: int | None, gain: str) -> float:
    cut = ranked if k is None else ranked[:k]
    return math.fsum(_gain(lab, gain) / math.log2(i + 2) for i, lab in enumerate(cut))


def ref_ndcg(ranked: Sequence[float], judged: Sequence[float], k: int | None,
             gain: str) -> float:
    ideal = ref_dcg(sorted(judged, reverse=True), k, gain)
    return ref_dcg(ranked, k, gain) / ideal if ideal > 0 else 0.0


def ref_ap(ranked: Sequence[float], judged: Sequence[float], k: int | None) -> float:
    n_rel = sum(1 for lab in judged if lab >= 1)
    if n_rel == 0:
        return 0.0
    hits, total = 0, 0.0
    for i, lab in enumerate(ranked[:k] if k is not None else ranked):
        if lab >= 1:
            hits += 1
            total += hits / (i + 1)
    return total / n_rel


def ref_rr(ranked: Sequence[float], k: int | None) -> float:
    for i, lab in enumerate(ranked[:k] if k is not None else ranked):
        if lab >= 1:
            return 1.0 / (i + 1)
    return 0.0


def ref_precision(ranked: Sequence[float], k: int | None) -> float:
    # P@k divides by k even when fewer than k documents were retrieved (trec_eval P_k)
    cut = ranked if k is None else ranked[:k]
    return sum(1 for lab in cut if lab >= 1) / (len(ranked) if k is None else k)


def ref_recall(ranked: Sequence[float], judged: Sequence[float], k: int | None) -> float:
    n_rel = sum(1 for lab in judged if lab >= 1)
    if n_rel == 0:
        return 0.0
    cut = ranked if k is None else ranked[:k]
    return sum(1 for lab in cut if lab >= 1) / n_rel


def ref_err(ranked: Sequence[float], k: int | None, top: float) -> float:
    # Chapelle et al. 2009: R = (2^g - 1) / 2^g_max; ERR = sum_r 1/r R_r prod_{i<r} (1 - R_i)
    p_continue, total = 1.0, 0.0
    for i, lab in enumerate(ranked[:k] if k is not None else ranked):
        r = (2.0 ** lab - 1.0) / 2.0 ** top
        total += p_continue * r / (i + 1)
        p_continue *= 1.0 - r
    return total


def reference(name: str, ranked: Sequence[float], judged: Sequence[float], k: int | None,
              gain: str, top: float) -> float:
    if name == "dcg":
        return ref_dcg(ranked, k, gain)
    if name == "ndcg":
        return ref_ndcg(ranked, judged, k, gain)
    if name == "ap":
        return ref_ap(ranked, judged, k)
    if name == "rr":
        return ref_rr(ranked, k)
    if name == "precision":
        return ref_precision(ranked, k)
    if name == "recall":
        return ref_recall(ranked, judged, k)
    if name == "err":
        return ref_err(ranked, k, top)
    raise AssertionError(name)


def tie_orders(scores: Sequence[float], labels: Sequence[float]) -> list[list[float]]:
    """Every distinct label sequence a ranking by score can produce, each with equal weight.

    Groups of equal score are permuted with itertools.permutations; within a group, each
    distinct arrangement of its labels arises from the same number of document orders, so
    the plain mean over distinct arrangements is the mean over all document orders.
    """
    groups: dict[float, list[float]] = {}
    for s, lab in zip(scores, labels):
        groups.setdefault(s, []).append(lab)
    per_group = [sorted(set(itertools.permutations(groups[s])))
                 for s in sorted(groups, reverse=True)]
    return [[lab for part in combo for lab in part] for combo in itertools.product(*per_group)]


def _order_by(scores: Sequence[float], labels: Sequence[float],
              tiebreak: Sequence[Any]) -> list[float]:
    idx = sorted(range(len(scores)), key=lambda i: (-scores[i], tiebreak[i]))
    return [labels[i] for i in idx]


# -- query generator: retrieved docs (judged or not) plus judged-but-unretrieved docs --------

_DOCID_POOL = ["d1", "d2", "d9", "d10", "d11", "d100", "a", "Z", "d09", "e", "d3", "d4"]


def _docid_desc_rank(docids: Sequence[str]) -> list[int]:
    """Tie-break key of ties='docid': docid descending, compared as strings."""
    order = sorted(docids, reverse=True)
    return [order.index(d) for d in docids]


@st.composite
def small_queries(draw: st.DrawFn, max_docs: int = 6, max_queries: int = 3) -> dict[str, Any]:
    queries = []
    for qi in range(draw(st.integers(1, max_queries))):
        n = draw(st.integers(1, max_docs))
        scores = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n))
        labels = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3]), min_size=n, max_size=n))
        judged = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        extra = draw(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=2))
        # docids whose string order differs from their numeric order ("d9" > "d10")
        docids = draw(st.lists(st.sampled_from(_DOCID_POOL), min_size=n, max_size=n,
                               unique=True))
        queries.append(dict(qid=f"q{qi}", scores=scores, labels=labels, judged=judged,
                            extra=extra, docids=list(docids)))
    return {"queries": queries}


def _frames(data: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    run_rows, qrel_rows = [], []
    for q in data["queries"]:
        for d, s, lab, j in zip(q["docids"], q["scores"], q["labels"], q["judged"]):
            run_rows.append((q["qid"], d, s))
            if j:
                qrel_rows.append((q["qid"], d, lab))
        for e, lab in enumerate(q["extra"]):
            qrel_rows.append((q["qid"], f"x{e}", lab))
    run = pd.DataFrame(run_rows, columns=["qid", "docid", "score"])
    qrels = pd.DataFrame(qrel_rows, columns=["qid", "docid", "label"])
    return run, qrels


def _effective(q: dict[str, Any]) -> tuple[list[float], list[float]]:
    """Labels of the retrieved docs (0 when unjudged) and every judged label of the query."""
    ranked_labels = [float(lab) if j else 0.0 for lab, j in zip(q["labels"], q["judged"])]
    judged = [float(lab) for lab, j in zip(q["labels"], q["judged"]) if j] + \
        [float(x) for x in q["extra"]]
    return ranked_labels, judged


def _evaluated(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Queries the engine evaluates: retrieved and with at least one judgment."""
    return [q for q in data["queries"] if any(q["judged"]) or q["extra"]]


# -- brute force over tie orders ---------------------------------------------------------------

@settings(max_examples=120, deadline=None)
@given(small_queries(), st.sampled_from([None, 2, 3]), st.sampled_from(["exp2", "linear"]))
def test_tie_modes_match_brute_force_over_all_orders(data, k, gain) -> None:
    run, qrels = _frames(data)
    queries = _evaluated(data)
    if not queries:
        return
    top = max(max(_effective(q)[0] + _effective(q)[1]) for q in queries)
    metrics = {}
    for name in NAMES:
        opts: dict[str, Any] = {"k": k}
        if name in ("dcg", "ndcg"):
            opts["gain"] = gain
        for ties in ("average", "optimistic", "pessimistic", "input", "docid"):
            metrics[(name, ties)] = Metric(name, ties=ties, **opts)
    out = evaluate(run, qrels, list(metrics.values()))
    assert list(out.index) == [q["qid"] for q in queries]
    for q in queries:
        ranked_labels, judged = _effective(q)
        orders = tie_orders(q["scores"], ranked_labels)
        for name in NAMES:
            values = [reference(name, o, judged, k, gain, top) for o in orders]
            want = {
                "average": math.fsum(values) / len(values),
                "optimistic": max(values),
                "pessimistic": min(values),
                # input: row order within a tie; docid: docid descending (as strings)
                "input": reference(name, _order_by(q["scores"], ranked_labels,
                                                   list(range(len(q["scores"])))),
                                   judged, k, gain, top),
                "docid": reference(name, _order_by(
                    q["scores"], ranked_labels, _docid_desc_rank(q["docids"])),
                    judged, k, gain, top),
            }
            for ties, value in want.items():
                got = out.loc[q["qid"], metrics[(name, ties)].display_name]
                assert got == pytest.approx(value, abs=ATOL * max(1.0, abs(value)), rel=0), (
                    f"{metrics[(name, ties)].display_name} qid {q['qid']}: engine {got!r}, "
                    f"brute force {value!r}; ranked labels {ranked_labels}, scores "
                    f"{q['scores']}, judged {judged}"
                )


_HAND_CASES = [
    # (scores, labels, k): fixed examples with large tied groups (up to all 6 documents)
    ([1, 1, 1, 1, 1, 1], [0, 1, 0, 2, 0, 3], None),
    ([1, 1, 1, 1, 1, 1], [0, 1, 0, 2, 0, 3], 2),
    ([2, 1, 1, 1, 1, 0], [1, 0, 1, 0, 1, 2], 3),
    ([2, 1, 1, 1, 1, 0], [0, 0, 0, 0, 3, 0], 3),
    ([1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 1], 2),
    ([5, 5, 5, 4, 4, 4], [3, 3, 3, 3, 3, 3], None),
]


@pytest.mark.parametrize("scores,labels,k", _HAND_CASES)
def test_tie_average_matches_brute_force_on_fixed_lists(scores, labels, k) -> None:
    n = len(scores)
    run = pd.DataFrame({"qid": "q", "docid": [f"d{i}" for i in range(n)],
                        "score": [float(s) for s in scores], "label": labels})
    top = max(labels)
    for gain in ("exp2", "linear"):
        ms = {name: Metric(name, k=k, **({"gain": gain} if name in ("dcg", "ndcg") else {}))
              for name in NAMES}
        out = evaluate(run, None, list(ms.values()))
        # every document order: all n! permutations, kept when scores stay non-increasing
        orders = [[labels[i] for i in p] for p in itertools.permutations(range(n))
                  if all(scores[p[j]] >= scores[p[j + 1]] for j in range(n - 1))]
        for name, m in ms.items():
            want = math.fsum(reference(name, o, labels, k, gain, top) for o in orders)
            want /= len(orders)
            assert out[m.display_name].iloc[0] == pytest.approx(want, abs=ATOL, rel=1e-12)


def test_rr_tie_average_by_hand() -> None:
    # 4 tied docs, 1 relevant: RR is 1, 1/2, 1/3, 1/4 with chance 1/4 each -> 25/48
    run = pd.DataFrame({"qid": 1, "docid": list("abcd"), "score": 0.0, "label": [0, 0, 1, 0]})
    assert evaluate(run, None, ["rr"])["RR"].iloc[0] == pytest.approx(25 / 48, abs=ATOL)
    # AP of the same: precision of the relevant doc is 1/r with chance 1/4 -> 25/48 too
    assert evaluate(run, None, ["ap"])["AP"].iloc[0] == pytest.approx(25 / 48, abs=ATOL)


# -- permutation invariance ------------------------------------------------------------------

_PERM_TIES = ("average", "docid", "optimistic", "pessimistic", "random")


@settings(max_examples=60, deadline=None)
@given(small_queries(max_docs=8, max_queries=4), st.sampled_from([None, 1, 3]),
       st.randoms(use_true_random=False), st.integers(0, 5))
def test_row_order_changes_nothing(data, k, rnd, seed) -> None:
    run, qrels = _frames(data)
    if qrels.empty:
        return
    metrics = [Metric(name, k=k, ties=t, seed=seed)
               for name in ("ndcg", "dcg", "mndcg", "ap", "rr", "precision", "recall", "err")
               for t in _PERM_TIES]
    before = evaluate(run, qrels, metrics)
    # the shuffled run keeps its shuffled index labels: the index must not matter either
    run2 = run.iloc[rnd.sample(range(len(run)), len(run))]
    qrels2 = qrels.iloc[rnd.sample(range(len(qrels)), len(qrels))].reset_index(drop=True)
    after = evaluate(run2, qrels2, metrics)
    pd.testing.assert_index_equal(before.index, after.index)
    for column in before.columns:
        np.testing.assert_allclose(after[column].to_numpy(dtype=float),
                                   before[column].to_numpy(dtype=float),
                                   rtol=0, atol=ATOL, err_msg=column)
    # and with labels in the run instead of qrels
    lab = run.merge(qrels, on=["qid", "docid"], how="left").fillna({"label": 0})
    lab2 = lab.iloc[rnd.sample(range(len(lab)), len(lab))].reset_index(drop=True)
    a, b = evaluate(lab, None, metrics), evaluate(lab2, None, metrics)
    for column in a.columns:
        np.testing.assert_allclose(b[column].to_numpy(dtype=float),
                                   a[column].to_numpy(dtype=float), rtol=0, atol=ATOL,
                                   err_msg=column)


# -- bounds between tie modes ------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(small_queries(max_docs=10, max_queries=4), st.sampled_from([None, 1, 2, 5]))
def test_optimistic_ge_average_ge_pessimistic(data, k) -> None:
    run, qrels = _frames(data)
    if qrels.empty:
        return
    names = ("ndcg", "ap", "rr", "precision", "recall", "err")
    metrics = {(n, t): Metric(n, k=k, ties=t) for n in names
               for t in ("optimistic", "average", "pessimistic", "random", "input", "docid")}
    out = evaluate(run, qrels, list(metrics.values()))
    for n in names:
        hi = out[metrics[(n, "optimistic")].display_name].to_numpy()
        mid = out[metrics[(n, "average")].display_name].to_numpy()
        lo = out[metrics[(n, "pessimistic")].display_name].to_numpy()
        assert (hi >= mid - ATOL).all(), n
        assert (mid >= lo - ATOL).all(), n
        for t in ("random", "input", "docid"):  # any concrete order lies in the interval
            v = out[metrics[(n, t)].display_name].to_numpy()
            assert ((v <= hi + ATOL) & (v >= lo - ATOL)).all(), (n, t)


@settings(max_examples=60, deadline=None)
@given(small_queries(max_docs=10, max_queries=4),
       st.sampled_from(["ndcg@3", "ap", "rr", "err", "P@2", "recall@2", "dcg@5"]))
def test_tie_interval_width_nonnegative(data, metric) -> None:
    run, qrels = _frames(data)
    if qrels.empty:
        return
    iv = tie_interval(run, qrels, metric)
    assert list(iv.columns) == ["pessimistic", "average", "optimistic", "width"]
    assert (iv["width"] >= 0).all()
    np.testing.assert_allclose(iv["width"], iv["optimistic"] - iv["pessimistic"], atol=0)
    assert (iv["pessimistic"] <= iv["average"] + ATOL).all()
    assert (iv["average"] <= iv["optimistic"] + ATOL).all()
    # width 0 exactly where no query has a tie that matters: without ties, width is 0
    untied = run.assign(score=np.arange(len(run), dtype=float))
    assert (tie_interval(untied, qrels, metric)["width"] == 0).all()


def test_tie_interval_by_hand() -> None:
    # two tied docs, labels 0 and 1: RR is 1 or 1/2
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "score": [1.0, 1.0], "label": [0, 1]})
    iv = tie_interval(run, None, "rr")
    assert iv.loc["q"].tolist() == pytest.approx([0.5, 0.75, 1.0, 0.5], abs=ATOL)


# -- scale invariance of linear nDCG -----------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(small_queries(max_docs=10, max_queries=4), st.sampled_from([None, 1, 3]),
       st.floats(0.01, 1000.0), st.sampled_from(["average", "docid", "input"]))
def test_linear_ndcg_is_scale_invariant(data, k, c, ties) -> None:
    run, qrels = _frames(data)
    if qrels.empty:
        return
    m = Metric("ndcg", k=k, gain="linear", ties=ties)
    a = evaluate(run, qrels, [m])[m.display_name].to_numpy()
    b = evaluate(run, qrels.assign(label=qrels["label"] * c), [m])[m.display_name].to_numpy()
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=ATOL)


# -- ties="random" -----------------------------------------------------------------------------

def _all_tied(n: int = 10) -> pd.DataFrame:
    # one relevant document among n tied ones: RR is 1/position of that document
    return pd.DataFrame({"qid": "q", "docid": [f"doc{i}" for i in range(n)], "score": 0.0,
                         "label": [1 if i == 3 else 0 for i in range(n)]})


def test_random_ties_reproducible_for_a_seed() -> None:
    run = _all_tied()
    for seed in range(5):
        m = Metric("rr", ties="random", seed=seed)
        first = evaluate(run, None, [m])[m.display_name].iloc[0]
        again = evaluate(run.copy(), None, [m])[m.display_name].iloc[0]
        assert first == again
        # a concrete order: 1/position for a position in 1..10
        assert any(first == pytest.approx(1 / p, abs=ATOL) for p in range(1, 11))


def test_random_ties_differ_between_seeds() -> None:
    run = _all_tied()
    ms = [Metric("rr", ties="random", seed=s) for s in range(20)]
    out = evaluate(run, None, ms)
    values = {round(float(out[m.display_name].iloc[0]), 12) for m in ms}
    # 20 seeds all putting the relevant doc at the same position of 10 has chance ~1e-19
    assert len(values) >= 2, values


def test_random_ties_are_not_the_input_or_docid_order_for_every_seed() -> None:
    run = _all_tied()
    ms = [Metric("ndcg", ties="random", seed=s) for s in range(20)]
    out = evaluate(run, None, ms + [Metric("ndcg", ties="input")])
    inp = out["nDCG(ties=input)"].iloc[0]
    assert inp == pytest.approx(1 / math.log2(5), abs=ATOL)  # relevant doc at row 4
    assert any(out[m.display_name].iloc[0] != inp for m in ms)


# -- inputs are left untouched ---------------------------------------------------------------

def _assert_same(before: pd.DataFrame, after: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(after, before, check_exact=True)
    assert list(after.index) == list(before.index)
    assert after.attrs == before.attrs


@settings(max_examples=40, deadline=None)
@given(small_queries(max_docs=8, max_queries=4))
def test_evaluate_does_not_modify_inputs(data) -> None:
    run, qrels = _frames(data)
    if qrels.empty:
        return
    # a non-default index and an extra column, which evaluate must leave alone too
    run.index = pd.RangeIndex(100, 100 + len(run))
    run["extra"] = "x"
    run_copy, qrels_copy = copy.deepcopy(run), copy.deepcopy(qrels)
    metrics = [Metric(n, k=3, ties=t) for n in ("ndcg", "ap", "err", "rr")
               for t in ("average", "docid", "random", "optimistic")]
    evaluate(run, qrels, metrics)
    tie_interval(run, qrels, "ndcg@3")
    _assert_same(run_copy, run)
    _assert_same(qrels_copy, qrels)
    labelled = run.merge(qrels, on=["qid", "docid"], how="left").fillna({"label": 0})
    labelled_copy = copy.deepcopy(labelled)
    evaluate(labelled, None, metrics)
    _assert_same(labelled_copy, labelled)


def test_evaluate_does_not_modify_inputs_on_special_paths() -> None:
    # NaN scores ranked last, negative labels made unjudged, int qids in the run against str
    # qids in the qrels (aligned as text)
    run = pd.DataFrame({"qid": [1, 1, 1, 2], "docid": ["a", "b", "c", "a"],
                        "score": [np.nan, 1.0, 1.0, 0.5]})
    qrels = pd.DataFrame({"qid": ["1", "1", "2"], "docid": ["a", "b", "a"],
                          "label": [2, -1, 1]})
    run_copy, qrels_copy = copy.deepcopy(run), copy.deepcopy(qrels)
    out = evaluate(run, qrels, ["ndcg", "ap"], nan_scores="last", negative_labels="unjudged")
    assert len(out) == 2
    _assert_same(run_copy, run)
    _assert_same(qrels_copy, qrels)


def test_docid_ties_compare_docids_as_strings_descending() -> None:
    # "d9" > "d10" as strings, so d9 (label 0) ranks first: RR = 1/2 (numerically it would be 1)
    run = pd.DataFrame({"qid": "q", "docid": ["d10", "d9"], "score": 1.0, "label": [1, 0]})
    assert evaluate(run, None, ["rr(ties=docid)"])["RR(ties=docid)"].iloc[0] == 0.5
    # integer docids are compared as text too: "9" > "10"
    run = run.assign(docid=[10, 9])
    assert evaluate(run, None, ["rr(ties=docid)"])["RR(ties=docid)"].iloc[0] == 0.5


@settings(max_examples=40, deadline=None)
@given(small_queries(max_docs=8, max_queries=3), st.data())
def test_nan_scores_last_is_a_score_below_all_others(data, draw) -> None:
    run, qrels = _frames(data)
    if qrels.empty:
        return
    nan_rows = draw.draw(st.lists(st.booleans(), min_size=len(run), max_size=len(run)))
    with_nan = run.assign(score=run["score"].where(~pd.Series(nan_rows, index=run.index)))
    lowered = with_nan.fillna({"score": run["score"].min() - 1.0})
    metrics = [Metric(n, k=3, ties=t) for n in ("ndcg", "ap", "rr", "err")
               for t in ("average", "optimistic", "pessimistic", "docid")]
    a = evaluate(with_nan, qrels, metrics, nan_scores="last")
    b = evaluate(lowered, qrels, metrics)
    for column in b.columns:
        np.testing.assert_allclose(a[column].to_numpy(dtype=float),
                                   b[column].to_numpy(dtype=float), rtol=0, atol=ATOL,
                                   err_msg=column)


def test_random_ties_use_the_whole_seed() -> None:
    # ten tied documents with distinct exp2 gains: the DCG identifies the order; seeds that
    # differ only in digits above the 16th are distinct definitions (distinct keys) and must
    # not share one shuffle
    run = pd.DataFrame({"qid": "q", "docid": [f"d{i}" for i in range(10)], "score": 0.0,
                        "label": list(range(10))})
    for seed in (1, 2, 3):
        a = Metric("dcg", ties="random", seed=seed)
        b = Metric("dcg", ties="random", seed=seed + 10**16)
        assert a.key != b.key
        out = evaluate(run, None, [a, b])
        assert out[a.display_name].iloc[0] != out[b.display_name].iloc[0], seed
