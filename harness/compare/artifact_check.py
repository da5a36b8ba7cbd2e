"""A ranker run's artifact read back: its bytes checked against the sha256 its run logged
and the one a comparison recorded, before it is parsed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.datasets.dataset import file_sha256
from harness.errors import CompareError

__all__ = ["ArtifactChanged", "checked_parquet"]


class ArtifactChanged(CompareError):
    """A per-query artifact missing, or whose bytes are not those logged."""


def checked_parquet(path: Path, what: str, logged: str | None, expected: str | None
                    ) -> tuple[pd.DataFrame, str]:
    """The table in the parquet file ``path`` and its sha256, checked against the digest its
    run logged and the one a comparison recorded (either may be None); ``what`` names the
    artifact in the error. Raises ArtifactChanged (altered or unreadable)."""
    digest = file_sha256(path)
    for who, want in (("its run logged", logged), ("the comparison recorded", expected)):
        if want and want != digest:
            raise ArtifactChanged(f"{what} was altered (sha256 {digest[:12]}…, {who} "
                                  f"{want[:12]}…)")
    try:
        return pd.read_parquet(path), digest
    except Exception as exc:  # noqa: BLE001 - any reader failure: the artifact is broken
        raise ArtifactChanged(f"{what} is unreadable ({type(exc).__name__})") from None
