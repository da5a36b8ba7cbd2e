"""The app end to end, in seconds (issue 9): ``python -m harness`` against a floor.

Every case runs in a fresh subprocess into one warm temporary SQLite store
(``MLFLOW_TRACKING_URI=sqlite:///<tmp>/mlflow.db``), side by side and interleaved: each
round runs every case once, so a slow moment of the machine hits all cases alike. A warm-up
round (not timed) creates the store's tables, fills the score cache and matplotlib's font
cache. Cases:

(a) floor: a Python process that imports harness, pandas and mlflow and logs one run with
    one metric to the same store: what any job pays before doing anything;
(b) default: the default study (5 rankers x 29 variants x 400 queries);
(c) q20000: the default study with ``dataset.n_queries=20000``;
(d) full_grid: ``metric=full_grid`` (48 nDCG variants);
plus ``python -m harness --help`` and two config errors (``metric.kk=5`` at compose time,
``metric.k=0`` in validation).

Prints each case's median and min-max wall time, the median of each phase of the jobs
(from their ``phases:`` log line) and the targets, MET or NOT MET: default <= 2x floor,
q20000 <= 4x floor, full_grid <= 1.5x default, --help and config errors < 1.5 s.

Run: ``.venv/bin/python benchmarks/bench_app.py --rounds 3``
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
FLOOR = ("import harness, pandas, mlflow\n"
         "mlflow.set_experiment('floor')\n"
         "with mlflow.start_run():\n"
         "    mlflow.log_metric('m', 1.0)\n")
STUDIES = {"default": [], "q20000": ["dataset.n_queries=20000"],
           "full_grid": ["metric=full_grid"]}
QUICK = {"help": ["--help"], "error_compose": ["metric.kk=5"], "error_validate": ["metric.k=0"]}
TARGETS = [("default", "floor", 2.0), ("q20000", "floor", 4.0), ("full_grid", "default", 1.5)]
QUICK_LIMIT = 1.5
PHASES = re.compile(r"phases: (.*?)(?: \(slowest|$)", re.M)


def _command(case: str, tmp: Path) -> tuple[list[str], Path]:
    """The argv of a case and the folder it runs in."""
    if case == "floor":
        return [sys.executable, "-c", FLOOR], tmp  # the floor's mlruns/ land in tmp
    if case in QUICK:
        return [sys.executable, "-m", "harness", *QUICK[case],
                f"hydra.run.dir={tmp / 'out' / case}"], PROJECT
    out = tmp / "out" / f"{case}-{time.monotonic_ns()}"
    return [sys.executable, "-m", "harness", *STUDIES[case], f"hydra.run.dir={out}",
            f"cache_dir={tmp / 'cache'}", f"tracking.pending_dir={tmp / 'pending'}",
            f"tracking.artifact_root={tmp / 'artifacts'}"], PROJECT


def run_case(case: str, tmp: Path, env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """Wall seconds of one run, and its phases (studies only)."""
    argv, cwd = _command(case, tmp)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1800)
    seconds = time.perf_counter() - start
    expected = {"error_compose": 1, "error_validate": 2}.get(case, 0)
    if proc.returncode != expected:
        raise SystemExit(f"{case} exited {proc.returncode} (expected {expected}):\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    phases: dict[str, float] = {}
    match = PHASES.search(proc.stdout + proc.stderr)
    if match:
        for part in match.group(1).split(", "):
            name, value = part.rsplit(" ", 1)
            phases[name] = float(value.rstrip("s"))
    return seconds, phases


def _spread(values: list[float]) -> str:
    return (f"median {statistics.median(values):6.2f} s  (min-max {min(values):.2f}-"
            f"{max(values):.2f}, n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--cases", nargs="+", default=["floor", *STUDIES, *QUICK],
                        choices=["floor", *STUDIES, *QUICK], help="cases to run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_app_") as name:
        tmp = Path(name)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp / 'mlflow.db'}"
        times: dict[str, list[float]] = {c: [] for c in args.cases}
        phases: dict[str, dict[str, list[float]]] = {c: {} for c in args.cases}
        print(f"store {env['MLFLOW_TRACKING_URI']}; warm-up round (not timed) ...", flush=True)
        for case in args.cases:
            run_case(case, tmp, env)
        for r in range(1, args.rounds + 1):
            for case in args.cases:
                seconds, parts = run_case(case, tmp, env)
                times[case].append(seconds)
                for phase, value in parts.items():
                    phases[case].setdefault(phase, []).append(value)
            print(f"round {r}: " + ", ".join(f"{c} {times[c][-1]:.2f}s" for c in args.cases),
                  flush=True)
    print(f"\nwall time per case ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores):")
    for case in args.cases:
        print(f"  {case:15s} {_spread(times[case])}")
    for case in args.cases:
        if phases[case]:
            line = ", ".join(f"{p} {statistics.median(v):.2f}s" for p, v in phases[case].items())
            slowest = max(phases[case], key=lambda p: statistics.median(phases[case][p]))
            print(f"  phases of {case} (medians): {line}; slowest: {slowest}")
    print()
    for case, base, limit in TARGETS:
        if times.get(case) and times.get(base):
            ratio = statistics.median(times[case]) / statistics.median(times[base])
            print(f"target: {case} <= {limit:g}x {base}: {'MET' if ratio <= limit else 'NOT MET'}"
                  f" ({ratio:.2f}x)")
    for case in QUICK:
        if times.get(case):
            median = statistics.median(times[case])
            print(f"target: {case} < {QUICK_LIMIT:g} s: "
                  f"{'MET' if median < QUICK_LIMIT else 'NOT MET'} ({median:.2f} s)")


if __name__ == "__main__":
    main()
