"""Tables of other evaluation tools' measure names (beside :mod:`harness.metrics.vocabulary.names`, which
reads single names): :mod:`~harness.metrics.vocabulary.tool_names.trec_eval_measures` holds trec_eval's
measure families, parameters and sets, as ``harness eval -m`` reads them;
:mod:`~harness.metrics.vocabulary.tool_names.ir_measures_names` ir_measures' names and parameters."""
