"""Metric definitions: frozen, hashable, canonical names that round-trip, safe keys."""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from harness import CONVENTIONS, METRIC_NAMES, TIE_MODES, Metric, parse_metric

KEY_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


# -- frozen and hashable ---------------------------------------------------------------------

def test_metric_is_frozen() -> None:
    m = Metric("ndcg", k=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.k = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.gain = "linear"  # type: ignore[misc]
    assert m.k == 10


def test_metric_is_hashable_and_usable_as_a_key() -> None:
    a, b = Metric("ndcg", k=10), Metric("ndcg", k=10)
    assert a == b and hash(a) == hash(b)
    assert len({a, b, Metric("ndcg", k=5)}) == 2
    assert {a: 1}[b] == 1


@pytest.mark.parametrize("a,b", [
    # options a metric does not use are reset: gain does not apply to AP
    (Metric("ap", gain="linear"), Metric("ap")),
    (Metric("rr", discount="ln", ideal="retrieved", max_label=3), Metric("rr")),
    (Metric("precision", k=5, ideal="retrieved"), Metric("precision", k=5)),
    (Metric("dcg", ideal="retrieved", empty="one"), Metric("dcg")),
    # the seed only matters for random ties
    (Metric("ndcg", seed=7), Metric("ndcg")),
    # a convention is the options it names
    (Metric("ndcg", convention="sklearn"), Metric("ndcg", gain="linear", ideal="retrieved")),
    (Metric("ndcg", k=10, convention="trec_eval"),
     Metric("ndcg", k=10, gain="linear", ties="docid")),
    (Metric("ndcg", convention="lightgbm"),
     Metric("ndcg", ideal="retrieved", ties="input", empty="one", empty_weight="unweighted")),
    # empty_weight only where it can change a weighted mean
    (Metric("ndcg", empty="exclude", empty_weight="mean"), Metric("ndcg", empty="exclude")),
    (Metric("ndcg", empty="nan", empty_weight="unweighted"), Metric("ndcg", empty="nan")),
    (Metric("ndcg", empty_weight="unweighted"), Metric("ndcg")),  # a 0 adds 0 either way
    (Metric("dcg", empty="one", empty_weight="mean"), Metric("dcg")),
    # aliases and spellings
    (parse_metric("map"), Metric("ap")),
    (parse_metric("MRR"), Metric("rr")),
    (Metric("ndcg", discount="log2.0"), Metric("ndcg")),
    (Metric("ndcg", gain={2: 9, 1: 3}), Metric("ndcg", gain={1.0: 3.0, 2.0: 9.0})),
    (Metric("ndcg", k=10.0), Metric("ndcg", k=10)),
])
def test_equal_definitions_compare_and_hash_equal(a: Metric, b: Metric) -> None:
    assert a == b
    assert hash(a) == hash(b)
    assert a.display_name == b.display_name
    assert a.key == b.key


@pytest.mark.parametrize("a,b", [
    (Metric("ndcg"), Metric("ndcg", gain="linear")),
    (Metric("ndcg", k=10), Metric("ndcg", k=5)),
    (Metric("ndcg"), Metric("dcg")),
    (Metric("ndcg", ties="random", seed=1), Metric("ndcg", ties="random", seed=2)),
    (Metric("ap", ideal="retrieved"), Metric("ap")),
    (Metric("ndcg", convention="lightgbm"), Metric("ndcg", convention="xgboost",
                                                   empty="zero")),
])
def test_different_definitions_differ(a: Metric, b: Metric) -> None:
    assert a != b
    assert a.display_name != b.display_name
    assert a.key != b.key


def test_convention_is_not_part_of_equality() -> None:
    a = Metric("ndcg", k=32, convention="lightgbm")
    b = Metric("ndcg", convention="xgboost")
    assert a.convention == "lightgbm" and b.convention == "xgboost"
    assert a == b and hash(a) == hash(b)


# -- display names ---------------------------------------------------------------------------

@pytest.mark.parametrize("metric,name", [
    (Metric("ndcg", k=10), "nDCG@10"),
    (Metric("ndcg"), "nDCG"),
    (Metric("ndcg", k=10, gain="exp2", discount="log2", ideal="judged", ties="average",
            empty="zero"), "nDCG@10"),
    (Metric("ndcg", k=10, gain="linear"), "nDCG@10(gain=linear)"),
    (Metric("ndcg", k=10, convention="trec_eval"), "nDCG@10(gain=linear,ties=docid)"),
    (Metric("ndcg", convention="sklearn"), "nDCG(gain=linear,ideal=retrieved)"),
    (Metric("ndcg", k=3, ties="random", seed=4), "nDCG@3(ties=random,seed=4)"),
    (Metric("dcg", k=5, discount="log10"), "DCG@5(discount=log10)"),
    (Metric("mndcg", max_label=5), "mnDCG(max_label=5)"),
    (Metric("ap"), "AP"),
    (Metric("ap", level=2), "AP(level=2)"),
    (Metric("rr", k=10), "RR@10"),
    (Metric("precision", k=5), "P@5"),
    (Metric("recall", k=100), "R@100"),
    (Metric("err", k=20, max_label=4), "ERR@20(max_label=4)"),
    (Metric("ndcg", gain={1: 3, 2: 9}), "nDCG(gain={1:3,2:9})"),
    (Metric("ndcg", empty="exclude"), "nDCG(empty=exclude)"),
])
def test_display_name_leaves_out_defaults(metric: Metric, name: str) -> None:
    assert metric.display_name == name
    assert str(metric) == name
    assert repr(metric) == f"Metric({name!r})"
    assert parse_metric(name) == metric


# -- round trip over options -----------------------------------------------------------------

_GAINS = st.one_of(
    st.sampled_from(["exp2", "linear", "2**rel - 1", "rel", "log(rel + 1, 2)",
                     "min(rel, 3) * 2", "sqrt(rel)", "rel ** 2 / 4", "max(rel, 0.5, 1)",
                     "-rel + 5", "2 ** -rel", "rel / 2 / 3", "(rel + 1) ** 0.5", "e ** rel",
                     "pi * rel", "rel  # a comment", "((rel))", "+rel", "1e-3 * rel"]),
    st.dictionaries(st.integers(0, 6).map(float), st.floats(0, 100, allow_nan=False),
                    min_size=1, max_size=4),
    st.dictionaries(st.floats(-10, 10, allow_nan=False, allow_infinity=False),
                    st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
                    min_size=1, max_size=3),
)
_DISCOUNTS = st.sampled_from(["log2", "ln", "reciprocal", "none", "log10", "log3", "log1.5",
                              "1/log2(rank+1)", "1/rank", "pow(rank, -0.5)",
                              "1 / log(rank + 1, 10)", "max(1/rank, 0.1)"])


@st.composite
def metrics(draw: st.DrawFn) -> Metric:
    name = draw(st.sampled_from(METRIC_NAMES))
    opts: dict[str, Any] = {
        "k": draw(st.one_of(st.none(), st.integers(1, 1000))),
        "gain": draw(_GAINS),
        "discount": draw(_DISCOUNTS),
        "ideal": draw(st.sampled_from(["judged", "retrieved"])),
        "ties": draw(st.sampled_from(TIE_MODES)),
        "seed": draw(st.integers(0, 2**31)),
        "empty": draw(st.sampled_from(["zero", "one", "exclude", "nan"])),
        "level": draw(st.integers(1, 5)),
        # up to 1e15: larger values print as '1e+16', see test_large_max_label_key_is_mlflow_safe
        "max_label": draw(st.one_of(st.none(), st.integers(1, 10),
                                    st.floats(1e-6, 1e15, allow_nan=False,
                                              allow_infinity=False))),
    }
    return Metric(name, **opts)


@settings(max_examples=300, deadline=None)
@given(metrics())
def test_display_name_round_trips(m: Metric) -> None:
    back = parse_metric(m.display_name)
    assert back == m
    assert hash(back) == hash(m)
    assert back.display_name == m.display_name
    assert back.key == m.key


@settings(max_examples=300, deadline=None)
@given(metrics())
def test_key_is_mlflow_safe(m: Metric) -> None:
    assert KEY_RE.fullmatch(m.key), m.key


def test_with_options_round_trips() -> None:
    m = Metric("ndcg", k=10, gain={1: 3, 2: 9}, discount="ln", ties="random", seed=3)
    assert m.with_options() == m
    assert m.with_options(k=5) == Metric("ndcg", k=5, gain={1: 3, 2: 9}, discount="ln",
                                         ties="random", seed=3)
    assert m.with_options(ties="average").seed == 0


# -- keys --------------------------------------------------------------------------------------

def _grid() -> list[Metric]:
    out = []
    for name, k, gain, discount, ideal, ties, empty in itertools.product(
            ("ndcg", "dcg", "mndcg", "ap", "rr", "precision", "recall", "err"),
            (None, 1, 10),
            ("exp2", "linear", {1: 3, 2: 9}, {1: 3.5}, "rel ** 2", "sqrt(rel)"),
            ("log2", "log10", "reciprocal", "1/rank"),
            ("judged", "retrieved"),
            ("average", "docid", "random"),
            ("zero", "exclude")):
        out.append(Metric(name, k=k, gain=gain, discount=discount, ideal=ideal, ties=ties,
                          empty=empty))
    for name, level, ml, seed in itertools.product(
            ("ap", "rr", "err", "mndcg"), (1, 2, 3), (None, 1, 4, 2.5, 1e-3, 1e-5), (0, 1, 9)):
        out.append(Metric(name, level=level, max_label=ml, ties="random", seed=seed))
    return out


def test_keys_are_distinct_for_distinct_metrics() -> None:
    grid = _grid()
    distinct = set(grid)
    assert len(distinct) >= 500
    keys = {m.key for m in distinct}
    names = {m.display_name for m in distinct}
    assert len(keys) == len(distinct)
    assert len(names) == len(distinct)
    # equal metrics share the key
    by_metric: dict[Metric, set[str]] = {}
    for m in grid:
        by_metric.setdefault(m, set()).add(m.key)
    assert all(len(v) == 1 for v in by_metric.values())


def test_keys_of_grid_are_mlflow_safe() -> None:
    bad = [m.key for m in set(_grid()) if not KEY_RE.fullmatch(m.key)]
    assert not bad, bad[:5]


@pytest.mark.parametrize("metric,key", [
    (Metric("ndcg", k=10), "ndcg_at_10"),
    (Metric("ndcg", k=10, gain="linear"), "ndcg_at_10__gain_linear"),
    (Metric("ap"), "ap"),
    (Metric("precision", k=5), "precision_at_5"),
    (Metric("ndcg", gain={1: 3, 2: 9}), "ndcg__gain_t1-3_2-9"),
])
def test_key_examples(metric: Metric, key: str) -> None:
    assert metric.key == key


@pytest.mark.parametrize("max_label", [1e16, 1e20, 1.5e300, 1e-7])
def test_extreme_max_label_round_trips(max_label: float) -> None:
    for name in ("mndcg", "err"):
        m = Metric(name, max_label=max_label)
        assert parse_metric(m.display_name) == m


@pytest.mark.parametrize("name", ["mndcg", "err"])
@pytest.mark.parametrize("max_label", [1e16, 1e20, 1.5e300])
def test_large_max_label_key_is_mlflow_safe(name: str, max_label: float) -> None:
    # repr(1e20) is '1e+20': '+' is neither in [A-Za-z0-9_.-] nor allowed in an MLflow key
    m = Metric(name, max_label=max_label)
    assert KEY_RE.fullmatch(m.key), m.key
    assert m.key != Metric(name, max_label=max_label * 2).key


# -- aliases -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,metric", [
    ("map", Metric("ap")),
    ("mrr", Metric("rr")),
    ("recip_rank", Metric("rr", convention="trec_eval")),  # trec_eval names
    ("P@5", Metric("precision", k=5)),
    ("P_5", Metric("precision", k=5, convention="trec_eval")),
    ("p@5", Metric("precision", k=5)),
    ("ndcg_cut_10", Metric("ndcg", k=10, convention="trec_eval")),
    ("map_cut_100", Metric("ap", k=100, convention="trec_eval")),
    ("ndcg@10", Metric("ndcg", k=10)),
    ("nDCG@10", Metric("ndcg", k=10)),
    ("NDCG@10", Metric("ndcg", k=10)),
    ("R@100", Metric("recall", k=100)),
    ("recall_20", Metric("recall", k=20, convention="trec_eval")),
    ("err@20", Metric("err", k=20)),
    ("sdcg", Metric("mndcg")),
    ("  dcg@3  ", Metric("dcg", k=3)),
])
def test_aliases_parse(text: str, metric: Metric) -> None:
    assert parse_metric(text) == metric


def test_parse_options_and_keyword_overrides() -> None:
    assert parse_metric("ndcg@10", gain="linear") == Metric("ndcg", k=10, gain="linear")
    assert parse_metric("nDCG@5(ties=input)").ties == "input"
    # keyword options win over options in the text
    assert parse_metric("nDCG@5(gain=linear)", gain="exp2") == Metric("ndcg", k=5)
    assert parse_metric("ndcg", convention="sklearn") == Metric("ndcg", convention="sklearn")
    assert parse_metric("nDCG(gain='2 ** rel - 1')") == Metric("ndcg", gain="2**rel-1")


# -- conventions -------------------------------------------------------------------------------

# Written out from the Metric docstring and each reference's documentation, not read from
# CONVENTIONS: sklearn (linear y_true gain, ideal = sorted y_true of the list, ignore_ties=False
# averages ties, 0 when all-zero); trec_eval (ndcg with linear gain over the qrels, ties by
# docno descending, 0 when no relevant); LightGBM/XGBoost (2^i - 1 gain, ideal of the list,
# stable sort = input order, 1 when no relevant, added unweighted to a weighted mean);
# keras_rs (exp2, the list, seeded shuffle, 0, weighted by the mean weight of the lists with
# a relevant item); ranx (linear Jarvelin gain over the qrels, ties as its numba quicksort
# leaves them, 0:
# checked against ranx itself in tests/test_tie_conventions.py); CatBoost NDCG (type=Base
# linear gain, LogPosition, the group, relevant tied last, 1 when no relevant).
_EXPECTED_CONVENTIONS = {
    "sklearn": dict(gain="linear", discount="log2", ideal="retrieved", ties="average",
                    empty="zero"),
    "trec_eval": dict(gain="linear", discount="log2", ideal="judged", ties="docid",
                      empty="zero"),
    "trec_eval9": dict(gain="linear", discount="log2", ideal="judged", ties="docid_float32",
                       empty="zero"),
    "lightgbm": dict(gain="exp2", discount="log2", ideal="retrieved", ties="input",
                     empty="one", empty_weight="unweighted"),
    "xgboost": dict(gain="exp2", discount="log2", ideal="retrieved", ties="input",
                    empty="one", empty_weight="unweighted"),
    "keras_rs": dict(gain="exp2", discount="log2", ideal="retrieved", ties="random",
                     empty="zero", empty_weight="mean"),
    "ranx": dict(gain="linear", discount="log2", ideal="judged", ties="quicksort",
                 empty="zero"),
    "catboost": dict(gain="linear", discount="log2", ideal="retrieved", ties="pessimistic",
                     empty="one", empty_weight="own"),
}


def test_every_convention_is_covered() -> None:
    assert set(CONVENTIONS) == set(_EXPECTED_CONVENTIONS)


@pytest.mark.parametrize("name", sorted(_EXPECTED_CONVENTIONS))
def test_convention_fields(name: str) -> None:
    m = Metric("ndcg", k=10, convention=name)
    for field, value in _EXPECTED_CONVENTIONS[name].items():
        assert getattr(m, field) == value, (name, field)
    assert m.convention == name
    assert m.k == 10
    assert m == Metric("ndcg", k=10, **_EXPECTED_CONVENTIONS[name])


@pytest.mark.parametrize("name", sorted(_EXPECTED_CONVENTIONS))
def test_explicit_options_win_over_convention(name: str) -> None:
    m = Metric("ndcg", convention=name, gain="linear", ties="pessimistic", empty="nan")
    assert (m.gain, m.ties, m.empty) == ("linear", "pessimistic", "nan")
    assert m.ideal == _EXPECTED_CONVENTIONS[name]["ideal"]


def test_convention_on_binary_metric_keeps_applicable_fields_only() -> None:
    m = Metric("ap", convention="trec_eval")
    assert (m.ties, m.ideal, m.gain) == ("docid", "judged", "exp2")  # gain reset: unused
    assert m.display_name == "AP(ties=docid)"
