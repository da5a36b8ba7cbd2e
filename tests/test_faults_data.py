"""Issue 40's data, measure and reader cases: each was silently wrong (an infinite DCG, a
NaN or 0 nDCG, a truncated label, a renumbered or zeroed feature) and is now exact or a
one-line error naming what and where."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import harness
from harness.datasets.files import load_letor, load_trec
from harness.errors import InputError, MetricDefinitionError
from harness.metrics.vocabulary.definition import Metric


def _three(label: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = pd.DataFrame({"qid": "q7", "docid": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q7", "docid": ["a", "b", "c"], "label": label})
    return run, qrels


@pytest.mark.parametrize("metric", ["ndcg", "dcg", "ndcg@3", "mndcg"])
def test_exp2_gains_whose_sum_overflows_are_refused_naming_query_and_label(metric: str
                                                                           ) -> None:
    # 2**1023 - 1 is finite, but three of them discounted by 1, 1/log2(3), 1/2 sum to
    # 1.9e308 > float64's 1.8e308: DCG was inf and nDCG NaN
    assert math.isfinite(2.0 ** 1023) and math.isinf(2.0 ** 1023 * (1 + 1 / math.log2(3) + 0.5))
    run, qrels = _three(1023)
    with pytest.raises(InputError, match=r"overflows.*1023.*qid 'q7'"):
        harness.evaluate(run, qrels, [metric])


def test_one_label_of_1023_is_still_exact() -> None:
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "label": [1023, 0]})
    out = harness.evaluate(run, qrels, ["ndcg", "dcg"])
    assert out["nDCG"].iloc[0] == 1.0 and out["DCG"].iloc[0] == 2.0 ** 1023 - 1


@pytest.mark.parametrize("option, value, words", [
    ("gain", "0*rel", "0 at every"),
    ("gain", "rel - rel", "0 at every"),
    ("discount", "0*rank", "not > 0 at rank 1"),
    ("discount", "rank", "grows"),
    ("discount", "log2(rank + 1)", "grows"),
])
def test_degenerate_formulas_are_refused(option: str, value: str, words: str) -> None:
    with pytest.raises(MetricDefinitionError, match=words):
        Metric("ndcg", **{option: value})


def test_formulas_that_are_gains_and_discounts_still_pass() -> None:
    for gain in ("rel", "2**rel - 1", "max(rel - 2, 0)", "min(rel, 3)"):
        Metric("ndcg", gain=gain)
    for discount in ("1/log2(rank + 1)", "1", "1/rank", "max(10 - rank, 0)"):
        Metric("ndcg", discount=discount)


def test_load_trec_keeps_a_fractional_label_exact(tmp_path: Path) -> None:
    # trec_eval reads labels with atol (1.5 -> 1); the project keeps them exact, as its own
    # read_qrels does, and refuses them for the conventions that truncate
    (tmp_path / "q.txt").write_text("1 0 a 1.5\n1 0 b 0\n")
    (tmp_path / "r.txt").write_text("1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n1 Q0 c 3 0.5 r\n")
    ds = load_trec(name="t", qrels_path=str(tmp_path / "q.txt"),
                   run_path=str(tmp_path / "r.txt"))
    labels = dict(zip(ds.docs["docid"], ds.docs["label"]))
    assert labels == {"a": 1.5, "b": 0.0, "c": 0.0}
    whole = tmp_path / "w.txt"
    whole.write_text("1 0 a 2\n1 0 b 0\n")
    ds = load_trec(name="t", qrels_path=str(whole), run_path=str(tmp_path / "r.txt"))
    assert ds.docs["label"].dtype == np.int64 and list(ds.docs["label"]) == [2, 0, 0]


def test_svmlight_features_keep_their_file_index(tmp_path: Path) -> None:
    zero = tmp_path / "zero.txt"
    zero.write_text("2 qid:1 0:0.5 1:0.25 3:1.0\n0 qid:1 0:0.125 2:0.75\n")
    ds = load_letor(name="z", test_path=str(zero), query_files=False)
    assert ds.features == ("f0", "f1", "f2", "f3")
    assert list(ds.docs["f0"]) == [0.5, 0.125] and list(ds.docs["f1"]) == [0.25, 0.0]
    assert list(ds.docs["f2"]) == [0.0, 0.75] and list(ds.docs["f3"]) == [1.0, 0.0]
    one = tmp_path / "one.txt"
    one.write_text("1 qid:1 1:0.5 2:0.25\n0 qid:1 2:0.75\n")
    ds = load_letor(name="o", test_path=str(one), query_files=False)
    assert ds.features == ("f1", "f2") and list(ds.docs["f2"]) == [0.25, 0.75]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_svmlight_non_finite_feature_is_refused_naming_file_and_line(tmp_path: Path,
                                                                      value: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(f"# a comment line\n1 qid:1 1:0.5 2:0.25\n\n0 qid:1 1:0.1 2:{value}\n")
    with pytest.raises(InputError, match=rf"bad.txt line 4: feature 2 is {value}") as e:
        load_letor(name="b", test_path=str(path), query_files=False)
    assert "table 'bad.txt'" in str(e.value)
