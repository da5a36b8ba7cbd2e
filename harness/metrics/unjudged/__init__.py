"""How much a value depends on the documents nobody judged.

:mod:`.judgment_interval` bounds a measure over every labeling of a query's unjudged
retrieved documents, :mod:`.judgment_labelings` chooses the labelings a measure needs, and
:mod:`.judgment_summary` summarises intervals over runs and pairs (``harness judgments``).
"""

from typing import Final

__all__ = ["MAX_LABELINGS", "MAX_ROWS"]

#: Labelings tried per query where no shortcut is known: the default of
#: ``judgment_interval``, ``harness judgments --max-labelings`` and ``judgments.max_labelings``.
MAX_LABELINGS: Final = 4096
#: Rows (labelings x rows per labeling) one query may evaluate: the default of
#: ``judgment_interval(max_rows=...)`` and ``harness judgments --max-rows`` (about 0.6 GB).
MAX_ROWS: Final = 4_000_000
