"""Where the read-only reference data lives (see ``README.md`` in that folder).

The data is never copied into the repository: tests read it in place. The folder is the
value of the environment variable ``HARNESS_SHARED_DATA`` when it is set, else
``<repo root>/../shared/data``. A missing folder is an error, never a skip, so that CI
cannot pass without running the reference checks.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_VAR", "REPO_ROOT", "shared_data_dir"]

ENV_VAR = "HARNESS_SHARED_DATA"
REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The shared reference-data folder, as an absolute path.

    Raises
    ------
    RuntimeError
        If the folder does not exist; the message names every path tried.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        tried = [(f"${ENV_VAR}", Path(env).expanduser())]
    else:
        tried = [(f"<repo root>/../shared/data (${ENV_VAR} is not set)",
                  REPO_ROOT.parent / "shared" / "data")]
    for _, path in tried:
        if path.is_dir():
            return path.resolve()
    lines = "\n".join(f"  - {path} [{how}]" for how, path in tried)
    raise RuntimeError(
        "shared reference data not found; tried:\n" + lines + "\n"
        f"Set {ENV_VAR} to the folder that holds README.md, lightgbm_lambdarank/, "
        "trec_eval_test/ and trec_cast_2021/."
    )
