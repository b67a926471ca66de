"""Spark Connect: a profile output with `spark.remote: sc://…` runs the example project through a
Connect server started from the pyspark installation; what can't work over Connect says so.

Connect clients run in subprocesses: a remote session must not share a Python process with the
test run's classic SparkSession.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import spark_processes as sp
from conftest import (copy_example_project, describe, local_output, read_tables, run_cli,
                      seed_landing_zone, write_profiles)


def connect_output(url: str, landing_zone: str = "landing_zone_connect",
                   warehouse: str = "warehouse_connect") -> dict:
    return {"landing_zone": landing_zone, "warehouse": warehouse,
            "spark": {"remote": url, "conf": {"spark.sql.shuffle.partitions": "2"}}}


def project_with_connect(tmp_path, url: str, **paths) -> object:
    project = copy_example_project(tmp_path / "project")
    write_profiles(project, {"local": local_output("local"),
                             "connect": connect_output(url, **paths)})
    return project


def test_run_through_spark_connect_equals_local_run(connect_server, reference_run, tmp_path):
    project = project_with_connect(tmp_path, connect_server)
    seed_landing_zone(project, "landing_zone_connect")

    result = run_cli(["run", "--project-dir", str(project), "--target", "connect"], cwd=project)

    assert result.returncode == 0, describe(result)
    assert read_tables(project / "warehouse_connect") == reference_run


def run_client(code: str) -> dict:
    """Run a Connect client script in its own interpreter; it prints one JSON object last."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, describe(result)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_connect_session_takes_runtime_conf_and_names_what_it_cannot_do(connect_server):
    facts = run_client(f"""
        import json
        from mirrorspec.base.errors import MirrorspecError
        from mirrorspec.spark.platform.session import build_session, is_connect, new_session, require_classic
        url = {connect_server!r}
        out = {{}}
        spark = build_session(remote=url, conf={{"spark.sql.shuffle.partitions": "3"}})
        out["connect"] = is_connect(spark)
        out["partitions"] = spark.conf.get("spark.sql.shuffle.partitions")
        out["timezone"] = spark.conf.get("spark.sql.session.timeZone")
        other = new_session(spark)
        out["separate"] = other.session_id != spark.session_id
        out["other_partitions"] = other.conf.get("spark.sql.shuffle.partitions")
        try:
            build_session(remote=url, conf={{"spark.driver.memory": "2g"}})
            out["static"] = None
        except MirrorspecError as exc:
            out["static"] = exc.render()
        try:
            require_classic(spark, "listing s3a://bucket/landing")
            out["classic"] = None
        except MirrorspecError as exc:
            out["classic"] = exc.render()
        print(json.dumps(out))
    """)
    assert facts["connect"] is True
    assert facts["partitions"] == "3"
    assert facts["timezone"] == "UTC"  # mirrorspec's runtime defaults reach the server session
    assert facts["separate"] is True and facts["other_partitions"] == "3"
    assert "spark.driver.memory can only be set when Spark starts" in facts["static"]
    assert "Spark Connect server" in facts["static"]
    assert "listing s3a://bucket/landing" in facts["classic"]
    assert "Spark Connect" in facts["classic"]


def test_unreachable_connect_server_is_a_clear_error(tmp_path):
    url = f"sc://127.0.0.1:{sp.free_port()}"  # nothing listens there
    project = project_with_connect(tmp_path, url)
    seed_landing_zone(project, "landing_zone_connect")

    result = run_cli(["run", "--project-dir", str(project), "--target", "connect"], cwd=project)

    assert result.returncode == 1, describe(result)
    assert f"cannot reach the Spark Connect server at {url}" in result.stderr, describe(result)


def test_hadoop_uri_over_connect_says_connect_cannot_do_it(connect_server, tmp_path):
    project = project_with_connect(tmp_path, connect_server,
                                   landing_zone="s3a://mirrorspec-test-bucket/landing")

    result = run_cli(["run", "--project-dir", str(project), "--target", "connect"], cwd=project)

    assert result.returncode == 1, describe(result)
    assert "Spark Connect" in result.stderr, describe(result)
    assert "Internal error" not in result.stderr, describe(result)


@pytest.fixture()
def connect_server_without_delta(tmp_path_factory):
    daemon, url = sp.start_connect_server(tmp_path_factory.mktemp("connect_plain"), None)
    try:
        yield url
    finally:
        daemon.stop()


def test_connect_server_without_delta_is_refused_with_how_to_start_it(
        connect_server_without_delta, tmp_path):
    project = project_with_connect(tmp_path, connect_server_without_delta)
    seed_landing_zone(project, "landing_zone_connect")

    result = run_cli(["run", "--project-dir", str(project), "--target", "connect"], cwd=project)

    assert result.returncode == 1, describe(result)
    assert "was started without Delta Lake" in result.stderr, describe(result)
    assert "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in result.stderr
    assert not (project / "warehouse_connect").exists()


def test_a_staged_merge_source_works_over_connect(connect_server, tmp_path):
    """The MERGE of a big table reads its batch from staged Parquet under session conf it puts
    back afterwards: DataFrame writes and reads and runtime conf, all of which Connect has."""
    facts = run_client(f"""
        import json, os
        from pyspark.sql import functions as F
        from mirrorspec.spark.mirror import fold, staged_source
        from mirrorspec.base import files as fsmod
        from mirrorspec.spark.platform.session import build_session, session_conf
        spark = build_session(remote={connect_server!r}, conf={{}})
        table = {str(tmp_path / "t")!r}
        spark.range(100).withColumn("v", F.lit("old")).write.format("delta").save(table)
        staged_source.MIN_TABLE_BYTES = 0
        batch = spark.createDataFrame(
            [(5, "new", True, "set", False), (6, None, True, "delete", False),
             (500, "ins", False, None, False)],
            "id long, v string, __is_reset boolean, __action string, "
            "__insert_if_absent boolean")
        staged = staged_source.stage(spark, fsmod.LocalFS(), table, batch, "0001-a")
        out = {{"staged": staged is not None}}
        with session_conf(spark, staged.conf):
            out["inside"] = spark.conf.get("spark.databricks.delta.merge.materializeSource")
            fold.run_merge(spark, table, staged.frame, ["id", "v"], ["id"])
        out["after"] = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
        staged_source.remove(fsmod.LocalFS(), staged)
        out["left"] = os.path.exists(staged.folder)
        rows = spark.read.format("delta").load(table)
        out["count"] = rows.count()
        out["changed"] = sorted([r.id, r.v] for r in rows.filter("v != 'old'").collect())
        out["gone"] = rows.filter("id = 6").count()
        print(json.dumps(out))
    """)
    assert facts["staged"] is True and facts["inside"] == "none"
    assert facts["after"] != "-1"  # Spark's default again, not the MERGE's setting
    assert facts["left"] is False
    assert facts["count"] == 100  # one deleted, one inserted
    assert facts["changed"] == [[5, "new"], [500, "ins"]] and facts["gone"] == 0
