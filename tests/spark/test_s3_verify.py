"""`reconcile` and `replay` on a project whose landing zone and warehouse are s3a:// URIs, against
a real S3-API server (moto's server mode): the key columns come from the engine's record and the
applied files from the landing folder on S3, read through the Hadoop filesystem of the session
the profile's Spark settings configure. The commands run in a fresh process whose environment
holds no AWS_* variables: only the profile (its keys from MIRRORSPEC_SECRET_*) reaches S3."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mirrorspec.openmirroring import mirroring
from tests.support.no_jvm import REPO
from tests.support.mirror_cli import SHORT_JVM_OPTIONS
from tests.support.project_files import write, write_changes
from tests.support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server, environ_without_aws

pytestmark = [pytest.mark.s3, pytest.mark.extra]  # a slow extra (40 s): `make test-extras`

# The steps in one process (one JVM): each CLI command starts and stops its own SparkContext from
# the profile's settings, as separate `mirrorspec` processes would, without a JVM start each; a
# {"sql": …} step changes a table behind the mirror's back through a session made the same way.
DRIVER = """
import json, sys
from click.testing import CliRunner
from mirrorspec.cli import cli
from mirrorspec.context.sessions import start_spark
from mirrorspec.compile import load_plan_context
results = []
for step in json.loads(sys.argv[2]):
    if isinstance(step, dict):
        spark = start_spark(load_plan_context(step["project"]).plan, None, {})
        spark.sql(step["sql"])
        spark.stop()
        continue
    done = CliRunner().invoke(cli, step)
    results.append({"exit_code": done.exit_code, "output": done.output})
with open(sys.argv[1], "w") as handle:
    json.dump(results, handle)
"""


def _project(root: Path, s3: S3Server, lake: str) -> Path:
    conf = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": SHORT_JVM_OPTIONS,
            **s3.spark_conf()}
    return write(root / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": f"s3a://{lake}/landing", "warehouse": f"s3a://{lake}/warehouse",
            "spark": {"master": "local[1]", "conf": conf}}}}},
        "tables/shop.yml": {"tables": [
            {"name": "orders", "schema": "sales", "key_columns": ["id"]},
            {"name": "orders_copy", "schema": "sales", "key_columns": ["id"]}]},
    })


def _snapshot(path: Path, rows: dict[int, str]) -> str:
    pq.write_table(pa.table({"id": pa.array(list(rows), pa.int32()),
                             "v": pa.array(list(rows.values()))}), path)
    return str(path)


def test_reconcile_and_replay_find_keys_and_files_on_s3_with_the_profiles_credentials(
        s3, tmp_path):
    lake = s3.bucket("verify")
    folder = tmp_path / "landing" / "sales.schema" / "orders"
    folder.mkdir(parents=True)
    (folder / mirroring.METADATA_FILE).write_text('{"keyColumns": ["id"]}')
    write_changes(folder, 1, [(1, "Alice", 0), (2, "Bob", 0), (3, "Carl", 0)])
    write_changes(folder, 2, [(3, "Carol", 1), (4, "Dan", 0)])
    write_changes(folder, 4, [(5, "Eve", 0)])  # waits for file 3: pending, not replayed
    s3.upload_tree(tmp_path / "landing", lake, "landing")
    project = _project(tmp_path, s3, lake)

    final = {1: "Alice", 2: "Bob", 3: "Carol", 4: "Dan"}
    same = _snapshot(tmp_path / "same.parquet", final)
    differing = _snapshot(tmp_path / "differing.parquet", {**final, 3: "Karl"})
    at = ["--project-dir", str(project)]
    table = f"s3a://{lake}/warehouse/sales/orders"
    steps = [["mirror", *at],
             ["reconcile", "orders", "--against", same, *at],
             ["reconcile", "sales.orders", "--against", differing, *at,
              "-o", str(tmp_path / "diff.json")],
             ["replay", "orders", *at],
             {"project": str(project),
              "sql": f"UPDATE delta.`{table}` SET v = 'Bobby' WHERE id = 2"},
             ["replay", table, *at],
             ["reconcile", "sales.nope", "--warehouse", f"s3a://{lake}/warehouse",
              "--against", same, *at],
             ["reconcile", "orders", "--against", f"s3a://{lake}/snapshots/none.parquet", *at]]
    logs = tmp_path / "logs"
    env = {**environ_without_aws(), **s3.secret_env(), "PYTHONPATH": str(REPO),
           "MIRRORSPEC_LOG_DIR": str(logs), "MIRRORSPEC_SPARK_LOG_LEVEL": "ERROR",
           "COLUMNS": "200"}
    env.pop("MIRRORSPEC_PROJECT_DIR", None)
    results_file = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-c", DRIVER, str(results_file), json.dumps(steps)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    mirrored, same_out, differ_out, replay_out, tampered_out, nope_out, no_source = json.loads(
        results_file.read_text())

    assert mirrored["exit_code"] == 0, mirrored["output"]
    orders = "landing/sales.schema/orders/"
    assert f"{orders}{mirroring.PROCESSED_FOLDER}/{mirroring.sequence_file_name(1)}" in \
        s3.keys(lake, orders)  # the history is in _ProcessedFiles/ and the folder
    assert same_out["exit_code"] == 0, same_out["output"]
    assert "equal" in same_out["output"]
    assert differ_out["exit_code"] == 1, differ_out["output"]
    assert 'changed {"id": 3}: v' in differ_out["output"]
    assert json.loads((tmp_path / "diff.json").read_text())["counts"] == {
        "missing": 0, "extra": 0, "changed": 1}
    assert replay_out["exit_code"] == 0, replay_out["output"]
    assert "1 pending file(s) not replayed" in replay_out["output"]
    assert "replaying 2 file(s)" in replay_out["output"] and "equal" in replay_out["output"]
    assert tampered_out["exit_code"] == 1, tampered_out["output"]
    assert 'changed {"id": 2}: v' in tampered_out["output"]
    assert nope_out["exit_code"] == 1
    assert f"no mirrored table sales.nope in s3a://{lake}/warehouse" in nope_out["output"]
    assert no_source["exit_code"] == 1  # a URI snapshot is checked once the session can
    assert "the source snapshot does not exist" in no_source["output"]

    # the profile's keys never reach the output, the log files or target/
    said = done.stdout + done.stderr + results_file.read_text()
    written = [p for where in (logs, project / "target") for p in where.rglob("*")
               if p.is_file()]
    assert any(p.name.startswith("mirrorspec-spark-") for p in written)  # the JVM's own log
    for secret in (SECRET_KEY, ACCESS_KEY):
        assert secret not in said
        for path in written:
            assert secret not in path.read_text(errors="replace"), path
