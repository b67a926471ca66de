"""`source.options` of a debezium table: `DebeziumOptions` and `parse_options`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mirrorspec.sources.debezium.placeholders import DEFAULT as PLACEHOLDER
from mirrorspec.sources.delivery import repeats_land


@dataclass(frozen=True)
class DebeziumOptions:
    """`source.options` of a debezium table, validated."""

    key_columns: tuple[str, ...] = ()
    decimal_handling: str = "double"
    time_unit: str = "ms"
    placeholder: str = PLACEHOLDER
    table: str | None = None
    unwrapped: bool = False  # rows are ExtractNewRecordState output, even without __ fields
    repeats_land: bool = False  # keyless_repeats: land (delivery.repeats_land)


def parse_options(options: dict[str, Any] | None) -> DebeziumOptions:
    """`source.options` as DebeziumOptions. The JSON Schema (`$defs/debezium_options`) has
    checked names and values at validate time."""
    options = dict(options or {})
    keys = options.get("key_columns") or ()
    if isinstance(keys, str):
        keys = (keys,)
    return DebeziumOptions(
        key_columns=tuple(str(k) for k in keys),
        decimal_handling=str(options.get("decimal_handling", "double")),
        time_unit=str(options.get("time_unit", "ms")),
        placeholder=str(options.get("unavailable_value_placeholder", PLACEHOLDER)),
        table=str(options["table"]) if options.get("table") else None,
        unwrapped=bool(options.get("unwrapped", False)),
        repeats_land=repeats_land(options),
    )
