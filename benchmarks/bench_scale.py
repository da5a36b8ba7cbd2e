"""Issue 25: time linear in rows and memory near the input, 10M to 100M rows.

Usage::

    .venv/bin/python benchmarks/bench_scale.py data                 # build the files once
    .venv/bin/python benchmarks/bench_scale.py run --rounds 2       # the table and targets
    .venv/bin/python -m harness scored-run /tmp/scale_data/scored_110M.parquet --queries 1000000
    .venv/bin/python benchmarks/bench_scale.py app --rounds 2       # the study in one pass

Workload (ranx's efficiency benchmark): Q queries x 100 retrieved documents, 20 judged per
query (15 of them retrieved, 5 not, grades 0-3), scores rounded to 2 decimals so ties occur.
Ids are integers, or text of 11 characters (``q0000000042``, ``d0012345678``; pandas'
Arrow-backed ``str``). Files are written once to ``--dir`` (default /tmp/scale_data), a query
at a time in chunks, so building never holds a 100M-row frame.

Each measurement is a fresh child process (Arrow on the system allocator and ``malloc_trim``
after the read, so its freed buffers go back to the OS): it reads the run (and the qrels)
into pandas, then times the first call of the engine and a second one. ``input`` is the
frames' bytes (pandas' deep ``memory_usage``); peak RSS is the process's ``VmHWM`` (what
``/usr/bin/time -v`` reports as maximum resident set size) counted from after the read: the
resident frames and the Python runtime are in it, the read's own transient peak is not.
Rounds are interleaved: round r runs every configuration once, in turn, so drifts of the
shared machine fall on all of them alike. Medians and min-max over the rounds are printed.

``app`` times the 2-ranker, 29-variant study on a scored parquet_run (engine=stream) against
evaluate_parquet's nDCG@10 alone, under ``/usr/bin/time -v``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOCS = 100  # retrieved per query
JUDGED_IN = 15  # judged and retrieved
JUDGED_OUT = 5  # judged, not retrieved
SIZES = {"10M": 100_000, "100M": 1_000_000}  # queries
CHUNK = 50_000  # queries written at a time


def _ids(values, prefix: str):  # noqa: ANN001, ANN202 - pyarrow arrays
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.utf8_lpad(pc.cast(pa.array(values), pa.string()), width=10, padding="0")
    return pc.binary_join_element_wise(pa.scalar(prefix), text, "")


def build(directory: Path, name: str, n_queries: int, seed: int = 25) -> None:
    """``run_{name}.parquet`` and ``qrels_{name}.parquet``, both with int and text ids."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    run_path, qrels_path = directory / f"run_{name}.parquet", directory / f"qrels_{name}.parquet"
    if run_path.exists() and qrels_path.exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    run_w = qrels_w = None
    for start in range(0, n_queries, CHUNK):
        q = np.arange(start, min(n_queries, start + CHUNK), dtype=np.int64)
        j = np.arange(DOCS + JUDGED_OUT, dtype=np.int64)
        doc = (q[:, None] * 7919 + j[None, :] * 104729) % 50_000_000  # distinct per query
        retrieved = doc[:, :DOCS]
        scores = np.round(rng.random(retrieved.shape), 2)
        pick = np.argsort(rng.random((len(q), DOCS)), axis=1)[:, :JUDGED_IN]
        judged = np.concatenate([np.take_along_axis(retrieved, pick, 1), doc[:, DOCS:]], 1)
        labels = rng.choice(4, size=judged.shape, p=[0.4, 0.3, 0.2, 0.1])
        rq = np.repeat(q, DOCS)
        jq = np.repeat(q, JUDGED_IN + JUDGED_OUT)
        run = pa.table({"qid": rq, "docid": retrieved.ravel(), "score": scores.ravel(),
                        "qid_str": _ids(rq, "q"), "docid_str": _ids(retrieved.ravel(), "d")})
        qrels = pa.table({"qid": jq, "docid": judged.ravel(), "label": labels.ravel(),
                          "qid_str": _ids(jq, "q"), "docid_str": _ids(judged.ravel(), "d")})
        if run_w is None:
            run_w = pq.ParquetWriter(run_path.with_suffix(".tmp"), run.schema)
            qrels_w = pq.ParquetWriter(qrels_path.with_suffix(".tmp"), qrels.schema)
        run_w.write_table(run, row_group_size=1_000_000)
        qrels_w.write_table(qrels, row_group_size=1_000_000)
    run_w.close()
    qrels_w.close()
    run_path.with_suffix(".tmp").rename(run_path)
    qrels_path.with_suffix(".tmp").rename(qrels_path)


def grid() -> list:
    """The app's default metric grid (conf/metric/default.yaml): 29 variants."""
    from omegaconf import OmegaConf

    from harness.app.plan import build_metrics

    spec = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "metric" / "default.yaml"))
    spec.pop("defaults", None)
    return build_metrics(spec)


def metric_set(name: str) -> list:
    from harness import Metric

    return [Metric("ndcg", k=10, ideal="judged")] if name == "ndcg10" else grid()


def _status(key: str) -> float:
    """GB of a /proc/self/status entry (VmRSS: resident now; VmHWM: peak since reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1e6
    return float("nan")


def child(engine: str, directory: str, size: str, ids: str, metrics: str) -> None:
    """One measurement, printed as JSON: ``memory`` reads the run and qrels into pandas
    and calls harness.evaluate twice; ``stream`` calls evaluate_parquet twice."""
    import ctypes
    import gc

    import pyarrow as pa
    import pyarrow.parquet as pq

    import harness

    pa.set_memory_pool(pa.system_memory_pool())  # freed read buffers go back to the OS
    d = Path(directory)
    cols = {"int": ["qid", "docid"], "str": ["qid_str", "docid_str"]}[ids]
    qrels = pq.read_table(d / f"qrels_{size}.parquet", columns=cols + ["label"]).to_pandas()
    qrels.columns = ["qid", "docid", "label"]
    mlist = metric_set(metrics)
    if engine == "memory":
        run = pq.read_table(d / f"run_{size}.parquet", columns=cols + ["score"]).to_pandas()
        run.columns = ["qid", "docid", "score"]

        def call():  # noqa: ANN202
            return harness.evaluate(run, qrels, mlist)
    else:
        names = {"qid": cols[0], "docid": cols[1]}

        def call():  # noqa: ANN202
            return harness.evaluate_parquet(d / f"run_{size}.parquet", qrels, mlist,
                                            batch_rows=2_000_000, names=names)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # what the read freed goes back to the OS
    frames = sum(f.memory_usage(deep=True).sum() for f in (qrels, locals().get("run"))
                 if f is not None) / 1e9
    loaded = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here: the engine's peak
    times, means = [], []
    for _ in range(2):
        t = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t)
        means.append(float(out.iloc[:, 3].mean()))
    print(json.dumps({"times": times, "mean": means[0], "same": means[0] == means[1],
                      "loaded_gb": loaded, "peak_gb": _status("VmHWM"), "frames_gb": frames,
                      "process_peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))


def measure(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "child", *args], capture_output=True,
                          text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def run_table(directory: Path, rounds: int, sizes: list[str], ids: list[str],
              metric_sets: list[str], engines: list[str]) -> None:
    configs = [(e, s, i, m) for s in sizes for i in ids for m in metric_sets for e in engines
               if not (e == "stream" and i == "str")]
    results: dict[tuple, list[dict]] = {c: [] for c in configs}
    for r in range(rounds):  # interleaved: each round runs every configuration once
        for c in configs:
            results[c].append(measure(c[0], str(directory), c[1], c[2], c[3]))
            got = results[c][-1]
            print(f"round {r + 1}: {c}: first {got['times'][0]:.2f} s, second "
                  f"{got['times'][1]:.2f} s, peak {got['peak_gb']:.2f} GB "
                  f"(input {got['loaded_gb']:.2f} GB)", flush=True)
    print(f"\n{time.strftime('%Y-%m-%d')}, {rounds} rounds; medians (min–max)\n")
    print("| rows | ids | metrics | engine | first call | every call | input (frames) | "
          "RSS before the call | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c, got in results.items():
        firsts = [g["times"][0] for g in got]
        every = [t for g in got for t in g["times"]]
        peak = max(g["peak_gb"] for g in got)
        loaded = statistics.median(g["loaded_gb"] for g in got)
        frames = statistics.median(g["frames_gb"] for g in got)
        print(f"| {c[1]} | {c[2]} | {'nDCG@10' if c[3] == 'ndcg10' else '29 variants'} | "
              f"{c[0]} | {_span(firsts)} | {_span(every)} | {frames:.2f} GB | "
              f"{loaded:.2f} GB | {peak:.2f} GB |")
    means = {(c[1], c[3]): {g["mean"] for g in got} for c, got in results.items()}
    assert all(len(v) == 1 for v in means.values()), means  # every engine, every call
    print()
    for (e, s, i, m), got in results.items():
        if e != "memory" or s != "100M" or (e, "10M", i, m) not in results:
            continue
        small = results[(e, "10M", i, m)]
        for what, pick in (("first call", lambda g: g["times"][:1]),
                           ("every call", lambda g: g["times"])):
            big_t = statistics.median(t for g in got for t in pick(g))
            small_t = statistics.median(t for g in small for t in pick(g))
            ratio = big_t / (10 * small_t)
            print(f"target: {i} ids, {m}, {what}: 100M within 1.1x of 10x the 10M time: "
                  f"{'MET' if ratio <= 1.1 else 'NOT MET'} (100M / (10 x 10M) = {ratio:.2f})")
        extra = max(g["peak_gb"] - g["frames_gb"] for g in got)
        print(f"target: {i} ids, {m}: 100M peak RSS <= input + 2 GB: "
              f"{'MET' if extra <= 2 else 'NOT MET'} (peak - frames = {extra:.2f} GB; the "
              f"call itself added {max(g['peak_gb'] - g['loaded_gb'] for g in got):.2f} GB)")


def app_child(path: str) -> None:
    """evaluate_parquet of nDCG@10 alone on the scored file (labels in it), as JSON."""
    import harness

    t = time.perf_counter()
    out = harness.evaluate_parquet(path, None, "ndcg@10", batch_rows=2_000_000)
    print(json.dumps({"seconds": time.perf_counter() - t, "mean": float(out.iloc[:, 3].mean()),
                      "process_peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))


def _timed(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS GB, stderr) of a command under /usr/bin/time -v."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{command} failed:\n{proc.stderr[-3000:]}")
    rss = [line for line in proc.stderr.splitlines() if "Maximum resident set size" in line]
    return wall, int(rss[0].split()[-1]) / 1e6, proc.stdout + proc.stderr


def app_table(path: Path, rounds: int, out: Path) -> None:
    """The 2-ranker, 29-variant study on a scored parquet_run with engine=stream, against
    evaluate_parquet's nDCG@10 alone, in interleaved rounds."""
    study = [sys.executable, "-m", "harness", "dataset=parquet_run", f"dataset.path={path}",
             "ranker=scored_columns", "engine=stream", "tracking=off",
             "tracking.figures=false", f"hydra.run.dir={out}"]
    alone, app, passes = [], [], []
    for r in range(rounds):
        wall, peak, text = _timed([sys.executable, __file__, "appchild", str(path)])
        alone.append((json.loads(text.split("\n")[0])["seconds"], wall, peak))
        wall, peak, text = _timed(study)
        line = next(x for x in text.splitlines() if "one pass over" in x)
        passes.append(float(line.split(" rows in ")[1].split("s")[0]))
        app.append((wall, peak))
        print(f"round {r + 1}: evaluate_parquet nDCG@10 {alone[-1][0]:.1f} s "
              f"(process {alone[-1][1]:.1f} s, {alone[-1][2]:.2f} GB); study {wall:.1f} s, "
              f"peak {peak:.2f} GB; {line.split('harness: ')[-1].strip()}", flush=True)
    one = statistics.median(a[0] for a in alone)
    whole = statistics.median(a[0] for a in app)
    stage = statistics.median(passes)
    print(f"\nevaluate_parquet nDCG@10: {_span([a[0] for a in alone])}; the study's one "
          f"pass: {_span(passes)}; the whole study: {_span([a[0] for a in app])}, peak "
          f"{max(a[1] for a in app):.2f} GB")
    for what, value in (("the evaluate pass", stage), ("the whole study", whole)):
        ratio = value / one
        print(f"target: {what} (2 rankers x 29 variants) within 2.5x of evaluate_parquet "
              f"nDCG@10: {'MET' if ratio <= 2.5 else 'NOT MET'} ({ratio:.2f}x)")
    peak = max(a[1] for a in app)
    print(f"target: the study's peak RSS <= 2 GB: {'MET' if peak <= 2 else 'NOT MET'} "
          f"({peak:.2f} GB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["data", "run", "app", "child", "appchild"])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/scale_data"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sizes", nargs="+", default=list(SIZES))
    ap.add_argument("--ids", nargs="+", default=["int", "str"])
    ap.add_argument("--metrics", nargs="+", default=["ndcg10", "grid"])
    ap.add_argument("--engines", nargs="+", default=["memory", "stream"])
    ap.add_argument("--file", type=Path, help="app: a scored parquet_run (harness scored-run "
                    "FILE --queries 1000000 writes the 110M-row one)")
    a = ap.parse_args()
    if a.what == "child":
        child(*a.args)
    elif a.what == "appchild":
        app_child(*a.args)
    elif a.what == "app":
        app_table(a.file or a.dir / "scored_110M.parquet", a.rounds, a.dir / "app_out")
    elif a.what == "data":
        for name in a.sizes:
            build(a.dir, name, SIZES[name])
    else:
        for name in a.sizes:
            build(a.dir, name, SIZES[name])
        run_table(a.dir, a.rounds, a.sizes, a.ids, a.metrics, a.engines)


if __name__ == "__main__":
    main()
