"""Document ids as integer codes: docids packed or hashed straight from their Arrow buffers,
the run joined to its qrels on (query, docid) codes, and the duplicate (qid, docid) check.
Query ids are coded in :mod:`harness.metrics.layout.qids`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError, plain
from harness.metrics.layout.segments import Layout, duplicate_within, group_by_query

__all__ = ["joint_docid_codes", "docid_codes",
           "match_pairs", "same_docids", "query_layout", "check_unique_pairs", "text_hash",
           "one_chunk"]


def joint_docid_codes(run_doc: pd.Series, j_doc: pd.Series, both: pd.Series,
                      run_hashed: tuple[np.ndarray, bool | str] | None
                      ) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Docid codes of the run and the qrels that agree between them: (run codes, qrels
    codes, code range, exact). Text columns are hashed each in place when both get the
    64-bit hash; otherwise ``both`` (the two columns concatenated) is coded at once.
    ``run_hashed``: the run's :func:`text_hash`, computed beforehand."""
    hashed = run_hashed, _arrow_string_hash(j_doc)
    if hashed[0] is not None and hashed[1] is not None and hashed[0][1] == hashed[1][1]:
        # both hashed, or both packed the same way: one string, one code in both tables
        return hashed[0][0], hashed[1][0], 0, bool(hashed[0][1])
    codes, n_d, exact = docid_codes(both)
    return codes[:len(run_doc)], codes[len(run_doc):], n_d, exact


def text_hash(docid: pd.Series) -> tuple[np.ndarray, bool | str] | None:
    """The codes :func:`joint_docid_codes` gives a text column (``run_hashed``), or None
    when it is not Arrow-backed text."""
    return _arrow_string_hash(docid)


def one_chunk(array: Any) -> Any:
    """An Arrow array in one piece: a chunked array's only chunk as it is (combining
    copies even one chunk), else its chunks combined."""
    import pyarrow as pa

    if not isinstance(array, pa.ChunkedArray):
        return array
    return array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()


def docid_codes(docid: pd.Series) -> tuple[np.ndarray, int, bool]:
    """Codes for the duplicate check: (codes, code range, exact).

    Non-negative integer docids are their own codes. Arrow-backed strings get a 64-bit hash
    read straight from the Arrow buffers (equal strings, equal codes; ``exact`` is False
    because unequal strings may collide, so a duplicate it shows is re-checked exactly).
    Anything else is factorised.
    """
    if pd.api.types.is_integer_dtype(docid) and len(docid):
        values = docid.to_numpy(dtype=np.int64)
        low, high = int(values.min()), int(values.max())
        if low >= 0 and high < (1 << 40):
            return values, high + 1, True
    hashed = _arrow_string_hash(docid)
    if hashed is not None:
        codes, exact = hashed
        return codes, 0, bool(exact)
    codes, uniques = pd.factorize(docid)
    return codes, len(uniques), True


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _arrow_string_hash(docid: pd.Series) -> tuple[np.ndarray, bool | str] | None:
    """Codes of an Arrow-backed string column read from its buffers: (codes, exact), where
    ``exact`` is False for hashes, else how the bytes were packed (``"bytes"`` or
    ``"bytes+length"``): two columns' codes agree when they were made the same way.

    Strings of at most 8 bytes without NUL bytes are their zero-padded bytes as one int64,
    and strings of at most 7 bytes get their length in the top byte: exact codes. Longer ones
    get a 64-bit hash (equal strings, equal codes). None when the column is not Arrow-backed
    text."""
    import pyarrow as pa

    if not isinstance(docid.dtype, pd.StringDtype) and not (
            isinstance(docid.dtype, pd.ArrowDtype) and pa.types.is_string(
                docid.dtype.pyarrow_dtype)):
        return None
    try:
        arr = pa.array(docid)
    except (TypeError, pa.ArrowException):
        return None
    arr = one_chunk(arr)
    if arr.null_count or not (pa.types.is_string(arr.type) or pa.types.is_large_string(
            arr.type)):
        return None
    _, off_buf, data_buf = arr.buffers()
    off_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(off_buf, dtype=off_type)[arr.offset: arr.offset + len(arr) + 1]
    offsets = offsets.astype(np.int64, copy=False)
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if len(lengths) else 0
    if longest > 256:
        return None
    words = -(-longest // 8)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0,
                                                                                      np.uint8)
    data = data[int(offsets[0]): int(offsets[-1])]
    if longest > 8 and int(lengths.min()) == longest:  # one length: rows of a byte matrix
        return _fixed_width_hash(data, longest), False
    start = offsets[:-1] - offsets[0] if offsets[0] else offsets[:-1]
    shortest = int(lengths.min()) if len(lengths) else 0
    if longest <= 8 or shortest < 8:  # a word may run past the data's end: pad it
        padded = np.zeros(len(data) + 8 * words + 8, dtype=np.uint8)
        padded[: len(data)] = data
    else:  # every read below stays inside its own string
        padded = data
    window = np.ndarray(shape=(max(len(padded) - 7, 0),), dtype="<u8", buffer=padded,
                        strides=(1,))
    if longest <= 8:
        left = lengths.astype(np.uint64)
        full = np.uint64(0xFFFFFFFFFFFFFFFF)
        shift = np.minimum(left, np.uint64(7)) * np.uint64(8)
        mask = np.where(left >= 8, full, (np.uint64(1) << shift) - np.uint64(1))
        word = window[start] & mask
        if data.all():  # no NUL byte
            # exact: without NUL bytes a string is its zero-padded bytes (and never the
            # int64-max padding of the duplicate check: UTF-8 has no 0xFF byte)
            return word.view(np.int64), "bytes"
        if longest <= 7:  # exact with NULs too: the length goes above the bytes
            return (word | (left << np.uint64(56))).view(np.int64), "bytes+length"
    # a 64-bit hash of each string: its length, then its 8-byte words, the last one read
    # as the string's last 8 bytes (overlapping the word before), so no read crosses the
    # string's end and no word needs a mask; strings under 8 bytes are one masked word.
    # A string mixes in its own number of words only, so its hash does not depend on the
    # other strings of the column (a run and its qrels, hashed apart, agree)
    # few arrays of the column's length, updated in place: each new one costs page faults
    h = lengths.astype(np.uint64)
    h *= _MIX
    short_mask = None
    if shortest < 8:
        shift = lengths.clip(0, 7).astype(np.uint64) * np.uint64(8)
        short_mask = np.where(lengths < 8, (np.uint64(1) << shift) - np.uint64(1),
                              np.uint64(0xFFFFFFFFFFFFFFFF))
    last = offsets[1:] - (offsets[0] + 8)  # start + length - 8
    if shortest < 8:
        np.maximum(last, start, out=last)
    shifted = np.empty_like(h)
    with np.errstate(over="ignore"):
        for j in range(words):
            # word j of a string is at 8j, its last word at ``last`` (every string that
            # has a last word j = words - 1 ends within 8 bytes of 8j)
            word = window[start if j == 0 else last if j == words - 1 else
                          np.minimum(start + 8 * j, last)]
            if short_mask is not None and j == 0:
                word &= short_mask
            word ^= h
            word *= _MIX
            np.right_shift(word, np.uint64(29), out=shifted)
            word ^= shifted
            if j == 0 or shortest > 8 * j:
                h = word
            else:
                np.copyto(h, word, where=lengths > 8 * j)
    return h.view(np.int64), False


def _fixed_width_hash(data: np.ndarray, width: int) -> np.ndarray:
    """The hash :func:`_arrow_string_hash` gives strings of one length ``width`` > 8, read
    from the rows of their byte matrix: word j is bytes ``min(8j, width-8)`` onwards."""
    n = len(data) // width
    h = np.full(n, np.uint64(width)) * _MIX
    with np.errstate(over="ignore"):
        for j in range(-(-width // 8)):
            start = min(8 * j, width - 8)
            # the 8 bytes at ``start`` of every row, read in place (unaligned, strided)
            h ^= np.ndarray(shape=(n,), dtype="<u8", buffer=data, offset=start,
                            strides=(width,))
            h *= _MIX
            h ^= h >> np.uint64(29)
    return h.view(np.int64)


def query_layout(q: np.ndarray, n_queries: int, counts: np.ndarray | None = None
                  ) -> tuple[Layout, np.ndarray, np.ndarray | None]:
    """Rows laid out by query: the layout, each row's position in its query, and the
    permutation grouping the rows (None when they already are). ``counts``: the rows per
    query, when known."""
    grouping = group_by_query(q, n_queries)
    gq = q if grouping is None else q[grouping]
    if counts is None:
        counts = np.bincount(gq, minlength=n_queries)
    starts = np.cumsum(counts) - counts
    pos = np.arange(len(gq), dtype=np.int64) - starts[gq]
    return Layout.of(starts, counts, gq, pos), pos, grouping


def check_unique_pairs(df: pd.DataFrame, table: str, q: np.ndarray, d: np.ndarray,
                        n_queries: int, n_docids: int, exact: bool = True,
                        laid_out: tuple[Layout, np.ndarray, np.ndarray | None] | None = None
                        ) -> tuple[Layout, np.ndarray]:
    """Raise on a duplicate (qid, docid): a fast per-query test, then the exact row. With
    inexact codes (hashes), a duplicate found is confirmed on factorised docids first."""
    layout, pos, grouping = laid_out or query_layout(q, n_queries)
    gd = d if grouping is None else d[grouping]
    if duplicate_within(layout, gd):
        if not exact:
            d, uniques = pd.factorize(df["docid"])
            n_docids = len(uniques)
        _raise_duplicates(df, q, d, n_docids, table)
    return layout, pos


def _raise_duplicates(df: pd.DataFrame, q: np.ndarray, d: np.ndarray, n_d: int,
                      table: str) -> None:
    dup = _duplicates(q, d, n_d)
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise InputError(
            f"duplicate (qid, docid) pair: docid {plain(df['docid'].iloc[row])!r} appears more than "
            f"once ({int(dup.sum())} duplicate row(s) in all)",
            table=table, column="docid", qid=df["qid"].iloc[row], row=row,
        )


def _duplicates(q: np.ndarray, d: np.ndarray, n_docs: int) -> np.ndarray:
    """Boolean mask of rows whose (q, d) pair occurred on an earlier row."""
    order = np.lexsort((d, q))  # stable: the first occurrence keeps its place
    sq, sd = q[order], d[order]
    dup_sorted = np.zeros(len(q), dtype=bool)
    dup_sorted[1:] = (sq[1:] == sq[:-1]) & (sd[1:] == sd[:-1])
    mask = np.zeros(len(q), dtype=bool)
    mask[order[dup_sorted]] = True
    return mask


def match_pairs(rq: np.ndarray, rd: np.ndarray, jq: np.ndarray, jd: np.ndarray, n_d: int,
                 exact: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
    """For each run row, whether its (query, docid) codes are a qrels row's, and which (-1:
    none).

    Exact codes with a known range are joined on ``q * n_d + d``. Hashes (``exact`` False)
    are joined on the query code in the top bits and the hash's top bits below it: pairs
    of one key share their query, and the caller compares the joined docids as strings.
    Other 64-bit codes (packed words) are joined on a mixed 64-bit key, checked
    afterwards. None when two different pairs share a key, so the caller joins on exact
    codes instead."""
    n_q = int(max(jq.max(initial=0), rq.max(initial=0))) + 1
    q_bits = max(n_q - 1, 1).bit_length()
    with np.errstate(over="ignore"):
        if 0 < n_d and (int(jq.max(initial=0)) + 1) * n_d < (1 << 62):
            jkey = jq.astype(np.int64) * n_d + jd
            rkey = rq.astype(np.int64) * n_d + rd
            checked = True
        elif not exact and q_bits <= 32:
            keep = np.uint64(64 - q_bits)
            jkey = ((jq.astype(np.uint64) << keep) | (jd.view(np.uint64) >> np.uint64(q_bits))
                    ).view(np.int64)
            rkey = ((rq.astype(np.uint64) << keep) | (rd.view(np.uint64) >> np.uint64(q_bits))
                    ).view(np.int64)
            checked = True  # the query is exact; the docids are compared by the caller
        else:
            mix = np.uint64(0x9E3779B97F4A7C15)
            jkey = (jd.view(np.uint64) + jq.astype(np.uint64) * mix).view(np.int64)
            rkey = (rd.view(np.uint64) + rq.astype(np.uint64) * mix).view(np.int64)
            checked = False
    index = pd.Index(jkey)
    if not index.is_unique:  # qrels pairs are unique (checked): a collision of keys
        return None
    position = index.get_indexer(rkey)  # a hash join; -1 where the run row is unjudged
    hit = position >= 0
    if not checked and ((jq[position[hit]] != rq[hit]).any()
                        or (jd[position[hit]] != rd[hit]).any()):
        return None
    return hit, position


def same_docids(run_doc: pd.Series, j_doc: pd.Series,
                 match: tuple[np.ndarray, np.ndarray], j_rows: np.ndarray) -> bool:
    """Whether every run docid joined to a qrels docid by hash is that very string."""
    hit, position = match
    rows = np.flatnonzero(hit)
    import pyarrow as pa
    import pyarrow.compute as pc

    ours = one_chunk(pa.array(run_doc)).take(pa.array(rows))
    theirs = one_chunk(pa.array(j_doc)).take(pa.array(j_rows[position[rows]]))
    return len(ours) == 0 or bool(pc.all(pc.equal(ours, theirs)).as_py())
