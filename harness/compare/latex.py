"""The report's tables as LaTeX that fits a page: booktabs rules, ``longtable`` (a table of
a hundred comparisons breaks across pages and repeats its header), numbers right-aligned, a
first column that wraps at commas, and wide tables set in landscape or a smaller size.

The file is meant for ``\\input`` into a document whose preamble has
``\\usepackage{booktabs,longtable,array,lscape}`` (all in TeX Live's base and recommended
sets); its first lines say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

__all__ = ["PREAMBLE", "latex_table", "latex_document_tables", "estimated_width"]

PREAMBLE = r"\usepackage{booktabs,longtable,array,lscape}"
#: Text widths in inches: US letter or A4 with 1-inch margins (the narrower of the two).
PORTRAIT, LANDSCAPE = 6.27, 9.0
#: Average width of a character (inches) and the space between columns, per font size.
_SIZES = (("footnotesize", 0.056, 0.083), ("scriptsize", 0.047, 0.07))
_FIRST = 1.9  # inches: the first (label) column wraps beyond this
_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}"}
_NUMBER = re.compile(r"^[<>+-]?\s*[\d.]+(e[+-]?\d+)?$|^$")


def tex(text: Any) -> str:
    """Text with LaTeX's special characters escaped."""
    return re.sub(r"[\\&%$#_{}~^]", lambda m: _TEX[m.group()], str(text))


def estimated_width(frame: pd.DataFrame, size: str = "footnotesize") -> float:
    """Inches the table needs at ``size``: the longest visible text of each column (marks
    count as one character each), the first column capped at :data:`_FIRST` (it wraps)."""
    char, gap = next((c, g) for s, c, g in _SIZES if s == size)
    width = 0.0
    for i, column in enumerate(frame.columns):
        texts = [str(column), *map(str, frame[column])]
        longest = max(len(t.replace("^", "")) for t in texts) * char
        width += (min(longest, _FIRST) if i == 0 else longest) + gap
    return width


def latex_table(frame: pd.DataFrame, caption: str, *, marks: bool = False) -> str:
    """One table as a ``longtable``; ``marks``: cells ``0.91^ac`` get superscript letters.

    The smallest change that fits is taken: portrait at footnotesize, then scriptsize, then
    landscape at footnotesize, then landscape at scriptsize.
    """
    orientation, size = "landscape", _SIZES[-1][0]  # when nothing fits
    for side, limit in (("portrait", PORTRAIT), ("landscape", LANDSCAPE)):
        fits = next((s for s, _, _ in _SIZES if estimated_width(frame, s) <= limit), None)
        if fits is not None:
            orientation, size = side, fits
            break
    numeric = [all(_NUMBER.match(str(v).split("^")[0].strip()) for v in frame[c])
               for c in frame.columns]
    char = next(c for s, c, _ in _SIZES if s == size)
    longest = max(len(str(v)) for v in [frame.columns[0], *frame.iloc[:, 0]]) * char
    first = f">{{\\raggedright\\arraybackslash}}p{{{_FIRST}in}}" if longest > _FIRST else "l"
    spec = first + "".join("r" if n else "l" for n in numeric[1:])
    header = " & ".join(tex(c) for c in frame.columns) + r" \\"

    def cell(value: Any, column: int) -> str:
        text = str(value)
        if marks and "^" in text:
            number, _, sup = text.partition("^")
            return f"{tex(number)}$^{{\\mathrm{{{tex(sup)}}}}}$"
        text = tex(text)
        if column == 0:  # long variant names may break after a comma or a bracket
            text = re.sub(r"([,(])", r"\1\\allowbreak{}", text)
        return text

    rows = [" & ".join(cell(v, j) for j, v in enumerate(row)) + r" \\"
            for row in frame.itertuples(index=False)]
    lines = [f"{{\\{size}\\setlength{{\\tabcolsep}}{{3pt}}",
             f"\\begin{{longtable}}{{{spec}}}",
             f"\\caption{{{tex(caption)}}}\\\\",
             r"\toprule", header, r"\midrule", r"\endfirsthead",
             r"\toprule", header, r"\midrule", r"\endhead",
             r"\bottomrule", r"\endlastfoot",
             *rows,
             r"\end{longtable}}"]
    if orientation == "landscape":
        lines = [r"\begin{landscape}", *lines, r"\end{landscape}"]
    return "\n".join(lines) + "\n"


def latex_document_tables(title: str, tables: Iterable[tuple[str, pd.DataFrame, bool]]
                          ) -> str:
    """Every table, with a header comment naming the packages the document needs."""
    out = [f"% {title}: tables made by harness.compare.\n"
           f"% \\input this file from a document whose preamble has {PREAMBLE}\n"]
    out += [latex_table(frame, caption, marks=marks) for caption, frame, marks in tables]
    return "\n".join(out)
