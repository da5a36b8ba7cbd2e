"""R-precision, bpref, Success@k, Judged@k, RBP (and its residual), F1@k and interpolated
precision, value for value against pytrec_eval 0.5.11, ir_measures 0.4.3 and ranx 0.3.21;
ties='average' against the mean of the library over every order of the tied documents."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

import harness
from harness import Metric
from harness.errors import MetricDefinitionError
from tests.measure_peers import (
    assert_same,
    every_tie_order,
    ir_measures_values,
    make_data,
    mean_over_orders,
    ours,
    pytrec,
    ranx_values,
)

Reference = Callable[[pd.DataFrame, pd.DataFrame], pd.Series]


def _pytrec(measure: str, key: str, level: int = 1) -> Reference:
    return lambda run, qrels: pytrec(run, qrels, measure, key, level)


def _ranx(name: str) -> Reference:
    return lambda run, qrels: ranx_values(run, qrels, [name])[name]


def _ir_measures(name: str) -> Reference:
    def values(run: pd.DataFrame, qrels: pd.DataFrame) -> pd.Series:
        import ir_measures

        return ir_measures_values(run, qrels, ir_measures.parse_measure(name))

    return values


AVERAGE = [  # (our name, binary labels, library values of an untied run)
    ("Rprec", False, _pytrec("Rprec", "Rprec")),
    ("Rprec(level=2)", False, _pytrec("Rprec", "Rprec", 2)),
    ("Bpref", False, _pytrec("bpref", "bpref")),
    ("Bpref(level=2)", False, _pytrec("bpref", "bpref", 2)),
    ("Success@1", False, _pytrec("success.1", "success_1")),
    ("Success@3", False, _pytrec("success.3", "success_3")),
    ("Success", False, _ranx("hit_rate")),
    ("Judged@3", False, _ir_measures("Judged@3")),
    ("Judged", False, _ir_measures("Judged")),
    ("F1@3", False, _ranx("f1@3")),
    ("F1(level=2)", False, _ranx("f1-l2")),
    ("RBP(p=0.7)", True, _ranx("rbp.7")),
    ("RBP@3(p=0.5)", True, lambda run, qrels: _rbp_by_hand(run, qrels, 0.5, 3)),
    ("RBPres(p=0.7)", False, lambda run, qrels: _residual_by_hand(run, qrels, 0.7, None)),
    ("RBPres@3(p=0.5)", False, lambda run, qrels: _residual_by_hand(run, qrels, 0.5, 3)),
]


def _ranked(run: pd.DataFrame, qrels: pd.DataFrame) -> dict[str, list[int | None]]:
    """Per query, the labels in rank order (None where unjudged), scores untied."""
    labels = {(q, d): lab for q, d, lab in qrels.itertuples(index=False)}
    out: dict[str, list[int | None]] = {}
    for q, g in run.sort_values(["qid", "score"], ascending=[True, False]).groupby("qid"):
        out[q] = [labels.get((q, d)) for d in g.docid]
    return out


def _rbp_by_hand(run: pd.DataFrame, qrels: pd.DataFrame, p: float, k: int) -> pd.Series:
    return pd.Series({q: sum((1 - p) * p ** i for i, lab in enumerate(ls[:k]) if lab)
                      for q, ls in _ranked(run, qrels).items()})


def _residual_by_hand(run: pd.DataFrame, qrels: pd.DataFrame, p: float, k: int | None
                      ) -> pd.Series:
    """Moffat & Zobel's residual: what unjudged ranked documents and the documents past the
    evaluated depth d could add, (1 - p) sum over unjudged p^(i-1) + p^d."""
    out = {}
    for q, ls in _ranked(run, qrels).items():
        top = ls[:k] if k else ls
        out[q] = sum((1 - p) * p ** i for i, lab in enumerate(top) if lab is None) \
            + p ** len(top)
    return pd.Series(out)


@pytest.mark.parametrize("name, binary, reference", AVERAGE, ids=[a[0] for a in AVERAGE])
def test_average_ties_are_the_mean_over_every_order(name: str, binary: bool,
                                                    reference: Reference) -> None:
    run, qrels = make_data(21, tied=True, sizes=(2, 7), n_queries=40, binary=binary)
    orders, order_qrels = every_tie_order(run, qrels)
    theirs = mean_over_orders(reference(orders, order_qrels))
    assert_same(ours(run, qrels, name), theirs, name, atol=1e-12, min_common=30)


@pytest.mark.parametrize("name, binary, reference", AVERAGE, ids=[a[0] for a in AVERAGE])
def test_untied_values_equal_the_library(name: str, binary: bool,
                                         reference: Reference) -> None:
    run, qrels = make_data(22, tied=False, sizes=(5, 30), binary=binary)
    assert_same(ours(run, qrels, name), reference(run, qrels), name)


IPREC = [f"iprec_at_recall_{x / 10:.2f}" for x in range(11)]
TREC = [  # trec_eval names: ties by docid, as pytrec_eval breaks them; pytrec_eval is
    # trec_eval 9.x, whose recall levels are reached at floor(x R + 0.9): trec_eval9:
    ("trec_eval:Rprec", "Rprec", "Rprec"), ("trec_eval:bpref", "bpref", "bpref"),
    ("success.10", "success.10", "success_10"), ("success.1 -l 2", "success.1", "success_1"),
    *[(f"trec_eval9:{m}", "iprec_at_recall", m) for m in IPREC],
    ("trec_eval9:iprec_at_recall_0.30 -l 2", "iprec_at_recall", "iprec_at_recall_0.30"),
]


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("name, measure, key", TREC, ids=[t[0] for t in TREC])
def test_trec_eval_names_equal_pytrec_eval(name: str, measure: str, key: str,
                                           tied: bool) -> None:
    run, qrels = make_data(23, tied=tied, sizes=(2, 25))
    level = 2 if "-l 2" in name else 1
    assert_same(ours(run, qrels, name), pytrec(run, qrels, measure, key, level), name)


IR_MEASURES = ["Judged@10", "Success@10", "Rprec", "Bpref", "Success(rel=2)@5",
               "Rprec(rel=2)", "Bpref(rel=2)", "IPrec@0.5", "IPrec(rel=2)@0.2"]


@pytest.mark.parametrize("name", IR_MEASURES)
def test_ir_measures_names_equal_ir_measures(name: str) -> None:
    """Untied for the names that keep the harness's ties (ir_measures' Judged orders ties by
    docid ascending, which no tie rule gives); tied for those that imply trec_eval's."""
    run, qrels = make_data(24, tied="rel=" in name or "IPrec" in name, sizes=(2, 25))
    assert_same(ours(run, qrels, name), _ir_measures(name)(run, qrels), name)


RANX = ["hit_rate@10", "r-precision", "bpref", "f1@10", "f1", "rbp.8", "hit_rate@3-l2",
        "ranx:bpref"]


@pytest.mark.parametrize("tied", [True, False])
def test_ranx_names_equal_ranx(tied: bool) -> None:
    """Binary labels (ranx's RBP weights a hit by its label), queries with a relevant
    document. Tied lists hold at most 15
    documents, which ranx keeps in insertion order: only the ranx: and ranx-only names
    imply that order, so tied data is compared on those."""
    run, qrels = make_data(25, tied=tied, sizes=(2, 16) if tied else (5, 40), binary=True)
    # ranx 0.3.21's bpref is 0/0 for a query without relevant or without judged
    # non-relevant document (trec_eval counts 1 per relevant document there), and one such
    # query turns every query's bpref to 0: compared on queries with both
    both = qrels.groupby("qid").label.transform(lambda x: x.max() > 0 and x.min() == 0)
    qrels = qrels[both]
    names = [n for n in RANX if not tied or harness.parse_metric(n).ties == "input"]
    theirs = ranx_values(run, qrels, [n.removeprefix("ranx:") for n in names])
    for name in names:
        assert_same(ours(run, qrels, name), theirs[name.removeprefix("ranx:")], name)


def test_rbp_residual_by_hand() -> None:
    """Ranks: a (relevant), b (unjudged), c (judged 0). RBP = (1-p); residual =
    (1-p) p + p^3; at k=2: (1-p) p + p^2."""
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["a", "c"], "label": [1, 0]})
    p = 0.6
    out = harness.evaluate(run, qrels, [Metric("rbp", p=p), Metric("rbp_residual", p=p),
                                        Metric("rbp_residual", p=p, k=2)]).iloc[0, -3:]
    np.testing.assert_allclose(out.to_numpy(), [1 - p, (1 - p) * p + p**3,
                                                (1 - p) * p + p**2], rtol=0, atol=1e-15)


def test_iprec_refuses_average_ties() -> None:
    run, qrels = make_data(26, tied=True, n_queries=5)
    with pytest.raises(MetricDefinitionError, match="maximum over ranks.*ties='docid'"):
        harness.evaluate(run, qrels, ["IPrec(at_recall=0.5)"])


def test_whole_list_measures_drop_a_cut_off() -> None:
    assert Metric("rprec", k=5) == Metric("rprec")
    assert Metric("bpref", k=5).k is None


@pytest.mark.parametrize("option, value", [("p", 1.0), ("p", 0), ("at_recall", 1.5),
                                           ("p", "x")])
def test_bad_options_are_refused(option: str, value: object) -> None:
    with pytest.raises(MetricDefinitionError, match=option):
        Metric("rbp" if option == "p" else "iprec", **{option: value})


def _untie(run: pd.DataFrame, qrels: pd.DataFrame, rule: str) -> pd.DataFrame:
    """The run with scores replaced by the rank each tie rule gives (row order; relevant
    documents last or first)."""
    labels = run.merge(qrels, how="left", on=["qid", "docid"]).label.fillna(0).to_numpy()
    second = {"input": np.arange(len(run)), "pessimistic": labels,
              "optimistic": -labels}[rule]
    order = np.lexsort((second, -run.score.to_numpy(), run.qid.to_numpy()))
    untied = run.copy()
    untied.loc[untied.index[order], "score"] = -np.arange(len(run), dtype=float)
    return untied


BY_LABEL = [("Rprec", "Rprec", "Rprec"), ("Success@3", "success.3", "success_3"),
            ("IPrec(at_recall=0.5)", "iprec_at_recall", "iprec_at_recall_0.50"),
            ("F1@3", None, "f1@3"), ("RBP(p=0.7)", None, "rbp.7")]


@pytest.mark.parametrize("rule", ["input", "pessimistic", "optimistic"])
def test_other_tie_rules_follow_the_order_they_name(rule: str) -> None:
    """Each tie rule equals the library on the run untied in the order the rule names
    (measures that look only at relevance: which judged-0 or unjudged document comes first
    does not change them)."""
    run, qrels = make_data(27, tied=True, sizes=(2, 12), binary=True)
    untied = _untie(run, qrels, rule)
    for name, measure, key in BY_LABEL:
        mine = ours(run, qrels, f"{name[:-1]},ties={rule})" if name.endswith(")")
                    else f"{name}(ties={rule})")
        theirs = pytrec(untied, qrels, measure, key) if measure else \
            ranx_values(untied, qrels, [key])[key]
        assert_same(mine, theirs, f"{name} {rule}", min_common=30)


def test_optimistic_and_pessimistic_bound_the_average() -> None:
    run, qrels = make_data(28, tied=True)
    names = ["Rprec", "Bpref", "Success@3", "F1@5", "RBP(p=0.5)"]
    out = {t: harness.evaluate(run, qrels, [harness.parse_metric(n).with_options(ties=t)
                                            for n in names]).iloc[:, 3:].to_numpy()
           for t in ("pessimistic", "average", "optimistic")}
    assert (out["pessimistic"] <= out["average"] + 1e-12).all()
    assert (out["average"] <= out["optimistic"] + 1e-12).all()
    assert (out["pessimistic"] < out["optimistic"]).any()


def test_streamed_parquet_gives_the_same_values(tmp_path: object) -> None:
    """The streaming engine evaluates batches of queries: the new measures (bpref's judged
    non-relevant count, Judged's judged flags) come out the same."""
    from pathlib import Path

    run, qrels = make_data(29, tied=True)
    path = Path(str(tmp_path)) / "run.parquet"
    run.sort_values("qid", kind="stable").to_parquet(path)
    names = ["Rprec", "Bpref", "Success@3", "Judged@5", "RBP(p=0.5)", "RBPres(p=0.5)",
             "F1@5", "IPrec(ties=docid,at_recall=0.3)", "hit_rate@10"]
    want = harness.evaluate(run, qrels, names)
    got = harness.evaluate_parquet(path, qrels, names, batch_rows=37)
    pd.testing.assert_frame_equal(got[want.columns], want, check_exact=False, rtol=0,
                                  atol=1e-15)
