"""A job or a sweep stopped by SIGTERM or Ctrl-C (SIGINT to the process group): one line
saying what was kept and what to run, no traceback, no process left behind, every
finished job's results either logged or pending for ``harness sync``, and the sweep's
parent run closed, FINISHED or FAILED, in every path (SIGKILL included, through sync).

Every job and sweep is a real subprocess (``python -m harness``) in its own session, so a
signal to its process group reaches its workers as Ctrl-C does. "While logging" is made
certain by a ``sitecustomize`` module (on ``PYTHONPATH``, so the job's tracking worker gets
it too) that slows the first ``log_batch`` of a plan by a few seconds and says so on stderr.
The ``harness sync`` that sends what a stopped job left runs in the test's process, by the
command line's own entry (its imports are paid there).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from mlflow.tracking import MlflowClient

import harness.paths

PROJECT = Path(harness.paths.PROJECT_ROOT)


@pytest.fixture(autouse=True)
def store(tmp_path: Path, copy_empty_store: Callable[[Path], str]) -> str:
    """The jobs log to an empty store whose schema exists: what is tested is stopping them,
    not building a store (tests/test_journeys.py starts jobs on a fresh one)."""
    return copy_empty_store(tmp_path)

def slow_hook(module: str, function: str, variable: str, says: str) -> str:
    """A ``sitecustomize`` text that, when ``variable`` is set, makes ``module.function``
    print ``says`` on stderr and sleep that many seconds before it runs."""
    return textwrap.dedent(f"""
        import os, sys, time
        from importlib.abc import MetaPathFinder
        from importlib.machinery import PathFinder

        class _Slow(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name != {module!r}:
                    return None
                spec = PathFinder.find_spec(name, path)
                run = spec.loader.exec_module
                def exec_module(module):
                    run(module)
                    real = module.{function}
                    def slow(*args, **kwargs):
                        print({says!r}, file=sys.stderr, flush=True)
                        time.sleep(float(os.environ[{variable!r}]))
                        return real(*args, **kwargs)
                    module.{function} = slow
                spec.loader.exec_module = exec_module
                return spec

        if os.environ.get({variable!r}):
            sys.meta_path.insert(0, _Slow())
    """)


_SLOW_LOGGING = slow_hook("harness.tracking.log_plan", "batches", "HARNESS_TEST_SLOW_LOG",
                          "SLOW LOGGING")


# an exit handler that never returns: the unwinding a signal starts is stuck (as it was
# when a thread waited on the import lock the main thread was stopped holding)
_STUCK_AT_EXIT = textwrap.dedent("""
    import atexit, threading
    atexit.register(threading.Event().wait)
""")


def _env(tmp: Path, slow: float | None = None, hook_text: str | None = None
         ) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HARNESS_"))}
    env["PYTHONFAULTHANDLER"] = "1"  # a job that does not end is asked for its threads
    if slow is not None:
        hook_text = _SLOW_LOGGING
        env["HARNESS_TEST_SLOW_LOG"] = str(slow)
    if hook_text is not None:
        hook = tmp / "hook"
        hook.mkdir(exist_ok=True)
        (hook / "sitecustomize.py").write_text(hook_text)
        env["PYTHONPATH"] = os.pathsep.join([str(hook), str(PROJECT)])
    return env


def _args(tmp: Path, given: list[str]) -> list[str]:
    """The test's settings, less those ``given`` sets (Hydra takes the last of two). No
    sklearn check unless given: importing sklearn is seconds of each job's CPU."""
    keys = {a.split("=", 1)[0] for a in given}
    return [a for a in ["dataset.n_queries=30", "dataset.n_train_queries=30", "metric=ndcg10",
                        "check.sklearn=off",
                        "tracking.figures=off", f"tracking.uri=sqlite:///{tmp}/mlflow.db",
                        f"tracking.artifact_root={tmp}/art",
                        f"tracking.pending_dir={tmp}/pending", f"cache_dir={tmp}/cache",
                        f"hydra.sweep.dir={tmp}/out", f"hydra.run.dir={tmp}/out",
                        "study=signals"] if a.split("=", 1)[0] not in keys]


def _as_from_a_terminal() -> None:
    """Ctrl-C at its default in the job, as a shell in a terminal starts it. A suite started
    in the background (``make test &``) has SIGINT ignored, every child inherits that, and
    the job rightly keeps ignoring it (tested below), so the Ctrl-C tests would see the job
    finish instead."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _as_from_a_background_shell() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Job:
    """A ``python -m harness`` process in its own session, its output in files."""

    def __init__(self, tmp: Path, args: list[str], slow: float | None = None,
                 hook_text: str | None = None, env: dict[str, str] | None = None,
                 ctrl_c: bool = True) -> None:
        self.tmp = tmp
        self.out, self.err = (tmp / "stdout").open("w+"), (tmp / "stderr").open("w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "harness", *args,
                                      *_args(tmp, args)], cwd=PROJECT,
                                     env={**_env(tmp, slow, hook_text), **(env or {})},
                                     stdout=self.out, stderr=self.err, text=True,
                                     start_new_session=True, preexec_fn=_as_from_a_terminal
                                     if ctrl_c else _as_from_a_background_shell)

    def said(self) -> str:
        return (self.tmp / "stdout").read_text() + (self.tmp / "stderr").read_text()

    def wait_for(self, text: str, timeout: float = 240) -> None:
        end = time.monotonic() + timeout
        while text not in self.said():
            assert self.proc.poll() is None, f"ended before {text!r}:\n{self.said()[-3000:]}"
            assert time.monotonic() < end, f"no {text!r} in {timeout}s:\n{self.said()[-3000:]}"
            time.sleep(0.1)

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def finish(self, timeout: float = 120) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # every thread's stack, then the failure
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(timeout=30)
            pytest.fail(f"not ended {timeout:g} s after it was told to:\n{self.said()[-8000:]}")
        self.out.close()
        self.err.close()
        return code


def _runs(tmp: Path) -> list:
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp}/mlflow.db")
    exp = client.get_experiment_by_name("signals")
    return client.search_runs([exp.experiment_id]) if exp else []


def _no_survivors(procs: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(procs, timeout=15)
    assert alive == [], [(p.pid, p.cmdline()) for p in alive]


def _one_line(said: str, signame: str) -> str:
    assert "Traceback" not in said and "BrokenPipeError" not in said, said[-3000:]
    (line,) = [ln for ln in said.splitlines() if ln.startswith(f"interrupted ({signame})")]
    return line


def _pending(tmp: Path) -> list[Path]:
    return sorted((tmp / "pending").glob("*.json")) if (tmp / "pending").is_dir() else []


@pytest.mark.slow
def test_sigterm_to_a_joblib_sweep_stops_it_and_keeps_every_finished_job(
        tmp_path: Path, sync_in_process: Callable[..., tuple[int, str]]) -> None:
    sweep = Job(tmp_path, ["-m", "ranker=oracle,noisy_oracle", "metric.k=5,10",
                           "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], slow=3)
    sweep.wait_for("SLOW LOGGING")  # a job is logging, others are computing or waiting
    children = sweep.descendants()
    assert any("loky" in " ".join(p.cmdline()) for p in children)
    sweep.proc.send_signal(signal.SIGTERM)
    assert sweep.finish() == 128 + signal.SIGTERM
    _no_survivors(children)  # loky's workers, their tracking workers, its resource tracker
    said = sweep.said()
    line = _one_line(said, "SIGTERM")
    (parent,) = [r for r in _runs(tmp_path) if r.data.tags["harness.role"] == "sweep"]
    assert parent.info.status == "FAILED"
    assert parent.data.tags["harness.interrupted"] == "SIGTERM"
    assert f"sweep parent run {parent.info.run_id} closed as FAILED" in line
    finished = sorted(p.name for p in (tmp_path / "out").iterdir()
                      if (p / "summary.csv").is_file() and not (p / "INCOMPLETE").exists())
    if _pending(tmp_path):
        assert f"log plan(s) wait in {tmp_path / 'pending'}: run harness sync" in line
    code, said = sync_in_process("--pending-dir", str(tmp_path / "pending"))
    assert code == 0, said
    assert _pending(tmp_path) == []
    runs = [r for r in _runs(tmp_path) if r.data.tags["harness.role"] == "ranker"]
    jobs = Counter(r.data.tags["job"].split(":", 1)[0] for r in runs)
    assert sorted(jobs) == finished and set(jobs.values()) == {1}, (jobs, finished)
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert _runs(tmp_path)[0].info.status != "RUNNING"
    assert [r.info.status for r in _runs(tmp_path) if r.data.tags["harness.role"] == "sweep"
            ] == ["FAILED"]  # the jobs' plans sent after it do not reopen it


@pytest.mark.slow
@pytest.mark.parametrize("worker", ["true", "false"])
def test_ctrl_c_while_a_job_logs_says_what_was_kept(
        tmp_path: Path, worker: str, sync_in_process: Callable[..., tuple[int, str]]) -> None:
    """SIGINT to the job's process group (its tracking worker gets it too)."""
    job = Job(tmp_path, ["ranker=oracle", "+ranker.coin={kind:random,seed:3}",
                         f"tracking.worker={worker}"], slow=30)
    job.wait_for("SLOW LOGGING")
    children = job.descendants()
    os.killpg(job.proc.pid, signal.SIGINT)
    assert job.finish() == 128 + signal.SIGINT
    _no_survivors(children)
    said = job.said()
    line = _one_line(said, "SIGINT")
    (plan,) = _pending(tmp_path)
    assert line == (f"interrupted (SIGINT) while logging: the results are kept in "
                    f"{tmp_path / 'out'}, the log plan in {plan}; send it with: harness sync "
                    f"--pending-dir {tmp_path / 'pending'}")
    assert "KeyboardInterrupt" not in said
    code, synced = sync_in_process("--pending-dir", str(tmp_path / "pending"))
    assert code == 0, synced
    runs = _runs(tmp_path)
    assert sorted(r.data.tags["harness.role"] for r in runs) == ["job", "ranker", "ranker"]
    assert {r.info.status for r in runs} == {"FINISHED"}


@pytest.mark.slow
def test_a_job_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path: Path) -> None:
    """A job started in the background by a shell (SIGINT ignored) is not stopped by a
    SIGINT: it finishes and logs, as any program started with ``&`` does."""
    job = Job(tmp_path, ["ranker=oracle", "tracking.worker=false"], slow=3, ctrl_c=False)
    job.wait_for("SLOW LOGGING")
    os.killpg(job.proc.pid, signal.SIGINT)
    assert job.finish() == 0, job.said()[-3000:]
    assert "interrupted" not in job.said() and len(_runs(tmp_path)) == 2


@pytest.mark.slow
def test_sigterm_while_a_job_logs_through_its_worker(
        tmp_path: Path, sync_in_process: Callable[..., tuple[int, str]]) -> None:
    """SIGTERM to the job's process only: its tracking worker is ended without the
    ``BrokenPipeError`` it used to print; the plan waits for sync."""
    job = Job(tmp_path, ["ranker=oracle"], slow=30)
    job.wait_for("SLOW LOGGING")
    children = job.descendants()
    assert any("harness.tracking.worker" in " ".join(p.cmdline()) for p in children)
    job.proc.send_signal(signal.SIGTERM)
    assert job.finish() == 128 + signal.SIGTERM
    _no_survivors(children)
    time.sleep(1)  # anything a straggler would print
    line = _one_line(job.said(), "SIGTERM")
    assert "while logging" in line and len(_pending(tmp_path)) == 1
    assert sync_in_process("--pending-dir", str(tmp_path / "pending"))[0] == 0
    assert len(_runs(tmp_path)) == 2


def test_sigterm_while_a_job_computes_leaves_nothing(tmp_path: Path) -> None:
    # the check too: a job that computes as long as before
    job = Job(tmp_path, ["ranker=oracle", "dataset.n_queries=3000", "check.sklearn=fail"])
    job.wait_for("engine: local")
    job.proc.send_signal(signal.SIGTERM)
    assert job.finish() == 128 + signal.SIGTERM
    line = _one_line(job.said(), "SIGTERM")
    assert "before the results were complete: nothing was logged" in line
    assert not (tmp_path / "out").exists() and _pending(tmp_path) == []


def test_a_stopped_job_whose_unwinding_is_stuck_ends_after_the_grace(tmp_path: Path) -> None:
    job = Job(tmp_path, ["ranker=oracle", "dataset.n_queries=3000", "check.sklearn=fail"],
              hook_text=_STUCK_AT_EXIT, env={"HARNESS_STOP_GRACE": "2"})
    job.wait_for("engine: local")
    job.proc.send_signal(signal.SIGTERM)
    # exit 143 and no thread dump: ended by the grace, not by faulthandler's last resort
    assert job.finish(timeout=60) == 128 + signal.SIGTERM
    said = job.said()
    assert "before the results were complete: nothing was logged" in said
    assert ("interrupted (SIGTERM): did not stop within 2 s (HARNESS_STOP_GRACE), ended "
            "without closing what was open") in said
    assert "Traceback" not in said and "Thread 0x" not in said


def _not_a_grace(grace: str) -> str:
    return (f"error: HARNESS_STOP_GRACE={grace!r} is not a number of seconds (above 0, below "
            "a day); leave it unset for the default 60")


def test_a_stop_grace_that_is_not_a_duration_is_refused_at_start(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "harness", *_args(tmp_path, [])],
                          cwd=PROJECT, env={**_env(tmp_path), "HARNESS_STOP_GRACE": "soon"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == _not_a_grace("soon")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("grace", ["0", "-5"])
def test_a_stop_grace_out_of_range_is_refused_before_the_handlers(
        tmp_path: Path, grace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's entry in this process (the refusal's exit and line are the process's,
    tested above): it leaves before it sets a signal handler or runs anything."""
    from harness.app.main import MAIN_PID_ENV, main

    # a key no config has: were the grace let through, Hydra would refuse it (exit 1), not run
    monkeypatch.setattr(sys, "argv", ["harness", *_args(tmp_path, []), "no_such_key=1"])
    monkeypatch.setenv("HARNESS_STOP_GRACE", grace)
    monkeypatch.setenv(MAIN_PID_ENV, "")  # main() sets it: put back afterwards
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(SystemExit) as refused:  # a str's exit: printed, exit code 1
        main()
    assert refused.value.code == _not_a_grace(grace)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == handlers
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_sweeps_parent_ends_finished_or_failed_in_every_path(
        tmp_path: Path, copy_empty_store: Callable[[Path], str],
        sync_in_process: Callable[..., tuple[int, str]]) -> None:
    """Finished: FINISHED, its closing plan gone. A failed job: FAILED. The launching
    process killed (SIGKILL, no handler runs): RUNNING until ``harness sync``, which the
    plan the sweep held closes FAILED (a sync during the sweep leaves it alone)."""
    def parent(tmp: Path) -> object:
        (run,) = [r for r in _runs(tmp) if r.data.tags["harness.role"] == "sweep"]
        return run

    ok = tmp_path / "ok"
    copy_empty_store(ok)
    sweep = Job(ok, ["-m", "ranker=oracle", "metric.k=5,10"])
    assert sweep.finish(300) == 0, sweep.said()[-3000:]
    assert parent(ok).info.status == "FINISHED"
    assert not (ok / "pending").exists() or list((ok / "pending").iterdir()) == []

    bad = tmp_path / "bad"
    copy_empty_store(bad)
    sweep = Job(bad, ["-m", "ranker=oracle", "+ranker.bad={kind:column,column:nope}",
                      "metric.k=5,10"])
    assert sweep.finish(300) == 2, sweep.said()[-3000:]
    assert parent(bad).info.status == "FAILED" and _pending(bad) == []

    killed = tmp_path / "killed"
    copy_empty_store(killed)
    sweep = Job(killed, ["-m", "ranker=oracle", "metric.k=5,10,20"], slow=30)
    sweep.wait_for("SLOW LOGGING")
    children = sweep.descendants()
    # the sweep holds its closing plan: left to it
    code, during = sync_in_process("--pending-dir", str(killed / "pending"))
    assert code == 0 and "left to it" in during, during
    assert parent(killed).info.status == "RUNNING"
    os.killpg(sweep.proc.pid, signal.SIGKILL)
    sweep.finish()
    _no_survivors(children)
    assert parent(killed).info.status == "RUNNING"
    names = [p.name for p in _pending(killed)]
    assert f"sweep-{parent(killed).info.run_id}.json" in names
    code, after = sync_in_process("--pending-dir", str(killed / "pending"))
    assert code == 0, after
    assert parent(killed).info.status == "FAILED" and _pending(killed) == []
    assert re.search(r"sweep-[0-9a-f]{32}\.json: logged to", after), after
