"""The generated tables match their definitions (Iceberg issue #17758): SPREAD[k][b] is b
with bit i (i = 0 its MSB) at position 8k-1-i*k; NIBBLE the same for 4-bit values."""

import zorder


def spread(value, nbits, k):
    return sum(1 << (nbits * k - 1 - i * k) for i in range(nbits) if value >> (nbits - 1 - i) & 1)


def test_spread_table():
    table = zorder.get_backend("table").spread_table()
    assert len(table) == 9 and all(len(row) == 256 for row in table)
    for k in range(1, 9):
        assert table[k] == [spread(b, 8, k) for b in range(256)]
    assert table[3][0x80] == 1 << 23 and table[8][0xFF] == 0x8080808080808080


def test_nibble_table_rebuilds_spread():
    nibble = zorder.get_backend("nibble").nibble_table()
    spread_rows = zorder.get_backend("table").spread_table()
    for k in range(1, 9):
        assert nibble[k] == [spread(h, 4, k) for h in range(16)]
        # Two lookups per byte give the byte table's word.
        assert [(nibble[k][b >> 4] << 4 * k) | nibble[k][b & 15] for b in range(256)] == spread_rows[k]
