"""Reproduce a logged evaluation: re-run it from what MLflow holds and compare every
per-query value bit for bit (:func:`reproduce_run`); the command is
``harness reproduce`` (:mod:`harness.commands.reproduce`)."""

from harness.reproduce.checks import ReproduceError
from harness.reproduce.run import ReproResult, ranker_run_ids, reproduce_run

__all__ = ["ReproduceError", "ReproResult", "ranker_run_ids", "reproduce_run"]
