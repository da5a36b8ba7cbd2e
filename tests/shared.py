"""Where the read-only reference data lives (see ``README.md`` in that folder).

The data is never copied into the repository: tests read it in place. The folder is the
value of the environment variable ``HARNESS_SHARED_DATA`` when it is set, else
``<repo root>/../shared/data``. A missing folder is an error, never a skip, so that CI
cannot pass without running the reference checks.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_VAR", "REPO_ROOT", "shared_data_dir", "metric_grid_yaml"]

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


def metric_grid_yaml(name: str) -> dict:
    """``conf/metric/<name>.yaml`` read with plain YAML (no Hydra), over the schema's defaults
    it leaves out (the YAML holds only what differs from ``MetricGrid``)."""
    import dataclasses

    import yaml

    from harness.app.config import MetricGrid

    defaults = {f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING
                else f.default for f in dataclasses.fields(MetricGrid)}
    path = REPO_ROOT / "conf" / "metric" / f"{name}.yaml"
    return defaults | (yaml.safe_load(path.read_text()) or {})
