"""Hydra callback: one MLflow parent run per multirun sweep, created before any job."""

from __future__ import annotations

import atexit
import logging
import os
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from harness.paths import project_path

__all__ = ["SweepParentRun", "PARENT_ENV", "ACTIVE", "parent_run_file", "failed_job_file",
           "sweep_run_name", "sweep_params", "sweep_metrics", "log_sweep_metrics"]

log = logging.getLogger("harness")
PARENT_ENV = "HARNESS_PARENT_RUN_ID"


def parent_run_file(sweep_dir: str | Path) -> Path:
    return Path(sweep_dir) / ".mlflow_parent_run_id"


def failed_job_file(sweep_dir: str | Path, job_num: int) -> Path:
    """Marker a sweep job leaves when it failed cleanly (bad input, check, MLflow down)."""
    path = Path(sweep_dir) / f".failed_job_{job_num}"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


class SweepParentRun(Callback):
    """Creates the store, schema, experiment and the sweep's parent run in the launching
    process (so parallel jobs never race to create a fresh SQLite store), and closes the
    parent at the end: FINISHED after ``on_multirun_end``, FAILED at exit otherwise (Hydra
    skips ``on_multirun_end`` when a job fails, an interrupted sweep too).

    For the case where this process dies without closing it (SIGKILL, a lost machine), the
    parent's closing is also a pending log plan (``sweep-<run id>.json``, the parent FAILED)
    that this process claims for the whole sweep: ``harness sync`` leaves it alone while
    the sweep runs, and closes the parent once the process is gone. The parent thus ends
    FINISHED or FAILED in every path."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.uri: str | None = None
        self.experiment_id: str | None = None
        self.sweep_dir: Path | None = None
        self.pending_dir: Path | None = None
        self._closing: tuple[Path, Any, Any] | None = None  # (plan file, plan, its claim)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not config.tracking.enabled:
            return
        from harness.app.provenance import git_commit
        from harness.tracking import configure_requests, ensure_experiment, resolve_tracking_uri
        from harness.tracking.store import open_client

        configure_requests(config.tracking.timeout_s, config.tracking.max_retries)
        self.uri = resolve_tracking_uri(config.tracking.uri)
        client = open_client(self.uri)
        experiment = config.tracking.experiment or config.study
        exp_id = ensure_experiment(client, experiment, config.tracking.artifact_root)
        self.experiment_id = exp_id
        overrides = " ".join(config.hydra.overrides.task) if "hydra" in config else ""
        run = client.create_run(exp_id, run_name=sweep_run_name(config), tags={
            "harness.role": "sweep", "sweep.overrides": overrides, "git.commit": git_commit(),
            "study": str(config.study)})
        self.run_id = run.info.run_id
        from mlflow.entities import Param

        client.log_batch(self.run_id, params=[Param(k, v) for k, v in
                                              sweep_params(config).items()])
        os.environ[PARENT_ENV] = self.run_id
        path = parent_run_file(config.hydra.sweep.dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.run_id)
        self.sweep_dir = Path(config.hydra.sweep.dir)
        self.pending_dir = project_path(config.tracking.pending_dir)
        self._hold_closing_plan(experiment, str(project_path(config.tracking.artifact_root)))
        ACTIVE[:] = [self]
        atexit.register(self.close, "FAILED")
        log.info("sweep parent run %s in experiment %r", self.run_id, experiment)

    def __getstate__(self) -> dict[str, Any]:
        """Launchers pickle the callbacks with each job: the claim stays in this process."""
        return dict(vars(self), _closing=None)

    def _hold_closing_plan(self, experiment: str, artifact_root: str) -> None:
        """Save, and claim until :meth:`_close`, the plan that closes the parent FAILED."""
        from contextlib import ExitStack

        from harness.tracking import LogPlan, RunRecord
        from harness.tracking.log_plan import claimed

        assert self.pending_dir is not None and self.uri is not None
        marker = self.pending_dir / f"sweep-{self.run_id}.json"
        marker.parent.mkdir(parents=True, exist_ok=True)
        claim = ExitStack()
        claim.enter_context(claimed(marker))  # claimed before it exists: no sync takes it
        plan = LogPlan(tracking_uri=self.uri, experiment=experiment, artifact_root=artifact_root,
                       runs=[RunRecord(key="sweep", name="sweep", run_id=self.run_id,
                                       status="FAILED")])
        plan.save(marker)
        self._closing = (marker, plan, claim)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        failed = sorted(Path(config.hydra.sweep.dir).glob(".failed_job_*"))
        parent, uri = self.run_id, self.uri
        if parent:
            self._describe(config, parent, [p.name.rsplit("_", 1)[1] for p in failed])
        self.close("FAILED" if failed else "FINISHED")
        _print_jobs_table(config)
        if parent:
            print("\n" + sweep_summary(parent, uri or "", str(config.hydra.sweep.dir),
                                       experiment=config.tracking.experiment or config.study,
                                       experiment_id=self.experiment_id),
                  flush=True)
        if failed:
            codes = {int(p.read_text().split()[0]) for p in failed}
            log.error("%d job(s) of the sweep failed:", len(failed))
            for p in failed:  # each reason repeated here: with the submitit launchers a job's
                # output goes to its own folder, not to this console
                num = p.name.rsplit("_", 1)[1]
                reason = (p.read_text().splitlines()[1:] or ["(no message)"])[0]
                log.error("  job %s: %s (log in %s)", num, reason, p.parent / num)
            raise SystemExit(max(codes))

    def _describe(self, config: DictConfig, run_id: str, failed: list[str]) -> None:
        """The parent run's description (MLflow's ``mlflow.note.content``): the jobs x
        headline-variants table read from the jobs' folders, and the report's link."""
        from mlflow.tracking import MlflowClient

        from harness.app.notes import sweep_description

        try:
            jobs = sweep_jobs(Path(config.hydra.sweep.dir), _excluded(config))
            log_sweep_metrics(MlflowClient(tracking_uri=self.uri), run_id, jobs)
            text = sweep_description(
                jobs,
                study=str(config.study), overrides=" ".join(_shown_overrides(config)),
                failed=failed, parent_run_id=run_id,
                report_link=f"#/experiments/{self.experiment_id}/runs/{run_id}"
                "/artifacts/report/summary.html")
            MlflowClient(tracking_uri=self.uri).set_tag(run_id, "mlflow.note.content", text)
        except Exception as exc:  # noqa: BLE001 - a description is not worth failing a sweep
            log.warning("could not describe sweep parent run %s: %s", self.run_id, exc)

    def close(self, status: str, tags: dict[str, str] | None = None) -> None:
        """Close the parent run with ``status`` (and ``tags``); when the store does not
        answer, its closing plan stays pending, with that status, for ``harness sync``."""
        if self.run_id is None:
            return
        from mlflow.tracking import MlflowClient

        run_id, self.run_id = self.run_id, None
        closing, self._closing = self._closing, None
        try:
            client = MlflowClient(tracking_uri=self.uri)
            for key, value in (tags or {}).items():
                client.set_tag(run_id, key, value)
            client.set_terminated(run_id, status=status)
            if closing is not None:
                closing[0].unlink(missing_ok=True)
        except Exception as exc:  # noqa: BLE001 - best effort at exit; the store may be down
            log.error("could not close sweep parent run %s: %s", run_id, exc)
            if closing is not None:
                closing[1].runs[0].status = status
                closing[1].save(closing[0])
                log.error("harness sync will close it (its plan is %s)", closing[0])
        finally:
            if closing is not None:
                closing[2].close()


#: The sweep this process launches (its callback), for what an interruption says.
ACTIVE: list[SweepParentRun] = []


#: Longest sweep parent run name: MLflow keeps 250 characters of a run name.
_NAME_LIMIT = 200


def _excluded(config: DictConfig) -> set[str]:
    """The override keys Hydra leaves out of a job's name (where runs and logs go)."""
    if "hydra" not in config:
        return set()
    return set(config.hydra.job.config.override_dirname.exclude_keys or ())


def _shown(overrides: list[str], excluded: set[str]) -> list[str]:
    return [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in excluded]


def _shown_overrides(config: DictConfig) -> list[str]:
    if "hydra" not in config:
        return []
    return _shown(list(config.hydra.overrides.task), _excluded(config))


def sweep_jobs(sweep_dir: Path, excluded: set[str]
               ) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """The finished jobs of a sweep, read from their folders (``<sweep dir>/<job number>/``):
    job number -> (its overrides less ``excluded``, ranker -> its ``summary.csv`` rows
    indexed by variant)."""
    import pandas as pd
    import yaml

    out: dict[str, tuple[list[str], dict[str, Any]]] = {}
    folders = [p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()]
    for folder in sorted(folders, key=lambda p: int(p.name)):
        summary = folder / "summary.csv"
        if not summary.is_file():
            continue
        given = folder / ".hydra" / "overrides.yaml"
        overrides = (yaml.safe_load(given.read_text()) or []) if given.is_file() else []
        table = pd.read_csv(summary)
        out[folder.name] = (_shown([str(o) for o in overrides], excluded),
                            {str(r): g.set_index("variant")
                             for r, g in table.groupby("ranker", sort=False)})
    return out


def sweep_params(config: DictConfig) -> dict[str, str]:
    """The parent run's params: ``study``, and each key the command line sets (the keys
    Hydra leaves out of a job's name excepted) with its values as given (``ranker`` ->
    ``oracle,noisy_oracle``), so the runs table shows what a sweep swept."""
    out = {"study": str(config.study)}
    for override in _shown_overrides(config):
        key, _, value = override.partition("=")
        out[key.lstrip("+~")[:250]] = value[:6000]  # MLflow's limits on a param
    return out


def sweep_metrics(jobs: dict[str, tuple[list[str], dict[str, Any]]]) -> dict[str, float]:
    """The parent run's metrics: each finished job's mean under its first variant of each
    measure and cut-off (its own definition, as in the sweep's table),
    ``job<n>.<ranker>.<variant key>`` (``job0.oracle.ndcg_at_10``); the job's overrides are
    its runs' params and the description's table."""
    from harness.metrics.vocabulary.definition import parse_metric

    out = {}
    for num, (_, summaries) in jobs.items():
        for ranker, summary in summaries.items():
            seen = set()
            for name in summary.index:
                metric = parse_metric(name)
                value = float(summary.at[name, "mean"])
                if (metric.name, metric.k) not in seen and value == value:  # no NaN
                    out[f"job{num}.{ranker}.{metric.key}"] = value
                seen.add((metric.name, metric.k))
    return out


def log_sweep_metrics(client: Any, run_id: str,
                      jobs: dict[str, tuple[list[str], dict[str, Any]]]) -> None:
    """:func:`sweep_metrics` logged to the parent run, in batches of MLflow's 1,000."""
    import time

    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in sweep_metrics(jobs).items()]
    for start in range(0, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[start:start + 1000])


def _print_jobs_table(config: DictConfig) -> None:
    """The jobs x headline variants table of the finished jobs, on the console."""
    from harness.app.sweep_table import sweep_table

    try:
        lines = sweep_table(sweep_jobs(Path(config.hydra.sweep.dir), _excluded(config)),
                            study=str(config.study))
    except Exception as exc:  # noqa: BLE001 - a table is not worth failing a sweep
        log.warning("could not print the sweep's table: %s", exc)
        return
    if lines:
        print("\n" + "\n".join(lines), flush=True)


def sweep_run_name(config: DictConfig) -> str:
    """``<study> sweep: <overrides>``, the command line's overrides as Hydra names its jobs
    (``override_dirname``'s excluded keys, where runs and logs go, left out), so that the
    parents of different sweeps of one study are told apart in the runs table."""
    study = str(config.study)
    shown = _shown_overrides(config)
    name = f"{study} sweep: {' '.join(shown)}" if shown else f"{study} sweep"
    return name if len(name) <= _NAME_LIMIT else name[:_NAME_LIMIT - 1] + "…"


def sweep_summary(parent: str, uri: str, sweep_dir: str, *, experiment: str,
                  experiment_id: str | None = None) -> str:
    """What a sweep prints at its end: the parent run, where the jobs' files are, and the
    follow-up commands with the id filled in, the parent run's page last."""
    import shlex

    from harness.app.notes import open_hint, python_command
    from harness.tracking import resolve_tracking_uri

    flag = "" if uri == resolve_tracking_uri(None) else f" --tracking-uri {shlex.quote(uri)}"
    return "\n".join([
        f"Sweep done. MLflow: {uri}, experiment {experiment!r}"
        + (f" (id {experiment_id})" if experiment_id else ""),
        f"  sweep parent run   {parent}   (each job's ranker runs are its children)",
        f"Files: {sweep_dir}/<job number>/",
        "Next:",
        f"  {python_command().removesuffix('python')}harness compare {parent}{flag}",
        f"  {python_command().removesuffix('python')}harness reproduce {parent}{flag}",
        f"  {open_hint(uri, experiment_id, parent)}"])
