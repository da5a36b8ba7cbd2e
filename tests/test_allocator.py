"""The command line's allocator settings (harness.commands.base): large temporary arrays
are reused from the heap instead of being mapped and faulted in afresh each time."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from harness.commands.base import tune_allocator
    assert tune_allocator() is True
def batch():  # a batch's temporaries: several 4 MB arrays alive at once, then all freed
    live = [np.ones(500_000) for _ in range(8)]
    return sum(float(a.sum()) for a in live)
batch()  # warm up: the first batch's pages are faulted in either way
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    batch()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin"})
    return int(out.stdout.strip())


def test_temporaries_are_reused_once_tuned() -> None:
    plain, tuned = _faults("plain"), _faults("tuned")
    # by default glibc gives the freed 32 MB back (its trim threshold follows its mmap
    # threshold, 4 MB here) and faults it in again each batch (8 x 1,000 pages); tuned, the
    # heap keeps it, so 20 batches cost a few faults instead of ~160,000
    assert plain > 20 * 4000, plain
    assert tuned < plain / 20, (tuned, plain)


def test_only_the_command_lines_own_process_is_tuned(monkeypatch) -> None:
    from harness.commands import dispatch

    calls: list[int] = []
    monkeypatch.setattr(dispatch, "tune_allocator", lambda: calls.append(1) or True)
    assert dispatch.main(["no-such-command"]) == 2  # a caller's argv: its process, untouched
    assert calls == []
    monkeypatch.setattr("sys.argv", ["harness", "no-such-command"])
    assert dispatch.main() == 2  # the console script's call: the process is the command's
    assert calls == [1]


def test_bounded_memory_leaves_arrows_pool_as_it_found_it() -> None:
    """harness eval's block path switches Arrow to its system pool; a process that goes on
    (a test session, a notebook) gets its own pool back (a test of Arrow's pool once saw
    the system pool another test had left set)."""
    import pyarrow as pa

    from harness.allocator import bounded_memory

    before = pa.default_memory_pool().backend_name
    with bounded_memory():
        assert pa.default_memory_pool().backend_name == "system"
    assert pa.default_memory_pool().backend_name == before
