"""What the downstream recipes of docs/readers.md do besides following passes (that part runs in
`make test`, after each pass of tests/spark/test_change_data_feed.py). Marked `extra`: a
recreated table (DuckDB's recipe starts over from it; the stream refuses it and runs again once
its checkpoint and silver table are removed, as the page says), and `spark-pipelines` on a
Spark of its own, as the page's first command runs it (a JVM of its own)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.support.downstream_recipes import (
    duck_rows, mirrored, pipeline_project, recipe, rows, spark_pipelines)
from tests.support.reference_model import (
    DELETE, INSERT, MARKER, UPDATE, UPSERT, LandingFile, sequence_name, write_metadata,
    write_parquet)

from mirrorspec.spark.mirror import engine

pytestmark = pytest.mark.extra

KV, T_KV = ("id", "v", MARKER), ("int64", "string", "int32")
LOAD = LandingFile(sequence_name(1), KV, ((1, "a", INSERT), (2, "b", INSERT)), T_KV)
CHANGES = LandingFile(sequence_name(2), KV, ((1, "A", UPDATE), (2, None, DELETE),
                                             (3, "c", UPSERT)), T_KV)


class Mirror:
    """One table mirrored with its change data feed, pass by pass."""

    def __init__(self, spark, root: Path):
        self.spark = spark
        self.landing, self.warehouse = str(root / "landing"), str(root / "warehouse")
        self.table = os.path.join(self.warehouse, "dbo", "orders")
        write_metadata(os.path.join(self.landing, "orders"), ["id"])

    def land_and_mirror(self, landing_file: LandingFile) -> None:
        write_parquet(landing_file, os.path.join(self.landing, "orders"))
        result = engine.mirror_landing_zone(
            self.spark, self.landing, self.warehouse,
            engine.MirrorOptions(threads=1, change_data_feed=True))
        assert [t.status for t in result.tables] == ["Replicating"], result.tables

    def recreate(self, landing_file: LandingFile) -> None:
        shutil.rmtree(os.path.join(self.landing, "orders"))
        write_metadata(os.path.join(self.landing, "orders"), ["id"])
        self.land_and_mirror(landing_file)


def test_a_recreated_table_is_started_over(spark, tmp_path):
    refresh = recipe("duckdb")["refresh"]
    refresh_silver = recipe("spark-streaming")["refresh_silver"]
    mirror = Mirror(spark, tmp_path)
    database, silver, checkpoint = (str(tmp_path / n) for n in ("silver.duckdb", "silver",
                                                                 "checkpoint"))
    for landing_file in (LOAD, CHANGES):
        mirror.land_and_mirror(landing_file)
    version = refresh(mirror.table, database, "orders", ["id"])
    refresh_silver(spark, mirror.table, silver, checkpoint, ["id"])
    mirror.recreate(LandingFile(sequence_name(1), KV, ((7, "g", INSERT), (8, "h", INSERT)),
                                T_KV))
    assert refresh(mirror.table, database, "orders", ["id"]) == 0 < version
    assert duck_rows(database) == mirrored(mirror.table) == [(7, "g", None), (8, "h", None)]
    with pytest.raises(Exception, match="(?i)different|table id|reservoir"):
        refresh_silver(spark, mirror.table, silver, checkpoint, ["id"])
    shutil.rmtree(checkpoint)
    shutil.rmtree(silver)
    refresh_silver(spark, mirror.table, silver, checkpoint, ["id"])
    assert mirrored(silver) == mirrored(mirror.table)


def test_spark_pipelines_on_its_own_spark(spark, tmp_path):
    """`spark-pipelines run` starting a Spark of its own (Spark Connect in its own JVM), Delta's
    jars on its class path, its catalog in memory: one run after both passes."""
    from mirrorspec.spark.platform import jars

    mirror = Mirror(spark, tmp_path / "mirror")
    spec = pipeline_project(tmp_path / "pipeline", mirror.table, tmp_path / "storage",
                            "default")
    classpath = os.pathsep.join(str(j) for j in jars.cached_jars() or [])
    options = ["--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
               "--conf", "spark.sql.catalog.spark_catalog="
                         "org.apache.spark.sql.delta.catalog.DeltaCatalog",
               "--conf", f"spark.sql.warehouse.dir={tmp_path / 'catalog'}",
               "--conf", "spark.ui.enabled=false"]
    for landing_file in (LOAD, CHANGES):
        mirror.land_and_mirror(landing_file)
    spark_pipelines(*options, "run", "--spec", str(spec),
                    env={"SPARK_DIST_CLASSPATH": classpath}, cwd=tmp_path)
    silver = spark.read.parquet(str(tmp_path / "catalog" / "orders_silver"))
    assert rows([r.asDict() for r in silver.collect()], ("id", "v")) == mirrored(
        mirror.table, ("id", "v")) == [(1, "A"), (3, "c")]
