"""The MERGE source staged as Parquet beside its table: it reads back as written, it makes Spark
filter the table's side of a join with a Bloom filter of the batch's keys, the MERGE's conf is
put back afterwards, and no staged files outlive their attempt."""

from __future__ import annotations

import datetime
import decimal
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from mirrorspec.openmirroring.mirroring import sequence_file_name
from mirrorspec.spark.mirror import engine, staged_source
from mirrorspec.base import files as fsmod
from mirrorspec.spark.platform.session import session_conf

M = "__rowMarker__"


@pytest.fixture
def stage_always(monkeypatch):
    monkeypatch.setattr(staged_source, "MIN_TABLE_BYTES", 0)


def _table(spark, path, rows: int) -> str:
    (spark.range(rows).withColumnRenamed("id", "k").withColumn("v", F.col("k") * 3)
     .write.format("delta").save(str(path)))
    return str(path)


def _optimized(frame) -> str:
    # Private API, tests only: the optimized plan shows the runtime filters Spark injected.
    return frame._jdf.queryExecution().optimizedPlan().toString()


def test_a_staged_batch_reads_back_as_written(spark, tmp_path, stage_always):
    table = _table(spark, tmp_path / "t", 10)
    session = spark.newSession()  # with the legacy confs the engine's table sessions carry
    session.conf.set("spark.sql.legacy.javaCharsets", "true")
    session.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
    schema = T.StructType([
        T.StructField("order id", T.LongType()),  # a name Parquet writers may refuse
        T.StructField("a,b;c", T.StringType()),
        T.StructField("amount", T.DecimalType(12, 2)),
        T.StructField("at", T.TimestampType()),
        T.StructField("local", T.TimestampNTZType()),
        T.StructField("day", T.DateType()),
        T.StructField("raw", T.BinaryType()),
        T.StructField("tags", T.ArrayType(T.StringType())),
        T.StructField("attrs", T.MapType(T.StringType(), T.IntegerType())),
        T.StructField("nested", T.StructType([T.StructField("x y", T.IntegerType())])),
    ])
    moment = datetime.datetime(2024, 5, 1, 10, 0, 0, 123456)
    rows = [(1, "x", decimal.Decimal("1.50"), moment, moment, moment.date(), b"\x00\xff", ["a"],
             {"k": 1}, (1,)),
            (None,) * 10]  # NULL keys are appended rows: kept
    source = session.createDataFrame(rows, schema)
    staged = staged_source.stage(session, fsmod.LocalFS(), table, source, "0001-attempt")
    assert staged is not None
    assert staged.folder == os.path.join(table, "_mirrorspec", "merge-source", "0001-attempt")
    assert [(f.name, f.dataType) for f in staged.frame.schema.fields] == \
        [(f.name, f.dataType) for f in schema.fields]
    assert sorted(staged.frame.collect(), key=str) == sorted(source.collect(), key=str)
    staged_source.remove(fsmod.LocalFS(), staged)
    assert not os.path.exists(staged.folder)


def test_spark_filters_the_tables_side_of_a_join_with_the_batchs_keys(spark, tmp_path,
                                                                      stage_always):
    """Delta's MERGE writes `source LEFT OUTER JOIN target`: with the staged source Spark adds a
    Bloom filter of the source's keys to the target's scan, so only matching rows are shuffled.
    Read from anything else (here Delta's kind of source: no filter over a scan) it doesn't."""
    table_path = _table(spark, tmp_path / "t", 200_000)
    source = spark.range(0, 2_000_000, 1000).withColumnRenamed("id", "k").withColumn("w", F.lit(1))
    staged = staged_source.stage(spark, fsmod.LocalFS(), table_path, source, "0002-attempt")
    assert staged is not None
    target = spark.read.format("delta").load(table_path)
    target_key = target._jdf.queryExecution().analyzed().output().apply(0).toString()  # k#12L
    assert target_key.startswith("k#")
    with session_conf(spark, staged.conf):
        plan = _optimized(staged.frame.join(target, "k", "left_outer"))
        unstaged = _optimized(source.join(target, "k", "left_outer"))
    assert "might_contain(scalar-subquery" in plan
    assert f"xxhash64({target_key}, 42)" in plan  # the filter is on the table's key …
    assert "might_contain" not in unstaged        # … and only because the batch was staged


def test_a_batch_that_fails_to_stage_raises_its_error_and_leaves_nothing(spark, tmp_path,
                                                                         stage_always):
    table = _table(spark, tmp_path / "t", 10)
    broken = spark.range(5).withColumn("v", F.when(F.col("id") == 3, F.raise_error(
        F.lit("row 3 of a landing file is unreadable"))).otherwise(F.lit("ok")))
    with pytest.raises(Exception, match="row 3 of a landing file is unreadable"):
        staged_source.stage(spark, fsmod.LocalFS(), table, broken, "0003-attempt")
    assert not os.path.exists(os.path.join(table, staged_source.FOLDER, "0003-attempt"))


def test_the_merge_conf_is_put_back_after_the_block(spark):
    key = "spark.sql.autoBroadcastJoinThreshold"
    spark.conf.set(key, "12345")
    try:
        with session_conf(spark, staged_source.merge_conf(1000)):
            assert spark.conf.get(key) == "-1"
            assert spark.conf.get("spark.databricks.delta.merge.materializeSource") == "none"
        assert spark.conf.get(key) == "12345"  # the profile's value, not Spark's default
        assert spark.conf.get("spark.databricks.delta.merge.materializeSource", None) in (
            None, "auto")
    finally:
        spark.conf.unset(key)


def test_a_small_table_or_a_void_column_is_not_staged(spark, tmp_path):
    table = _table(spark, tmp_path / "t", 10)
    source = spark.range(3)
    assert staged_source.stage(spark, fsmod.LocalFS(), table, source, "a") is None  # < 64 MiB
    void = spark.range(3).withColumn("n", F.lit(None))
    assert isinstance(void.schema["n"].dataType, T.NullType)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(staged_source, "MIN_TABLE_BYTES", 0)
        assert staged_source.stage(spark, fsmod.LocalFS(), table, void, "b") is None
    assert not os.path.exists(os.path.join(table, "_mirrorspec"))


def test_only_staged_folders_older_than_an_hour_are_cleared(tmp_path):
    root = tmp_path / "t" / "_mirrorspec" / "merge-source"
    old, young = root / "0001-crashed", root / "0002-running"
    for folder in (old, young):
        folder.mkdir(parents=True)
        (folder / "part-0.parquet").write_bytes(b"x")
    now = time.time()
    os.utime(old, (now - 2 * staged_source.STALE_SECONDS,) * 2)
    removed = staged_source.remove_stale(fsmod.LocalFS(), str(tmp_path / "t"), now=now)
    assert removed == [str(old)]
    assert not old.exists() and young.exists()
    assert staged_source.remove_stale(fsmod.LocalFS(), str(tmp_path / "nothing")) == []


def _two_passes(spark, root, monkeypatch, min_table_bytes: int):
    """An initial load, a crashed attempt's old staging folder, then a MERGE pass: (rows, the
    pass's row counts, the staging folders left)."""
    monkeypatch.setattr(staged_source, "MIN_TABLE_BYTES", min_table_bytes)
    landing, warehouse = root / "landing", root / "warehouse"
    folder = landing / "t"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    pq.write_table(pa.table({"id": list(range(100)), "v": [f"v{i}" for i in range(100)],
                             M: [0] * 100}), folder / sequence_file_name(1))
    assert not engine.mirror_landing_zone(spark, str(landing), str(warehouse)).failed
    table = warehouse / "dbo" / "t"
    crashed = table / "_mirrorspec" / "merge-source" / "00000000000000000001-crashed"
    crashed.mkdir(parents=True)
    os.utime(crashed, (time.time() - 2 * staged_source.STALE_SECONDS,) * 2)
    # an update, a delete and re-insert, a duplicate insert of a present key, an insert
    pq.write_table(pa.table({"id": [5, 6, 6, 7, 100], "v": ["u", None, "back", "dup", "n"],
                             M: [1, 2, 0, 0, 0]}), folder / sequence_file_name(2))
    result = engine.mirror_landing_zone(spark, str(landing), str(warehouse))
    assert not result.failed
    rows = sorted((r["id"], r["v"]) for r in spark.read.format("delta").load(str(table)).collect())
    t = result.tables[0]
    return rows, (t.rows_inserted, t.rows_updated, t.rows_deleted), \
        sorted(os.listdir(table / "_mirrorspec" / "merge-source"))


def test_a_mirror_pass_through_a_staged_source_is_exact_and_leaves_no_files(spark, tmp_path,
                                                                           monkeypatch):
    staged = _two_passes(spark, tmp_path / "staged", monkeypatch, 0)
    direct = _two_passes(spark, tmp_path / "direct", monkeypatch, 2**62)
    expected = sorted([(i, f"v{i}") for i in range(100) if i not in (5, 6)]
                      + [(5, "u"), (6, "back"), (7, "dup"), (100, "n")])
    assert staged[0] == expected
    assert staged[:2] == direct[:2]  # the same rows and the same inserted/updated/deleted
    # neither its own staged batch nor the crashed attempt's remains (any MERGE clears those)
    assert staged[2] == direct[2] == []
