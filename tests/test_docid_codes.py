"""Joining a run to its qrels through docid codes: hashed long strings, packed short ones,
factorised objects, and hash collisions, all against pytrec_eval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import harness
from harness.errors import InputError
from harness.metrics.layout import ids as prepare_module

METRICS = [harness.Metric(n, k=k, convention="trec_eval") for n, k in (
    ("ndcg", 10), ("ndcg", None), ("ap", None), ("recall", 100), ("precision", 5))]
PYTREC = {"ndcg_cut.10", "ndcg", "map", "recall.100", "P.5"}
NAMES = ["ndcg_cut_10", "ndcg", "map", "recall_100", "P_5"]


def _data(prefix: str, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    for q in range(60):
        qid = f"topic-{q:04d}"
        n = int(rng.integers(5, 40))
        docs = [f"{prefix}{q:03d}{d:04d}" for d in rng.permutation(500)[:n + 10]]
        scores = np.round(rng.random(n), 1)  # ties, broken by docid under trec_eval
        runs += [(qid, doc, sc) for doc, sc in zip(docs[:n], scores)]
        labels = rng.choice([-1, 0, 1, 2], size=n + 10, p=[0.05, 0.5, 0.3, 0.15])
        judged = rng.random(n + 10) < 0.7  # some retrieved docs unjudged, some judged
        qrels += [(qid, doc, int(lab)) for doc, lab, j in zip(docs, labels, judged) if j]
    return (pd.DataFrame(runs, columns=["qid", "docid", "score"]),
            pd.DataFrame(qrels, columns=["qid", "docid", "label"]))


def _pytrec(run: pd.DataFrame, qrels: pd.DataFrame) -> pd.DataFrame:
    qrel: dict = {}
    for q, d, lab in qrels.itertuples(index=False):
        qrel.setdefault(q, {})[d] = lab
    ranked: dict = {}
    for q, d, s in run.itertuples(index=False):
        ranked.setdefault(q, {})[d] = s
    out = pytrec_eval.RelevanceEvaluator(qrel, PYTREC).evaluate(ranked)
    return pd.DataFrame({q: [v[n] for n in NAMES] for q, v in out.items()}, index=NAMES).T


@pytest.mark.parametrize("prefix", ["", "d", "clueweb12-0000tw-"])  # 7, 8 and 24 bytes
@pytest.mark.parametrize("dtype", ["str", object])
def test_joined_labels_give_trec_evals_numbers(prefix: str, dtype: object) -> None:
    run, qrels = _data(prefix)
    run["docid"], qrels["docid"] = run["docid"].astype(dtype), qrels["docid"].astype(dtype)
    ours = harness.evaluate(run, qrels, METRICS)
    theirs = _pytrec(run, qrels).loc[ours.index]
    for metric, name in zip(METRICS, NAMES):
        np.testing.assert_allclose(ours[metric.display_name], theirs[name], rtol=0, atol=1e-12)


def test_a_hash_collision_falls_back_to_exact_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every long docid gets the same 64-bit code: the join must notice and still give
    trec_eval's numbers."""
    run, qrels = _data("clueweb12-0000tw-", seed=3)
    honest = harness.evaluate(run, qrels, METRICS)

    def colliding(docid: pd.Series) -> tuple[np.ndarray, bool]:
        return np.zeros(len(docid), dtype=np.int64), False

    monkeypatch.setattr(prepare_module, "_arrow_string_hash", colliding)
    pd.testing.assert_frame_equal(harness.evaluate(run, qrels, METRICS), honest)


def test_one_colliding_pair_is_caught_by_the_string_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A collision between one judged and one other docid of the same query: keys stay
    unique, only the exact string comparison can see it."""
    run, qrels = _data("clueweb12-0000tw-", seed=4)
    honest = harness.evaluate(run, qrels, METRICS)
    real = prepare_module._arrow_string_hash
    judged = qrels.loc[qrels["label"] > 0].iloc[0]
    other = run.loc[(run["qid"] == judged["qid"]) & ~run["docid"].isin(
        qrels.loc[qrels["qid"] == judged["qid"], "docid"])].iloc[0]

    def one_collision(docid: pd.Series) -> tuple[np.ndarray, bool]:
        codes, _ = real(docid)
        codes = codes.copy()
        target = codes[np.flatnonzero((docid == judged["docid"]).to_numpy())[0]]
        codes[(docid == other["docid"]).to_numpy()] = target
        return codes, False

    monkeypatch.setattr(prepare_module, "_arrow_string_hash", one_collision)
    pd.testing.assert_frame_equal(harness.evaluate(run, qrels, METRICS), honest)


@pytest.mark.parametrize("width", [9, 10, 16, 23])
def test_strings_of_one_length_hash_as_the_ragged_path_does(width: int) -> None:
    rng = np.random.default_rng(width)
    alphabet = np.array(list("abcdefghij0123456789-_"))
    same = ["".join(rng.choice(alphabet, width)) for _ in range(500)]
    fixed, exact = prepare_module._arrow_string_hash(pd.Series(same, dtype="str"))
    ragged, _ = prepare_module._arrow_string_hash(pd.Series(same + ["x" * (width - 1)],
                                                            dtype="str"))
    assert not exact
    np.testing.assert_array_equal(fixed, ragged[:-1])
    assert len(set(fixed.tolist())) == len(set(same))  # distinct strings, distinct codes


def test_a_large_run_is_checked_for_duplicates_on_the_other_core(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From BACKGROUND_ROWS rows the duplicate check runs in a worker thread while the
    metrics are computed; its error still reaches the caller, naming the row, and the
    values equal those of the inline check."""
    from harness.metrics.layout import background

    rng = np.random.default_rng(3)
    n_q, per = 3000, 80
    run = pd.DataFrame({
        "qid": pd.array(np.repeat([f"query-{i:07d}" for i in range(n_q)], per), dtype="str"),
        "docid": pd.array([f"doc-{i:09d}" for i in range(n_q * per)], dtype="str"),
        "score": rng.integers(0, 20, n_q * per).astype(float),
        "label": rng.integers(0, 4, n_q * per)})
    assert len(run) >= background.BACKGROUND_ROWS
    threaded = harness.evaluate(run, metrics=["ndcg@10", "ap"])
    monkeypatch.setattr(background, "BACKGROUND_ROWS", 10**9)
    inline = harness.evaluate(run, metrics=["ndcg@10", "ap"])
    pd.testing.assert_frame_equal(threaded, inline)
    monkeypatch.undo()
    bad = run.copy()
    bad.loc[len(bad) - 1, "docid"] = bad.loc[len(bad) - 2, "docid"]  # same query, twice
    with pytest.raises(InputError, match=r"duplicate") as info:
        harness.evaluate(bad, metrics=["ndcg@10"])
    assert f"row {len(bad) - 1}" in str(info.value) or f"row {len(bad) - 2}" in str(info.value)


def _large_run(rng: np.random.Generator, n_q: int, per: int
               ) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    """A run of ``n_q`` queries of ``per`` documents, text ids, scores with ties."""
    qids = np.repeat([f"query-{i:07d}" for i in range(n_q)], per)
    docs = [f"doc-{i:09d}" for i in range(n_q * per)]
    run = pd.DataFrame({"qid": pd.array(qids, dtype="str"), "docid": pd.array(docs, dtype="str"),
                        "score": rng.normal(size=n_q * per).round(1)})
    return run, qids, docs


def test_large_run_and_qrels_are_checked_for_duplicates_on_the_other_core() -> None:
    rng = np.random.default_rng(4)
    run, qids, docs = _large_run(rng, 2000, 100)
    qrels = pd.DataFrame({"qid": qids[::3], "docid": docs[::3],
                          "label": rng.integers(-1, 3, len(docs[::3]))})
    metrics = [harness.Metric(m, k=10, convention="trec_eval") for m in ("ndcg", "ap")]
    ok = harness.evaluate(run, qrels, metrics)  # negative labels: unjudged, not an error
    assert len(ok) == 2000
    bad = qrels.copy()
    bad.loc[len(bad) - 1, "docid"] = bad.loc[len(bad) - 2, "docid"]  # a repeated judgment
    with pytest.raises(InputError, match="duplicate") as info:
        harness.evaluate(run, bad, metrics)
    assert "qrels" in str(info.value)


def test_rankings_made_while_the_qrels_are_joined_equal_those_made_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With qrels, the full rankings are computed on the other core while the run is joined
    to the qrels (labels filled in afterwards): the trec_eval set equals the one computed
    all in one thread, and pytrec_eval's on the first queries."""
    from harness.metrics.layout import background

    rng = np.random.default_rng(5)
    per = 100
    run, qids, docs = _large_run(rng, 2500, per)
    judged = rng.random(len(run)) < 0.3
    qrels = pd.DataFrame({"qid": qids[judged], "docid": np.asarray(docs)[judged],
                          "label": rng.integers(-1, 3, int(judged.sum()))})
    assert len(run) >= background.BACKGROUND_ROWS
    metrics = [harness.Metric(name, k=k, convention="trec_eval") for name, k in (
        ("ndcg", None), ("ndcg", 10), ("ap", None), ("rr", None), ("recall", 100),
        ("precision", 10))]
    threaded = harness.evaluate(run, qrels, metrics)
    monkeypatch.setattr(background, "BACKGROUND_ROWS", 10**9)
    inline = harness.evaluate(run, qrels, metrics)
    pd.testing.assert_frame_equal(threaded, inline, check_exact=True)
    first = run.head(20 * per)
    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: dict(zip(g["docid"], g["label"].astype(int))) for q, g in qrels.groupby("qid")
         if q in set(first["qid"])}, {"ndcg", "map", "recip_rank", "recall.100", "P.10"})
    theirs = evaluator.evaluate({q: dict(zip(g["docid"], g["score"]))
                                 for q, g in first.groupby("qid")})
    for name, col in (("ndcg", 0), ("map", 2), ("recip_rank", 3), ("recall_100", 4),
                      ("P_10", 5)):
        ours = threaded[metrics[col].display_name]
        for q, values in theirs.items():
            assert abs(ours[q] - values[name]) < 1e-12, (name, q)


def test_docid_tie_order_is_trec_evals_for_digits_case_and_non_ascii() -> None:
    """ties=docid orders tied documents by docid descending as trec_eval compares them
    (bytes; for UTF-8 the code-point order): checked against pytrec_eval on one query whose
    six documents all tie, the relevant one moved through every position."""
    docs = ["a10", "a9", "\u00e91", "Z2", "10", "9"]
    for relevant in docs:
        run = pd.DataFrame({"qid": "q", "docid": docs, "score": 1.0})
        qrels = pd.DataFrame({"qid": ["q"], "docid": [relevant], "label": [1]})
        ours = harness.evaluate(run, qrels, [harness.Metric("rr", convention="trec_eval")])
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"recip_rank"})
        theirs = evaluator.evaluate({"q": {d: 1.0 for d in docs}})["q"]["recip_rank"]
        assert ours.iloc[0, -1] == theirs, relevant


def test_a_strings_hash_does_not_depend_on_the_other_strings_of_its_column() -> None:
    """The run and the qrels are hashed apart: a docid must get one code in both, however
    long the other docids of each table are."""
    words = ["KILT_19782967", "MARCO_D2706327", "doc-1", "a" * 8, "b" * 9, "c" * 17]
    alone = [prepare_module._arrow_string_hash(pd.Series([w, "y" * 9], dtype="str"))[0][0]
             for w in words]  # a 9-byte neighbour: the hash path, not packed bytes
    together, _ = prepare_module._arrow_string_hash(
        pd.Series(words + ["z" * 40], dtype="str"))
    assert together[:-1].tolist() == [int(a) for a in alone]


def test_qrels_with_longer_docids_than_the_run_join_as_pytrec_eval() -> None:
    run, qrels = _data("doc-")
    extra = qrels.drop_duplicates("qid").assign(docid=lambda f: "judged-only-" + f.qid * 3,
                                                label=2)  # longer than every run docid
    qrels = pd.concat([qrels, extra], ignore_index=True)
    for r, j in ((run, qrels), (run.astype({"docid": "str"}), qrels.astype({"docid": "str"}))):
        ours = harness.evaluate(r, j, METRICS)[[m.display_name for m in METRICS]]
        theirs = _pytrec(run, qrels).loc[ours.index]
        np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("docid", ["d2", 2])
def test_a_repeated_judgment_is_refused_even_when_one_of_them_is_negative(docid: object
                                                                         ) -> None:
    """The join's unique keys stand in for the qrels' duplicate check: every qrels row
    counts, those with a negative label (unjudged under trec_eval) too."""
    docs = ["d1", "d2", "d3"] if isinstance(docid, str) else [1, 2, 3]
    run = pd.DataFrame({"qid": ["q1"] * 3, "docid": docs, "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["q1", "q1", "q1"], "docid": [docs[0], docid, docid],
                          "label": [1, -1, 2]})
    with pytest.raises(InputError, match="duplicate") as info:
        harness.evaluate(run, qrels, [harness.Metric("ap", convention="trec_eval")])
    assert "qrels" in str(info.value) and "row 2" in str(info.value)
    unique = qrels.drop(index=1)
    value = harness.evaluate(run, unique, [harness.Metric("ap", convention="trec_eval")])
    assert value.iloc[0, -1] == pytest.approx((1 / 1 + 2 / 2) / 2)


@pytest.mark.parametrize("run_docs,qrels_docs", [
    (["d1", "d22", "d333"], ["d22", "d1"]),  # both packed as bytes
    (["d1", "d2\x00", "d3"], ["d2\x00", "d1"]),  # both packed with their lengths
    (["d1", "d22", "d333"], ["d22", "d1\x00"]),  # packed two ways: must not mix
    (["d1", "d22", "d333"], ["d22", "d1", "a-long-docid-9"]),  # packed against hashed
])
def test_short_docids_join_whichever_way_each_table_packs_them(run_docs: list[str],
                                                               qrels_docs: list[str]) -> None:
    """Docids of up to 8 bytes are packed exactly, bytes alone or with their length when a
    NUL occurs; the join uses each table's codes only when both were made the same way."""
    run = pd.DataFrame({"qid": "q", "docid": pd.array(run_docs, dtype="str"),
                        "score": np.arange(len(run_docs), 0, -1.0)})
    qrels = pd.DataFrame({"qid": "q", "docid": pd.array(qrels_docs, dtype="str"),
                          "label": np.arange(1, len(qrels_docs) + 1)})
    out = harness.evaluate(run, qrels, ["ndcg(gain=linear)", "ap"])
    judged = dict(zip(qrels_docs, range(1, len(qrels_docs) + 1)))
    gains = [judged.get(d, 0) for d in run_docs]  # the run is in score order
    dcg = sum(g / np.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(judged.values(), reverse=True)
    idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
    assert out["nDCG(gain=linear)"].iloc[0] == pytest.approx(dcg / idcg, abs=1e-12)
    hits = np.cumsum([g > 0 for g in gains])
    ap = sum(hits[i] / (i + 1) for i, g in enumerate(gains) if g > 0) / len(judged)
    assert out["AP"].iloc[0] == pytest.approx(ap, abs=1e-12)
