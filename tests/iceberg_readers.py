"""Helpers for the Iceberg tests: merge-on-read tables made by hand, and DuckDB's
``iceberg_scan`` as a reader independent of PyIceberg and of zorder.

PyIceberg 0.12's ``table.delete`` rewrites files (copy-on-write), so a table with position
deletes is made here: a Parquet file of ``file_path`` and ``pos`` per data file (or one
for several), added in a delete manifest by a snapshot producer.

DuckDB runs offline from PyPI's ``duckdb``, ``duckdb-ext``, ``duckdb-ext-avro`` and
``duckdb-ext-iceberg`` (the ``test`` extra); ``duckdb_available()`` says whether they
are installed, for a skip.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence

#: Iceberg's field ids of a position delete file's columns.
FILE_PATH_ID = 2147483546
POS_ID = 2147483545


def _delete_data_file(table: Any, rows: Mapping[str, Sequence[int]], like: Any) -> Any:
    """Write one position delete file of ``rows`` ({data file path: positions}) in the
    partition of the data file ``like``; returns its DataFile."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    paths = sorted(rows)
    file_paths: List[str] = []
    positions: List[int] = []
    for p in paths:
        for pos in sorted(set(rows[p])):
            file_paths.append(p)
            positions.append(pos)
    schema = pa.schema([
        pa.field("file_path", pa.string(), nullable=False,
                 metadata={b"PARQUET:field_id": str(FILE_PATH_ID).encode()}),
        pa.field("pos", pa.int64(), nullable=False,
                 metadata={b"PARQUET:field_id": str(POS_ID).encode()}),
    ])
    location = table.location_provider().new_data_location(
        f"deletes-{uuid.uuid4()}.parquet")
    with table.io.new_output(location).create() as out:
        pq.write_table(pa.table([file_paths, positions], schema=schema), out)
    size = len(table.io.new_input(location))
    made = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=location,
        file_format=FileFormat.PARQUET, partition=like.partition,
        record_count=len(positions), file_size_in_bytes=size,
        lower_bounds={FILE_PATH_ID: paths[0].encode()},
        upper_bounds={FILE_PATH_ID: paths[-1].encode()},
        value_counts={FILE_PATH_ID: len(positions), POS_ID: len(positions)},
        null_value_counts={FILE_PATH_ID: 0, POS_ID: 0},
    )
    made.spec_id = like.spec_id
    return made


def add_position_deletes(table: Any, deletes: Mapping[str, Sequence[int]],
                         per_file: bool = True) -> List[Any]:
    """Commit position deletes: ``deletes`` maps data file paths (of the current
    snapshot) to row positions. One delete file per data file (its ``file_path`` bounds
    name it), or with ``per_file=False`` one per partition (its bounds span the paths, so
    a reader must read its ``file_path`` column). Returns the delete DataFiles."""
    files = {t.file.file_path: t.file for t in table.scan().plan_files()}
    if per_file:
        made = [_delete_data_file(table, {p: pos}, files[p]) for p, pos in deletes.items()]
    else:
        by_partition: Dict[Any, Dict[str, Sequence[int]]] = {}
        for p, pos in deletes.items():
            key = (files[p].spec_id, tuple(files[p].partition))
            by_partition.setdefault(key, {})[p] = pos
        made = [_delete_data_file(table, part, files[next(iter(part))])
                for part in by_partition.values()]
    add_delete_files(table, made)
    return made


def add_delete_files(table: Any, delete_files: Sequence[Any]) -> None:
    """Commit delete files (DataFiles of delete content, already written) in one delete
    manifest per partition spec."""
    from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus
    from pyiceberg.table import Transaction
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    from zorder.engines.iceberg_deletes import delete_manifest_writer_class

    writer_class = delete_manifest_writer_class()

    class AddDeletes(_FastAppendFiles):
        def _manifests(self) -> List[Any]:
            out = []
            for spec_id in sorted({f.spec_id for f in self._added_data_files}):
                with writer_class(self.spec(spec_id), self.schema(), self.new_manifest_output(),
                                  self._snapshot_id, self._compression) as writer:
                    for f in self._added_data_files:
                        if f.spec_id == spec_id:
                            writer.add(ManifestEntry.from_args(
                                status=ManifestEntryStatus.ADDED,
                                snapshot_id=self._snapshot_id, data_file=f))
                out.append(writer.to_manifest_file())
            return out + self._existing_manifests()

    txn = Transaction(table)
    producer = AddDeletes(operation=Operation.DELETE, transaction=txn, io=table.io)
    for f in delete_files:
        producer.append_data_file(f)
    txn._apply(*producer._commit())
    txn.commit_transaction()


def delete_files_of(table: Any, snapshot_id: Optional[int] = None) -> List[Any]:
    """The live delete files of a snapshot (default the current one), from its
    manifests."""
    from pyiceberg.manifest import ManifestContent

    snapshot = (table.current_snapshot() if snapshot_id is None
                else table.snapshot_by_id(snapshot_id))
    if snapshot is None:
        return []
    return [e.data_file for m in snapshot.manifests(table.io)
            if m.content == ManifestContent.DELETES
            for e in m.fetch_manifest_entry(table.io, discard_deleted=True)]


def duckdb_available() -> bool:
    """Whether DuckDB and its iceberg extension (from duckdb-ext-iceberg) load here."""
    try:
        _connection().close()
    except Exception:  # noqa: BLE001 - not installed, or no wheel for this platform
        return False
    return True


def _connection() -> Any:
    import duckdb
    import duckdb_ext

    con = duckdb_ext.init(duckdb.connect())   # the extensions of the PyPI packages, offline
    con.execute("LOAD avro")
    con.execute("LOAD iceberg")
    return con


def duckdb_rows(table: Any, columns: str = "*", snapshot_id: Optional[int] = None) -> Any:
    """The table's rows (an Arrow table) as DuckDB's ``iceberg_scan`` reads them from its
    current metadata file, deletes applied: ``columns`` is a select list."""
    con = _connection()
    try:
        query = f"SELECT {columns} FROM iceberg_scan(?"
        params: List[Any] = [table.metadata_location]
        if snapshot_id is not None:
            query += ", snapshot_from_id => ?"
            params.append(snapshot_id)
        return con.execute(query + ")", params).fetch_arrow_table()
    finally:
        con.close()
