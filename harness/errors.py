"""Exceptions raised by harness.

Every error caused by the caller's input is a :class:`ValueError` subclass, so code that
already catches ``ValueError`` keeps working, and each names what was wrong and where.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HarnessError", "InputError", "MetricDefinitionError", "FormulaError",
           "TrackingUnavailable", "OutputError", "CompareError", "RunNotFound", "DatasetMismatch", "NoOverlap",
           "TooFewRankers", "UnknownName"]


def plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (so messages read ``11``, not
    ``np.int64(11)``)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "ndim", 1) == 0 else value


class HarnessError(Exception):
    """Base class of every exception harness raises on purpose."""


class InputError(HarnessError, ValueError):
    """Bad input data: a missing column, a NaN score, a duplicate pair, ...

    Attributes
    ----------
    column, qid, row : the column, the query id and the 0-based row of the offending
        DataFrame where they are known, else ``None``.
    key : the dotted configuration key at fault (``ranker.bm25.path``) when the error is
        about a configuration value rather than data, else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        column: str | None = None,
        qid: Any = None,
        row: int | None = None,
        table: str | None = None,
        key: str | None = None,
    ) -> None:
        where = []
        if key is not None:
            where.append(f"key {key!r}")
        if table is not None:
            where.append(f"table {table!r}")
        if column is not None:
            where.append(f"column {column!r}")
        if qid is not None:
            where.append(f"qid {plain(qid)!r}")
        if row is not None:
            where.append(f"row {row}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.message = message
        self.column = column
        self.qid = qid
        self.row = row
        self.table = table
        self.key = key

    def __reduce__(self) -> tuple[Any, ...]:
        # keep column/qid/row/table when pickled (errors raised on Dask workers)
        return (_rebuild, (type(self), self.message, self.column, self.qid, self.row,
                           self.table, self.key))

    def at_row(self, row: int | None, table: str | None = None) -> InputError:
        """The same error, naming another row (and table): a part's row -> the source's."""
        return type(self)(self.message, column=self.column, qid=self.qid, row=row,
                          table=self.table if table is None else table, key=self.key)


def _rebuild(cls: type[InputError], message: str, column: str | None, qid: Any,
             row: int | None, table: str | None, key: str | None = None) -> InputError:
    return cls(message, column=column, qid=qid, row=row, table=table, key=key)


class MetricDefinitionError(HarnessError, ValueError):
    """An unknown metric name, option value or an option that cannot hold."""


class FormulaError(MetricDefinitionError):
    """A gain or discount formula that is malformed, not allowed or too costly."""


class TrackingUnavailable(HarnessError):
    """The MLflow store could not be reached; results are on disk and the log plan pending."""

    exit_code = 3


class OutputError(HarnessError):
    """A result file could not be written (a full disk, a read-only folder): the message says
    where, what was written before it, and that nothing was sent to MLflow."""

    exit_code = 2


# Errors of a comparison (harness.compare): each says what was asked, what was found and
# what to do; the CLI prints them as one line and exits 2.

class CompareError(HarnessError, ValueError):
    """Bad input to a comparison: the runs asked for cannot be compared as they are."""

    exit_code = 2


class RunNotFound(CompareError):
    """A run id or experiment that the tracking store does not hold."""


class DatasetMismatch(CompareError):
    """Runs evaluated on different datasets (different ``dataset.digest`` tags)."""


class NoOverlap(CompareError):
    """Two rankers with no query that both evaluated (with a value) under a variant."""


class TooFewRankers(CompareError):
    """Fewer than two ranker versions: nothing to compare."""


class UnknownName(CompareError):
    """A baseline ranker or a variant that the sweep does not hold, or holds ambiguously."""
