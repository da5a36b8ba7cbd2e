"""Provenance of a study: the config flattened to MLflow params, the git commit of the
checkout, and the versions of the packages that shape the numbers."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from typing import Any

from harness.paths import PROJECT_ROOT
from harness.version import __version__

__all__ = ["flatten", "git_commit", "environment", "VERSIONED"]

def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> ``{"a.b.c": "value"}``; lists become JSON text."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = json.dumps(value) if isinstance(value, (list, tuple, dict)) else str(value)
    return out


def git_commit() -> str:
    """HEAD of the checkout (``-dirty`` when tracked files changed), or 'unknown'."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, check=True,
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


VERSIONED = ("numpy", "pandas", "scipy", "scikit-learn", "pyarrow", "matplotlib", "mlflow",
             "hydra-core", "omegaconf")


def environment() -> dict[str, Any]:
    """Python, platform and the versions of the packages that shape the numbers."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    packages = {"harness": __version__}
    for name in VERSIONED:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = "not installed"
    return {"python": platform.python_version(), "platform": platform.platform(),
            "packages": packages}
