"""Tie rules checked statistically and against the libraries that define them."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import harness

N_QUERIES = 4000
DOCS = ["d0", "d1", "d2", "d3"]


def _tied_run(labels: list[int], seed_rows: int = 0) -> pd.DataFrame:
    qids = np.repeat([f"query-{i:05d}" for i in range(N_QUERIES)], len(DOCS))
    run = pd.DataFrame({"qid": qids, "docid": np.tile(DOCS, N_QUERIES), "score": 1.0,
                        "label": np.tile(labels, N_QUERIES)})
    if seed_rows:
        run = run.sample(frac=1, random_state=seed_rows).reset_index(drop=True)
    return run


def _orders(seed: int, shuffled_rows: int = 0) -> pd.Series:
    """Per query, the order ties='random' gave its four tied documents, read through the
    public API: with only document j relevant, RR is 1 / (rank of j)."""
    ranks = {}
    for j, doc in enumerate(DOCS):
        labels = [int(i == j) for i in range(len(DOCS))]
        out = harness.evaluate(_tied_run(labels, shuffled_rows),
                               metrics=[harness.Metric("rr", ties="random", seed=seed)])
        ranks[doc] = (1 / out.iloc[:, -1]).round().astype(int)
    frame = pd.DataFrame(ranks)
    return frame.apply(lambda r: tuple(r.sort_values().index), axis=1)


@pytest.mark.parametrize("seed", [0, 7])
def test_random_ties_are_a_uniform_shuffle(seed: int) -> None:
    orders = _orders(seed)
    counts = orders.value_counts().reindex(list(itertools.permutations(DOCS)), fill_value=0)
    assert (counts > 0).all()  # all 24 orders occur (the old key reached 8)
    chi2 = stats.chisquare(counts.to_numpy())
    assert chi2.pvalue > 1e-4, chi2  # the old key: chi2 ~ 8,000
    # the order depends on (seed, qid, docid) only: shuffling the rows changes nothing
    assert orders.equals(_orders(seed, shuffled_rows=3))


def test_random_ties_average_to_the_exact_expectation() -> None:
    """Labels 3, 0, 2, 0 all tied: E[nDCG@1] over uniform orders is (7 + 3) / 4 / 7 = 5/14
    (gains 2^3-1 and 2^2-1, each first with probability 1/4, over IDCG@1 = 7), which
    ties='average' computes exactly (McSherry & Najork); the seeded shuffle's mean over
    4,000 queries must fall within 4 standard errors of it (the old key gave 0.550)."""
    run = _tied_run([3, 0, 2, 0])
    out = harness.evaluate(run, metrics=[harness.Metric("ndcg", k=1, ties="random"),
                                         harness.Metric("ndcg", k=1)])
    shuffled, exact = out.iloc[:, -2], out.iloc[:, -1]
    assert exact.iloc[0] == pytest.approx((7 + 3) / 4 / 7)  # (2^3-1 + 2^2-1)/4 over IDCG 7
    se = shuffled.std(ddof=1) / np.sqrt(len(shuffled))
    assert abs(shuffled.mean() - exact.iloc[0]) < 4 * se


# -- ranx: ties as its numba quicksort leaves them ------------------------------------------

RANX_NAMES = {"ndcg@5": ("ndcg", 5, {}), "ndcg": ("ndcg", None, {}),
              "ndcg_burges@10": ("ndcg", 10, {"gain": "exp2"}), "map@10": ("ap", 10, {}),
              "map": ("ap", None, {}), "mrr": ("rr", None, {}), "mrr@3": ("rr", 3, {}),
              "precision@5": ("precision", 5, {}), "recall@10": ("recall", 10, {})}


def _ranx_data(seed: int, sizes: tuple[int, int], tied: bool, judge_all: bool
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run of 200 queries (scores on a 0.5 grid when ``tied``) and its positive qrels,
    plus a judged, never retrieved document in every third query (every query with
    ``judge_all``, so qrels and run hold the same queries)."""
    rng = np.random.default_rng(seed)
    rows = []
    for qi in range(200):
        n = int(rng.integers(*sizes))
        for d in rng.permutation(60)[:n]:
            score = float(rng.integers(0, 4)) / 2 if tied else float(rng.normal())
            rows.append((f"q{qi:03d}", f"d{d:02d}", score, int(rng.choice(4, p=[.5, .25, .15,
                                                                               .1]))))
    df = pd.DataFrame(rows, columns=["qid", "docid", "score", "label"])
    unretrieved = pd.DataFrame([(f"q{qi:03d}", f"x{qi}", 0.0, 2)
                                for qi in range(0, 200, 1 if judge_all else 3)],
                               columns=df.columns)
    qrels = pd.concat([df[df.label > 0], unretrieved])[["qid", "docid", "label"]]
    return df[["qid", "docid", "score"]], qrels


def _ranx_per_query(run: pd.DataFrame, qrels: pd.DataFrame, path: str
                    ) -> dict[str, pd.Series]:
    """ranx's per-query values, the run read as ``path`` says: ``objects`` (Qrels/Run
    from data frames), ``comparable`` (the same with make_comparable=True) or ``dicts``
    (plain nested dicts passed to evaluate)."""
    import warnings

    from ranx import Qrels, Run, evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety chatter
        if path == "dicts":  # insertion order = the frame's row order
            q: dict[str, dict[str, int]] = {}
            for qid, d, label in qrels.itertuples(index=False):
                q.setdefault(qid, {})[d] = int(label)
            r: dict[str, dict[str, float]] = {}
            for qid, d, score in run.itertuples(index=False):
                r.setdefault(qid, {})[d] = score
            q = {qid: q[qid] for qid in r}  # ranx pairs plain dicts' queries by position
            scores = evaluate(q, r, list(RANX_NAMES), return_mean=False)
            return {name: pd.Series(v, index=list(q)) for name, v in scores.items()}
        # from_df inserts each query's documents in the frame's row order; it wants ids of
        # dtype object
        ids = {"qid": object, "docid": object}
        rq = Qrels.from_df(qrels.astype(ids), q_id_col="qid", doc_id_col="docid",
                           score_col="label")
        rr = Run.from_df(run.astype(ids), q_id_col="qid", doc_id_col="docid",
                         score_col="score")
        scores = evaluate(rq, rr, list(RANX_NAMES), return_mean=False,
                          make_comparable=path == "comparable")
    return {name: pd.Series(v, index=list(rq.keys())) for name, v in scores.items()}


@pytest.mark.parametrize("sizes, tied, path, ties", [
    ((2, 16), True, "comparable", None),  # <= 15 documents: insertion order
    ((16, 60), True, "objects", None),  # the Run's one quicksort scrambles the ties
    ((16, 60), True, "comparable", "quicksort2"),  # make_comparable sorts it again
    ((2, 16), True, "dicts", "quicksort_reversed"),  # dicts: ties reversed ...
    ((16, 60), True, "dicts", "quicksort_reversed"),  # ... or scrambled otherwise
    ((16, 40), False, "comparable", None)])
def test_the_ranx_convention_is_ranx_value_for_value(sizes: tuple[int, int], tied: bool,
                                                     path: str, ties: str | None) -> None:
    """ranx 0.3 orders each query of a Run with numba's unstable quicksort argsort of the
    negated scores, in insertion order: up to 15 documents that is an insertion sort
    (ties keep input order), from 16 on tied documents move; make_comparable=True sorts
    the run a second time; plain dicts are sorted ascending and read backwards. The ranx
    convention (ties='quicksort'), 'quicksort2' and 'quicksort_reversed' run the same
    algorithm, so every query agrees, long tied ones included."""
    run, qrels = _ranx_data(5, sizes, tied, judge_all=path != "comparable")
    theirs = _ranx_per_query(run, qrels, path)
    extra = {} if ties is None else {"ties": ties}
    metrics = {name: harness.Metric(m, k=k, convention="ranx", **opts, **extra)
               for name, (m, k, opts) in RANX_NAMES.items()}
    ours = harness.evaluate(run, qrels, list(metrics.values()))
    if tied and (sizes[0] >= 16 or path == "dicts"):  # the other rules would differ
        for other in {"input", "quicksort", "quicksort2", "quicksort_reversed"} - {
                metrics["map"].ties}:
            ap = harness.evaluate(run, qrels, [harness.Metric("ap", convention="ranx",
                                                              ties=other)]).iloc[:, -1]
            common = ap.index.intersection(theirs["map"].index)
            assert (ap[common] != theirs["map"][common]).sum() > 20, other
    for name, metric in metrics.items():
        mine = ours[metric.display_name]
        common = mine.index.intersection(theirs[name].index)
        assert len(common) > (150 if path == "comparable" else 199)
        np.testing.assert_allclose(mine[common], theirs[name][common], rtol=0, atol=1e-15,
                                   err_msg=name)


def test_quicksort_is_numbas_argsort() -> None:
    """The permutation behind ties='quicksort' is numba's np.argsort (kind quicksort, the
    one ranx calls) on arrays of 1 to 300 keys with few distinct values, infinities (NaN
    scores under nan_scores='last') included."""
    import numba

    from harness.metrics.layout.quicksort_ties import quicksort_argsort

    argsort = numba.njit(lambda a: np.argsort(a))
    rng = np.random.default_rng(3)
    for _ in range(400):
        n = int(rng.integers(1, 300))
        keys = rng.choice([-np.inf, 0.0, 0.5, 1.0, 2.0, np.inf][:int(rng.integers(1, 7))],
                          size=n)
        assert quicksort_argsort(keys.tolist()) == argsort(keys).tolist()


def test_ranx_reads_float_labels_truncated() -> None:
    """ranx's Qrels stores labels as int64 (1.7 -> 1, -1.5 -> -1): its values equal the
    ranx convention on labels truncated toward zero, which the docs ask of users; given
    fractional labels, the ranx preset refuses them, naming itself."""
    import warnings

    from ranx import Qrels, Run, evaluate

    labels = {"a": 1.7, "b": 0.6, "c": 2.2, "e": 3.9}
    scores = {"a": 3.0, "b": 2.0, "c": 1.0, "e": 0.5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = evaluate(Qrels.from_dict({"q": labels}), Run.from_dict({"q": scores}),
                          "ndcg")
    run = pd.DataFrame({"qid": "q", "docid": list(scores), "score": list(scores.values()),
                        "label": list(labels.values())})
    m = harness.Metric("ndcg", convention="ranx")
    truncated = harness.evaluate(run.assign(label=np.trunc(run["label"])), metrics=[m])
    assert truncated.iloc[0, -1] == pytest.approx(theirs, abs=1e-15)
    # without truncating, the ranx preset would not give ranx's number: it refuses
    with pytest.raises(harness.InputError, match="convention='ranx'.*not an integer"):
        harness.evaluate(run, metrics=[m])


# -- trec_eval ----------------------------------------------------------------------------

TREC_MEASURES = {"map": ("ap", None), "ndcg": ("ndcg", None), "recip_rank": ("rr", None),
                 "P_5": ("precision", 5), "ndcg_cut_10": ("ndcg", 10),
                 "recall_100": ("recall", 100)}


def _pytrec(qrel: dict, run: dict) -> pd.DataFrame:
    """pytrec_eval's values, computed in a fresh process: trec_eval keeps measure
    parameters in global state, and an ndcg with custom gains set by an earlier test (through
    ir_measures) makes its ndcg loop forever on a query judged only with negative labels."""
    import json
    import subprocess
    import sys

    code = ("import json, sys, pytrec_eval\n"
            "q, r = json.load(sys.stdin)\n"
            "m = {'map', 'ndcg', 'recip_rank', 'P.5', 'ndcg_cut.10', 'recall.100'}\n"
            "print(json.dumps(pytrec_eval.RelevanceEvaluator(q, m).evaluate(r)))")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps([qrel, run]),
                          capture_output=True, text=True, timeout=120, check=True)
    out = json.loads(proc.stdout)
    return pd.DataFrame(out).T[list(TREC_MEASURES)].sort_index()


def _ours(qrel: dict, run: dict, convention: str = "trec_eval") -> pd.DataFrame:
    r = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                     columns=["qid", "docid", "score"])
    j = pd.DataFrame([(q, d, lab) for q, docs in qrel.items() for d, lab in docs.items()],
                     columns=["qid", "docid", "label"])
    metrics = [harness.Metric(m, k=k, convention=convention)
               for m, k in TREC_MEASURES.values()]
    out = harness.evaluate(r, j, metrics)
    return out[[m.display_name for m in metrics]].set_axis(list(TREC_MEASURES), axis=1)


def test_trec_eval_scores_a_query_judged_only_negative() -> None:
    """A query whose every judgment is negative is in the qrels, so trec_eval evaluates it
    (0 for every measure); it is not dropped as unjudged."""
    qrel = {"q1": {"d1": -1, "d2": -2}, "q2": {"d1": 1, "d3": 2}}
    run = {"q1": {"d1": 1.0, "d2": 0.5}, "q2": {"d1": 1.0, "d2": 0.3}}
    ours, theirs = _ours(qrel, run), _pytrec(qrel, run)
    assert list(ours.index) == ["q1", "q2"] == list(theirs.index)
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=0, atol=1e-15)
    assert (ours.loc["q1"] == 0).all()


def test_trec_eval9_compares_scores_as_float32() -> None:
    """trec_eval 9.x and pytrec_eval read scores into C floats: 0.5 and 0.5 + 1e-8 tie there
    and the docid decides. Random queries whose scores differ only below float32's
    resolution (and some that differ above it) agree with pytrec_eval on every measure
    under convention ``trec_eval9``; trec_eval 10.0 (convention ``trec_eval``) compares
    the doubles."""
    rng = np.random.default_rng(11)
    qrel: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qi in range(150):
        q = f"q{qi:03d}"
        n = int(rng.integers(2, 30))
        docs = [f"d{d:03d}" for d in rng.permutation(300)[:n]]
        base = rng.choice([0.25, 0.5, 1.0, 3.0], size=n)
        tiny = rng.choice([0.0, 1e-9, 3e-8, 1e-6], size=n)  # 1e-6 survives float32
        run[q] = {d: float(b + t) for d, b, t in zip(docs, base, tiny)}
        qrel[q] = {d: int(rng.integers(0, 3)) for d in docs if rng.random() < 0.6}
        qrel[q] = qrel[q] or {docs[0]: 1}
    ours, theirs = _ours(qrel, run, "trec_eval9"), _pytrec(qrel, run)
    np.testing.assert_allclose(ours.to_numpy(), theirs.loc[ours.index].to_numpy(), rtol=0,
                               atol=1e-12)
    assert not np.allclose(_ours(qrel, run).to_numpy(), ours.to_numpy(), rtol=0, atol=1e-12)
    # the float64 order differs: the rule is what makes them agree
    r = pd.DataFrame({"qid": "q", "docid": ["a", "z"], "score": [0.5 + 1e-8, 0.5]})
    j = pd.DataFrame({"qid": ["q"], "docid": ["a"], "label": [1]})
    rr = harness.evaluate(r, j, [harness.Metric("rr", convention="trec_eval9"),
                                 harness.Metric("rr", convention="trec_eval"),
                                 harness.Metric("rr", ties="input")]).iloc[0, -3:]
    assert list(rr) == [0.5, 1.0, 1.0]


# -- ir_measures: a gain table relabels judged documents only ------------------------------

@pytest.mark.parametrize("gains", [{0: 1, 1: 2, 2: 3}, {0: 0, 1: 1, 2: 3}, {0: 2, 1: 4, 2: 9}])
def test_a_gain_table_gives_unjudged_documents_gain_0_as_ir_measures(gains: dict) -> None:
    """ir_measures' nDCG(gains=...) maps the grades of judged documents; a retrieved
    document without a judgment keeps gain 0, even when grade 0 gets a positive gain (the
    old reading gave it grade 0's gain and scores above 1). Queries judged but not run
    score 0 there, as with missing='zero'."""
    import warnings

    import ir_measures
    from ir_measures import nDCG

    rng = np.random.default_rng(sum(gains.values()))
    qrels, run = [], []
    for qi in range(120):
        q = f"q{qi:03d}"
        docs = [f"d{d:03d}" for d in rng.permutation(200)[:int(rng.integers(3, 25))]]
        for d in docs:
            run.append(ir_measures.ScoredDoc(q, d, float(rng.integers(0, 50))))
            if rng.random() < 0.6:
                qrels.append(ir_measures.Qrel(q, d, int(rng.integers(0, 3))))
        qrels.append(ir_measures.Qrel(q, f"x{qi}", 2))  # judged, never retrieved
    qrels += [ir_measures.Qrel("only-judged", "z", 1)]
    measure = nDCG(gains=gains) @ 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
        mean = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    r = pd.DataFrame([(x.query_id, x.doc_id, x.score) for x in run],
                     columns=["qid", "docid", "score"])
    j = pd.DataFrame([(x.query_id, x.doc_id, x.relevance) for x in qrels],
                     columns=["qid", "docid", "label"])
    ours = harness.evaluate(r, j, [harness.Metric("ndcg", k=10, gain=gains,
                                                  convention="trec_eval")], missing="zero")
    values = ours.iloc[:, -1]
    assert set(values.index) == set(theirs)
    np.testing.assert_allclose(values.to_numpy(), [theirs[q] for q in values.index], rtol=0,
                               atol=1e-12)
    assert values.max() <= 1.0 and values["only-judged"] == 0.0
    assert harness.aggregate(ours).iloc[0]["mean"] == pytest.approx(mean, abs=1e-12)
