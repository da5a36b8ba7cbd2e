"""The layout: input tables checked and laid out by query, ranked under each tie rule.

:mod:`.inputs` checks the tables; :mod:`.ids` and :mod:`.qids` code document and query ids;
:mod:`.prepare` builds the :class:`~harness.metrics.layout.prepared.Prepared` layout the
kernels read; :mod:`.ranking` orders rows under each tie rule (with :mod:`.segments`' per-query
sorts and :mod:`.quicksort_ties`); :mod:`.ranked` holds the sums over ranked rows the
measures share; :mod:`.dense` and :mod:`.subtopics` are the other input shapes.
"""
