"""``harness.evaluate`` on a large run works in blocks of whole queries
(:mod:`harness.metrics.engine.blocked`); the table it gives is the unblocked engine's, bit for bit:
the same values, index order, dtypes and ``attrs``, at block sizes from one query to the
whole run. The values themselves are checked against pytrec_eval once, independently."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import harness
from harness.metrics.engine import blocked

# measures that read the whole judged set (ideal='judged', bpref, infAP, Compat, recall),
# the collection's top grade (mnDCG, ERR with max_label=None), tie rules, empty policies
METRICS = ["ndcg@10", "ndcg@10(ties=input)", "ndcg(ties=docid,gain=linear)", "mndcg@5",
           "err@10", "ap", "ap(ties=random,seed=3)", "rr(ties=quicksort)", "bpref", "infap(ties=docid)",
           "compat(ties=input)", "P@5(empty=exclude)", "recall@10(empty=nan)",
           "ndcg@5(empty=one,empty_weight=unweighted)", "rr(empty=zero,empty_weight=mean)",
           "ndcg@3(ties=pessimistic)", "ndcg@3(ties=optimistic)"]


def _data(seed: int, text: bool, shuffle: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run of 120 queries (1-30 documents, scores with ties) whose rows are shuffled
    (a query's rows not contiguous) or grouped, and qrels judging part of it: some queries
    unjudged, some judged but not retrieved, some without a relevant document, grades 0-3
    plus unretrieved judged documents."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 31, 120)
    q = np.repeat(np.arange(120), sizes)
    n = len(q)
    qid = np.array([f"query-{i:05d}" for i in q], dtype=object) if text else q * 7 + 1000
    docid = np.array([f"doc-{d:06d}" for d in rng.integers(0, 10**6, n)]) if text else \
        rng.integers(0, 10**6, n)
    run = pd.DataFrame({"qid": qid, "docid": docid, "score": rng.integers(0, 5, n) / 2.0})
    run = run.drop_duplicates(["qid", "docid"]).reset_index(drop=True)
    judged = run.sample(frac=0.6, random_state=seed)
    judged = judged[~judged["qid"].isin(run["qid"].unique()[::11])]  # unjudged queries
    labels = rng.integers(0, 4, len(judged))
    zero = judged["qid"].isin(run["qid"].unique()[1::13]).to_numpy()
    labels[zero] = 0  # queries without a relevant document
    qrels = pd.DataFrame({"qid": judged["qid"].to_numpy(),
                          "docid": judged["docid"].to_numpy(), "label": labels})
    # sorting first, last, and between two run queries
    absent = ["query--0005", "query-00500", "query-00060x"] if text else [3, 999_999, 1423]
    extra = pd.DataFrame({"qid": np.repeat(absent, 2),
                          "docid": (["x1", "x2"] * 3) if text else [1, 2] * 3,
                          "label": [2, 0, 1, 1, 3, 0]})  # judged, never retrieved
    unretrieved = qrels.iloc[:40].assign(docid=lambda f: f["docid"].astype(str) + "u"
                                         if text else f["docid"] + 10**7)
    qrels = pd.concat([qrels, extra, unretrieved], ignore_index=True)
    if shuffle:
        run = run.sample(frac=1.0, random_state=seed + 1).reset_index(drop=True)
        qrels = qrels.sample(frac=1.0, random_state=seed + 2).reset_index(drop=True)
    return run, qrels


def _unblocked(monkeypatch: pytest.MonkeyPatch, *args, **kwargs) -> pd.DataFrame:
    monkeypatch.setattr(blocked, "BLOCKED_ABOVE", 10**12)
    return harness.evaluate(*args, **kwargs)


def _blocked(monkeypatch: pytest.MonkeyPatch, block_rows: int, *args, **kwargs
             ) -> pd.DataFrame:
    monkeypatch.setattr(blocked, "BLOCKED_ABOVE", 0)
    monkeypatch.setattr(blocked, "BLOCK_ROWS", block_rows)
    return harness.evaluate(*args, **kwargs)


def _same(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.index.dtype == expected.index.dtype
    assert got.dtypes.to_dict() == expected.dtypes.to_dict()
    assert list(got.index) == list(expected.index)
    assert got.attrs == expected.attrs


@pytest.mark.parametrize("block_rows", [1, 7, 150, 10**9])
@pytest.mark.parametrize("text,shuffle", [(True, True), (False, False), (False, True)])
def test_blocks_give_the_unblocked_table(monkeypatch, block_rows, text, shuffle):
    run, qrels = _data(0, text, shuffle)
    for missing in ("exclude", "zero"):
        expected = _unblocked(monkeypatch, run, qrels, METRICS, missing=missing)
        got = _blocked(monkeypatch, block_rows, run, qrels, METRICS, missing=missing)
        _same(got, expected)
        assert len(expected.attrs["unjudged_qids"]) >= 10  # the data has every kind of query
        assert len(expected.attrs["missing_qids"]) == (3 if missing == "exclude" else 0)
        assert expected.attrs["empty_qids"]


def test_one_block_per_query_splits_the_run(monkeypatch):
    module = importlib.import_module("harness.metrics.engine.evaluate")  # not the function
    run, qrels = _data(1, False, True)
    whole, seen = module._evaluate_whole, []

    def spy(part, *args, **kwargs):
        seen.append(part["qid"].nunique())
        return whole(part, *args, **kwargs)

    monkeypatch.setattr(module, "_evaluate_whole", spy)
    _blocked(monkeypatch, 1, run, qrels, ["ndcg@10"])
    assert len(seen) == len(set(run["qid"]) & set(qrels["qid"]))  # one per judged query
    assert max(seen) <= 2  # an unjudged query joins the block before it (every 11th)


def test_labelled_run_weights_and_negative_labels(monkeypatch):
    run, qrels = _data(2, True, True)
    labelled = run.merge(qrels, on=["qid", "docid"], how="left")
    labelled["label"] = labelled["label"].fillna(-1)  # unjudged rows: negative labels
    labelled.loc[labelled["qid"] == labelled["qid"].iloc[0], "label"] = -1  # all unjudged
    weights = pd.Series(np.linspace(0.5, 2, labelled["qid"].nunique()),
                        index=sorted(labelled["qid"].unique()))
    options = {"weights": weights, "negative_labels": "unjudged"}
    expected = _unblocked(monkeypatch, labelled, None, METRICS, **options)
    assert labelled["qid"].iloc[0] in expected.attrs["unjudged_qids"]
    for block_rows in (1, 5, 100):
        got = _blocked(monkeypatch, block_rows, labelled, None, METRICS, **options)
        _same(got, expected)
        means = harness.aggregate(got)["mean"]
        pd.testing.assert_series_equal(means, harness.aggregate(expected)["mean"],
                                       check_exact=True)


def test_top_label_given_or_from_the_whole_collection(monkeypatch):
    run, qrels = _data(3, False, False)
    qrels.loc[qrels.index[-1], "label"] = 9  # the top grade in one query's judgments only
    for top in (None, 12.0):
        expected = _unblocked(monkeypatch, run, qrels, ["mndcg@10", "err@10"], top_label=top)
        got = _blocked(monkeypatch, 3, run, qrels, ["mndcg@10", "err@10"], top_label=top)
        _same(got, expected)


def test_errors_are_the_unblocked_ones(monkeypatch):
    run, qrels = _data(4, True, False)
    run.loc[len(run) - 3, "score"] = np.nan  # in the last block
    run.loc[len(run) - 1, "score"] = np.nan
    with pytest.raises(harness.InputError) as unblocked_error:
        _unblocked(monkeypatch, run, qrels, ["ndcg@10"])
    with pytest.raises(harness.InputError) as blocked_error:
        _blocked(monkeypatch, 10, run, qrels, ["ndcg@10"])
    assert str(blocked_error.value) == str(unblocked_error.value)
    assert f"row {len(run) - 3}" in str(blocked_error.value)
    dup = pd.concat([run.dropna(), run.dropna().iloc[[5]]], ignore_index=True)
    with pytest.raises(harness.InputError, match="duplicate"):
        _blocked(monkeypatch, 10, dup, qrels, ["ndcg@10"])


def test_blocked_values_match_pytrec_eval(monkeypatch):
    run, qrels = _data(5, True, True)
    got = _blocked(monkeypatch, 9, run, qrels, ["ndcg@10(ties=docid,gain=linear)", "ap(ties=docid)"])
    qd = {q: {d: int(v) for d, v in zip(g.docid, g.label)} for q, g in qrels.groupby("qid")}
    rd = {q: {d: float(s) for d, s in zip(g.docid, g.score)} for q, g in run.groupby("qid")}
    res = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10", "map"}).evaluate(rd)
    evaluated = [q for q in got.index]
    assert len(evaluated) > 90
    for q in evaluated:
        assert got.loc[q, "nDCG@10(gain=linear,ties=docid)"] == pytest.approx(res[q]["ndcg_cut_10"],
                                                                   abs=1e-12)
        assert got.loc[q, "AP(ties=docid)"] == pytest.approx(res[q]["map"], abs=1e-12)


@pytest.mark.parametrize("shuffle", [False, True])
def test_arrow_text_qids_in_chunks(monkeypatch, shuffle):
    """Arrow-backed text qids held in chunks that cut queries (as a parquet read leaves
    them) are coded chunk by chunk; a chunk's first qid continues the previous chunk's."""
    import pyarrow as pa

    run, qrels = _data(6, True, shuffle)
    values = pa.array(run["qid"].astype(str).tolist())
    cuts = [0, 1, 2, 40, 41, 300, len(values) // 2, len(values)]
    chunked = pa.chunked_array([values[a:b] for a, b in zip(cuts[:-1], cuts[1:])])
    dtype = pd.StringDtype("pyarrow", na_value=np.nan)
    run["qid"] = pd.Series(dtype.__from_arrow__(chunked))
    qrels["qid"] = qrels["qid"].astype(dtype)
    assert run["qid"].array._pa_array.num_chunks == 7
    expected = _unblocked(monkeypatch, run, qrels, METRICS)
    for block_rows in (1, 60):
        _same(_blocked(monkeypatch, block_rows, run, qrels, METRICS), expected)
