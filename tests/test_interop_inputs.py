"""Runs and qrels as the peers hold them (issue 39): a ranx ``Qrels``/``Run``, pytrec_eval's
dicts of dicts, ir_measures' records (and iterators of them) and PyTerrier's frames give
:func:`harness.evaluate` and :func:`harness.compare` the same numbers, bit for bit, as the
``qid, docid, score`` DataFrame path, on TREC CAsT 2021. Each form is read by its own library
from the shared files, never built by the code under test."""

from __future__ import annotations

import math
from pathlib import Path

import ir_measures
import pandas as pd
import pyterrier as pt
import pytest
import pytrec_eval
from ranx import Qrels, Run

import harness
from harness.data.trec import read_qrels, read_run
from harness.errors import InputError

METRICS = ["nDCG@10", "trec_eval:ndcg_cut.10", "trec_eval:map", "P@5", "RR",
           "nDCG@10(gain=linear)"]


@pytest.fixture(scope="module")
def cast(shared_data: Path) -> dict[str, Path]:
    folder = shared_data / "trec_cast_2021"
    return {"qrels": folder / "trec-cast-qrels-docs.2021.qrel",
            "bm25": folder / "org_manual_bm25.run", "ance": folder / "org_manual_ance.run"}


@pytest.fixture(scope="module")
def frames(cast: dict[str, Path]) -> dict[str, pd.DataFrame]:
    """The DataFrame path: ``qid, docid, score`` and ``qid, docid, label``."""
    return {"qrels": read_qrels(cast["qrels"]),
            **{k: read_run(cast[k])[["qid", "docid", "score"]] for k in ("bm25", "ance")}}


@pytest.fixture(scope="module")
def reference(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return harness.evaluate(frames["bm25"], frames["qrels"], METRICS)


def _pytrec(path: Path, kind: str) -> dict:
    with open(path) as handle:
        return pytrec_eval.parse_qrel(handle) if kind == "qrels" else pytrec_eval.parse_run(
            handle)


@pytest.fixture(scope="module")
def ranx_cast(cast: dict[str, Path]) -> dict[str, object]:
    """ranx's objects, read once: ranx compiles its numba code on first use (~20 s a
    process), so every test of this module shares them."""
    return {"qrels": Qrels.from_file(str(cast["qrels"]), kind="trec"),
            **{k: Run.from_file(str(cast[k]), kind="trec") for k in ("bm25", "ance")}}


#: form -> how its library reads (qrels path, run path); ranx's are read once, by ranx_cast
FORMS = {
    "pytrec_eval": lambda q, r: (_pytrec(q, "qrels"), _pytrec(r, "run")),
    "ir_measures_iterators": lambda q, r: (ir_measures.read_trec_qrels(str(q)),
                                           ir_measures.read_trec_run(str(r))),
    "ir_measures_lists": lambda q, r: (list(ir_measures.read_trec_qrels(str(q))),
                                       list(ir_measures.read_trec_run(str(r)))),
    "pyterrier": lambda q, r: (pt.io.read_qrels(str(q)), pt.io.read_results(str(r))),
}


def _read(form: str, cast: dict[str, Path], ranx_cast: dict[str, object], run: str
          ) -> tuple[object, object]:
    if form == "ranx":
        return ranx_cast["qrels"], ranx_cast[run]
    return FORMS[form](cast["qrels"], cast[run])


@pytest.mark.parametrize("form", ["ranx", *sorted(FORMS)])
def test_evaluate_reads_each_form_bit_for_bit(form: str, cast: dict[str, Path],
                                              ranx_cast: dict[str, object],
                                              reference: pd.DataFrame) -> None:
    qrels, run = _read(form, cast, ranx_cast, "bm25")
    out = harness.evaluate(run, qrels, METRICS)
    pd.testing.assert_frame_equal(out, reference, check_exact=True, check_index_type=False)
    assert len(out) > 40 and out.attrs == reference.attrs


def test_a_pyterrier_frame_keeps_its_docno_not_its_internal_docid(
        frames: dict[str, pd.DataFrame], reference: pd.DataFrame) -> None:
    """In PyTerrier's result frames ``docid`` is the index's number, ``docno`` the id."""
    run = frames["bm25"].rename(columns={"docid": "docno"}).assign(docid=0, rank=1)
    out = harness.evaluate(run, frames["qrels"].rename(columns={"docid": "docno"}), METRICS)
    pd.testing.assert_frame_equal(out, reference, check_exact=True)


@pytest.mark.parametrize("form", ["ranx", "pytrec_eval", "ir_measures_lists", "pyterrier"])
def test_compare_reads_each_form_bit_for_bit(form: str, cast: dict[str, Path],
                                             ranx_cast: dict[str, object],
                                             frames: dict[str, pd.DataFrame]) -> None:
    metrics = ["nDCG@10", "RR"]
    ref = harness.compare(frames["qrels"], {"bm25": frames["bm25"], "ance": frames["ance"]},
                          metrics, resamples=50)
    qrels, bm25 = _read(form, cast, ranx_cast, "bm25")
    ance = _read(form, cast, ranx_cast, "ance")[1]
    out = harness.compare(qrels, {"bm25": bm25, "ance": ance}, metrics, resamples=50)
    pd.testing.assert_frame_equal(out.table, ref.table, check_exact=True)


def test_per_query_dict_holds_the_table_as_a_run_dict(reference: pd.DataFrame) -> None:
    """``{qid: {measure: value}}``: str keys, float values, what ``ranx.Run`` and
    pytrec_eval's results hold (ranx's constructor is not called here: its numba code
    compiles for ~9 s on first use)."""
    as_dict = harness.per_query_dict(reference)
    assert list(as_dict) == list(map(str, reference.index))
    for qid, row in reference.iterrows():
        assert all(isinstance(v, float) for v in as_dict[qid].values())
        for name in METRICS:
            display = harness.parse_metric(name).display_name
            assert as_dict[qid][display] == row[display]


def test_to_trec_writes_trec_eval_lines_and_run_files(tmp_path: Path,
                                                      ranx_cast: dict[str, object],
                                                      reference: pd.DataFrame,
                                                      frames: dict[str, pd.DataFrame]) -> None:
    text = harness.to_trec(reference[["P@5"]], tmp_path / "q.txt")
    lines = [ln.split("\t") for ln in (tmp_path / "q.txt").read_text().splitlines()]
    assert text == (tmp_path / "q.txt").read_text() and len(lines) == len(reference) + 1
    for (name, qid, value), (ref_qid, ref_value) in zip(lines, reference["P@5"].items()):
        assert (name.strip(), qid, value) == ("P@5", ref_qid, f"{ref_value:6.4f}")
    assert lines[-1][1:] == ["all", f"{reference['P@5'].mean():6.4f}"]
    # a ranx Run written as a TREC run file, read back: the same evaluation
    harness.to_trec(ranx_cast["bm25"], tmp_path / "bm25.run")
    back = harness.evaluate(read_run(tmp_path / "bm25.run")[["qid", "docid", "score"]],
                            frames["qrels"], METRICS)
    pd.testing.assert_frame_equal(back, reference, check_exact=True)


@pytest.mark.parametrize("value, says", [
    ([1, 2, 3], "item 0 is int"),
    ({"q1": [("a", 1.0)]}, "query 'q1' maps to list"),
    ({}, "run is empty"),
])
def test_a_form_it_cannot_read_is_named(value: object, says: str) -> None:
    with pytest.raises(InputError, match=says):
        harness.evaluate(value, {"q1": {"a": 1}}, ["RR"])


def test_a_nan_free_dict_run_keeps_python_floats_exact() -> None:
    run = {"q1": {"a": 0.1 + 0.2, "b": 0.3}}  # 0.30000000000000004 ranks above 0.3
    out = harness.evaluate(run, {"q1": {"b": 1}}, ["RR"])
    assert out.loc["q1", "RR"] == 0.5 and not math.isnan(out.loc["q1", "RR"])
