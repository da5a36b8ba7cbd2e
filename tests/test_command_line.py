"""``harness <command>``: the one command line (harness.commands.dispatch). Its help lists
every command, each command answers ``--help``, an unknown command is one line naming the
closest, and Hydra overrides without a command run a study (``run`` is the default)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness.paths
from harness.commands.dispatch import COMMANDS, starts_a_study

PROJECT = Path(harness.paths.PROJECT_ROOT)
SCRIPT = Path(sys.executable).with_name("harness")  # the console script pyproject installs


def harness_cli(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.is_file(), "pip install -e . writes the console script beside python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    return subprocess.run([str(SCRIPT), *args], cwd=PROJECT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_help_lists_every_command_on_one_line_and_the_exit_codes() -> None:
    proc = harness_cli("--help")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    out = proc.stdout
    assert out.startswith("usage: harness <command> [args ...]")
    listed = [line.split()[0] for line in out.split("commands:\n", 1)[1].split("\n\n")[0]
              .splitlines()]
    assert listed == list(COMMANDS) and listed[0] == "run"  # the registry, in its order
    for name, command in COMMANDS.items():
        assert f"  {name:<10}  {command.summary}\n" in out
    assert "0 ok, 1 a finding" in out and "2 bad input" in out and "3 service unreachable" in out
    assert harness_cli("-h").stdout == out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_answers_help(name: str) -> None:
    proc = harness_cli(name, "--help")
    assert proc.returncode == 0, proc.stderr
    if name == "run":  # the study's own help: its config groups and overrides
        assert "Config groups" in proc.stdout and "dataset:" in proc.stdout
    else:
        assert proc.stdout.startswith(f"usage: harness {name} "), proc.stdout[:200]


def test_python_dash_m_harness_is_the_one_module_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-m", "harness", "sync", "--help"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: harness sync")
    gone = subprocess.run([sys.executable, "-m", "harness.sync", "--help"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=120)
    assert gone.returncode != 0  # the shims are retired: one way in


@pytest.mark.parametrize(("typed", "closest"), [("compar", "compare"), ("scored_run",
                                                 "scored-run"), ("reprodcue", "reproduce")])
def test_an_unknown_command_is_one_line_naming_the_closest(typed: str, closest: str) -> None:
    proc = harness_cli(typed)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"error: unknown command {typed!r} (did you mean {closest!r}?)")
    assert f"commands: {', '.join(COMMANDS)}" in line


def test_an_unknown_name_or_option_lists_the_commands() -> None:
    proc = harness_cli("dataset")  # an override without '=' is no command either
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "unknown command 'dataset';" in line and "key=value" in line
    proc = harness_cli("--tracking-uri", "x")
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: unknown option '--tracking-uri'") and "compare" in line


def test_what_starts_a_study() -> None:
    for arg in ("dataset=letor", "+ranker.coin={kind:random}", "~metric.extra", "-m",
                "--multirun", "--cfg", "--hydra-help", "dataset.n_queries=5"):
        assert starts_a_study(arg), arg
    for arg in ("compare", "dataset", "--help", "-h", "--version", "--tracking-uri"):
        assert not starts_a_study(arg), arg


def test_overrides_without_a_command_run_a_study(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = harness_cli("dataset.n_queries=20", "dataset.n_train_queries=20", "ranker=oracle",
                       "metric=ndcg10", "tracking=off", f"hydra.run.dir={out}",
                       f"cache_dir={tmp_path}/cache", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"Files: {out}" in proc.stdout and "MLflow: not logged" in proc.stdout
    assert (out / "per_query").is_dir()
    # the same study by its name, with a bad override: one line, exit 2
    proc = harness_cli("run", "dataset.n_queries=-1", "tracking=off",
                       f"hydra.run.dir={tmp_path}/bad", timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
