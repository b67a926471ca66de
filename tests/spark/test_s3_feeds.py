"""Feeds, landing zone and warehouse on s3a://, against a real S3-API server (moto's server mode).

The filesystem layer is checked in-process (the shared session has hadoop-aws on its class path
when `make` cached it); the end-to-end test runs `mirrorspec run` as a subprocess (its own JVM)
on an Arcion feed on S3 → landing zone on S3 → Delta on S3, SIGKILLs it after a Delta commit and
before a publisher rename, reruns, and checks every change landed and was applied exactly once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.s3_server import SECRET_KEY, S3Server, environ_without_aws
from tests.support.mirror_cli import SHORT_JVM_OPTIONS

pytestmark = pytest.mark.s3

REPO = Path(__file__).resolve().parents[2]
ARCION = REPO / "projects" / "arcion"


def test_filesystem_layer_lists_reads_and_moves_on_s3a(s3_spark, s3):
    from mirrorspec.spark.platform import hadoop_fs as fs

    b = s3.bucket("layer")
    client = s3.client()
    for key in ("feed/a.csv", "feed/sub/b.csv", "feed/_tmp/c.csv", "feed/.hidden.csv",
                "feed/sub/_part.csv", "feed/sub/.d/e.csv", "other/x.csv"):
        client.put_object(Bucket=b, Key=key, Body=key.encode())
    root = f"s3a://{b}"

    assert fs.list_feed_files(f"{root}/feed", s3_spark) == [f"{root}/feed/a.csv",
                                                            f"{root}/feed/sub/b.csv"]
    assert fs.list_feed_files(f"{root}/feed/", s3_spark) == [f"{root}/feed/a.csv",
                                                             f"{root}/feed/sub/b.csv"]
    assert fs.list_feed_files(f"{root}/feed/*.csv", s3_spark) == [f"{root}/feed/a.csv"]
    assert fs.list_feed_files(f"{root}/feed/sub/b.csv", s3_spark) == [f"{root}/feed/sub/b.csv"]
    assert fs.list_feed_files(f"{root}/missing", s3_spark) == []

    files = fs.files_for(s3_spark)
    state = f"{root}/state/publish/t.json"
    assert files.read_text(state) is None
    files.write_text(state, '{"version": 1}\n')
    assert files.read_text(state) == '{"version": 1}\n'
    assert files.read_bytes(f"{root}/feed/a.csv") == b"feed/a.csv"
    files.rename(state, f"{root}/state/publish/u.json")
    assert files.names(f"{root}/state/publish") == ["u.json"]
    files.delete(f"{root}/state")
    assert not files.exists(f"{root}/state/publish/u.json")
    assert files.names(f"{root}/state") == []


def _plan(root: Path, source_type: str, feed: str, columns, keys=()):
    from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan

    table = TablePlan(unique_id="dbo.t", name="t", schema=None, warehouse_schema="dbo",
                      landing_path=str(root / "lz" / "t"), delta_path=str(root / "wh" / "dbo" / "t"),
                      metadata={"keyColumns": list(keys)} if keys else {}, key_columns=list(keys),
                      columns=[ColumnSpec(c.name, c.data_type) for c in columns],
                      source=SourceSpec(source_type, feed, {}))
    plan = Plan(1, "p", "1", "p", "dev", str(root / "lz"), str(root / "wh"),
                str(root / "wh" / "_mirrorspec"), SparkSpec(), None, [table])
    return table, plan


def qlik_orders_feed(folder: Path) -> None:
    """A Qlik feed as Replicate writes files (a full load, then changes), of full rows: the
    remote read is under test here, not partial-row completion (tests/spark/test_publish.py)."""
    from qlik_messages import order_messages, orders_metadata

    folder.mkdir()
    load = [m for _, m in order_messages(0, 1, refresh=4)]
    (folder / "LOAD00000001.json").write_text("\n".join([orders_metadata(), *load]) + "\n")
    changes = [m for _, m in order_messages(6, 1, per_txn=2, first_seq=10, first_id=5)]
    (folder / "CDC00000002.json").write_text("\n".join(changes) + "\n")


@pytest.mark.parametrize("source_type, fixture, keys", [
    ("qlik_replicate", None, ()),  # parsed in Python workers from shipped bytes
    ("debezium", "debezium/postgres", ("id",)),  # read with spark.read.text
])
def test_a_feed_on_s3_lands_the_same_file_as_the_same_feed_on_disk(s3_spark, s3, tmp_path,
                                                                  monkeypatch, source_type,
                                                                  fixture, keys):
    import gzip

    import pyarrow.parquet as pq

    from mirrorspec.sources import infer_schema, qlik_messages
    from mirrorspec.spark.publish.publisher import publish_table

    monkeypatch.setattr(qlik_messages, "CHUNK_BYTES", 300)  # several byte ranges per file
    local = tmp_path / "feed"
    if fixture is None:
        qlik_orders_feed(local)
    else:
        shutil.copytree(REPO / "tests" / "fixtures" / fixture, local)
    last = sorted(local.iterdir())[-1]  # one gzip file: shipped whole, unpacked by the worker
    last.with_name(last.name + ".gz").write_bytes(gzip.compress(last.read_bytes()))
    last.unlink()
    b = s3.bucket(source_type.replace("_", "-"))
    s3.upload_tree(local, b, "feed")

    # what compile infers from the local copy (a URI feed's columns are declared in the YAML)
    columns = (infer_schema(source_type, str(local), {}) or None).columns
    landed = []
    for name, feed in (("disk", str(local)), ("s3", f"s3a://{b}/feed")):
        table, plan = _plan(tmp_path / name, source_type, feed, columns, keys)
        result = publish_table(s3_spark, table, plan)
        assert result.status == "Published", result.error
        assert len(result.files_written) == 1
        landed.append(pq.read_table(result.files_written[0]))
    assert landed[0].num_rows > 3
    assert landed[1].equals(landed[0])


def _cli(project: Path, s3: S3Server, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(environ_without_aws(), **s3.secret_env(), MIRRORSPEC_SPARK_LOG_LEVEL="ERROR",
               COLUMNS="200")
    env.pop("MIRRORSPEC_CRASH_AT", None)
    if crash_at:
        env["MIRRORSPEC_CRASH_AT"] = crash_at
        env["MIRRORSPEC_CRASH_TABLE"] = "tpch.region"
    script = Path(sys.executable).parent / "mirrorspec"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "mirrorspec"]
    return subprocess.run([*base, "run", "--project-dir", str(project)], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900)


def _project(tmp_path: Path, s3: S3Server, feeds: str, lake: str) -> Path:
    """projects/arcion with its feed, landing zone and warehouse on the S3 server."""
    project = tmp_path / "arcion"
    shutil.copytree(ARCION, project, ignore=shutil.ignore_patterns(
        "feed", "target", "landing_zone", "warehouse", "logs"))
    conf = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
            "spark.driver.extraJavaOptions": SHORT_JVM_OPTIONS,
            **s3.spark_conf()}
    (project / "profiles.yml").write_text(yaml.safe_dump({"arcion": {
        "target": "dev", "outputs": {"dev": {
            "landing_zone": f"s3a://{lake}/landing", "warehouse": f"s3a://{lake}/warehouse",
            "spark": {"master": "local[1]", "conf": conf}}}}}))
    tables = project / "tables" / "tpch.yml"
    text = tables.read_text().replace("path: feed/", f"path: s3a://{feeds}/arcion/")
    text += ("  - name: orders\n    schema: tpch\n    key_columns: [o_orderkey]\n"
             "    columns: [{name: o_orderkey, type: Int32}, {name: o_status, type: String}]\n"
             f"    source: {{type: arcion, path: 's3a://{feeds}/arcion/orders'}}\n")
    tables.write_text(text)
    return project


def _rows(spark, path: str, *columns: str) -> list[tuple]:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # tables change between reads
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


@pytest.mark.extra  # a slow end-to-end extra (70 s): `make test-extras`
def test_arcion_feed_on_s3_to_landing_zone_and_delta_on_s3_crash_and_rerun(s3_spark, s3,
                                                                           tmp_path):
    feeds, lake = s3.bucket("feeds"), s3.bucket("lake")
    client = s3.client()
    feed = ARCION / "feed"

    def upload(relative: str, body: bytes | None = None) -> None:
        data = (feed / relative).read_bytes() if body is None else body
        client.put_object(Bucket=feeds, Key=f"arcion/{relative}", Body=data)

    for name in ("region/region_0_snapshot.csv", "region/region_1.csv",
                 "nation/nation_0_snapshot.json", "nation/nation_1_realtime.json"):
        upload(name)
    # temporary and hidden names are never read (they would fail the table if they were)
    upload("region/_tmp/region_9.csv", b"not,arcion\n")
    upload("region/.region_8.csv.crc", b"\x00\x01")
    project = _project(tmp_path, s3, feeds, lake)
    region = f"s3a://{lake}/warehouse/tpch/region"
    nation = f"s3a://{lake}/warehouse/tpch/nation"

    # 1. killed right after region's Delta commit, before its landing files were moved
    first = _cli(project, s3, crash_at="after_commit")
    assert first.returncode == -9, first.stdout + first.stderr
    assert s3.keys(lake, "warehouse/tpch/region/_delta_log/0") == [
        "warehouse/tpch/region/_delta_log/00000000000000000000.crc",
        "warehouse/tpch/region/_delta_log/00000000000000000000.json"]

    # 2. one more feed file; killed after the publisher wrote it, before the rename
    upload("region/region_2.csv")
    second = _cli(project, s3, crash_at="before_publish_rename")
    assert second.returncode == -9, second.stdout + second.stderr
    landing = "landing/tpch.schema/region/"
    assert any(k.startswith(f"{landing}_publishing_00000000000000000002/")
               for k in s3.keys(lake, landing))
    assert f"{landing}00000000000000000002.parquet" not in s3.keys(lake, landing)
    state = json.loads(client.get_object(
        Bucket=lake, Key="warehouse/_mirrorspec/publish/tpch.region.json")["Body"].read())
    assert state["pending"]["files"] == [f"s3a://{feeds}/arcion/region/region_2.csv"]
    # the first run's commit was not repeated: the rerun found it (Delta txn) and went on
    assert _rows(s3_spark, region, "r_regionkey", "r_name", "r_comment") == [
        (0, "AFRICA", "lar deposits. blithely final packages"),
        (1, "AMERICA", "hs use ironic, even requests"), (10, "India", "USA")]

    # 3. a bad orders file stops orders (named by URI and line); the other tables complete
    upload("orders/orders_1.json", b'{"opType": "I", "after": {"o_orderkey": "1"}}\n{"opType": \n')
    third = _cli(project, s3)
    output = third.stdout + third.stderr
    assert third.returncode == 1, output
    assert f"s3a://{feeds}/arcion/orders/orders_1.json:2" in output.replace("\n", "")
    keys = s3.keys(lake, landing)
    assert f"{landing}00000000000000000002.parquet" in keys
    assert not any("_publishing_" in k for k in keys)
    state = json.loads(client.get_object(
        Bucket=lake, Key="warehouse/_mirrorspec/publish/tpch.region.json")["Body"].read())
    assert state["files"] == {f"s3a://{feeds}/arcion/region/{name}": seq for name, seq in (
        ("region_0_snapshot.csv", 1), ("region_1.csv", 1), ("region_2.csv", 2))}
    assert state["pending"] is None
    assert _rows(s3_spark, region, "r_regionkey", "r_name") == [(0, "AFRICA"), (1, "AMERICA")]
    assert [k.rsplit("/", 1)[1] for k in s3.keys(lake, "warehouse/tpch/region/_delta_log/0")
            if k.endswith(".json")] == ["00000000000000000000.json", "00000000000000000001.json"]
    assert _rows(s3_spark, nation, "n_nationkey", "n_name") == [
        (0, "ALGERIA"), (1, "ARGENTINA"), (2, "BRAZIL")]
    # the S3 secret never reaches the project's files
    for path in (project / "target").rglob("*"):
        if path.is_file():
            assert SECRET_KEY not in path.read_text(errors="replace"), path
