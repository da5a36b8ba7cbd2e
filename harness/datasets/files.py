"""Datasets read from files: LETOR/SVMlight, TREC qrels + run, and plain tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.data.trec import read_qrels, read_run, warn_on_few_judged
from harness.datasets.dataset import Dataset, content_digest
from harness.errors import InputError

__all__ = ["load_letor", "load_trec", "load_ir_datasets", "load_table"]


def _existing(path: str | Path, what: str) -> Path:
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise InputError(f"{what} file not found: {p}", key=f"dataset.{what}")
    return p


def _letor_split(path: Path, query_file: Path | None, n_features: int | None,
                 split: str) -> tuple[pd.DataFrame, int]:
    # imported here: sklearn.datasets costs ~1 s at start-up and only LETOR files need it
    from sklearn.datasets import load_svmlight_file

    try:
        X, y, qid = load_svmlight_file(str(path), zero_based=True, query_id=True,
                                       n_features=None if n_features is None else n_features + 1)
    except ValueError as exc:
        raise InputError(f"cannot read {path} as SVMlight: {exc}", table=path.name) from None
    if query_file is not None:
        sizes = np.loadtxt(query_file, dtype=np.int64, ndmin=1)
        if sizes.sum() != X.shape[0] or (sizes <= 0).any():
            raise InputError(
                f"group file {query_file.name} counts {int(sizes.sum())} rows in "
                f"{len(sizes)} queries but {path.name} has {X.shape[0]} rows",
                table=query_file.name)
        qid = np.repeat(np.arange(len(sizes)), sizes)
    elif not np.any(qid):
        raise InputError(f"{path.name} has no qid: fields and no group file was given",
                         table=path.name, column="qid")
    else:
        if (np.diff(qid) != 0).sum() + 1 != len(np.unique(qid)):
            raise InputError(f"{path.name}: rows of a query must be consecutive",
                             table=path.name, column="qid")
    qid_text = np.char.add(f"{split}-", qid.astype(str))
    within = _position_within(qid)
    frame = pd.DataFrame({
        "qid": qid_text,
        "docid": np.char.add("d", within.astype(str)),
        "split": split,
        "label": _exact(y),
    })
    _finite_features(X, path)
    dense = X.toarray()
    # columns named by the file's own indices: f0 only when a row has index 0
    first = 0 if X.shape[1] and X[:, 0].nnz else 1
    feats = pd.DataFrame(dense[:, first:],
                         columns=[f"f{i}" for i in range(first, dense.shape[1])])
    return pd.concat([frame, feats], axis=1), dense.shape[1] - 1


def _exact(label: np.ndarray) -> np.ndarray:
    """Labels as int64 when each is whole, else exactly as read (1.5 stays 1.5: the
    conventions that truncate, ranx's and trec_eval's, refuse such labels)."""
    return label.astype(np.int64) if np.all(label == np.round(label)) else label


def _finite_features(X: Any, path: Path) -> None:
    """Refuse a feature value that is NaN or infinite, naming the file, the line and the
    feature (the reader parses ``nan`` and ``inf``; NaN became 0.0 before)."""
    bad = np.flatnonzero(~np.isfinite(X.data))
    if not len(bad):
        return
    row = int(np.searchsorted(X.indptr, bad[0], side="right")) - 1
    index, value = int(X.indices[bad[0]]), X.data[bad[0]]
    raise InputError(f"{path} line {_data_line(path, row)}: feature {index} is {value}; "
                     "features must be finite numbers", table=path.name)


def _data_line(path: Path, row: int) -> int:
    """The 1-based line of the ``row``-th data line (0-based) of an SVMlight file: lines
    that are blank or only a ``#`` comment hold no row."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw.split(b"#", 1)[0].strip():
                if row == 0:
                    return lineno
                row -= 1
    return 0


def _position_within(qid: np.ndarray) -> np.ndarray:
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    sizes = np.diff(np.r_[starts, len(qid)])
    return np.arange(len(qid)) - np.repeat(starts, sizes)


def load_letor(*, name: str, test_path: str, train_path: str | None = None,
               query_files: bool = True, n_features: int | None = None) -> Dataset:
    """Read SVMlight files (with ``qid:`` or a LightGBM ``<file>.query`` group file)."""
    test = _existing(test_path, "test_path")

    def group(p: Path) -> Path | None:
        q = p.with_name(p.name + ".query")
        return q if query_files and q.is_file() else None

    parts, sources = [], [str(test)]
    test_df, width = _letor_split(test, group(test), n_features, "test")
    if train_path:
        train = _existing(train_path, "train_path")
        train_df, w2 = _letor_split(train, group(train), n_features or width, "train")
        if w2 != width:  # the wider file sets the width
            test_df, width = _letor_split(test, group(test), w2, "test")
        parts.append(train_df)
        sources.append(str(train))
    docs = pd.concat([test_df, *parts], ignore_index=True)
    features = tuple(sorted((c for c in docs.columns if c.startswith("f") and c[1:].isdigit()),
                            key=lambda c: int(c[1:])))
    docs[list(features)] = docs[list(features)].fillna(0.0)
    qrels = docs.loc[docs["split"] == "test", ["qid", "docid", "label"]].reset_index(drop=True)
    return Dataset(name=name, kind="letor", docs=docs, qrels=qrels, features=features,
                   digest=content_digest(docs, qrels), source=";".join(sources))


def load_trec(*, name: str, qrels_path: str, run_path: str) -> Dataset:
    """Judgments from a qrels file; candidates (and feature ``run_score``) from a run file."""
    qpath, rpath = _existing(qrels_path, "qrels_path"), _existing(run_path, "run_path")
    qrels = read_qrels(qpath)
    _judged_once(qrels, qpath)
    return _judged_run(name, "trec", qrels, rpath, qpath.name, str(qpath))


def load_ir_datasets(*, name: str, id: str, run_path: str) -> Dataset:
    """Judgments of the ir_datasets dataset ``id`` (from ir_datasets' cache); candidates
    (and feature ``run_score``) from a run file, as kind ``trec``."""
    from harness.interop.ir_datasets_qrels import read_ir_dataset

    rpath = _existing(run_path, "run_path")
    return _judged_run(name, "ir_datasets", read_ir_dataset(id), rpath, id,
                       f"ir_datasets:{id}")


def _judged_run(name: str, kind: str, qrels: pd.DataFrame, rpath: Path, qrels_name: str,
                qrels_source: str) -> Dataset:
    """A dataset of the run file's candidates labelled by ``qrels`` (judged queries only)."""
    run = read_run(rpath)
    warn_on_few_judged(run["qid"].unique(), qrels["qid"].unique(), run=rpath.name,
                       qrels=qrels_name)
    labels = qrels.set_index(["qid", "docid"])["label"]
    idx = pd.MultiIndex.from_frame(run[["qid", "docid"]])
    label = labels.reindex(idx).to_numpy()
    docs = pd.DataFrame({
        "qid": run["qid"].to_numpy(), "docid": run["docid"].to_numpy(), "split": "test",
        "label": _exact(np.where(np.isnan(label.astype(float)), 0.0, label.astype(float))),
        "run_score": run["score"].to_numpy(),
    })
    judged_qids = set(qrels["qid"])
    docs = docs[docs["qid"].isin(judged_qids)].reset_index(drop=True)
    return Dataset(name=name, kind=kind, docs=docs, qrels=qrels, features=("run_score",),
                   digest=content_digest(docs, qrels), source=f"{qrels_source};{rpath}")


def _judged_once(qrels: pd.DataFrame, path: Path) -> None:
    """Refuse a qrels file that judges a document twice for one query (which grade counts
    would be a guess), naming both lines (read again on this error path only)."""
    from harness.data.trec import trec_fields

    dup = qrels.duplicated(["qid", "docid"], keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        first = rows[0]
        qid, docid = qrels["qid"].iat[first], qrels["docid"].iat[first]
        same = rows[(qrels["qid"].to_numpy()[rows] == qid)
                    & (qrels["docid"].to_numpy()[rows] == docid)]
        _, lines = trec_fields(path, 4, "qrels")
        raise InputError(f"{path.name} lines {lines[same[0]]} and {lines[same[1]]}: document "
                         f"{docid!r} is judged twice for query {qid!r}; keep one line",
                         key="dataset.qrels_path")


def load_table(*, name: str, path: str, qid: str = "qid", docid: str = "docid",
               label: str = "label", split: str | None = None,
               features: Sequence[str] | None = None) -> Dataset:
    """A parquet or CSV table with named columns (renamed to qid, docid, label, split)."""
    p = _existing(path, "path")
    if p.suffix in (".parquet", ".pq"):
        raw = pd.read_parquet(p)
    elif p.suffix in (".csv", ".tsv"):
        raw = pd.read_csv(p, sep="\t" if p.suffix == ".tsv" else ",")
    else:
        raise InputError(f"table {p.name}: expected .parquet, .csv or .tsv", table=p.name)
    wanted = {qid: "qid", docid: "docid", label: "label"}
    if split:
        wanted[split] = "split"
    missing = [c for c in wanted if c not in raw.columns]
    if missing:
        raise InputError(f"table {p.name} lacks column(s) {missing}; it has "
                         f"{list(raw.columns)}", table=p.name, column=missing[0])
    docs = raw.rename(columns=wanted)
    if not split:
        docs["split"] = "test"
    explicit = features is not None
    if features is None:
        features = [c for c in docs.columns if c not in ("qid", "docid", "label", "split")
                    and (pd.api.types.is_numeric_dtype(docs[c]) or _mostly_numbers(docs[c]))]
    absent = [f for f in features if f not in docs.columns]
    if absent:
        raise InputError(f"table {p.name} lacks feature column(s) {absent}", table=p.name,
                         column=absent[0])
    for f in features:
        _numeric_feature(docs, f, p.name, explicit=explicit)
    _numeric_labels(docs, p.name)
    docs = docs[["qid", "docid", "split", "label", *features]].reset_index(drop=True)
    qrels = docs.loc[docs["split"] == "test", ["qid", "docid", "label"]].reset_index(drop=True)
    return Dataset(name=name, kind="table", docs=docs, qrels=qrels, features=tuple(features),
                   digest=content_digest(docs, qrels), source=str(p))


def _mostly_numbers(values: pd.Series) -> bool:
    """Whether at least half of a text column's values read as numbers (a feature column
    with a stray non-number, rather than a text column)."""
    present = values.dropna()
    return len(present) > 0 and pd.to_numeric(present, errors="coerce").notna().mean() >= 0.5


def _numeric_labels(docs: pd.DataFrame, table: str) -> None:
    """Labels as numbers in place, or the first that is not one, named by row and query."""
    _numeric(docs, "label", table, lambda v: f"label {v!r} is not a number (a grade)")


def _numeric_feature(docs: pd.DataFrame, column: str, table: str, *, explicit: bool) -> None:
    """Convert a feature column to numbers in place, or name its first non-number."""
    how = "a feature" if explicit else "mostly numbers, so read as a feature"
    _numeric(docs, column, table,
             lambda v: f"feature column {column!r} ({how}) holds the non-number {v!r}")


def _numeric(docs: pd.DataFrame, column: str, table: str, says: Any) -> None:
    values = docs[column]
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna() & values.notna()
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(f"table {table}: {says(values.iloc[row])}", table=table,
                         column=column, qid=docs["qid"].iloc[row], row=row)
    docs[column] = numbers
