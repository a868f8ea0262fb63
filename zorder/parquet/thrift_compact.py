"""Thrift's compact protocol, read into a generic tree and written back: enough to edit
a Parquet footer (``FileMetaData``) field by field, without a schema for the fields
that are not edited.

A struct is a :class:`Struct`, its fields in the order read, each ``[id, type, value]``
(to write, a struct may also be given as its encoded bytes).
A list or set is ``(element type, [elements])``, a map ``(key type, value type,
[(key, value)])``; integers, doubles and binaries are Python values; a bool field's
value is its type (``TRUE`` or ``FALSE``), a bool element its byte as read. Written
back, an unedited tree gives the bytes it was read from, except that a field header in
the long form where the short one would do comes back short (the same value to every
reader). The format: Apache Thrift's doc/specs/thrift-compact-protocol.md.
"""

from __future__ import annotations

import struct as _struct
from typing import Any, List, Optional, Tuple, Union

__all__ = ["Struct", "read_struct", "write_struct", "ThriftError",
           "TRUE", "FALSE", "BYTE", "I16", "I32", "I64", "DOUBLE", "BINARY", "LIST", "SET",
           "MAP", "STRUCT"]

TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)
_INTEGERS = (I16, I32, I64)
#: deeper than any Parquet footer nests (FileMetaData > RowGroup > ColumnChunk > ...)
_MAX_DEPTH = 64


class ThriftError(ValueError):
    """Bytes that are not a compact-protocol struct (or one nested too deeply)."""


class Struct:
    """A struct's fields, in order: ``[[id, type, value], ...]``."""

    __slots__ = ("fields",)

    def __init__(self, fields: Optional[List[List[Any]]] = None) -> None:
        self.fields: List[List[Any]] = fields if fields is not None else []

    def field(self, fid: int) -> Optional[List[Any]]:
        """The field ``fid`` (``[id, type, value]``), or None if absent."""
        for f in self.fields:
            if f[0] == fid:
                return f
        return None

    def get(self, fid: int, default: Any = None) -> Any:
        """The value of field ``fid``, or ``default`` if absent."""
        f = self.field(fid)
        return default if f is None else f[2]

    def set(self, fid: int, ftype: int, value: Any) -> None:
        """Set field ``fid`` to ``value`` of ``ftype`` (added, in id order, if absent)."""
        f = self.field(fid)
        if f is not None:
            f[1], f[2] = ftype, value
            return
        at = next((k for k, g in enumerate(self.fields) if g[0] > fid), len(self.fields))
        self.fields.insert(at, [fid, ftype, value])


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: Union[bytes, memoryview]) -> None:
        self.data, self.pos = memoryview(data).cast("B"), 0   # (bytes, unsigned)

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ThriftError("compact-protocol data ends inside a value")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ThriftError("a compact-protocol varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ThriftError("compact-protocol data ends inside a value")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def value(self, vtype: int, depth: int) -> Any:
        if vtype in _INTEGERS:
            return self.zigzag()
        if vtype == BYTE or vtype in (TRUE, FALSE):   # (bools as elements: one byte)
            return self.byte()
        if vtype == DOUBLE:
            return _struct.unpack("<d", self.take(8))[0]
        if vtype == BINARY:
            return self.take(self.varint())
        if depth >= _MAX_DEPTH:
            raise ThriftError(f"compact-protocol data nested deeper than {_MAX_DEPTH}")
        if vtype in (LIST, SET):
            head = self.byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            return (etype, [self.value(etype, depth + 1) for _ in range(size)])
        if vtype == MAP:
            size = self.varint()
            if size == 0:
                return (0, 0, [])
            head = self.byte()
            ktype, etype = head >> 4, head & 0x0F
            return (ktype, etype, [(self.value(ktype, depth + 1), self.value(etype, depth + 1))
                                   for _ in range(size)])
        if vtype == STRUCT:
            return self.struct(depth + 1)
        raise ThriftError(f"compact-protocol type {vtype} is not one Thrift defines")

    def struct(self, depth: int = 0) -> Struct:
        fields: List[List[Any]] = []
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return Struct(fields)
            delta, ftype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            value = ftype if ftype in (TRUE, FALSE) else self.value(ftype, depth)
            fields.append([fid, ftype, value])
            last = fid


def read_struct(data: Union[bytes, memoryview]) -> Tuple[Struct, int]:
    """The struct at the start of ``data``, and how many bytes it took."""
    reader = _Reader(data)
    return reader.struct(), reader.pos


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63))   # (n >> 63: 0, or -1 for a negative i64)


def _value(out: bytearray, vtype: int, value: Any) -> None:
    if vtype in _INTEGERS:
        _zigzag(out, value)
    elif vtype == BYTE or vtype in (TRUE, FALSE):
        out.append(value & 0xFF)
    elif vtype == DOUBLE:
        out += _struct.pack("<d", value)
    elif vtype == BINARY:
        _varint(out, len(value))
        out += value
    elif vtype in (LIST, SET):
        etype, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | etype)
        else:
            out.append(0xF0 | etype)
            _varint(out, len(items))
        for item in items:
            _value(out, etype, item)
    elif vtype == MAP:
        ktype, etype, pairs = value
        _varint(out, len(pairs))
        if pairs:
            out.append(ktype << 4 | etype)
            for k, v in pairs:
                _value(out, ktype, k)
                _value(out, etype, v)
    elif vtype == STRUCT:
        if isinstance(value, (bytes, bytearray)):
            out += value   # (a struct already encoded)
        else:
            _write(out, value)
    else:
        raise ThriftError(f"compact-protocol type {vtype} is not one Thrift defines")


def _write(out: bytearray, s: Struct) -> None:
    last = 0
    for fid, ftype, value in s.fields:
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | ftype)
        else:
            out.append(ftype)
            _zigzag(out, fid)
        if ftype not in (TRUE, FALSE):
            _value(out, ftype, value)
        last = fid
    out.append(0)


def write_struct(s: Struct) -> bytes:
    """``s`` in the compact protocol."""
    out = bytearray()
    _write(out, s)
    return bytes(out)
