"""What a study knows of each ranker beyond its summary table, for the texts about it (the
MLflow descriptions, the closing summary): its warnings, its Judged@10 and the judgment
intervals of its headline variants. The study builds one :class:`RankerNotes` per ranker and
passes them beside the summaries, typed, where they were once untyped ``summary.attrs``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["RankerNotes", "NO_NOTES"]


@dataclass(frozen=True)
class RankerNotes:
    """One ranker's notes.

    ``warnings``: the study's warnings about it (constant scores, ...); ``judged_at_10``: the
    mean share of its top 10 documents judged (None: not computed); ``judged_dist``: that
    share's distribution over queries (:func:`harness.app.judged_share.judged_distribution`;
    None: not computed); ``intervals``: headline variant -> (mean low, mean high, share of
    queries whose bound is exact) over every labeling of the unjudged documents, only when
    some interval of the study is wide."""

    warnings: tuple[str, ...] = ()
    judged_at_10: float | None = None
    judged_dist: Mapping[str, float | None] | None = None
    intervals: Mapping[str, tuple[float, float, float]] = field(default_factory=dict)


#: A ranker's notes when the study has none to say (every field at its default).
NO_NOTES = RankerNotes()
