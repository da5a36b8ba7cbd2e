"""Kind ``fusion`` (harness/rankers/fusion.py) against ranx's fusion (``ranx.fuse``) on the
same runs: every fused score equal within 1e-9, document by document.

ranx orders a run's equal scores as its sort leaves them, the harness by docid descending
(trec_eval's order). So on runs with ties, the methods that read ranks (``rrf``, ``rank``
normalisation) are compared only on the documents whose score no other document of its
query shares in any input, and the ones that read scores are compared everywhere.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ranx import Run, fuse as ranx_fuse

from harness.data.trec import read_run
from harness.datasets import load_dataset
from harness.errors import InputError
from harness.rankers import RankerSpec, cache_key, score
from harness.rankers.fusion import fuse

TOL = 1e-9
#: harness name -> ranx's
NORMS = {"min-max": "min-max", "z-score": "zmuv", "sum": "sum", "max": "max", "rank": "rank"}
METHODS = {"combsum": "sum", "combmnz": "mnz", "combmax": "max", "wsum": "wsum"}


def _runs(seed: int, *, ties: bool) -> dict[str, pd.DataFrame]:
    """Three runs over the same 12 queries, each retrieving its own subset of a query's 30
    documents (so some documents are missing from some runs); scores continuous, or on a
    coarse grid when ``ties``."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, scale in (("a", 10.0), ("b", 1.0), ("c", 250.0)):
        rows = []
        for q in range(12):
            docs = rng.choice(30, size=rng.integers(5, 25), replace=False)
            raw = rng.random(len(docs)) * scale - scale / 3
            if ties:
                raw = np.round(raw / scale * 40) * scale / 40
            rows += [(f"q{q}", f"d{d:02d}", float(s)) for d, s in zip(docs, raw, strict=True)]
        out[name] = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    return out


def _ranx(run: pd.DataFrame) -> Run:
    return Run({q: dict(zip(g["docid"], g["score"], strict=True))
                for q, g in run.groupby("qid")})


def _theirs(runs: dict[str, pd.DataFrame], norm: str | None, method: str,
            params: dict | None = None) -> pd.Series:
    fused = ranx_fuse(runs=[_ranx(r) for r in runs.values()], norm=norm, method=method,
                      params=params or {})
    return pd.Series({(q, d): s for q, docs in fused.to_dict().items()
                      for d, s in docs.items()})


def _ours(fused: pd.DataFrame) -> pd.Series:
    return fused.set_index(["qid", "docid"])["score"]


def _untied(runs: dict[str, pd.DataFrame]) -> set[tuple[str, str]]:
    """(qid, docid) whose score is unique within its query in every input that has it."""
    tied = set()
    for run in runs.values():
        dup = run[run.duplicated(["qid", "score"], keep=False)]
        tied |= set(zip(dup["qid"], dup["docid"], strict=True))
    every = {key for run in runs.values() for key in zip(run["qid"], run["docid"])}
    return every - tied


def _equal(ours: pd.Series, theirs: pd.Series, keys=None) -> None:
    assert set(ours.index) == set(theirs.index)
    keys = sorted(keys if keys is not None else theirs.index)
    assert len(keys) > 50
    gap = np.abs(ours.loc[keys].to_numpy() - theirs.loc[keys].to_numpy())
    assert gap.max() <= TOL, (gap.max(), keys[int(gap.argmax())])


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", [60, 1])
def test_rrf_equals_ranx(seed: int, k: int) -> None:
    runs = _runs(seed, ties=False)
    _equal(_ours(fuse(runs, "rrf", k=k)), _theirs(runs, None, "rrf", {"k": k}))


@pytest.mark.parametrize("norm", list(NORMS))
@pytest.mark.parametrize("method", list(METHODS))
def test_comb_methods_equal_ranx(norm: str, method: str) -> None:
    runs = _runs(3, ties=False)
    weights = {"a": 0.5, "b": 0.3, "c": 0.2}
    params = {"weights": list(weights.values())} if method == "wsum" else {}
    ours = fuse(runs, method, norm, weights=weights)
    _equal(_ours(ours), _theirs(runs, NORMS[norm], METHODS[method], params))


@pytest.mark.parametrize("norm", ["min-max", "z-score", "sum", "max"])
def test_score_norms_equal_ranx_on_tied_runs(norm: str) -> None:
    runs = _runs(5, ties=True)
    assert any(r.duplicated(["qid", "score"]).any() for r in runs.values())
    _equal(_ours(fuse(runs, "combmnz", norm)), _theirs(runs, NORMS[norm], "mnz"))


@pytest.mark.parametrize("method,norm", [("rrf", None), ("combsum", "rank")])
def test_rank_methods_on_tied_runs_equal_ranx_where_nothing_ties(method: str, norm) -> None:
    runs = _runs(6, ties=True)
    keys = _untied(runs)
    ours = fuse(runs, method, norm or "none")
    theirs = _theirs(runs, norm, METHODS.get(method, method))
    # ranx's order of equal scores is its sort's: only documents no other one ties with in
    # any input have the same ranks (and so the same fused score) on both sides
    _equal(_ours(ours), theirs, keys)


# -- the kind, on the CAsT 2021 baselines ----------------------------------------------------

@functools.cache
def _cast(data: Path):
    folder = data / "trec_cast_2021"
    return load_dataset("trec", name="cast2021_bm25",
                        qrels_path=str(folder / "trec-cast-qrels-docs.2021.qrel"),
                        run_path=str(folder / "org_manual_bm25.run"))


def _of(run: pd.DataFrame, qids: set) -> pd.DataFrame:
    return run.loc[run["qid"].isin(qids), ["qid", "docid", "score"]]


def _files(data: Path) -> dict[str, str]:
    folder = data / "trec_cast_2021"
    return {name: str(folder / f"org_manual_{name}.run") for name in ("bm25", "ance")}


@pytest.mark.parametrize("method,norm", [("rrf", "none"), ("combsum", "min-max"),
                                         ("combmnz", "z-score")])
def test_the_kind_fuses_cast_runs_as_ranx_does(shared_data: Path, method: str,
                                               norm: str) -> None:
    files = _files(shared_data)
    spec = RankerSpec("hybrid", "fusion", {"method": method, "norm": norm, "inputs": {
        "bm25": files["bm25"], "ance": {"kind": "run_file", "path": files["ance"]}}})
    ds = _cast(shared_data)
    run, _, _, _ = score(spec, ds)
    qids = set(ds.test["qid"])
    runs = {n: _of(read_run(p), qids) for n, p in files.items()}
    theirs = _theirs(runs, None if norm == "none" else NORMS[norm],
                     {"rrf": "rrf", **METHODS}[method])
    _equal(_ours(run), theirs, _untied(runs) if method == "rrf" else None)


def test_the_cache_key_follows_the_input_files(shared_data: Path, tmp_path: Path) -> None:
    files = _files(shared_data)
    copy = tmp_path / "ance.run"
    copy.write_bytes(Path(files["ance"]).read_bytes())
    spec = RankerSpec("hybrid", "fusion", {"inputs": {"bm25": files["bm25"],
                                                      "ance": str(copy)}})
    ds = _cast(shared_data)
    before = cache_key(spec, ds)
    with copy.open("a") as fh:
        fh.write("106_1 Q0 MARCO_X 1001 -5.0 extra\n")
    assert cache_key(spec, ds) != before


@pytest.mark.parametrize("options,match,key", [
    ({"method": "borda"}, "unknown fusion method 'borda'", "ranker.f.method"),
    ({"norm": "l2"}, "unknown normalisation 'l2'", "ranker.f.norm"),
    ({"method": "wsum", "weights": {"a": 1.0}}, "needs a weight for input 'b'",
     "ranker.f.weights.b"),
    ({"weights": {"a": 1.0, "z": 2.0}}, "a weight for 'z', which is not an input",
     "ranker.f.weights"),
])
def test_bad_options_name_the_key(shared_data: Path, options: dict, match: str,
                                  key: str) -> None:
    files = _files(shared_data)
    spec = RankerSpec("f", "fusion", {"inputs": {"a": files["bm25"], "b": files["ance"]},
                                      **options})
    with pytest.raises(InputError, match=match) as info:
        score(spec, _cast(shared_data))
    assert info.value.key == key


# -- weights tuned on the training queries ---------------------------------------------------

def _table(path: Path, seed: int) -> Path:
    """Train and test queries of 20 documents, graded 0-3; ``good`` follows the grade with
    noise, ``fair`` with more, ``noise`` not at all (all continuous: no ties)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(40):
        label = rng.integers(0, 4, 20)
        for d in range(20):
            rows.append({"qid": f"q{q}", "docid": f"d{d}", "label": int(label[d]),
                         "split": "train" if q < 25 else "test",
                         "good": label[d] + rng.normal(0, 1.0),
                         "fair": label[d] + rng.normal(0, 2.5), "noise": rng.normal()})
    pd.DataFrame(rows).to_parquet(path)
    return path


@pytest.mark.parametrize("seed", [0, 1])
def test_tuned_weights_are_ranx_optimize_fusion_s(tmp_path: Path, seed: int) -> None:
    import json

    from ranx import Qrels, optimize_fusion

    ds = load_dataset("table", name="t", path=str(_table(tmp_path / "t.parquet", seed)),
                      split="split")
    inputs = {n: {"kind": "feature", "feature": n} for n in ("good", "fair", "noise")}
    spec = RankerSpec("tuned", "fusion", {"method": "wsum", "norm": "min-max", "inputs": inputs,
                                          "tune": {"metric": "ndcg@10", "convention": "ranx",
                                                   "step": 0.1}})
    run, _, _, tags = score(spec, ds)
    train = ds.split("train")
    best = optimize_fusion(
        qrels=Qrels({q: dict(zip(g["docid"], g["label"].astype(int), strict=True))
                     for q, g in train.groupby("qid")}),
        runs=[_ranx(train.assign(score=train[n])) for n in inputs], norm="min-max",
        method="wsum", metric="ndcg@10", show_progress=False)
    assert json.loads(tags["fusion.weights"]) == dict(zip(inputs, best["weights"],
                                                          strict=True))
    assert tags["fusion.tuned_queries"] == "25"
    assert json.loads(tags["fusion.weights"])["noise"] < 0.5
    # the test split is fused with those weights
    fixed = RankerSpec("fixed", "fusion", {"method": "wsum", "norm": "min-max",
                                           "inputs": inputs,
                                           "weights": json.loads(tags["fusion.weights"])})
    assert np.array_equal(score(fixed, ds)[0]["score"], run["score"])
    assert set(run["qid"]) == set(ds.test["qid"])


def test_tuning_needs_a_train_split_and_wsum(shared_data: Path) -> None:
    files = _files(shared_data)
    inputs = {"a": files["bm25"], "b": files["ance"]}
    with pytest.raises(InputError, match="has no train split") as info:
        score(RankerSpec("f", "fusion", {"method": "wsum", "inputs": inputs,
                                         "tune": {"metric": "ndcg@10"}}), _cast(shared_data))
    assert info.value.key == "ranker.f.tune"
    with pytest.raises(InputError, match="tune chooses wsum's weights; method is rrf"):
        score(RankerSpec("f", "fusion", {"inputs": inputs, "tune": {"step": 0.1}}),
              _cast(shared_data))


def test_a_tune_step_that_does_not_divide_1_is_refused(tmp_path: Path) -> None:
    """No two multiples of 0.3 (0, 0.3, 0.6, 0.9) sum to 1: the grid of candidate weights
    is empty, and the error names tune.step (it was zip's bare ValueError)."""
    ds = load_dataset("table", name="t", path=str(_table(tmp_path / "t.parquet", 0)),
                      split="split")
    inputs = {n: {"kind": "feature", "feature": n} for n in ("good", "fair")}
    spec = RankerSpec("tuned", "fusion", {"method": "wsum", "inputs": inputs,
                                          "tune": {"metric": "ndcg@10", "step": 0.3}})
    with pytest.raises(InputError, match="no weights in steps of 0.3 sum to 1") as info:
        score(spec, ds)
    assert info.value.key == "ranker.tuned.tune.step"


def test_options_are_checked_before_any_data_is_read() -> None:
    from hydra import compose, initialize_config_dir

    from harness.app.config import register_configs
    from harness.app.plan import validate
    from harness.rankers import check_options

    with pytest.raises(InputError, match="unknown kind 'nope'") as info:
        check_options(RankerSpec("f", "fusion", {"inputs": {"a": "/nowhere/a.run",
                                                            "b": {"kind": "nope"}}}))
    assert info.value.key == "ranker.f.inputs.b.kind"
    with pytest.raises(InputError, match="valid_fraction must be in") as info:
        check_options(RankerSpec("f", "fusion", {"inputs": {
            "a": "/nowhere/a.run", "b": {"kind": "lightgbm", "valid_fraction": 1.5}}}))
    assert info.value.key == "ranker.f.inputs.b.valid_fraction"
    register_configs()
    with initialize_config_dir(version_base="1.3",
                               config_dir=str(Path(__file__).parents[1] / "conf")):
        cfg = compose("config", overrides=["experiment=cast2021", "ranker.rrf.method=borda",
                                           "dataset.run_path=/nowhere/bm25.run"])
    with pytest.raises(InputError, match="unknown fusion method 'borda'"):
        validate(cfg)  # the plan: no file is read


def test_the_readme_s_rrf_claim_is_ranx_pytrec_eval_and_scipy_s(shared_data: Path) -> None:
    """The README's CAsT sentence, recomputed without the harness: ranx fuses, pytrec_eval
    scores, scipy tests; and `harness compare` prints the same (its p after Holm over the
    two pairs against ance: bm25's p is far larger, so rrf's p doubles)."""
    import re

    import pytrec_eval
    from scipy import stats

    import harness

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    said = re.search(r"`rrf` \(reciprocal rank fusion of BM25 and ANCE, k = 60\) beats ANCE on "
                     r"trec_eval's\s+nDCG, ([\d.]+) against ([\d.]+) over (\d+) queries "
                     r"\(paired t-test, one-sided p < ([\d.e-]+);[^)]*\), but not at "
                     r"nDCG@10 \(([\d.]+) against ([\d.]+), p = ([\d.]+)\)", readme)
    assert said, "the README's CAsT sentence changed: update this test with it"
    folder = shared_data / "trec_cast_2021"
    runs = {n: Run.from_file(str(folder / f"org_manual_{n}.run"), kind="trec")
            for n in ("bm25", "ance")}
    fused = ranx_fuse([runs["bm25"], runs["ance"]], method="rrf", params={"k": 60})
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "trec-cast-qrels-docs.2021.qrel").read_text().splitlines():
        q, _, doc, label = line.split()
        qrels.setdefault(q, {})[doc] = int(label)
    judge = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_cut.10"})
    ance = judge.evaluate({q: dict(d) for q, d in runs["ance"].to_dict().items()})
    rrf = judge.evaluate({q: dict(d) for q, d in fused.to_dict().items()})
    qids = sorted(set(ance) & set(rrf))
    got = {}
    for m in ("ndcg", "ndcg_cut_10"):
        a, r = (np.array([v[q][m] for q in qids]) for v in (ance, rrf))
        got[m] = (r.mean(), a.mean(), stats.ttest_rel(r, a, alternative="greater").pvalue)
    (r_all, a_all, p_all), (r_10, a_10, p_10) = got["ndcg"], got["ndcg_cut_10"]
    assert said.group(1, 2, 3) == (f"{r_all:.4f}", f"{a_all:.4f}", str(len(qids)))
    assert p_all < float(said.group(4)) and said.group(7) == f"{p_10:.3f}"
    assert said.group(5, 6) == (f"{r_10:.4f}", f"{a_10:.4f}")
    # the harness's own comparison of its rrf ranker gives the same numbers
    ds = _cast(shared_data)
    spec = RankerSpec("rrf", "fusion", {"method": "rrf", "rrf_k": 60, "inputs": {
        n: {"kind": "run_file", "path": p} for n, p in _files(shared_data).items()}})
    ours = score(spec, ds)[0]
    ance_run = _of(read_run(_files(shared_data)["ance"]), set(ds.test["qid"]))
    # pytrec_eval is trec_eval 9.x: scores compared as float32; the same rule here is exact
    exact = harness.compare(ds.qrels, {"ance": ance_run, "rrf": ours},
                            ["nDCG(gain=linear,ties=docid_float32)"], baseline="ance")
    table = exact.per_query["rrf"][exact.measures[0]]
    assert len(table) == len(qids)
    fused_here: dict[str, dict[str, float]] = {}  # ranks within a run with tied scores
    for q, d, v in ours[["qid", "docid", "score"]].itertuples(index=False):  # follow
        fused_here.setdefault(str(q), {})[str(d)] = float(v)  # trec_eval here, not ranx
    theirs = judge.evaluate(fused_here)
    assert np.abs(table.loc[qids].to_numpy() - [theirs[q]["ndcg"] for q in qids]).max() < 1e-12
    # and trec_eval 10.0's rule (double), the README's numbers, round the same
    cmp = harness.compare(ds.qrels, {"ance": ance_run, "rrf": ours}, ["trec_eval:ndcg"],
                          baseline="ance")
    ours_r, ours_a = (cmp.per_query[n][cmp.measures[0]].loc[qids] for n in ("rrf", "ance"))
    assert (f"{ours_r.mean():.4f}", f"{ours_a.mean():.4f}") == said.group(1, 2)
    p_ours = stats.ttest_rel(ours_r.to_numpy(), ours_a.to_numpy(), alternative="greater")
    assert p_ours.pvalue < float(said.group(4))
