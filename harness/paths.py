"""Project paths: relative paths in configs resolve against the checkout holding conf/."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PROJECT_ROOT", "project_path", "shared_data_dir"]

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def project_path(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute; a relative path resolves against the project root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (PROJECT_ROOT / p).resolve()


def shared_data_dir() -> Path:
    """``$HARNESS_SHARED_DATA``, else ``../shared/data`` beside the checkout."""
    env = os.environ.get("HARNESS_SHARED_DATA")
    return Path(env).resolve() if env else PROJECT_ROOT.parent / "shared" / "data"
