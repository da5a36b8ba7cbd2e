"""The README's GitHub Actions gate, run as written.

The YAML block of README.md's "A gate in continuous integration" section is parsed; its
``run:`` steps run in order with bash (``-eo pipefail``, as ``shell: bash`` gives on GitHub),
from the project folder, with the job's ``env:`` keys set as GitHub would set them:
``MLFLOW_TRACKING_URI`` a temporary SQLite store, ``PRODUCTION_RUN`` the job run of a
"production" evaluation of the same ranker logged there first (in this process, with the
app's config: the steps are what is tested). ``RUNNER_TEMP`` is a temporary
folder and ``GITHUB_ENV`` a file whose ``KEY=VALUE`` lines become the environment of the
later steps, as on GitHub's runners. Skipped, because the test already runs in the project's
installed environment: the ``uses:`` steps (checkout, set-up, upload) and the step named
Install.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml
from mlflow.tracking import MlflowClient

from harness.paths import PROJECT_ROOT

README = Path(PROJECT_ROOT) / "README.md"


def ci_workflow() -> dict:
    text = README.read_text()
    section = text[text.index("## A gate in continuous integration"):]
    block = re.search(r"^```yaml\n(.*?)^```", section, re.S | re.M).group(1)
    return yaml.safe_load(block)


def _production_run(uri: str, tmp: Path) -> str:
    """The job run id of ``harness run ranker=noisy_oracle tracking.experiment=ranker-gate``
    (the candidate step's ranker and experiment), run in this process into ``uri``."""
    from hydra import compose, initialize_config_dir

    from harness.app.config import register_configs
    from harness.app.study import run_study

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT_ROOT / "conf")):
        cfg = compose("config", overrides=[
            "ranker=noisy_oracle", "tracking.experiment=ranker-gate", f"tracking.uri={uri}",
            f"cache_dir={tmp / 'cache0'}", f"tracking.pending_dir={tmp / 'pending0'}",
            "tracking.worker=false"])
    summary = run_study(cfg, tmp / "production").closing_summary(str(cfg.study))
    return re.search(r"^  job run\s+([0-9a-f]{32})$", summary, re.M).group(1)


def test_the_readme_gate_runs_as_written(tmp_path: Path,
                                         copy_empty_store: Callable[[Path], str]) -> None:
    workflow = ci_workflow()
    job = workflow["jobs"]["gate"]
    assert job["defaults"]["run"]["shell"] == "bash"
    uri = copy_empty_store(tmp_path)
    client = MlflowClient(tracking_uri=uri)
    client.create_experiment("ranker-gate", artifact_location=(tmp_path / "art").as_uri())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HARNESS_"))}
    # production: the same ranker, logged earlier into the same store
    production_run = _production_run(uri, tmp_path)
    values = {"MLFLOW_TRACKING_URI": uri, "PRODUCTION_RUN": production_run}
    assert set(job["env"]) == set(values)
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    github_env = tmp_path / "github_env"
    github_env.write_text("")
    env |= values | {"RUNNER_TEMP": str(runner_temp), "GITHUB_ENV": str(github_env)}
    ran = []
    for step in job["steps"]:
        if "uses" in step or step.get("name") == "Install":
            continue
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               step["run"]], cwd=PROJECT_ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, f"{step['name']}:\n{proc.stdout[-3000:]}\n" \
                                     f"{proc.stderr[-3000:]}"
        env |= dict(line.split("=", 1) for line in github_env.read_text().splitlines()
                    if line)
        ran.append((step["name"], proc.stdout))
    assert [name for name, _ in ran] == ["Evaluate the candidate",
                                         "Compare with production and gate"]
    assert re.fullmatch(r"[0-9a-f]{32}", env["CANDIDATE_RUN"])
    assert env["CANDIDATE_RUN"] != production_run
    compare_out = ran[1][1]
    assert "gate: passed (2 gated comparison(s) better or not worse)" in compare_out
    # the decision is in the store, linked to both runs, and the report on disk
    found = client.search_runs([client.get_experiment_by_name("ranker-gate").experiment_id],
                               "tags.`harness.role` = 'comparison'")
    assert len(found) == 1
    assert found[0].data.tags["harness.verdict"] == "not worse (within margin)"
    assert found[0].data.tags["harness.compared_ids"] == \
        f"{production_run},{env['CANDIDATE_RUN']}"
    assert list((runner_temp / "reports").rglob("report.html"))
