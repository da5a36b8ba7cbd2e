"""The sample outputs quoted in README.md and docs/workflows.md are what their commands print
now (issue 41: quoted numbers went stale): docs/sample_outputs.py reruns each command and the
quoted block must equal its output."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import harness.paths

ROOT = Path(harness.paths.PROJECT_ROOT)


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """docs/sample_outputs.py, loaded once (it runs the default study once per load)."""
    spec = importlib.util.spec_from_file_location("sample_outputs",
                                                  ROOT / "docs" / "sample_outputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_quoted_sample_output_is_what_its_command_prints(script: ModuleType,
                                                               shared_data: Path) -> None:
    for path in script.DOCUMENTS:
        text = path.read_text()
        names = re.findall(r"<!-- sample-output: ([\w-]+) -->", text)
        assert names, f"{path.name} quotes no generated output"
        assert script.rendered(text, shared_data) == text, (
            f"{path.name}: a quoted output differs from what its command prints; run "
            "python docs/sample_outputs.py and review the diff")
    quoted = {n for p in script.DOCUMENTS for n in re.findall(
        r"<!-- sample-output: ([\w-]+) -->", p.read_text())}
    assert quoted == set(script.PRODUCERS)  # every producer's block is quoted somewhere


def test_a_changed_number_is_caught(script: ModuleType, shared_data: Path) -> None:
    """The check compares the numbers, not only the shape: a digit changed in a quoted
    block makes it differ."""
    text = (ROOT / "docs" / "workflows.md").read_text()
    block = re.search(r"<!-- sample-output: cast-api -->.*?<!-- /sample-output -->", text,
                      re.S)
    assert block is not None
    stale = block.group(0).replace("0.4716*ᵃ", "0.4717*ᵃ", 1)
    assert stale != block.group(0)
    assert script.rendered(stale, shared_data) == block.group(0)
