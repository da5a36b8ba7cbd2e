"""Issue 40's bounds on work and memory: ``harness judgments`` on one query of thousands
of unjudged documents (2.4 GB and 42 s, or 21 GB and killed, before), the expected RR and
ERR of a tie group of 64,000 documents (12-30 s), and ``tracking.bootstrap_resamples``
of 10^8 (past 120 s). Each is either computed within a bound or refused in one line naming
the size, the limit and what raises it; no test times anything."""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import harness
from harness.commands.judgments import main as judgments_main
from harness.errors import InputError
from harness.metrics.unjudged import judgment_interval as ji
from harness.metrics.unjudged.judgment_interval import judgment_interval


def _unjudged(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One query: n documents, two judged (the first relevant), the others unjudged."""
    run = pd.DataFrame({"qid": "q9", "docid": [f"d{i}" for i in range(n)],
                        "score": np.arange(n, 0, -1, dtype=float)})
    qrels = pd.DataFrame({"qid": "q9", "docid": ["d0", "d1"], "label": [1, 0]})
    return run, qrels


def test_judgment_interval_refuses_a_query_past_the_row_limit() -> None:
    # DCG (monotone): all-lowest, all-highest, and each of 58 documents alone at each of 4
    # higher grades: 234 labelings, each a pseudo-query of 60 run rows + 58 labelled
    # documents + 2 judgments = 120 rows: 28,080 rows
    run, qrels = _unjudged(60)
    with pytest.raises(InputError, match=r"234 labelings of 120 rows \(28,080 rows\); the "
                                         r"limit is 10,000 .*max_rows.*--max-rows") as e:
        judgment_interval(run, qrels, "dcg(unjudged=relevant, unjudged_grade=4)", max_rows=10_000)
    assert "qid 'q9'" in str(e.value) and "58 unjudged documents" in str(e.value)
    out = judgment_interval(run, qrels, "dcg(unjudged=relevant, unjudged_grade=4)", max_rows=28_080)
    assert out.loc["q9", "method"] == "monotone" and bool(out.loc["q9", "exact"])


def test_the_default_limit_refuses_the_sweeps_case_before_building_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the sweep's --grade 60 case (2,998 unjudged documents, DCG: 21 GB before); refused
    # before a labeling is built
    built: list[int] = []
    original = ji.candidates

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        plan = original(*args, **kwargs)
        built.append(0 if plan is None else len(plan.grades))
        return plan

    monkeypatch.setattr(ji, "candidates", counting)
    run, qrels = _unjudged(3000)
    with pytest.raises(InputError, match=r"179,882 labelings .* limit is 4,000,000"):
        judgment_interval(run, qrels, "dcg(unjudged=relevant, unjudged_grade=60)")
    assert built == []


def test_judgments_command_names_the_option(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    run, qrels = _unjudged(60)
    (tmp_path / "a.run").write_text("".join(f"q9 Q0 {d} {i + 1} {s} a\n" for i, (d, s) in
                                            enumerate(zip(run["docid"], run["score"]))))
    (tmp_path / "qrels").write_text("q9 0 d0 1\nq9 0 d1 0\n")
    with pytest.raises(InputError, match="--max-rows"):
        judgments_main(["--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "a.run"),
                        "-m", "dcg", "--grade", "4", "--max-rows", "10000"])
    assert judgments_main(["--qrels", str(tmp_path / "qrels"), "--run",
                           str(tmp_path / "a.run"), "-m", "dcg", "--grade", "4"]) == 0
    assert "| a | dcg" in capsys.readouterr().out.lower()


def _tied(n: int, relevant: int, grade: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = pd.DataFrame({"qid": "t", "docid": [f"d{i}" for i in range(n)], "score": 1.0})
    labels = np.zeros(n, dtype=np.int64)
    labels[np.linspace(0, n - 1, relevant).astype(int)] = grade
    return run, pd.DataFrame({"qid": "t", "docid": run["docid"], "label": labels})


def _expected_rr(n: int, m: int) -> float:
    """E[1/rank of the first relevant] over the n! orders of n tied documents, m relevant:
    the first relevant is at rank t with probability C(n - t, m - 1) / C(n, m) (integer
    terms, summed exactly, divided once)."""
    if n < 100:
        terms = (Fraction(comb(n - t, m - 1), t) for t in range(1, n - m + 2))
        return float(sum(terms, Fraction(0)) / comb(n, m))
    return math.fsum(comb(n - t, m - 1) / t for t in range(1, n - m + 2)) / comb(n, m)


@pytest.mark.parametrize("n, m", [(7, 2), (40, 5), (70_000, 3)])
def test_rr_of_a_large_tie_group_is_its_exact_expectation(n: int, m: int) -> None:
    run, qrels = _tied(n, m)
    value = harness.evaluate(run, qrels, ["rr(ties=average)"])["RR"].iloc[0]
    assert value == pytest.approx(float(_expected_rr(n, m)), rel=1e-12)


def test_err_refuses_a_tie_group_past_its_limit() -> None:
    from harness.metrics.layout.ranked import MAX_TIED_CASCADE

    run, qrels = _tied(MAX_TIED_CASCADE + 1, 5, grade=3)
    with pytest.raises(InputError, match=rf"tie group of {MAX_TIED_CASCADE + 1:,} documents"
                                         rf".*limit is {MAX_TIED_CASCADE:,}.*ties="):
        harness.evaluate(run, qrels, ["err(ties=average)"])
    run, qrels = _tied(MAX_TIED_CASCADE, 5, grade=3)  # at the limit: computed
    assert 0 < harness.evaluate(run, qrels, ["err(ties=average)"])["ERR"].iloc[0] < 1


def test_bootstrap_resamples_beyond_the_limit_are_refused_naming_the_key() -> None:
    from hydra import compose, initialize_config_dir

    from harness.app.config import register_configs
    from harness.app.plan import build_plan

    root = Path(__file__).resolve().parents[1]
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(root / "conf")):
        cfg = compose("config", overrides=["tracking.bootstrap_resamples=100000000"])
    with pytest.raises(InputError, match=r"key 'tracking.bootstrap_resamples'") as e:
        build_plan(cfg)
    assert "100,000,000" in str(e.value) and "1,000,000" in str(e.value)


def test_bootstrap_cells_beyond_the_limit_are_refused() -> None:
    from harness.reporting.summary import MAX_BOOTSTRAP_CELLS, summarize_study

    queries = 1000
    table = pd.DataFrame({"P@10": np.linspace(0, 1, queries)},
                         index=pd.Index([f"q{i}" for i in range(queries)], name="qid"))
    resamples = MAX_BOOTSTRAP_CELLS // queries + 1
    with pytest.raises(InputError, match=rf"{resamples:,} resamples of {queries:,} queries"):
        summarize_study({"a": table}, resamples=resamples)
