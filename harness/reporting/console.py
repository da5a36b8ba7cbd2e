"""Text for a terminal: lines that fit its width (at most 120 columns), wide tables cut
into column blocks, as pandas wraps a wide frame."""

from __future__ import annotations

import shutil
import textwrap

__all__ = ["terminal_width", "fit", "column_blocks"]

#: The widest line printed, whatever the terminal's width.
MAX_WIDTH = 120


def terminal_width() -> int:
    """The terminal's width (``$COLUMNS``; 120 when the output is not a terminal), at most
    120."""
    return min(shutil.get_terminal_size((MAX_WIDTH, 24)).columns, MAX_WIDTH)


def fit(text: str, first: str = "") -> str:
    """``text`` wrapped to the terminal (at most 120 columns): after ``first`` (a bullet),
    later lines align with the text; without one, they are indented two more spaces than
    its own. Words longer than a line (paths) are kept whole."""
    width = terminal_width()
    indent = " " * (len(text) - len(text.lstrip()))
    return textwrap.fill(text.strip(), width=width, initial_indent=first + indent,
                         subsequent_indent=" " * len(first) + indent + ("" if first else "  "),
                         break_on_hyphens=False, break_long_words=False)


def column_blocks(rows: list[list[str]], width: int) -> list[str]:
    """The rows of a table as lines at most ``width`` characters wide where they can be:
    the columns after the first are cut into blocks that fit beside it (as pandas wraps a
    wide frame), blocks separated by an empty line."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    blocks: list[list[int]] = []
    current: list[int] = []
    used = 2 + widths[0]
    for i in range(1, len(widths)):
        if current and used + 2 + widths[i] > width:
            blocks.append(current)
            current, used = [], 2 + widths[0]
        current.append(i)
        used += 2 + widths[i]
    blocks.append(current)
    lines: list[str] = []
    for b, columns in enumerate(blocks):
        if b:
            lines.append("")
        for r in rows:
            lines.append("  " + "  ".join(r[i].ljust(widths[i]) for i in [0, *columns])
                         .rstrip())
    return lines
