"""The fast paths of input preparation agree with the plain definitions they replace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import harness
from harness.metrics.layout.ids import _arrow_string_hash, docid_codes as _docid_codes
from harness.metrics.layout.segments import Layout, duplicate_within, segment_argsort

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=40), st.integers(0, 5))
def test_string_codes_equal_exactly_for_equal_strings(values: list[str], cut: int) -> None:
    """Within a column, equal strings get equal codes and distinct strings distinct codes
    (64-bit hashes: no collision expected here), whatever their bytes or Arrow offset."""
    both = values + values
    for series, strings in ((pd.Series(both, dtype="str"), both),
                            (pd.Series(pd.array(both, dtype="str")[cut:]), both[cut:])):
        result = _arrow_string_hash(series)
        assert result is not None
        codes = result[0]
        by_string: dict[str, set[int]] = {}
        for text, code in zip(strings, codes.tolist()):
            by_string.setdefault(text, set()).add(code)
        assert all(len(c) == 1 for c in by_string.values())  # equal strings, one code
        assert len({next(iter(c)) for c in by_string.values()}) == len(by_string)


def test_string_hash_distinguishes_prefixes_and_lengths() -> None:
    values = ["", "a", "a\x00", "ab", "abcdefgh", "abcdefghi", "abcdefgh\x00", "é", "e\u0301"]
    codes, exact = _arrow_string_hash(pd.Series(values, dtype="str"))
    assert len(set(codes.tolist())) == len(values)
    assert not exact  # "abcdefghi" is longer than 7 bytes: hashed
    short = ["", "a", "a\x00", "ab", "abcdefg", "é", "e\u0301"]  # NUL: length-tagged
    codes, exact = _arrow_string_hash(pd.Series(short, dtype="str"))
    assert exact and len(set(codes.tolist())) == len(short) and (codes >= 0).all()
    eight = ["", "a", "ab", "abcdefgh", "abcdefgg", "ÿÿÿÿ", "d1000000", "d100000"]
    codes, exact = _arrow_string_hash(pd.Series(eight, dtype="str"))
    assert exact and len(set(codes.tolist())) == len(eight)
    assert not (codes == np.iinfo(np.int64).max).any()


def test_docid_codes_kinds() -> None:
    ints = pd.Series([5, 3, 9])
    codes, span, exact = _docid_codes(ints)
    assert codes.tolist() == [5, 3, 9] and span == 10 and exact
    objs = pd.Series(["x", "y", "x"], dtype=object)
    codes, span, exact = _docid_codes(objs)
    assert exact and codes[0] == codes[2] != codes[1] and span == 2


@pytest.mark.parametrize("dtype", ["str", object, "int64"])
def test_duplicates_found_for_every_docid_kind(dtype: object) -> None:
    docids = ["10", "11", "12", "11"] if dtype != "int64" else [10, 11, 12, 11]
    run = pd.DataFrame({"qid": [1, 1, 1, 1], "docid": pd.Series(docids, dtype=dtype),
                        "score": [1.0, 2.0, 3.0, 4.0], "label": [0, 1, 0, 1]})
    with pytest.raises(harness.InputError, match=r"duplicate .*'?11'?.*qid 1.*row 3"):
        harness.evaluate(run, metrics="ndcg")


def test_same_docid_in_two_queries_is_fine() -> None:
    run = pd.DataFrame({"qid": [1, 2], "docid": pd.Series(["d", "d"], dtype="str"),
                        "score": [1.0, 2.0], "label": [1, 0]})
    assert harness.evaluate(run, metrics="P@1")["P@1"].tolist() == [1.0, 0.0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=30), st.integers(0, 2**32 - 1))
def test_segment_argsort_matches_lexsort(sizes: list[int], seed: int) -> None:
    """Per-query sorting on padded matrices (one or many buckets) equals a global lexsort."""
    rng = np.random.default_rng(seed)
    n = np.array(sizes)
    starts = np.cumsum(n) - n
    q = np.repeat(np.arange(len(n)), n)
    pos = np.arange(n.sum()) - starts[q]
    key = rng.integers(0, 5, n.sum()).astype(float)
    second = rng.integers(0, 3, n.sum())
    expected = np.lexsort((key, q))  # stable: ties keep row order
    expected2 = np.lexsort((second, key, q))
    for layout in (Layout.of(starts, n), Layout.of(starts, n, q, pos)):
        assert np.array_equal(segment_argsort(layout, [key], stable=True), expected)
        assert np.array_equal(segment_argsort(layout, [second, key], stable=True), expected2)
        codes = rng.permutation(n.sum())
        assert not duplicate_within(layout, codes)
        if n.max() > 1:
            i = int(np.argmax(n))
            codes[starts[i] + 1] = codes[starts[i]]
            assert duplicate_within(layout, codes)


def test_duplicate_check_is_exact_on_64_bit_codes() -> None:
    """The first pass sorts codes folded to 32 bits: distinct 64-bit codes that fold alike
    are no duplicate; equal ones are, however they fold; the padding value counts too."""
    n = np.array([3, 4, 2])
    starts = np.cumsum(n) - n
    q = np.repeat(np.arange(3), n)
    layout = Layout.of(starts, n, q, np.arange(9) - starts[q])
    a = np.int64(0x1234_5678_0000_0001)
    fold_alike = a ^ np.int64(0x0000_0001_0000_0001)  # high and low words move together
    assert (a ^ (a >> 32)).astype(np.uint32) == (fold_alike ^ (fold_alike >> 32)).astype(
        np.uint32)
    codes = np.array([1, 2, 3, a, fold_alike, 7, 8, 9, 10], dtype=np.int64)
    assert not duplicate_within(layout, codes)
    codes[4] = a
    assert duplicate_within(layout, codes)
    top = np.iinfo(np.int64).max
    assert duplicate_within(layout, np.array([1, 2, 3, 4, 5, 6, 7, top, top], dtype=np.int64))
    assert not duplicate_within(layout, np.array([1, 2, top, 4, 5, 6, 7, 8, 9],
                                                 dtype=np.int64))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=12), st.integers(0, 2**32 - 1),
       st.integers(1, 8))
def test_contender_ranking_equals_full_ranking(sizes: list[int], seed: int, k: int) -> None:
    """Ranking only the rows that can reach the top k gives the same value as ranking all
    rows, for every metric and tie rule (scores drawn from few values, so ties straddle k,
    some apart by 1e-12 only: equal in the float32 selection, distinct in the ranking)."""
    from harness.metrics.engine.kernels import Cache, compute
    from harness.metrics.layout.prepare import prepare

    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    run = pd.DataFrame({
        "qid": np.repeat(np.arange(len(sizes)), sizes),
        "docid": [f"d{i}" for i in range(n)],
        "score": rng.integers(0, 4, n) + rng.integers(0, 3, n) * 1e-12,
        "label": rng.integers(0, 4, n),
    })
    prep = prepare(run, None)
    for ties in ("average", "input", "docid", "optimistic", "pessimistic", "random"):
        for name in ("dcg", "ndcg", "mndcg", "ap", "rr", "precision", "recall", "err"):
            for top in (k, k + 3):
                m = harness.Metric(name, k=k, ties=ties, ideal="retrieved" if name in (
                    "ap", "recall", "ndcg") and seed % 2 else "judged")
                full, empty_full = compute(prep, m, Cache())
                part, empty_part = compute(prep, m, Cache(), top=top)
                np.testing.assert_allclose(part, full, rtol=0, atol=1e-12,
                                           err_msg=f"{m.display_name} top={top}")
                assert np.array_equal(empty_part, empty_full)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=12), st.integers(0, 2**32 - 1),
       st.sampled_from([None, 1, 3, 10]), st.sampled_from([0.0, 0.05, 0.5]))
def test_relevant_rows_alone_give_the_sums_of_every_row(sizes: list[int], seed: int,
                                                        k: int | None, dense: float) -> None:
    """Without tie groups, AP, RR, precision, recall and the DCG family summed over the
    relevant rows only (Ranking.positive) equal, bit for bit, the sums over every row;
    a gain with gain(0) > 0 and level 0 keep the path over every row."""
    from harness.metrics.engine.kernels import Cache, compute
    from harness.metrics.layout.prepare import prepare
    from harness.metrics.layout.ranking import Ranking

    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    labels = np.where(rng.random(n) < dense, rng.integers(1, 4, n), 0)
    run = pd.DataFrame({"qid": np.repeat(np.arange(len(sizes)), sizes),
                        "docid": [f"doc-{i:08d}" for i in range(n)],
                        "score": rng.integers(0, 5, n).astype(float), "label": labels})
    if not (labels > 0).any():
        run.loc[0, "label"] = 1
    prep = prepare(run, None)
    metrics = [harness.Metric(name, k=k, ties=ties, gain=gain, ideal=ideal, level=level)
               for name in ("dcg", "ndcg", "mndcg", "ap", "rr", "precision", "recall")
               for ties in ("docid", "input") for gain in ("exp2", "linear", "rel + 1")
               for ideal in ("judged", "retrieved") for level in (1, 2)
               if gain == "exp2" or name in ("dcg", "ndcg", "mndcg")]
    sparse_calls = []
    original = Ranking.sparse
    for m in metrics:
        fast = compute(prep, m, Cache())
        try:
            Ranking.sparse = lambda self: False  # type: ignore[method-assign]
            slow = compute(prep, m, Cache())
        finally:
            Ranking.sparse = original  # type: ignore[method-assign]
        sparse_calls.append(original(prep.ranking(m.ties)))
        assert np.array_equal(fast[0], slow[0]), m.display_name  # exact, not close
        assert np.array_equal(fast[1], slow[1])
    assert all(sparse_calls)  # the relevant-rows path was taken


def test_duplicate_check_of_codes_increasing_within_each_query() -> None:
    """Codes in increasing order within each query (docids written in order) are checked
    without a sort: equal codes in two queries are no duplicate; an equal neighbour, or a
    query out of order with a repeat further on, is found; empty queries in between."""
    n = np.array([3, 0, 4, 2, 0])
    starts = np.cumsum(n) - n
    q = np.repeat(np.arange(len(n)), n)
    for layout in (Layout.of(starts, n), Layout.of(starts, n, q, np.arange(9) - starts[q])):
        assert not duplicate_within(layout, np.array([1, 2, 3, 1, 2, 3, 4, 3, 4]))
        assert duplicate_within(layout, np.array([1, 2, 3, 1, 2, 2, 4, 3, 4]))
        assert duplicate_within(layout, np.array([1, 2, 3, 5, 2, 9, 5, 3, 4]))
        assert not duplicate_within(layout, np.array([1, 2, 3, 5, 2, 9, 6, 4, 3]))
