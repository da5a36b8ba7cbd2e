"""Issue 25: time linear in rows and memory near the input, 10M to 100M rows, against Dask,
ranx and pytrec_eval.

Usage::

    .venv/bin/python benchmarks/bench_scale.py run --quick            # 1M rows, about a minute
    .venv/bin/python benchmarks/bench_scale.py data --sizes 10M 100M  # build the files once
    .venv/bin/python benchmarks/bench_scale.py run --sizes 10M 100M --rounds 2
    .venv/bin/python benchmarks/bench_scale.py run --sizes 10M 100M --peers pytrec_eval
    .venv/bin/python -m harness scored-run /tmp/scale_data/scored_110M.parquet --queries 1000000
    .venv/bin/python benchmarks/bench_scale.py app --rounds 2       # the study in one pass

Workload (ranx's efficiency benchmark): Q queries x 100 retrieved documents, 20 judged per
query (15 of them retrieved, 5 not, grades 0-3), scores rounded to 2 decimals so ties occur.
A size names the run's rows (``1M``, ``10M``, ``100M``, ``20k``: rows / 100 queries). Ids are
integers, or text of 11 characters (``q0000000042``, ``d0012345678``; pandas' Arrow-backed
``str``). Files are written once to ``--dir`` (default /tmp/scale_data), a query at a time in
chunks, so building never holds a 100M-row frame.

Engines (``--engines``): ``memory`` (harness.evaluate on the frames), ``stream``
(evaluate_parquet, 2M-row batches), ``dask`` (evaluate_dask, 2M-row partitions, on a
``distributed.LocalCluster`` of ``--workers`` processes started in the measuring process, or
on the scheduler at ``--address``). Peers (``--peers``, at ``--peer-sizes``), nDCG@10 with text
ids: ``ranx`` (the first call includes ``Qrels.from_df`` and ``Run.from_df``; the warm call is
``evaluate`` again on the same objects; by default only up to 10M rows, as its objects took
6 GB there) and ``pytrec_eval`` (the first ``--slice-rows`` rows,
cut at a whole query, timed from the frames: dicts, evaluator, evaluate; then scaled linearly
by rows to the whole file, and said so). Every measurement is a fresh child process
(bench_scale_child.py says what it reads and how peak RSS is taken). Rounds are interleaved:
round r runs every configuration once, in turn, so drifts of the shared machine fall on all
of them alike. Medians and min-max over the rounds are printed.

The harness engines must give the same mean to 1e-12 and each peer the harness mean under its
convention (``convention="ranx"``, ``"trec_eval"``) to 1e-9, or the run fails after printing
the table. The issue's targets are printed MET or NOT MET with their figures.

``app`` times the 2-ranker study on a scored parquet_run (engine=stream), with the issue's 29
variants and with today's 32-variant default grid, against evaluate_parquet's nDCG@10 alone
(bench_scale_app.py: peak RSS summed over each command's processes, sampled every 50 ms).
"""

from __future__ import annotations

import argparse
import json
import re
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
CHUNK = 50_000  # queries written at a time
HARNESS = ("memory", "stream", "dask")
PEERS = ("ranx", "pytrec_eval")
RANX_MAX_ROWS = 10_000_000  # by default: its objects took 6 GB at 10M rows


def rows_of(size: str) -> int:
    """Rows of a size label: ``10M`` is 10,000,000, ``20k`` 20,000."""
    match = re.fullmatch(r"(\d+)([kM])", size)
    if not match or int(match[1]) * {"k": 1_000, "M": 1_000_000}[match[2]] < DOCS:
        raise SystemExit(f"--sizes: {size!r} is not a number of rows such as 20k, 1M or 10M "
                         f"(at least {DOCS})")
    return int(match[1]) * {"k": 1_000, "M": 1_000_000}[match[2]]


def _ids(values, prefix: str):  # pyarrow arrays
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
    """The app's default metric grid (conf/metric/default.yaml): 32 variants."""
    from omegaconf import OmegaConf

    from harness.app.plan import build_metrics

    spec = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "metric" / "default.yaml"))
    spec.pop("defaults", None)
    return build_metrics(spec)


def metric_set(name: str) -> list:
    from harness import Metric

    return [Metric("ndcg", k=10, ideal="judged")] if name == "ndcg10" else grid()



def measure(engine: str, directory: Path, size: str, ids: str, metrics: str,
            opts: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "child", engine, str(directory), size,
                           ids, metrics, json.dumps(opts)],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"child {engine} {size} {ids} {metrics} failed:\n"
                         f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def _gb(value: float) -> str:
    return f"{value:.2f} GB" if value >= 0.1 else f"{value:.3f} GB"


def _label(metrics: str) -> str:
    return "nDCG@10" if metrics == "ndcg10" else f"{len(grid())} variants"


def _note(engine: str, got: list[dict]) -> str:
    setup = statistics.median(g.get("setup", 0.0) for g in got)
    if engine == "memory":
        return "input: run and qrels frames"
    if engine == "stream":
        return "input: qrels frame; run read in 2M-row batches"
    if engine == "dask":
        return (f"{got[0]['workers']} workers, 2M-row partitions; cluster start {setup:.1f} s "
                "(not in the times); RSS: client + scheduler + workers")
    if engine == "ranx":
        jit = statistics.median(g["jit"] for g in got)
        return (f"first call includes from_df {setup:.1f} s (numba compiled or loaded its cache "
                f"before, on one query: {jit:.1f} s); warm: evaluate again")
    scaled = (f"SCALED x{got[0]['scale']:.1f} from {got[0]['slice_rows']:,} rows (times "
              "only; RSS is the slice's)" if got[0]["scale"] != 1 else
              "not scaled: the slice is the whole file")
    return f"{scaled}; first call includes dicts + evaluator {setup:.1f} s"


def print_table(results: dict[tuple, list[dict]], rounds: int) -> None:
    print(f"\n{time.strftime('%Y-%m-%d %H:%M')}, {rounds} interleaved round(s); "
          "medians (min–max)\n")
    print("| rows | ids | metrics | engine | first call | warm call | input | "
          "RSS before the call | peak RSS | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (e, s, i, m), got in results.items():
        name = f"{e} (scaled)" if e == "pytrec_eval" and got[0]["scale"] != 1 else e
        print(f"| {s} | {i} | {_label(m)} | {name} | "
              f"{_span([g['times'][0] for g in got])} | "
              f"{_span([g['times'][1] for g in got])} | "
              f"{_gb(statistics.median(g['frames_gb'] for g in got))} | "
              f"{_gb(statistics.median(g['loaded_gb'] for g in got))} | "
              f"{_gb(max(g['peak_gb'] for g in got))} | {_note(e, got)} |")


def check_agreement(results: dict[tuple, list[dict]]) -> list[str]:
    """Print the means; return what disagrees (harness engines beyond 1e-12, a peer
    beyond 1e-9 of the harness under its convention)."""
    bad = []
    print()
    for s, m in dict.fromkeys((c[1], c[3]) for c in results if c[0] in HARNESS):
        means = {(c[0], c[2]): [x for g in got for x in g["means"]]
                 for c, got in results.items() if c[0] in HARNESS and (c[1], c[3]) == (s, m)}
        values = [x for v in means.values() for x in v]
        spread = max(values) - min(values)
        which = ", ".join(f"{e} ({i} ids)" for e, i in means)
        print(f"agreement, {s}, {_label(m)}: mean {values[0]:.15f} from {which}, "
              f"{len(values)} calls; largest difference {spread:.1e} (at most 1e-12): "
              f"{'MET' if spread <= 1e-12 else 'NOT MET'}")
        if spread > 1e-12:
            bad.append(f"{s} {_label(m)}: harness engines differ by {spread:.1e}: {means}")
    for (e, s, _, _), got in results.items():
        if e not in PEERS:
            continue
        values = [x for g in got for x in g["means"]]
        ref = next(g["ref_mean"] for g in got if "ref_mean" in g)
        diff = max(abs(x - ref) for x in values)
        where = "on the slice" if e == "pytrec_eval" else "on the same rows"
        print(f"agreement, {s}: {e} nDCG@10 {values[0]:.15f}, harness nDCG@10 with "
              f"convention={'ranx' if e == 'ranx' else 'trec_eval'} {ref:.15f} {where}; "
              f"difference {diff:.1e} (at most 1e-9): {'MET' if diff <= 1e-9 else 'NOT MET'}")
        if diff > 1e-9:
            bad.append(f"{s}: {e} differs from the harness by {diff:.1e}")
    return bad


def print_targets(results: dict[tuple, list[dict]]) -> list[bool]:
    """Print the issue's targets for harness.evaluate (and the growth of the other engines);
    return whether each target was met."""
    print()
    verdicts = []
    sizes = sorted({c[1] for c in results if c[0] == "memory"}, key=rows_of)
    if len(sizes) < 2:
        print("target: time linear in rows (largest within 1.1x of its share of the smallest "
              "size's time): NOT MEASURED (needs two sizes, e.g. --sizes 10M 100M)")
    small, big = sizes[0] if sizes else None, sizes[-1] if sizes else None
    for (e, s, i, m), got in results.items():
        if s != big or (e, small, i, m) not in results:
            continue
        factor = rows_of(big) / rows_of(small)
        if len(sizes) >= 2 and s != small:
            for what, k in (("first call", 0), ("warm call", 1)):
                t_big = statistics.median(g["times"][k] for g in got)
                t_small = statistics.median(g["times"][k] for g in results[(e, small, i, m)])
                ratio = t_big / (factor * t_small)
                head = (f"target: memory, {i} ids, {_label(m)}, {what}: {big} within 1.1x of "
                        f"{factor:g}x the {small} time" if e == "memory" else
                        f"growth (no target): {e}, {i} ids, {_label(m)}, {what}: {big} / "
                        f"({factor:g} x {small})")
                verdict = ("MET" if ratio <= 1.1 else "NOT MET") if e == "memory" else "="
                if e == "memory":
                    verdicts.append(ratio <= 1.1)
                print(f"{head}: {verdict} ({t_big:.3g} s / ({factor:g} x {t_small:.3g} s) = "
                      f"{ratio:.2f})")
        if e == "memory":
            extra = max(g["peak_gb"] - g["frames_gb"] for g in got)
            verdicts.append(extra <= 2)
            print(f"target: memory, {i} ids, {_label(m)}: {big} peak RSS <= input + 2 GB: "
                  f"{'MET' if extra <= 2 else 'NOT MET'} (peak - frames = {extra:.2f} GB; the "
                  f"calls added {max(g['peak_gb'] - g['loaded_gb'] for g in got):.2f} GB)")
    return verdicts


def run_table(directory: Path, rounds: int, sizes: list[str], ids: list[str],
              metric_sets: list[str], engines: list[str], peers: list[str],
              peer_sizes: list[str] | None, opts: dict) -> None:
    configs = [(e, s, i, m) for s in sizes for i in ids for m in metric_sets for e in engines
               if not (e in ("stream", "dask") and i == "str")]
    configs += [(p, s, "str", "ndcg10") for s in sizes for p in peers
                if s in (peer_sizes or [x for x in sizes if p != "ranx"
                                        or rows_of(x) <= RANX_MAX_ROWS])]
    results: dict[tuple, list[dict]] = {c: [] for c in configs}
    for r in range(rounds):  # interleaved: each round runs every configuration once
        for c in configs:
            child_opts = {**opts, "check": r == 0}
            results[c].append(measure(c[0], directory, c[1], c[2], c[3], child_opts))
            got = results[c][-1]
            print(f"round {r + 1}: {c}: first {got['times'][0]:.2f} s, warm "
                  f"{got['times'][1]:.2f} s, peak {got['peak_gb']:.2f} GB "
                  f"(resident before {got['loaded_gb']:.2f} GB)", flush=True)
    print_table(results, rounds)
    for s in sizes:
        if "ranx" in peers and ("ranx", s, "str", "ndcg10") not in results:
            print(f"\nranx at {s}: not run (its Qrels and Run took about 6 GB at 10M rows, "
                  "growing with the rows; pass --peer-sizes to run it)")
    bad = check_agreement(results)
    verdicts = print_targets(results)
    print(f"\ntargets: {sum(verdicts)} of {len(verdicts)} met"
          + ("" if all(verdicts) else " (NOT MET: see the lines above)")
          + f"; engines and peers {'agree' if not bad else 'DISAGREE'}")
    if bad:
        raise SystemExit("the engines disagree:\n" + "\n".join(bad))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["data", "run", "app", "child", "appchild"])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/scale_data"))
    ap.add_argument("--quick", action="store_true",
                    help="1M rows (unless --sizes), one round (unless --rounds)")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--sizes", nargs="+", help="rows of the run: 10M 100M (default)")
    ap.add_argument("--ids", nargs="+", default=["int", "str"], choices=["int", "str"])
    ap.add_argument("--metrics", nargs="+", default=["ndcg10", "grid"],
                    choices=["ndcg10", "grid"])
    ap.add_argument("--engines", nargs="*", default=list(HARNESS), choices=HARNESS)
    ap.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS)
    ap.add_argument("--peer-sizes", nargs="+", help="sizes the peers run at (default: every "
                    "size for pytrec_eval, those of at most 10M rows for ranx)")
    ap.add_argument("--slice-rows", type=int, default=1_000_000,
                    help="pytrec_eval: rows of the timed slice (whole queries)")
    ap.add_argument("--workers", type=int, default=2, help="dask: local worker processes")
    ap.add_argument("--address", help="dask: a running scheduler, e.g. tcp://host:8786")
    ap.add_argument("--file", type=Path, help="app: a scored parquet_run (harness scored-run "
                    "FILE --queries 1000000 writes the 110M-row one)")
    a = ap.parse_args()
    if a.what == "child":
        import bench_scale_child

        engine, directory, size, ids, metrics, opts = a.args
        bench_scale_child.child(engine, directory, size, ids, metric_set(metrics),
                                json.loads(opts))
        return
    if a.what in ("app", "appchild"):
        import bench_scale_app

        if a.what == "appchild":
            bench_scale_app.app_child(*a.args)
        else:
            bench_scale_app.app_table(a.file or a.dir / "scored_110M.parquet",
                                      a.rounds or 2, a.dir / "app_out")
        return
    sizes = a.sizes or (["1M"] if a.quick else ["10M", "100M"])
    for name in sizes:
        build(a.dir, name, rows_of(name) // DOCS)
    if a.what == "run":
        run_table(a.dir, a.rounds or (1 if a.quick else 2), sizes, a.ids, a.metrics,
                  a.engines, a.peers, a.peer_sizes,
                  {"workers": a.workers, "address": a.address, "slice_rows": a.slice_rows})


if __name__ == "__main__":
    main()
