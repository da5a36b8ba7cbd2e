"""What the scale benchmarks share: issue 5's targets, printed MET or NOT MET; the resident
memory of a process and every process it started."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence


def tree_rss(proc: object) -> int:
    """Bytes resident in ``proc`` (a psutil.Process) and all its descendants now."""
    import psutil

    total = 0
    for p in [proc, *proc.children(recursive=True)]:  # type: ignore[attr-defined]
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_watched(command: list[str], **popen: object) -> tuple[float, float, str, str, int]:
    """Run ``command``; (wall seconds, the largest sum of RSS over it and every process it
    started in GB, sampled every 50 ms, stdout, stderr, exit code)."""
    import psutil

    t = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **popen)  # type: ignore[call-overload]
    watched = psutil.Process(proc.pid)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                peak[0] = max(peak[0], tree_rss(watched))
            except psutil.Error:
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    done.set()
    sampler.join()
    return wall, peak[0] / 1e9, out, err, proc.returncode


def print_targets(results: Sequence[tuple[int, str, float, float]], *, memory: str,
                  label: str = "") -> None:
    """``results``: (rows, engine, seconds, peak GB) of one metric set. Targets: the largest
    size (when >= 100M rows) streamed under 4 GB peak; streaming time within 2x of the
    in-memory engine ``memory`` at the largest size both ran."""
    suffix = f", {label}" if label else ""
    largest = max(n for n, *_ in results)
    peaks = [p for n, e, _, p in results if n == largest and e == "stream"]
    if largest >= 100_000_000 and peaks:
        print(f"target: {largest / 1e6:.0f}M rows streamed under 4 GB peak{suffix}: "
              f"{'MET' if peaks[0] < 4 else 'NOT MET'} ({peaks[0]:.2f} GB)")
    times = {(n, e): s for n, e, s, _ in results}
    common = [n for (n, e) in times if e == memory and (n, "stream") in times]
    if common:
        n = max(common)
        ratio = times[(n, "stream")] / times[(n, memory)]
        print(f"target: streaming within 2x of in-memory time{suffix} at {n / 1e6:.0f}M "
              f"rows: {'MET' if ratio <= 2 else 'NOT MET'} (stream / {memory} time = "
              f"{ratio:.2f})")
