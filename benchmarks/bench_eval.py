#!/usr/bin/env python
"""``harness eval -m all_trec`` against pytrec_eval on TREC files, each in a fresh process.

Run from the repository root::

    .venv/bin/python benchmarks/bench_eval.py --rounds 5

Data, written once to ``--dir`` (default a temporary folder): a TREC run of ``--queries``
queries (default 10,000) x 100 retrieved documents (1M lines), scores rounded to 2 decimals
(about 20% of documents tie within their query), and qrels judging about 40 documents per
query (30 of the retrieved ones, 10 never retrieved), grades 0-3; qids of 14 characters,
docids of 16 (``"clueweb-0012345"``-like).

Each round runs both, in turn (A B A B ...), each as a user runs it: a new process that
reads the two files and prints every query's and the summary's values:

- A: ``harness eval -m all_trec QRELS RUN`` (the console script);
- B: ``python -c`` reading both files with ``pytrec_eval.parse_qrel`` / ``parse_run``,
  evaluating every measure pytrec_eval supports (trec_eval's all_trec, computed by
  trec_eval's own C code) and printing their means.

``--per-query`` adds ``-q`` to A and prints every per-query value in B as well.

The ratio B / A is computed per round; the median with its min-max is printed, with the
target (>= 4x).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PYTREC = """
import sys, pytrec_eval
PER_QUERY = sys.argv[3] == "1"
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
ev = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures)
res = ev.evaluate(run)
out = []
sums = {}
for qid in sorted(res):
    for name, value in res[qid].items():
        if PER_QUERY:
            out.append(f"{name}\\t{qid}\\t{value:.4f}")
        sums[name] = sums.get(name, 0.0) + value
for name, total in sums.items():
    out.append(f"{name}\\tall\\t{total / len(res):.4f}")
sys.stdout.write("\\n".join(out) + "\\n")
"""


def write_data(folder: Path, n_queries: int, seed: int = 3) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    run_path, qrels_path = folder / "run.txt", folder / "qrels.txt"
    if run_path.exists() and qrels_path.exists():
        return qrels_path, run_path
    depth = 100
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(n_queries):
            qid = f"topic-{q:08d}"
            docs = rng.choice(10_000_000, size=depth + 10, replace=False)
            labels = rng.integers(0, 4, depth + 10)
            scores = np.round(rng.normal(size=depth) + 0.3 * labels[:depth], 2)
            order = np.argsort(-scores, kind="stable")
            for rank, i in enumerate(order, 1):
                run.write(f"{qid} Q0 clueweb-{docs[i]:08d} {rank} {scores[i]:.2f} bench\n")
            judged = np.concatenate([rng.choice(depth, 30, replace=False),
                                     np.arange(depth, depth + 10)])
            for i in judged:
                qrels.write(f"{qid} 0 clueweb-{docs[i]:08d} {labels[i]}\n")
    return qrels_path, run_path


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed: {proc.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--per-query", action="store_true")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench_eval_"))
    folder.mkdir(parents=True, exist_ok=True)
    qrels, run = write_data(folder, args.queries)
    harness_bin = Path(sys.executable).with_name("harness")
    ours = [str(harness_bin), "eval", *(["-q"] if args.per_query else []), "-m", "all_trec",
            str(qrels), str(run)]
    theirs = [sys.executable, "-c", PYTREC, str(qrels), str(run), str(int(args.per_query))]
    a_times, b_times, ratios = [], [], []
    for i in range(args.rounds):
        a = timed(ours)
        b = timed(theirs)
        a_times.append(a)
        b_times.append(b)
        ratios.append(b / a)
        print(f"round {i + 1}: harness eval {a:.2f} s, pytrec_eval {b:.2f} s, {b / a:.2f}x",
              flush=True)
    med = statistics.median(ratios)
    print(f"\n{args.queries:,} queries x 100 documents, {args.rounds} rounds "
          f"(files in {folder}):")
    print(f"  harness eval {'-q ' if args.per_query else ''}-m all_trec: median {statistics.median(a_times):.2f} s "
          f"[{min(a_times):.2f}, {max(a_times):.2f}]")
    print(f"  pytrec_eval (all measures):  median {statistics.median(b_times):.2f} s "
          f"[{min(b_times):.2f}, {max(b_times):.2f}]")
    print(f"  ratio: {med:.2f}x [{min(ratios):.2f}, {max(ratios):.2f}]  target >= 4x: "
          f"{'MET' if med >= 4 else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
