"""The threads a study starts beside its main thread import nothing: a signal handled in the
main thread while another thread imports can leave the interpreter's import lock held
(handled just after the lock is taken and before the ``try`` that releases it), and a thread
that imports next waits for ever (docs/reliability.md). Each case runs in a fresh
interpreter, where nothing the thread might need is loaded yet."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import harness.paths

_WRITER = textwrap.dedent("""
    import sys, threading
    import numpy as np, pandas as pd
    from harness.app import write

    table = pd.DataFrame({"nDCG@10": np.linspace(0, 1, 50)},
                         index=pd.Index([f"query-{i:06d}" for i in range(50)], name="qid"))
    write._import_what_the_writer_needs()  # as write_outputs does before its thread starts
    before = set(sys.modules)
    done = []
    thread = threading.Thread(target=lambda: done.append(
        write._write_per_query(table, sys.argv[1])))
    thread.start()
    thread.join()
    imported = sorted(set(sys.modules) - before)
    back = pd.read_parquet(sys.argv[1])
    assert done and back["qid"].tolist() == table.index.tolist()
    assert np.array_equal(back["nDCG@10"].to_numpy(), table["nDCG@10"].to_numpy())
    print(imported)
""")


def test_the_per_query_writer_thread_imports_nothing(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-c", _WRITER, str(tmp_path / "pq.parquet")],
                          cwd=harness.paths.PROJECT_ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


_SPY = textwrap.dedent("""
    import atexit, sys, threading
    from importlib.abc import MetaPathFinder

    seen = []

    class Spy(MetaPathFinder):  # notes every import made outside the main thread
        def find_spec(self, name, path=None, target=None):
            if threading.current_thread() is not threading.main_thread():
                seen.append(f"{threading.current_thread().name}: {name}")
            return None

    sys.meta_path.insert(0, Spy())
    atexit.register(lambda: print("imported in threads:", seen, flush=True))
    from harness.app.main import main

    sys.argv = ["harness", *sys.argv[1:]]
    main()
""")


def test_a_study_imports_nothing_outside_its_main_thread(
        tmp_path: Path, copy_empty_store: Callable[[Path], str]) -> None:
    """The default study (5 rankers, 32 variants, logged through the tracking worker to an
    empty store; the worker, another process, builds a fresh one in tests/test_tracking_worker
    .py): every thread it starts (the per-query writer, the summaries' and the checks' pools)
    finds its modules loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _SPY, "dataset.n_queries=3000",
         f"tracking.uri={copy_empty_store(tmp_path)}", f"tracking.artifact_root={tmp_path}/a",
         f"hydra.run.dir={tmp_path}/out", f"cache_dir={tmp_path}/cache",
         f"tracking.pending_dir={tmp_path}/pending"],
        cwd=harness.paths.PROJECT_ROOT, capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "HARNESS_"))})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "imported in threads: []" in done.stdout, done.stdout[-2000:]
    assert (tmp_path / "out" / "summary.csv").is_file()
