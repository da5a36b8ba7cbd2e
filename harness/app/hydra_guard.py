"""Only the Hydra callbacks this project ships are built, and an output folder that cannot
be written is said in one line, before Hydra acts.

Hydra builds every entry of ``hydra.callbacks`` from its ``_target_`` (any importable
callable, with any arguments) before the job starts, so an override such as
``+hydra.callbacks.x._target_=os.system`` or an experiment file that sets one would run
arbitrary code. The project's rule is that nothing is built from a ``_target_`` string taken
from user configuration; launchers and sweepers are already limited by Hydra to installed
plugins, and callbacks are limited here to :data:`ALLOWED`.

:func:`install` wraps the construction of Hydra's callback list (the one place it builds
them, for runs and sweeps alike) with :func:`check_callbacks`; a refused entry ends the
command with one line naming it and exit code 2, before anything is built. The same hook
checks that the job's output folder can be made (:func:`check_output_folder`).
"""

from __future__ import annotations

import sys
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

__all__ = ["ALLOWED", "check_callbacks", "check_output_folder", "install"]

#: The callbacks a config may name: the project's own, and Hydra's two logging callbacks.
ALLOWED = frozenset({
    "harness.app.callbacks.SweepParentRun",
    "hydra.experimental.callbacks.LogJobReturnCallback",
    "hydra.experimental.callbacks.PickleJobInfoCallback",
})


def check_callbacks(config: DictConfig | None) -> None:
    """Raise ``ValueError`` naming the first ``hydra.callbacks`` entry that is not in
    :data:`ALLOWED`, or that carries a ``_target_`` inside its arguments (Hydra builds
    those too)."""
    callbacks = OmegaConf.select(config, "hydra.callbacks") if config is not None else None
    if not callbacks:
        return
    for name, params in callbacks.items():
        key = f"hydra.callbacks.{name}"
        target = params.get("_target_") if isinstance(params, DictConfig) else None
        if target not in ALLOWED:
            raise ValueError(
                f"{key}: {target!r} is not a callback this project ships; allowed: "
                f"{', '.join(sorted(ALLOWED))} (nothing is built from a _target_ given in "
                "configuration)")
        nested = _nested_target(params, key, top=True)
        if nested is not None:
            raise ValueError(f"{nested}: a _target_ inside a callback's arguments is not "
                             "allowed (nothing is built from a _target_ given in configuration)")


def _nested_target(node: Any, key: str, top: bool = False) -> str | None:
    if isinstance(node, DictConfig):
        for child, value in node.items_ex(resolve=False):
            if child == "_target_" and not top:
                return f"{key}._target_"
            found = _nested_target(value, f"{key}.{child!s}")
            if found is not None:
                return found
    elif isinstance(node, ListConfig):
        for i, value in enumerate(node):
            found = _nested_target(value, f"{key}[{i}]")
            if found is not None:
                return found
    return None


def check_output_folder(config: DictConfig | None) -> None:
    """Raise ``OSError``-worded ``ValueError`` when the job's output folder cannot be made:
    its nearest existing ancestor is tried with a temporary file (a read-only file system,
    a folder without write permission), before Hydra creates the folder and fails with a
    traceback. The timestamp and token of the folder's own name are not needed for this."""
    import tempfile
    from pathlib import Path

    from hydra.types import RunMode

    if config is None:
        return
    mode = OmegaConf.select(config, "hydra.mode")
    key = "hydra.sweep.dir" if mode == RunMode.MULTIRUN else "hydra.run.dir"
    try:
        folder = Path(str(OmegaConf.select(config, key)))
    except Exception:  # noqa: BLE001 - an unresolvable name is Hydra's to report
        return
    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as exc:
        raise ValueError(f"{key}: the output folder {folder} cannot be created "
                         f"({exc.strerror or exc}: {ancestor}); give {key} a writable "
                         "folder") from None


def install() -> None:
    """Check ``hydra.callbacks`` each time Hydra is about to build them (idempotent)."""
    from hydra._internal import callbacks as hydra_callbacks

    cls = hydra_callbacks.Callbacks
    if getattr(cls, "_harness_checked", False):
        return
    build = cls.__init__

    def checked_init(self: Any, config: DictConfig | None = None, *args: Any,
                     **kwargs: Any) -> None:
        try:
            check_callbacks(config)
            check_output_folder(config)
        except ValueError as exc:
            print(f"error: config: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        build(self, config, *args, **kwargs)

    setattr(cls, "__init__", checked_init)  # noqa: B010 - mypy refuses assigning a method
    setattr(cls, "_harness_checked", True)  # noqa: B010 - Hydra's class declares no such name
