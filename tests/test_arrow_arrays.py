"""numpy to and from Arrow through buffers (:mod:`harness.arrow_arrays`) gives what
pyarrow's own conversions give, chunks, slices and offsets included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from harness.arrow_arrays import arrow, nonzero, numbers, padded_words, strings


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float64", "float32"])
def test_numbers_equal_pyarrows_conversion_across_chunks_and_slices(dtype: str) -> None:
    rng = np.random.default_rng(3)
    parts = [pa.array((rng.random(n) * 100).astype(dtype)) for n in (5, 0, 17)]
    column = pa.chunked_array(parts).slice(3, 15)  # a slice starts inside the first chunk
    got = numbers(column)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, column.to_numpy())
    np.testing.assert_array_equal(numbers(parts[2].slice(4, 6)), parts[2].to_numpy()[4:10])
    assert len(numbers(pa.chunked_array([], pa.from_numpy_dtype(np.dtype(dtype))))) == 0


def test_numbers_refuses_nulls() -> None:
    with pytest.raises(ValueError, match="nulls"):
        numbers(pa.array([1.0, None]))


def test_arrow_round_trips_and_refuses_what_it_cannot_hold() -> None:
    values = np.arange(10, dtype=np.int64)[::3]  # not contiguous: copied
    out = arrow(values)
    assert out.type == pa.int64() and out.to_pylist() == [0, 3, 6, 9]
    assert arrow(np.array([0.5, -1.0])).to_pylist() == [0.5, -1.0]
    with pytest.raises(ValueError, match="1-d array of numbers"):
        arrow(np.array(["a"]))


def test_strings_and_nonzero_equal_pyarrows() -> None:
    values = ["clueweb09-en0000-00-00000", "", "é—日本", "q1"]
    got = strings(values)
    assert got.type == pa.string() and got.equals(pa.array(values, pa.string()))
    assert strings([]).to_pylist() == []
    flags = pc.not_equal(got, pa.array(["clueweb09-en0000-00-00000", "x", "é—日本", "q"]))
    np.testing.assert_array_equal(nonzero(flags), np.flatnonzero(flags.to_numpy(
        zero_copy_only=False)))


def test_padded_words_are_equal_exactly_for_equal_strings() -> None:
    values = ["doc-0001", "doc-0001\x00", "", "é", "clueweb09-en0000-00-00000", "doc-0001"]
    column = pa.chunked_array([pa.array(values[:2]), pa.array(values[2:], pa.large_string()
                                                               ).cast(pa.string()).slice(0)])
    words, lengths = padded_words(column, 40)
    assert words.dtype == np.uint64 and words.shape == (6, 5)
    assert lengths.tolist() == [len(v.encode()) for v in values]
    for i, a in enumerate(values):  # the bytes, back from the words
        assert words[i].view(np.uint8)[:lengths[i]].tobytes() == a.encode()
        for j, b in enumerate(values):
            assert ((words[i] == words[j]).all() and lengths[i] == lengths[j]) == (a == b)
    fixed, n = padded_words(pa.array(["abc", "abd"]).slice(1))  # one length, a slice
    assert fixed.shape == (1, 1) and n.tolist() == [3]
    assert fixed[0].view(np.uint8)[:3].tobytes() == b"abd"


def test_padded_words_of_ids_a_whole_number_of_words_long_are_their_bytes() -> None:
    """Ids of 16 bytes are viewed in place, even where the slice starts off a word."""
    column = pa.array(["abc", "doc-000000000001", "doc-000000000002"]).slice(1)
    words, lengths = padded_words(column)
    assert words.shape == (2, 2) and lengths.tolist() == [16, 16]
    assert [w.view(np.uint8).tobytes() for w in words] == [b"doc-000000000001",
                                                           b"doc-000000000002"]
