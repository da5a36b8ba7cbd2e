"""Every ``make run`` command of README.md and docs/*.md, and every ``conf/experiment/``
bundle, runs.

The commands are read from the code blocks of README.md and of every Markdown file in
docs/ (``make run`` and ``make run ARGS="..."``), so a command added to the README or moved
into docs/ is tested without editing this file. Each runs as ``python -m harness <args>`` in a subprocess (``make run ARGS=...`` does
exactly that, after installing the venv), writing into one temporary MLflow store.

Overrides added to every command, and why:

- ``tracking.uri``, ``tracking.pending_dir``, ``tracking.artifact_root``, ``cache_dir``,
  ``hydra.run.dir``, ``hydra.sweep.dir``: everything goes to pytest's tmp dirs, nothing to
  the project's ``runs/`` (checked below);
- ``tracking.figures=false`` and ``tracking.bootstrap_resamples=200``: the figures and the
  2,000-resample bootstrap are tested elsewhere (tests/test_app_e2e.py) and cost seconds per
  job here.

The environment sets ``OMP_NUM_THREADS=1`` (see the test body for why).

Overrides added only where the command would be slow:

- on the synthetic dataset, ``dataset.n_queries=40 dataset.n_train_queries=40`` (400 + 400
  by default);
- on the CAsT 2021 runs, ``judgments.interval=off``: their judgment intervals take ~15 s
  a job here and tests/test_datasets.py runs ``experiment=cast2021`` with them;
- on ``lightgbm_sample``, 10 boosting rounds for each model it trains (hgb's ``max_iter``,
  the learning-to-rank models' ``n_estimators`` / ``iterations``: 100 rounds over 300
  features take ~10 s a model, the rest of the job ~3 s).

The ``dataset=parquet_run dataset.path=runs/big.parquet`` lines read a file docs/scaling.md
makes with ``harness scored-run runs/big.parquet --queries 1000000`` (110M rows); here
the path is replaced by a file of 200 queries written the same way into a tmp dir.

The command that adds a ranker ``models:/ranker/1`` needs that model: the README's line
before it (``python -m harness.tracking.example_model``) registers it; here it runs first,
as written, into the temporary store.
``harness compare`` and ``harness reproduce`` lines are not ``make run`` commands and are
tested in tests/test_compare.py, tests/test_reproduce.py and, as the README's walk-through
chains them after its sweep, below (on the sweep this module's fixture already ran).

The closing lines of a sweep and the job prefixes of parallel jobs are checked on the
README's own sweeps here too (no other sweep is started for them).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

import harness.paths

PROJECT = Path(harness.paths.PROJECT_ROOT)
README = PROJECT / "README.md"
DOCS = PROJECT / "docs"
TIMEOUT = 300
_FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
_MAKE_RUN = re.compile(r'^make run(?: ARGS="([^"]*)")?(?:\s|$)')


def documents() -> list[Path]:
    """README.md and every Markdown file of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def commands_in(path: Path) -> list[list[str]]:
    """The argument lists of every ``make run`` line in the code blocks of one file."""
    out = []
    for block in _FENCE.findall(path.read_text()):
        for line in block.splitlines():
            match = _MAKE_RUN.match(line.strip())
            if match:
                out.append(shlex.split(match.group(1) or ""))
    return out


def readme_commands() -> list[list[str]]:
    """The argument lists of every ``make run`` line in the code blocks of README.md and
    docs/*.md."""
    return [args for path in documents() for args in commands_in(path)]


def experiment_bundles() -> list[list[str]]:
    return [[f"experiment={p.stem}"] for p in sorted((PROJECT / "conf/experiment").glob("*.yaml"))]


def _commands() -> list[list[str]]:
    seen: list[list[str]] = []
    for args in readme_commands() + experiment_bundles():
        if args not in seen:
            seen.append(args)
    return seen


def _dataset_of(args: list[str]) -> str:
    """The dataset a command selects (directly or through its experiment bundle)."""
    for arg in args:
        if arg.startswith("dataset="):
            return arg.split("=", 1)[1]
    for arg in args:
        if arg.startswith("experiment="):
            text = (PROJECT / "conf/experiment" / f"{arg.split('=', 1)[1]}.yaml").read_text()
            match = re.search(r"override /dataset: (\w+)", text)
            if match:
                return match.group(1)
    return "synthetic"


def _small(args: list[str]) -> list[str]:
    dataset = _dataset_of(args)
    if dataset == "synthetic":
        return ["dataset.n_queries=40", "dataset.n_train_queries=40"]
    if dataset.startswith("cast2021"):
        return ["judgments.interval=off"]  # the bundle's intervals: tests/test_datasets.py
    if dataset != "lightgbm_sample":
        return []
    chosen = [a.split("=", 1)[1] for a in args if a.startswith("ranker=")]
    if any(a.startswith("experiment=") for a in args) or chosen == ["baselines"]:
        return ["ranker.hgb.params.max_iter=10"]  # the bundles train hgb
    # the dataset's own rankers (the three learning-to-rank models and hgb), or those named:
    # 10 boosting rounds each (100 by default: about 12 s of training a job here)
    rounds = {"lambdamart": "ranker.lambdamart.params.n_estimators=10",
              "xgb_ranker": "ranker.xgb_ranker.params.n_estimators=10",
              "catboost_ranker": "ranker.catboost_ranker.params.iterations=10",
              "hgb": "ranker.hgb.params.max_iter=10"}
    names = set(chosen) if chosen else set(rounds)
    if "ltr" in names:
        names |= {"lambdamart", "xgb_ranker", "catboost_ranker"}
    return [rounds[n] for n in rounds if n in names]


def _local(args: list[str], big: Path) -> list[str]:
    """The command with the README's big parquet file replaced by the small one."""
    return [f"dataset.path={big}" if a == "dataset.path=runs/big.parquet" else a for a in args]


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.is_dir() else set()


def register_commands() -> list[list[str]]:
    """The argument lists of the README's ``python -m harness.tracking.example_model`` lines
    (what registers the model its ``mlflow_model`` line evaluates)."""
    out = []
    for block in _FENCE.findall(README.read_text()):
        for line in block.splitlines():
            if line.strip().startswith("python -m harness.tracking.example_model"):
                out.append(shlex.split(line.split("#", 1)[0])[1:])
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary MLflow store holding the model the README registers before its line with
    ``models:/ranker/1``: the README's registration command, run as written (with the
    store and the artifact root pointed at tmp dirs), must print that URI."""
    root = tmp_path_factory.mktemp("readme_store")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{root}/mlflow.db"
    printed = []
    for args in register_commands():
        proc = subprocess.run([sys.executable, *args, "--artifact-root", str(root / "a")],
                              cwd=PROJECT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stderr[-3000:]
        printed.append(proc.stdout.strip().splitlines()[-1])
    assert printed == ["models:/ranker/1"]
    return root


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small stand-in for docs/scaling.md's runs/big.parquet, written by the same
    command (``harness scored-run`` is ``python -m harness scored-run``)."""
    path = tmp_path_factory.mktemp("scored") / "big.parquet"
    subprocess.run([sys.executable, "-m", "harness", "scored-run", str(path), "--queries", "200"],
                   cwd=PROJECT, check=True, capture_output=True, timeout=TIMEOUT)
    return path


def test_the_readme_has_the_commands_this_file_expects() -> None:
    commands = readme_commands()
    assert [] in commands  # plain `make run`
    assert ["dataset=lightgbm_sample"] in commands
    assert any(a[:1] == ["-m"] for a in commands)
    assert len(commands) >= 7


def test_commands_are_read_from_the_docs_folder_too() -> None:
    """Commands moved out of README.md into docs/ are still found and run: the streaming and
    Dask lines live in docs/scaling.md, the convention-diff line in docs/measures.md."""
    in_docs = [args for path in documents()[1:] for args in commands_in(path)]
    assert len(documents()) > 1 and in_docs
    assert all(args in readme_commands() for args in in_docs)
    assert any("dataset=parquet_run" in args and "engine=dask" in args for args in in_docs)
    assert any(a.startswith("explain.pairs=") for args in in_docs for a in args)


@dataclass
class Finished:
    proc: subprocess.CompletedProcess[str]
    out: Path


def _run(args: list[str], root: Path, store: Path, big: Path, env: dict[str, str]) -> Finished:
    out = root / "out"
    added = [f"tracking.uri=sqlite:///{store}/mlflow.db",
             f"tracking.pending_dir={root / 'pending'}",
             f"tracking.artifact_root={store / 'artifacts'}", f"cache_dir={root / 'cache'}",
             f"hydra.run.dir={out}", f"hydra.sweep.dir={out}", "tracking.figures=false",
             "tracking.bootstrap_resamples=200", *_small(args)]
    proc = subprocess.run([sys.executable, "-m", "harness", *_local(args, big), *added],
                          cwd=PROJECT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    return Finished(proc, out)


@dataclass
class Suite:
    """Every command's result, and the project's runs/ folder before and after."""

    results: dict[str, Finished]
    runs_before: set[str]
    runs_after: set[str]


@pytest.fixture(scope="module")
def suite(store: Path, big: Path, shared_data: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """Every command, run two at a time (the machine has two cores; the store already
    exists, so concurrent jobs only add runs to it, as a joblib sweep's jobs do)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["HARNESS_SHARED_DATA"] = str(shared_data)
    # sklearn's HistGradientBoosting spins OpenMP threads; on a busy 2-core machine its 100
    # rounds on 40 queries took 67 s instead of 0.4 s. One thread keeps the test's time stable.
    env["OMP_NUM_THREADS"] = "1"
    before = _tree(PROJECT / "runs")
    commands = {_id(args): args for args in _commands()}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {key: pool.submit(_run, args, tmp_path_factory.mktemp("cmd"), store, big, env)
                   for key, args in commands.items()}
        results = {key: future.result() for key, future in futures.items()}
    return Suite(results, before, _tree(PROJECT / "runs"))


def _id(args: list[str]) -> str:
    return " ".join(args) or "make run"


def test_nothing_is_written_to_the_projects_runs_folder(suite: Suite) -> None:
    assert suite.runs_after == suite.runs_before


@pytest.mark.parametrize("args", _commands(), ids=_id)
def test_command_runs(args: list[str], suite: Suite) -> None:
    proc, out = suite.results[_id(args)].proc, suite.results[_id(args)].out
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    summaries = sorted(out.rglob("summary.csv"))
    jobs = 1
    if args[:1] == ["-m"]:  # a sweep: one job per combination of the comma lists
        for arg in args[1:]:
            jobs *= len(arg.split("=", 1)[1].split(",")) if "=" in arg and "{" not in arg else 1
    assert len(summaries) == jobs, (args, summaries)
    for path in summaries:
        summary = pd.read_csv(path)
        assert len(summary) > 0 and summary.notna().any(axis=None)
    # local_processes jobs log to their own files, the others to the console
    logs = proc.stdout + proc.stderr + "".join(p.read_text() for p in out.rglob("*.log"))
    assert logs.count("logged to MLflow") >= jobs


def eval_commands() -> list[list[str]]:
    """The argument lists of every ``harness eval`` line in the code blocks of README.md and
    docs/*.md (the reference data's ``../shared/data`` read where the tests read it)."""
    from tests.shared import shared_data_dir

    out = []
    for path in documents():
        for block in _FENCE.findall(path.read_text()):
            for line in block.splitlines():
                if line.strip().startswith("harness eval "):
                    text = line.strip().replace("../shared/data", str(shared_data_dir()))
                    out.append(shlex.split(text)[2:])
    return out


def test_the_docs_show_harness_eval() -> None:
    assert len(eval_commands()) >= 3


@pytest.mark.parametrize("args", eval_commands(), ids=lambda a: " ".join(a)[-60:])
def test_every_harness_eval_line_of_the_docs_runs(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "harness", "eval", *args], cwd=PROJECT,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and "Traceback" not in proc.stderr
    if "--format" not in args:  # trec_eval's lines: name, qid, value
        assert all(len(line.split("\t")) == 3 for line in lines)


def _sweeps(suite: Suite, launcher: str) -> list[tuple[list[str], Finished]]:
    """The README's sweeps (``-m``) run by ``launcher`` (``basic``: Hydra's own, none named),
    with their results."""
    out = []
    for args in _commands():
        named = [a.split("=", 1)[1] for a in args if a.startswith("hydra/launcher=")]
        if args[:1] == ["-m"] and (named or ["basic"]) == [launcher]:
            out.append((args, suite.results[_id(args)]))
    return out


def test_a_sweep_ends_with_its_parent_and_next_steps(suite: Suite, store: Path) -> None:
    """Every README sweep run by Hydra's own launcher closes with its parent run, the
    ``harness compare`` line for it and where its jobs' files are."""
    sweeps = _sweeps(suite, "basic")
    assert sweeps
    for args, done in sweeps:
        parent = (done.out / ".mlflow_parent_run_id").read_text().strip()
        assert f"sweep parent run   {parent}" in done.proc.stdout, args
        assert re.search(rf"harness compare {parent}(?: --baseline \S+)? --tracking-uri "
                         rf"sqlite:///{re.escape(str(store))}/mlflow.db\n", done.proc.stdout), args
        assert f"Files: {done.out}/<job number>/" in done.proc.stdout, args


def test_parallel_sweep_jobs_say_which_job_wrote_each_line(suite: Suite) -> None:
    """The README's joblib sweep: Hydra's ``#<n> : <overrides>`` lines map the job numbers,
    and each job's lines on the shared console start with ``[job <n>]``."""
    sweeps = _sweeps(suite, "joblib")
    assert sweeps
    for args, done in sweeps:
        text = done.proc.stdout + done.proc.stderr
        launched = dict(re.findall(r"#(\d+) : (.*)", text))
        assert len(launched) == len(sorted(done.out.rglob("summary.csv"))) > 1, args
        for num, overrides in launched.items():
            ranker = re.search(r"\branker=(\w+)", overrides).group(1)
            assert re.search(rf"\[job {num}\] \[1/1\] ranker {ranker}\b", text), text[-3000:]


WALKTHROUGH = re.compile(r"^#+ Compare rankers, sweep metric definitions, report, reproduce$",
                         re.M)
RUN_ID = r"[0-9a-f]{32}"


def _walkthrough_block() -> list[str]:
    """The lines of the README's walk-through code block (README.md, else the docs/ file
    that holds its section, should it move)."""
    for path in documents():
        text = path.read_text()
        start = WALKTHROUGH.search(text)
        if start:
            block = re.search(r"```bash\n(.*?)```", text[start.start():], re.S)
            assert block, "the walk-through's code block is missing"
            return [line for line in block.group(1).splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
    raise AssertionError("no 'Compare rankers, sweep metric definitions, report, reproduce' "
                         "section in README.md or docs/*.md")


def _harness_line(line: str, command: str) -> list[str]:
    """A documented ``harness <command> ...`` (or ``.venv/bin/python -m harness <command>
    ...``) line as this interpreter's argv."""
    argv = shlex.split(line)
    if argv[:2] == ["harness", command]:
        return [sys.executable, "-m", "harness", *argv[1:]]
    assert argv[:4] == [".venv/bin/python", "-m", "harness", command], line
    return [sys.executable, *argv[1:]]


def test_the_readme_walkthrough_runs_end_to_end(suite: Suite, store: Path,
                                                tmp_path: Path) -> None:
    """The README's walk-through, chained as a new user runs it: its sweep (step 1, one of
    the commands run above), then the compare and reproduce lines of the same code block
    with the id the sweep printed, then the notebook rendered by ``jupyter nbconvert``
    against that sweep. ``harness compare ...`` runs as ``python -m harness compare ...``."""
    sweep_line, compare_line, reproduce_line = _walkthrough_block()
    args = shlex.split(re.match(r'make run ARGS="([^"]*)"', sweep_line).group(1))
    sweep = suite.results[_id(args)].proc
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    printed = re.search(rf"(?:-m harness\.compare|harness compare) ({RUN_ID})", sweep.stdout)
    assert printed, sweep.stdout[-2000:]
    parent = printed.group(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{store}/mlflow.db"

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(argv, cwd=PROJECT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert proc.returncode == 0, f"{shlex.join(argv)}\n{proc.stdout[-2000:]}\n" \
                                     f"{proc.stderr[-3000:]}"
        return proc

    # 2. compare, the README's line with the id the sweep printed
    line = compare_line.replace("<sweep parent id printed by step 1>", parent)
    compare = run([*_harness_line(line, "compare"), "--out-dir", str(tmp_path / "reports"),
                   "--resamples", "500", "--pending-dir", str(tmp_path / "pending")])
    assert "the winner changes with the variant" in compare.stdout or "Kendall" in compare.stdout
    report = re.search(r"^report: (\S+report\.html)$", compare.stdout, re.M)
    assert report and Path(report.group(1)).is_file()
    assert f"logged to run {parent} under report/baseline-random-" in compare.stdout
    # 4. reproduce: the README's line with the sweep's id (a sweep run: every ranker run)
    reproduced = run(_harness_line(reproduce_line.replace("<run id>", parent), "reproduce"))
    lines = [x for x in reproduced.stdout.splitlines() if x.startswith("run ")]
    assert len(lines) == 5 * 6 and all(" identical — " in x for x in lines), \
        reproduced.stdout[-3000:]
    # the notebook, rendered by the project's own nbconvert against this sweep
    out = tmp_path / "nb"
    env |= {"HARNESS_TRACKING_URI": env["MLFLOW_TRACKING_URI"], "HARNESS_PARENT_RUN_ID": parent}
    run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute",
         "--output-dir", str(out), "notebooks/compare_rankers.ipynb"])
    html = (out / "compare_rankers.html").read_text()
    assert parent in html and "Traceback" not in html
