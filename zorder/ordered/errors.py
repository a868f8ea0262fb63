"""Errors about a column's values, raised without knowing what the caller calls the column.

The caller adds that context (``ordered_bytes`` says "ordered_bytes: values",
``zorder_values`` says "column 'ts'") by setting ``where`` on the same exception object,
so the message is built from its parts and never re-labelled by cutting strings.
"""

from __future__ import annotations

from typing import Optional


class ColumnError(Exception):
    """Mixin: a problem with one column's values; ``str()`` is ``"{where}: {problem}"``,
    or ``"{where} {problem}"`` for a problem that reads as a sentence about the column
    ("must be 1-D ...")."""

    def __init__(self, problem: str, where: str = "ordered_bytes: values",
                 first: Optional[int] = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.where = where
        #: The row of the first bad value, when the problem is one (a chunked column's
        #: reader adds the chunk's offset).
        self.first = first

    def __str__(self) -> str:
        joint = " " if self.problem.startswith("must ") else ": "
        at = "" if self.first is None else f" (first at index {self.first})"
        return f"{self.where}{joint}{self.problem}{at}"


class ColumnTypeError(ColumnError, TypeError):
    """A column of a type Iceberg's Z-order does not take (or values of mixed types)."""


class ColumnValueError(ColumnError, ValueError):
    """A column value Iceberg's Z-order cannot represent."""
