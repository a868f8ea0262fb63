"""One Parquet file whose row groups are encoded on several threads at once.

pyarrow's ``ParquetWriter`` encodes a file's row groups one after the other on one core
(Arrow's threaded column encoding is not exposed), so a rewrite that writes one file is
bound by one core however many it has. A Parquet row group does not depend on the ones
before it: its column chunks are pages one after the other, and the footer records where
each chunk starts. So :class:`ParallelParquetWriter` has each row group encoded by a
``ParquetWriter`` of its own, on a worker thread, as a small file in memory; it copies
each such file's column chunks into the output in order and, at the end, writes one
footer: the first part's (schema, key-value metadata, writer), with every part's row
groups, their offsets moved to where their chunks now are.

The copy is checked before it is made: a part whose chunks do not fill the space between
its header and its footer, one after the other (a page index, a bloom filter or
encryption would put something else there), is not stitched; if the first part is such,
the file is written by one ``ParquetWriter`` instead, so the result is always the file
pyarrow would write, with the same bytes for every row group.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Deque, List, Optional, Tuple

from zorder.cpu.cores import usable_cores
from zorder.parquet.thrift_compact import (
    I16, I64, LIST, STRUCT, Struct, read_struct, write_struct,
)
from zorder.values.stages import WRITE, stage

__all__ = ["ParallelParquetWriter", "StitchError", "default_workers"]

_MAGIC = b"PAR1"

# Parquet's thrift field ids (parquet.thrift), for the fields read or moved here.
_FILE_NUM_ROWS, _FILE_ROW_GROUPS, _FILE_ENCRYPTION = 3, 4, 8
_GROUP_COLUMNS, _GROUP_FILE_OFFSET, _GROUP_ORDINAL = 1, 5, 7
_CHUNK_PATH, _CHUNK_FILE_OFFSET, _CHUNK_META = 1, 2, 3
#: ColumnChunk fields that point outside the chunk (page indexes) or hide it (encryption)
_CHUNK_ELSEWHERE = (4, 6, 8, 9)
_META_COMPRESSED, _META_DATA_PAGE, _META_INDEX_PAGE, _META_DICTIONARY_PAGE = 7, 9, 10, 11
_META_BLOOM_FILTER = 14


class StitchError(RuntimeError):
    """A row group's file that cannot be copied into another as it is."""


def _arrow_file(path: Any) -> Any:
    import pyarrow as pa

    return pa.OSFile(os.fspath(path), "wb")


#: Most row groups encoded at once by default: each is held beside its encoded bytes, and
#: one caller preparing them (a take) feeds only a few encoders.
_MAX_DEFAULT_WORKERS = 8


def default_workers() -> int:
    """Encoding threads for one file: every core this process may use (its affinity and
    its cgroup's CPU quota, ``zorder.cpu.cores``), at least 2
    (one encodes while the caller prepares the next row group), at most
    ``_MAX_DEFAULT_WORKERS``."""
    return min(_MAX_DEFAULT_WORKERS, max(2, usable_cores()))


def _footer(data: memoryview) -> Tuple[Struct, int]:
    """A Parquet file's footer, parsed, and where it starts."""
    if len(data) < 12 or bytes(data[:4]) != _MAGIC or bytes(data[-4:]) != _MAGIC:
        raise StitchError("not a plain Parquet file (no PAR1 at both ends)")
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    if start < 4:
        raise StitchError("a Parquet footer longer than its file")
    footer, used = read_struct(data[start:start + length])
    if used != length:
        raise StitchError("a Parquet footer with bytes after its FileMetaData")
    return footer, start


def _chunk_span(chunk: Struct) -> Tuple[int, int]:
    """Where a column chunk's pages start in its file, and how many bytes they take;
    StitchError for a chunk that has any part outside them, or in another file."""
    meta = chunk.get(_CHUNK_META)
    if (meta is None or chunk.field(_CHUNK_PATH) is not None
            or any(chunk.field(f) is not None for f in _CHUNK_ELSEWHERE)
            or meta.field(_META_BLOOM_FILTER) is not None):
        raise StitchError("a column chunk with a page index, a bloom filter, encryption "
                          "or a file of its own")
    starts = [meta.get(f) for f in (_META_DICTIONARY_PAGE, _META_INDEX_PAGE, _META_DATA_PAGE)]
    return min(s for s in starts if s is not None and s > 0), meta.get(_META_COMPRESSED)


def _check_layout(footer: Struct, end: int) -> None:
    """StitchError unless the footer's column chunks fill bytes 4 to ``end`` one after
    the other, so that copying those bytes copies every chunk and nothing else."""
    if footer.field(_FILE_ENCRYPTION) is not None:
        raise StitchError("an encrypted Parquet file")
    at = len(_MAGIC)
    for group in footer.get(_FILE_ROW_GROUPS, (STRUCT, []))[1]:
        for chunk in group.get(_GROUP_COLUMNS)[1]:
            start, size = _chunk_span(chunk)
            if start != at:
                raise StitchError(f"a column chunk at byte {start}, where {at} was expected")
            at += size
    if at != end:
        raise StitchError(f"{end - at} bytes between the column chunks and the footer")


def _moved(group: Struct, delta: int, ordinal: int) -> Struct:
    """``group`` with every offset into its file moved by ``delta`` bytes."""
    if group.get(_GROUP_FILE_OFFSET) is not None:
        group.set(_GROUP_FILE_OFFSET, I64, group.get(_GROUP_FILE_OFFSET) + delta)
    if group.field(_GROUP_ORDINAL) is not None:
        group.set(_GROUP_ORDINAL, I16, ordinal)
    for chunk in group.get(_GROUP_COLUMNS)[1]:
        if chunk.get(_CHUNK_FILE_OFFSET, 0) > 0:
            chunk.set(_CHUNK_FILE_OFFSET, I64, chunk.get(_CHUNK_FILE_OFFSET) + delta)
        meta = chunk.get(_CHUNK_META)
        for f in (_META_DATA_PAGE, _META_INDEX_PAGE, _META_DICTIONARY_PAGE):
            if meta.get(f, 0) > 0:
                meta.set(f, I64, meta.get(f) + delta)
    return group


class ParallelParquetWriter:
    """Write one Parquet file, a row group per :meth:`write_table` call, the row groups
    encoded on ``workers`` threads (pyarrow lets go of the GIL while it encodes) and
    placed in the order given. At most ``workers`` row groups are held at once, beside
    their encoded bytes; a call waits while that many are in flight. With one worker
    there is nothing to stitch: one ``ParquetWriter`` writes the file on that thread,
    a row group at a time, while the caller prepares the next (the same bytes).

    ``sink`` is a path or a binary file object opened for writing at its start (closed
    by :meth:`close` only when this writer opened it). ``options`` are
    ``pyarrow.parquet.ParquetWriter``'s, applied to every row group (one that puts
    anything outside the column chunks, such as a page index or a bloom filter, makes the
    file one ``ParquetWriter``'s).
    """

    def __init__(self, sink: Any, schema: Any, *, workers: Optional[int] = None,
                 **options: Any) -> None:
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or workers < 1):
            raise ValueError(f"workers={workers!r} must be a positive integer")
        self.schema = schema
        self.options = options
        self.workers = workers or default_workers()
        self._own = isinstance(sink, (str, os.PathLike))
        # (an Arrow file of its own: Arrow's writes to it let go of the GIL)
        self._file: Any = _arrow_file(sink) if self._own else sink
        self._pool: Optional[ThreadPoolExecutor] = None
        #: (rows, their job, whether the job wrote them (else it encoded a part))
        self._pending: Deque[Tuple[Any, Future, bool]] = deque()
        self._footer: Optional[Struct] = None
        #: the row groups placed, each moved and encoded (kept small: a wide file has many)
        self._groups: List[bytes] = []
        self._rows = 0
        self._at = 0
        #: the ParquetWriter of the file, when one writes it (one worker, or parts that
        #: could not be stitched)
        self._serial: Any = None
        self._serial_groups = 0
        self._closed = False

    def __enter__(self) -> "ParallelParquetWriter":
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def _encode(self, table: Any) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        with stage(WRITE):
            sink = pa.BufferOutputStream()
            with pq.ParquetWriter(sink, self.schema, **self.options) as writer:
                writer.write_table(table, row_group_size=table.num_rows)
            return sink.getvalue()

    def _write_serial(self, table: Any) -> None:
        with stage(WRITE):
            self._serial.write_table(table, row_group_size=table.num_rows)

    def write_table(self, table: Any) -> None:
        """Add ``table``'s rows as the next row group (none if it has no rows)."""
        if self._closed:
            raise ValueError("this ParallelParquetWriter is closed")
        if table.num_rows == 0:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="zorder-encoder")
        if self.workers == 1 or self._serial is not None:
            while self._pending:   # (in order: what is in flight first)
                self._place_oldest()
            if self._serial is None:
                self._start_serial()
            self._pending.append((table, self._pool.submit(self._write_serial, table), True))
            return
        while len(self._pending) >= self.workers:
            self._place_oldest()
        self._pending.append((table, self._pool.submit(self._encode, table), False))

    @property
    def placed(self) -> int:
        """Row groups in the file so far (the rest are in flight)."""
        return len(self._groups) + self._serial_groups

    def drain(self) -> None:
        """Wait until every row group given is in the file."""
        while self._pending:
            self._place_oldest()

    def _place_oldest(self) -> None:
        table, future, written = self._pending.popleft()
        result = future.result()
        if written:
            self._serial_groups += 1
            return
        if self._serial is not None:
            self._write_serial(table)
            self._serial_groups += 1
            return
        data = memoryview(result)
        try:
            footer, end = _footer(data)
            _check_layout(footer, end)
        except (StitchError, ValueError):
            if self._groups:
                raise   # (the first part was stitched: this one was made the same way)
            self._start_serial()
            self._write_serial(table)
            self._serial_groups += 1
            return
        if self._footer is None:
            self._file.write(_MAGIC)
            self._at = len(_MAGIC)
            self._footer = footer
        delta = self._at - len(_MAGIC)
        for group in footer.get(_FILE_ROW_GROUPS)[1]:
            self._groups.append(write_struct(_moved(group, delta, len(self._groups))))
        self._rows += footer.get(_FILE_NUM_ROWS)
        self._file.write(data[len(_MAGIC):end])
        self._at += end - len(_MAGIC)

    def _start_serial(self) -> None:
        """Write the file with one ParquetWriter from here on (nothing is written yet)."""
        import pyarrow.parquet as pq

        self._serial = pq.ParquetWriter(self._file, self.schema, **self.options)

    def close(self) -> None:
        """Place the row groups still in flight and write the footer."""
        if self._closed:
            return
        try:
            self.drain()
            if self._footer is None and self._serial is None:
                self._start_serial()   # (no rows: the file ParquetWriter writes for none)
            if self._serial is not None:
                self._serial.close()
            else:
                self._write_footer()
        except BaseException:
            self.abort()   # (a failed write, or Ctrl-C while waiting for one)
            raise
        self._closed = True
        self._shutdown()

    def _write_footer(self) -> None:
        footer = self._footer
        assert footer is not None
        footer.set(_FILE_NUM_ROWS, I64, self._rows)
        footer.set(_FILE_ROW_GROUPS, LIST, (STRUCT, self._groups))
        encoded = write_struct(footer)
        self._file.write(encoded + len(encoded).to_bytes(4, "little") + _MAGIC)
        self._file.flush()

    def _shutdown(self) -> None:
        for _, future, _ in self._pending:
            future.cancel()
        if self._pool is not None:   # (waits for a row group being written or encoded)
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()
        if self._own:
            self._file.close()

    def abort(self) -> None:
        """Stop after a failure: drop what is in flight and close what this writer
        opened (the caller removes the unfinished file)."""
        if self._closed:
            return
        self._closed = True
        own, self._own = self._own, False
        self._shutdown()   # (before the ParquetWriter is closed: no write is running)
        try:
            if self._serial is not None:
                self._serial.close()
        except Exception:  # noqa: BLE001 - the failure being handled is the one to report
            pass
        if own:
            with contextlib.suppress(OSError):   # (the failure handled is the one to report)
                self._file.close()
