"""Progress bars and per-phase timing for a study.

Bars are tqdm's, on stderr, and quiet when stderr is not a terminal (``disable=None``), so
logs, pipes, CI and sweep jobs see none of them. While bars may show, log records to the
console are routed through ``tqdm.write`` so a log line never lands inside a bar.
:class:`Phases` adds up wall time per named phase and renders the job's timing line
(``phases: score 0.3s, evaluate 0.1s, ...``).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["progress", "progress_sized", "Phases", "Steps", "bars_on",
           "quiet_logs_while_bars"]

T = TypeVar("T")


def bars_on() -> bool:
    """Whether progress bars show: stderr is a terminal (tqdm's ``disable=None`` rule)."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def progress(iterable: Iterable[T], *, desc: str, total: int | None = None,
             unit: str = "it") -> Iterable[T]:
    """``iterable`` with a tqdm bar on stderr; the iterable itself when stderr is not a
    terminal (tqdm is then not even imported)."""
    if not bars_on():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, unit=unit, disable=None, leave=False,
                file=sys.stderr, dynamic_ncols=True)


def progress_sized(iterable: Iterable[T], *, desc: str, size: Callable[[T], int],
                   total: int | None = None, unit: str = "it") -> Iterable[T]:
    """``iterable`` with a tqdm bar on stderr that advances by ``size(item)`` once the
    consumer is done with each item (e.g. rows per batch: the rate and ETA are in rows),
    counts scaled (``110M/110M``); the iterable itself when stderr is not a terminal."""
    if not bars_on():
        return iterable
    from tqdm.auto import tqdm

    def advance() -> Iterator[T]:
        bar = tqdm(desc=desc, total=total, unit=unit, unit_scale=True, disable=None,
                   leave=False, file=sys.stderr, dynamic_ncols=True)
        try:
            for item in iterable:
                yield item
                bar.update(size(item))
        finally:
            bar.close()

    return advance()


class Steps:
    """One bar over a command's named steps, on stderr when it is a terminal: the bar shows
    the running step's name, so a long step is never silent.

    >>> steps = Steps(["load", "compare"], desc="compare")
    >>> with steps("load"):
    ...     pass
    >>> steps.close()
    """

    def __init__(self, names: list[str], *, desc: str) -> None:
        self.bar, self.desc = None, desc
        if bars_on():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=len(names), desc=desc, unit="step", leave=False,
                            file=sys.stderr, dynamic_ncols=True,
                            bar_format="{desc} [{n}/{total}, {elapsed}]")

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        if self.bar is not None:
            self.bar.set_description_str(f"{self.desc}: {name}...")
        yield
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def quiet_logs_while_bars() -> Iterator[None]:
    """Route console log records through ``tqdm.write`` while bars may show."""
    if not bars_on():
        yield
        return
    from tqdm.contrib.logging import logging_redirect_tqdm

    with logging_redirect_tqdm():
        yield


class Phases:
    """Wall time per phase of a job, in the order the phases first ran.

    >>> phases = Phases()
    >>> with phases("score"):
    ...     pass
    >>> phases.line().startswith("phases: score ")
    True
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def line(self) -> str:
        """``phases: score 0.3s, evaluate 0.1s, ... (slowest: X)``."""
        parts = ", ".join(f"{k} {v:.2f}s" for k, v in self.seconds.items())
        slowest = max(self.seconds, key=self.seconds.__getitem__, default=None)
        return f"phases: {parts}" + (f" (slowest: {slowest})" if slowest else "")

    def as_dict(self) -> dict[str, Any]:
        return dict(self.seconds)
