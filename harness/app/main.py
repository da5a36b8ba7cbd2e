"""``python -m harness [overrides]``: the Hydra entry point, a thin shell over run_study."""

from __future__ import annotations

import atexit
import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from harness.app.callbacks import ACTIVE, PARENT_ENV, failed_job_file, parent_run_file
from harness.app.config import register_configs
from harness.app.hydra_guard import install as guard_callbacks
from harness.errors import HarnessError
from harness.paths import PENDING_DIR, PROJECT_ROOT, project_path

log = logging.getLogger("harness")

register_configs()
guard_callbacks()  # only the callbacks the project ships are built


@hydra.main(version_base="1.3", config_path=str(PROJECT_ROOT / "conf"), config_name="config")
def _main(cfg: DictConfig) -> None:
    from harness.app.study import run_study  # here, so --help and config errors answer fast

    hc = HydraConfig.get()
    if hc.mode == RunMode.MULTIRUN and os.environ.get(MAIN_PID_ENV, str(os.getpid())) \
            != str(os.getpid()):  # a launcher's worker process (joblib's loky, submitit)
        _die_with_parent()
    if hc.mode != RunMode.MULTIRUN:  # what an interruption of this job says
        _JOB[:] = [Path(hc.runtime.output_dir), project_path(cfg.tracking.pending_dir)]
    parent = None
    label = ""
    if hc.mode == RunMode.MULTIRUN:
        path = parent_run_file(hc.sweep.dir)
        parent = path.read_text().strip() if path.is_file() else os.environ.get(PARENT_ENV)
        label = f"{hc.job.num}:{hc.job.override_dirname}" if hc.job.override_dirname \
            else str(hc.job.num)
    # parallel jobs share one console: each line says which job wrote it (Hydra's
    # "Launching jobs" lines map the numbers to the overrides); removed when the job ends,
    # since the basic launcher runs every job in this process
    prefix = _JobPrefix(f"[job {hc.job.num}] ") if hc.mode == RunMode.MULTIRUN else None
    if prefix is not None:
        log.addFilter(prefix)
    # the job's overrides less where its outputs go (hydra.job.config.override_dirname)
    hidden = set(hc.job.config.override_dirname.exclude_keys)
    title = " ".join(o for o in hc.overrides.task if o.split("=", 1)[0].lstrip("+~")
                     not in hidden) if hc.mode != RunMode.MULTIRUN else ""
    try:
        result = run_study(cfg, Path(hc.runtime.output_dir), parent_run_id=parent,
                           job_label=label, title=title)
        if hc.mode != RunMode.MULTIRUN:  # a sweep prints one summary at its end
            print("\n" + result.closing_summary(str(cfg.study)), flush=True)
    except HarnessError as exc:  # bad input, a failed check, MLflow down: one clear line
        log.error("%s", exc)
        code = getattr(exc, "exit_code", 2)
        if hc.mode != RunMode.MULTIRUN:
            _drop_if_empty(Path(hc.runtime.output_dir))
            sys.exit(code)
        # let the other jobs of the sweep run; the sweep callback exits non-zero at the end
        failed_job_file(hc.sweep.dir, hc.job.num).write_text(f"{code}\n{exc}\n")
    finally:
        if prefix is not None:
            log.removeFilter(prefix)


#: Set by :func:`main` to its process id; a sweep job run in another process (a launcher's
#: worker) inherits it and so knows that it is one.
MAIN_PID_ENV = "HARNESS_MAIN_PID"
_WATCHED: list[int] = []


def _die_with_parent() -> None:
    """End this worker process when the sweep's process that started it is gone (SIGKILL,
    which no handler sees): loky's workers, and its resource tracker once they are gone,
    would otherwise live on under PID 1 holding the caller's output open. A daemon thread
    checks the parent twice a second (once per process; it imports nothing)."""
    if _WATCHED:
        return
    _WATCHED.append(os.getppid())

    def watch() -> None:
        while os.getppid() == _WATCHED[0]:
            time.sleep(0.5)
        os._exit(128 + signal.SIGTERM)  # as if stopped: the job is INCOMPLETE or planned

    threading.Thread(target=watch, name="harness-parent-watch", daemon=True).start()


class _JobPrefix(logging.Filter):
    """Prefixes every record of the ``harness`` logger with the sweep job it comes from."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = f"{self.prefix}{record.msg}"
        return True


def _drop_if_empty(out: Path) -> None:
    """Remove a job's output folder that holds nothing but what Hydra put there (``.hydra``,
    ``main.log``) and the job's ``INCOMPLETE`` mark: the job failed before writing any
    result (its error is on the console), e.g. a ranker that could not score after others
    had. A folder with results in it stays, marked ``INCOMPLETE``."""
    import shutil

    from harness.app.results import INCOMPLETE

    if out.is_dir() and {p.name for p in out.iterdir()} <= {".hydra", "main.log", INCOMPLETE}:
        shutil.rmtree(out, ignore_errors=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so that it unwinds as Ctrl-C does: joblib
    stops its workers (and their children), a job's tracking worker is ended, the sweep's
    parent run is closed."""


#: Seconds a stopped job or sweep has to unwind (stop its workers, close its parent run,
#: say what it kept) before it ends anyway; the environment variable sets another.
STOP_GRACE_ENV, STOP_GRACE = "HARNESS_STOP_GRACE", 60.0
_GRACE: list[float] = [STOP_GRACE]  # main() reads the environment's value into it
_STOPPED: list[int] = []  # the first SIGTERM or Ctrl-C


def _stop_grace() -> float:
    raw = os.environ.get(STOP_GRACE_ENV)
    try:
        grace = STOP_GRACE if raw is None else float(raw)
    except ValueError:
        grace = -1.0
    if not 0 < grace < 86_400:
        raise SystemExit(f"error: {STOP_GRACE_ENV}={raw!r} is not a number of seconds "
                         "(above 0, below a day); leave it unset for the default "
                         f"{STOP_GRACE:g}")
    return grace


def _arm(signum: int) -> None:
    """Bound the unwinding a signal starts. A thread waiting on one the main thread was
    stopped in the middle of (a signal handled between the interpreter's taking its import
    lock and the ``try`` that releases it leaves the lock held) would otherwise keep the
    process forever. SIGALRM ends it with the usual exit code; should the main thread be
    stuck where no Python handler can run, faulthandler dumps every thread and exits."""
    if _STOPPED:
        return
    _STOPPED.append(signum)
    signal.signal(signal.SIGALRM, _give_up)
    signal.setitimer(signal.ITIMER_REAL, _GRACE[0])
    faulthandler.dump_traceback_later(_GRACE[0] + 15, exit=True)


def _give_up(signum: int, frame: object) -> None:
    stopped, grace = _STOPPED[0], _GRACE[0]
    os.write(2, (f"interrupted ({signal.Signals(stopped).name}): did not stop within "
                 f"{grace:g} s ({STOP_GRACE_ENV}), ended without closing what was open; "
                 "log plans left pending are sent by harness sync\n").encode())
    os._exit(128 + stopped)


def _terminate(signum: int, frame: object) -> None:
    _arm(signum)
    raise Terminated()


def _interrupt(signum: int, frame: object) -> None:
    _arm(signum)
    raise KeyboardInterrupt()


_JOB: list[Path] = []  # a single job's (output folder, pending folder)


def _interrupted(signame: str) -> str:
    """The one line an interrupted job or sweep ends with: what was kept, what to run."""
    sync = "harness sync"
    if ACTIVE:  # a sweep: close its parent now, then count what its jobs left
        sweep = ACTIVE[0]
        parent, pending, folder = sweep.run_id, sweep.pending_dir, sweep.sweep_dir
        sweep.close("FAILED", {"harness.interrupted": signame})
        jobs = [p for p in folder.iterdir() if p.name.isdigit()] \
            if folder and folder.is_dir() else []
        done = sorted((p.name for p in jobs if (p / "summary.csv").is_file()
                       and not (p / "INCOMPLETE").exists()), key=int)
        # stopped before their log plan was saved: results (if any) unlogged, run again
        cut = sorted((p.name for p in jobs if (p / "INCOMPLETE").exists()), key=int)
        plans = sorted(pending.glob("*.json")) if pending and pending.is_dir() else []
        if pending != project_path(PENDING_DIR):
            sync += f" --pending-dir {pending}"
        kept = (f"jobs {', '.join(done)} finished (results in {folder}/<job>/)" if done
                else "no job finished")
        waiting = (f"; {len(plans)} log plan(s) wait in {pending}: run {sync}" if plans
                   else "; every finished job was logged")
        if cut:
            kept += (f"; jobs {', '.join(cut)} were stopped before their results were "
                     "complete and logged (nothing of theirs is logged; run them again)")
        closed = f"; sweep parent run {parent} closed as FAILED" if parent else ""
        return f"interrupted ({signame}): the sweep's jobs were stopped; {kept}{waiting}{closed}"
    if not _JOB:
        return f"interrupted ({signame})"
    out, pending = _JOB
    if pending != project_path(PENDING_DIR):
        sync += f" --pending-dir {pending}"
    from harness.app.results import INCOMPLETE

    if (out / INCOMPLETE).exists():
        _drop_if_empty(out)
        return (f"interrupted ({signame}) before the results were complete: nothing was "
                "logged; run the job again")
    plans = sorted(pending.glob(f"*-{out.name}.json")) if pending.is_dir() else []
    if plans:
        return (f"interrupted ({signame}) while logging: the results are kept in {out}, "
                f"the log plan in {plans[-1]}; send it with: {sync}")
    return f"interrupted ({signame}): the results are in {out}"


def main() -> None:
    """Console-script entry point (``harness``).

    ``--help`` / ``-h`` print the project's own help (Hydra's is ``--hydra-help``). After a
    successful run (errors leave through ``SystemExit`` before this point), with no other
    thread alive, the exit handlers run and the process ends without the interpreter's
    teardown of its ~3,000 modules, which takes 0.3-1.3 s once MLflow and SQLAlchemy are
    loaded; every file and store connection is closed by then.
    """
    from harness.app.help import main as help_main

    help_main()
    os.environ[MAIN_PID_ENV] = str(os.getpid())  # a launcher's workers inherit it
    if threading.current_thread() is threading.main_thread():
        _GRACE[0] = _stop_grace()  # a bad value is refused now, not when a signal arrives
        signal.signal(signal.SIGTERM, _terminate)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupt)
    try:
        _main()
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line, no traceback
        signame = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut it short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(_interrupted(signame), file=sys.stderr, flush=True)
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + (signal.SIGTERM if signame == "SIGTERM" else signal.SIGINT))
    except SystemExit as exc:
        if exc.code == 1:  # Hydra could not compose the config: say what was meant
            from harness.app.hints import override_hints

            for line in override_hints(sys.argv[1:]):
                print(line, file=sys.stderr)
        raise
    if threading.active_count() > 1:  # e.g. the joblib launcher's pool: the interpreter's
        return  # own shutdown joins its threads before the exit handlers stop the workers
    atexit._run_exitfuncs()  # flushes logging, closes a sweep's parent run, ...
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
