"""``judgment_interval``: per query, the bounds of a metric over every labeling of the unjudged
retrieved documents with grades 0..unjudged_grade. Checked by brute force, built here: every
labeling (every grade, not only those the code tries) becomes a query of its own, and every
order of tied documents too where ``ties=True``; the bounds must bracket every value and,
where ``exact``, equal the least and greatest."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from harness import Metric, evaluate, judgment_interval
from harness.errors import InputError, MetricDefinitionError
from harness.metrics.vocabulary.registry import measures

GRADE = 2  # the top grade in the qrels below: labelings take 0, 1, 2


def _query(seed: int, n_unjudged: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One query: 3-6 judged retrieved documents, ``n_unjudged`` unjudged ones, two judged
    documents the run misses, tied scores."""
    rng = np.random.default_rng(seed)
    n_judged = int(rng.integers(1, 5))
    docs = [f"d{i}" for i in range(n_judged + n_unjudged)]
    rng.shuffle(docs)
    run = pd.DataFrame({"qid": "q", "docid": docs,
                        "score": rng.integers(0, 4, len(docs)).astype(float)})
    judged = [d for d in docs if int(d[1:]) < n_judged] + ["x1", "x2"]
    labels = rng.integers(0, GRADE + 1, len(judged))
    labels[-1] = GRADE  # the top grade is judged: the default grade is GRADE
    qrels = pd.DataFrame({"qid": "q", "docid": judged, "label": labels})
    return run, qrels


def _brute(run: pd.DataFrame, qrels: pd.DataFrame, metric: Metric,
           orders: bool = False, pool: tuple[str, ...] = ()) -> np.ndarray:
    """The metric under every labeling of the run's unjudged documents and of ``pool`` with
    0..GRADE (and, with ``orders``, under every order of tied scores, ranked by input
    order), each one a query of its own."""
    unjudged = [d for d in run["docid"] if d not in set(qrels["docid"])] + list(pool)
    runs = [run]
    if orders:
        groups = [list(g.index) for _, g in run.groupby("score", sort=False)]
        runs = [run.loc[[i for g in perm for i in g]]
                for perm in itertools.product(*[list(itertools.permutations(g))
                                                for g in groups])]
        metric = metric.with_options(ties="input")
    # query i * len(runs) + j: labeling i (a row of ``grades``) of the j-th order
    grades = np.array(list(itertools.product(range(GRADE + 1), repeat=len(unjudged))),
                      dtype=np.int64).reshape((GRADE + 1) ** len(unjudged), len(unjudged))
    n_queries = len(grades) * len(runs)
    ordered = pd.concat(runs)
    n_run, n_judged = len(run), len(qrels) + len(unjudged)
    run_rows = pd.DataFrame({"qid": np.repeat(np.arange(n_queries), n_run),
                             "docid": np.tile(ordered["docid"].to_numpy(), len(grades)),
                             "score": np.tile(ordered["score"].to_numpy(), len(grades))})
    labels = np.hstack([np.tile(qrels["label"].to_numpy(), (len(grades), 1)), grades])
    qrel_rows = pd.DataFrame({
        "qid": np.repeat(np.arange(n_queries), n_judged),
        "docid": np.tile(np.concatenate([qrels["docid"].to_numpy(), unjudged]), n_queries),
        "label": np.repeat(labels, len(runs), axis=0).ravel()})
    out = evaluate(run_rows, qrel_rows, [metric])
    return out[metric.display_name].to_numpy()


def _metric(name: str, k: int | None, ties: str) -> Metric:
    spec = next(m for m in measures() if m.name == name)
    return Metric(name, k=k if spec.cutoff else None, ties=ties)


def _check(run: pd.DataFrame, qrels: pd.DataFrame, metric: Metric, ties: bool = False) -> str:
    got = judgment_interval(run, qrels, metric, ties=ties).loc["q"]
    values = _brute(run, qrels, metric, orders=ties)
    values = values[~np.isnan(values)]
    where = f"{metric.display_name} ties={ties}: {got.to_dict()} vs [{values.min()}, " \
            f"{values.max()}]"
    assert got["low"] <= values.min() + 1e-12 and got["high"] >= values.max() - 1e-12, where
    if got["exact"]:
        assert got["low"] == pytest.approx(values.min(), abs=1e-12), where
        assert got["high"] == pytest.approx(values.max(), abs=1e-12), where
    return str(got["method"])


def _plain(name: str) -> bool:
    """Whether a measure evaluates on qrels without subtopics (the diversity measures read
    subtopic judgments, which judgment_interval does not label)."""
    run, qrels = _query(0, 1)
    try:
        evaluate(run, qrels, [_metric(name, None, "docid")])
    except InputError as exc:
        assert "subtopic" in str(exc)
        return False
    return True


BUILTIN = sorted(m.name for m in measures() if m.builtin and _plain(m.name))
SUBTOPICS = sorted(m.name for m in measures() if m.builtin and not _plain(m.name))


@pytest.mark.parametrize("name", BUILTIN)
def test_bounds_bracket_every_labeling_and_are_attained_where_exact(name: str) -> None:
    methods = set()
    for seed in range(12):
        run, qrels = _query(seed, n_unjudged=1 + seed % 4)
        k = [None, 2, 3][seed % 3]
        ties = ["average", "input", "docid", "optimistic", "pessimistic"][seed % 5]
        try:
            metric = _metric(name, k, ties)
            evaluate(run, qrels, [metric])
        except MetricDefinitionError:  # a measure refusing the tie average
            metric = _metric(name, k, "docid")
        methods.add(_check(run, qrels, metric))
    spec = next(m for m in measures() if m.name == name)
    # a declared shortcut is used (not every labeling), and it is exact
    if spec.unjudged_bounds:
        assert spec.unjudged_bounds in methods, methods


@pytest.mark.parametrize("name", ["ap", "ndcg", "precision", "rr", "err", "bpref", "recall",
                                  "dcg", "rprec"])
def test_with_ties_the_interval_covers_every_tied_order_too(name: str) -> None:
    for seed in range(8):
        run, qrels = _query(100 + seed, n_unjudged=1 + seed % 3)
        _check(run, qrels, _metric(name, [None, 2, 3][seed % 3], "average"), ties=True)


def test_ndcg_is_not_monotone_so_all_relevant_is_not_the_upper_bound() -> None:
    # u, unjudged, ranks 3rd; a (2) and b (0) above it. Judging u 2 raises the ideal more
    # than its gain at rank 3 adds: nDCG falls from 1.0 to below 1.
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b", "u"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "label": [2, 0]})
    got = judgment_interval(run, qrels, "ndcg@3").loc["q"]
    assert got["nonrelevant"] == 1.0 and got["relevant"] < 1.0
    assert got["high"] == 1.0 and got["low"] == got["relevant"] and got["exact"]


def test_too_many_labelings_give_a_valid_looser_bound() -> None:
    for seed in range(10):  # nDCG: the least value stays exact, the greatest is bounded by 1
        run, qrels = _query(300 + seed, n_unjudged=2 + seed % 3)
        for m in (Metric("ndcg", ties=["docid", "average"][seed % 2]), Metric("ndcg", k=3)):
            got = judgment_interval(run, qrels, m, max_labelings=1).loc["q"]
            values = _brute(run, qrels, m)
            assert (got["high"], got["exact"], got["method"]) == (1.0, False, "ideal-low")
            assert got["low"] == pytest.approx(np.nanmin(values), abs=1e-12)
            assert np.nanmax(values) <= 1.0
    run, qrels = _query(3, n_unjudged=4)
    infap = judgment_interval(run, qrels, Metric("infap", ties="docid"), max_labelings=4)
    assert infap.loc["q", "method"] == "bound" and not infap.loc["q", "exact"]
    # infAP declares unit_range: [0, 1], every labeling's value within it
    assert infap.loc["q", "low"] == 0.0 and infap.loc["q", "high"] == 1.0
    values = _brute(run, qrels, Metric("infap", ties="docid"))
    assert 0.0 <= np.nanmin(values) and np.nanmax(values) <= 1.0


def test_columns_match_evaluate_under_each_treatment() -> None:
    run, qrels = _query(5, n_unjudged=3)
    got = judgment_interval(run, qrels, "ap@3").loc["q"]
    ours = evaluate(run, qrels, ["AP@3", "AP@3(unjudged=relevant)", "AP@3(unjudged=condensed)",
                                 "Judged@3"]).loc["q"]
    assert got["nonrelevant"] == ours["AP@3"]
    assert got["relevant"] == ours["AP@3(unjudged=relevant)"]
    assert got["condensed"] == ours["AP@3(unjudged=condensed)"]
    assert got["judged_at_k"] == ours["Judged@3"]
    assert got["n_unjudged"] == 3


def test_bad_input_is_a_one_line_error() -> None:
    run, qrels = _query(1, n_unjudged=2)
    with pytest.raises(InputError, match="no judgment has a positive grade"):
        judgment_interval(run, qrels.assign(label=0), "ap")
    with pytest.raises(MetricDefinitionError, match="ties='random' shuffles by query id"):
        judgment_interval(run, qrels, "ndcg(ties=random)")
    with pytest.raises(InputError, match="max_labelings must be an int >= 1"):
        judgment_interval(run, qrels, "ap", max_labelings=0)


@pytest.mark.parametrize("name", SUBTOPICS)
def test_a_measure_of_subtopics_is_refused_as_evaluate_refuses_it(name: str) -> None:
    run, qrels = _query(2, n_unjudged=2)
    with pytest.raises((InputError, MetricDefinitionError), match="subtopic"):
        judgment_interval(run, qrels, _metric(name, None, "docid"))
    with pytest.raises(MetricDefinitionError, match="judges documents, not subtopics"):
        judgment_interval(run, qrels.assign(subtopic=1), _metric(name, None, "docid"))


def test_subtopic_qrels_read_as_each_documents_highest_label() -> None:
    run, qrels = _query(6, n_unjudged=2)
    doubled = pd.concat([qrels.assign(subtopic=1), qrels.assign(subtopic=2, label=0)])
    for m in ("AP", "nDCG@3"):
        assert judgment_interval(run, doubled, m).equals(judgment_interval(run, qrels, m))


def test_the_docs_list_each_declared_shortcut() -> None:
    from tests.shared import REPO_ROOT

    text = (REPO_ROOT / "docs" / "measures.md").read_text()
    for kind in ("monotone", "swap", "ideal"):
        line = next(ln for ln in text.splitlines() if f"<!-- unjudged-bounds:{kind} -->" in ln)
        listed = line.split("-->", 1)[1].replace("`", "").replace(" ", "").split(",")
        declared = [m.display for m in measures() if m.builtin and m.unjudged_bounds == kind]
        assert listed == declared, kind


@pytest.mark.parametrize("text", ["AP", "R@2", "nDCG@2", "nDCG(ties=docid)",
                                  "P@2(empty=one)", "RR(empty=one)", "Bpref", "Rprec",
                                  "ERR@2", "infAP(ties=docid)", "Judged@2"])
def test_a_pool_labels_documents_the_run_did_not_retrieve_too(text: str) -> None:
    from harness import parse_metric

    m = parse_metric(text)
    for seed in range(6):
        run, qrels = _query(200 + seed, n_unjudged=seed % 3)
        if seed % 2:  # no judged relevant document: the pool decides whether R is 0
            qrels = qrels.assign(label=0)
        unjudged = [d for d in run["docid"] if d not in set(qrels["docid"])]
        pool = pd.DataFrame({"qid": "q", "docid": ["p1", "p2", "x1", *unjudged[:1]]})
        graded = m.with_options(unjudged="relevant", unjudged_grade=GRADE)  # qrels may be 0
        got = judgment_interval(run, qrels, graded, pool=pool).loc["q"]
        values = _brute(run, qrels, m, pool=("p1", "p2"))  # x1 is judged; the other retrieved
        values = values[~np.isnan(values)]
        assert got["low"] <= values.min() + 1e-12 and got["high"] >= values.max() - 1e-12
        if got["exact"]:
            assert (got["low"], got["high"]) == pytest.approx((values.min(), values.max()),
                                                              abs=1e-12), (text, seed)
        assert got["n_unjudged"] == len(unjudged)


def test_documents_only_another_run_retrieved_lower_ap_when_relevant() -> None:
    run, qrels = _query(204, n_unjudged=1)
    pool = pd.DataFrame({"qid": "q", "docid": ["p1", "p2"]})
    alone = judgment_interval(run, qrels, "AP").loc["q"]
    pooled = judgment_interval(run, qrels, "AP", pool=pool).loc["q"]
    assert pooled["high"] == alone["high"] and pooled["low"] < alone["low"]
    assert pooled["nonrelevant"] == alone["nonrelevant"]
