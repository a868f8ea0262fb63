"""Spill runs: rows put aside on disk, as Arrow IPC streams, and read back in order.

A :class:`SpillRun` is one file in a working folder (``safety.temporary_folder``, which
removes it however the work ends): tables appended in order, read back in the same order,
whole or batch by batch. Its Arrow bytes and rows are counted as they are appended, so
the reader knows what loading it will take before it does.

Runs are local files by default. A ``SpillStorage`` puts them elsewhere (the Iceberg
rewrite's Dask path spills through the table's own FileIO when the workers share no
folder with the client): it only has to open a location for writing and for reading,
and delete it.

Buffers are not compressed by default (``SPILL_COMPRESSION``): the runs are written once
and read once, and LZ4 cost more time than it saved on the README's table (random
values compress little). A run takes about its rows' Arrow size on disk, curve values
included.
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Iterator, Optional, Sequence

__all__ = ["SPILL_COMPRESSION", "JoinedRun", "LOCAL", "SpillFolder", "SpillRun", "SpillStorage"]

#: IPC buffer compression of spill runs ("lz4", "zstd" or None).
SPILL_COMPRESSION: Optional[str] = None


class SpillStorage:
    """Where spill runs are kept: local files (``LOCAL``); subclasses keep them elsewhere."""

    #: Local files, in folders that must be made before and removed after.
    local = True

    def open_output(self, location: str) -> Any:
        """A new writable Arrow stream at ``location`` (its folder made if need be)."""
        import pyarrow as pa

        return pa.OSFile(location, "wb")

    def open_input(self, location: str) -> Any:
        """A readable Arrow stream of ``location``."""
        import pyarrow as pa

        return pa.OSFile(location, "rb")

    def exists(self, location: str) -> bool:
        return os.path.exists(location)

    def delete(self, location: str) -> None:
        """Delete ``location`` if it exists."""
        try:
            os.remove(location)
        except FileNotFoundError:
            pass


#: Local files.
LOCAL = SpillStorage()


class SpillRun:
    """One run: a file of record batches of one schema, appended in order, read in order.

    ``rows`` and ``nbytes`` (Arrow bytes) count what was appended; ``single_key`` is set
    by the maker when every row of the run shares one curve value."""

    def __init__(self, path: str, schema: Any, compression: Optional[str],
                 storage: SpillStorage = LOCAL) -> None:
        self.path = path
        self.schema = schema
        self.compression = compression
        self.storage = storage
        self.rows = 0
        self.nbytes = 0
        self.single_key = False
        self._writer: Any = None
        self._sink: Any = None

    def append(self, data: Any) -> None:
        """Append a Table or RecordBatch (of the run's schema) at the end of the run."""
        import pyarrow as pa

        if data.num_rows == 0:
            return
        if self._writer is None:
            self._sink = self.storage.open_output(self.path)
            options = pa.ipc.IpcWriteOptions(compression=self.compression)
            self._writer = pa.ipc.new_stream(self._sink, self.schema, options=options)
        if isinstance(data, pa.RecordBatch):
            self._writer.write_batch(data)
        else:
            self._writer.write_table(data)
        self.rows += data.num_rows
        self.nbytes += data.nbytes

    def close(self) -> None:
        """Finish writing (the run can then be read)."""
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = self._sink = None

    def batches(self) -> Iterator[Any]:
        """The run's record batches, in the order appended, one in memory at a time."""
        import pyarrow as pa

        self.close()
        if self.rows == 0:
            return
        with self.storage.open_input(self.path) as source:
            reader = pa.ipc.open_stream(source)
            for batch in reader:
                yield batch

    def read(self) -> Any:
        """The whole run as one Table (one chunk per column)."""
        import pyarrow as pa

        batches = list(self.batches())
        table = pa.Table.from_batches(batches, schema=self.schema)
        del batches
        return table.combine_chunks()

    def remove(self) -> None:
        """Delete the run's file (the folder's removal would too; this frees disk early)."""
        self.close()
        self.storage.delete(self.path)


class JoinedRun(SpillRun):
    """Finished run files of several writers, read as one run in the order given (one
    range's runs of each input piece, in input order). Their schemas are unified (an
    input whose pieces inferred their types apart: a column of nulls in one of them);
    each batch is read in the unified schema. ``rows`` and ``nbytes`` are what the
    writers counted. ``remove`` deletes the files only where ``owned``: a task that may
    run again (a worker lost) must find them again."""

    def __init__(self, paths: Sequence[str], rows: int, nbytes: int, owned: bool,
                 storage: SpillStorage = LOCAL) -> None:
        import pyarrow as pa

        schemas = []
        for path in paths:
            with storage.open_input(path) as source:
                schemas.append(pa.ipc.open_stream(source).schema)
        schema = (schemas[0] if len(set(schemas)) <= 1
                  else pa.unify_schemas(schemas, promote_options="default"))
        super().__init__(paths[0] if paths else "", schema, None, storage)
        self.paths = list(paths)
        self.rows = rows
        self.nbytes = nbytes
        self.owned = owned

    def append(self, data: Any) -> None:
        raise TypeError("a joined run is read only")

    def close(self) -> None:
        pass

    def batches(self) -> Iterator[Any]:
        import pyarrow as pa

        for path in self.paths:
            with self.storage.open_input(path) as source:
                for batch in pa.ipc.open_stream(source):
                    yield batch if batch.schema.equals(self.schema) \
                        else batch.cast(self.schema)

    def remove(self) -> None:
        for path in self.paths if self.owned else ():
            self.storage.delete(path)


class SpillFolder:
    """Makes runs of one schema in ``folder`` (which its maker removes), in ``storage``."""

    def __init__(self, folder: str, schema: Any,
                 compression: Optional[str] = SPILL_COMPRESSION,
                 storage: SpillStorage = LOCAL) -> None:
        self.folder = folder
        self.schema = schema
        self.compression = compression
        self.storage = storage
        self._names = itertools.count()

    def new_run(self) -> SpillRun:
        return SpillRun(run_location(self.folder, next(self._names)), self.schema,
                        self.compression, self.storage)


def run_location(folder: str, number: int) -> str:
    """The location of run ``number`` in ``folder`` (a local path or a URI)."""
    return f"{folder.rstrip('/')}/run-{number:06d}.arrows"
