"""A seeded synthetic learning-to-rank dataset whose features carry tunable signal."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.datasets.dataset import Dataset, content_digest
from harness.errors import InputError

__all__ = ["make_synthetic"]


def make_synthetic(
    *,
    name: str = "synthetic",
    n_queries: int = 400,
    n_train_queries: int = 400,
    min_docs: int = 10,
    max_docs: int = 60,
    label_probs: Sequence[float] = (0.55, 0.25, 0.12, 0.06, 0.02),
    signal: Sequence[float | Sequence[float]] = (1.5, 0.8, 0.4, 0.0),
    round_features: int | None = 2,
    seed: int = 0,
) -> Dataset:
    """Generate queries with graded labels ``0..len(label_probs)-1`` and noisy features.

    Each query has a uniform number of documents in ``[min_docs, max_docs]``; labels are
    drawn from ``label_probs``; feature ``f{j}`` is ``signal[j] * label + N(0, 1)`` when
    ``signal[j]`` is a number, and ``signal[j][label] + N(0, 1)`` when it is a list of one mean
    per grade (a feature that tells the top grades apart but not the low ones, say), rounded
    to ``round_features`` decimals so equal scores (ties) occur as in real systems.
    """
    if n_queries < 1 or n_train_queries < 0:
        raise InputError(f"n_queries must be >= 1 and n_train_queries >= 0, got "
                         f"{n_queries} and {n_train_queries}", column="n_queries")
    if not 1 <= min_docs <= max_docs:
        raise InputError(f"need 1 <= min_docs <= max_docs, got {min_docs}, {max_docs}",
                         column="min_docs")
    probs = np.asarray(label_probs, dtype=float)
    if probs.ndim != 1 or len(probs) < 2 or (probs < 0).any() or not np.isclose(probs.sum(), 1):
        raise InputError(f"label_probs must be >= 2 probabilities summing to 1, got "
                         f"{list(label_probs)}", column="label_probs")
    total_q = n_queries + n_train_queries
    _check_size(total_q, (min_docs + max_docs) / 2, len(signal))
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_docs, max_docs + 1, size=total_q)
    qid = np.repeat(np.arange(total_q), sizes)
    within = np.arange(len(qid)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    labels = rng.choice(len(probs), size=len(qid), p=probs)
    docs = pd.DataFrame({
        "qid": pd.array([f"q{i:05d}" for i in range(total_q)])[qid],
        "docid": pd.array([f"d{j:04d}" for j in range(int(sizes.max()))], dtype="str")[within],
        "split": np.where(qid < n_queries, "test", "train"),
        "label": labels.astype(np.int64),
    })
    features = []
    for j, s in enumerate(signal):
        if isinstance(s, (int, float)):
            mean = float(s) * labels
        elif len(s) == len(probs):
            mean = np.asarray(s, dtype=float)[labels]
        else:
            raise InputError(f"signal[{j}] must be a number (a slope) or one mean per grade "
                             f"({len(probs)} values), got {list(s)}", key=f"dataset.signal[{j}]")
        values = mean + rng.normal(size=len(qid))
        if round_features is not None:
            values = np.round(values, round_features)
        docs[f"f{j}"] = values
        features.append(f"f{j}")
    qrels = docs.loc[docs["split"] == "test", ["qid", "docid", "label"]].reset_index(drop=True)
    shown = [float(s) if isinstance(s, (int, float)) else [float(v) for v in s] for s in signal]
    source = (f"synthetic(seed={seed}, n_queries={n_queries}, n_train_queries={n_train_queries},"
              f" docs={min_docs}-{max_docs}, label_probs={[float(p) for p in probs]}, signal={shown},"
              f" round_features={round_features})")
    return Dataset(name=name, kind="synthetic", docs=docs, qrels=qrels,
                   features=tuple(features), digest=content_digest(docs, qrels), source=source)


def _check_size(queries: int, mean_docs: float, n_features: int) -> None:
    """Refuse a dataset whose arrays would take more than half of this machine's memory,
    with the size: ``8 + n_features`` arrays of 8 bytes per document (ids, labels, the
    features and the generator's temporaries; the id strings come on top)."""
    import os

    rows = queries * mean_docs
    need = rows * 8 * (8 + n_features)
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on this system: assume 16 GiB
        memory = 16 * 2 ** 30
    if need > memory / 2:
        raise InputError(f"{queries:,} queries of {mean_docs:g} documents on average make "
                         f"{rows:,.0f} rows, at least {need / 2 ** 30:,.2f} GiB in memory, more "
                         f"than half of this machine's {memory / 2 ** 30:.1f} GiB; lower "
                         "dataset.n_queries / n_train_queries or min_docs / max_docs",
                         key="dataset.n_queries")
