"""What the scale benchmarks share: issue 5's targets, printed MET or NOT MET."""

from __future__ import annotations

from collections.abc import Sequence


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
