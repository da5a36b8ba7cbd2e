"""Qrels read through the ``ir_datasets`` package from its local cache, for the dataset kind
``ir_datasets`` (``dataset.id``: an ir_datasets id such as ``msmarco-passage/trec-dl-2019``).

ir_datasets downloads a dataset's files on first use into its cache folder
(``IR_DATASETS_HOME``, default ``~/.ir_datasets``); offline, a dataset not cached yet cannot
be read, and the error says so in one line, naming the id and that folder.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.errors import InputError
from harness.metrics.layout.peer_inputs import as_table

__all__ = ["read_ir_dataset", "cache_folder"]


def cache_folder() -> str:
    """ir_datasets' cache folder: ``IR_DATASETS_HOME``, default ``~/.ir_datasets``."""
    import ir_datasets

    return str(ir_datasets.util.home_path())


def _dataset(dataset_id: str) -> Any:
    try:
        import ir_datasets
    except ImportError:
        raise InputError("dataset kind ir_datasets needs the ir_datasets package: pip "
                         "install ir-datasets", key="dataset.kind") from None
    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        raise InputError(f"ir_datasets knows no dataset {dataset_id!r} (see ir_datasets' "
                         "catalogue, or register it before the study)",
                         key="dataset.id") from None


def read_ir_dataset(dataset_id: str) -> pd.DataFrame:
    """The judgments of ir_datasets' ``dataset_id`` as a ``qid, docid, label`` table (ids
    as text, labels int64), read from ir_datasets' cache (downloaded there by ir_datasets
    when the network allows).

    Raises
    ------
    InputError
        An unknown id, a dataset without qrels, or qrels neither cached nor fetchable.
    """
    dataset = _dataset(dataset_id)
    if not dataset.has_qrels():
        raise InputError(f"ir_datasets dataset {dataset_id!r} has no qrels",
                         key="dataset.id")
    try:
        qrels = as_table(dataset.qrels_iter(), "qrels")
    except InputError:
        raise
    except Exception as exc:  # ir_datasets' download errors: requests', OSError, ...
        reason = (str(exc).splitlines() or [""])[0][:120]
        raise InputError(
            f"ir_datasets dataset {dataset_id!r}: its qrels are not in ir_datasets' cache "
            f"({cache_folder()}, set by IR_DATASETS_HOME) and could not be downloaded "
            f"({type(exc).__name__}: {reason}); fetch them once where the network is "
            f"reachable: python -c \"import ir_datasets; "
            f"list(ir_datasets.load('{dataset_id}').qrels_iter())\"",
            key="dataset.id") from None
    return qrels[["qid", "docid", "label"]]
