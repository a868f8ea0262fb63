"""Z-order an Iceberg table through PyIceberg: the public name of ``zorder.engines.iceberg``
(``from zorder.iceberg import rewrite``)."""

from zorder.engines.iceberg import *  # noqa: F401,F403
from zorder.engines.iceberg import __all__, __doc__  # noqa: F401
