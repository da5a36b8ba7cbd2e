"""Project paths: relative paths in configs resolve against the checkout holding conf/."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ARTIFACT_ROOT", "PENDING_DIR", "PROJECT_ROOT", "REPORTS_DIR", "project_path",
           "shared_data_dir"]

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: The default folders under the project (relative: :func:`project_path` resolves them), one
#: home for the config schema, the library's keyword defaults and the commands' options:
#: log plans not yet sent (``harness sync``), a local MLflow store's artifacts, reports.
PENDING_DIR = "runs/pending"
ARTIFACT_ROOT = "runs/artifacts"
REPORTS_DIR = "runs/reports"


def project_path(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute; a relative path resolves against the project root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (PROJECT_ROOT / p).resolve()


def shared_data_dir() -> Path:
    """``$HARNESS_SHARED_DATA``, else ``../shared/data`` beside the checkout."""
    env = os.environ.get("HARNESS_SHARED_DATA")
    return Path(env).resolve() if env else PROJECT_ROOT.parent / "shared" / "data"
