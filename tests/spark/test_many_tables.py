"""A pass over several tables: deletion vectors chosen by each table's size (docs/readers.md),
the table's schema and properties taken from its log, and one bad table among tables mirrored
in parallel."""

from __future__ import annotations

import os

import pytest

from tests.support.reference_model import LandingFile, sequence_name, write_metadata, write_parquet

engine = pytest.importorskip("mirrorspec.spark.mirror.engine")
delta = pytest.importorskip("mirrorspec.spark.platform.delta")
deltalake = pytest.importorskip("deltalake")

pytestmark = pytest.mark.spark

COLS, TYPES = ("id", "v", "__rowMarker__"), ("int64", "string", "int32")
LOAD = LandingFile(sequence_name(1), ("id", "v"), tuple((i, f"v{i}") for i in range(20)),
                   ("int64", "string"))
CHANGES = LandingFile(sequence_name(2), COLS, ((3, "three", 1), (4, None, 2), (60, "new", 0)),
                      TYPES)
BAD = LandingFile(sequence_name(2), COLS, ((3, "three", 1), (5, "five", 7)), TYPES)
EXPECTED = sorted([(i, f"v{i}") for i in range(20) if i not in (3, 4)] + [(3, "three"),
                                                                           (60, "new")])


def target(landing: str, warehouse: str, name: str, switch=None):
    folder = os.path.join(landing, "shop.schema", name)
    write_metadata(folder, ["id"])
    return engine.MirrorTarget(f"shop.{name}", "shop", name, folder,
                               os.path.join(warehouse, "shop", name), switch)


def rows(path: str) -> list[tuple]:
    from deltalake import QueryBuilder

    data = QueryBuilder().register("t", deltalake.DeltaTable(path)).execute(
        "SELECT id, v FROM t").read_all()
    return sorted(zip(data.column("id").to_pylist(), data.column("v").to_pylist()))


def features(path: str) -> list[str]:
    return list(deltalake.DeltaTable(path).protocol().reader_features or [])


def dv_property(path: str) -> str | None:
    return deltalake.DeltaTable(path).metadata().configuration.get(
        delta.DELETION_VECTORS_PROPERTY)


def mirror(spark, targets, warehouse, threads=1):
    return engine.mirror_tables(spark, targets, warehouse, engine.MirrorOptions(threads=threads))


def test_small_tables_get_no_deletion_vectors_until_they_grow(spark, tmp_path, monkeypatch):
    """Unset: a small table is created without vectors (its MERGE rewrites the file instead);
    the first commit that finds it at the threshold switches them on for good. A table's own
    switch wins either way."""
    landing, warehouse = str(tmp_path / "landing"), str(tmp_path / "warehouse")
    auto, forced = target(landing, warehouse, "auto"), target(landing, warehouse, "on", True)
    for landing_file in (LOAD, CHANGES):
        for t in (auto, forced):
            write_parquet(landing_file, t.landing_path)
        assert not mirror(spark, [auto, forced], warehouse).failed
    assert rows(auto.delta_path) == rows(forced.delta_path) == EXPECTED
    assert dv_property(auto.delta_path) == "false"
    assert "deletionVectors" not in features(auto.delta_path)
    assert dv_property(forced.delta_path) == "true"
    assert "deletionVectors" in features(forced.delta_path)

    monkeypatch.setattr(delta, "AUTO_DELETION_VECTORS_BYTES", 1)  # the table is "big" now
    write_parquet(LandingFile(sequence_name(3), COLS, ((5, "five", 1),), TYPES),
                  auto.landing_path)
    assert not mirror(spark, [auto], warehouse).failed
    assert dv_property(auto.delta_path) == "true"
    assert (5, "five") in rows(auto.delta_path)


def test_the_log_gives_the_schema_spark_reads(spark, tmp_path):
    """Column mapping (a name with a space) and a nested struct: the schema taken from the log
    is the one Spark's read of the table shows, so a landing file compares the same."""
    from pyspark.sql import types as T

    from mirrorspec.base.files import LocalFS
    from mirrorspec.progress.snapshot import latest_facts

    path = str(tmp_path / "mapped")
    session = spark.newSession()
    session.conf.set(delta.COLUMN_MAPPING_DEFAULT, "name")
    session.createDataFrame([(1, "a", (2, "b"))],
                            "id long, `a b` string, s struct<x: int, `y z`: string>") \
        .write.format("delta").save(path)
    facts = latest_facts(LocalFS(), path)
    assert facts is not None and facts.property(delta.COLUMN_MAPPING_PROPERTY) == "name"
    from_log = engine.plain_type(T.StructType.fromJson(facts.schema))
    assert from_log == spark.read.format("delta").load(path).schema


def test_one_bad_table_among_tables_mirrored_in_parallel(spark, tmp_path):
    """Four tables on four threads, one with a bad row marker in its second file: that table
    fails naming the file and row, with its first file applied and nothing of the bad one; the
    others commit their batches. A second pass applies nothing twice."""
    landing, warehouse = str(tmp_path / "landing"), str(tmp_path / "warehouse")
    targets = [target(landing, warehouse, name) for name in ("a", "b", "bad", "c")]
    for t in targets:
        write_parquet(LOAD, t.landing_path)
        write_parquet(BAD if t.name == "bad" else CHANGES, t.landing_path)
    first = mirror(spark, targets, warehouse, threads=4)
    assert first.failed
    by_name = {o.name: o for o in first.tables}
    assert [o.name for o in first.tables] == ["a", "b", "bad", "c"]  # the order of the targets
    bad = by_name["bad"]
    assert bad.status == "Failed" and bad.error["errorCode"] == "BadRowMarker"
    assert bad.error["file"].endswith(sequence_name(2)) and bad.error["row"] == 2
    assert bad.files_applied == [sequence_name(1)]
    assert rows(targets[2].delta_path) == sorted((i, f"v{i}") for i in range(20))
    for name in ("a", "b", "c"):
        assert by_name[name].status == "Replicating", by_name[name].error
        assert by_name[name].files_applied == [sequence_name(1), sequence_name(2)]
    versions = {t.name: deltalake.DeltaTable(t.delta_path).version() for t in targets}

    again = mirror(spark, targets, warehouse, threads=4)
    assert {o.name: o.status for o in again.tables} == {"a": "Replicating", "b": "Replicating",
                                                        "bad": "Failed", "c": "Replicating"}
    assert all(not o.files_applied for o in again.tables)
    assert {t.name: deltalake.DeltaTable(t.delta_path).version() for t in targets} == versions
    for t in targets:
        if t.name != "bad":
            assert rows(t.delta_path) == EXPECTED
