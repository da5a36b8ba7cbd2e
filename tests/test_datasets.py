"""Datasets: LETOR and TREC files read in place, the CAsT 2021 study against trec_eval,
the content digest, and plain tables (parquet / CSV, renamed columns, missing columns).

Counts come from the shared data's README; trec_eval's numbers are read from the
``expected.*.all_trec.q.txt`` files that trec_eval itself wrote.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from mlflow.tracking import MlflowClient

from harness import InputError, Metric, parse_metric
from harness.datasets import content_digest, load_dataset

# --------------------------------------------------------------------------------------
# LETOR: LightGBM's lambdarank sample


@pytest.fixture(scope="module")
def letor(shared_data: Path):
    d = shared_data / "lightgbm_lambdarank"
    return load_dataset("letor", name="lgb", test_path=str(d / "rank.test"),
                        train_path=str(d / "rank.train"), n_features=300)


def test_letor_counts_match_the_readme(letor) -> None:
    test, train = letor.test, letor.split("train")
    assert letor.kind == "letor" and letor.name == "lgb"
    assert test["qid"].nunique() == 50 and len(test) == 768
    assert train["qid"].nunique() == 201 and len(train) == 3005
    assert len(letor.docs) == 768 + 3005
    assert test["label"].value_counts().sort_index().to_dict() == {0: 206, 1: 256, 2: 252,
                                                                   3: 44, 4: 10}
    assert train["label"].value_counts().sort_index().to_dict() == {0: 645, 1: 1211, 2: 858,
                                                                    3: 222, 4: 69}
    assert len(letor.features) == 300
    assert set(test["qid"]).isdisjoint(set(train["qid"]))


def test_letor_groups_follow_the_query_file(letor, shared_data: Path) -> None:
    sizes = np.loadtxt(shared_data / "lightgbm_lambdarank" / "rank.test.query", dtype=int)
    test = letor.test
    assert test.groupby("qid", sort=False).size().to_numpy().tolist() == sizes.tolist()
    assert not test.duplicated(["qid", "docid"]).any()
    # qrels: every test row, judged
    assert len(letor.qrels) == 768
    assert letor.qrels["label"].tolist() == test["label"].tolist()
    values = letor.docs[list(letor.features)].to_numpy()
    assert values.min() == 0.0 and values.max() <= 1.0


# --------------------------------------------------------------------------------------
# TREC: CAsT 2021 qrels with the BM25 baseline run


@pytest.fixture(scope="module")
def cast(shared_data: Path):
    d = shared_data / "trec_cast_2021"
    return load_dataset("trec", name="cast", qrels_path=str(d / "trec-cast-qrels-docs.2021.qrel"),
                        run_path=str(d / "org_manual_bm25.run"))


def test_trec_keeps_the_judged_queries(cast, shared_data: Path) -> None:
    assert len(cast.qrels) == 19334
    assert cast.qrels["qid"].nunique() == 158
    assert cast.test["qid"].nunique() == 158
    assert set(cast.test["qid"]) == set(cast.qrels["qid"])
    assert cast.qrels["label"].value_counts().sort_index().to_dict() == {
        0: 13829, 1: 2072, 2: 1710, 3: 1007, 4: 716}
    run = pd.read_csv(shared_data / "trec_cast_2021" / "org_manual_bm25.run", sep=r"\s+",
                      header=None, names=["qid", "q0", "docid", "rank", "score", "tag"],
                      dtype={"qid": str, "docid": str})
    assert run["qid"].nunique() == 239
    judged = run[run["qid"].isin(set(cast.qrels["qid"]))]
    assert len(cast.test) == len(judged)
    assert cast.features == ("run_score",)


def _trec_eval_all(path: Path) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all" and re.fullmatch(r"[0-9.]+", parts[2]):
            out[parts[0]] = float(parts[2])
    return out


def test_cast2021_experiment_matches_trec_eval(
        tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch,
        copy_empty_store: Callable[[Path], str],
        study_here: Callable[[list[str], Path], Any]) -> None:
    # in this process: the numbers it logs are under test, not the process
    monkeypatch.setenv("HARNESS_SHARED_DATA", str(shared_data))
    uri = copy_empty_store(tmp_path)
    study_here(["experiment=cast2021", f"tracking.uri={uri}",
                f"tracking.pending_dir={tmp_path / 'pending'}", f"cache_dir={tmp_path / 'cache'}",
                f"tracking.artifact_root={tmp_path / 'artifacts'}", "tracking.figures=false"],
               tmp_path / "out")
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("cast2021")
    assert exp is not None
    rankers = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])
               if r.data.tags.get("harness.role") == "ranker"}
    assert set(rankers) == {"bm25", "ance", "rrf"}  # rrf: their fusion (tests/test_fusion.py)
    variants = {"ndcg": Metric("ndcg", gain="linear", ties="docid", ideal="judged"),
                "ndcg_cut_5": Metric("ndcg", k=5, gain="linear", ties="docid"),
                "ndcg_cut_10": Metric("ndcg", k=10, gain="linear", ties="docid"),
                "ndcg_cut_20": Metric("ndcg", k=20, gain="linear", ties="docid"),
                "map": parse_metric("AP(ties=docid)"),
                "recip_rank": parse_metric("RR(ties=docid)"),
                "P_5": parse_metric("P@5(ties=docid)")}
    for run_name, expected_file in (("bm25", "expected.org_manual_bm25.all_trec.q.txt"),
                                    ("ance", "expected.org_manual_ance.all_trec.q.txt")):
        reference = _trec_eval_all(shared_data / "trec_cast_2021" / expected_file)
        assert reference["num_q"] == 158
        logged = rankers[run_name].data.metrics
        for measure, metric in variants.items():
            value = logged[metric.key]
            assert abs(value - reference[measure]) <= 5e-5 + 1e-12, (run_name, measure, value,
                                                                    reference[measure])
            assert logged[f"stats.{metric.key}.n_queries"] == 158
    # the README's summary table, as a second source
    assert round(rankers["bm25"].data.metrics[variants["ndcg"].key], 4) == 0.3901
    assert round(rankers["ance"].data.metrics[variants["ndcg"].key], 4) == 0.4716


# --------------------------------------------------------------------------------------
# the content digest


@pytest.fixture(scope="module")
def big_synthetic():
    ds = load_dataset("synthetic", name="big", n_queries=400, n_train_queries=400)
    assert len(ds.docs) > 10_000 and len(ds.qrels) > 10_000
    return ds


def test_same_data_same_digest(big_synthetic) -> None:
    again = load_dataset("synthetic", name="big", n_queries=400, n_train_queries=400)
    assert again.digest == big_synthetic.digest
    assert len(big_synthetic.digest) == 64 and int(big_synthetic.digest, 16) >= 0
    assert content_digest(big_synthetic.docs.copy(), big_synthetic.qrels.copy()) == \
        big_synthetic.digest
    other_seed = load_dataset("synthetic", name="big", n_queries=400, n_train_queries=400,
                              seed=1)
    assert other_seed.digest != big_synthetic.digest


def test_one_label_in_the_last_row_changes_the_digest(big_synthetic, tmp_path: Path) -> None:
    docs = big_synthetic.docs
    path = tmp_path / "big.parquet"
    docs.to_parquet(path, index=False)
    kw = {"name": "big", "split": "split", "features": list(big_synthetic.features)}
    first = load_dataset("table", path=str(path), **kw)
    assert load_dataset("table", path=str(path), **kw).digest == first.digest
    for row in (len(docs) - 1, int(np.flatnonzero(docs["split"] == "test")[-1])):
        assert row > 10_000
        changed = docs.copy()
        changed.loc[row, "label"] = (int(changed.loc[row, "label"]) + 1) % 5
        changed.to_parquet(path, index=False)
        assert load_dataset("table", path=str(path), **kw).digest != first.digest, row
    # and directly on the frames
    changed = docs.copy()
    changed.loc[len(docs) - 1, "label"] = (int(changed.loc[len(docs) - 1, "label"]) + 1) % 5
    assert content_digest(changed, big_synthetic.qrels) != big_synthetic.digest


# --------------------------------------------------------------------------------------
# tables: parquet and CSV, renamed columns, clear errors


@pytest.fixture
def raw_table() -> pd.DataFrame:
    return pd.DataFrame({"query": ["q1", "q1", "q1", "q2", "q2"],
                         "doc": ["a", "b", "c", "a", "d"],
                         "grade": [2, 0, 1, 0, 3],
                         "bm25": [1.5, 0.25, 0.75, 2.0, 1.0],
                         "length": [10, 20, 30, 40, 50],
                         "note": ["x", "y", "z", "u", "v"]})


def _write(table: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        table.to_csv(path, index=False)
    else:
        table.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_table_reads_renamed_columns(suffix: str, raw_table: pd.DataFrame,
                                     tmp_path: Path) -> None:
    path = _write(raw_table, tmp_path / f"t{suffix}")
    ds = load_dataset("table", name="t", path=str(path), qid="query", docid="doc",
                      label="grade")
    assert ds.kind == "table" and ds.source == str(path.resolve())
    assert list(ds.docs.columns) == ["qid", "docid", "split", "label", "bm25", "length"]
    assert ds.features == ("bm25", "length")  # numeric columns only; 'note' is text
    assert ds.docs["qid"].tolist() == raw_table["query"].tolist()
    assert ds.docs["docid"].tolist() == raw_table["doc"].tolist()
    assert ds.docs["label"].tolist() == raw_table["grade"].tolist()
    assert (ds.docs["split"] == "test").all()
    assert ds.qrels[["qid", "docid", "label"]].values.tolist() == \
        raw_table[["query", "doc", "grade"]].values.tolist()


def test_parquet_and_csv_of_the_same_table_have_the_same_digest(raw_table: pd.DataFrame,
                                                               tmp_path: Path) -> None:
    raw_table.to_parquet(tmp_path / "t.parquet", index=False)
    raw_table.to_csv(tmp_path / "t.csv", index=False)
    kw = {"name": "t", "qid": "query", "docid": "doc", "label": "grade"}
    a = load_dataset("table", path=str(tmp_path / "t.parquet"), **kw)
    b = load_dataset("table", path=str(tmp_path / "t.csv"), **kw)
    assert a.digest == b.digest


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_table_missing_column_is_named(suffix: str, raw_table: pd.DataFrame,
                                       tmp_path: Path) -> None:
    path = _write(raw_table, tmp_path / f"t{suffix}")
    with pytest.raises(InputError, match="relevance") as info:
        load_dataset("table", name="t", path=str(path), qid="query", docid="doc",
                     label="relevance")
    assert info.value.column == "relevance"
    assert "grade" in str(info.value)  # the message lists what the table has
    with pytest.raises(InputError, match="qid") as info:
        load_dataset("table", name="t", path=str(path), docid="doc", label="grade")
    assert info.value.column == "qid"
    with pytest.raises(InputError, match="clicks") as info:
        load_dataset("table", name="t", path=str(path), qid="query", docid="doc",
                     label="grade", features=["bm25", "clicks"])
    assert info.value.column == "clicks"


def test_table_missing_file_and_bad_suffix(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_dataset("table", name="t", path=str(tmp_path / "absent.parquet"))
    bad = tmp_path / "t.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match=r"expected \.parquet, \.csv or \.tsv"):
        load_dataset("table", name="t", path=str(bad))
    with pytest.raises(InputError, match="unknown dataset kind 'nope'"):
        load_dataset("nope")


# --------------------------------------------------------------------------------------
# file encodings and mismatched files (issue 12: silently wrong numbers from files)

_RUN = ["q1 Q0 d1 1 3.0 r", "q1 Q0 d2 2 2.0 r", "q1 Q0 d3 3 1.0 r",
        "q2 Q0 d1 1 3.0 r", "q2 Q0 d4 2 2.0 r"]
_QRELS = ["q1 0 d1 0", "q1 0 d2 0", "q1 0 d3 2", "q2 0 d1 1", "q2 0 d4 3"]


def _pytrec_ndcg10(run_lines: list[str], qrels_lines: list[str]) -> dict[str, float]:
    """nDCG@10 per query from pytrec_eval, on dicts parsed here from the plain text."""
    import pytrec_eval

    run: dict[str, dict[str, float]] = {}
    for line in run_lines:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_lines:
        q, _, d, rel = line.split()
        qrels.setdefault(q, {})[d] = int(rel)
    got = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return {q: v["ndcg_cut_10"] for q, v in got.items()}


def test_a_byte_order_mark_does_not_become_part_of_the_first_qid(tmp_path: Path) -> None:
    from harness import evaluate
    from harness.data import read_qrels, read_run

    bom = b"\xef\xbb\xbf"
    run_path, qrels_path = tmp_path / "bom.run", tmp_path / "bom.qrels"
    run_path.write_bytes(bom + "\n".join(_RUN).encode() + b"\n")
    qrels_path.write_bytes(bom + "\n".join(_QRELS).encode() + b"\n")
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    assert run["qid"].iloc[0] == "q1" and qrels["qid"].iloc[0] == "q1"
    got = evaluate(run, qrels, metrics=[Metric("ndcg", k=10, convention="trec_eval")])
    expected = _pytrec_ndcg10(_RUN, _QRELS)
    assert sorted(got.index) == sorted(expected) == ["q1", "q2"]
    # q1 puts its only relevant document third: 3/log2(4) / 3 = 0.5, worked by hand too
    assert expected["q1"] == pytest.approx(0.5, abs=1e-12)
    for qid, value in expected.items():
        assert got.loc[qid].iloc[-1] == pytest.approx(value, abs=1e-12)


def test_latin1_bytes_in_qrels_name_the_file_and_line(tmp_path: Path) -> None:
    from harness.data import read_qrels

    path = tmp_path / "latin1.qrels"
    path.write_bytes(b"q1 0 d1 1\nq1 0 caf\xe9 2\n")
    with pytest.raises(InputError, match=r"qrels file .*latin1\.qrels is not UTF-8: line 2, "
                                         r"byte 9 is b'\\xe9'") as info:
        read_qrels(path)
    assert info.value.table == "latin1.qrels" and info.value.row == 2


def test_a_run_and_qrels_sharing_few_queries_warn(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "r.run").write_text("\n".join(_RUN + ["x7 Q0 d1 1 1.0 r", "x8 Q0 d1 1 1.0 r",
                                                      "x9 Q0 d1 1 1.0 r"]) + "\n")
    (tmp_path / "q.qrels").write_text("\n".join(_QRELS[:3]) + "\n")  # judges q1 only
    with caplog.at_level("WARNING", logger="harness"):
        load_dataset("trec", name="t", qrels_path=str(tmp_path / "q.qrels"),
                     run_path=str(tmp_path / "r.run"))
    assert "r.run and q.qrels share few query ids: 1 of the run's 5 queries are judged " \
           "(1 queries in the qrels); e.g. run-only ['q2', 'x7', 'x8']" in caplog.text
    caplog.clear()
    (tmp_path / "q.qrels").write_text("\n".join(_QRELS) + "\n")  # 2 of 5: still below half
    (tmp_path / "r.run").write_text("\n".join(_RUN) + "\n")  # 2 of 2 judged
    with caplog.at_level("WARNING", logger="harness"):
        load_dataset("trec", name="t", qrels_path=str(tmp_path / "q.qrels"),
                     run_path=str(tmp_path / "r.run"))
    assert "share few query ids" not in caplog.text


@pytest.mark.parametrize("explicit", [False, True])
def test_a_non_number_in_a_feature_column_names_column_and_row(
        explicit: bool, raw_table: pd.DataFrame, tmp_path: Path) -> None:
    table = raw_table.astype({"bm25": object})
    table.loc[3, "bm25"] = "high"
    path = _write(table, tmp_path / "t.csv")
    kw = {"features": ["bm25", "length"]} if explicit else {}
    with pytest.raises(InputError, match=r"feature column 'bm25' .*holds the non-number "
                                         r"'high'.*qid 'q2', row 3") as info:
        load_dataset("table", name="t", path=str(path), qid="query", docid="doc",
                     label="grade", **kw)
    assert info.value.column == "bm25" and info.value.row == 3


def test_a_run_file_ranker_on_other_queries_warns(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    from harness.rankers import RankerSpec, score

    (tmp_path / "r.run").write_text("\n".join(_RUN) + "\n")
    (tmp_path / "q.qrels").write_text("\n".join(_QRELS) + "\n")
    ds = load_dataset("trec", name="t", qrels_path=str(tmp_path / "q.qrels"),
                      run_path=str(tmp_path / "r.run"))
    (tmp_path / "other.run").write_text("Q1 Q0 d1 1 1.0 r\nQ2 Q0 d1 1 1.0 r\nq1 Q0 d1 1 1.0 r\n")
    with caplog.at_level("WARNING", logger="harness"):
        run = score(RankerSpec("o", "run_file", {"path": str(tmp_path / "other.run")}), ds).run
    assert "other.run and the judgments of dataset 't' share few query ids: 1 of the run's 3 " \
           "queries are judged (2 queries in the qrels); e.g. run-only ['Q1', 'Q2']" \
           in caplog.text
    assert run["qid"].tolist() == ["q1"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                        max_size=12), min_size=1, max_size=30), st.integers(0, 3))
def test_text_columns_digest_the_bytes_of_their_joined_values(values: list[str],
                                                               cut: int) -> None:
    """The digest reads Arrow text columns from their buffers: the same bytes as joining
    the Python strings with \\x1f, for any text, empty strings and sliced columns."""
    from harness.datasets.dataset import _column_bytes

    for dtype in ("str", "string"):
        series = pd.Series(values, dtype=dtype).iloc[min(cut, len(values) - 1):]
        assert _column_bytes(series) == "\x1f".join(series.tolist()).encode("utf-8")
