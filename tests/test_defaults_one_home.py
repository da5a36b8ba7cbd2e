"""One home per default (issue 38): every command-line option whose value the library also
holds as a default (a keyword default, a field of the config schema or of an options
dataclass) has that same default, and its help shows it.

The parsers come from the command registry (every command but the study, which is Hydra's)
and the example model's script; every option with a default is either paired below with
the library defaults it must equal or listed as the command's own, so a new option, or an
edit of one side only, fails here.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
from typing import Any

import pytest

from harness.app.config import ExplainConfig, TrackingConfig
from harness.commands.dispatch import COMMANDS, STUDY
from harness.compare.api import compare
from harness.compare.core import build_comparison
from harness.compare.file_record import record_file_comparison
from harness.compare.record import log_comparison
from harness.compare.report import report_dir
from harness.compare.result import Settings
from harness.compare.verdicts import VerdictSettings, verdict_settings
from harness.compare.workflow import SweepOptions
from harness.datasets.parquet_run import write_scored_run
from harness.engines.clustering import cluster_parquet
from harness.explain.shapley import explain_difference
from harness.metrics.trec_eval.trec_eval_arrays import evaluate_arrays
from harness.metrics.trec_eval.trec_eval_compute import evaluate_trec
from harness.metrics.unjudged.judgment_interval import judgment_interval
from harness.metrics.vocabulary.tool_names.trec_eval_measures import select
from harness.tracking.example_model import register_example
from harness.tracking.store import configure_requests

EXAMPLE_MODEL = "harness.tracking.example_model"


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, by command name (the registry's), and the example model's."""
    out = {name: importlib.import_module(c.module).parser()
           for name, c in COMMANDS.items() if name != STUDY}
    out[EXAMPLE_MODEL] = importlib.import_module(EXAMPLE_MODEL).parser()
    return out


def _default(owner: Any, name: str) -> Any:
    """``owner``'s default for ``name``: a dataclass field's, or a parameter's."""
    if dataclasses.is_dataclass(owner):
        return {f.name: f.default for f in dataclasses.fields(owner)}[name]
    return inspect.signature(owner).parameters[name].default


#: (command, option dest) -> the library defaults it hands its value to or restates
COUNTERPARTS: dict[tuple[str, str], list[tuple[Any, str]]] = {
    ("compare", "test"): [(SweepOptions, "test"), (compare, "test"), (Settings, "test"),
                          (build_comparison, "test")],
    ("compare", "correction"): [(SweepOptions, "correction"), (compare, "correction"),
                                (Settings, "correction"), (build_comparison, "correction")],
    ("compare", "alpha"): [(SweepOptions, "alpha"), (compare, "alpha"), (Settings, "alpha"),
                           (build_comparison, "alpha"), (VerdictSettings, "alpha")],
    ("compare", "seed"): [(SweepOptions, "seed"), (compare, "seed"), (Settings, "seed"),
                          (build_comparison, "seed")],
    ("compare", "resamples"): [(SweepOptions, "resamples"), (compare, "resamples"),
                               (Settings, "resamples"), (build_comparison, "resamples")],
    ("compare", "family"): [(SweepOptions, "family"), (Settings, "family"),
                            (build_comparison, "family")],
    ("compare", "max_queries"): [(SweepOptions, "max_queries"), (Settings, "max_queries"),
                                 (build_comparison, "max_queries")],
    ("compare", "verdict_test"): [(SweepOptions, "verdict_test"), (verdict_settings, "test"),
                                  (VerdictSettings, "test")],
    ("compare", "out_dir"): [(report_dir, "root")],
    ("compare", "pending_dir"): [(record_file_comparison, "pending_dir"),
                                 (log_comparison, "pending_dir"),
                                 (TrackingConfig, "pending_dir")],
    ("compare", "artifact_root"): [(record_file_comparison, "artifact_root"),
                                   (log_comparison, "artifact_root"),
                                   (TrackingConfig, "artifact_root")],
    ("sync", "pending_dir"): [(TrackingConfig, "pending_dir")],
    ("sync", "timeout"): [(configure_requests, "timeout_s"), (TrackingConfig, "timeout_s")],
    ("cluster", "batch_rows"): [(cluster_parquet, "batch_rows")],
    ("scored-run", "seed"): [(write_scored_run, "seed")],
    ("explain", "metric"): [(explain_difference, "metric"), (ExplainConfig, "metric")],
    ("explain", "a"): [(explain_difference, "a")],
    ("explain", "b"): [(explain_difference, "b")],
    ("eval", "level_for_rel"): [(evaluate_arrays, "level"), (evaluate_trec, "level")],
    ("eval", "Number_docs_in_coll"): [(evaluate_arrays, "collection_size"),
                                      (evaluate_trec, "collection_size")],
    ("eval", "compat"): [(select, "version")],  # the option is text: "10"
    ("judgments", "max_labelings"): [(judgment_interval, "max_labelings")],
    ("judgments", "max_rows"): [(judgment_interval, "max_rows")],
    (EXAMPLE_MODEL, "artifact_root"): [(register_example, "artifact_root"),
                                      (TrackingConfig, "artifact_root")],
    (EXAMPLE_MODEL, "name"): [(register_example, "name")],
}

#: (command, option dest) -> why its default is the command's own
OWN: dict[tuple[str, str], str] = {
    ("compare", "format"): "how the command prints; the library returns a Comparison",
    ("eval", "Rel_info_format"): "trec_eval's -R; the reader takes the format it is given",
    ("eval", "Results_format"): "trec_eval's -T, one choice only",
    ("eval", "format"): "how the command prints (the choices are the renderer's FORMATS)",
    ("scored-run", "queries"): "the library's n_queries is required",
}


def _defaulted(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The options of ``parser`` that default to a value (not None, False or empty; 0 is
    a value)."""
    return {a.dest: a.default for a in parser._actions
            if not any(a.default is v for v in (None, False, argparse.SUPPRESS))
            and a.default != [] and a.dest not in ("help", "version")}


PARSERS = _parsers()


def test_every_command_of_the_registry_has_a_parser() -> None:
    assert set(PARSERS) == {*COMMANDS, EXAMPLE_MODEL} - {STUDY}


def test_every_defaulted_option_is_paired_or_the_commands_own() -> None:
    found = {(command, dest) for command, p in PARSERS.items() for dest in _defaulted(p)}
    assert found - COUNTERPARTS.keys() - OWN.keys() == set(), \
        "a new option with a default: pair it with the library's in COUNTERPARTS, or OWN"
    assert (COUNTERPARTS.keys() | OWN.keys()) - found == set(), "a stale entry"
    assert not COUNTERPARTS.keys() & OWN.keys()


@pytest.mark.parametrize("key", sorted(COUNTERPARTS), ids="-".join)
def test_an_options_default_is_the_librarys(key: tuple[str, str]) -> None:
    command, dest = key
    option = PARSERS[command].get_default(dest)
    for owner, name in COUNTERPARTS[key]:
        library = _default(owner, name)
        assert library is not inspect.Parameter.empty and library is not dataclasses.MISSING
        expected = str(library) if isinstance(option, str) and command == "eval" else library
        assert option == expected, f"{command} --{dest}: {option!r}, but " \
                                   f"{getattr(owner, '__qualname__', owner)}.{name}: {library!r}"


@pytest.mark.parametrize("key", sorted(COUNTERPARTS), ids="-".join)
def test_the_help_shows_the_default(key: tuple[str, str]) -> None:
    command, dest = key
    p = PARSERS[command]
    action = next(a for a in p._actions if a.dest == dest)
    shown = str(action.help) % {**vars(action), "prog": p.prog}  # as argparse expands it
    assert f"{action.default}" in shown.replace(",", ""), shown

