"""Z-order clustering of a Parquet dataset on Dask: the public name of
``zorder.engines.dask`` (``from zorder.dask import cluster``), with the helpers it has
always offered beside it."""

from zorder.engines.dask import *  # noqa: F401,F403
from zorder.engines.dask import __doc__  # noqa: F401
from zorder.engines.dask import __all__ as _engine_all
from zorder.parquet.sizes import parse_size
from zorder.parquet.skipping import format_report, skipping_report
from zorder.values.codec import ZVALUE_COLUMN
from zorder.values.codec import to_words as zvalue_words

__all__ = list(_engine_all) + ["ZVALUE_COLUMN", "format_report", "parse_size",
                                "skipping_report", "zvalue_words"]
