"""Making the driver JVM's class-data archive (`platform/cds.py` maps it): a training pass.

`make` runs `python -m mirrorspec.spark.ops.cds_training` once: a JVM started with
`-XX:ArchiveClassesAtExit` publishes small Qlik and Arcion feeds and mirrors a table (initial
load, then a MERGE with deletes and deletion vectors), and writes the archive as it exits.
It lives in the operations wing because it drives the publisher and the engine.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from mirrorspec.spark.platform.cds import ENV, forget_stale_archives, prepend_option, source_text, archive_path

_TRAINING_PROJECT = """name: training
version: "1"
"""
_TRAINING_TABLES = """tables:
  - name: qlik
    key_columns: [ID]
    columns: [{name: ID, type: Int64}, {name: NAME, type: String}, {name: AT, type: DateTime}]
    source: {type: qlik_replicate, path: feed/qlik}
  - name: arcion
    key_columns: [id]
    columns: [{name: id, type: Int64}, {name: name, type: String}, {name: price, type: Double}]
    source: {type: arcion, path: feed/arcion, options: {header: false, column_order: [id, name, price]}}
"""
_TRAINING_PROFILES = """training:
  target: local
  outputs:
    local: {landing_zone: landing, warehouse: warehouse}
"""


def _training_feeds(root: Path) -> None:
    """Small Qlik and Arcion feeds (inserts, updates, deletes) that take both parsers' paths."""
    qlik, arcion = root / "feed" / "qlik", root / "feed" / "arcion"
    qlik.mkdir(parents=True)
    arcion.mkdir(parents=True)
    messages, rows = [], []
    for i in range(300):
        op = ("INSERT", "UPDATE", "DELETE")[i % 10 // 4]
        key = i if op == "INSERT" else i - i % 10
        data = f'{{"ID": {key}, "NAME": "n{i}", "AT": "2024-05-02 10:00:{i % 60:02d}.000000"}}'
        before = data if op != "INSERT" else "null"
        messages.append(
            f'{{"magic": "atMSG", "type": "DT", "headers": null, "message": {{"data": {data}, '
            f'"beforeData": {before}, "headers": {{"operation": "{op}", "changeSequence": '
            f'"{i:020d}", "transactionId": "{i // 10:08X}", "columnMask": "07", '
            f'"transactionLastEvent": {"true" if i % 10 == 9 else "false"}}}}}}}')
        cursor = f'"{{""timestamp"":{1620787841959 + i}}}","{{}}"'
        kind = op[0]
        triplets = (f"{key},NULL,1,n{i},NULL,1,{i / 4},NULL,1" if kind != "D"
                    else f"NULL,{key},2,NULL,NULL,0,NULL,NULL,0")
        rows.append(f"{triplets},{kind},{cursor}")
    (qlik / "CDC00000001.json").write_text("\n".join(messages) + "\n", encoding="utf-8")
    (arcion / "items_0001.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _training_publish(spark, work: Path) -> None:
    """Publish small Qlik and Arcion feeds: the classes of Python parse tasks, Arrow, the
    batch's cache, its checks, sort and Parquet write (a first publish's fixed cost)."""
    from mirrorspec.compile import compile_project
    from mirrorspec.spark.publish.publisher import publish_table

    root = work / "project"
    (root / "tables").mkdir(parents=True)
    (root / "mirrorspec_project.yml").write_text(_TRAINING_PROJECT, encoding="utf-8")
    (root / "tables" / "feeds.yml").write_text(_TRAINING_TABLES, encoding="utf-8")
    (root / "profiles.yml").write_text(_TRAINING_PROFILES, encoding="utf-8")
    _training_feeds(root)
    plan = compile_project(root, check_landing=False).plan
    for table in plan.tables:
        result = publish_table(spark, table, plan)
        if result.status != "Published":
            raise RuntimeError(f"the training publish of {table.name} failed: {result.error}")


def _training_pass(spark, work: Path) -> None:
    """Small runs that load the classes of an everyday `publish` and `mirror`: two feeds
    published; an initial load, then a MERGE with updates, deletes and inserts on a table with
    deletion vectors, then the big-batch path's MERGE (its source staged as Parquet, read back
    under a runtime Bloom filter: `staged_source`, used for tables above 64 MiB), then a read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mirrorspec.spark.mirror import staged_source
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone

    _training_publish(spark, work)

    folder = work / "landing" / "training"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}\n', encoding="utf-8")
    ids = list(range(1000))
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                             "name": [f"row {i}" for i in ids],
                             "__rowMarker__": pa.array([0] * 1000, pa.int32())}),
                   folder / f"{1:020d}.parquet")
    warehouse = work / "warehouse"
    changed = [1, 2, 5000, 3]  # update, delete, insert, upsert
    staged = list(range(10, 400, 3)) + [6000]  # the big-batch MERGE's updates and an insert
    min_table_bytes = staged_source.MIN_TABLE_BYTES
    for sequence in (1, 2, 3):  # the initial load, a MERGE, a MERGE of a staged source
        if sequence == 2:
            pq.write_table(pa.table({"id": pa.array(changed, pa.int64()),
                                     "name": [f"changed {i}" for i in changed],
                                     "__rowMarker__": pa.array([1, 2, 0, 4], pa.int32())}),
                           folder / f"{2:020d}.parquet")
        if sequence == 3:
            pq.write_table(pa.table({"id": pa.array(staged, pa.int64()),
                                     "name": [f"staged {i}" for i in staged],
                                     "__rowMarker__": pa.array([1] * (len(staged) - 1) + [0],
                                                               pa.int32())}),
                           folder / f"{3:020d}.parquet")
            staged_source.MIN_TABLE_BYTES = 0  # stage this small table's batch too
        try:
            result = mirror_landing_zone(spark, str(work / "landing"), str(warehouse),
                                         MirrorOptions(threads=1))
        finally:
            staged_source.MIN_TABLE_BYTES = min_table_bytes
        if result.failed:
            raise RuntimeError(f"the training pass failed: {result.tables[0].error}")
    spark.read.format("delta").load(str(warehouse / "dbo" / "training")).count()


def create(conf: dict[str, str] | None = None) -> Path | None:
    """Make the archive for a JVM started with `conf` (default: mirrorspec's), unless it exists.

    Runs the training pass in this process's JVM, which must not be running yet, then stops it so
    the JVM writes the archive as it exits. Returns the archive, None when no java was found."""
    from pyspark import SparkContext

    from mirrorspec.spark.platform import session as sessions

    if SparkContext._gateway is not None:
        raise RuntimeError("the JVM is running already; make the archive in a fresh process")
    conf = dict(conf or {})
    target = archive_path(sessions.driver_conf(conf))
    if target is None:
        return None
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    forget_stale_archives(target.parent)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    prepend_option(conf, f"-XX:ArchiveClassesAtExit={partial}")
    os.environ[ENV] = "off"
    work = Path(tempfile.mkdtemp(prefix="mirrorspec-cds-"))
    try:
        spark = sessions.build_session("local[2]", conf, app_name="mirrorspec-cds")
        try:
            _training_pass(spark, work)
        finally:
            spark.stop()
            gateway = SparkContext._gateway
            process = getattr(gateway, "proc", None)
            if gateway is not None:
                gateway.shutdown()
            if process is not None:  # the JVM exits when its stdin closes, writing the archive
                process.stdin.close()
                process.wait(timeout=600)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not partial.is_file():
        raise RuntimeError(f"the JVM wrote no archive at {partial} (see its log: "
                           f"{sessions.jvm_log_path()})")
    target.with_name(target.name + ".source").write_text(source_text(), encoding="utf-8")
    os.replace(partial, target)  # atomic: a concurrent `make` or command never maps half a file
    return target


def main(argv: list[str] | None = None) -> int:
    """`python -m mirrorspec.spark.ops.cds_training` (run by `make`): create the archive if it is missing.
    Never fails the setup: without an archive every command still works, only slower to start."""
    del argv
    try:
        path = create()
    except Exception as exc:  # noqa: BLE001 - an optimisation; setup goes on without it
        print(f"mirrorspec: warning: no JVM class-data archive ({exc}); commands start "
              "~1.5 s slower", file=sys.stderr)
        return 0
    print(f"JVM class-data archive: {path}" if path else
          "mirrorspec: warning: no java found for the class-data archive", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
