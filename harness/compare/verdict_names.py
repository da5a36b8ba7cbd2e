"""The verdicts a comparison gives a candidate against a baseline, as words and as numbers
(:mod:`harness.compare.verdicts` decides them; other modules read them from here)."""

from __future__ import annotations

__all__ = ["BETTER", "EQUIVALENT", "NOT_WORSE", "WORSE", "INCONCLUSIVE", "VERDICTS",
           "PASSING", "VERDICT_CODES"]

BETTER, EQUIVALENT, NOT_WORSE = "better", "equivalent (within margin)", \
    "not worse (within margin)"
WORSE, INCONCLUSIVE = "worse", "inconclusive"
VERDICTS = (BETTER, EQUIVALENT, NOT_WORSE, INCONCLUSIVE, WORSE)
#: Verdicts a gate lets through.
PASSING = (BETTER, EQUIVALENT, NOT_WORSE)
#: A verdict as a number (an MLflow metric): higher is better for the candidate.
VERDICT_CODES = {BETTER: 2.0, EQUIVALENT: 1.0, NOT_WORSE: 1.0, INCONCLUSIVE: 0.0, WORSE: -1.0}
