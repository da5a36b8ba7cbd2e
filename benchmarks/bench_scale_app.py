"""``bench_scale.py app``: the 2-ranker study on a scored parquet_run (engine=stream), with
the issue's 29 variants and with the default grid's 32, against evaluate_parquet's nDCG@10
alone, in interleaved rounds, each with its peak RSS summed over its processes (sampled
every 50 ms); the issue's app targets printed MET or NOT MET."""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from pathlib import Path

from bench_common import run_watched

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve().with_name("bench_scale.py")


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def app_child(path: str) -> None:
    """evaluate_parquet of nDCG@10 alone on the scored file (labels in it), as JSON."""
    import harness

    t = time.perf_counter()
    out = harness.evaluate_parquet(path, None, "ndcg@10", batch_rows=2_000_000)
    print(json.dumps({"seconds": time.perf_counter() - t, "mean": float(out.iloc[:, 3].mean()),
                      "process_peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))


def _timed(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS GB summed over the command's process and the processes it
    started, such as the stream engine's column workers; stdout and stderr) of a command."""
    wall, peak, out, err, code = run_watched(command, cwd=ROOT)
    if code:
        raise SystemExit(f"{command} failed:\n{err[-3000:]}")
    return wall, peak, out + err


#: The studies timed: the issue's (its 29 variants: the default grid of 2026-11-24, before the
#: incompleteness group AP@10 condensed, bpref and infAP joined it) and today's default grid.
STUDIES = (("the issue's 29 variants", ["metric.extra=['ap@10','rr','P@10','recall@10',"
                                        "'err@10']"]),
           ("the default grid (32 variants)", []))


def app_table(path: Path, rounds: int, out: Path) -> None:
    """The 2-ranker study on a scored parquet_run with engine=stream, for the issue's grid
    and for the default grid, against evaluate_parquet's nDCG@10 alone, in interleaved
    rounds (alone, then each study, every round)."""
    base = [sys.executable, "-m", "harness", "dataset=parquet_run", f"dataset.path={path}",
            "ranker=scored_columns", "engine=stream", "tracking=off",
            "tracking.figures=false", f"hydra.run.dir={out}"]
    alone: list[tuple[float, float, float]] = []
    app: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in STUDIES}
    passes: dict[str, list[float]] = {name: [] for name, _ in STUDIES}
    for r in range(rounds):
        wall, peak, text = _timed([sys.executable, str(SCRIPT), "appchild", str(path)])
        alone.append((json.loads(text.split("\n")[0])["seconds"], wall, peak))
        print(f"round {r + 1}: evaluate_parquet nDCG@10 {alone[-1][0]:.1f} s (process "
              f"{alone[-1][1]:.1f} s, {alone[-1][2]:.2f} GB)", flush=True)
        for name, overrides in STUDIES:
            wall, peak, text = _timed(base + overrides)
            line = next(x for x in text.splitlines() if "one pass over" in x)
            passes[name].append(float(line.split(" rows in ")[1].split("s")[0]))
            app[name].append((wall, peak))
            print(f"round {r + 1}: {name}: study {wall:.1f} s, peak {peak:.2f} GB; "
                  f"{line.split('harness: ')[-1].strip()}", flush=True)
    one = statistics.median(a[0] for a in alone)
    print(f"\nevaluate_parquet nDCG@10: {_span([a[0] for a in alone])}")
    for name, _ in STUDIES:
        walls = [a[0] for a in app[name]]
        print(f"{name}: the one pass {_span(passes[name])}, the whole study {_span(walls)}, "
              f"peak {max(a[1] for a in app[name]):.2f} GB")
    for name, _ in STUDIES:
        for what, value in (("the evaluate pass", statistics.median(passes[name])),
                            ("the whole study", statistics.median(a[0] for a in app[name]))):
            ratio = value / one
            print(f"target: {what}, 2 rankers x {name}, within 2.5x of evaluate_parquet "
                  f"nDCG@10: {'MET' if ratio <= 2.5 else 'NOT MET'} ({ratio:.2f}x)")
        peak = max(a[1] for a in app[name])
        print(f"target: {name}: the study's peak RSS <= 2 GB: "
              f"{'MET' if peak <= 2 else 'NOT MET'} ({peak:.2f} GB)")
