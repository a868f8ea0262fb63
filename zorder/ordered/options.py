"""Iceberg's rewrite options, in one home: the versions whose bytes to reproduce, the
Spark timestamp type, the string contribution and the output cap.

``IcebergOptions`` is a frozen object validated once. The public functions take one
(``options=``) or keywords of the same names, not both (``IcebergOptions.of``); below
them it travels inside a ``zorder.values.ordering.Ordering``. The parsers here are what
validate each field.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Optional, Tuple, Union

import numpy

__all__ = [
    "ICEBERG_DEFAULT",
    "ICEBERG_RELEASES",
    "ICEBERG_VERSIONS",
    "IcebergOptions",
    "PRIMITIVE_BUFFER_SIZE",
    "SPARK_VERSIONS",
    "TIMESTAMP_KINDS",
]

#: Iceberg's ``ZOrderByteUtils.PRIMITIVE_BUFFER_SIZE``: bytes per number, and the default
#: contribution of a string or binary column.
PRIMITIVE_BUFFER_SIZE = 8

#: The Iceberg releases whose bytes zorder models, oldest first, by minor version (each
#: also accepted with a patch number, e.g. "1.10.1"). Add the next one when it is released.
ICEBERG_RELEASES = tuple(f"1.{minor}" for minor in range(13))

#: The default ``iceberg=``: the newest release zorder models (the last of
#: ``ICEBERG_RELEASES``), so that by default zorder gives the bytes of the Spark jobs users
#: actually run. It moves with each release; ``"main"`` (Iceberg's unreleased main branch)
#: is opt-in. One constant: every signature, docstring and flag reads it.
ICEBERG_DEFAULT = "1.12"

#: Accepted ``iceberg=`` names, each with the float formula it selects: "main" (PR 17071's
#: fix, in Iceberg main and from 1.12) or "1.11" (the old formula of 1.11 and earlier). Any
#: release number in ``ICEBERG_RELEASES`` (with or without a patch number, e.g. "1.10.1")
#: also selects its release's formula.
ICEBERG_VERSIONS = {
    "main": "main",
    "1.12": "main",
    "1.11": "1.11",
    "legacy": "1.11",
}

#: The first release with PR 17071's float fix, and with null booleans as zeros rather than
#: Spark's NullPointerException (PRs 17669 / 18077): docs/iceberg.md gives the evidence.
FIRST_FIXED_FLOAT_RELEASE = (1, 12, 0)
FIRST_NULL_BOOLEAN_RELEASE = (1, 12, 0)

#: Accepted ``spark=`` names and the DATE behaviour they select.
SPARK_VERSIONS = {
    "4": "4",
    "4.0": "4",
    "4.1": "4",
    "4.2": "4",
    "3.5": "3.5",
}

#: Accepted ``timestamp=`` values: "ntz" (TIMESTAMP_NTZ, microseconds) and "tz"
#: (TIMESTAMP with zone, whole seconds); None infers from the input.
TIMESTAMP_KINDS = ("ntz", "tz")


_RELEASE = re.compile(r"1\.(\d+)(\.\d+)?\Z")


def iceberg_mode(iceberg: Any) -> str:
    """'main' (the fixed float formula: main, 1.12 on) or '1.11' (the old one: 1.11 and
    earlier) for a user's ``iceberg=`` value; ValueError listing the valid ones."""
    if isinstance(iceberg, str):
        name = iceberg.strip().lower()
        if name in ICEBERG_VERSIONS:
            return ICEBERG_VERSIONS[name]
        match = _RELEASE.match(name)
        if match and f"1.{int(match.group(1))}" in ICEBERG_RELEASES:
            fixed = (1, int(match.group(1)), 0) >= FIRST_FIXED_FLOAT_RELEASE
            return "main" if fixed else "1.11"
    raise ValueError(
        f"iceberg must be a release, '{ICEBERG_RELEASES[-1]}' (the newest; the default is "
        f"'{ICEBERG_DEFAULT}') or an earlier one such as '1.11' or '1.9.2' ('legacy' names "
        f"1.11, the last with the old float formula), or 'main' (Iceberg's main branch); "
        f"got {iceberg!r}"
    )


def iceberg_release(iceberg: Any) -> Optional[Tuple[int, int, int]]:
    """The release an ``iceberg=`` value names, as (1, minor, patch), or None for main.
    "1.11" and "legacy" name 1.11.0; "1.10" (no patch) names 1.10.0."""
    iceberg_mode(iceberg)  # the check
    name = iceberg.strip().lower()
    if name == "main":
        return None
    match = _RELEASE.match(name)
    if match is None:  # "legacy"
        return (1, 11, 0)
    return (1, int(match.group(1)), int((match.group(2) or ".0")[1:]))


def date_mode(iceberg: Any, spark: Any) -> str:
    """'4' (days) or '3.5' (every DATE is zeros): Spark's DATE behaviour, with Iceberg
    1.10.0 on Spark 4.0, which cast DATE to BIGINT like Spark 3.5 (fixed in 1.10.1)."""
    mode = spark_mode(spark)
    if iceberg_release(iceberg) == (1, 10, 0) and str(spark).strip() in ("4", "4.0"):
        return "3.5"
    return mode


#: TIMESTAMP_NTZ in Z-order arrived in Iceberg 1.11.0 (apache/iceberg #15778).
FIRST_NTZ_RELEASE = (1, 11, 0)


def spark_mode(spark: Any) -> str:
    """'4' or '3.5' for a user's ``spark=`` value (a string, or a number such as 3.5)."""
    name = spark
    if isinstance(spark, (int, float)) and not isinstance(spark, bool):
        name = str(spark)
    if isinstance(name, str) and name.strip() in SPARK_VERSIONS:
        return SPARK_VERSIONS[name.strip()]
    raise ValueError(
        f"spark must be '4' (the default; also '4.0', '4.1', '4.2': a DATE is its days since "
        f"1970-01-01) or '3.5' (every DATE becomes 8 zero bytes); got {spark!r}"
    )


def timestamp_kind(timestamp: Any) -> Optional[str]:
    """None, 'ntz' or 'tz' for a user's ``timestamp=`` value."""
    if timestamp is None:
        return None
    if isinstance(timestamp, str) and timestamp.strip().lower() in TIMESTAMP_KINDS:
        return timestamp.strip().lower()
    raise ValueError(
        "timestamp must be None (infer: numpy datetime64 and zone-less Arrow timestamps "
        "are TIMESTAMP_NTZ, Arrow timestamps with a time zone are TIMESTAMP), 'ntz' "
        f"(microseconds since the epoch) or 'tz' (whole seconds, floored); got {timestamp!r}"
    )


#: Iceberg's lengths and sizes are Java ints.
JAVA_INT_MAX = 2**31 - 1


def check_length(length: Any, fn: str, *, default: Optional[int] = None) -> int:
    """A byte length (a Java int >= 0), or ``default`` for None; errors name ``fn``."""
    if length is None and default is not None:
        return default
    if isinstance(length, (bool, numpy.bool_)):
        raise TypeError(f"{fn}: length must be an integer, not bool")
    try:
        n = operator.index(length)
    except TypeError:
        raise TypeError(
            f"{fn}: length must be an integer, not {type(length).__name__}"
        ) from None
    if n < 0:
        raise ValueError(f"{fn}: length must be >= 0, got {n}")
    if n > JAVA_INT_MAX:
        raise ValueError(f"{fn}: length must be at most {JAVA_INT_MAX} (a Java int, as in Iceberg), got {n}")
    return n


def check_positive(value: Any, name: str) -> int:
    """A rewrite option that Iceberg requires to be a Java int > 0."""
    if isinstance(value, (bool, numpy.bool_)) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = value.__index__()
    if value <= 0:
        raise ValueError(f"{name} must be > 0 (as in Iceberg's rewrite options), got {value}")
    if value > JAVA_INT_MAX:
        raise ValueError(f"{name} must be at most {JAVA_INT_MAX} (a Java int, as in Iceberg), got {value}")
    return value


TimestampOption = Union[None, str, Mapping[Any, Optional[str]]]


@dataclass(frozen=True)
class IcebergOptions:
    """The options of Iceberg's Z-order rewrite that change the bytes, validated once.

    Attributes:
        var_length_contribution: bytes per string or binary column (Iceberg's
            ``var-length-contribution``), > 0; default 8.
        max_output_size: cap on the Z-value length in bytes (Iceberg's
            ``max-output-size``), > 0; None for no cap (Iceberg's ``Integer.MAX_VALUE``).
        iceberg: the Iceberg whose bytes to give: a release, ``"1.12"`` (the default,
            ``ICEBERG_DEFAULT``: the newest release; PR 17071's float fix, null booleans
            as zeros), ``"legacy"`` or any release number ``"1.0"`` .. ``"1.11.x"`` (the
            old float formula; a null boolean raises, as their UDF throws there), or
            ``"main"`` (Iceberg's main branch, as 1.12 today).
        spark: DATE behaviour: ``"4"`` (days since the epoch) or ``"3.5"`` (zeros).
        timestamp: None (infer from each column's type), ``"ntz"`` (TIMESTAMP_NTZ,
            microseconds) or ``"tz"`` (TIMESTAMP, whole seconds) for every timestamp
            column, or a mapping from column name (or position) to one of those.

    >>> IcebergOptions(var_length_contribution=16, iceberg="1.11").float_mode
    '1.11'
    """

    var_length_contribution: int = PRIMITIVE_BUFFER_SIZE
    max_output_size: Optional[int] = None
    iceberg: str = ICEBERG_DEFAULT
    spark: str = "4"
    timestamp: TimestampOption = field(default=None, hash=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise once, here
        set_(self, "var_length_contribution",
             check_positive(self.var_length_contribution, "var_length_contribution"))
        if self.max_output_size is not None:
            set_(self, "max_output_size", check_positive(self.max_output_size, "max_output_size"))
        iceberg_mode(self.iceberg)
        spark_mode(self.spark)
        if isinstance(self.timestamp, Mapping):
            for kind in self.timestamp.values():
                timestamp_kind(kind)
            set_(self, "timestamp", dict(self.timestamp))
        else:
            timestamp_kind(self.timestamp)

    @property
    def float_mode(self) -> str:
        """'main' (also 1.12 on) or '1.11' (and earlier): the float formula ``iceberg`` selects."""
        return iceberg_mode(self.iceberg)

    @property
    def date_mode(self) -> str:
        """'4' or '3.5': which DATE behaviour ``spark`` selects."""
        return spark_mode(self.spark)

    def as_dict(self) -> dict:
        """The options as plain keywords (for manifests and JSON); timestamp left out
        when it is None, so an old record reads back the same."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if out["timestamp"] is None:
            del out["timestamp"]
        return out

    @classmethod
    def of(cls, options: Optional["IcebergOptions"] = None, **keywords: Any) -> "IcebergOptions":
        """``options``, or the options the keywords name (a function's own keywords).

        With ``options`` given, the keywords must be left at their defaults: one call
        says its options once, and a keyword never silently loses to ``options``.
        """
        if options is None:
            return cls(**keywords)
        if not isinstance(options, IcebergOptions):
            raise TypeError(f"options must be a zorder.IcebergOptions, not {type(options).__name__}")
        default = cls()
        clash = [k for k, v in keywords.items() if v != getattr(default, k)]
        if clash:
            raise TypeError(
                f"pass either options= or the keyword {', '.join(clash)}, not both "
                f"(options already says {', '.join(f'{k}={getattr(options, k)!r}' for k in clash)})"
            )
        return options

    def replace(self, **changes: Any) -> "IcebergOptions":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)
