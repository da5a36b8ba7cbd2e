"""Data readers: TREC qrels and runs, LETOR/SVMlight files."""

from harness.data.trec import read_qrels, read_run

__all__ = ["read_qrels", "read_run"]
