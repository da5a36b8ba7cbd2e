"""Names that become paths: ``study``, ``tracking.experiment`` and ranker names.

Each names a folder or file under the configured output roots (``runs/hydra/<study>/``,
``runs/reports/<experiment>/``, ``per_query/<ranker>.parquet``), so each must be one plain
path component. :func:`path_name` is checked three times, each before anything is written:

- as the resolver ``${path_name:study,${study}}`` inside ``hydra.run.dir`` and
  ``hydra.sweep.dir`` (:func:`hydra_dir_name`), resolved as soon as the config is composed
  (:func:`harness.app.config_values.check_values`), before Hydra makes that folder; a bad
  ``study`` is one line on stderr, exit 2, not a traceback;
- by :func:`harness.app.plan.build_plan` (``study``, ``tracking.experiment``, ranker names),
  before any data is read or any result written.
"""

from __future__ import annotations

from typing import Any

from hydra.errors import CompactHydraException
from omegaconf.errors import InterpolationResolutionError

from harness.errors import InputError

__all__ = ["path_name", "hydra_dir_name", "UnsafeName", "MAX_BYTES"]

#: The longest name (UTF-8 bytes) a study, experiment or ranker may have.
MAX_BYTES = 128


def path_name(key: str, value: Any) -> str:
    """``value`` as text when it is safe as one path component, else an error.

    A safe name is not empty (nor only spaces), is not ``.`` or ``..``, holds no path
    separator (``/``, ``\\``) and no control character, and is at most :data:`MAX_BYTES`
    bytes in UTF-8 (file systems take 255 per name; suffixes such as ``.parquet`` and a
    run folder's timestamp are added to it).

    Parameters
    ----------
    key : the configuration key the value came from, named in the error.
    value : the configured value.

    Returns
    -------
    str

    Raises
    ------
    harness.errors.InputError
        Naming the key and the value.

    Examples
    --------
    >>> path_name("study", "demo")
    'demo'
    """
    text = "" if value is None else str(value)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise InputError(f"{key.split('.')[0]} name is {size} bytes long ({text[:24]!r}...); "
                         f"it names a folder or file, so it must be at most {MAX_BYTES} "
                         "bytes", key=key)
    bad = ("is empty" if not text.strip() else
           "is . or .." if text.strip() in (".", "..") else
           "holds a path separator" if "/" in text or "\\" in text else
           "holds a control character" if any(ord(ch) < 32 for ch in text) else None)
    if bad:
        raise InputError(f"{key} {bad} ({value!r}); it names a folder, so it must be one "
                         "plain name without /, \\ or ..", key=key)
    return text


class UnsafeName(InterpolationResolutionError, CompactHydraException):
    """A bad name met while Hydra resolves its output folder: Hydra prints it as one line
    (a compact Hydra error) instead of a traceback, and exits 1."""


def hydra_dir_name(key: str, value: Any) -> str:
    """The resolver ``${path_name:study,${study}}`` used in ``hydra.run.dir`` and
    ``hydra.sweep.dir``: :func:`path_name`, raising :class:`UnsafeName`."""
    try:
        return path_name(key, value)
    except InputError as exc:
        raise UnsafeName(f"Error: {exc}") from None
