"""What a person reads about a study's judgments: each ranker's Judged@10 (mean and
distribution over queries), its interval over every labeling of the unjudged documents
under the headline variants, and whether each compared pair's verdict holds over them
(:mod:`harness.app.judgment_study`); for the closing summary and the MLflow descriptions of
:mod:`harness.app.notes`, read from each ranker's
:class:`~harness.app.ranker_notes.RankerNotes` (``judged_at_10``, ``judged_dist``,
``intervals``), which the study passes."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from harness.app.judged_share import distribution_text, judged_line, spread_line
from harness.app.ranker_notes import RankerNotes

__all__ = ["closing_lines", "ranker_sentence", "pair_line", "pair_markdown", "MAX_PAIRS"]

#: The most pair lines the closing summary prints (the job log has every one).
MAX_PAIRS = 6

_TREATED = {"nonrelevant": "non-relevant", "relevant": "relevant",
            "condensed": "left out (condensed)"}


def pair_line(pair: Mapping[str, Any]) -> str:
    """``ance > bm25 on nDCG@10 only if unjudged documents are non-relevant (over every
    labeling the difference lies in [-0.122, +0.413])``, or ``... holds over every
    labeling (...)``; the ranker with the higher mean first."""
    a, b, low, high = pair["a"], pair["b"], pair["worst"], pair["best"]
    if pair["diff"] < 0:
        a, b, low, high = b, a, -high, -low
    sign = "=" if pair["diff"] == 0 else ">"
    span = (f"over every labeling the difference lies in [{low:+.3f}, {high:+.3f}]"
            + ("" if pair.get("exact", 1.0) >= 1 else ", a bound not exact for every query"))
    if pair["holds"]:
        return f"{a} {sign} {b} on {pair['variant']}: holds over every labeling ({span})"
    treated = _TREATED.get(str(pair["unjudged"]), str(pair["unjudged"]))
    return (f"{a} {sign} {b} on {pair['variant']} only if unjudged documents are {treated} "
            f"({span})")


def _span(low: float, high: float, exact: float, digits: int = 3) -> str:
    """``[0.267, 0.481]``, said to be a bound where some query's is not exact."""
    return (f"[{low:.{digits}f}, {high:.{digits}f}]"
            + ("" if exact >= 1 else f" (a bound: {exact:.0%} of queries exact)"))


def _intervals(notes: Mapping[str, RankerNotes]) -> dict[str, list[str]]:
    """Headline variant -> ``bm25 [0.267, 0.481]`` per ranker, from the rankers' notes."""
    out: dict[str, list[str]] = {}
    for name, n in notes.items():
        for variant, (low, high, exact) in n.intervals.items():
            out.setdefault(variant, []).append(f"{name} {_span(low, high, exact)}")
    return out


def closing_lines(notes: Mapping[str, RankerNotes], pairs: Sequence[Mapping[str, Any]],
                  width: int) -> list[str]:
    """Under the closing table (``notes``: per ranker, in the table's order): Judged@10
    (mean, then distribution) when some ranker retrieved an unjudged document; each headline
    variant's interval per ranker and the pairs' verdicts when some interval is wider than
    1e-12 (the notes carry ``intervals`` only then)."""
    wrap: dict[str, Any] = dict(width=max(width, 40), break_on_hyphens=False,
                                break_long_words=False)
    judged = judged_line({name: n.judged_at_10 for name, n in notes.items()})
    if judged is None:
        out = []
    else:  # the mean, then (its own paragraph) the distribution over queries
        spread = spread_line({name: n.judged_dist for name, n in notes.items()})
        out = [""] + textwrap.wrap(judged, **wrap) + ([] if spread is None else [""]
                                                      + textwrap.wrap(spread, **wrap))
    intervals = _intervals(notes)
    if not intervals:
        return out
    out += [""] + textwrap.wrap("Judgment intervals: the mean over every labeling of the "
                                "unjudged documents any ranker retrieved lies in (per query: "
                                "judgments/<ranker>.parquet):", **wrap)
    for variant, cells in intervals.items():
        out += textwrap.wrap(f"{variant}: " + ", ".join(cells), initial_indent="  ",
                             subsequent_indent="    ", **wrap)
    for pair in pairs[:MAX_PAIRS]:
        out += textwrap.wrap(pair_line(pair), initial_indent="  ", subsequent_indent="    ",
                             **wrap)
    if len(pairs) > MAX_PAIRS:
        out.append(f"  … {len(pairs) - MAX_PAIRS} more pairs in the job log")
    return out


def ranker_sentence(notes: RankerNotes) -> str:
    """The ranker description's sentences on its Judged@10 and, when wide, its intervals."""
    share, dist = notes.judged_at_10, notes.judged_dist or {}
    out = "" if share is None else (f" Judged@10 {share:.3f}: the share of its top 10 "
                                    "documents judged, mean over queries")
    if out and dist.get("median") is not None:
        out += f" ({distribution_text(dist)})"
    out += "." if out else ""
    intervals = notes.intervals
    if intervals:
        out += (" Over every labeling of the unjudged documents any ranker retrieved, its "
                "mean lies in " + ", ".join(f"{_span(lo, hi, ex, 4)} on `{v}`"
                                            for v, (lo, hi, ex) in intervals.items())
                + " (`judgments/` artifacts).")
    return out


def pair_markdown(pairs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The job description's lines on the pairs' verdicts over every labeling (the study
    passes pairs only when some interval is wide)."""
    if not pairs:
        return []
    return (["", "**Over every labeling of the unjudged documents**", ""]
            + [f"- {pair_line(p).replace('|', '')}" for p in pairs[:2 * MAX_PAIRS]])
