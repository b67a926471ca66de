"""A file's columns against the table's, as the engine extends them, and a marker cell read as
the engine reads it."""

from __future__ import annotations

from dataclasses import dataclass

from mirrorspec.landing import checks
from mirrorspec.landing.lint.findings import Finding
from mirrorspec.openmirroring import mirroring

@dataclass
class Column:
    name: str
    type: str                  # Spark SQL type name, "void" for an all-NULL column


def schema_stop(columns, marker_last, metadata, union, stop, strict,
                marker_non_integer: str | None = None) -> Finding | None:
    """The stop finding when `columns` can't extend the table's columns `union` as the
    engine would (keys, types, marker, duplicates); else None, `union` extended."""
    trial = list(union)
    reason = checks.extend_columns(
        columns, trial, metadata.key_columns, strict, marker_last,
        type_of=lambda c: c.type, is_null=lambda t: t == "void", show=str,
        retyped=lambda c, t: Column(c.name, t), marker_non_integer=marker_non_integer)
    if reason is None:
        union[:] = trial
        return None
    rule = ("metadata/key-missing" if "missing from the file" in reason else
            "content/type-change" if "changed type" in reason else
            "content/null-type" if mirroring.NULL_TYPE_TEXT in reason else
            "content/engine-column" if mirroring.ENGINE_COLUMN_TEXT in reason else
            "content/marker-type" if mirroring.MARKER_NOT_INTEGER in reason else
            "content/marker-position" if mirroring.MARKER_NOT_LAST in reason else
            "content/duplicate-column")
    return stop(rule, reason)


def marker_number(raw, default: int) -> int | None:
    """A non-integer marker cell as the engine reads it (trimmed text → number), None if invalid."""
    if raw is None:
        return default
    text = str(raw).strip()
    if text == "":
        return default
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number in mirroring.VALID_MARKERS else None


# --- the Parquet → Spark type names (how the engine's local-file reader maps them) -------------

def spark_type_name(arrow_type) -> str:
    """The Spark SQL type name the engine reads a Parquet column of `arrow_type` as."""
    import pyarrow as pa
    t = pa.types
    if t.is_null(arrow_type):
        return "void"
    if t.is_unsigned_integer(arrow_type):
        return {8: "smallint", 16: "int", 32: "bigint", 64: "decimal(20,0)"}[arrow_type.bit_width]
    if t.is_integer(arrow_type):
        return {8: "tinyint", 16: "smallint", 32: "int", 64: "bigint"}[arrow_type.bit_width]
    if t.is_boolean(arrow_type):
        return "boolean"
    if t.is_float32(arrow_type):
        return "float"
    if t.is_floating(arrow_type):
        return "double"
    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return "string"
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or \
            t.is_fixed_size_binary(arrow_type):
        return "binary"
    if t.is_date(arrow_type):
        return "date"
    if t.is_time(arrow_type):
        return "timestamp_ntz"
    if t.is_timestamp(arrow_type):
        return "timestamp" if arrow_type.tz else "timestamp_ntz"
    if t.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    return str(arrow_type)
