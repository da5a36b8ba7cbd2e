"""One vocabulary: every trec_eval name ``harness eval -m`` reads, the library reads
(``harness.parse_metric``), with and without the ``trec_eval:`` prefix, as the same
definition; and every name the library reads, ``harness eval`` takes after the runs.

The table is walked both ways: each family of ``trec_eval_measures.FAMILIES`` with its
default lines and one parametrised line, and each name the registry and the other tools'
tables write.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import harness
from harness.commands.base import run_command
from harness.commands.eval import main
from harness.errors import MetricDefinitionError
from harness.metrics.vocabulary.registry import lookup
from harness.metrics.vocabulary.tool_names.trec_eval_measures import FAMILIES, NICKNAMES, expand
from tests.shared import shared_data_dir

TE = shared_data_dir() / "trec_eval_test"
QRELS, RUN = str(TE / "qrels.test"), str(TE / "results.test")

#: a parametrised ``-m`` line per family that takes parameters
WITH_PARAMS = {"P": "P.7", "recall": "recall.3", "ndcg_cut": "ndcg_cut.23",
               "map_cut": "map_cut.4", "relative_P": "relative_P.6", "success": "success.2",
               "unj": "unj.3", "iprec_at_recall": "iprec_at_recall..25",
               "Rprec_mult": "Rprec_mult.0.35", "utility": "utility.2,-1,0,0",
               "11pt_avg": "11pt_avg..25,.5,.75", "set_F": "set_F.0.5",
               "G": "G.1=2,2=5", "dcg": "dcg.1=3", "ndcg": "ndcg.1=3,2=9,4=4.5",
               "ndcg_rel": "ndcg_rel.1=2", "Rndcg": "Rndcg.1=2", "rbp": "rbp.p=0.95",
               "rbp_resid": "rbp_resid.p=0.8", "relstring": "relstring.20"}
#: lines that are not a number per query of a run and its qrels, and why
NOT_METRICS = {"runid": "run's name", "relstring": "text"}


def _lines() -> list[tuple[str, str]]:
    """(``-m`` spec, printed name) of every line of every family: its defaults and, where
    it takes parameters, one parametrised spec."""
    out = []
    for name in FAMILIES:
        for spec in (name, WITH_PARAMS.get(name)):
            if spec is None:
                continue
            _, _, params = spec.partition(".")
            for col in expand(name, params or None):
                out.append((spec, col.name))
    return out


LINES = _lines()


def _printed(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, str]:
    code = run_command(main, list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return {ln.split("\t")[0].strip(): ln.split("\t")[2] for ln in out.splitlines()
            if ln.split("\t")[1] == "all"}


def test_every_family_is_walked() -> None:
    assert {FAMILIES[c].name for c in FAMILIES} == {s.partition(".")[0] for s, _ in LINES}
    assert len(LINES) > 150


@pytest.mark.parametrize("spec, printed", LINES, ids=[p for _, p in LINES])
def test_the_library_reads_every_line_the_command_prints(spec: str, printed: str) -> None:
    """With the prefix, trec_eval's definition; without it too, unless the registry writes
    that name itself (``map``, ``ndcg``, ``utility``): then the harness's own measure with
    its defaults, as documented in docs/measures.md."""
    fam = FAMILIES[spec.partition(".")[0]]
    if fam.name in NOT_METRICS or fam.source != "qrels":
        for text in (printed, f"trec_eval:{printed}"):
            with pytest.raises(MetricDefinitionError, match="trec_eval measure"):
                harness.parse_metric(text)
        return
    metric = harness.parse_metric(f"trec_eval:{printed}")
    assert metric.convention == "trec_eval"
    assert harness.parse_metric(metric.display_name) == metric
    bare = harness.parse_metric(printed)
    own = lookup(printed)
    if own is not None and printed != "recip_rank":
        assert bare == harness.Metric(own.name)
    else:
        assert bare == metric
    # the -m spelling of that one line reads to the same definition
    if len(expand(fam.name, spec.partition(".")[2] or None)) == 1:
        assert harness.parse_metric(f"trec_eval:{spec}") == metric


@pytest.mark.parametrize("spec", sorted({s for s, _ in LINES if s.partition(".")[0] in (
    "P", "ndcg_cut", "map_cut", "gm_map", "11pt_avg", "infAP", "iprec_at_recall", "utility",
    "ndcg", "Rprec_mult", "set_F", "rbp", "unj", "bpref", "recip_rank")}))
def test_the_same_value_by_either_door(capsys: pytest.CaptureFixture[str], spec: str) -> None:
    """``-m SPEC`` and the printed names given after the runs with the prefix (read by
    parse_metric, printed as written) print the same summary values on trec_eval's own test
    files."""
    by_m = _printed(capsys, "-m", spec, QRELS, RUN)
    names = [n for n in by_m if n not in ("runid", "num_q")]
    by_name = _printed(capsys, QRELS, RUN, *[f"trec_eval:{n}" for n in names])
    assert {n: by_name[f"trec_eval:{n}"] for n in names} == {n: by_m[n] for n in names}


def test_the_command_takes_every_name_the_library_reads(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """The other way round: the registry's names and other tools' spellings, after the runs."""
    names = ["nDCG@10", "ndcg@10(gain=linear)", "map", "P@5", "RR", "ERR@20", "Bpref",
             "GMAP", "IPrec@0.5", "ir_measures:nDCG@10", "AP(rel=2)@10",
             "ndcg_burges@10", "hit_rate@10", "trec_eval:ndcg", "trec_eval9:P.5",
             "gm_map", "11pt_avg", "trec_eval:infAP", "num_q", "P_5", "ndcg_cut.10",
             "infAP(ties=docid)"]
    for name in names:
        harness.parse_metric(name)
    printed = _printed(capsys, QRELS, RUN, *names)
    assert set(names) <= set(printed)


def test_sets_and_families_of_several_lines_are_refused_with_what_to_write() -> None:
    for nickname in NICKNAMES:
        with pytest.raises(MetricDefinitionError, match="a set of measures"):
            harness.parse_metric(f"trec_eval:{nickname}")
    with pytest.raises(MetricDefinitionError, match=r"prints 9 lines .*P\.5 or P_5"):
        harness.parse_metric("trec_eval:P")
    with pytest.raises(MetricDefinitionError, match="-R prefs"):
        harness.parse_metric("prefs_simp")
    with pytest.raises(MetricDefinitionError, match="-R qrels_jg"):
        harness.parse_metric("trec_eval:map_avgjg")


def test_the_issue_names_are_read() -> None:
    """The four names the library refused before (issue 35)."""
    assert harness.parse_metric("gm_map") == harness.Metric("gm_ap", convention="trec_eval")
    assert harness.parse_metric("11pt_avg") == harness.Metric("iprec_avg",
                                                              convention="trec_eval")
    assert harness.parse_metric("trec_eval:infAP") == harness.Metric("infap",
                                                                     convention="trec_eval")
    assert harness.parse_metric("trec_eval9:11pt_avg").recall_cutoff == "plus_0.9"


def test_paths_are_not_names(tmp_path: Path) -> None:
    with pytest.raises(MetricDefinitionError):
        harness.parse_metric(str(tmp_path / "run.txt"))
