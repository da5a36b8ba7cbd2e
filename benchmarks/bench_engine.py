#!/usr/bin/env python
"""Benchmark of the metric engine against sklearn and pytrec_eval.

Run from the repository root::

    .venv/bin/python benchmarks/bench_engine.py                  # everything (~2-3 min)
    .venv/bin/python benchmarks/bench_engine.py --skip-memory    # no 100k-query run
    .venv/bin/python benchmarks/bench_engine.py --profile        # + cProfile of evaluate

What it measures (see benchmarks/README.md for the targets and the latest numbers):

1. Synthetic run: ``--queries`` queries (default 10,000) with 20-200 documents each
   (uniform), graded labels 0-4 drawn with probabilities .5/.25/.15/.07/.03 and scores
   ``round(0.3 * label + N(0, 1), 2)`` so ties are common. Everything is generated with
   vectorised numpy/pyarrow from a fixed seed; docids are strings ``d<n>``, unique within a
   query, drawn from a corpus of ~1M ids.
2. End-to-end time, DataFrame in, per-query nDCG@10 (linear gain, tie-averaged) out, best of
   ``--repeat`` rounds, the three tools interleaved in each round:

   a. ``harness.evaluate`` with ``Metric("ndcg", k=10, gain="linear", ideal="retrieved",
      ties="average")``;
   b. ``sklearn.metrics.ndcg_score(k=10, ignore_ties=False)``, including building the
      padded dense (n_queries, max_len) matrices from the DataFrame;
   c. ``pytrec_eval`` ``ndcg_cut.10``, including building the qrels/run dicts and the
      evaluator.

   Per-query agreement is checked outside the timings: harness vs sklearn's per-sample
   scores (tie averaging), and harness with the trec_eval convention (``ties="docid"``)
   vs pytrec_eval (trec_eval breaks ties by docid instead of averaging).
3. Grid: 48 nDCG variants (2 gains x 2 discounts x 4 cut-offs x 3 tie modes) in one
   ``evaluate`` call, against the one-variant call.
4. Memory (unless ``--skip-memory``): a child process builds ``--memory-queries`` queries
   (default 100,000, ~11M rows) and evaluates nDCG@10; its peak RSS is reported.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmark the working tree, wherever we are run from
    sys.path.insert(0, str(ROOT))

import harness
from harness import Metric

SEED = 20240611
LABEL_PROBS = (0.50, 0.25, 0.15, 0.07, 0.03)
CORPUS = 1_000_003  # prime: docid = (a_q + j * s_q) mod CORPUS is unique within a query
MIN_DOCS, MAX_DOCS = 20, 200
PAD_SCORE = -1e9  # sklearn rejects -inf; padded rows have label 0 and rank last

TARGET_SPEEDUP = 5.0  # harness >= 5x faster than both sklearn and pytrec_eval
TARGET_GRID = 3.0  # 48-variant grid <= 3x the one-variant call
TARGET_PEAK_GB = 4.0  # 100k queries under 4 GB peak RSS

NDCG10 = Metric("ndcg", k=10, gain="linear", ideal="retrieved", ties="average")
NDCG10_TREC = Metric("ndcg", k=10, gain="linear", ties="docid")  # trec_eval convention
GRID = [
    Metric("ndcg", k=k, gain=gain, discount=discount, ideal="retrieved", ties=ties)
    for gain in ("exp2", "linear")
    for discount in ("log2", "reciprocal")
    for k in (1, 5, 10, 20)
    for ties in ("average", "input", "optimistic")
]


# -- data ------------------------------------------------------------------------------------
def make_run(n_queries: int, seed: int = SEED, docids: str = "str") -> pd.DataFrame:
    """A labelled run: columns qid (int64), docid (str or int64), score, label (int64).

    Rows are grouped by qid (as in a TREC run file) in random order within each query.
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(MIN_DOCS, MAX_DOCS + 1, size=n_queries)
    n = int(sizes.sum())
    q = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    starts = np.cumsum(sizes) - sizes
    j = np.arange(n, dtype=np.int64)
    j -= np.repeat(starts, sizes)
    # docid number: an affine map mod a prime, distinct for j < CORPUS within a query
    a = rng.integers(0, CORPUS, size=n_queries)
    s = rng.integers(1, CORPUS, size=n_queries)
    docnum = a[q]
    docnum += j * s[q]
    docnum %= CORPUS
    del j
    cdf = np.cumsum(LABEL_PROBS)
    label = np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right").astype(np.int64)
    score = rng.standard_normal(n)
    score += 0.3 * label
    np.round(score, 2, out=score)
    if docids == "str":
        import pyarrow as pa
        import pyarrow.compute as pc

        text = pc.binary_join_element_wise("d", pa.array(docnum).cast(pa.string()), "")
        del docnum
        docid: Any = text.to_pandas()  # pandas' default string dtype ("str", Arrow-backed)
        del text
    else:
        docid = docnum
    return pd.DataFrame({"qid": q, "docid": docid, "score": score, "label": label}, copy=False)


# -- the three pipelines ---------------------------------------------------------------------
def run_harness(df: pd.DataFrame, metrics: list[Metric] | Metric = NDCG10) -> pd.DataFrame:
    return harness.evaluate(df, metrics=metrics)


def dense_from_frame(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded (n_queries, max_len) labels and scores, rows in sorted-qid order."""
    codes, uniq = pd.factorize(df["qid"], sort=True)
    order = np.argsort(codes, kind="stable")
    qs = codes[order]
    counts = np.bincount(codes, minlength=len(uniq))
    starts = np.cumsum(counts) - counts
    col = np.arange(len(qs)) - starts[qs]
    y_true = np.zeros((len(uniq), int(counts.max())))
    y_score = np.full((len(uniq), int(counts.max())), PAD_SCORE)
    y_true[qs, col] = df["label"].to_numpy(dtype=np.float64)[order]
    y_score[qs, col] = df["score"].to_numpy(dtype=np.float64)[order]
    return y_true, y_score, np.asarray(uniq)


def run_sklearn(df: pd.DataFrame) -> float:
    from sklearn.metrics import ndcg_score

    y_true, y_score, _ = dense_from_frame(df)
    return ndcg_score(y_true, y_score, k=10, ignore_ties=False)


def trec_dicts(df: pd.DataFrame) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """pytrec_eval's qrels and run dicts (str qid -> str docid -> label / score)."""
    codes, uniq = pd.factorize(df["qid"], sort=True)
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=len(uniq))).tolist()
    docs = df["docid"].astype(str).to_numpy()[order].tolist()
    scores = df["score"].to_numpy(dtype=np.float64)[order].tolist()
    labels = df["label"].to_numpy(dtype=np.int64)[order].tolist()
    qrel: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    lo = 0
    for qid, hi in zip(map(str, uniq), ends):
        qrel[qid] = dict(zip(docs[lo:hi], labels[lo:hi]))
        run[qid] = dict(zip(docs[lo:hi], scores[lo:hi]))
        lo = hi
    return qrel, run


def run_pytrec(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    import pytrec_eval

    qrel, run = trec_dicts(df)
    return pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut.10"}).evaluate(run)


# -- helpers ---------------------------------------------------------------------------------
def interleaved_best(fns: dict[str, Callable[[], Any]], repeat: int
                     ) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Best-of-``repeat`` wall time of each function, rounds interleaved (a, b, c, a, b, c...)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            result = fn()
            times[name].append(time.perf_counter() - t0)
            del result  # freed outside the timing
    return {n: min(t) for n, t in times.items()}, times


def fmt_s(t: float) -> str:
    return f"{t:.3f} s"


def yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def rss_gb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 1e9


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def profile_evaluate(df: pd.DataFrame, top: int = 15) -> str:
    """cProfile of one ``evaluate`` call: top ``top`` by cumulative time, then by own time.

    numpy functions implemented in C (``lexsort``, fancy indexing, ufuncs) are not listed
    separately; their time shows as the *own* time (tottime) of the harness function that
    calls them.
    """
    run_harness(df)  # warm-up: imports and first-touch allocations out of the profile
    prof = cProfile.Profile()
    prof.enable()
    run_harness(df)
    prof.disable()
    out = []
    for key in ("cumulative", "tottime"):
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs().sort_stats(key).print_stats(top if key == "cumulative" else 10)
        text = buf.getvalue().strip("\n")
        out.append(f"-- by {key} --\n" + text[text.index("ncalls"):] if "ncalls" in text else text)
    return "\n\n".join(out)


# -- memory child ----------------------------------------------------------------------------
def memory_child(n_queries: int, docids: str) -> None:
    """Build the big run, evaluate nDCG@10 once, print one JSON line with the RSS figures."""
    t0 = time.perf_counter()
    df = make_run(n_queries, seed=SEED + 1, docids=docids)
    gc.collect()
    t_gen = time.perf_counter() - t0
    info: dict[str, Any] = {
        "rows": len(df), "queries": n_queries, "docids": docids,
        "docid_dtype": str(df["docid"].dtype), "frame_gb": df.memory_usage(deep=True).sum() / 1e9,
        "gen_s": t_gen, "gen_peak_gb": (_status_kb("VmHWM") or 0) / 1e6,
        "before_eval_gb": rss_gb(),
    }
    info["peak_reset"] = _reset_peak()
    t0 = time.perf_counter()
    out = run_harness(df)
    info["eval_s"] = time.perf_counter() - t0
    info["eval_peak_gb"] = (_status_kb("VmHWM") or 0) / 1e6  # since reset: evaluate (+ frame)
    info["mean_ndcg10"] = float(out[NDCG10.display_name].mean())
    print(json.dumps(info), flush=True)


def measure_memory(n_queries: int, docids: str) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(n_queries),
           "--memory-docids", docids]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    info["child_peak_gb"] = after * 1024 / 1e9 if after > before else float("nan")
    return info


# -- main ------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=10_000, help="queries of the timing run")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; the best time is kept")
    ap.add_argument("--skip-memory", action="store_true", help="skip the 100k-query run")
    ap.add_argument("--memory-queries", type=int, default=100_000)
    ap.add_argument("--memory-docids", choices=("str", "int"), default="str",
                    help="docid type of the memory run (default: strings, Arrow-backed)")
    ap.add_argument("--profile", action="store_true",
                    help="also print a cProfile of harness.evaluate (top 15 cumulative)")
    ap.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.memory_child is not None:
        memory_child(args.memory_child, args.memory_docids)
        return

    from importlib.metadata import version

    import pytrec_eval  # import cost out of the timings
    import sklearn
    from sklearn.metrics import ndcg_score
    from sklearn.metrics._ranking import _ndcg_sample_scores

    print(f"# bench_engine  python {platform.python_version()}  numpy {np.__version__}  "
          f"pandas {pd.__version__}  sklearn {sklearn.__version__}  "
          f"pytrec_eval-terrier {version('pytrec-eval-terrier')}")
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} "
          f"(shared machine: timings are wall-clock, best of {args.repeat})")

    # 1. data
    t0 = time.perf_counter()
    df = make_run(args.queries)
    t_gen = time.perf_counter() - t0
    n_rows = len(df)
    sizes = df.groupby("qid").size()
    score_ties = 1 - df.groupby("qid")["score"].nunique().sum() / n_rows
    print(f"\n## data: {args.queries:,} queries, {n_rows:,} rows "
          f"({sizes.min()}-{sizes.max()} docs/query, docid dtype {df['docid'].dtype}), "
          f"built in {t_gen:.2f} s")
    print(f"   label shares {np.round(np.bincount(df['label'], minlength=5) / n_rows, 3)}, "
          f"{score_ties:.1%} of rows tie an earlier score of their query")

    # 2. end-to-end timings, for string docids (above) and the same data with integer docids
    print(f"\n## end to end: DataFrame -> per-query {NDCG10.display_name}")
    e2e: dict[str, dict[str, float]] = {}
    for kind, frame in (("str", df), ("int", make_run(args.queries, docids="int"))):
        print(f"   -- docids {kind} ({frame['docid'].dtype})")
        best, all_times = interleaved_best({
            "harness": lambda frame=frame: run_harness(frame),
            "sklearn": lambda frame=frame: run_sklearn(frame),
            "pytrec_eval": lambda frame=frame: run_pytrec(frame),
        }, args.repeat)
        for name, label in (("harness", "harness.evaluate"),
                            ("sklearn", "sklearn ndcg_score (+ padding to dense)"),
                            ("pytrec_eval", "pytrec_eval ndcg_cut.10 (+ dict building)")):
            runs = ", ".join(f"{t:.3f}" for t in all_times[name])
            print(f"   {label:<44} {fmt_s(best[name]):>10}   (runs: {runs})")
        r_sk = best["sklearn"] / best["harness"]
        r_pt = best["pytrec_eval"] / best["harness"]
        print(f"   sklearn / harness     = {r_sk:6.2f}x")
        print(f"   pytrec_eval / harness = {r_pt:6.2f}x")
        print(f"   target: harness >= {TARGET_SPEEDUP:g}x faster than both -> "
              f"{yes(r_sk >= TARGET_SPEEDUP and r_pt >= TARGET_SPEEDUP)}")
        e2e[kind] = best | {"r_sk": r_sk, "r_pt": r_pt}
    best = e2e["str"]

    # components (informational): where the competitors spend their time
    t0 = time.perf_counter()
    y_true, y_score, uniq = dense_from_frame(df)
    t_dense = time.perf_counter() - t0
    t0 = time.perf_counter()
    qrel, run = trec_dicts(df)
    t_dicts = time.perf_counter() - t0
    print(f"   (of which: dense padding {t_dense:.3f} s, trec dict building {t_dicts:.3f} s)")
    tbest, _ = interleaved_best({"trec": lambda df=df: run_harness(df, NDCG10_TREC)}, args.repeat)
    print(f"   (for reference, harness.evaluate with {NDCG10_TREC.display_name}, the trec_eval "
          f"tie rule: {fmt_s(tbest['trec'])}; pytrec_eval / that = "
          f"{best['pytrec_eval'] / tbest['trec']:.2f}x)")

    # agreement, outside the timings
    pq = run_harness(df, [NDCG10, NDCG10_TREC])
    h_avg = pq[NDCG10.display_name].to_numpy()
    h_trec = pq[NDCG10_TREC.display_name].to_numpy()
    sk = _ndcg_sample_scores(y_true, y_score, k=10, ignore_ties=False)
    sk_mean = ndcg_score(y_true, y_score, k=10, ignore_ties=False)
    assert np.array_equal(np.asarray(pq.index), uniq)
    d_sk = float(np.max(np.abs(h_avg - sk)))
    res = pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut.10"}).evaluate(run)
    pt = np.array([res[str(q)]["ndcg_cut_10"] for q in uniq])
    d_pt = float(np.max(np.abs(h_trec - pt)))
    d_tie = np.abs(h_avg - pt)
    print("\n## agreement (per query, max |difference|)")
    print(f"   harness ties=average vs sklearn per-sample   {d_sk:.2e}  (< 1e-9: {yes(d_sk < 1e-9)});"
          f" means {h_avg.mean():.6f} vs {sk_mean:.6f}")
    print(f"   harness {NDCG10_TREC.display_name} vs pytrec_eval  {d_pt:.2e}  "
          f"(<= 1e-12: {yes(d_pt <= 1e-12)})")
    print(f"   harness ties=average vs pytrec_eval          {d_tie.max():.2e}  "
          f"({int((d_tie > 1e-12).sum()):,} of {len(d_tie):,} queries differ: ties straddling "
          "rank 10, trec_eval breaks them by docid)")
    del y_true, y_score, qrel, run, res

    # 3. grid
    print(f"\n## grid: {len(GRID)} variants (gain x discount x k x ties) in one evaluate call")
    gbest, _ = interleaved_best({
        "one": lambda df=df: run_harness(df, [NDCG10]),
        "grid": lambda df=df: run_harness(df, GRID),
    }, args.repeat)
    grid_ratio = gbest["grid"] / gbest["one"]
    grid_ok = grid_ratio <= TARGET_GRID
    print(f"   one variant  {fmt_s(gbest['one']):>10}")
    print(f"   48 variants  {fmt_s(gbest['grid']):>10}   "
          f"({gbest['grid'] / len(GRID) * 1e3:.1f} ms per variant)")
    print(f"   grid / one = {grid_ratio:.2f}x; target <= {TARGET_GRID:g}x -> {yes(grid_ok)}")

    # profile (optional)
    if args.profile:
        print(f"\n## cProfile of harness.evaluate({n_rows:,} rows, {NDCG10.display_name}), "
              "top 15 by cumulative time")
        print(profile_evaluate(df))
    del df
    gc.collect()

    # 4. memory
    mem: dict[str, Any] | None = None
    if not args.skip_memory:
        print(f"\n## memory: child process, {args.memory_queries:,} queries, "
              f"{args.memory_docids} docids, one {NDCG10.display_name} evaluate")
        mem = measure_memory(args.memory_queries, args.memory_docids)
        if "error" in mem:
            print(f"   child failed: {mem['error']}")
        else:
            note = ("string docids (pandas 'str' dtype, Arrow-backed)" if mem["docids"] == "str"
                    else "INTEGER docids (strings skipped to save memory)")
            print(f"   {mem['rows']:,} rows, {note}; frame {mem['frame_gb']:.2f} GB "
                  f"(docid dtype {mem['docid_dtype']}), generated in {mem['gen_s']:.1f} s")
            print(f"   RSS before evaluate {mem['before_eval_gb']:.2f} GB; evaluate took "
                  f"{mem['eval_s']:.1f} s")
            if mem["peak_reset"]:
                print(f"   peak RSS during evaluate (frame included) {mem['eval_peak_gb']:.2f} GB;"
                      f" peak while generating {mem['gen_peak_gb']:.2f} GB")
            print(f"   child peak RSS (ru_maxrss, whole process) {mem['child_peak_gb']:.2f} GB")
            peak = mem["eval_peak_gb"] if mem["peak_reset"] else mem["child_peak_gb"]
            mem["peak"] = peak
            print(f"   target: peak < {TARGET_PEAK_GB:g} GB -> {yes(peak < TARGET_PEAK_GB)}")

    # 5. summary
    print("\n## summary (markdown)\n")
    print(f"Machine: {os.cpu_count()} CPUs, python {platform.python_version()}, numpy "
          f"{np.__version__}, pandas {pd.__version__}, sklearn {sklearn.__version__}. "
          f"Best of {args.repeat}, wall clock.\n")
    print("| measure | value | target | met |")
    print("|---|---|---|---|")
    print(f"| data | {args.queries:,} queries, {n_rows:,} rows | | |")
    for kind, b in e2e.items():
        print(f"| {kind} docids: harness / sklearn (incl. padding) / pytrec_eval (incl. dicts) "
              f"| {fmt_s(b['harness'])} / {fmt_s(b['sklearn'])} / {fmt_s(b['pytrec_eval'])} | | |")
        print(f"| {kind} docids: sklearn / harness | {b['r_sk']:.2f}x | >= {TARGET_SPEEDUP:g}x | "
              f"{yes(b['r_sk'] >= TARGET_SPEEDUP)} |")
        print(f"| {kind} docids: pytrec_eval / harness | {b['r_pt']:.2f}x | >= "
              f"{TARGET_SPEEDUP:g}x | {yes(b['r_pt'] >= TARGET_SPEEDUP)} |")
    print(f"| grid of {len(GRID)} / one variant | {grid_ratio:.2f}x "
          f"({fmt_s(gbest['grid'])} vs {fmt_s(gbest['one'])}) | <= {TARGET_GRID:g}x | "
          f"{yes(grid_ok)} |")
    if mem is None:
        print("| peak RSS | skipped | | |")
    elif "error" in mem:
        print("| peak RSS | child failed | | |")
    else:
        kind = "str" if mem["docids"] == "str" else "int"
        print(f"| peak RSS, {mem['queries']:,} queries ({mem['rows'] / 1e6:.1f}M rows, {kind} "
              f"docids) | {mem['peak']:.2f} GB | < {TARGET_PEAK_GB:g} GB | "
              f"{yes(mem['peak'] < TARGET_PEAK_GB)} |")
    print(f"| max abs diff vs sklearn / vs pytrec_eval (ties=docid) | {d_sk:.1e} / {d_pt:.1e} "
          "| < 1e-9 / ~1e-12 | "
          f"{yes(d_sk < 1e-9)} / {yes(d_pt <= 1e-12)} |")


if __name__ == "__main__":
    main()
