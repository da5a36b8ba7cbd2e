"""Only the Hydra callbacks this project ships are built, and an output folder that cannot
be written is said in one line, before Hydra acts.

Hydra builds every entry of ``hydra.callbacks`` from its ``_target_`` (any importable
callable, with any arguments) before the job starts, so an override such as
``+hydra.callbacks.x._target_=os.system`` or an experiment file that sets one would run
arbitrary code. The project's rule is that nothing is built from a ``_target_`` string taken
from user configuration: callbacks are limited here to :data:`ALLOWED`; the other routes
(``env_set``, logging, launcher and sweeper) are checked by
:func:`harness.app.config_guard.check_routes` each time Hydra composes a config (a run's,
a sweep's, each sweep job's), before Hydra configures its own logging from it.

:func:`install` wraps the construction of Hydra's callback list (the one place it builds
them, for runs and sweeps alike) with :func:`check_callbacks`; a refused entry ends the
command with one line naming it and exit code 2, before anything is built. The same hook
checks that the job's output folder can be made (:func:`check_output_folder`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.app.config_guard import check_routes, check_searchpath, nested_target
from harness.app.config_values import check_values

__all__ = ["ALLOWED", "cannot_write", "check_callbacks", "check_output_folder", "install"]

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
        nested = nested_target(params, key, top=True)
        if nested is not None:
            raise ValueError(f"{nested}: a _target_ inside a callback's arguments is not "
                             "allowed (nothing is built from a _target_ given in configuration)")


def check_output_folder(config: DictConfig | None) -> None:
    """Raise ``OSError``-worded ``ValueError`` when the job's output folder cannot be made:
    its nearest existing ancestor is tried with a temporary file (a read-only file system,
    a folder without write permission), before Hydra creates the folder and fails with a
    traceback. The timestamp and token of the folder's own name are not needed for this."""
    from hydra.types import RunMode

    if config is None:
        return
    mode = OmegaConf.select(config, "hydra.mode")
    key = "hydra.sweep.dir" if mode == RunMode.MULTIRUN else "hydra.run.dir"
    try:
        folder = Path(str(OmegaConf.select(config, key)))
    except Exception:  # noqa: BLE001 - an unresolvable name is Hydra's to report
        return
    why = cannot_write(folder)
    if why is not None:
        raise ValueError(f"{key}: the output folder {folder} cannot be created ({why}); "
                         f"give {key} a writable folder") from None


def cannot_write(folder: Path) -> str | None:
    """Why ``folder`` cannot be made or written (its nearest existing ancestor tried with a
    temporary file: a read-only file system, no write permission, a file in the way), or
    ``None`` when it can."""
    import tempfile

    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            return None
    except OSError as exc:
        return f"{exc.strerror or exc}: {ancestor}"


def _refuse(exc: ValueError) -> None:
    print(f"error: config: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(2) from None


def install() -> None:
    """Check every composed config's routes to code, and ``hydra.callbacks`` each time Hydra
    is about to build them (idempotent)."""
    from hydra._internal import callbacks as hydra_callbacks
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    cls = hydra_callbacks.Callbacks
    if getattr(cls, "_harness_checked", False):
        return
    build = cls.__init__
    load = ConfigLoaderImpl.load_configuration
    search = ConfigLoaderImpl._process_config_searchpath

    def checked_search(self: Any, config_name: Any, parsed_overrides: Any,
                       *args: Any, **kwargs: Any) -> Any:
        try:
            check_searchpath(parsed_overrides)
        except ValueError as exc:
            _refuse(exc)
        return search(self, config_name, parsed_overrides, *args, **kwargs)

    def checked_load(self: Any, *args: Any, **kwargs: Any) -> DictConfig:
        config = load(self, *args, **kwargs)
        try:
            check_routes(config)
            check_values(config)
        except ValueError as exc:
            _refuse(exc)
        return config

    def checked_init(self: Any, config: DictConfig | None = None, *args: Any,
                     **kwargs: Any) -> None:
        try:
            check_callbacks(config)
            check_output_folder(config)
        except ValueError as exc:
            _refuse(exc)
        build(self, config, *args, **kwargs)

    patches = [(cls, "__init__", checked_init), (cls, "_harness_checked", True),
               (ConfigLoaderImpl, "load_configuration", checked_load),
               (ConfigLoaderImpl, "_process_config_searchpath", checked_search)]
    for owner, name, value in patches:  # setattr: mypy refuses assigning to a method
        setattr(owner, name, value)
