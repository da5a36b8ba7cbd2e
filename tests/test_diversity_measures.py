"""The intent-aware measures against pyndeval 0.0.8 (ir_measures' provider of them) per
query, on randomized subtopic judgments: tied and untied scores, unjudged and unretrieved
documents, documents relevant to several subtopics, queries with one document and with no
relevant subtopic, ids of 10+ characters; every measure at cut-offs 1 to 20, rel 1 and 2,
several alpha and beta; judged_only; and the one-line refusals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyndeval
import pytest

import harness
from harness.errors import InputError


def make_data(seed: int, *, tied: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    run, qrels = [], []
    for qi in range(40):
        qid = f"topic-{qi:05d}-x"
        n = 1 if qi % 9 == 0 else int(rng.integers(2, 30))
        n_sub = int(rng.integers(1, 5))
        for d in rng.permutation(60)[:n]:
            doc = f"document-{d:04d}"
            score = float(rng.integers(0, 4)) / 2 if tied else float(rng.normal())
            if qi % 11 != 5:  # a judged query that is never retrieved
                run.append((qid, doc, score))
            if rng.random() < 0.7:  # the rest stay unjudged
                for s in range(n_sub):
                    if rng.random() < 0.6:
                        qrels.append((qid, f"{s}", doc,
                                      int(rng.choice(4, p=[.45, .25, .2, .1]))))
        for j in range(int(rng.integers(0, 3))):  # relevant, never retrieved
            qrels.append((qid, f"{int(rng.integers(0, n_sub))}", f"missed-document-{j}",
                          int(rng.integers(1, 4))))
        if qi % 7 == 0:  # judged, nothing relevant
            qrels = [r for r in qrels if r[0] != qid] + [(qid, "0", "document-0000", 0)]
    frame = pd.DataFrame(qrels, columns=["qid", "subtopic", "docid", "label"])
    # subtopics in the same order within each query as across the file (pyndeval numbers
    # them in order of first appearance in the whole file; the harness within the query)
    frame = frame.sort_values(["qid", "subtopic"], kind="stable").reset_index(drop=True)
    return pd.DataFrame(run, columns=["qid", "docid", "score"]), frame


def _theirs(run: pd.DataFrame, qrels: pd.DataFrame, measure: str, *, rel: int = 1,
            alpha: float = 0.5, beta: float = 0.5, judged_only: bool = False) -> pd.Series:
    if judged_only:  # ir_measures' judged_only: the run's documents found in the qrels
        judged = set(zip(qrels["qid"], qrels["docid"]))
        run = run[[(q, d) in judged for q, d in zip(run["qid"], run["docid"])]]
    ev = pyndeval.RelevanceEvaluator(
        list(qrels[["qid", "subtopic", "docid", "label"]].itertuples(index=False, name=None)),
        [measure], relevance_level=rel, alpha=alpha, beta=beta)
    values = ev.evaluate(sorted(run.itertuples(index=False, name=None)))
    return pd.Series({q: v[measure] for q, v in values.items()}, dtype=float)


#: (ir_measures' name, pyndeval's measure, its arguments)
CASES = [
    ("ERR_IA@1", "ERR-IA@1", {}), ("ERR_IA@5", "ERR-IA@5", {}),
    ("ERR_IA(rel=2)@20", "ERR-IA@20", {"rel": 2}),
    ("nERR_IA@1", "nERR-IA@1", {}), ("nERR_IA@10", "nERR-IA@10", {}),
    ("alpha_DCG@5", "alpha-DCG@5", {}),
    ("alpha_DCG(alpha=0.3)@10", "alpha-DCG@10", {"alpha": 0.3}),
    ("alpha_nDCG@3", "alpha-nDCG@3", {}),
    ("alpha_nDCG(alpha=0.7,rel=2)@20", "alpha-nDCG@20", {"alpha": 0.7, "rel": 2}),
    ("NRBP", "NRBP", {}), ("NRBP(alpha=0.3,beta=0.8)", "NRBP", {"alpha": 0.3, "beta": 0.8}),
    ("nNRBP", "nNRBP", {}), ("nNRBP(rel=2,beta=0.9)", "nNRBP", {"rel": 2, "beta": 0.9}),
    ("AP_IA", "MAP-IA", {}), ("MAP_IA(rel=2)", "MAP-IA", {"rel": 2}),
    ("P_IA@5", "P-IA@5", {}), ("P_IA(rel=2)@20", "P-IA@20", {"rel": 2}),
    ("StRecall@1", "strec@1", {}), ("StRecall@5", "strec@5", {}),
    ("ERR_IA(judged_only=True)@10", "ERR-IA@10", {"judged_only": True}),
    ("alpha_nDCG(judged_only=True)@5", "alpha-nDCG@5", {"judged_only": True}),
    ("P_IA(judged_only=True)@5", "P-IA@5", {"judged_only": True}),
]


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("name, measure, kwargs", CASES, ids=[c[0] for c in CASES])
def test_equal_to_pyndeval_per_query(name: str, measure: str, kwargs: dict[str, float],
                                     tied: bool) -> None:
    run, qrels = make_data(41 if tied else 42, tied=tied)
    metric = harness.parse_metric(name)
    ours = harness.evaluate(run, qrels, [metric])[metric.display_name]
    theirs = _theirs(run, qrels, measure, **kwargs)  # type: ignore[arg-type]
    common = ours.index.intersection(theirs.index)
    assert len(common) >= 25
    a, b = ours[common].to_numpy(), theirs[common].to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b))  # nNRBP: 0/0 without a subtopic
    np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=0, atol=1e-12)
    assert (np.abs(b[~np.isnan(b)]) > 0).sum() >= 10  # the comparison is not all zeros


def test_err_ia_at_1_is_undivided_as_ndeval_leaves_it() -> None:
    """ndeval divides by its ideal list from rank 2 on: at k = 1 a document relevant to two
    subtopics scores 2 (pyndeval agrees)."""
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q", "subtopic": ["1", "2", "2"], "docid": ["a", "a", "b"],
                          "label": [1, 1, 1]})
    got = harness.evaluate(run, qrels, ["ERR_IA@1", "ERR_IA@2"]).iloc[0, -2:].tolist()
    want = [_theirs(run, qrels, "ERR-IA@1")["q"], _theirs(run, qrels, "ERR-IA@2")["q"]]
    assert got == pytest.approx(want, abs=1e-15)
    assert got[0] == 2.0


def test_p_ia_average_ties_lie_between_the_orders() -> None:
    run, qrels = make_data(43, tied=True)
    values = [harness.evaluate(run, qrels, [harness.Metric("p_ia", k=5, ties=t)]).iloc[:, -1]
              for t in ("average", "optimistic", "pessimistic")]
    assert ((values[0] <= values[1] + 1e-12) & (values[0] >= values[2] - 1e-12)).all()
    assert (values[1] > values[2]).any()


def test_qrels_without_subtopics_are_refused_naming_the_measure() -> None:
    run, qrels = make_data(44, tied=False)
    plain = qrels.drop(columns="subtopic").drop_duplicates(["qid", "docid"])
    with pytest.raises(InputError, match=r"ERRIA@20\(ties=docid_ascending\) needs subtopic "
                                         r"judgments") as info:
        harness.evaluate(run, plain, ["ERR_IA@20"])
    assert "\n" not in str(info.value)


def test_a_document_judged_twice_for_one_subtopic_is_refused() -> None:
    run, qrels = make_data(45, tied=False)
    twice = pd.concat([qrels, qrels.iloc[[3]]], ignore_index=True)
    with pytest.raises(InputError, match="judged twice for subtopic"):
        harness.evaluate(run, twice, ["ERR_IA@20"])


def test_the_other_measures_read_the_highest_label_over_the_subtopics() -> None:
    run, qrels = make_data(46, tied=False)
    best = qrels.groupby(["qid", "docid"], as_index=False)["label"].max()
    a = harness.evaluate(run, qrels, ["nDCG@10", "AP"])
    b = harness.evaluate(run, best, ["nDCG@10", "AP"])
    pd.testing.assert_frame_equal(a, b)



def test_harness_eval_reads_the_qrels_second_column_as_the_subtopic(tmp_path, capsys) -> None:
    """``harness eval QRELS RUN "alpha_nDCG@10"``: ndeval's qrels (``topic subtopic docno
    judgment``) read from the TREC file, the values pyndeval gives per query."""
    from harness.commands import eval as eval_cli

    run, qrels = make_data(43, tied=True)
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    ranked = run.sort_values(["qid", "score"], ascending=[True, False])
    ranked.assign(Q0="Q0", rank=1, tag="sys")[["qid", "Q0", "docid", "rank", "score", "tag"]] \
        .to_csv(run_path, sep=" ", header=False, index=False)
    qrels.to_csv(qrels_path, sep=" ", header=False, index=False)
    assert eval_cli.main(["-q", str(qrels_path), str(run_path), "alpha_nDCG@10",
                          "ERR_IA@5"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    for name, measure in (("alpha_nDCG@10", "alpha-nDCG@10"), ("ERR_IA@5", "ERR-IA@5")):
        theirs = _theirs(run, qrels, measure)
        printed = {q: float(v) for n, q, v in lines if n == name and q != "all"}
        assert len(printed) >= 25
        for qid, value in printed.items():
            assert value == pytest.approx(theirs[qid], abs=5e-5), (name, qid)
