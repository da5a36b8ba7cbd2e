"""The vocabulary: what a number means, declared once.

A :class:`~harness.metrics.vocabulary.definition.Metric` names every option that changes a
value (:mod:`.options`, :mod:`.number_options`); the registry (:mod:`.registry`) holds the
measures it can name; :mod:`.names` and :mod:`.tool_names` read other tools' spellings;
:mod:`.conventions` are the presets that reproduce a library; :mod:`.formula` reads custom
gain and discount formulas; :mod:`.measure_docs` writes the docs' measure table from the
declarations.
"""
