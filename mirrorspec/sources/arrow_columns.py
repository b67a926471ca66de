"""What the column-wise parsers (`arcion_columns`, `qlik_columns`) share: the text Arrow's casts
read exactly as Python's `int()`/`float()` do, folds of boolean masks, and their output as lists.

Arrow is imported by the callers (Python workers and tests), never at module level here: this
package is on the compile path.
"""

from __future__ import annotations

from typing import Any

from mirrorspec.sources.base import ORDER_COLUMN
from mirrorspec.sources.delivery import DELIVERY_COLUMN

# Text Arrow's cast parses exactly as Python's int()/float() do (both round decimals correctly;
# a property test in test_arcion_columns checks it).
INTEGER = r"^-?[0-9]{1,18}$"
DECIMAL = r"^-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,2})?$"


def all_match(pc: Any, values: Any, pattern: str, present: int) -> bool:
    """True when each of the `present` non-NULL `values` matches `pattern`."""
    matched = pc.sum(pc.match_substring_regex(values, pattern)).as_py() or 0
    return bool(matched == present)


def all_of(pc: Any, masks: list[Any]) -> Any:
    """The element-wise AND of `masks` (at least one)."""
    result = masks[0]
    for mask in masks[1:]:
        result = pc.and_(result, mask)
    return result


def any_of(pc: Any, masks: list[Any]) -> Any:
    """The element-wise OR of `masks` (at least one)."""
    result = masks[0]
    for mask in masks[1:]:
        result = pc.or_(result, mask)
    return result


def as_lists(columns: dict[str, Any]) -> dict[str, list[Any]]:
    """A parse task's output with every column a list, as the row parsers give it (`_order` as a
    tuple, date-times naive): for callers outside Spark, such as tests."""
    import pyarrow as pa

    lists = {}
    for name, values in columns.items():
        if isinstance(values, pa.Array):
            if pa.types.is_timestamp(values.type) and values.type.tz:
                values = values.cast(pa.timestamp(values.type.unit))  # the same instants, UTC
            values = values.to_pylist()
        if name == ORDER_COLUMN:
            values = [tuple(v.values()) if isinstance(v, dict) else v for v in values]
        elif name == DELIVERY_COLUMN:  # as `Delivery.value()` gives it
            values = [tuple(tuple(x) if isinstance(x, list) else x for x in v.values())
                      if isinstance(v, dict) else v for v in values]
        lists[name] = values
    return lists


__all__ = ["DECIMAL", "INTEGER", "all_match", "all_of", "any_of", "as_lists"]
