"""How the engine types a Parquet landing file's columns: the one home of the Parquet-to-Spark
type rule, JVM-free (pyarrow only, imported lazily).

Spark's Parquet reader widens unsigned integers (UINT_64 to decimal(20,0)), and the engine reads
a TIME column as a timestamp without time zone. The engine (`spark/mirror/batch.py`) turns
`engine_arrow_type` into Spark types; `lint` names them with `spark_type_name`.
"""

from __future__ import annotations

from typing import Any


def engine_arrow_type(arrow_type: Any) -> Any:
    """The Arrow type of the values the engine reads from a Parquet column of `arrow_type`:
    unsigned integers widened as Spark's Parquet reader widens them, TIME as a timestamp without
    time zone, any other type as it is."""
    import pyarrow as pa

    if pa.types.is_unsigned_integer(arrow_type):
        return {8: pa.int16(), 16: pa.int32(), 32: pa.int64(),
                64: pa.decimal128(20, 0)}[arrow_type.bit_width]
    if pa.types.is_time(arrow_type):
        return pa.timestamp(arrow_type.unit)
    return arrow_type


def spark_type_name(arrow_type: Any) -> str:
    """The Spark SQL type name the engine reads a Parquet column of `arrow_type` as."""
    import pyarrow as pa
    t = pa.types
    arrow_type = engine_arrow_type(arrow_type)
    if t.is_null(arrow_type):
        return "void"
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
    if t.is_timestamp(arrow_type):
        return "timestamp" if arrow_type.tz else "timestamp_ntz"
    if t.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    return str(arrow_type)
