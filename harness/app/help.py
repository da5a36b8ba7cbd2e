"""``harness run --help``: the project's own help, read from ``conf/``.

Hydra's ``--help`` prints its generic template; this one lists what a user of *this* app
chooses: each config group with its options (one line each, from the option file's first
comment), which option is the default, the top-level keys, and a few commands. It reads the
YAML files with PyYAML only, without importing Hydra or the study code, so it answers in a
fraction of a second. Hydra's own help stays available as ``--hydra-help``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from harness.paths import PROJECT_ROOT

__all__ = ["HELP_FLAGS", "wants_help", "render_help", "main"]

HELP_FLAGS = ("--help", "-h")
#: Config groups in the order they are shown, with what each decides.
GROUPS = {
    "dataset": "the queries, documents and judgments",
    "ranker": "the rankers evaluated (every ranker of the chosen file, in one job)",
    "metric": "the grid of metric variants (name x gain x discount x k x ties x ideal)",
    "engine": "where the per-query table is computed",
    "tracking": "MLflow logging",
    "experiment": "bundles that set several groups at once",
    "hydra/launcher": "how the jobs of a sweep (-m) run",
}
EXAMPLES = (
    ("make run ARGS=\"dataset=lightgbm_sample\"", "LightGBM's LTR sample"),
    ("harness run experiment=cast2021", "the TREC CAsT 2021 baselines"),
    ("harness run metric=full_grid ranker=feature", "48 nDCG variants of one ranker"),
    ("harness run metric.k=5 metric.ties=pessimistic", "change one metric axis"),
    ("harness run -m ranker=oracle,noisy_oracle metric.k=5,10", "a 2x2 sweep"),
    ("harness run tracking=off study=try", "no MLflow; results in runs/hydra/try/"),
    ("harness run --cfg job", "print the composed config (Hydra)"),
)


def wants_help(argv: Sequence[str]) -> bool:
    """Whether the command line asks for this help (``--help`` or ``-h``)."""
    return any(arg in HELP_FLAGS for arg in argv)


def _describe(path: Path, *, width: int = 72) -> str:
    """The first comment line of a config file that is not a Hydra directive, else its
    first settings as ``key=value``; cut to ``width`` characters."""
    text = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line.startswith("#"):
            break
        line = line.lstrip("#").strip()
        if line and not line.startswith("@package"):
            text = line
            break
    if not text:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        data.pop("defaults", None)
        text = ", ".join(f"{k}={v}" for k, v in data.items())
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def _defaults(conf: Path) -> dict[str, str]:
    """Group -> default option, from the main config's defaults list."""
    data = yaml.safe_load((conf / "config.yaml").read_text(encoding="utf-8")) or {}
    out = {}
    for entry in data.get("defaults", []):
        if isinstance(entry, dict):
            for group, option in entry.items():
                out[group.replace("optional ", "")] = str(option)
    return out


def _top_level(conf: Path) -> list[str]:
    """``key=value`` of the main config's own scalar settings (study, seed, check.*)."""
    data = yaml.safe_load((conf / "config.yaml").read_text(encoding="utf-8")) or {}
    out = []
    for key, value in data.items():
        if key in ("defaults", "hydra"):
            continue
        if isinstance(value, dict):
            out += [f"{key}.{k}={v}" for k, v in value.items()]
        else:
            out.append(f"{key}={value}")
    return out


def render_help(conf: Path) -> str:
    """The help text for the config folder ``conf``."""
    defaults = _defaults(conf)
    lines = ["harness: ranking evaluation where every nDCG choice is explicit.", "",
             "usage: harness run [-m] [GROUP=OPTION ...] [KEY=VALUE ...]",
             "       (make run ARGS=\"...\" runs the same in the project's venv)", "",
             "Config groups (pick one option each; default marked *):"]
    for group, what in GROUPS.items():
        folder = conf / group
        options = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
        lines.append(f"  {group}: {what}")
        for path in options:
            mark = "*" if defaults.get(group) == path.stem else " "
            lines.append(f"   {mark} {path.stem:<16} {_describe(path)}".rstrip())
        if group == "hydra/launcher":
            lines.append(f"     {'joblib':<16} Hydra's joblib plugin: jobs in parallel processes")
    lines += ["", "Top-level keys (KEY=VALUE):"]
    lines += [f"  {item}" for item in _top_level(conf)]
    lines += ["", "Any key of a group is set the same way (dataset.n_queries=100, "
              "ranker.noisy_oracle.sigma=0.5);",
              "add a ranker with '+ranker.NAME={kind:random,seed:1}'.", "", "Examples:"]
    width = max(len(cmd) for cmd, _ in EXAMPLES)
    lines += [f"  {cmd:<{width}}  # {what}" for cmd, what in EXAMPLES]
    lines += ["", "Results land in runs/hydra/<study>/<time>/ and in MLflow (make ui); see "
              "README.md.", "Hydra's own help (overrides grammar, --cfg, --multirun, ...): "
              "harness run --hydra-help"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Print the help when asked for and exit 0; otherwise return (the app runs)."""
    if not wants_help(sys.argv[1:] if argv is None else argv):
        return
    sys.stdout.write(render_help(PROJECT_ROOT / "conf"))
    raise SystemExit(0)
