"""What a misspelt override meant: printed under Hydra's own error when the config does not
compose (``ranker=oracel``: the closest option; ``metric.kk=5``: the valid keys)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.app import config as schema
from harness.paths import PROJECT_ROOT

__all__ = ["override_hints"]

CONF = PROJECT_ROOT / "conf"

#: Sections of the main config whose keys a schema dataclass fixes.
_SECTIONS = {"metric": schema.MetricGrid, "tracking": schema.TrackingConfig,
             "check": schema.CheckConfig, "explain": schema.ExplainConfig,
             "engine": schema.EngineConfig, "judgments": schema.JudgmentsConfig}
_DATASETS = {"synthetic": schema.SyntheticDataset, "letor": schema.LetorDataset,
             "trec": schema.TrecDataset, "ir_datasets": schema.IrDatasetsDataset,
             "table": schema.TableDataset,
             "parquet_run": schema.ParquetRunDataset}


def _fields(cls: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _groups() -> dict[str, list[str]]:
    """Config group -> its options (the YAML files under ``conf/<group>/``)."""
    return {d.name: sorted(f.stem for f in d.glob("*.yaml"))
            for d in sorted(CONF.iterdir()) if d.is_dir() and d.name != "hydra"}


def _yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _chosen_dataset(args: Sequence[str]) -> str:
    """The dataset option the command line picks (directly or by an experiment)."""
    chosen = None
    for entry in _yaml(CONF / "config.yaml").get("defaults", []):
        if isinstance(entry, dict) and "dataset" in entry:
            chosen = entry["dataset"]
    for arg in args:
        key, _, value = arg.partition("=")
        if key == "experiment":
            for entry in _yaml(CONF / "experiment" / f"{value}.yaml").get("defaults", []):
                if isinstance(entry, dict) and "override /dataset" in entry:
                    chosen = entry["override /dataset"]
    for arg in args:
        key, _, value = arg.partition("=")
        if key == "dataset":
            chosen = value
    return str(chosen or "synthetic")


def _dataset_keys(choice: str) -> list[str] | None:
    data = _yaml(CONF / "dataset" / f"{choice}.yaml")
    keys = [k for k in data if k != "defaults"]
    for entry in data.get("defaults", []):
        if isinstance(entry, str) and entry.startswith("/schema/dataset/"):
            kind = entry.removeprefix("/schema/dataset/").split("@")[0]
            if kind in _DATASETS:
                keys += _fields(_DATASETS[kind])
    return list(dict.fromkeys(keys)) or None


def _closest(word: str, options: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.5)
    return close[0] if close else None


def override_hints(args: Sequence[str]) -> list[str]:
    """One ``hint:`` line per override that names no option of its group or no key of its
    section; empty when nothing is recognisably wrong (e.g. the error lies in a YAML file)."""
    groups = _groups()
    top = _fields(schema.Config) + ["hydra"]
    out = []
    for arg in args:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        if key.startswith(("+", "~")) or key.startswith("hydra"):
            continue
        if key in groups:  # a group choice; a sweep lists several
            for v in (x.strip() for x in value.split(",")):
                if v and v != "null" and v not in groups[key]:
                    best = _closest(v, groups[key])
                    out.append(f"hint: {key}={v}: there is no {key} config {v!r}"
                               + (f"; did you mean {key}={best}?" if best else "")
                               + f" Options of {key}: {', '.join(groups[key])}")
            continue
        parts = key.split(".")
        if parts[0] not in top:
            valid, where, bad = top, "the config", parts[0]
        elif len(parts) == 2 and parts[0] in _SECTIONS:
            valid, where, bad = _fields(_SECTIONS[parts[0]]), parts[0], parts[1]
        elif len(parts) == 2 and parts[0] == "dataset":
            valid = _dataset_keys(_chosen_dataset(args)) or []
            where, bad = f"dataset {_chosen_dataset(args)}", parts[1]
        elif len(parts) == 3 and parts[0] == "ranker":
            valid, where, bad = _fields(schema.RankerConfig), f"ranker.{parts[1]}", parts[2]
        else:
            continue
        if valid and bad not in valid:
            best = _closest(bad, valid)
            prefix = "" if where == "the config" else ".".join(parts[:-1]) + "."
            out.append(f"hint: {key}: {where} has no key {bad!r}"
                       + (f"; did you mean {prefix}{best}?" if best else "")
                       + f" Valid keys: {', '.join(valid)}")
    return out
