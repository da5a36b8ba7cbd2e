"""docs/interop.md's examples run as written (issue 39), each in its own namespace, in a
temporary folder (they write small files: per-query text, a run file, qrels, an MLflow
store)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry

from harness.interop.mlflow_evaluator import HarnessEvaluator
from tests.test_docs import DOCS

TEXT = (DOCS / "interop.md").read_text()
BLOCKS = re.findall(r"^```python\n(.*?)^```", TEXT, re.S | re.M)


def test_each_door_has_an_example() -> None:
    assert len(BLOCKS) == 4  # inputs and outputs, ir_measures/PyTerrier, ir_datasets, MLflow


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_example_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                          ) -> None:
    monkeypatch.chdir(tmp_path)
    # an installed harness registers the evaluator through its entry point; the shared test
    # environment may hold an older install, so it is registered here as the entry point does
    _model_evaluation_registry.register("harness", HarnessEvaluator)
    import mlflow.tracking._tracking_service.utils as tracking_utils

    before = tracking_utils._tracking_uri  # None when unset: put back as it was, not resolved
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(BLOCKS[index], f"docs/interop.md block {index}", "exec"), {})
    finally:
        tracking_utils._tracking_uri = before
    # a printed value the page shows in a comment (``# 1.0``, ``# {'RR': 0.75}``; ``...``
    # stands for the digits left out) is what the example printed
    for comment in re.findall(r"# (\{.*\}|[\d.][\d. ]*)$", BLOCKS[index], re.M):
        for part in re.split(r"\.\.\.|[{}]", comment):
            assert part.strip(" ,") in printed.getvalue(), (part, printed.getvalue())
