"""Configuration routes that would import or call code by name are refused before Hydra
acts on them (issue 40).

Besides ``hydra.callbacks`` (:mod:`harness.app.hydra_guard`), a composed config reaches
code by name through:

- ``hydra.job.env_set``: variables set in the job's environment; ``PYTHONPATH``,
  ``LD_PRELOAD``, ``PATH``, ``HOME`` and the like make the job's interpreter, or a program
  it starts (the tracking worker, git), load code from where they point. Only the names in
  :data:`ENV_ALLOWED` may be set.
- ``hydra.job_logging`` / ``hydra.hydra_logging``: Python's ``logging.config.dictConfig``
  imports and calls the ``()`` factory and the ``class`` of a handler, formatter or filter,
  and imports any ``ext://`` name. A handler must be one that Hydra's shipped logging
  configs define (its ``formatter`` and ``level`` may differ); elsewhere no ``()``,
  ``class`` or ``ext://`` is accepted.
- ``hydra.searchpath``: a ``pkg://`` (or any other non-file) entry makes Hydra import the
  named module to find configs in it; only folders (``file://`` or a plain path) are
  accepted (:func:`check_searchpath`, before Hydra uses the search path).
- ``hydra.launcher`` / ``hydra.sweeper``: built from their ``_target_``; only the plugins of
  :data:`PLUGINS_ALLOWED` (what conf/ and Hydra's groups offer), with no ``_target_`` inside
  their parameters.

:func:`check_routes` raises ``ValueError`` naming the first key at fault and why.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from harness.paths import PROJECT_ROOT

__all__ = ["ENV_ALLOWED", "PLUGINS_ALLOWED", "check_routes", "check_searchpath",
           "nested_target"]

#: Environment variables ``hydra.job.env_set`` may set (patterns over the whole name).
ENV_ALLOWED = ("HARNESS_*", "MLFLOW_TRACKING_*", "MLFLOW_EXPERIMENT_*", "*_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "CUDA_VISIBLE_DEVICES", "TZ", "LANG", "LANGUAGE",
               "LC_*", "TMPDIR")
_ENV_RE = re.compile("|".join(p.replace("*", "[A-Z0-9_]*") for p in ENV_ALLOWED))

#: The launchers and sweepers the project's conf/ and Hydra's installed groups offer.
PLUGINS_ALLOWED = {
    "launcher": frozenset({
        "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
        "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
    }),
    "sweeper": frozenset({"hydra._internal.core_plugins.basic_sweeper.BasicSweeper"}),
}

_NOTHING_BUILT = "nothing is imported or called by a name given in configuration"


def check_routes(config: DictConfig | None) -> None:
    """Raise ``ValueError`` naming the first ``hydra.*`` key that would import or call code
    not shipped with the project or Hydra (see the module's docstring)."""
    hydra = OmegaConf.select(config, "hydra") if config is not None else None
    if not isinstance(hydra, DictConfig):
        return
    _check_env(OmegaConf.select(hydra, "job.env_set"))
    for section in ("job_logging", "hydra_logging"):
        node = OmegaConf.select(hydra, section)
        if node is not None:
            _check_logging(OmegaConf.to_container(node, resolve=False), f"hydra.{section}")
    for kind, allowed in PLUGINS_ALLOWED.items():
        _check_plugin(OmegaConf.select(hydra, kind), f"hydra.{kind}", allowed)


def check_searchpath(overrides: Any) -> None:
    """Raise ``ValueError`` for a ``hydra.searchpath`` override (parsed ``Override``
    objects) with an entry that is not a folder, or an override whose key has a part too
    long to be a name (Hydra looks each part up as a file: ``File name too long``)."""
    from harness.app.path_names import MAX_BYTES

    for override in overrides:
        key = override.get_key_element()
        for part in re.split(r"[./@]", key):
            if len(part.encode("utf-8", "surrogatepass")) > MAX_BYTES:
                raise ValueError(f"{key}: the name {part[:24]!r}... is "
                                 f"{len(part.encode('utf-8', 'surrogatepass'))} bytes long; "
                                 f"names are at most {MAX_BYTES} bytes (they name files)")
        if override.get_key_element() != "hydra.searchpath":
            continue
        value = override.value()
        for entry in value if isinstance(value, list) else [value]:
            if isinstance(entry, str) and "://" in entry and not entry.startswith("file://"):
                raise ValueError(
                    f"hydra.searchpath: {entry!r}: Hydra imports the module a pkg:// entry "
                    f"names ({_NOTHING_BUILT}); give a folder: file://PATH")


def _check_env(env_set: Any) -> None:
    for name in (env_set or {}):
        if not _ENV_RE.fullmatch(str(name)):
            raise ValueError(
                f"hydra.job.env_set.{name}: not set from configuration: variables such as "
                "PYTHONPATH, LD_PRELOAD, PATH or HOME make the job's interpreter (or a "
                "program it starts) load code from where they point; env_set may set only "
                f"{', '.join(ENV_ALLOWED)} (set others in the shell that starts harness)")


def _check_plugin(node: Any, key: str, allowed: frozenset[str]) -> None:
    if not isinstance(node, DictConfig):
        return
    target = node.get("_target_")
    if target not in allowed:
        raise ValueError(f"{key}._target_: {target!r} is not a {key.split('.')[1]} this "
                         f"project offers; allowed: {', '.join(sorted(allowed))} "
                         f"({_NOTHING_BUILT}); choose one with {key.replace('.', '/')}=NAME")
    nested = nested_target(node, key, top=True)
    if nested is not None:
        raise ValueError(f"{nested}: a _target_ inside the {key.split('.')[1]}'s parameters "
                         f"is not allowed ({_NOTHING_BUILT})")


def nested_target(node: Any, key: str, top: bool = False) -> str | None:
    """The dotted key of the first ``_target_`` below ``node`` (its own, too, unless
    ``top``), or ``None``."""
    if isinstance(node, (DictConfig, ListConfig)) and (node._is_none() or node._is_missing()):
        return None
    if isinstance(node, DictConfig):
        for child, value in node.items_ex(resolve=False):
            if child == "_target_" and not top:
                return f"{key}._target_"
            found = nested_target(value, f"{key}.{child!s}")
            if found is not None:
                return found
    elif isinstance(node, ListConfig):
        for i, value in enumerate(node):
            found = nested_target(value, f"{key}[{i}]")
            if found is not None:
                return found
    return None


_PLAIN = ("formatter", "level")  # a shipped handler may differ in these


@lru_cache(maxsize=1)
def _shipped_handlers() -> tuple[dict[str, Any], ...]:
    """Every handler of Hydra's shipped logging configs and of the project's conf/hydra/,
    less the keys of :data:`_PLAIN`."""
    import hydra

    roots = [Path(hydra.__file__).parent / "conf" / "hydra", PROJECT_ROOT / "conf" / "hydra"]
    found = []
    for root in roots:
        for path in sorted(root.glob("*_logging/*.yaml")):
            loaded = OmegaConf.to_container(OmegaConf.load(path))
            handlers = (loaded.get("handlers") if isinstance(loaded, dict) else None) or {}
            found += [_bare(h) for h in handlers.values() if isinstance(h, dict)]
    return tuple(found)


def _bare(handler: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in handler.items() if k not in _PLAIN}


def _check_logging(conf: Any, key: str) -> None:
    if not isinstance(conf, dict):
        return
    for name, handler in (conf.get("handlers") or {}).items():
        if isinstance(handler, dict) and _bare(handler) in _shipped_handlers():
            _check_named({k: handler[k] for k in _PLAIN if k in handler},
                         f"{key}.handlers.{name}")
            continue
        what = handler.get("()") or handler.get("class") if isinstance(handler, dict) else None
        raise ValueError(
            f"{key}.handlers.{name}: a logging handler other than those Hydra ships is not "
            f"built{f' (it names {what!r})' if what else ''}: its '()'/'class' is imported "
            "and called and a file handler writes wherever it is told "
            f"({_NOTHING_BUILT}); only formatter and level of a shipped handler may change")
    for part, value in conf.items():
        if part != "handlers":
            _check_named(value, f"{key}.{part}")


def _check_named(node: Any, key: str) -> None:
    """Refuse ``()``, ``class`` and ``ext://`` anywhere below ``node``."""
    if isinstance(node, dict):
        for name in ("()", "class"):
            if name in node:
                raise ValueError(f"{key}: {name!r}: {node[name]!r} names code for logging to "
                                 f"import and call ({_NOTHING_BUILT})")
        for child, value in node.items():
            _check_named(value, f"{key}.{child}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_named(value, f"{key}[{i}]")
    elif isinstance(node, str) and node.strip().startswith("ext://"):
        raise ValueError(f"{key}: {node!r}: logging imports what an ext:// name points to "
                         f"({_NOTHING_BUILT})")
