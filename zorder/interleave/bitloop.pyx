# cython: boundscheck=False, wraparound=False, cdivision=True
"""The reference backend: Iceberg's interleave one output bit at a time.

Handles every input the front end accepts (any column count, ragged widths, any
truncated size). It is the oracle the other backends are tested against.
"""

from libc.stdint cimport uint8_t
from libc.string cimport memset

from zorder.interleave._frontend cimport interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column

from zorder.interleave._frontend import INTERLEAVE_BITS_DOC, INTERLEAVE_ROWS_DOC

name = "bitloop"


cdef void bitloop_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                       Py_ssize_t nrows, uint8_t* out,
                       Py_ssize_t out_stride) noexcept nogil:
    cdef Py_ssize_t r, c, byte_index, out_bit
    cdef Py_ssize_t total_bits = size * 8
    cdef int bit
    cdef uint8_t* row_out
    for r in range(nrows):
        row_out = out + r * out_stride
        memset(row_out, 0, size)
        out_bit = 0
        byte_index = 0
        # Source order: byte 0's bit 7 of every column, then its bit 6, ..., then byte 1.
        # A column without a byte at byte_index is skipped. The front end guarantees
        # size <= sum of widths, so the loop always ends by filling the output.
        while out_bit < total_bits:
            bit = 7
            while bit >= 0 and out_bit < total_bits:
                for c in range(ncolumns):
                    if byte_index < columns[c].width:
                        if (columns[c].data[r * columns[c].row_stride + byte_index] >> bit) & 1:
                            row_out[out_bit >> 3] |= <uint8_t>(0x80 >> (out_bit & 7))
                        out_bit += 1
                        if out_bit == total_bits:
                            break
                bit -= 1
            byte_index += 1


def interleave_bits(columns, interleaved_size=None, out=None):
    return interleave_bits_with(bitloop_rows, columns, interleaved_size, out)


def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
    return interleave_rows_with(bitloop_rows, columns, interleaved_size, out, threads)


interleave_bits.__doc__ = INTERLEAVE_BITS_DOC
interleave_rows.__doc__ = INTERLEAVE_ROWS_DOC
