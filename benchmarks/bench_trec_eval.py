#!/usr/bin/env python
"""``harness eval`` against the trec_eval 10.0 C binary, each run as a user runs it.

Run from the repository root::

    .venv/bin/python benchmarks/bench_trec_eval.py --trec-eval /path/to/trec_eval
    .venv/bin/python benchmarks/bench_trec_eval.py --cast --sizes 1m --rounds 3
    .venv/bin/python benchmarks/bench_trec_eval.py --sizes 10m --memory   # ~5 min of trec_eval
    .venv/bin/python benchmarks/bench_trec_eval.py --many --many-count 10
    .venv/bin/python benchmarks/bench_trec_eval.py --big   # ~2.2 GB run, harness's memory

The trec_eval binary comes from ``--trec-eval PATH``, else ``$TREC_EVAL``; the script stops
with a message when neither is given. It is never built or copied here.

Every call is a new process (``harness eval ...``, the console script; ``trec_eval ...``),
stdout written to a file in the data folder, and rounds are interleaved (A B A B ...). Each
call's wall time is measured around ``Popen`` + ``os.wait4``; its CPU time (user + sys) and
peak RSS (``ru_maxrss``) come from the rusage ``os.wait4`` returns (CPU includes the forks'),
the peak RSS raised to the process tree's summed RSS sampled every 20 ms where that is
larger (``harness eval`` evaluates half of a large run in a fork). Per work item the script
prints, for each tool, the median of the rounds with [min, max], and the ratio
trec_eval / harness computed per round (median [min, max]).

Work items (no selection flag: ``--cast --sizes 1m --memory --many``):

- ``--cast``: TREC CAsT 2021, ``-m all_trec`` on ``trec-cast-qrels-docs.2021.qrel`` and
  ``org_manual_bm25.run`` from the shared data folder (``$HARNESS_SHARED_DATA``, else
  ``<repo>/../shared/data``). ``python -c "import numpy"`` is a third tool in the same
  rounds; target: harness wall time <= 3x that import's. Wall and CPU time are printed.
- ``--sizes 1m``: 1M run lines (10,000 queries x 100 documents), ``-m all_trec``; target
  trec_eval / harness >= 2. ``--sizes 10m``: 10M lines (100,000 queries), target >= 20;
  only run when named, and 1 round unless ``--rounds`` is given. The data is the generator
  of ``bench_eval.py`` (qids of 14 characters, docids of 16, scores rounded to 2 decimals so
  that about 20% tie, grades 0-3, 70 of each query's 100 documents unjudged, 10 judged
  documents never retrieved), written once per size to ``--dir``/<size>/ and reused.
  After the rounds the two tools' stdout is diffed (outside the timings); for 1m also once
  with ``-q``.
- ``--memory``: the peak RSS (largest ``ru_maxrss`` over the rounds) of each tool on the
  largest size timed, beside the run file's size; target harness peak <= 1x the file.
- ``--many``: ``harness eval QRELS run1 ... runN`` (one process) against N trec_eval
  processes, one per run (the sum of their wall times). The runs (``--many-count``, default
  100) are 200 queries x 100 documents each, the same documents with perturbed scores.

- ``--big``: harness alone on 450,000 queries (a run of about 2.2 GB), for the peak RSS
  against the file's size (target <= 1x); trec_eval, quadratic in queries, is not run.

It ends with a markdown table (work | harness | trec_eval | ratio | target | met?) and the
date, for docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval import write_data  # the same generator as bench_eval.py

SIZES = {"1m": 10_000, "10m": 100_000}           # queries; 100 documents each
TARGETS = {"1m": 2.0, "10m": 20.0}                # trec_eval / harness
BIG_QUERIES = 450_000                             # --big: a run of about 2.2 GB
CAST_NUMPY_FACTOR = 3.0
SHARED_ENV = "HARNESS_SHARED_DATA"


# ---------------------------------------------------------------------------- running

@dataclass
class Call:
    wall: float
    cpu: float
    maxrss: int                                    # bytes


@dataclass
class Tool:
    name: str
    calls: list[Call] = field(default_factory=list)

    def walls(self) -> list[float]:
        return [c.wall for c in self.calls]

    def cpus(self) -> list[float]:
        return [c.cpu for c in self.calls]


def _tree_rss(pid: int) -> int:
    """The summed RSS (bytes) of process ``pid`` and its descendants, now (0 once gone)."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (OSError, ValueError):
        return total
    return total + sum(_tree_rss(int(c)) for c in children)


def _sample_tree(pid: int, peak: list[int], stop: threading.Event) -> None:
    """Every 20 ms until ``stop``: ``peak[0]`` the largest :func:`_tree_rss` seen."""
    while not stop.wait(0.02):
        peak[0] = max(peak[0], _tree_rss(pid))


def run(cmd: list[str], out: Path) -> Call:
    """Run ``cmd`` once in a new process, stdout to ``out``; wall, CPU and peak RSS: the
    process's own (``ru_maxrss``: the largest of it and its children, each alone) or, when
    larger, its process tree's summed RSS sampled every 20 ms (``harness eval`` evaluates
    half of a large run in a fork)."""
    err_path = out.with_suffix(out.suffix + ".err")
    peak, stop = [0], threading.Event()
    with open(out, "wb") as fo, open(err_path, "wb") as fe:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, cwd=ROOT)
        sampler = threading.Thread(target=_sample_tree, args=(proc.pid, peak, stop))
        sampler.start()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed (exit {proc.returncode}):\n"
                         f"{err_path.read_text(errors='replace')[-2000:]}")
    return Call(wall, ru.ru_utime + ru.ru_stime, max(ru.ru_maxrss * 1024, peak[0]))


def spread(xs: list[float], fmt: str = "{:.3f}") -> str:
    return (f"{fmt.format(statistics.median(xs))} "
            f"[{fmt.format(min(xs))}-{fmt.format(max(xs))}]")


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


# ---------------------------------------------------------------------------- data

def shared_data_dir() -> Path:
    """``tests/shared.py``'s rule: ``$HARNESS_SHARED_DATA``, else ``<repo>/../shared/data``."""
    env = os.environ.get(SHARED_ENV)
    path = Path(env).expanduser() if env else ROOT.parent / "shared" / "data"
    if not path.is_dir():
        raise SystemExit(f"shared data folder not found: {path} "
                         f"(set {SHARED_ENV} to the folder that holds trec_cast_2021/)")
    return path.resolve()


def write_many(folder: Path, count: int, n_queries: int = 200, seed: int = 11
               ) -> tuple[Path, list[Path]]:
    """``count`` runs of ``n_queries`` x 100 documents: bench_eval's run with each score
    moved by N(0, 0.5), rounded to 2 decimals again (ties kept), re-ranked per query."""
    qrels, base = write_data(folder, n_queries)
    runs = [folder / f"run{k:03d}.txt" for k in range(1, count + 1)]
    todo = [p for p in runs if not p.exists()]
    if todo:
        cols = [line.split() for line in base.read_text().splitlines()]
        depth = 100
        qids = np.array([c[0] for c in cols]).reshape(-1, depth)
        docs = np.array([c[2] for c in cols]).reshape(-1, depth)
        scores = np.array([float(c[4]) for c in cols]).reshape(-1, depth)
        rng = np.random.default_rng(seed)
        for path in runs:
            noisy = np.round(scores + rng.normal(0, 0.5, scores.shape), 2)
            if path not in todo:
                continue
            order = np.argsort(-noisy, axis=1, kind="stable")
            tag = path.stem
            lines = []
            for q in range(qids.shape[0]):
                for rank, i in enumerate(order[q], 1):
                    lines.append(f"{qids[q, i]} Q0 {docs[q, i]} {rank} {noisy[q, i]:.2f} {tag}\n")
            path.write_text("".join(lines))
    return qrels, runs


# ---------------------------------------------------------------------------- diff

def diff_outputs(a: Path, b: Path, label: str) -> str:
    """'identical' or the first differing lines (unified diff, at most 20 lines)."""
    la, lb = a.read_text().splitlines(), b.read_text().splitlines()
    if la == lb:
        return f"{label}: identical ({len(la):,} lines)"
    d = list(difflib.unified_diff(lb, la, "trec_eval", "harness", n=0, lineterm=""))
    n_diff = max(sum(1 for x in d if x[:1] == "+" and x[:3] != "+++"),
                 sum(1 for x in d if x[:1] == "-" and x[:3] != "---"))
    return (f"{label}: DIFFER ({len(la):,} harness lines vs {len(lb):,} trec_eval lines, "
            f"{n_diff:,} lines differ); first:\n    " + "\n    ".join(d[:20]))


# ---------------------------------------------------------------------------- work items

Row = tuple[str, str, str, str, str, str]          # work, harness, trec_eval, ratio, target, met


def ratio(a: Tool, b: Tool) -> float:
    """The last round's wall time of ``a`` over ``b``'s."""
    return a.calls[-1].wall / b.calls[-1].wall


def run_rounds(cmds: dict[str, list[str]], tools: dict[str, Tool], rounds: int,
               out: Callable[[str], Path], describe: Callable[[str, Any], str],
               tail: Callable[[], str] = lambda: "") -> None:
    """``rounds`` interleaved rounds (each tool once a round, in turn), each call's stdout
    to ``out(tool)``, one line a round."""
    for r in range(rounds):
        parts = []
        for k, cmd in cmds.items():
            c = run(cmd, out(k))
            tools[k].calls.append(c)
            parts.append(describe(k, c))
        print(f"round {r + 1}: " + ", ".join(parts) + tail(), flush=True)


def bench_cast(args: argparse.Namespace, harness: str, trec: str, out: Path) -> list[Row]:
    cast = shared_data_dir() / "trec_cast_2021"
    qrels, runf = cast / "trec-cast-qrels-docs.2021.qrel", cast / "org_manual_bm25.run"
    cmds = {
        "harness": [harness, "eval", "-m", "all_trec", str(qrels), str(runf)],
        "trec_eval": [trec, "-m", "all_trec", str(qrels), str(runf)],
        "import numpy": [sys.executable, "-c", "import numpy"],
    }
    tools = {k: Tool(k) for k in cmds}
    rounds = args.rounds or 5
    print(f"\n== cast: {runf.name} ({runf.stat().st_size / 1e6:.1f} MB, "
          f"{sum(1 for _ in open(runf)):,} lines), -m all_trec, {rounds} rounds", flush=True)
    run_rounds(cmds, tools, rounds, lambda k: out / f"out.cast.{k.replace(' ', '_')}.txt",
               lambda k, c: f"{k} {c.wall:.3f} s (cpu {c.cpu:.3f})")
    h, t, n = tools["harness"], tools["trec_eval"], tools["import numpy"]
    speed = [tc.wall / hc.wall for hc, tc in zip(h.calls, t.calls)]
    vs_numpy = [hc.wall / nc.wall for hc, nc in zip(h.calls, n.calls)]
    vs_numpy_cpu = [hc.cpu / nc.cpu for hc, nc in zip(h.calls, n.calls)]
    print(f"{'tool':<14}{'wall s, median [min-max]':<28}{'cpu s (user+sys)':<28}")
    for tool in (h, t, n):
        print(f"{tool.name:<14}{spread(tool.walls()):<28}{spread(tool.cpus()):<28}")
    print(f"trec_eval / harness (wall): {spread(speed, '{:.3f}')}x")
    m = statistics.median(vs_numpy)
    met = m <= CAST_NUMPY_FACTOR
    print(f"harness / import numpy (wall): {spread(vs_numpy, '{:.2f}')}x, "
          f"(cpu): {spread(vs_numpy_cpu, '{:.2f}')}x; target <= {CAST_NUMPY_FACTOR:g}x: "
          f"{'MET' if met else 'NOT MET'}")
    print(diff_outputs(out / "out.cast.harness.txt", out / "out.cast.trec_eval.txt",
                       "stdout, harness vs trec_eval"))
    nm = statistics.median(n.walls())
    return [
        ("CAsT 2021 BM25, all_trec, wall", f"{statistics.median(h.walls()):.3f} s",
         f"{statistics.median(t.walls()):.3f} s", f"{statistics.median(speed):.3f}x",
         f"harness <= 3x `import numpy` ({nm:.3f} s): {m:.2f}x", "yes" if met else "NO"),
        ("CAsT 2021 BM25, all_trec, CPU", f"{statistics.median(h.cpus()):.3f} s",
         f"{statistics.median(t.cpus()):.3f} s",
         f"{statistics.median(t.cpus()) / statistics.median(h.cpus()):.3f}x",
         f"(`import numpy` CPU {statistics.median(n.cpus()):.3f} s: "
         f"{statistics.median(vs_numpy_cpu):.2f}x)", ""),
    ]


def bench_size(args: argparse.Namespace, size: str, harness: str, trec: str, base: Path
               ) -> tuple[list[Row], dict]:
    folder = base / size
    folder.mkdir(parents=True, exist_ok=True)
    n_queries = SIZES[size]
    t0 = time.perf_counter()
    fresh = not (folder / "run.txt").exists()
    qrels, runf = write_data(folder, n_queries)
    if fresh:
        print(f"(wrote {size} data to {folder} in {time.perf_counter() - t0:.0f} s)", flush=True)
    rounds = args.rounds or (1 if size == "10m" else 5)
    target = TARGETS[size]
    cmds = {"harness": [harness, "eval", "-m", "all_trec", str(qrels), str(runf)],
            "trec_eval": [trec, "-m", "all_trec", str(qrels), str(runf)]}
    tools = {k: Tool(k) for k in cmds}
    size_bytes = runf.stat().st_size
    print(f"\n== {size}: {n_queries:,} queries x 100 documents ({size_bytes / 1e6:.0f} MB run, "
          f"{qrels.stat().st_size / 1e6:.0f} MB qrels), -m all_trec, {rounds} rounds", flush=True)
    run_rounds(cmds, tools, rounds, lambda k: folder / f"out.{k}.txt",
               lambda k, c: f"{k} {c.wall:.2f} s (cpu {c.cpu:.2f}, {mb(c.maxrss)})",
               lambda: f", {ratio(tools['trec_eval'], tools['harness']):.2f}x")
    h, t = tools["harness"], tools["trec_eval"]
    ratios = [tc.wall / hc.wall for hc, tc in zip(h.calls, t.calls)]
    med = statistics.median(ratios)
    met = med >= target
    print(f"{'tool':<14}{'wall s, median [min-max]':<28}{'cpu s (user+sys)':<28}peak RSS (max)")
    for tool in (h, t):
        print(f"{tool.name:<14}{spread(tool.walls(), '{:.2f}'):<28}"
              f"{spread(tool.cpus(), '{:.2f}'):<28}{mb(max(c.maxrss for c in tool.calls))}")
    print(f"trec_eval / harness: {spread(ratios, '{:.2f}')}x; target >= {target:g}x: "
          f"{'MET' if met else 'NOT MET'}")
    if not args.no_check:
        print(diff_outputs(folder / "out.harness.txt", folder / "out.trec_eval.txt",
                           "stdout -m all_trec, harness vs trec_eval"), flush=True)
        if size == "1m":
            qh, qt = folder / "out.q.harness.txt", folder / "out.q.trec_eval.txt"
            run([harness, "eval", "-q", "-m", "all_trec", str(qrels), str(runf)], qh)
            run([trec, "-q", "-m", "all_trec", str(qrels), str(runf)], qt)
            print(diff_outputs(qh, qt, "stdout -q -m all_trec, harness vs trec_eval"))
    rows: list[Row] = [(
        f"{size}: {n_queries:,} q x 100 docs, all_trec, wall",
        f"{statistics.median(h.walls()):.2f} s", f"{statistics.median(t.walls()):.2f} s",
        f"{med:.2f}x", f">= {target:g}x", "yes" if met else "NO")]
    mem = {"size": size, "bytes": size_bytes, "harness": max(c.maxrss for c in h.calls),
           "trec_eval": max(c.maxrss for c in t.calls)}
    return rows, mem


def memory_rows(mem: dict) -> list[Row]:
    ratio = mem["harness"] / mem["bytes"]
    met = ratio <= 1.0
    print(f"\n== memory: peak RSS (ru_maxrss, max over rounds) on {mem['size']}, run file "
          f"{mb(mem['bytes'])}")
    print(f"harness   {mb(mem['harness'])} ({ratio:.2f}x the run file)")
    print(f"trec_eval {mb(mem['trec_eval'])} ({mem['trec_eval'] / mem['bytes']:.2f}x the run "
          f"file)")
    print(f"target harness peak <= 1x the run file: {'MET' if met else 'NOT MET'}")
    return [(f"peak RSS, {mem['size']} (run file {mb(mem['bytes'])})", mb(mem["harness"]),
             mb(mem["trec_eval"]), f"{mem['trec_eval'] / mem['harness']:.2f}x",
             f"harness <= 1x run file: {ratio:.2f}x", "yes" if met else "NO")]


def bench_big(args: argparse.Namespace, harness: str, base: Path) -> list[Row]:
    """``--big``: peak memory on a run of about 2.2 GB (450,000 queries x 100 documents),
    harness only: trec_eval's time grows with the square of the queries (101 s at
    100,000), so it is not run here."""
    folder = base / "big"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    qrels, runf = write_data(folder, BIG_QUERIES)
    print(f"\n== big: {BIG_QUERIES:,} queries x 100 documents ({runf.stat().st_size / 1e9:.2f} GB "
          f"run, {qrels.stat().st_size / 1e9:.2f} GB qrels; data ready in "
          f"{time.perf_counter() - t0:.0f} s), -m all_trec, harness only", flush=True)
    calls = [run([harness, "eval", "-m", "all_trec", str(qrels), str(runf)],
                 folder / "out.harness.txt") for _ in range(args.rounds or 1)]
    size = runf.stat().st_size
    peak = max(c.maxrss for c in calls)
    ratio_ = peak / size
    for c in calls:
        print(f"harness {c.wall:.1f} s (cpu {c.cpu:.1f}), peak {mb(c.maxrss)}", flush=True)
    print(f"peak / run file: {ratio_:.2f}x; target <= 1x: {'MET' if ratio_ <= 1 else 'NOT MET'}")
    return [(f"peak RSS, {BIG_QUERIES:,} q x 100 docs (run file {mb(size)})", mb(peak),
             "not run (quadratic in queries)", "", f"harness <= 1x run file: {ratio_:.2f}x",
             "yes" if ratio_ <= 1 else "NO"),
            (f"{BIG_QUERIES:,} q x 100 docs, all_trec, wall",
             f"{statistics.median(c.wall for c in calls):.1f} s", "", "", "", "")]


def bench_many(args: argparse.Namespace, harness: str, trec: str, base: Path) -> list[Row]:
    folder = base / "many"
    folder.mkdir(parents=True, exist_ok=True)
    count = args.many_count
    qrels, runs = write_many(folder, count)
    rounds = args.rounds or 5
    h_cmd = [harness, "eval", "-m", "all_trec", str(qrels), *map(str, runs)]
    print(f"\n== many: {count} runs of 200 queries x 100 documents, -m all_trec, "
          f"{rounds} rounds: one harness process vs {count} trec_eval processes", flush=True)
    h_walls, h_cpus, t_walls, t_cpus, ratios = [], [], [], [], []
    for r in range(rounds):
        h = run(h_cmd, folder / "out.harness.txt")
        tw = tc = 0.0
        outs = []
        for k, rf in enumerate(runs):
            o = folder / f"out.trec_eval.{k:03d}.txt"
            c = run([trec, "-m", "all_trec", str(qrels), str(rf)], o)
            tw += c.wall
            tc += c.cpu
            outs.append(o)
        h_walls.append(h.wall)
        h_cpus.append(h.cpu)
        t_walls.append(tw)
        t_cpus.append(tc)
        ratios.append(tw / h.wall)
        print(f"round {r + 1}: harness {h.wall:.2f} s (cpu {h.cpu:.2f}), trec_eval x{count} "
              f"{tw:.2f} s (cpu {tc:.2f}), {tw / h.wall:.2f}x", flush=True)
    print(f"{'tool':<22}{'wall s, median [min-max]':<28}{'cpu s (user+sys)':<28}")
    print(f"{'harness (1 process)':<22}{spread(h_walls, '{:.2f}'):<28}{spread(h_cpus, '{:.2f}')}")
    print(f"{f'trec_eval (x{count})':<22}{spread(t_walls, '{:.2f}'):<28}"
          f"{spread(t_cpus, '{:.2f}')}")
    print(f"per run: harness {statistics.median(h_walls) / count * 1e3:.1f} ms, trec_eval "
          f"{statistics.median(t_walls) / count * 1e3:.1f} ms")
    print(f"trec_eval sum / harness: {spread(ratios, '{:.2f}')}x")
    if not args.no_check:
        joined = folder / "out.trec_eval.all.txt"
        joined.write_text("".join(o.read_text() for o in outs))
        print(diff_outputs(folder / "out.harness.txt", joined,
                           f"stdout, harness (1 process) vs {count} trec_eval outputs joined"))
    return [(f"many: {count} runs x 200 q x 100 docs, all_trec, wall",
             f"{statistics.median(h_walls):.2f} s (1 process)",
             f"{statistics.median(t_walls):.2f} s ({count} processes)",
             f"{statistics.median(ratios):.2f}x", "(none; start cost amortised)", "")]


# ---------------------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Without --cast/--sizes/--memory/--many it runs: --cast --sizes 1m --memory --many")
    parser.add_argument("--trec-eval", default=os.environ.get("TREC_EVAL"), metavar="PATH",
                        help="the trec_eval binary (default: $TREC_EVAL)")
    parser.add_argument("--cast", action="store_true", help="the CAsT 2021 BM25 run")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated: 1m, 10m (10m only when named)")
    parser.add_argument("--memory", action="store_true",
                        help="peak RSS on the largest size timed (1m when --sizes is not given)")
    parser.add_argument("--many", action="store_true", help="N runs in one harness process")
    parser.add_argument("--big", action="store_true",
                        help="peak memory of harness eval on a ~2.2 GB run (harness only)")
    parser.add_argument("--many-count", type=int, default=100, metavar="N")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds per item (default 5; 1 for 10m)")
    parser.add_argument("--dir", type=Path, default=None, help="data folder (default: temp)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the stdout diffs of harness vs trec_eval")
    args = parser.parse_args()

    if not args.trec_eval:
        raise SystemExit("no trec_eval binary: pass --trec-eval PATH or set TREC_EVAL "
                         "(trec_eval 10.0, built outside this repository)")
    trec = str(Path(args.trec_eval).expanduser().resolve())
    if not (os.path.isfile(trec) and os.access(trec, os.X_OK)):
        raise SystemExit(f"--trec-eval {args.trec_eval}: not an executable file")
    harness = str(Path(sys.executable).with_name("harness"))
    if not os.access(harness, os.X_OK):
        raise SystemExit(f"{harness} not found: run this with the project's .venv/bin/python")

    chosen = args.cast or args.sizes or args.memory or args.many or args.big
    do_cast = args.cast or not chosen
    do_many = args.many or not chosen
    do_memory = args.memory or not chosen
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()] if args.sizes else []
    if not sizes and (do_memory or not chosen):
        sizes = ["1m"]
    bad = [s for s in sizes if s not in SIZES]
    if bad:
        raise SystemExit(f"--sizes: unknown {bad}; choose from {list(SIZES)}")
    sizes.sort(key=SIZES.get)

    base = args.dir or Path(tempfile.mkdtemp(prefix="bench_trec_eval_"))
    base.mkdir(parents=True, exist_ok=True)
    out = base / "out"
    out.mkdir(exist_ok=True)
    version = subprocess.run([trec, "-v"], capture_output=True, text=True)
    print(f"data folder: {base}\nharness: {harness}\ntrec_eval: {trec} "
          f"({(version.stdout + version.stderr).strip().splitlines()[0] if (version.stdout + version.stderr).strip() else '?'})"
          f"\nmachine: {os.cpu_count()} CPUs, python {platform.python_version()}, "
          f"numpy {np.__version__}", flush=True)

    rows: list[Row] = []
    if do_cast:
        rows += bench_cast(args, harness, trec, out)
    mems = []
    for size in sizes:
        r, mem = bench_size(args, size, harness, trec, base)
        rows += r
        mems.append(mem)
    if do_memory and mems:
        rows += memory_rows(max(mems, key=lambda m: m["bytes"]))
    if do_many:
        rows += bench_many(args, harness, trec, base)
    if args.big:
        rows += bench_big(args, harness, base)

    today = dt.date.today().isoformat()
    print(f"\n### harness eval vs trec_eval 10.0 ({today}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}; wall = median of rounds, each call a new "
          f"process; ratio = trec_eval / harness)\n")
    print("| work | harness | trec_eval | ratio | target | met? |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
