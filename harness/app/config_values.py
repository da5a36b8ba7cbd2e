"""Composed configs whose values Hydra or a loader would meet with a traceback, said in one
line before anything is built (issue 40).

- :func:`check_values` runs on every config Hydra composes (hooked with the routes check of
  :mod:`harness.app.hydra_guard`): a config group removed (``~dataset``) and an
  interpolation that cannot be resolved (``study=${oc.env:UNSET}``, ``${nope:x}``, a study
  name that cannot name a folder) are named by their key, before Hydra resolves its output
  folder from them.
- :func:`check_loader_options` names a dataset option its loader does not take
  (``+dataset.foo=1``, ``+dataset._target_=...``), with the options it does take.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.errors import InputError
from harness.paths import PROJECT_ROOT

__all__ = ["check_values", "check_loader_options"]

#: Keys of Hydra's own config that Hydra resolves before the job starts.
_HYDRA_RESOLVED = ("hydra.run.dir", "hydra.sweep.dir")


def check_values(config: DictConfig | None) -> None:
    """Raise ``ValueError`` naming the first config group left unchosen or the first value
    whose interpolation cannot be resolved (``${hydra:...}`` ones are resolved later, by
    Hydra, and left alone)."""
    if not isinstance(config, DictConfig):
        return
    for key in map(str, config.keys()):
        folder = PROJECT_ROOT / "conf" / key
        if key != "hydra" and OmegaConf.is_missing(config, key) and folder.is_dir():
            options = ", ".join(sorted(p.stem for p in folder.glob("*.yaml")))
            raise ValueError(f"{key}: no {key} is chosen (the group was removed, e.g. by "
                             f"~{key}); choose one with {key}=NAME, one of: {options}")
    for key in [*(_leaves(config, "")), *_HYDRA_RESOLVED]:
        node = _raw(config, key)
        if not isinstance(node, str) or "${" not in node or "${hydra:" in node:
            continue
        try:
            OmegaConf.select(config, key, throw_on_missing=True)
        except OmegaConfBaseException as exc:
            why = str(exc).splitlines()[0].removeprefix("Error: ")
            if "(key '" in why:  # a value the resolver checked, e.g. the study's name
                raise ValueError(why) from None
            raise ValueError(f"{key}: {node!r} cannot be resolved: {why}") from None


def _raw(config: DictConfig, key: str) -> Any:
    """The value at ``key`` as written (its interpolation unresolved), or ``None``."""
    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(config, parent) if parent else config
    if not isinstance(node, DictConfig) or leaf not in node:
        return None
    value = node._get_node(leaf)
    return value._value() if value is not None else None


def _leaves(node: Any, prefix: str) -> Iterator[str]:
    """The dotted keys of every leaf outside ``hydra`` (lists' items are not descended:
    their interpolations are resolved with the list)."""
    if isinstance(node, DictConfig):
        if node._is_none() or node._is_missing() or node._is_interpolation():
            return
        for child in node.keys():
            key = f"{prefix}.{child!s}" if prefix else str(child)
            if key == "hydra":
                continue
            value = node._get_node(child)
            if isinstance(value, (DictConfig, ListConfig)) and not value._is_interpolation():
                yield from _leaves(value, key)
            else:
                yield key


def check_loader_options(kind: str, options: Mapping[str, Any],
                         loader: Callable[..., Any]) -> None:
    """Raise :class:`InputError` for an option of ``dataset`` (of kind ``kind``) that its
    loader does not take, listing those it takes."""
    params = inspect.signature(loader).parameters
    taken = [p for p in params if params[p].kind is inspect.Parameter.KEYWORD_ONLY
             or params[p].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    for name in options:
        if name not in taken:
            why = (" (nothing is built from a _target_ given in configuration; a dataset is "
                   "chosen by its kind)" if name == "_target_" else "")
            raise InputError(f"dataset of kind {kind!r} takes no option {name!r}{why}; it "
                             f"takes: kind, default_feature, {', '.join(taken)}",
                             key=f"dataset.{name}")
