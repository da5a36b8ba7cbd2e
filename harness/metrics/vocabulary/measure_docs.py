"""The docs' measure table, generated from the declarations:
``python -m harness.metrics.vocabulary.measure_docs`` rewrites the block of docs/measures.md between its
markers (a test fails when the two drift)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from harness.metrics.vocabulary.definition import METRIC_NAMES  # noqa: F401 - registers the built-ins
from harness.metrics.vocabulary.registry import TABLE_MARKERS, measure_table
from harness.paths import PROJECT_ROOT

__all__ = ["write_table", "main"]

DOC = Path(PROJECT_ROOT) / "docs" / "measures.md"


def write_table(path: Path = DOC) -> bool:
    """Put :func:`measure_table` between the markers of ``path``; True if it changed."""
    begin, end = TABLE_MARKERS
    text = path.read_text()
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no {begin} ... {end} block to fill")
    new = pattern.sub(lambda _: f"{begin}\n{measure_table()}{end}", text)
    if new != text:
        path.write_text(new)
    return new != text


def main() -> int:
    changed = write_table()
    print(f"{DOC}: {'measure table regenerated' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
