"""The reads of an Iceberg rewrite: a file group's live rows (its position deletes
applied), checked against its manifests, and the rank encoding's one sampling pass over
every group's curve columns."""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from zorder.engines.iceberg_columns import curve_parts
from zorder.engines.iceberg_commit import IcebergRewriteError
from zorder.engines.iceberg_deletes import delete_positions, read_live_rows, stream_live_rows
from zorder.engines.iceberg_plan import FileGroup, group_name
from zorder.engines.iceberg_tasks import on_dask
from zorder.parquet.gather import combined_for_take
from zorder.parquet.sort import curve_columns_first, with_columns
from zorder.values.ordering import Ordering


def read_group(table_metadata: Any, io: Any, group: FileGroup,
               columns: Optional[Sequence[str]] = None,
               positions: Optional[Dict[str, Any]] = None) -> Tuple[Any, int]:
    """(every live row of every file of a group, as an Arrow table; the rows its
    position deletes removed): ``row_filter`` chose files, not rows (as in Spark), and
    deleted rows never come back. Refused unless it holds the rows the manifests count,
    less the deleted ones. ``columns``: only these top-level columns (None: all);
    ``positions``: the group's ``delete_positions``, read already."""
    schema = table_metadata.schema()
    if columns is not None:
        schema = schema.select(*columns, case_sensitive=True)
    data, deleted = read_live_rows(table_metadata, io, schema, group.tasks, positions)
    if data.num_rows != group.rows - deleted:
        raise IcebergRewriteError(
            f"read {data.num_rows} rows from {group_name(table_metadata, group)}, its "
            f"manifests say {group.rows}"
            + (f" less {deleted} deleted" if deleted else "") + "; nothing was committed")
    return data, deleted


def columns_apart(schema: Any, names: Sequence[str]) -> Optional[Tuple[List[str], List[str]]]:
    """(the curve columns ``names``, the table's other top-level columns) where a group's
    curve columns can be read before the rest, so that its rows are ordered while the
    rest is read (``read_rest``); None where they cannot (a nested or dotted name, or no
    other column)."""
    top = [field.name for field in schema.fields]
    first, others = curve_columns_first(top, names)
    if first is None or any(name not in top for name in first):
        return None
    return first, others


class GroupRead(NamedTuple):
    """What a group's write reads first (``read_first``)."""

    #: the curve columns of its live rows, or every column where they cannot be apart
    data: Any
    #: the rows its position deletes removed
    deleted: int
    #: (its other columns, its delete positions), for ``read_rest``; None: ``data`` is whole
    unread: Optional[Tuple[List[str], Dict[str, Any]]]


def read_first(table_metadata: Any, io: Any, group: FileGroup,
               names: Sequence[str]) -> GroupRead:
    """A group's curve columns ``names``, read before the rest so that its rows are
    ordered while the rest is read; the group whole where they cannot be apart (a group
    split by partition needs every column for its pieces)."""
    apart = None if group.repartition else columns_apart(table_metadata.schema(), names)
    if apart is None:
        return GroupRead(*read_group(table_metadata, io, group), None)
    positions = delete_positions(io, group.tasks)
    data, deleted = read_group(table_metadata, io, group, apart[0], positions)
    return GroupRead(data, deleted, (apart[1], positions))


def read_rest(table_metadata: Any, io: Any, group: FileGroup, curve: Any,
              others: Sequence[str], positions: Dict[str, Any]) -> Any:
    """A group's rows whole, ready for ``take_rows``: ``curve`` (its curve columns, read
    by ``read_group`` with ``positions``) joined by its ``others`` columns, read here
    with the same deletes, in the table schema's order.

    The join holds only if both reads give the same rows in the same order (PyIceberg
    reads the files in task order, each in file order): the curve column that best tells
    rows apart (``anchor_column``) is read again with the others and must match, or
    nothing is joined."""
    import pyarrow as pa

    anchor = anchor_column(curve)
    rest, _ = read_group(table_metadata, io, group, [anchor, *others], positions)
    if not same_values(curve.column(anchor), rest.column(anchor)):
        raise IcebergRewriteError(
            f"{group_name(table_metadata, group)}: two reads of its files gave different "
            f"rows (column {anchor}): were its files changed meanwhile? Nothing was "
            f"committed")
    rest = rest.drop_columns([anchor])
    # (each read's own fields: a file's promoted types come out as the whole read's)
    fields = {field.name: field for field in list(curve.schema) + list(rest.schema)}
    names = [field.name for field in table_metadata.schema().fields]
    whole = with_columns(curve, rest, pa.schema([fields[n] for n in names],
                                                metadata=curve.schema.metadata))
    del rest
    holder = [whole]
    del whole
    return combined_for_take(holder)


#: Rows of each curve column whose distinct values choose the anchor.
_ANCHOR_SAMPLE = 4096


def anchor_column(curve: Any) -> str:
    """The column of ``curve`` with the most distinct values among its first rows: the
    one whose second read shows best whether rows moved (a boolean or a constant column
    would hide a reordering of rows that share its value)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def distinct(column: Any) -> int:
        if isinstance(column.type, pa.BaseExtensionType):   # (uuid: its 16-byte storage)
            column = pa.chunked_array([c.storage for c in column.chunks],
                                      column.type.storage_type)
        try:
            return int(pc.count_distinct(column, mode="all").as_py())
        except pa.ArrowNotImplementedError:
            return 0

    head = curve.slice(0, _ANCHOR_SAMPLE)
    return max(curve.column_names, key=lambda name: distinct(head.column(name)))


def same_values(a: Any, b: Any) -> bool:
    """Whether two Arrow columns hold the same values row for row, nulls alike and NaNs
    equal to NaNs of the same bits (Arrow's ``equals`` holds a NaN unequal to itself)."""
    import pyarrow as pa

    if len(a) != len(b) or not a.type.equals(b.type):
        return False
    if pa.types.is_floating(a.type):
        bits = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[a.type.bit_width]
        a, b = (pa.chunked_array([chunk.view(bits) for chunk in c.chunks], bits)
                for c in (a, b))
    return bool(a.equals(b))


# ---------------------------------------------------------------------------------------
# The rank encoding: boundaries from one deterministic sample of every group.

def _sample_group(table_metadata: Any, io: Any, group: FileGroup, names: Sequence[str],
                  ordering: Ordering, index: int, rows: int) -> Tuple[int, List[Any]]:
    """(rows read, a sample of at most ``rows`` rows of each curve column's ordered bytes)
    of one group, reading only the curve columns; the same rows every run."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    schema = table_metadata.schema()
    projected = schema.select(*names, case_sensitive=True)
    data = ArrowScan(table_metadata, io, projected, AlwaysTrue(), True).to_table(group.tasks)
    return _sampled(data, names, schema, ordering, index, rows)


def _sampled(data: Any, names: Sequence[str], schema: Any, ordering: Ordering, index: int,
             rows: int) -> Tuple[int, List[Any]]:
    """(rows of ``data``, the ordered bytes of at most ``rows`` of them, those
    ``sample_picks`` draws for group ``index``). Only those rows are encoded: a row's
    ordered bytes are its own."""
    import numpy

    from zorder.engines.dask_stages import sample_picks

    n = data.num_rows
    pick = sample_picks(n, index, rows)
    curve = data.select(list(names))
    if pick is not None:
        curve = curve.take(pick)
    return n, [numpy.ascontiguousarray(p) for p in curve_parts(curve, names, schema, ordering)]


def _sample_group_streamed(table_metadata: Any, io: Any, group: FileGroup,
                           names: Sequence[str], ordering: Ordering, index: int,
                           rows: int) -> Tuple[int, List[Any]]:
    """``_sample_group`` for a group too large to read whole: the same rows (those
    ``sample_picks`` draws), gathered from its curve columns streamed batch by batch."""
    import numpy

    from zorder.engines.dask_stages import sample_picks

    where = group_name(table_metadata, group)
    schema = table_metadata.schema()
    positions = delete_positions(io, group.tasks)
    n = group.rows - sum(len(p) for p in positions.values())
    pick = sample_picks(n, index, rows)
    projected = schema.select(*names, case_sensitive=True)
    gathered: List[List[Any]] = []
    seen = 0
    for batch in stream_live_rows(table_metadata, io, projected, group.tasks, positions):
        m = batch.num_rows
        if pick is not None:
            lo, hi = numpy.searchsorted(pick, [seen, seen + m])
            batch = batch.take(pick[lo:hi] - seen) if hi > lo else None
        if batch is not None:
            gathered.append(curve_parts(batch, names, schema, ordering))
        seen += m
    if seen != n:
        raise IcebergRewriteError(f"read {seen} rows from {where}, its manifests and delete "
                                  f"files say {n}; nothing was committed")
    if not gathered:
        empty = projected.as_arrow().empty_table()
        return n, [numpy.ascontiguousarray(p) for p in curve_parts(empty, names, schema,
                                                                   ordering)]
    return n, [numpy.ascontiguousarray(numpy.concatenate([g[j] for g in gathered]))
               for j in range(len(names))]


def _sample_either(streamed: bool, *call: Any) -> Tuple[int, List[Any]]:
    return (_sample_group_streamed if streamed else _sample_group)(*call)


def learn_group_boundaries(table: Any, groups: Sequence[FileGroup], names: Sequence[str],
                           ordering: Ordering, scheduler: Any,
                           streamed: Sequence[bool] = (),
                           first: Optional[GroupRead] = None) -> Ordering:
    """``ordering`` with rank boundaries learned from one pass over the groups: each
    group's share of ``DEFAULT_SAMPLE`` rows (at least 2,000), pooled with each row
    weighted by its group's size, as ``zorder cluster`` learns them from its partitions.
    A group ``streamed`` marks (one too large for the memory limit) is sampled from its
    rows streamed, the same rows. ``first``: the only group's ``read_first`` (the read its
    write takes over), sampled rather than read twice."""
    from zorder.engines.dask_stages import learn_boundaries
    from zorder.values.rank import DEFAULT_SAMPLE

    total = max(1, sum(g.rows for g in groups))
    sizes = [min(g.rows, max(2_000, math.ceil(DEFAULT_SAMPLE * g.rows / total))) for g in groups]
    calls = [(table.metadata, table.io, g, list(names), ordering, i, k)
             for i, (g, k) in enumerate(zip(groups, sizes))]
    marks = list(streamed) + [False] * (len(calls) - len(streamed))
    if first is not None:
        if len(groups) != 1 or marks[0]:
            raise ValueError("first: only for a sole group, read in memory")
        samples = [_sampled(first.data, names, table.metadata.schema(), ordering, 0, sizes[0])]
    elif scheduler is None:
        samples = [(_sample_group_streamed if big else _sample_group)(*c)
                   for c, big in zip(calls, marks)]
    else:
        samples = on_dask(scheduler, _sample_either, [(big, *c) for c, big in zip(calls, marks)])
    return learn_boundaries(ordering, [n for n, _ in samples], [p for _, p in samples], names)
