"""Iceberg's Z-order recipe on Spark: the public name of ``zorder.engines.spark``."""

from zorder.engines.spark import *  # noqa: F401,F403
from zorder.engines.spark import __all__, __doc__  # noqa: F401
