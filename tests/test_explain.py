"""The convention diff: exact Shapley values, checked against their definition."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import harness
from harness.explain import explain_difference
from harness.paths import PROJECT_ROOT


def _tied_run(seed: int = 0, n_queries: int = 60) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows, judged = [], []
    for qi in range(n_queries):
        n = int(rng.integers(3, 20))
        for d in range(n):
            label = int(rng.choice(4, p=[0.5, 0.25, 0.15, 0.1])) if qi % 7 else 0
            rows.append((f"q{qi:03d}", f"d{d:02d}", float(rng.integers(0, 5))))
            if rng.random() < 0.8:
                judged.append((f"q{qi:03d}", f"d{d:02d}", label))
        judged.append((f"q{qi:03d}", "unretrieved", int(rng.integers(0, 3))))
    judged.append(("only-judged", "z", 2))
    return (pd.DataFrame(rows, columns=["qid", "docid", "score"]),
            pd.DataFrame(judged, columns=["qid", "docid", "label"]))


def _by_orders(run: pd.DataFrame, qrels: pd.DataFrame, e: harness.explain.Explanation
               ) -> dict[str, float]:
    """Shapley values by their definition: the mean marginal effect of switching each
    option from A's value to B's, over every order of the options, each hybrid evaluated
    on its own."""
    options = list(e.table["option"])

    def value(switched: set[str]) -> float:
        opts = {}
        for o in ("k", "gain", "discount", "ideal", "ties", "seed", "empty", "empty_weight",
                  "level", "max_label"):
            side = e.b if o in switched else e.a
            opts[o] = getattr(side, o)
        data = {o: (e.data_b if o in switched else e.data_a)[o]
                for o in ("missing", "negative_labels")}
        m = harness.Metric(e.a.name, **opts)
        out = harness.evaluate(run, qrels, [m], **data)
        return float(harness.aggregate(out).at[m.display_name, "mean"])

    cache: dict[frozenset[str], float] = {}

    def cached(switched: set[str]) -> float:
        key = frozenset(switched)
        if key not in cache:
            cache[key] = value(switched)
        return cache[key]

    total = {o: 0.0 for o in options}
    orders = list(itertools.permutations(options))
    for order in orders:
        done: set[str] = set()
        for o in order:
            before = cached(done)
            done.add(o)
            after = cached(done)
            total[o] += after - before
    return {o: t / len(orders) for o, t in total.items()}


@pytest.mark.parametrize("a, b", [("sklearn", "trec_eval"), ("trec_eval", "lightgbm"),
                                  ("catboost", "keras_rs")])
def test_contributions_are_the_shapley_values_and_add_up(a: str, b: str) -> None:
    run, qrels = _tied_run()
    e = explain_difference(run, qrels, "ndcg@5", a, b,
                           data_b={"missing": "zero"} if b == "lightgbm" else None)
    assert len(e.table) >= 2 and e.hybrids == 2 ** len(e.table)
    # the two ends are the two definitions evaluated on their own
    for m, data, mean in ((e.a, e.data_a, e.mean_a), (e.b, e.data_b, e.mean_b)):
        alone = harness.aggregate(harness.evaluate(run, qrels, [m], **data))
        assert mean == pytest.approx(alone.at[m.display_name, "mean"], abs=1e-15)
    # efficiency: the parts add up to the whole, on the mean and per query
    assert e.table["contribution"].sum() == pytest.approx(e.difference, abs=1e-12)
    parts = e.per_query[list(e.table["option"])].sum(axis=1, min_count=1)  # NaN stays NaN
    np.testing.assert_allclose(parts, e.per_query["difference"], rtol=0, atol=1e-12)
    # the values are Shapley's, computed from every order of switching the options
    by_orders = _by_orders(run, qrels, e)
    for row in e.table.itertuples():
        assert row.contribution == pytest.approx(by_orders[row.option], abs=1e-12)


def test_two_options_by_hand() -> None:
    """sklearn -> lightgbm on one tied query differs in gain and ties (and empty, which
    cannot matter here): phi_gain = ((v(g) - v()) + (v(g,t) - v(t))) / 2, worked with four
    separate evaluations."""
    run = pd.DataFrame({"qid": ["q"] * 3, "docid": ["a", "b", "c"], "score": [1.0, 1.0, 0.0],
                        "label": [0, 2, 1]})
    e = explain_difference(run, metric="ndcg@2", a="sklearn", b="lightgbm")
    assert list(e.table["option"]) == ["gain", "ties", "empty", "empty_weight"]

    def v(gain: str, ties: str) -> float:
        m = harness.Metric("ndcg", k=2, gain=gain, ties=ties, ideal="retrieved")
        return float(harness.evaluate(run, metrics=[m]).iloc[0, -1])

    phi_gain = ((v("exp2", "average") - v("linear", "average"))
                + (v("exp2", "input") - v("linear", "input"))) / 2
    phi_ties = ((v("linear", "input") - v("linear", "average"))
                + (v("exp2", "input") - v("exp2", "average"))) / 2
    got = dict(zip(e.table["option"], e.table["contribution"]))
    # the query has relevant documents and no weights: empty and empty_weight cannot matter
    assert got == pytest.approx({"gain": phi_gain, "ties": phi_ties, "empty": 0.0,
                                 "empty_weight": 0.0}, abs=1e-15)
    assert math.isclose(phi_gain + phi_ties, e.difference, abs_tol=1e-15)


def test_no_difference_means_no_options() -> None:
    run, qrels = _tied_run(1, 10)
    e = explain_difference(run, qrels, "ndcg@10", "trec_eval", "ndcg@10(gain=linear,ties=docid)",
                           data_b={"negative_labels": "unjudged"})
    assert e.table.empty and e.difference == 0 and e.hybrids == 1


def test_the_command_prints_the_table_and_writes_csv(tmp_path: Path, shared_data: Path
                                                     ) -> None:
    cast = shared_data / "trec_cast_2021"
    out = tmp_path / "table.csv"
    proc = subprocess.run([sys.executable, "-m", "harness", "explain", "--run",
                           str(cast / "org_manual_bm25.run"), "--qrels",
                           str(cast / "trec-cast-qrels-docs.2021.qrel"), "--a", "sklearn",
                           "--b", "trec_eval", "--csv", str(out)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out)
    assert "ideal" in set(table["option"])
    head = proc.stdout.splitlines()
    mean_a, mean_b = (float(line.rsplit("= ", 1)[1]) for line in head[:2])
    assert table["contribution"].sum() == pytest.approx(mean_b - mean_a, abs=2e-6)
    bad = subprocess.run([sys.executable, "-m", "harness", "explain", "--run", "/nope", "--qrels",
                          "/nope"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0


def test_a_study_explains_each_ranker_and_logs_the_files(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/m.db"
    args = ["explain.pairs=[[sklearn,lightgbm]]", "explain.metric=ndcg@5", "ranker=oracle",
            "+ranker.coin={kind:random,seed:3}", "dataset.n_queries=40",
            "tracking.figures=off", f"tracking.uri={uri}", f"tracking.artifact_root={tmp_path}/a",
            f"tracking.pending_dir={tmp_path}/p", f"cache_dir={tmp_path}/c",
            f"hydra.run.dir={tmp_path}/out"]
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    for ranker in ("oracle", "coin"):
        table = pd.read_csv(tmp_path / "out" / "explain" / f"{ranker}.csv")
        assert set(table["option"]) >= {"gain", "ties"}
        gap = table["mean_to"].iloc[0] - table["mean_from"].iloc[0]
        assert table["contribution"].sum() == pytest.approx(gap, abs=1e-12)
        # the console says what it found and where (issue 41: it printed nothing)
        said = [line for line in (proc.stdout + proc.stderr).splitlines()
                if f"explain {ranker}: " in line]
        first, where = said
        top = table.loc[table["contribution"].abs().idxmax()]
        assert (f"{table['mean_from'].iloc[0]:.4f} -> " in first
                and f"{table['mean_to'].iloc[0]:.4f} ({gap:+.4f}): " in first
                and (f"{top['option']} {top['contribution']:+.4f}" in first
                     if abs(top["contribution"]) >= 1e-4 else "no option moves it" in first)
                ), first
        assert str(tmp_path / "out" / "explain" / f"{ranker}.csv") in where
        (run,) = client.search_runs(client.get_experiment_by_name("synthetic").experiment_id,
                                    f"tags.`ranker.name` = '{ranker}'")
        logged = {a.path for a in client.list_artifacts(run.info.run_id, "explain")}
        assert logged == {f"explain/{ranker}.csv", f"explain/{ranker}.png"}
    bad = subprocess.run([sys.executable, "-m", "harness", "explain.pairs=[[sklearn,nope]]",
                          "tracking=off", f"hydra.run.dir={tmp_path}/bad"], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "explain.pairs[0]: 'nope' is neither" in bad.stdout + bad.stderr
