from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows

name: str
def spread_table() -> list[list[int]]: ...
