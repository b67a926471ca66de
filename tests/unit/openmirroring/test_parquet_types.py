"""The Parquet-to-Spark type rule has one home (`openmirroring/parquet_types.py`): the engine's
Spark types and lint's type names come from it and agree on every Parquet type a producer
writes (no JVM: PySpark's type mapping is pure Python)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mirrorspec.landing.lint import spark_type_name
from mirrorspec.openmirroring.parquet_types import engine_arrow_type

TYPES = [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(), pa.int8(), pa.int16(), pa.int32(),
         pa.int64(), pa.bool_(), pa.float32(), pa.float64(), pa.string(), pa.large_string(),
         pa.binary(), pa.date32(), pa.time32("ms"), pa.time64("us"), pa.time64("ns"),
         pa.timestamp("ns"), pa.timestamp("us", tz="UTC"), pa.decimal128(12, 3)]


@pytest.mark.parametrize("arrow_type", TYPES, ids=str)
def test_the_engine_and_lint_type_a_parquet_column_alike(arrow_type):
    from mirrorspec.spark.mirror.batch import _spark_type_of_arrow

    assert _spark_type_of_arrow(arrow_type).simpleString() == spark_type_name(arrow_type)


@pytest.mark.parametrize(("unsigned", "name"), [
    (pa.uint8(), "smallint"), (pa.uint16(), "int"), (pa.uint32(), "bigint"),
    (pa.uint64(), "decimal(20,0)"), (pa.time64("us"), "timestamp_ntz")])
def test_unsigned_integers_widen_and_times_read_as_timestamps(unsigned, name):
    assert spark_type_name(unsigned) == name
    assert not pa.types.is_unsigned_integer(engine_arrow_type(unsigned))
