"""Composing the Hydra configs in-process: every option of every group, and bad values.

Each option of each config group under ``conf/`` must compose against the structured
schema and pass :func:`harness.app.study.validate`. Bad values must fail before any data
is read: at compose time (a misspelt key, a value of the wrong type) or in ``validate``
(a value out of range or not among the choices), with a message naming the culprit.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, OmegaConf

import harness.paths
from harness import InputError, Metric, MetricDefinitionError, parse_metric
from harness.app.config import register_configs
from harness.app.study import build_metrics, validate
from harness.datasets import DATASETS
from harness.rankers import RANKERS
from tests.shared import metric_grid_yaml

CONF = Path(harness.paths.PROJECT_ROOT) / "conf"


def _compose(overrides: list[str]) -> DictConfig:
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        return compose("config", overrides=overrides)


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def _yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def _ranker_names(option: str) -> list[str]:
    """Ranker names of a ranker file, read with plain YAML (bundles list others as
    defaults)."""
    data = _yaml(CONF / "ranker" / f"{option}.yaml")
    names = []
    for entry in data.pop("defaults", []):
        if entry != "_self_":
            names += _ranker_names(entry)
    return names + list(data)


def _chain(exc: BaseException) -> str:
    """The messages of an exception and of every exception it was raised from."""
    parts = []
    seen: BaseException | None = exc
    while seen is not None:
        parts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


@pytest.fixture(scope="module")
def table_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("table") / "docs.parquet"
    pd.DataFrame({"qid": ["q1", "q1", "q2", "q2"], "docid": ["a", "b", "a", "c"],
                  "label": [1, 0, 2, 0], "f1": [0.5, 0.1, 0.9, 0.3]}).to_parquet(path)
    return path


# --------------------------------------------------------------------------------------
# every option composes and validates


def test_the_groups_hold_the_documented_options() -> None:
    assert set(_options("dataset")) >= {"synthetic", "lightgbm_sample", "cast2021_bm25",
                                        "table"}
    assert set(_options("ranker")) >= {"baselines", "oracle", "random", "noisy_oracle", "hgb",
                                       "feature", "cast_runs"}
    assert set(_options("metric")) >= {"default", "full_grid", "ndcg10", "trec_eval"}
    assert set(_options("tracking")) == {"default", "off"}
    assert set(_options("engine")) == {"local", "stream", "dask"}
    assert set(_options("experiment")) >= {"cast2021", "lightgbm_sample", "metric_sweep"}


def test_default_config_composes_and_validates() -> None:
    cfg = _compose([])
    metrics, specs, ds = validate(cfg)
    assert ds["kind"] == "synthetic"
    assert {s.name for s in specs} == set(_ranker_names("contenders"))
    assert len(metrics) == 32
    assert cfg.tracking.enabled is True and cfg.check.sklearn == "fail"


@pytest.mark.parametrize("option", _options("dataset"))
def test_every_dataset_option_composes_and_validates(option: str, table_parquet: Path) -> None:
    overrides = [f"dataset={option}"]
    if option in ("table", "parquet_run"):
        overrides.append(f"dataset.path={table_parquet}")
    if option == "table":  # a table's columns are the user's: the feature ranker names one
        overrides.append("dataset.default_feature=f1")
    if option == "parquet_run":  # evaluated in place: its rankers are its score columns
        overrides.append("ranker=scored_columns")
    cfg = _compose(overrides)
    _, _, ds = validate(cfg)
    assert ds["kind"] in DATASETS
    for key in ("test_path", "train_path", "qrels_path", "run_path", "path"):
        if ds.get(key):  # shared-data paths resolve to files that exist
            assert Path(ds[key]).is_absolute() and Path(ds[key]).is_file(), (key, ds[key])


@pytest.mark.parametrize("option", _options("ranker"))
def test_every_ranker_option_composes_and_validates(option: str) -> None:
    cfg = _compose([f"ranker={option}"])
    _, specs, _ = validate(cfg)
    assert {s.name for s in specs} == set(_ranker_names(option))
    assert all(s.kind in RANKERS for s in specs)
    for s in specs:
        if "path" in s.options:
            assert Path(s.options["path"]).is_file(), s


@pytest.mark.parametrize("option", _options("metric"))
def test_every_metric_option_composes_and_validates(option: str) -> None:
    cfg = _compose([f"metric={option}"])
    metrics, _, _ = validate(cfg)
    assert metrics and all(isinstance(m, Metric) for m in metrics)
    assert len({m.key for m in metrics}) == len(metrics)


@pytest.mark.parametrize("option", _options("tracking"))
def test_every_tracking_option_composes_and_validates(option: str) -> None:
    cfg = _compose([f"tracking={option}"])
    validate(cfg)
    assert cfg.tracking.enabled is (option != "off")


@pytest.mark.parametrize("option", _options("experiment"))
def test_every_experiment_composes_and_validates(option: str) -> None:
    cfg = _compose([f"experiment={option}"])
    metrics, specs, ds = validate(cfg)
    assert cfg.study == option
    if option == "cast2021":
        assert ds["kind"] == "trec" and {s.name for s in specs} == {"bm25", "ance", "rrf"}
        assert len(metrics) == 7
    if option == "lightgbm_sample":
        assert ds["kind"] == "letor"
    if option == "metric_sweep":
        assert len(metrics) == 48


def test_table_dataset_validates_with_a_real_parquet(table_parquet: Path) -> None:
    cfg = _compose(["dataset=table", f"dataset.path={table_parquet}", "dataset.name=mine",
                    "dataset.default_feature=f1"])
    _, _, ds = validate(cfg)
    assert ds == {"kind": "table", "name": "mine", "path": str(table_parquet), "qid": "qid",
                  "docid": "docid", "label": "label", "split": None, "features": None}


# --------------------------------------------------------------------------------------
# build_metrics: the product of the axes plus the extras


def _grid(option: str) -> dict[str, Any]:
    return OmegaConf.to_container(_compose([f"metric={option}"]).metric, resolve=True)


def test_full_grid_has_48_variants() -> None:
    metrics = build_metrics(_grid("full_grid"))
    raw = metric_grid_yaml("full_grid")
    expected = {Metric(raw["name"], gain=g, discount=d, k=k, ties=t)
                for g, d, k, t in itertools.product(raw["gain"], raw["discount"], raw["k"],
                                                    raw["ties"])}
    assert len(metrics) == 48 == len(expected)
    assert set(metrics) == expected


def test_default_grid_has_24_variants_plus_8_extras() -> None:
    metrics = build_metrics(_grid("default"))
    raw = metric_grid_yaml("default")
    assert raw["discount"] == ["log2"] and raw["ideal"] == ["judged"]
    product = {Metric(n, gain=g, k=k, ties=t, empty=raw["empty"])
               for n, g, k, t in itertools.product(raw["name"], raw["gain"], raw["k"],
                                                   raw["ties"])}
    extras = {parse_metric(x) for x in raw["extra"]}
    assert len(product) == 24 and len(extras) == 8
    assert len(metrics) == 32
    assert set(metrics) == product | extras
    # the unjudged axes default to today's single treatment: no variant of the product gains a
    # name part; the incompleteness group is AP@10 condensed beside AP@10, bpref and infAP
    assert all(m.unjudged == "nonrelevant" and "unjudged" not in str(m) for m in product)
    assert {str(m) for m in extras if m.unjudged != "nonrelevant"} == {
        "AP@10(unjudged=condensed)"}
    assert {m.name for m in extras} >= {"bpref", "infap"}


def test_one_value_axes_and_list_overrides() -> None:
    assert build_metrics(_grid("ndcg10")) == [Metric("ndcg", k=10)]
    cfg = _compose(["metric=ndcg10", "metric.k=[1,3,null]"])
    metrics, _, _ = validate(cfg)
    assert [m.k for m in metrics] == [1, 3, None]


def test_duplicate_variants_are_kept_once() -> None:
    grid = {"name": "ndcg", "gain": "exp2", "discount": "log2", "k": [10, 10],
            "ties": "average", "ideal": "judged", "extra": ["ndcg@10"]}
    assert build_metrics(grid) == [Metric("ndcg", k=10)]


def test_unjudged_is_an_axis_of_the_grid() -> None:
    # a list sweeps inside one job; a scalar is what each job of -m metric.unjudged=a,b gets
    cfg = _compose(["metric=ndcg10", "metric.unjudged=[nonrelevant,condensed,relevant]"])
    metrics, _, _ = validate(cfg)
    assert metrics == [parse_metric("nDCG@10"), parse_metric("nDCG@10(unjudged=condensed)"),
                       parse_metric("nDCG@10(unjudged=relevant)")]
    metrics, _, _ = validate(_compose(["metric=ndcg10", "metric.unjudged=condensed"]))
    assert [str(m) for m in metrics] == ["nDCG@10(unjudged=condensed)"]


def test_unjudged_grade_varies_only_the_relevant_treatment() -> None:
    cfg = _compose(["metric=ndcg10", "metric.unjudged=[nonrelevant,relevant]",
                    "metric.unjudged_grade=[1,2]"])
    metrics, _, _ = validate(cfg)
    # nonrelevant ignores the grade: one variant, not two
    assert [str(m) for m in metrics] == ["nDCG@10", "nDCG@10(unjudged=relevant,unjudged_grade=1)",
                                         "nDCG@10(unjudged=relevant,unjudged_grade=2)"]


@pytest.mark.parametrize("overrides, match", [
    (["metric.unjudged=unknown"], r"unjudged must be one of .*'unknown'"),
    (["metric.unjudged=relevant", "metric.unjudged_grade=-1"], r"unjudged_grade must be .* -1"),
    (["metric.unjudged=relevant", "metric.max_label=2", "metric.unjudged_grade=3"],
     r"unjudged_grade=3 is above max_label=2"),
])
def test_bad_unjudged_values_fail_in_validate(overrides: list[str], match: str) -> None:
    with pytest.raises(MetricDefinitionError, match=match):
        validate(_compose(["metric=ndcg10", *overrides]))


# --------------------------------------------------------------------------------------
# bad values fail before any data is read, with a message that names them


def test_k_zero_fails_in_validate() -> None:
    cfg = _compose(["metric.k=0"])  # composes: the schema allows any k
    with pytest.raises(MetricDefinitionError, match="k must be an int"):
        validate(cfg)


def test_unknown_tie_rule_fails_in_validate() -> None:
    cfg = _compose(["metric.ties=foo"])
    with pytest.raises(MetricDefinitionError, match=r"ties must be one of .*'foo'"):
        validate(cfg)


def test_unknown_extra_metric_fails_in_validate() -> None:
    cfg = _compose(["metric.extra=[ndgc@10]"])
    with pytest.raises(MetricDefinitionError, match="ndgc@10"):
        validate(cfg)


def test_misspelt_metric_key_fails_at_compose_time() -> None:
    with pytest.raises(ConfigCompositionException) as info:
        _compose(["metric.kk=5"])
    assert "metric.kk" in _chain(info.value)


def test_misspelt_dataset_key_fails_at_compose_time() -> None:
    with pytest.raises(ConfigCompositionException) as info:
        _compose(["dataset.n_querys=5"])
    assert "dataset.n_querys" in _chain(info.value)


def test_wrongly_typed_value_fails_at_compose_time() -> None:
    with pytest.raises(ConfigCompositionException) as info:
        _compose(["dataset.n_queries=abc"])
    text = _chain(info.value)
    assert "dataset.n_queries" in text and "Integer" in text and "'abc'" in text


def test_unknown_ranker_kind_names_the_known_kinds() -> None:
    cfg = _compose(["ranker=baselines", "ranker.oracle.kind=magic"])
    with pytest.raises(InputError, match="unknown kind 'magic'") as info:
        validate(cfg)
    assert all(kind in str(info.value) for kind in RANKERS)
    assert info.value.key == "ranker.oracle.kind" and "key 'ranker.oracle.kind'" in str(info.value)


def test_bad_check_mode_fails_in_validate() -> None:
    cfg = _compose(["check.sklearn=maybe"])
    with pytest.raises(InputError, match="check.sklearn must be fail, warn or off; got 'maybe'"):
        validate(cfg)


@pytest.mark.parametrize("key", ["nan_scores", "missing"])
def test_bad_engine_options_fail_in_validate(key: str) -> None:
    cfg = _compose([f"metric.{key}=bogus"])
    with pytest.raises(InputError, match=f"metric.{key} must be one of"):
        validate(cfg)


def test_feature_ranker_without_feature_fails_in_validate() -> None:
    cfg = _compose(["ranker=feature", "ranker.feature_f0.feature=null"])
    with pytest.raises(InputError, match="needs option 'feature'"):
        validate(cfg)


# The schema's docstring (harness/app/config.py) promises that values with a range or a
# set of choices are checked by validate() before any data is read; these three are not.


def test_unknown_sklearn_estimator_fails_in_validate() -> None:
    cfg = _compose(["ranker=baselines", "ranker.hgb.estimator=magic"])
    with pytest.raises(InputError, match="magic"):
        validate(cfg)


def test_negative_sigma_fails_in_validate() -> None:
    cfg = _compose(["ranker=noisy_oracle", "ranker.noisy_oracle.sigma=-1"])
    with pytest.raises(InputError, match="sigma"):
        validate(cfg)


def test_table_without_path_fails_in_validate() -> None:
    cfg = _compose(["dataset=table"])  # dataset.path is mandatory ('???')
    with pytest.raises(Exception, match="path") as info:
        validate(cfg)
    assert "???" not in str(info.value)


# --------------------------------------------------------------------------------------
# schemas are not options; names that become paths; features checked before scoring


def test_a_schema_is_not_a_dataset_option() -> None:
    with pytest.raises(ConfigCompositionException) as info:
        _compose(["dataset=base_letor"])
    text = _chain(info.value)
    assert "Could not find 'dataset/base_letor'" in text
    listed = set(text.split("Available options in 'dataset':")[1].split("Config search")[0]
                 .split())
    assert listed == set(_options("dataset"))
    for group in ("metric", "engine", "tracking"):
        with pytest.raises(ConfigCompositionException, match="Could not find"):
            _compose([f"{group}=base_{ {'metric': 'grid'}.get(group, group)}"])


@pytest.mark.parametrize("override, key", [
    ("study=../../evil", "study"),
    ("study=..", "study"),
    ("study=a\\b", "study"),
    ("+tracking.experiment=x/y", "tracking.experiment"),
    ("tracking.experiment=''", "tracking.experiment"),
])
def test_names_that_become_paths_are_plain_names(override: str, key: str) -> None:
    """``validate`` refuses the name. The value is set after composing: once a test in this
    process has installed the config guard, Hydra's composition refuses it first (exit 2,
    tests/test_config_values.py), which is not what this test is about."""
    dotted, _, value = override.lstrip("+").partition("=")
    cfg = _compose([])
    OmegaConf.update(cfg, dotted, "" if value == "''" else value, force_add=True)
    with pytest.raises(InputError) as info:
        validate(cfg)
    assert info.value.key == key and f"key {key!r}" in str(info.value)


@pytest.mark.parametrize("name", ["..", "a/b", ""])
def test_ranker_names_are_plain_names(name: str) -> None:
    cfg = OmegaConf.to_container(_compose(["ranker=oracle"]), resolve=True)
    cfg["ranker"][name] = {"kind": "random"}
    with pytest.raises(InputError, match="it names files") as info:
        validate(cfg)
    assert info.value.key == f"ranker.{name}"


def test_a_bad_study_writes_nothing_anywhere(tmp_path: Path) -> None:
    """``study=../../evil`` would make runs/hydra/../../evil = <project>/evil; the name is
    refused while Hydra resolves its output folder, before anything is created."""
    import subprocess
    import sys

    project = Path(harness.paths.PROJECT_ROOT)
    before = {str(p) for p in project.parent.iterdir()} | {str(p) for p in project.iterdir()}
    runs_before = sorted(str(p) for p in (project / "runs").rglob("*")) \
        if (project / "runs").is_dir() else []
    for args in (["study=../../evil_harness_test"], ["-m", "study=../evil_harness_test",
                                                      "metric.k=5,10"]):
        proc = subprocess.run([sys.executable, "-m", "harness", *args, "tracking=off",
                               f"cache_dir={tmp_path / 'cache'}"], cwd=project,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr  # bad input (was 1: Hydra's own exit)
        assert "study holds a path separator" in proc.stderr and "(key 'study')" in proc.stderr
        assert "Traceback" not in proc.stderr
    after = {str(p) for p in project.parent.iterdir()} | {str(p) for p in project.iterdir()}
    assert after == before
    assert (sorted(str(p) for p in (project / "runs").rglob("*"))
            if (project / "runs").is_dir() else []) == runs_before
    assert not (tmp_path / "cache").exists()


def test_features_are_checked_against_the_dataset_before_any_ranker_scores(
        table_parquet: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from harness.app.study import run_study

    cfg = _compose(["dataset=table", f"dataset.path={table_parquet}", "tracking=off",
                    "dataset.default_feature=f0", f"cache_dir={tmp_path / 'cache'}"])
    with caplog.at_level("INFO", logger="harness"), pytest.raises(InputError) as info:
        run_study(cfg, tmp_path / "out")
    assert str(info.value) == ("ranker 'feature_f0': no feature 'f0' in dataset 'table'; "
                               "available: f1 (key 'ranker.feature_f0.feature')")
    assert "ranker oracle" not in caplog.text  # the first ranker was never scored
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()
    cfg = _compose(["dataset=table", f"dataset.path={table_parquet}", "ranker=hgb",
                    "+ranker.hgb.features=[f1,f2,f3]"])
    with pytest.raises(InputError, match=r"ranker 'hgb': no feature 'f2' in dataset "
                                         r"'table'.*key 'ranker.hgb.features'"):
        run_study(cfg, tmp_path / "out")


def test_the_letor_bundles_use_a_feature_the_file_has() -> None:
    for overrides in (["dataset=lightgbm_sample"], ["experiment=lightgbm_sample"]):
        _, specs, _ = validate(_compose(overrides))
        features = {s.name: s.options.get("feature") for s in specs if s.kind == "feature"}
        assert set(features.values()) == {"f1"}, features  # SVMlight numbers from 1


# --------------------------------------------------------------------------------------
# --help


def test_help_is_the_projects_own_and_lists_every_option() -> None:
    import subprocess
    import sys

    code = ("import runpy, sys\nsys.argv = ['harness', 'run', '--help']\n"
            "try:\n    runpy.run_module('harness', run_name='__main__')\n"
            "except SystemExit as exc:\n    code = exc.code\n"
            "print('EXIT', code, 'hydra' in sys.modules, 'pandas' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=harness.paths.PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert out.rstrip().endswith("EXIT 0 False") or "EXIT 0 False" in out, proc.stderr
    assert "Powered by Hydra" not in out and "== Config groups ==" not in out
    assert "harness run --hydra-help" in out
    for group in ("dataset", "ranker", "metric", "engine", "tracking", "experiment"):
        assert f"  {group}: " in out
        for option in _options(group):
            assert f" {option} " in out, (group, option)
    assert "   * synthetic " in out and "   * contenders " in out  # defaults marked
    assert "base_letor" not in out
    hydra_help = subprocess.run([sys.executable, "-m", "harness", "--hydra-help"],
                                cwd=harness.paths.PROJECT_ROOT, capture_output=True,
                                text=True, timeout=120)
    assert hydra_help.returncode == 0 and "Hydra (" in hydra_help.stdout


@pytest.mark.parametrize("overrides, key", [
    (["seed=-1"], "seed"),
    (["dataset.seed=-3"], "dataset.seed"),
    (["ranker=random", "ranker.random.seed=-2"], "ranker.random.seed"),
])
def test_negative_seeds_are_refused_by_key(overrides: list[str], key: str) -> None:
    """numpy's generators take seeds >= 0 only; the plan names the key instead of a
    traceback from inside numpy once a ranker scores."""
    with pytest.raises(InputError, match="must be an integer >= 0") as info:
        validate(_compose(overrides))
    assert info.value.key == key


@pytest.mark.parametrize("override, key, suggestion, listed", [
    ("+metric.kk=5", "metric.kk", "'k'", "name, gain, discount, k, ties"),
    ("+typo=1", "typo", None, "study, seed, dataset, ranker, metric"),
    ("+check.tolerence=1", "check.tolerence", "'tolerance'", "sklearn, tolerance"),
])
def test_unknown_plus_keys_list_the_valid_ones(override: str, key: str,
                                               suggestion: str | None, listed: str) -> None:
    """``+key=value`` adds a key Hydra cannot check; the plan refuses a key the schema does
    not know, suggesting the closest and listing the valid keys of its level."""
    with pytest.raises(InputError) as info:
        validate(_compose([override]))
    assert info.value.key == key
    assert f"valid keys: {listed}" in str(info.value)
    if suggestion:
        assert f"did you mean {suggestion}?" in str(info.value)


def test_default_grid_forms_the_incompleteness_group() -> None:
    """harness compare's incompleteness group exists for a default sweep: AP@10 under
    unjudged=nonrelevant and condensed, with bpref and infAP beside it."""
    import pandas as pd

    from harness.compare.incompleteness import incompleteness_taus

    names = [m.display_name for m in build_metrics(_grid("default"))]
    means = pd.DataFrame({"a": range(len(names)), "b": range(len(names), 0, -1)},
                         index=names, dtype=float)
    group = incompleteness_taus(means)
    assert set(group["metric"]) == {"AP@10"}
    assert list(group["treatment"]) == ["nonrelevant", "condensed", "Bpref",
                                        "infAP(ties=input)"]


# --------------------------------------------------------------------------------------
# one home per default


def _restated(node: Any, schema: Any, where: str) -> list[str]:
    """The keys of a YAML ``node`` whose value equals the schema's default: restated."""
    import dataclasses

    out = []
    for key, value in node.items():
        if key in ("defaults", "_target_") or not dataclasses.is_dataclass(schema):
            continue
        fields = {f.name: f for f in dataclasses.fields(schema)}
        if key not in fields:
            continue
        f = fields[key]
        default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                   else f.default)
        if dataclasses.is_dataclass(default) and isinstance(value, dict):
            out += _restated(value, type(default), f"{where}{key}.")
        elif value == default and not isinstance(value, str) or (
                isinstance(value, str) and value == default and "${" not in value):
            out.append(f"{where}{key}")
    return out


def test_the_yaml_holds_only_what_differs_from_the_schema() -> None:
    """A default lives in the schema (harness/app/config.py) only: a YAML key restating it
    would be a second home that can drift."""
    from omegaconf import OmegaConf

    from harness.app.config import Config, EngineConfig, MetricGrid, TrackingConfig

    conf = Path(__file__).parents[1] / "conf"
    homes = {"config.yaml": Config, "engine": EngineConfig, "metric": MetricGrid,
             "tracking": TrackingConfig}
    restated = {}
    for path in sorted(conf.rglob("*.yaml")):
        rel = path.relative_to(conf)
        schema = homes.get(rel.parts[0] if len(rel.parts) > 1 else rel.name)
        if schema is None:
            continue
        node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        if found := _restated(node, schema, ""):
            restated[str(rel)] = found
    assert restated == {}
    assert _restated({"seed": 0, "check": {"tolerance": 1e-9}}, Config, "") == [
        "seed", "check.tolerance"]  # the walk sees a restated key, nested or not


def test_library_command_and_config_share_their_defaults() -> None:
    from harness.app.config import JudgmentsConfig
    from harness.commands.judgments import parser
    from harness.metrics.unjudged import MAX_LABELINGS

    assert JudgmentsConfig().max_labelings == MAX_LABELINGS
    assert parser().get_default("max_labelings") == MAX_LABELINGS
    import inspect

    from harness.metrics.unjudged.judgment_interval import judgment_interval

    assert inspect.signature(judgment_interval).parameters["max_labelings"].default == \
        MAX_LABELINGS
