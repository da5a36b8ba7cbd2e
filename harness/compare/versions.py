"""Ranker versions: which runs evaluated the same scores, and how to label them.

A *ranker version* is a ranker name with one score cache key (tag ``ranker.cache_key``:
dataset digest x ranker config). A name with several versions (e.g. a sweep over
``ranker.noisy_oracle.sigma``) gets one label per version, ``"<ranker> [<overrides that
tell it apart>]"``, e.g. ``"noisy_oracle [sigma=0.5]"``. Pure functions: no MLflow.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["RunInfo", "group_versions", "split_overrides"]


@dataclass(frozen=True)
class RunInfo:
    """One ranker run, as its tags and params describe it."""

    run_id: str
    ranker: str
    cache_key: str = ""
    job: str = ""
    kind: str = ""
    digest: str = ""
    dataset: str = ""
    parent_run_id: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)


def split_overrides(job: str) -> list[str]:
    """The ``key=value`` items of a job tag ``"<num>:<override_dirname>"``, split on commas
    outside brackets.

    >>> split_overrides("2:metric.k=[5,10],ranker=random")
    ['metric.k=[5,10]', 'ranker=random']
    """
    head, sep, rest = job.partition(":")
    text = rest if sep and head.isdigit() else job
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item for item in items if item]


def _version_key(run: RunInfo) -> tuple[str, str]:
    if run.cache_key:
        return run.ranker, run.cache_key
    prefix = f"ranker.{run.ranker}."
    config = sorted((k, v) for k, v in run.params.items() if k.startswith(prefix))
    return run.ranker, json.dumps([run.digest, config])


def group_versions(runs: Sequence[RunInfo]) -> dict[str, list[RunInfo]]:
    """Group runs into ranker versions and label them.

    A name with one version keeps its name. Otherwise each version is labelled with the
    job overrides that every run of a version shares and whose values differ between the
    versions; failing that, with the ranker params that differ; failing that, with the
    cache key's first 10 characters. A key's ``ranker.<name>.`` prefix is left out.

    >>> runs = [RunInfo("r1", "noisy", "k1", "0:metric.k=5,ranker.noisy.sigma=0.5"),
    ...         RunInfo("r2", "noisy", "k1", "1:metric.k=10,ranker.noisy.sigma=0.5"),
    ...         RunInfo("r3", "noisy", "k2", "2:metric.k=5,ranker.noisy.sigma=2"),
    ...         RunInfo("r4", "oracle", "k3", "0:metric.k=5,ranker.noisy.sigma=0.5")]
    >>> {label: [r.run_id for r in rs] for label, rs in group_versions(runs).items()}
    {'noisy [sigma=0.5]': ['r1', 'r2'], 'noisy [sigma=2]': ['r3'], 'oracle': ['r4']}
    """
    groups: dict[tuple[str, str], list[RunInfo]] = {}
    for run in runs:
        groups.setdefault(_version_key(run), []).append(run)
    by_name: dict[str, list[tuple[str, str]]] = {}
    for key in groups:
        by_name.setdefault(key[0], []).append(key)
    labels: dict[tuple[str, str], str] = {}
    for name, keys in by_name.items():
        if len(keys) == 1:
            labels[keys[0]] = name
            continue
        texts = _distinguishing(name, [groups[k] for k in keys])
        for key, text in zip(keys, texts):
            labels[key] = f"{name} [{text}]"
    return {labels[key]: members for key, members in groups.items()}


def _distinguishing(name: str, versions: list[list[RunInfo]]) -> list[str]:
    shared = [dict(item.partition("=")[::2] for item in
                   _common(split_overrides(r.job) for r in runs)) for runs in versions]
    keys = [k for k in shared[0] if all(k in s for s in shared[1:])
            and len({s[k] for s in shared}) > 1]
    prefix = f"ranker.{name}."
    texts = [",".join(f"{k.removeprefix(prefix)}={s[k]}" for k in keys) for s in shared]
    if all(texts) and len(set(texts)) == len(texts):
        return texts
    configs = [{k: v for k, v in runs[0].params.items() if k.startswith(prefix)}
               for runs in versions]
    varying = sorted({k for c in configs for k in c if len({d.get(k) for d in configs}) > 1})
    texts = [",".join(f"{k.removeprefix(prefix)}={c.get(k)}" for k in varying)
             for c in configs]
    if all(texts) and len(set(texts)) == len(texts):
        return texts
    return [runs[0].cache_key[:10] or runs[0].run_id[:10] for runs in versions]


def _common(item_lists: Iterable[list[str]]) -> list[str]:
    lists = list(item_lists)
    return [i for i in lists[0] if all(i in other for other in lists[1:])]
