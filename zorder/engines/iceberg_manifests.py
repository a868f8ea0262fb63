"""The manifests of one Iceberg rewrite, each read once.

A rewrite asks the manifests at the branch's head for its plan (PyIceberg's planner),
for the snapshot that added each file (its recorded clustering), and, to commit, for the
entries of the removed files and the manifests that keep the others. A manifest file is
never changed once written, so its live entries, read once by path, answer all of them;
a manifest another writer committed meanwhile is read when first asked for. On a table
of hundreds of partitions in one manifest, those reads were most of what a rewrite of a
few partitions paid beyond their own work.

The manifests a rewrite writes hold their entries in Avro blocks of ``ENTRIES_PER_BLOCK``
(``in_blocks``), as Iceberg's Java writers cut theirs, where PyIceberg's writers put each
entry in a block of its own, compressed alone.

A manifest written again without the replaced files keeps the others' ``data_file``
records as its source held them (``EncodedEntries``, ``carry_encoded``): only each entry's
status, snapshot id and sequence numbers change, and PyIceberg's pure-Python Avro encoder
of every file's metrics was most of the cost of a commit that keeps hundreds of files.
The bytes are copied only between files of one Avro schema, so they read as written.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple


class ManifestEntries:
    """The live (ADDED and EXISTING) entries of manifests, by manifest path, each read
    at most once (as PyIceberg's ``fetch_manifest_entry`` reads them, with each entry's
    Avro bytes kept beside: ``encoded``); safe across threads. The lists are shared:
    callers read them, never change them."""

    def __init__(self, io: Any) -> None:
        self.io = io
        self._entries: Dict[str, Tuple[List[Any], Optional[EncodedEntries]]] = {}
        self._lock = threading.Lock()

    def _read(self, manifest: Any) -> Tuple[List[Any], Optional[EncodedEntries]]:
        path = manifest.manifest_path
        with self._lock:
            found = self._entries.get(path)
        if found is None:
            # (read outside the lock, so that threads read different manifests at once)
            read = read_live_entries(self.io, manifest)
            with self._lock:
                found = self._entries.setdefault(path, read)
        return found

    def live(self, manifest: Any) -> List[Any]:
        return self._read(manifest)[0]

    def encoded(self, manifest: Any) -> Optional[EncodedEntries]:
        """The Avro bytes of ``manifest``'s live entries (None: not kept for its schema)."""
        return self._read(manifest)[1]


class EncodedEntries:
    """The Avro bytes of a manifest's live entries as its file holds them (``keep``), and
    the file's Avro schema (canonical JSON); in that schema, an entry's ``data_file`` is
    its last field, after fields that are each an int or a long, or a union of one with
    null (``prefix``: where null is in each union, None for a plain number)."""

    def __init__(self, schema: str, prefix: Sequence[Optional[int]]) -> None:
        self.schema = schema
        self._prefix = list(prefix)
        self._by_file: Dict[int, Tuple[Any, bytes]] = {}

    def keep(self, entry: Any, encoded: bytes) -> None:
        self._by_file[id(entry.data_file)] = (entry.data_file, encoded)

    def data_file(self, data_file: Any) -> Optional[bytes]:
        """The Avro bytes of ``data_file``, if it is one of the entries' own objects."""
        found = self._by_file.get(id(data_file))
        if found is None or found[0] is not data_file:
            return None
        encoded = found[1]
        pos = 0
        for null in self._prefix:
            if null is not None:
                # (a union's branch, a zigzag long: 0 or 1, one byte, 0x00 or 0x02)
                branch = encoded[pos] >> 1
                pos += 1
                if branch == null:
                    continue
            while encoded[pos] & 0x80:   # (the number, a varint)
                pos += 1
            pos += 1
        return encoded[pos:]


def _entry_prefix(schema: Dict[str, Any]) -> Optional[List[Optional[int]]]:
    """``EncodedEntries``'s prefix of a manifest's Avro schema (None: another layout)."""
    fields = schema.get("fields") or []
    if not fields or fields[-1].get("name") != "data_file":
        return None
    prefix: List[Optional[int]] = []
    for field in fields[:-1]:
        kind = field.get("type")
        if kind in ("int", "long"):
            prefix.append(None)
        elif (isinstance(kind, list) and len(kind) == 2 and "null" in kind
              and kind[1 - kind.index("null")] in ("int", "long")):
            prefix.append(kind.index("null"))
        else:
            return None
    return prefix


def _canonical(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def read_live_entries(io: Any, manifest: Any) -> Tuple[List[Any], Optional[EncodedEntries]]:
    """A manifest's live entries, as PyIceberg's ``fetch_manifest_entry`` reads them
    (its reader, sequence numbers and snapshot ids inherited from the manifest), and
    their Avro bytes (None for a layout ``EncodedEntries`` does not know)."""
    from pyiceberg.avro.decoder import new_decoder
    from pyiceberg.avro.file import SYNC_SIZE, AvroFile
    from pyiceberg.manifest import (
        DEFAULT_READ_VERSION, MANIFEST_ENTRY_SCHEMAS, DataFile, DataFileContent, FileFormat,
        ManifestEntry, ManifestEntryStatus, _inherit_from_manifest)

    live: List[Any] = []
    with AvroFile[ManifestEntry](
            io.new_input(manifest.manifest_path), MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
            read_types={-1: ManifestEntry, 2: DataFile},
            read_enums={0: ManifestEntryStatus, 101: FileFormat,
                        134: DataFileContent}) as avro:
        schema = json.loads(avro.header.meta["avro.schema"])
        prefix = _entry_prefix(schema)
        encoded = None if prefix is None else EncodedEntries(_canonical(schema), prefix)
        decoder, sync, codec = avro.decoder, avro.header.sync, avro.header.compression_codec()
        read = avro.reader.read
        deleted = ManifestEntryStatus.DELETED
        first = True
        # (the Avro container's blocks, as PyIceberg's AvroFile iterates them, with each
        # entry's place in its block)
        while True:
            if not first and decoder.read(SYNC_SIZE) != sync:
                raise ValueError(f"manifest {manifest.manifest_path}: an Avro block does "
                                 f"not end with the file's sync marker")
            first = False
            try:
                count = decoder.read_int()
            except EOFError:
                break
            block = decoder.read_bytes()
            if codec is not None:
                block = codec.decompress(block)
            entries = new_decoder(block)
            for _ in range(count):
                start = entries.tell()
                entry = read(entries)
                if entry.status == deleted:
                    continue
                live.append(_inherit_from_manifest(entry, manifest))
                if encoded is not None:
                    encoded.keep(entry, block[start:entries.tell()])
    return live, encoded


def carry_encoded(writer: Any, encoded: Optional[EncodedEntries]) -> bool:
    """Make an entered PyIceberg ``ManifestWriter`` write the ``data_file`` of each entry
    it is given from ``encoded`` as its source's bytes (the entry's other fields
    encoded), when its Avro schema is the source's; returns whether it will."""
    if encoded is None:
        return False
    source = encoded   # (for the class below: not None)
    from io import BytesIO

    from pyiceberg.avro.encoder import BinaryEncoder
    from pyiceberg.utils.schema_conversion import AvroSchemaConversion

    avro = writer._writer
    schema = AvroSchemaConversion().iceberg_to_avro(avro.file_schema,
                                                    schema_name=avro.schema_name)
    if _canonical(schema) != encoded.schema:
        return False
    whole = avro.writer
    *fields, (data_file_at, _) = whole.field_writers
    # The fields before data_file (status, snapshot id, sequence numbers) as PyIceberg's
    # writers encode them, once for each distinct set: the files kept from one manifest
    # mostly share a snapshot.
    heads: Dict[Tuple[Any, ...], bytes] = {}

    def head(entry: Any) -> bytes:
        values = tuple(entry[pos] if pos is not None else None for pos, _ in fields)
        found = heads.get(values)
        if found is None:
            out = BytesIO()
            encoder = BinaryEncoder(out)
            for value, (_, field) in zip(values, fields):
                field.write(encoder, value)
            found = heads[values] = out.getvalue()
        return found

    class CarryingWriter:
        def write(self, encoder: Any, entry: Any) -> None:
            same = source.data_file(entry[data_file_at])
            if same is None:
                whole.write(encoder, entry)
                return
            encoder.write(head(entry) + same)

    avro.writer = CarryingWriter()
    return True


#: Entries per Avro block of the manifests a rewrite writes: about the 64 KB that Java's
#: Avro writers cut a block at, for entries with a few columns' metrics.
ENTRIES_PER_BLOCK = 128


def in_blocks(writer: Any) -> Any:
    """A PyIceberg ``ManifestWriter``, not yet entered, made to write its entries
    ``ENTRIES_PER_BLOCK`` to an Avro block (the rest when it closes) instead of one to a
    block: fewer, better compressed blocks, and less work per entry to write and read."""
    writer.__class__ = _in_blocks_class(type(writer))
    return writer


def _in_blocks_class(base: Any) -> type:
    # (a class made per writer: a few a commit, and none kept past its writer)
    class InBlocks(base):  # type: ignore[misc, valid-type]
        def __enter__(self) -> Any:
            entered = super().__enter__()
            avro = self._writer
            write = avro.write_block
            held: List[Any] = []

            def hold(objects: List[Any]) -> None:
                held.extend(objects)
                if len(held) >= ENTRIES_PER_BLOCK:
                    write(list(held))
                    held.clear()

            def flush() -> None:
                if held:
                    write(list(held))
                    held.clear()

            avro.write_block = hold
            self._flush_block = flush
            return entered

        def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> Any:
            if exc_type is None:
                self._flush_block()
            return super().__exit__(exc_type, exc, traceback)

    InBlocks.__name__ = InBlocks.__qualname__ = f"{base.__name__}InBlocks"
    return InBlocks


def plan_files(table_metadata: Any, entries: ManifestEntries, manifests: Any,
               row_filter: Any, case_sensitive: bool,
               entry_filter: Callable[[Any], bool]) -> List[Any]:
    """PyIceberg's ``ManifestGroupPlanner.plan_files`` (its manifest, partition and
    metrics evaluators, its delete file index), reading each manifest through
    ``entries``; without a row filter, every file's residual is ``AlwaysTrue`` (one
    evaluator for all, not one built per file), and the files kept are those its
    evaluators keep (all but the empty ones), without evaluating each file."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.expressions.visitors import UnpartitionedResidualEvaluator
    from pyiceberg.table import ManifestGroupPlanner, _min_sequence_number
    from pyiceberg.utils.concurrent import ExecutorFactory
    from pyiceberg.typedef import KeyDefaultDict

    class Planner(ManifestGroupPlanner):
        def plan_manifest_entries(self, manifests: Any) -> Iterator[List[Any]]:
            may_match = KeyDefaultDict(self._build_manifest_evaluator)
            chosen = [m for m in manifests if may_match[m.partition_spec_id](m)]
            in_partition = KeyDefaultDict(self._build_partition_evaluator)
            in_bounds = self._build_metrics_evaluator()
            everything = (isinstance(self.row_filter, AlwaysTrue)
                          and self.options.get("include_empty_files", "false") == "false")
            least = _min_sequence_number(chosen)

            def matching(manifest: Any) -> List[Any]:
                if everything:
                    # (what PyIceberg's evaluators of AlwaysTrue keep: every partition,
                    # every file but the empty ones; without a visitor built per file)
                    return [e for e in entries.live(manifest) if e.data_file.record_count != 0]
                keep = in_partition[manifest.partition_spec_id]
                return [e for e in entries.live(manifest)
                        if keep(e.data_file) and in_bounds(e.data_file)]

            # (built here, in one thread: KeyDefaultDict is no lock)
            for m in chosen:
                in_partition[m.partition_spec_id]
            return ExecutorFactory.get_or_create().map(
                matching, [m for m in chosen if self._check_sequence_number(least, m)])

        def _build_residual_evaluator(self, spec_id: int) -> Callable[[Any], Any]:
            if not isinstance(self.row_filter, AlwaysTrue):
                return super()._build_residual_evaluator(spec_id)
            # (its residual_for returns the expression as it is, keeping no state)
            everywhere = UnpartitionedResidualEvaluator(self.table_metadata.schema(),
                                                        AlwaysTrue())
            return lambda data_file: everywhere

    planner = Planner(table_metadata, entries.io, row_filter, case_sensitive)
    return list(planner.plan_files(manifests, manifest_entry_filter=entry_filter))


def rewritten_entry(entry: Any, removed_by: Any = None) -> Any:
    """``entry`` as a manifest written again lists it: EXISTING with its own snapshot and
    sequence numbers, or DELETED by snapshot ``removed_by`` (its sequence numbers kept,
    as Iceberg's manifest rewrites keep them)."""
    from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus

    return ManifestEntry.from_args(
        status=ManifestEntryStatus.EXISTING if removed_by is None else ManifestEntryStatus.DELETED,
        snapshot_id=entry.snapshot_id if removed_by is None else removed_by,
        sequence_number=entry.sequence_number,
        file_sequence_number=entry.file_sequence_number,
        data_file=entry.data_file)
