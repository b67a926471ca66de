"""Delta's change data feed of mirrored tables, row by row against the landing files.

Every table here is mirrored pass by pass from files written by the reference model
(`tests/support/reference_model.py`), which also says what each pass's commit must record
(`feed_of_pass`: the documented rule). The feed is then read with Spark (`readChangeFeed`) and
with delta-rs (`load_cdf`, through `mirrorspec.readers.changes`), and each version's change rows
must equal the model's, as multisets; every other version (the property's own commit, ADD
COLUMNS, maintenance) must hold none. One landing zone, three passes, all tables in each pass. After each pass the downstream
recipes of docs/readers.md ("Downstream, incrementally") run as written on one of the tables
(`shop`): DuckDB over delta-rs and Spark Structured Streaming into a silver Delta table; each
must leave its downstream table equal to the mirrored one. The same zone with the Spark
Declarative Pipelines recipe too (the real `spark-pipelines` against a Spark Connect server in
this JVM) is `test_change_data_feed_pipelines.py`, an extra.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from dataclasses import replace

import pytest
from tests.support.reference_model import (
    DELETE, FEED_DELETE, FEED_INSERT, FEED_POST, FEED_PRE, INSERT, MARKER, UPDATE, UPSERT,
    LandingFile, ModelTable, feed_of_pass, multiset_diff, sequence_name, write_metadata,
    write_parquet)

from mirrorspec.base.errors import InspectError
from mirrorspec.readers.changes import read_changes
from mirrorspec.spark.mirror import engine

KV = ("id", "v", MARKER)
T_KV = ("int64", "string", "int32")


def _file(seq, rows, columns=KV, types=T_KV):
    return LandingFile(sequence_name(seq), columns, tuple(rows), types)


# the orders of an OLTP table: a load, then a pass of every kind of change, then a column added
# (`orders`) or a truncate (`vectors`; publishers expand it into a delete of every key)
LOAD = _file(1, [(1, "a", INSERT), (2, "b", INSERT), (3, "c", INSERT), (4, "d", INSERT),
                 (5, "e", INSERT), (6, "f", INSERT), (11, "k", INSERT)])
CHANGES = _file(2, [(1, "A", UPDATE), (2, None, DELETE), (99, None, DELETE),  # a missing key
                    (7, "g", UPSERT), (3, "C", UPSERT),                       # new / existing
                    (4, None, DELETE), (40, "d", INSERT),                     # a key change
                    (5, "e", UPDATE),                                         # the same values
                    (8, "h", INSERT), (9, "i", INSERT), (9, None, DELETE)])
MORE = _file(3, [(1, "A2", UPDATE),                   # the key's last change in the pass wins
                 (8, "H", UPDATE),                    # a key inserted and updated in one pass
                 (6, None, DELETE), (6, "F", INSERT),  # deleted and inserted again
                 (11, "k2", INSERT)])                 # a second row for a key (no check)
NOTE = _file(4, [(1, "A3", "n1", UPDATE), (10, "j", "n10", INSERT), (11, "k3", None, UPDATE)],
             columns=("id", "v", "note", MARKER), types=("int64", "string", "string", "int32"))
# `shop`: the table the downstream recipes of readers.md follow (one row per key)
SHOP = [_file(1, [(1, "a", INSERT), (2, "b", INSERT), (3, "c", INSERT), (4, "d", INSERT)]),
        _file(2, [(1, "A", UPDATE), (2, None, DELETE), (5, "e", UPSERT), (3, None, DELETE),
                  (3, "C", INSERT), (4, None, DELETE), (40, "d", INSERT), (1, "A2", UPDATE)]),
        _file(3, [(1, "A3", "n1", UPDATE), (6, "f", "n6", INSERT), (5, None, None, DELETE)],
              columns=("id", "v", "note", MARKER), types=("int64", "string", "string", "int32"))]
TRUNCATE_VECTORS = _file(4, [(k, DELETE) for k in (1, 3, 5, 6, 7, 8, 11, 40)],
                         columns=("id", MARKER), types=("int64", "int32"))


class Zone:
    """A landing zone and warehouse, the model of each table, and each commit's expected feed."""

    def __init__(self, root):
        self.landing, self.warehouse = str(root / "landing"), str(root / "warehouse")
        self.models: dict[str, ModelTable] = {}
        self.pending: dict[str, list[LandingFile]] = {}
        self.expected: dict[str, dict[int, Counter]] = {}   # table → version → change rows
        self.columns: dict[str, list[str]] = {}

    def table(self, name, keys=("id",)):
        folder = os.path.join(self.landing, name)
        if keys:
            write_metadata(folder, keys)
        else:
            os.makedirs(folder, exist_ok=True)
        self.models[name] = ModelTable(keys)
        self.pending[name] = []
        self.expected[name] = {}

    def land(self, name, landing_file):
        write_parquet(landing_file, os.path.join(self.landing, name))
        self.pending[name].append(landing_file)

    def mirror(self, spark, feeds, vectors=()):
        """One pass over every table; `feeds` maps a table to its change_data_feed switch."""
        targets = [replace(t, change_data_feed=feeds.get(t.name),
                           deletion_vectors=True if t.name in vectors else None)
                   for t in engine.discover_targets(self.landing, self.warehouse, spark)]
        result = engine.mirror_tables(spark, targets, self.warehouse,
                                      engine.MirrorOptions(threads=2))
        outcomes = {o.name: o for o in result.tables}
        for name, files in self.pending.items():
            outcome = outcomes[name]
            assert outcome.status == "Replicating", (name, outcome.error)
            if not files:
                continue
            assert outcome.files_applied == [f.name for f in files], name
            model = self.models[name]
            before = [dict(r) for r in model.rows]
            changes = []
            for landing_file in files:
                changes += model._validate(landing_file)
                model.apply_file(landing_file)
            self.columns[name] = list(model.columns)
            self.expected[name][outcome.delta_version] = feed_of_pass(
                model.key_columns, before, changes, model.columns)
            self.pending[name] = []
        return outcomes

    def path(self, name):
        return os.path.join(self.warehouse, "dbo", name)


def _by_version(rows, columns):
    found: dict[int, Counter] = {}
    for row in rows:
        found.setdefault(int(row["_commit_version"]), Counter())[
            (row["_change_type"], tuple(row.get(c) for c in columns))] += 1
    return found


def spark_feed(spark, zone, name, start, end=None):
    reader = spark.read.format("delta").option("readChangeFeed", "true") \
        .option("startingVersion", start)
    if end is not None:
        reader = reader.option("endingVersion", end)
    rows = reader.load(zone.path(name)).collect()
    return _by_version([r.asDict() for r in rows], zone.columns[name])


def delta_rs_feed(zone, name, start=None, end=None):
    read = read_changes(zone.path(name), name, from_version=start, to_version=end)
    return _by_version(read.data.to_pylist(), zone.columns[name]), read


def _padded(feed, width):
    """A pass's expected rows over the final columns (columns added later are NULL in them)."""
    return Counter({(kind, values + (None,) * (width - len(values))): n
                    for (kind, values), n in feed.items()})


def assert_feed(found, expected, versions, what):
    width = max((len(v) for rows in found.values() for _k, v in rows), default=0)
    for version in versions:
        want = _padded(expected.get(version, Counter()), width)
        got = found.get(version, Counter())
        assert got == want, f"{what}, version {version}:\n{multiset_diff(want, got)}"


class Downstream:
    """The downstream recipes of readers.md, run as written after each pass on `shop`: the
    DuckDB recipe, the Structured Streaming recipe and (after the first and the last pass) the
    pipeline project by the real `spark-pipelines`, against a Spark Connect server in this
    JVM, when one is given. Records, per pass, what each left beside the mirrored table's rows."""

    COLUMNS = ["id", "v", "_change_type", "_commit_version"]

    def __init__(self, spark, root, source, connect):
        from tests.support.downstream_recipes import pipeline_project, recipe

        self.spark, self.source, self.connect = spark, source, connect
        self.refresh = recipe("duckdb")["refresh"]
        self.refresh_silver = recipe("spark-streaming")["refresh_silver"]
        self.database, self.silver, self.checkpoint = (
            str(root / n) for n in ("silver.duckdb", "silver", "checkpoint"))
        self.catalog = f"downstream_{os.getpid()}"
        spark.sql(f"CREATE DATABASE {self.catalog} LOCATION '{(root / 'catalog').as_uri()}'")
        self.spec = pipeline_project(root / "pipeline", source, root / "storage", self.catalog)
        self.seen: list[dict] = []

    def after_pass(self, pipeline: bool) -> None:
        from tests.support.downstream_recipes import duck_rows, mirrored, rows, spark_pipelines

        spark = self.spark
        found = {"mirrored": mirrored(self.source),
                 "version": self.refresh(self.source, self.database, "orders", ["id"]),
                 "again": self.refresh(self.source, self.database, "orders", ["id"]),
                 "duckdb": duck_rows(self.database)}
        self.refresh_silver(spark, self.source, self.silver, self.checkpoint, ["id"])
        found["streaming"] = mirrored(self.silver)
        if pipeline and self.connect:
            spark_pipelines("--remote", self.connect, "run", "--spec", str(self.spec))
            for table in ("orders_silver", "orders_changes"):  # written through Connect
                spark.catalog.refreshTable(f"{self.catalog}.{table}")
            silver = spark.read.table(f"{self.catalog}.orders_silver").collect()
            found["pipeline"] = rows([r.asDict() for r in silver], ("id", "v"))
            found["pipeline_changes"] = sorted(tuple(r) for r in spark.read.table(
                f"{self.catalog}.orders_changes").select(*self.COLUMNS).collect())
            found["feed"] = sorted(tuple(r) for r in spark.read.format("delta").option(
                "readChangeFeed", "true").option("startingVersion", 0).load(
                self.source).select(*self.COLUMNS).collect())
        self.seen.append(found)

    def close(self) -> None:
        self.spark.sql(f"DROP DATABASE IF EXISTS {self.catalog} CASCADE")


def build_zone(spark, root, connect: str | None):
    """The landing zone mirrored in three passes, the downstream recipes after each (the
    pipeline project too when `connect`, a Spark Connect URL, is given)."""
    zone = Zone(root)
    for name in ("orders", "vectors", "late", "reseeded", "shop"):
        zone.table(name)
    zone.table("events", keys=())
    feeds = {"orders": True, "vectors": True, "late": False, "reseeded": True, "events": True,
             "shop": True}
    for name in ("orders", "vectors", "late", "reseeded"):
        zone.land(name, LOAD)
    zone.land("events", _file(1, [(1, "x", INSERT), (1, "x", INSERT)]))
    zone.land("shop", SHOP[0])
    zone.passes = [zone.mirror(spark, feeds, vectors=("vectors",))]
    zone.downstream = Downstream(spark, root / "downstream", zone.path("shop"), connect)
    zone.downstream.after_pass(pipeline=True)

    # pass 2: every kind of change in two files; `late` switched on; `reseeded`'s folder made
    # anew (a new identity): the engine drops its table and builds it again from the new files
    for name in ("orders", "vectors", "late"):
        zone.land(name, CHANGES)
        zone.land(name, MORE)
    zone.land("events", _file(2, [(2, "y", INSERT), (1, "x", INSERT)]))
    shutil.rmtree(os.path.join(zone.landing, "reseeded"))
    zone.table("reseeded")
    zone.land("reseeded", _file(1, [(21, "u", INSERT), (22, "w", INSERT)]))
    zone.land("shop", SHOP[1])
    zone.passes.append(zone.mirror(spark, {**feeds, "late": True}, vectors=("vectors",)))
    zone.downstream.after_pass(pipeline=False)

    # maintenance between passes: purge the vectors, compact, vacuum within the retention
    from mirrorspec.spark.ops.maintain import MaintainSteps, maintain_table

    zone.before_maintain = delta_rs_feed(zone, "vectors")[0]
    zone.maintained_from = zone.passes[-1]["vectors"].delta_version + 1
    maintain_table(spark, "dbo.vectors", zone.path("vectors"), True, MaintainSteps())

    # pass 3: a column added; a truncate as the publisher lands it (after the maintenance);
    # `late` switched off
    zone.land("orders", NOTE)
    zone.land("vectors", TRUNCATE_VECTORS)
    zone.land("late", NOTE)
    zone.land("shop", SHOP[2])
    zone.passes.append(zone.mirror(spark, feeds, vectors=("vectors",)))
    zone.downstream.after_pass(pipeline=True)
    return zone


@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory):
    zone = build_zone(spark, tmp_path_factory.mktemp("cdf"), None)
    yield zone
    zone.downstream.close()


@pytest.mark.parametrize("name", ["orders", "vectors", "events", "shop"])
def test_every_commit_records_exactly_the_landing_files_changes(spark, zone, name):
    latest = zone.passes[-1][name].delta_version
    versions = range(0, latest + 1)
    assert_feed(spark_feed(spark, zone, name, 0), zone.expected[name], versions,
                f"{name} read by Spark")
    found, read = delta_rs_feed(zone, name)
    assert (read.from_version, read.to_version) == (0, latest)
    assert_feed(found, zone.expected[name], versions, f"{name} read by delta-rs")
    # the commits that carry no rows (ADD COLUMNS, maintenance) are versions of their own
    assert set(zone.expected[name]) < set(versions) or name in ("events", "shop")


def test_the_documented_rows_of_each_kind_of_change(zone):
    """The rule, spelled out on `orders` (the model says the same; this is what a reader sees)."""
    row = lambda *values: values  # noqa: E731 - (id, v, note)
    passes = zone.expected["orders"]
    load, changes, column = (_padded(passes[v], 3) for v in sorted(passes))
    truncate = zone.expected["vectors"][max(zone.expected["vectors"])]
    assert set(t for t, _ in load) == {FEED_INSERT} and sum(load.values()) == 7
    assert changes[(FEED_PRE, row(1, "a", None))] == 1  # two updates in a pass: one pair,
    assert changes[(FEED_POST, row(1, "A2", None))] == 1  # the last one's values
    assert (FEED_POST, row(1, "A", None)) not in changes
    assert changes[(FEED_DELETE, row(2, "b", None))] == 1
    assert not any(values[0] == 99 for _t, values in changes)  # a missing key's delete: nothing
    assert changes[(FEED_INSERT, row(7, "g", None))] == 1  # an upsert of a new key: an insert
    assert changes[(FEED_DELETE, row(4, "d", None))] == changes[(FEED_INSERT, row(40, "d", None))] \
        == 1  # a key change: delete + insert
    assert changes[(FEED_PRE, row(5, "e", None))] == changes[(FEED_POST, row(5, "e", None))] == 1
    assert changes[(FEED_INSERT, row(8, "H", None))] == 1 and not any(
        values[0] == 9 for _t, values in changes)  # inserted and deleted in a pass: nothing
    assert changes[(FEED_DELETE, row(6, "f", None))] == changes[(FEED_INSERT, row(6, "F", None))] \
        == 1
    assert changes[(FEED_INSERT, row(11, "k2", None))] == 1
    # the added column: NULL in the pre-images, the new values in the post-images
    assert column[(FEED_PRE, row(1, "A2", None))] == 1
    assert column[(FEED_POST, row(1, "A3", "n1"))] == 1
    assert column[(FEED_PRE, row(11, "k", None))] == column[(FEED_PRE, row(11, "k2", None))] == 1
    assert column[(FEED_POST, row(11, "k3", None))] == 2  # both rows of the key replaced
    assert set(t for t, _ in truncate) == {FEED_DELETE} and sum(truncate.values()) == 9


def test_maintenance_records_no_change_and_keeps_the_feed(zone):
    found, read = delta_rs_feed(zone, "vectors")
    maintained = range(zone.maintained_from, zone.passes[2]["vectors"].delta_version)
    assert len(maintained) >= 2  # purge and optimize committed (vacuum's commits too)
    assert all(not found.get(v) for v in maintained)
    width = len(zone.columns["vectors"])
    assert {v: found[v] for v in zone.before_maintain} == {
        v: _padded(rows, width) for v, rows in zone.before_maintain.items()}


def test_a_reseeded_table_starts_a_new_feed_with_its_rows_as_inserts(spark, zone):
    assert zone.passes[1]["reseeded"].delta_version == 0
    found, _read = delta_rs_feed(zone, "reseeded")
    assert found == {0: Counter({(FEED_INSERT, (21, "u")): 1, (FEED_INSERT, (22, "w")): 1})}
    assert spark_feed(spark, zone, "reseeded", 0) == found


def test_switching_an_existing_table_on_and_off(spark, zone):
    on_pass = zone.passes[1]["late"].delta_version
    off = on_pass + 1  # pass 3's property commit (then its ADD COLUMNS, then its MERGE)
    found, read = delta_rs_feed(zone, "late", end=on_pass)
    # on: the property's own commit right before the pass's, which is the first with rows
    assert read.from_version == on_pass - 1
    assert_feed(found, zone.expected["late"], [on_pass - 1, on_pass], "late read by delta-rs")
    assert_feed(spark_feed(spark, zone, "late", on_pass - 1, on_pass), zone.expected["late"],
                [on_pass - 1, on_pass], "late read by Spark")
    with pytest.raises(InspectError, match=f"version 0 carries no change data feed; the "
                                           f"versions with one: {on_pass - 1}-{on_pass}\\n"):
        read_changes(zone.path("late"), "late", from_version=0)
    # off: from the property's commit on, nothing is recorded and reading there is refused
    with pytest.raises(InspectError, match=f"version {off} carries no change data feed"):
        read_changes(zone.path("late"), "late", from_version=on_pass)
    with pytest.raises(InspectError, match=f"version {zone.passes[2]['late'].delta_version} "
                                           "carries no change data feed; the versions with one"):
        read_changes(zone.path("late"), "late")  # the latest version has none
    from deltalake import DeltaTable

    assert DeltaTable(zone.path("late")).metadata().configuration[
        "delta.enableChangeDataFeed"] == "false"


def test_history_says_which_versions_carry_a_feed(zone):
    from mirrorspec.readers.delta import history

    late = {e.version: e.change_data_feed for e in history(zone.path("late"))}
    on_pass, last = zone.passes[1]["late"].delta_version, zone.passes[2]["late"].delta_version
    assert late == {v: on_pass - 1 <= v <= on_pass for v in range(last + 1)}
    assert all(e.change_data_feed for e in history(zone.path("orders")))


def test_the_changes_command_prints_the_feed(zone, tmp_path):
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    version = zone.passes[2]["vectors"].delta_version
    result = CliRunner().invoke(cli, ["changes", "dbo.vectors", "--warehouse", zone.warehouse,
                                      "--from-version", str(version), "--format", "json",
                                      "--limit", "3"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["total"] == 9 and doc["from_version"] == doc["to_version"] == version
    assert doc["columns"] == ["id", "v", "_change_type", "_commit_version", "_commit_timestamp"]
    assert [(r["id"], r["_change_type"]) for r in doc["rows"]] == [
        (1, "delete"), (3, "delete"), (5, "delete")]  # by version, then key
    text = CliRunner().invoke(cli, ["changes", "dbo.late", "--warehouse", zone.warehouse,
                                    "--from-version", "0"])
    assert text.exit_code == 1 and "carries no change data feed" in text.output


def test_mirror_change_data_feed_flag(spark, tmp_path):
    """`mirror --change-data-feed` on a bare landing zone, `--no-change-data-feed`, and neither
    (each table stays as it is)."""
    from click.testing import CliRunner
    from deltalake import DeltaTable

    from mirrorspec.cli import cli

    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    write_metadata(str(landing / "t"), ["id"])

    def mirror(seq, *flag):
        write_parquet(_file(seq, [(seq, "x", UPSERT)]), str(landing / "t"))
        done = CliRunner().invoke(cli, ["mirror", "--landing-zone", str(landing), "--warehouse",
                                        str(warehouse), "--master", "local[2]", *flag])
        assert done.exit_code == 0, done.output
        table = DeltaTable(str(warehouse / "dbo" / "t"))
        return table.version(), table.metadata().configuration.get("delta.enableChangeDataFeed")

    assert mirror(1, "--change-data-feed") == (0, "true")
    assert mirror(2, "--no-change-data-feed") == (2, "false")  # its property commit, then v2
    assert mirror(3) == (3, "false")
    read = read_changes(str(warehouse / "dbo" / "t"), "t", from_version=0, to_version=0)
    assert read.data.column("id").to_pylist() == [1]


# --- the downstream recipes (docs/readers.md), after each pass --------------------------------

def test_duckdb_over_delta_rs_follows_every_pass(zone):
    for number, found in enumerate(zone.downstream.seen, start=1):
        assert found["duckdb"] == found["mirrored"], f"after pass {number}"
        assert found["version"] == found["again"]  # nothing new: nothing done


def test_structured_streaming_follows_every_pass(zone):
    # pass 3 added a column upstream: the stream stopped once, started again and carried it
    for number, found in enumerate(zone.downstream.seen, start=1):
        assert found["streaming"] == found["mirrored"], f"after pass {number}"
    assert any(note is not None for _id, _v, note in zone.downstream.seen[-1]["streaming"])
