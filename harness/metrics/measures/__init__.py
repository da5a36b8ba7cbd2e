"""The built-in measures, each declared once with its kernel (see
:mod:`harness.metrics.vocabulary.registry`). Importing this package registers them, in the order of
:data:`BUILTIN`."""

from harness.metrics.measures import gain  # noqa: F401  (dcg, ndcg, mndcg)
from harness.metrics.measures import binary  # noqa: F401  (ap, rr, precision, recall)
from harness.metrics.measures import cascade  # noqa: F401  (err, success)
from harness.metrics.measures import recall_levels  # noqa: F401  (rprec, f1, iprec)
from harness.metrics.measures import judged  # noqa: F401  (judged, bpref)
from harness.metrics.measures import rbp  # noqa: F401  (rbp, rbp_residual)
# trec_eval's other measures (issue 21): counts, sets, geometric means, ranks set by R or a
# cut-off, gain curves, its RBP and residual
from harness.metrics.measures import sets  # noqa: F401
from harness.metrics.measures import rank_points  # noqa: F401
from harness.metrics.measures import gain_curves  # noqa: F401
from harness.metrics.measures import rbp_trec  # noqa: F401
# cwl_eval's C/W/L measures, as ir_measures computes them (INST, INSQ, BPM, NERR8-11)
from harness.metrics.measures import cwl  # noqa: F401
# ir_measures' compatibility (rank-biased overlap with an ideal ranking)
from harness.metrics.measures import compat  # noqa: F401
# intent-aware measures over subtopic judgments (pyndeval's)
from harness.metrics.measures import diversity  # noqa: F401
from harness.metrics.vocabulary.registry import measures

#: The built-in measures' names, in the order the README's table lists them.
BUILTIN = tuple(m.name for m in measures() if m.builtin)
