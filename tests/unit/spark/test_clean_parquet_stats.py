"""The pyarrow shortcut that spares the validation job: it may only ever clear files that the
Spark check would clear, and must hand every doubtful file to that check (None)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as T

from mirrorspec.openmirroring import mirroring
from mirrorspec.landing.layout import LandingFile
from mirrorspec.spark.mirror.batch import FileSchema, clean_parquet_stats

KEYED = mirroring.TableMetadata(key_columns=("Id",))
KEYLESS = mirroring.TableMetadata()
UPSERT_DEFAULT = mirroring.TableMetadata(key_columns=("Id",), upsert_default=True)


def landing_file(tmp_path, name, table, sequence=1):
    path = tmp_path / name
    pq.write_table(table, path)
    return LandingFile(name, str(path), path.stat().st_size, 0.0, "parquet", sequence)


def schema_of(file, table, marker="__rowMarker__"):
    spark_types = {pa.int64(): T.LongType(), pa.int32(): T.IntegerType(), pa.int8(): T.ByteType(),
                   pa.string(): T.StringType(), pa.float64(): T.DoubleType()}
    fields = [T.StructField(f.name, spark_types[f.type], True) for f in table.schema
              if f.name != marker]
    has = marker in table.column_names
    return FileSchema(file, fields, marker if has else None, True,
                      marker_type=spark_types[table.schema.field(marker).type] if has else None)


def stats_for(tmp_path, metadata, *tables):
    schemas = []
    for number, table in enumerate(tables, start=1):
        file = landing_file(tmp_path, mirroring.sequence_file_name(number), table, number)
        schemas.append(schema_of(file, table))
    return clean_parquet_stats(schemas, metadata)


def changes(ids, markers, marker_type=pa.int32()):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([1] * len(ids), pa.int64()),
                     "__rowMarker__": pa.array(markers, marker_type)})


def test_clean_files_give_rows_and_keyed_counts(tmp_path):
    stats = stats_for(tmp_path, KEYED, changes([1, 2, 3], [0, 1, 2]),
                      changes([4, None], [4, 0]), changes([5], [None]))
    assert stats == {0: {"rows": 3, "keyed": 2}, 1: {"rows": 2, "keyed": 1},
                     2: {"rows": 1, "keyed": 0}}


def test_a_file_without_markers_is_all_default_inserts(tmp_path):
    table = pa.table({"id": pa.array([None, 2], pa.int64())})
    assert stats_for(tmp_path, KEYED, table) == {0: {"rows": 2, "keyed": 0}}


@pytest.mark.parametrize("metadata, table", [
    (KEYED, changes([1, 2], [0, 3])),                            # marker 3
    (KEYED, changes([1, None], [0, 1])),                         # NULL key in an update
    (KEYED, changes([None], [2])),                               # NULL key in a delete
    (KEYLESS, changes([1], [4])),                                # upsert without keyColumns
    (KEYED, changes([1], ["1"], pa.string())),                   # text marker: Spark decides
    (KEYED, changes([1], [1.0], pa.float64())),                  # fractional type: Spark decides
    (UPSERT_DEFAULT, pa.table({"id": pa.array([None], pa.int64())})),  # default 4, NULL key
    (UPSERT_DEFAULT, changes([None], [None])),                   # NULL marker → 4, NULL key
])
def test_anything_doubtful_goes_to_the_spark_check(tmp_path, metadata, table):
    assert stats_for(tmp_path, metadata, changes([9], [0]), table) is None


def test_marker_int8_and_key_case_are_handled(tmp_path):
    table = pa.table({"ID": pa.array([1, 2], pa.int64()),
                      "__rowMarker__": pa.array([2, 4], pa.int8())})
    assert stats_for(tmp_path, KEYED, table) == {0: {"rows": 2, "keyed": 2}}


def test_delimited_or_remote_files_are_never_proven(tmp_path):
    table = changes([1], [0])
    file = landing_file(tmp_path, "00000000000000000001.parquet", table)
    csv_file = LandingFile(file.name, file.path, file.size, 0.0, "csv", 1)
    remote = LandingFile(file.name, "s3a://bucket/" + file.name, file.size, 0.0, "parquet", 1)
    for other in (csv_file, remote):
        assert clean_parquet_stats([schema_of(other, table)], KEYED) is None
