"""TREC text files as column arrays, without pandas: ``harness eval``'s quick path.

A file is read as :mod:`harness.data.eval_inputs` reads it (the same rules, the same
messages), into :class:`Columns`: each text column a list of ``str`` (small files, split
in Python: no Arrow to import) or an Arrow string array (large files, Arrow's CSV reader on
both cores), numbers as float64 arrays. ``None`` means the file is not plain (mixed or
repeated separators, ``\\r`` before a comment, an empty field, a bad number): the caller
takes the DataFrame path, which names the line at fault.
"""

from __future__ import annotations

import codecs
import gzip
import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.arrow_arrays import numbers, repeated
from harness.data.trec import trec_fields

__all__ = ["Columns", "BLOCK", "CHUNK", "STREAM_CHUNK", "SMALL_FILE", "blocks", "fast_columns",
           "plan_reading", "query_start", "read_columns", "run_blocks", "without_comments"]

#: Text files up to this size are split in Python while Arrow is not imported yet (its
#: import costs more than splitting them); once it is, Arrow reads every file.
SMALL_FILE = 2 << 20
#: Larger files are read in blocks of about this many bytes.
BLOCK = 32 << 20
#: Arrow's reader parses text in chunks of this many bytes, on both cores (chunks that fit
#: the cores' caches: a 49 MB run in about 0.27 s of CPU, against 0.35 s in chunks of
#: 16 MB).
CHUNK = 1 << 20
#: The qrels of a run evaluated in bounded memory are parsed in chunks of this many bytes:
#: their columns' buffers are then mapped (:func:`harness.allocator.bounded_memory`), so the
#: query ids, let go once their ranges are known, go back to the OS (in chunks of 1 MB the
#: 2.2 GB run's process kept 0.4 GB more).
STREAM_CHUNK = 16 << 20


@dataclass
class Columns:
    """Some columns of a TREC file: text columns as lists of str or Arrow (chunked)
    arrays, the number column as float64; ``arrow`` says which."""

    text: dict[int, Any]
    number: np.ndarray
    arrow: bool
    runid: str = ""  # a run's: its last line's (trec_eval's)
    #: qrels read for a run in blocks: per query id, its rows' ranges, the query id column
    #: then dropped (it was most of the qrels' memory); see :meth:`qid_column`
    ranges: dict[str, list[tuple[int, int]]] | None = None

    def qid_column(self) -> Any:
        """The query id column (rebuilt from :attr:`ranges` when it was dropped)."""
        if 0 in self.text or self.ranges is None:
            return self.text[0]
        spans = sorted((a, b, qid) for qid, spans in self.ranges.items() for a, b in spans)
        if self.arrow:  # the ranges cover the rows
            return repeated([qid for _, _, qid in spans], [b - a for a, b, _ in spans])
        return [qid for a, b, qid in spans for _ in range(b - a)]

    def __len__(self) -> int:
        return len(self.number)


def without_comments(data: bytes) -> bytes:
    """``data`` with each line that starts with ``#`` emptied (LF or CRLF line ends; the
    empty lines left are skipped as blank ones): a few searches, not a pass per line."""
    parts, pos = [], 0
    if data.startswith(b"#"):
        pos = data.find(b"\n") if b"\n" in data else len(data)
    while True:
        hit = data.find(b"\n#", pos)
        if hit < 0:
            parts.append(data[pos:])
            return b"".join(parts)
        parts.append(data[pos:hit + 1])
        end = data.find(b"\n", hit + 1)
        pos = len(data) if end < 0 else end


def memory_limited() -> bool:
    """Whether this process runs under a memory limit (``ulimit -v``, a cgroup's
    ``memory.max``). Arrow's threaded CSV reader aborts the process when an allocation fails
    (``ValueOrDie``), where the single-threaded one raises ``ArrowMemoryError``, which
    becomes a one-line error: under a limit, files are read on one thread (about 15%
    slower)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return True
    try:
        return Path("/sys/fs/cgroup/memory.max").read_text().strip() != "max"
    except OSError:
        return False


def _plain_bytes(path: Path) -> tuple[bytes, bytes] | None:
    """The file's bytes (BOM and comment lines removed) and its one separator, when the
    file is plain; None otherwise."""
    if not path.is_file():
        return None
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError):
        return None
    return _plain(data)


def _plain(data: bytes) -> tuple[bytes, bytes] | None:
    """``data`` without its BOM and comment lines, and its one separator; None when it is
    not plain. The checks are byte searches (most ``memchr``, a few ms on 50 MB)."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if not data or (b"\r" in data and b"\r#" in data):  # memchr first: \r is rare
        return None
    if b"#" in data and (data.startswith(b"#") or b"\n#" in data):
        data = without_comments(data)
    has_tab, has_space = b"\t" in data, b" " in data
    if has_tab == has_space or (b"\t\t" if has_tab else b"  ") in data:
        return None  # mixed or repeated separators: trec_eval's whitespace rule, line by line
    return data, b"\t" if has_tab else b" "


def fast_columns(path: Path, n_fields: int, number: int, keep: tuple[int, ...]
                 ) -> Columns | None:
    """The file's columns ``keep`` (of ``n_fields``; ``number``: float) read by Arrow's CSV
    reader when the file is plain (UTF-8, one separator character, exactly ``n_fields``
    non-empty fields a line); None otherwise."""
    plain = _plain_bytes(path)
    return None if plain is None else _arrow_columns(*plain, n_fields, number, keep)


def _arrow_columns(data: bytes, sep: bytes, n_fields: int, number: int,
                   keep: tuple[int, ...], chunk: int = CHUNK) -> Columns | None:
    """Plain bytes' columns by Arrow's CSV reader. A leading or trailing separator makes an
    extra field, which Arrow's count of fields refuses, or, with a field missing, an empty
    one, which the check of the columns read refuses; blank lines Arrow skips, as
    trec_eval does."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    names = [f"c{i}" for i in range(n_fields)]
    types = {names[i]: pa.string() for i in keep}
    types[names[number]] = pa.float64()  # a bad number: Arrow refuses, the slow path names it
    try:
        table = pcsv.read_csv(
            io.BytesIO(data), read_options=pcsv.ReadOptions(
                column_names=names, use_threads=not memory_limited(),
                block_size=chunk),
            parse_options=pcsv.ParseOptions(delimiter=sep.decode(), quote_char=False,
                                            double_quote=False),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=[names[i] for i in keep],
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    del data
    values = table.column(names[number])
    if values.null_count:
        return None
    text = {}
    for i in keep:
        if i == number:
            continue
        column = table.column(names[i])
        if len(column) and pc.min(pc.binary_length(column)).as_py() == 0:
            return None  # an empty field: a separator at the start or end of a line
        text[i] = column
    out = numbers(values)
    if not np.isfinite(out).all():
        return None
    return Columns(text, out, True)


def blocks(path: str | Path, block: int, n_fields: int, number: int, keep: tuple[int, ...],
           chunk: int = CHUNK, start: int = 0, end: int | None = None
           ) -> Iterator[Columns | None]:
    """A file's columns block by block: about ``block`` bytes each, cut at line ends, each
    read as :func:`fast_columns` reads a file, Arrow parsing it in chunks of ``chunk``
    bytes (a block that is not plain is None: the caller reads the file otherwise). A
    run's blocks carry their last line's run id. ``start`` and ``end``: only those bytes
    of an uncompressed file (``start`` a line's first byte; :func:`query_start`)."""
    p = Path(path)
    with (gzip.open if p.suffix == ".gz" else open)(p, "rb") as fh:
        carry = b""
        if start:
            fh.seek(start)
        left = -1 if end is None else end - start
        while True:
            data = fh.read(block if left < 0 else min(block, left))
            left -= len(data) if left > 0 else 0
            if not data and not carry:
                return
            data, carry = carry + data, b""
            cut = data.rfind(b"\n") + 1
            if 0 < cut < len(data) and len(data) >= block:
                data, carry = data[:cut], data[cut:]
            plain = _plain(data)
            del data
            if plain is None:
                yield None
                continue
            cols = _arrow_columns(*plain, n_fields, number, keep, chunk)
            if cols is not None and n_fields == 6:
                cols.runid = _last_field(*plain, 5)
            yield cols


def run_blocks(path: str | Path, block: int, start: int = 0, end: int | None = None
               ) -> Iterator[Columns | None]:
    """A run's qid, docno and score columns, block by block (:func:`blocks`), of its bytes
    from ``start`` to ``end``."""
    return blocks(path, block, 6, 4, (0, 2, 4), start=start, end=end)


def query_start(path: str | Path, near: int, limit: int = 16 << 20) -> int | None:
    """Where a run grouped by query may be cut in two: the offset of the first line of an
    uncompressed text file whose first field (the query id) is not the previous line's,
    both lines starting at or after byte ``near``; None when no such line starts within
    ``limit`` bytes of ``near`` (or the file is compressed)."""
    p = Path(path)
    if p.suffix == ".gz" or near <= 0:
        return None
    with open(p, "rb") as fh:
        fh.seek(near - 1)
        fh.readline()  # the rest of the line holding byte near - 1
        previous = None
        while fh.tell() < near + limit:
            offset = fh.tell()
            fields = fh.readline().split(None, 1)
            if not fields:
                if offset == fh.tell():
                    return None  # the end of the file
                continue  # a blank line
            if previous is not None and fields[0] != previous:
                return offset
            previous = fields[0]
    return None


def _last_field(data: bytes, sep: bytes, i: int) -> str:
    """Field ``i`` of the last line of plain ``data``."""
    end = len(data)
    while end and data[end - 1] in b"\r\n":
        end -= 1
    start = max(data.rfind(b"\n", 0, end), data.rfind(b"\r", 0, end)) + 1
    fields = data[start:end].split(sep)
    return fields[i].decode() if len(fields) > i else ""


def _joined(parts: list[Columns]) -> Columns:
    """Blocks' columns as one: text columns chunked (no copy), numbers concatenated."""
    import pyarrow as pa

    text = {i: pa.chunked_array([c for part in parts for c in _chunks(part.text[i])],
                                type=pa.string()) for i in parts[0].text}
    return Columns(text, np.concatenate([part.number for part in parts]), True,
                   parts[-1].runid)


def _chunks(column: Any) -> list[Any]:
    return list(getattr(column, "chunks", [column]))


def _small_columns(path: Path, n_fields: int, number: int, keep: tuple[int, ...],
                   kind: str, more: bool) -> Columns | None:
    """A small file's columns, split in Python: a plain file (:func:`_plain_bytes`) by its
    one separator, any other by trec_eval's rules, line by line
    (:func:`harness.data.trec.trec_fields`, which names a bad line)."""
    plain = _plain_bytes(path)
    rows: list[Any] = []
    if plain is not None:
        data, sep = plain
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        rows = [line.split(sep.decode()) for line in text.split("\n") if line]
    if not rows or any(len(r) != n_fields for r in rows):
        rows = trec_fields(path, n_fields, kind, more=more)[0]
    cols = list(zip(*rows))
    if any("" in cols[i] for i in keep):
        return None  # an empty field: the line reader names the line
    try:
        out = np.array(cols[number], dtype=np.float64)
    except ValueError:
        return None
    if not np.isfinite(out).all() or any("_" in v for v in cols[number]):
        return None  # the DataFrame path names the line
    return Columns({i: list(cols[i]) for i in keep if i != number}, out, False)


def plan_reading(paths: list[str | Path]) -> None:
    """Before reading ``paths`` (a qrels and its runs): when they hold more than
    ``SMALL_FILE`` bytes in all, Arrow is imported now and reads every one of them
    (splitting a hundred small runs in Python costs more than importing Arrow once)."""
    total = sum(Path(p).stat().st_size for p in paths if Path(p).is_file())
    if total > SMALL_FILE:
        import pyarrow  # noqa: F401 - _split_in_python looks for its import


def _split_in_python(path: Path) -> bool:
    """Whether to split ``path`` in Python rather than with Arrow's reader: a small plain
    file while Arrow is not imported yet."""
    return (path.suffix != ".gz" and path.stat().st_size <= SMALL_FILE
            and "pyarrow" not in sys.modules)


def read_columns(path: str | Path, kind: str, block: int | None = None, chunk: int = CHUNK
                 ) -> Columns | None:
    """A qrels (``kind='qrels'``: qid, docno; rel) or run (``'run'``: qid, docno; score;
    its run id) text file's columns, or None where the DataFrame path must read it
    (parquet, a file that is not plain, a bad line: its message names the line). A large
    file is read in blocks of about ``block`` bytes, so that reading takes little more
    memory than the columns."""
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq") or not p.is_file():
        return None
    run = kind == "run"
    n_fields, number = (6, 4) if run else (4, 3)
    if _split_in_python(p):
        try:
            cols = _small_columns(p, n_fields, number, (0, 2, number, 5) if run else
                                  (0, 2, number), kind, run)
        except Exception:  # any fault: the DataFrame path reads it and names it
            return None
        if cols is not None and run:
            cols.runid = cols.text.pop(5)[-1]
        return cols
    parts = []
    for part in blocks(p, block or BLOCK, n_fields, number, (0, 2, number), chunk):
        if part is None:
            return None
        parts.append(part)
    return _joined(parts) if parts else None
