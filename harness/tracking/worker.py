"""A tracking worker: a child process that gets MLflow ready while the study computes.

Importing MLflow and opening its store (creating or checking the schema) take 1.5-2 s of
every job, more than the default study's evaluation, check and figures together. A job
starts the worker before it reads its data; on the machine's other core the worker imports
MLflow and opens the store (under the store's lock, :func:`~harness.tracking.store.
open_client`), then waits. When the results are on disk and the log plan is saved in the
pending folder, the job hands the plan's file to the worker, which runs
:func:`~harness.tracking.log_plan.execute` on it exactly as the job would, and answers with the
run ids or the error it met.

Protocol: one JSON line each way, on the worker's stdin and stdout; whatever MLflow prints
goes to the job's stderr. Closing stdin ends the worker, so a job that stops early never
leaves one behind. Nothing is lost if the worker dies: the plan is on disk, with the
progress the worker made, and :meth:`TrackingWorker.execute` raises :class:`WorkerGone`
so that the job executes it in process instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

__all__ = ["TrackingWorker", "WorkerFailed", "WorkerGone", "serve"]


class WorkerGone(Exception):
    """The worker process is not there to answer (it failed to start, died or was killed)."""


class WorkerFailed(Exception):
    """An error the worker met while executing a plan: ``kind`` is the exception's class
    name, ``error_code`` MLflow's code when MLflow answered and refused."""

    def __init__(self, kind: str, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.error_code = error_code


class TrackingWorker:
    """The parent's handle on a worker process; a context manager that ends it on exit:
    ``with TrackingWorker(uri) as worker: ids = worker.execute(plan_file)``."""

    def __init__(self, tracking_uri: str) -> None:
        self.tracking_uri = tracking_uri
        self.proc: subprocess.Popen[str] | None = subprocess.Popen(
            [sys.executable, "-m", "harness.tracking.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        self._send({"tracking_uri": tracking_uri})

    def _send(self, message: dict[str, str]) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise WorkerGone("the tracking worker was closed")
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise WorkerGone(f"the tracking worker is gone ({exc})") from None

    def execute(self, marker: Path) -> dict[str, str]:
        """Execute the plan saved in ``marker``; record key -> run id.

        Raises :class:`WorkerFailed` with the worker's error, or :class:`WorkerGone` when
        there was no answer (the plan then holds the worker's progress)."""
        self._send({"plan": str(marker)})
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.poll()
            raise WorkerGone(f"the tracking worker ended without answering (exit {code})")
        reply = json.loads(line)
        if "ids" in reply:
            return {str(k): str(v) for k, v in reply["ids"].items()}
        raise WorkerFailed(reply.get("kind", "Exception"), reply.get("message", ""),
                           reply.get("error_code"))

    def close(self) -> None:
        """End the worker: close its stdin and wait briefly, then kill it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> TrackingWorker:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None and not issubclass(kind, Exception) and self.proc is not None:
            # Ctrl-C or SIGTERM: stop now rather than wait for a plan being sent (its
            # progress is on disk; harness sync finishes it)
            self.proc.kill()
        self.close()


def serve() -> None:
    """The worker's side: get ready, then execute each plan named on stdin.

    Ctrl-C (which reaches the whole process group) and a job gone while a plan was being
    sent end the worker without a traceback: the plan on disk holds its progress."""
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(128 + signum))
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything MLflow prints goes to stderr, never into the replies
    first = sys.stdin.readline()
    if not first:
        return
    uri = json.loads(first)["tracking_uri"]
    from harness.tracking.log_plan import LogPlan, close_open_runs, execute, refused
    from harness.tracking.store import open_client

    try:  # the slow part, while the job computes; execute meets any error again
        open_client(uri)
        import mlflow.entities  # noqa: F401 - what execute uses next
    except Exception:  # noqa: BLE001 - reported when a plan is sent
        pass
    from harness.progress import progress

    for line in sys.stdin:
        marker = Path(json.loads(line)["plan"])
        plan = LogPlan.load(marker)
        try:
            ids = execute(plan, marker, progress=lambda runs: progress(
                runs, desc="MLflow", unit="run"))
            reply: dict[str, object] = {"ids": ids}
        except Exception as exc:  # noqa: BLE001 - the parent turns it into its message
            if refused(exc):
                close_open_runs(plan)
            reply = {"kind": type(exc).__name__, "message": str(exc),
                     "error_code": getattr(exc, "error_code", None)}
        try:
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
        except (BrokenPipeError, OSError):  # the job is gone: nobody to answer
            os._exit(0)
    # stdin closed: every run was sent and committed. End without the interpreter's teardown
    # of MLflow's and SQLAlchemy's modules (0.3-1.3 s), which the job would wait for.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    serve()
