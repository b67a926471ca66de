"""The recipes of docs/readers.md "Downstream, incrementally", run as written (read from the
page) after each of several passes of a table mirrored with its change data feed: each leaves
its downstream table equal to the mirrored one after every run, picking up where it stopped.

- DuckDB over delta-rs (`load_cdf`);
- Spark Structured Streaming into a silver Delta table (checkpointed, `availableNow`), across
  a column added upstream;
- a Spark Declarative Pipelines project run by the real `spark-pipelines` command twice,
  against a Spark Connect server started in this test's JVM (the shared session), so no second
  Spark starts.

The three share the passes. Marked `extra`: a recreated table (DuckDB's recipe starts over
from it; the stream refuses it and runs again once its checkpoint and silver table are
removed, as the page says), and `spark-pipelines` on a Spark of its own, as the page's first
command runs it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from reference_model import (
    DELETE, INSERT, MARKER, UPDATE, UPSERT, LandingFile, read_delta_rs, sequence_name,
    write_metadata, write_parquet)

from mirrorspec.spark.mirror import engine

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "readers.md"
KV, T_KV = ("id", "v", MARKER), ("int64", "string", "int32")
PASSES = [
    LandingFile(sequence_name(1), KV, ((1, "a", INSERT), (2, "b", INSERT), (3, "c", INSERT),
                                       (4, "d", INSERT)), T_KV),
    LandingFile(sequence_name(2), KV, ((1, "A", UPDATE), (2, None, DELETE), (5, "e", UPSERT),
                                       (3, None, DELETE), (3, "C", INSERT), (4, None, DELETE),
                                       (40, "d", INSERT), (1, "A2", UPDATE)), T_KV),
    LandingFile(sequence_name(3), ("id", "v", "note", MARKER),
                ((1, "A3", "n1", UPDATE), (6, "f", "n6", INSERT), (5, None, None, DELETE)),
                ("int64", "string", "string", "int32")),
]


def snippet(name: str, language: str = "python") -> str:
    match = re.search(rf"<!-- downstream: {name} -->\n```{language}\n(.*?)```", DOC.read_text(),
                      re.S)
    assert match, name
    return match.group(1)


def recipe(name: str) -> dict:
    scope: dict = {}
    exec(compile(snippet(name), f"readers.md {name}", "exec", dont_inherit=True), scope)
    return scope


def rows(records, columns=("id", "v", "note")):
    return sorted(tuple(r.get(c) for c in columns) for r in records)


def mirrored(path, columns=("id", "v", "note")):
    return rows(read_delta_rs(path)[1], columns)


class Mirror:
    """One table mirrored with its change data feed, pass by pass."""

    def __init__(self, spark, root: Path):
        self.spark, self.root = spark, root
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


# --- Spark Declarative Pipelines ----------------------------------------------------------------

def pipeline_project(folder: Path, source: str, storage: Path, database: str) -> Path:
    """The page's pipeline project, its spec pointed at `source`, `storage`, `database`."""
    spec = yaml.safe_load(snippet("sdp-spec", "yaml"))
    spec.update(storage=storage.as_uri(), database=database,
                configuration={"mirrorspec.orders": source})
    (folder / "transformations").mkdir(parents=True)
    (folder / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    (folder / "transformations" / "orders_changes.py").write_text(snippet("sdp-python"))
    (folder / "transformations" / "orders_silver.sql").write_text(snippet("sdp-sql", "sql"))
    return folder / "spark-pipeline.yml"


def spark_pipelines(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The `spark-pipelines` command pyspark installs beside this Python."""
    command = Path(sys.executable).parent / "spark-pipelines"
    environ = {**os.environ, **(env or {}), "PYSPARK_PYTHON": sys.executable,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([str(command), *args], capture_output=True, text=True, env=environ,
                          timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "Run is COMPLETED" in done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def connect_server(spark):
    """A Spark Connect server in the shared session's JVM (it has Delta), on a free port."""
    jvm, context = spark._jvm, spark.sparkContext._jsc.sc()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    context.conf().set("spark.connect.grpc.binding.address", "127.0.0.1")
    context.conf().set("spark.connect.grpc.binding.port", str(port))
    service = jvm.org.apache.spark.sql.connect.service.SparkConnectService
    service.start(context)
    yield f"sc://127.0.0.1:{port}"
    none = jvm.scala.Option.apply(None)
    service.stop(none, none)


def duck_rows(database: str) -> list:
    import duckdb

    con = duckdb.connect(database)
    try:
        found = con.sql("SELECT * FROM orders")
        return rows([dict(zip(found.columns, r)) for r in found.fetchall()])
    finally:
        con.close()


@pytest.fixture(scope="module")
def downstream(spark, tmp_path_factory, connect_server):
    """Three passes of one mirrored table; after each, the DuckDB recipe and the streaming
    recipe run, and after the first and the last the pipeline project: what each left, beside
    the mirrored table's rows, per pass."""
    root = tmp_path_factory.mktemp("downstream")
    refresh = recipe("duckdb")["refresh"]
    refresh_silver = recipe("spark-streaming")["refresh_silver"]
    mirror = Mirror(spark, root / "mirror")
    database, silver, checkpoint = (str(root / n) for n in ("silver.duckdb", "silver",
                                                            "checkpoint"))
    catalog = f"downstream_{os.getpid()}"
    spark.sql(f"CREATE DATABASE {catalog} LOCATION '{(root / 'catalog').as_uri()}'")
    spec = pipeline_project(root / "pipeline", mirror.table, root / "storage", catalog)
    seen: list[dict] = []
    columns = ["id", "v", "_change_type", "_commit_version"]
    try:
        for number, landing_file in enumerate(PASSES, start=1):
            mirror.land_and_mirror(landing_file)
            found = {"mirrored": mirrored(mirror.table),
                     "version": refresh(mirror.table, database, "orders", ["id"]),
                     "again": refresh(mirror.table, database, "orders", ["id"]),
                     "duckdb": duck_rows(database)}
            refresh_silver(spark, mirror.table, silver, checkpoint, ["id"])
            found["streaming"] = mirrored(silver)
            if number in (1, len(PASSES)):
                spark_pipelines("--remote", connect_server, "run", "--spec", str(spec))
                for table in ("orders_silver", "orders_changes"):  # written through Connect
                    spark.catalog.refreshTable(f"{catalog}.{table}")
                pipeline = spark.read.table(f"{catalog}.orders_silver").collect()
                found["pipeline"] = rows([r.asDict() for r in pipeline], ("id", "v"))
                found["pipeline_changes"] = sorted(tuple(r) for r in spark.read.table(
                    f"{catalog}.orders_changes").select(*columns).collect())
                found["feed"] = sorted(tuple(r) for r in spark.read.format("delta").option(
                    "readChangeFeed", "true").option("startingVersion", 0).load(
                    mirror.table).select(*columns).collect())
            seen.append(found)
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {catalog} CASCADE")
    return seen


def test_duckdb_over_delta_rs_follows_every_pass(downstream):
    for number, found in enumerate(downstream, start=1):
        assert found["duckdb"] == found["mirrored"], f"after pass {number}"
        assert found["version"] == found["again"]  # nothing new: nothing done


def test_structured_streaming_follows_every_pass(downstream):
    # pass 3 added a column upstream: the stream stopped once, started again and carried it
    for number, found in enumerate(downstream, start=1):
        assert found["streaming"] == found["mirrored"], f"after pass {number}"
    assert any(note is not None for _id, _v, note in downstream[-1]["streaming"])


def test_spark_pipelines_streaming_table_reads_the_feed(downstream):
    first, last = downstream[0], downstream[-1]
    for found in (first, last):
        assert found["pipeline"] == [(i, v) for i, v, _note in found["mirrored"]]
        # the streaming table holds every change row once: the second run read only the rest
        assert found["pipeline_changes"] == found["feed"]
    assert len(last["feed"]) > len(first["feed"])


@pytest.mark.extra
def test_a_recreated_table_is_started_over(spark, tmp_path):
    """The recipes after a reseed: DuckDB's starts over from the new table (its id changed);
    the stream refuses it and runs again once its checkpoint and silver table are removed."""
    refresh = recipe("duckdb")["refresh"]
    refresh_silver = recipe("spark-streaming")["refresh_silver"]
    mirror = Mirror(spark, tmp_path)
    database, silver, checkpoint = (str(tmp_path / n) for n in ("silver.duckdb", "silver",
                                                                 "checkpoint"))
    for landing_file in PASSES[:2]:
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


@pytest.mark.extra
def test_spark_pipelines_on_its_own_spark(spark, tmp_path):
    """The page's standalone command: `spark-pipelines` starts a Spark of its own, Delta's
    jars on its class path; a Hive catalog (Derby, in the pipeline's folder) keeps the tables
    for the second run."""
    from mirrorspec.spark.platform import jars

    mirror = Mirror(spark, tmp_path / "mirror")
    spec = pipeline_project(tmp_path / "pipeline", mirror.table, tmp_path / "storage",
                            "downstream")
    classpath = os.pathsep.join(str(j) for j in jars.cached_jars() or [])
    options = ["--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
               "--conf", "spark.sql.catalog.spark_catalog="
                         "org.apache.spark.sql.delta.catalog.DeltaCatalog",
               "--conf", "spark.sql.catalogImplementation=hive",
               "--conf", f"spark.sql.warehouse.dir={tmp_path / 'catalog'}",
               "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={tmp_path}",
               "--conf", "spark.ui.enabled=false"]
    for landing_files in (PASSES[:1], PASSES[1:]):
        for landing_file in landing_files:
            mirror.land_and_mirror(landing_file)
        spark_pipelines(*options, "run", "--spec", str(spec),
                        env={"SPARK_DIST_CLASSPATH": classpath})
    silver = spark.read.format("delta").load(str(tmp_path / "catalog" / "downstream.db" /
                                                 "orders_silver"))
    assert rows([r.asDict() for r in silver.collect()], ("id", "v")) == mirrored(
        mirror.table, ("id", "v"))
