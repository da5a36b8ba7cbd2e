"""One measurement of ``bench_scale.py run``, in a fresh process, printed as one JSON line.

Engines: ``memory`` (``harness.evaluate`` on the frames), ``stream``
(``harness.evaluate_parquet``), ``dask`` (``harness.evaluate_dask`` on a
``distributed.LocalCluster`` of ``workers`` processes, or the scheduler at ``address``),
``ranx`` (``Qrels.from_df``/``Run.from_df``, then ``ranx.evaluate``) and ``pytrec_eval``
(dicts, ``RelevanceEvaluator``, ``evaluate``, on a slice of whole queries).

Each reads its inputs first, hands what the read freed back to the OS (Arrow on the system
allocator, ``malloc_trim``), then resets the peak-RSS mark (``VmHWM``) and times a first call
and a second (warm) one. ``peak_gb`` is the peak from there on, the resident inputs and the
runtime included; for ``dask`` it adds the scheduler's and each worker's own peak (their sum:
an upper bound, the peaks need not coincide). ``frames_gb`` is the inputs' bytes (pandas' deep
``memory_usage``). A peer's ``ref_mean`` is the harness mean under that peer's convention
(``convention="ranx"``, ``"trec_eval"``) on the same rows, computed after the timed calls.
"""

from __future__ import annotations

import ctypes
import gc
import json
import time
from pathlib import Path
from typing import Any

IDS = {"int": ["qid", "docid"], "str": ["qid_str", "docid_str"]}


def status_gb(key: str) -> float:
    """GB of a /proc/self/status entry (VmRSS: resident now; VmHWM: peak since reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1e6
    return float("nan")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS


def _read(path: Path, ids: str, last: str, *, rows: int | None = None,
          qids: Any = None) -> Any:
    """A file's id columns (as ``qid``, ``docid``) and ``last``: all rows, the first
    ``rows`` rows cut at the last whole query, or the rows of ``qids``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    cols = IDS[ids] + [last]
    if rows is not None:
        f = pq.ParquetFile(path)
        table = pa.Table.from_batches([next(f.iter_batches(batch_size=rows + 1,
                                                           columns=cols))])
        if table.num_rows > rows:  # the last query may go on: leave it out
            q = table.column(cols[0])
            table = table.filter(pc.not_equal(q, q[rows]))
    else:
        table = pq.read_table(path, columns=cols)
        if qids is not None:
            table = table.filter(pc.is_in(table.column(cols[0]), value_set=pa.array(qids)))
    frame = table.to_pandas()
    frame.columns = ["qid", "docid", last]
    return frame


def _settle(*frames: Any) -> tuple[float, float]:
    """(the frames' GB, resident GB) once what reading freed has gone back to the OS."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return (sum(f.memory_usage(deep=True).sum() for f in frames) / 1e9,
            status_gb("VmRSS"))


def _twice(call: Any) -> tuple[list[float], list[float]]:
    times, means = [], []
    for _ in range(2):
        t = time.perf_counter()
        means.append(call())
        times.append(time.perf_counter() - t)
    return times, means


def _harness(engine: str, d: Path, size: str, ids: str, mlist: list, opts: dict) -> dict:
    import harness

    qrels = _read(d / f"qrels_{size}.parquet", ids, "label")
    run_path = d / f"run_{size}.parquet"
    names = {"qid": IDS[ids][0], "docid": IDS[ids][1]}
    if engine == "memory":
        run = _read(run_path, ids, "score")
        frames, loaded = _settle(qrels, run)
        _reset_peak()
        times, means = _twice(lambda: float(harness.evaluate(run, qrels, mlist)
                                             .iloc[:, 3].mean()))
        return {"times": times, "means": means, "frames_gb": frames, "loaded_gb": loaded,
                "peak_gb": status_gb("VmHWM")}
    if engine == "stream":
        frames, loaded = _settle(qrels)
        _reset_peak()
        times, means = _twice(lambda: float(harness.evaluate_parquet(
            run_path, qrels, mlist, batch_rows=2_000_000, names=names).iloc[:, 3].mean()))
        return {"times": times, "means": means, "frames_gb": frames, "loaded_gb": loaded,
                "peak_gb": status_gb("VmHWM")}
    return _dask(run_path, qrels, names, mlist, opts)


def _dask(run_path: Path, qrels: Any, names: dict, mlist: list, opts: dict) -> dict:
    import harness
    from harness.engines.dask import dask_client

    def mark(key: str) -> float:  # runs on the workers and the scheduler as well
        import pathlib

        if key == "reset":
            pathlib.Path("/proc/self/clear_refs").write_text("5")
            return 0.0
        for line in pathlib.Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) / 1e6
        return float("nan")

    def everywhere(client: Any, key: str) -> float:
        return (mark(key) + sum(client.run(mark, key).values())
                + client.run_on_scheduler(mark, key))

    frames, _ = _settle(qrels)
    t = time.perf_counter()
    with dask_client(opts.get("address"), n_workers=opts["workers"]) as client:
        if not opts.get("address"):
            client.wait_for_workers(opts["workers"])
        setup = time.perf_counter() - t
        loaded = everywhere(client, "VmRSS")
        everywhere(client, "reset")
        times, means = _twice(lambda: float(harness.evaluate_dask(
            run_path, qrels, mlist, client=client, partition_rows=2_000_000,
            names=names).iloc[:, 3].mean()))
        peak = everywhere(client, "VmHWM")
        workers = len(client.scheduler_info()["workers"])
    return {"times": times, "means": means, "frames_gb": frames, "loaded_gb": loaded,
            "peak_gb": peak, "setup": setup, "workers": workers}


def _ranx(d: Path, size: str, check: bool) -> dict:
    import warnings

    from ranx import Qrels, Run, evaluate

    import harness

    qrels = _read(d / f"qrels_{size}.parquet", "str", "label")
    run = _read(d / f"run_{size}.parquet", "str", "score")
    ids = {"qid": object, "docid": object}  # from_df wants ids of dtype object
    qrels, run = qrels.astype(ids), run.astype(ids)
    frames, loaded = _settle(qrels, run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety chatter
        t = time.perf_counter()  # numba compiles (or loads its cache) on a one-query frame
        tiny_r = run.iloc[:1]
        tiny_q = qrels[qrels["qid"] == tiny_r["qid"].iloc[0]]
        evaluate(Qrels.from_df(tiny_q, q_id_col="qid", doc_id_col="docid", score_col="label"),
                 Run.from_df(tiny_r, q_id_col="qid", doc_id_col="docid", score_col="score"),
                 "ndcg@10")
        jit = time.perf_counter() - t
        _reset_peak()
        t = time.perf_counter()
        rq = Qrels.from_df(qrels, q_id_col="qid", doc_id_col="docid", score_col="label")
        rr = Run.from_df(run, q_id_col="qid", doc_id_col="docid", score_col="score")
        setup = time.perf_counter() - t
        times, means = _twice(lambda: float(evaluate(rq, rr, "ndcg@10")))
    out = {"times": [setup + times[0], times[1]], "means": means, "setup": setup, "jit": jit,
           "frames_gb": frames, "loaded_gb": loaded, "peak_gb": status_gb("VmHWM")}
    if check:
        del rq, rr
        gc.collect()
        metric = harness.Metric("ndcg", k=10, convention="ranx")
        out["ref_mean"] = float(harness.evaluate(run, qrels, [metric]).iloc[:, 3].mean())
    return out


def _pytrec(d: Path, size: str, check: bool, slice_rows: int) -> dict:
    import pyarrow.parquet as pq
    import pytrec_eval

    import harness

    run = _read(d / f"run_{size}.parquet", "str", "score", rows=slice_rows)
    qrels = _read(d / f"qrels_{size}.parquet", "str", "label",
                  qids=run["qid"].unique().tolist())
    frames, loaded = _settle(qrels, run)
    total = pq.ParquetFile(d / f"run_{size}.parquet").metadata.num_rows
    _reset_peak()
    t = time.perf_counter()
    q: dict[str, dict[str, int]] = {}
    for qid, doc, label in zip(qrels["qid"].tolist(), qrels["docid"].tolist(),
                               qrels["label"].tolist()):
        q.setdefault(qid, {})[doc] = label
    r: dict[str, dict[str, float]] = {}
    for qid, doc, score in zip(run["qid"].tolist(), run["docid"].tolist(),
                               run["score"].tolist()):
        r.setdefault(qid, {})[doc] = score
    evaluator = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut.10"})
    setup = time.perf_counter() - t

    def call() -> float:
        per_query = evaluator.evaluate(r)
        return sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)

    times, means = _twice(call)
    scale = total / len(run)  # linear in rows
    out = {"times": [(setup + times[0]) * scale, times[1] * scale], "means": means,
           "setup": setup * scale, "scale": scale, "slice_rows": len(run),
           "frames_gb": frames, "loaded_gb": loaded, "peak_gb": status_gb("VmHWM")}
    if check:
        metric = harness.Metric("ndcg", k=10, convention="trec_eval")
        out["ref_mean"] = float(harness.evaluate(run, qrels, [metric]).iloc[:, 3].mean())
    return out


def child(engine: str, directory: str, size: str, ids: str, metrics: list,
          opts: dict) -> None:
    """Measure one configuration and print its JSON line."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())  # freed read buffers go back to the OS
    d = Path(directory)
    if engine == "ranx":
        out = _ranx(d, size, opts.get("check", False))
    elif engine == "pytrec_eval":
        out = _pytrec(d, size, opts.get("check", False), opts["slice_rows"])
    else:
        out = _harness(engine, d, size, ids, metrics, opts)
    print(json.dumps(out))
