"""The README's walk-through, chained as a new user runs it: the sweep of step 1, then the
compare and reproduce lines of the same code block with the ids the sweep printed, then
the notebook rendered by ``jupyter nbconvert`` against that sweep.

The commands are read from the README's "Compare rankers" code block (looked for in
README.md, then docs/*.md, should the section move), so an edit there is tested as written.
``harness compare ...`` and ``harness reproduce ...`` lines are the short form of
``python -m harness compare ...`` and ``python -m harness reproduce ...`` and run as such,
with this interpreter. Everything goes to a temporary store; the sweep runs on 60 queries.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import harness.paths

PROJECT = Path(harness.paths.PROJECT_ROOT)
README = PROJECT / "README.md"
DOCS = PROJECT / "docs"
HEADING = re.compile(r"^#+ Compare rankers, sweep metric definitions, report, reproduce$", re.M)
TIMEOUT = 600
RUN_ID = r"[0-9a-f]{32}"


def _walkthrough_text() -> str:
    """The Markdown file holding the walk-through's section: README.md, else a docs/ file."""
    for path in [README, *sorted(DOCS.glob("*.md"))]:
        text = path.read_text()
        if HEADING.search(text):
            return text
    raise AssertionError("no 'Compare rankers, sweep metric definitions, report, reproduce' "
                         "section in README.md or docs/*.md")


def _walkthrough_block() -> list[str]:
    text = _walkthrough_text()
    start = HEADING.search(text).start()
    block = re.search(r"```bash\n(.*?)```", text[start:], re.S)
    assert block, "the walk-through's code block is missing"
    return [line for line in block.group(1).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _command(line: str, command: str) -> list[str]:
    """A documented ``harness <command> ...`` (or ``.venv/bin/python -m harness <command>
    ...``) line as this interpreter's argv."""
    argv = shlex.split(line)
    if argv[:2] == ["harness", command]:
        return [sys.executable, "-m", "harness", *argv[1:]]
    assert argv[:4] == [".venv/bin/python", "-m", "harness", command], line
    return [sys.executable, *argv[1:]]


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    return env | {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp}/mlflow.db"}


def _run(argv: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=PROJECT, env=_env(tmp), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, f"{shlex.join(argv)}\n{proc.stdout[-2000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_the_readme_walkthrough_runs_end_to_end(tmp_path: Path) -> None:
    sweep_line, compare_line, reproduce_line = _walkthrough_block()
    # 1. the sweep, as written, into the temporary store
    args = shlex.split(re.match(r'make run ARGS="([^"]*)"', sweep_line).group(1))
    sweep = _run([sys.executable, "-m", "harness", *args, "dataset.n_queries=60",
                  "dataset.n_train_queries=60", "tracking.figures=off",
                  f"tracking.artifact_root={tmp_path}/art", f"tracking.pending_dir={tmp_path}/p",
                  f"cache_dir={tmp_path}/cache", f"hydra.sweep.dir={tmp_path}/sweep"], tmp_path)
    printed = re.search(rf"(?:-m harness\.compare|harness compare) ({RUN_ID})", sweep.stdout)
    assert printed, sweep.stdout[-2000:]
    parent = printed.group(1)
    # 2. compare, the README's line with the id the sweep printed
    line = compare_line.replace("<sweep parent id printed by step 1>", parent)
    compare = _run([*_command(line, "compare"), "--out-dir", str(tmp_path / "reports"),
                    "--resamples", "500", "--pending-dir", str(tmp_path / "pending")],
                   tmp_path)
    assert "the winner changes with the variant" in compare.stdout or "Kendall" in compare.stdout
    report = re.search(r"^report: (\S+report\.html)$", compare.stdout, re.M)
    assert report and Path(report.group(1)).is_file()
    assert f"logged to run {parent} under report/baseline-random-" in compare.stdout
    # 4. reproduce: the README's line with the sweep's id (a sweep run: every ranker run)
    reproduced = _run(_command(reproduce_line.replace("<run id>", parent), "reproduce"),
                      tmp_path)
    lines = [x for x in reproduced.stdout.splitlines() if x.startswith("run ")]
    assert len(lines) == 5 * 6 and all(" identical — " in x for x in lines), \
        reproduced.stdout[-3000:]
    # the notebook, rendered by the project's own nbconvert against this sweep
    out = tmp_path / "nb"
    env = _env(tmp_path) | {"HARNESS_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db",
                            "HARNESS_PARENT_RUN_ID": parent}
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html",
                           "--execute", "--output-dir", str(out),
                           "notebooks/compare_rankers.ipynb"], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (out / "compare_rankers.html").read_text()
    assert parent in html and "Traceback" not in html
