"""Checks reproduce makes before trusting what a run logged: every artifact readable, and
the saved config the one whose params the run carries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import HarnessError

__all__ = ["ReproduceError", "read_artifact", "param_mismatches", "describe_mismatches",
           "as_params"]

T = TypeVar("T")

_OVERFLOW = "(longer than "  # the placeholder of a param too long for MLflow


class ReproduceError(HarnessError):
    """A run cannot be reproduced: unknown id, not a harness run, data changed since, an
    artifact missing or unreadable."""

    exit_code = 2


def read_artifact(run_id: str, path: Path, reader: Callable[[Path], T]) -> T:
    """``reader(path)``, or a ReproduceError naming the artifact of the run when the file is
    truncated or corrupted (pyarrow, yaml and json raise their own types for that)."""
    try:
        return reader(path)
    except Exception as exc:  # noqa: BLE001 - any reader's failure means the same thing
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ReproduceError(
            f"run {run_id}: artifact {path.name!r} is unreadable ({type(exc).__name__}: "
            f"{first}); it may be truncated or corrupted. Run the job again, or replay its "
            "log plan with harness sync if it is still pending") from None


def param_mismatches(logged: Mapping[str, str], config_params: Mapping[str, str]
                     ) -> list[tuple[str, str, str]]:
    """``(key, logged, in config)`` for each param the run logged whose value differs from
    the saved config's (or that the config lacks); params too long for MLflow, logged as a
    placeholder, are skipped."""
    out = []
    for key, value in sorted(logged.items()):
        if key == "ranker_name" or value.startswith(_OVERFLOW):
            continue
        now = config_params.get(key)
        if now != value:
            out.append((key, value, "(absent)" if now is None else now))
    return out


def describe_mismatches(items: list[tuple[str, str, str]], limit: int = 5) -> str:
    shown = "; ".join(f"{k}: logged {a!r}, config {b!r}" for k, a, b in items[:limit])
    more = f"; ... ({len(items)} in all)" if len(items) > limit else ""
    return (f"config: the saved config is not the one this run logged ({shown}{more}); the "
            "recomputed values follow the saved config")


def as_params(cfg: Mapping[str, Any]) -> dict[str, str]:
    from harness.app.provenance import flatten

    return flatten(cfg)
