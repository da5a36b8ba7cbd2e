"""numpy arrays to and from Arrow arrays through their buffers.

pyarrow's own conversions (``Array.to_numpy``, ``pa.array``, ``pa.table`` of numpy arrays)
first ask its pandas shim whether the object is a pandas one, and the shim imports pandas
to find out: 0.2-0.3 s on the first conversion of a process. ``harness eval``'s quick path
(plain text files evaluated without pandas) converts through the arrays' buffers instead:
the same values, no copy where the layouts agree, and pandas is never imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["numbers", "arrow", "strings", "repeated", "nonzero", "padded_words"]

_FLOATS = {"double": "float64", "float": "float32", "halffloat": "float16"}


def numbers(column: Any) -> np.ndarray:
    """The values of an Arrow array or chunked array of a fixed-width number type
    (integers, floats) without nulls, as one numpy array (a view when it has one chunk)."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    dtype = np.dtype(_FLOATS.get(str(column.type), str(column.type)))  # int64, uint32, ...
    if any(chunk.null_count for chunk in chunks):
        raise ValueError("numbers: the column has nulls")
    parts = [np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk),
                           offset=chunk.offset * dtype.itemsize)
             for chunk in chunks if len(chunk)]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def arrow(values: np.ndarray) -> Any:
    """A one-dimensional numpy array of numbers as an Arrow array (no nulls; a view of
    the array's memory, which it keeps alive)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise ValueError(f"arrow: a 1-d array of numbers, got {values.dtype} {values.shape}")
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, pa.py_buffer(values)])


def strings(values: list[str]) -> Any:
    """A list of str as an Arrow string array (UTF-8), built from its bytes and offsets."""
    import pyarrow as pa

    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(encoded), [
        None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]).cast(pa.string())


def repeated(values: list[str], counts: list[int]) -> Any:
    """An Arrow string array of each of ``values`` repeated ``counts`` times, in order: the
    distinct strings are encoded once and Arrow repeats them."""
    each = np.repeat(np.arange(len(values)), counts)
    return strings(values).take(arrow(each))


def nonzero(flags: Any) -> np.ndarray:
    """The positions of the true values of an Arrow boolean array without nulls."""
    import pyarrow.compute as pc

    return numbers(pc.indices_nonzero(flags)).astype(np.int64, copy=False)


def padded_words(column: Any, width: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each string of an Arrow string array (or chunked array) without nulls as its UTF-8
    bytes, zero-padded to a whole number of 8-byte words (at least ``width`` bytes), one
    row of uint64 words per string; and the strings' lengths in bytes. Equal strings give
    equal rows and lengths; so do only equal strings."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for chunk in chunks:
        if chunk.null_count:
            raise ValueError("padded_words: the column has nulls")
        if len(chunk):
            kind = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
            buffers = chunk.buffers()
            offsets = np.frombuffer(buffers[1], kind, len(chunk) + 1,
                                    chunk.offset * np.dtype(kind).itemsize)
            parts.append((offsets, np.frombuffer(buffers[2], np.uint8)))
    lengths = np.concatenate([np.zeros(0, np.int64)] + [np.diff(o) for o, _ in parts])
    size = -(-max(int(lengths.max(initial=0)), width, 1) // 8) * 8
    if len(parts) == 1 and len(lengths) and (lengths == size).all():  # the bytes as words
        offsets, data = parts[0]
        words = data[int(offsets[0]):int(offsets[-1])].view(np.uint64)
        return words.reshape(len(lengths), size // 8), lengths
    out = np.zeros((len(lengths), size), np.uint8)
    row = 0
    for offsets, data in parts:
        n, first, last = len(offsets) - 1, int(offsets[0]), int(offsets[-1])
        each = np.diff(offsets)
        if (each == each[0]).all():  # ids of one length: the bytes as they lie
            out[row:row + n, :each[0]] = data[first:last].reshape(n, int(each[0]))
        else:  # each byte to its row's next free place
            starts = np.arange(row, row + n, dtype=np.int64) * size - offsets[:-1].astype(
                np.int64)
            out.reshape(-1)[np.repeat(starts, each) + np.arange(first, last)] = \
                data[first:last]
        row += n
    return out.view(np.uint64), lengths
