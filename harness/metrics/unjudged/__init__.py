"""How much a value depends on the documents nobody judged.

:mod:`.judgment_interval` bounds a measure over every labeling of a query's unjudged
retrieved documents, :mod:`.judgment_labelings` chooses the labelings a measure needs, and
:mod:`.judgment_summary` summarises intervals over runs and pairs (``harness judgments``).
"""
