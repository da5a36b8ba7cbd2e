"""Compat (ir_measures' compatibility measure) against ir_measures 0.4.3's own provider:
per query on randomized tied data (``tests/test_ir_measures_names.py`` compares the parsed
names), and here the conventions that decide it: the ideal ranking's ties (label, then run
score with 0.0 for an unretrieved document, then the qrels' order), a labelled run,
``ties='average'`` as the mean over every order of the tie groups, and ``harness eval``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from ir_measures.providers.compat_provider import compatibility

import harness
from harness.commands.base import run_command
from harness.commands.eval import main
from tests.measure_peers import assert_same
from tests.test_ir_measures_names import _theirs, make_data


@pytest.mark.parametrize("seed", [31, 32, 33])
@pytest.mark.parametrize("name", ["Compat", "Compat(p=0.7)", "Compat(normalize=False)"])
def test_the_qrels_order_breaks_the_ideal_rankings_ties(seed: int, name: str) -> None:
    """Shuffled qrels rows: equal labels with equal run scores (0.0 also for unretrieved
    documents) keep the qrels' order in the ideal ranking, on both sides."""
    run, qrels = make_data(seed, tied=True)
    qrels = qrels.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    metric = harness.parse_metric(name)
    ours = harness.evaluate(run, qrels, [metric])[metric.display_name]
    assert_same(ours, _theirs(run, qrels, name), name, min_common=50)


def test_the_ideal_ranking_ties_change_the_value() -> None:
    """The same judgments in two row orders give two values when a retrieved document ties
    an unretrieved one of its label (score 0.0) and ranks above the cut of the two
    orders: the convention is not idle."""
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b", "c"], "score": [0.0, -2.0, -1.0]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["zz", "a", "b"], "label": [1, 1, 0]})
    values = []
    for frame in (qrels, qrels.iloc[[1, 0, 2]]):
        ours = harness.evaluate(run, frame, ["Compat"]).iloc[:, -1]
        theirs = _theirs(run, frame, "Compat")
        assert ours["q"] == pytest.approx(theirs["q"], abs=1e-12)
        values.append(ours["q"])
    assert values[0] < values[1]  # 'a' first in the ideal ranking overlaps sooner


def test_a_labelled_run_is_its_own_qrels() -> None:
    run, qrels = make_data(34, tied=False)
    labelled = run.merge(qrels, on=["qid", "docid"], how="inner")  # judged rows only
    metric = harness.parse_metric("Compat(p=0.8)")
    ours = harness.evaluate(labelled, None, [metric])[metric.display_name]
    judged = labelled[["qid", "docid", "label"]]
    assert_same(ours, _theirs(labelled[["qid", "docid", "score"]], judged, "Compat(p=0.8)"),
                "Compat", min_common=40)


def _mean_over_tie_orders(run: pd.DataFrame, qrels: pd.DataFrame, p: float) -> float:
    """ir_measures' compatibility averaged over every order of the run's tie groups, each
    order given as distinct scores inside the group's own score range (the data keep
    equal labels out of one group, so the ideal ranking is the same for every order)."""
    qd = dict(zip(qrels["docid"], qrels["label"].astype(int)))
    groups = [(s, list(g["docid"])) for s, g in run.groupby("score", sort=True)]
    values = []
    for orders in itertools.product(*(itertools.permutations(d) for _, d in groups)):
        scores = {d: s + 0.01 * (len(order) - i)
                  for (s, _), order in zip(groups, orders) for i, d in enumerate(order)}
        values.append(compatibility(qd, scores, p, True))
    return float(np.mean(values))


@pytest.mark.parametrize("p", [0.5, 0.9])
def test_average_ties_are_the_mean_over_every_order(p: float) -> None:
    run = pd.DataFrame({"qid": "q", "docid": [f"d{i}" for i in range(7)],
                        "score": [3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 0.5]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["d1", "d2", "d4", "d5", "d6", "x1", "x2"],
                          "label": [2, 0, 1, 3, 1, 2, 1]})
    got = harness.evaluate(run, qrels, [harness.Metric("compat", p=p)]).iloc[0, -1]
    assert got == pytest.approx(_mean_over_tie_orders(run, qrels, p), abs=1e-12)


def test_harness_eval_reads_compat_names(capsys: pytest.CaptureFixture[str],
                                         tmp_path: pytest.TempPathFactory) -> None:
    run, qrels = make_data(35, tied=True)
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"  # type: ignore[operator]
    qpath.write_text("".join(f"{q} 0 {d} {label}\n" for q, d, label
                             in qrels.itertuples(index=False)))
    rpath.write_text("".join(f"{q} Q0 {d} {i} {s} r\n" for i, (q, d, s)
                             in enumerate(run.itertuples(index=False))))
    code = run_command(main, ["-q", str(qpath), str(rpath), "Compat(p=0.8)"])
    out, err = capsys.readouterr()
    assert code == 0, err
    printed = {ln.split("\t")[1]: float(ln.split("\t")[2]) for ln in out.splitlines()
               if ln.split("\t")[0].strip() == "Compat(p=0.8)"}
    # ir_measures also scores the judged queries the run lacks (0); harness eval leaves
    # them out, as trec_eval without -c
    theirs = _theirs(run, qrels, "Compat(p=0.8)").loc[lambda s: s.index.isin(run["qid"])]
    assert len(printed) == len(theirs) + 1
    assert printed["all"] == pytest.approx(theirs.mean(), abs=5e-5)  # 4 decimals printed
    for qid, value in theirs.items():
        assert printed[qid] == pytest.approx(value, abs=5e-5)
