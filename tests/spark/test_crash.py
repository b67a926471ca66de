"""Crash anywhere: SIGKILL `mirrorspec mirror` at each crash point (and from outside), rerun,
compare with the reference model — nothing lost, nothing doubled, progress exactly once.

Each test mirrors files 1–2 in-process (the shared session), lands files 3–6, kills a
`mirrorspec mirror` subprocess (its own JVM) at one point, checks what the crash left, then
reruns in-process and checks the end state: every file applied exactly once (the files carry
duplicate-key inserts, so a second application would show), the last file still in place,
the others in `_ProcessedFiles`, the `txn` version the last sequence.
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.mirror_cli import mirror_command
from mirrorspec.openmirroring.mirroring import mirror_id
from tests.support.reference_model import (
    MARKER, LandingFile, ModelTable, as_multiset, csv_schema_definition, landing_data_files,
    processed_files, read_delta_rs, sequence_name, write_csv, write_metadata, write_parquet)

engine = pytest.importorskip("mirrorspec.spark.mirror.engine")

pytestmark = pytest.mark.slow

CRASH_TABLE = "A"
COLS, TYPES = ("id", "v", MARKER), ("int64", "string", "int32")


def files_for(table: str, numbers) -> list[LandingFile]:
    """Order-sensitive, non-idempotent changes: duplicate inserts, updates, deletes, key changes."""
    result = []
    for n in numbers:
        rows = ((n, f"{table}{n}", 0), (n, f"{table}{n}-dup", 0), (1, f"upd{n}", 1),
                (n - 1, None, 2), (100 + n, f"moved{n}", 0), (2, f"ups{n}", 4))
        if table == "C":  # keyless: inserts only
            rows = tuple((k, v, 0) for k, v, _m in rows)
        ext = "csv" if table == "B" else "parquet"
        result.append(LandingFile(sequence_name(n, ext), COLS, rows, TYPES))
    return result


TABLES = {  # name → (landing folder, warehouse folder, keys)
    "A": ("A", "dbo/A", ("id",)),
    "B": ("ops.schema/B", "ops/B", ("id",)),
    "C": ("C", "dbo/C", ()),
}


def land(landing: Path, numbers) -> None:
    for name, (folder, _wh, keys) in TABLES.items():
        table_dir = landing / folder
        if not table_dir.exists():
            extra = {"SchemaDefinition": csv_schema_definition({"id": "int64", "v": "string"})} \
                if name == "B" else {}
            write_metadata(str(table_dir), keys, None, extra)
        for f in files_for(name, numbers):
            (write_csv if f.name.endswith(".csv") else write_parquet)(f, str(table_dir))


def models(upto: int) -> dict[str, ModelTable]:
    result = {}
    for name, (_folder, _wh, keys) in TABLES.items():
        model = ModelTable(keys)
        assert model.apply(files_for(name, range(1, upto + 1))) is None
        result[name] = model
    return result


def assert_table(warehouse: Path, name: str, model: ModelTable, when: str) -> None:
    """The table equals the model (read by delta-rs: no Spark job for a check)."""
    columns, rows = read_delta_rs(str(warehouse / TABLES[name][1]))
    assert columns == model.columns
    assert as_multiset(columns, rows) == model.multiset(), f"table {name} {when}"


def txn_version(path: Path, app_id: str) -> int | None:
    versions = []
    for log in sorted(glob.glob(str(path / "_delta_log" / "*.json"))):
        for line in Path(log).read_text().splitlines():
            if line.strip() and "txn" in (action := json.loads(line)):
                if action["txn"].get("appId") == app_id:
                    versions.append(action["txn"]["version"])
    return max(versions) if versions else None


def start(landing: Path, warehouse: Path, crash_at: str | None, log: Path) -> subprocess.Popen:
    env = dict(os.environ, MIRRORSPEC_SPARK_LOG_LEVEL="ERROR")
    env.pop("MIRRORSPEC_CRASH_AT", None)
    if crash_at:
        env["MIRRORSPEC_CRASH_AT"] = crash_at
        env["MIRRORSPEC_CRASH_TABLE"] = f"dbo.{CRASH_TABLE}"
    handle = open(log, "wb")
    # its own process group, so the JVM it starts can be killed with it
    command = mirror_command(landing, warehouse, master="local[2]")
    return subprocess.Popen(command, stdout=handle,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)


def finish(process: subprocess.Popen, timeout: float = 1200) -> int:
    try:
        code = process.wait(timeout=timeout)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the orphaned JVM, if any
        except ProcessLookupError:
            pass
    return code


@pytest.fixture()
def zone(spark, tmp_path):
    """Files 1–2 of every table mirrored in-process; files 3–6 landed, not yet mirrored."""
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    land(landing, [1, 2])
    result = engine.mirror_landing_zone(spark, str(landing), str(warehouse), engine.MirrorOptions())
    assert not result.failed, result.tables
    land(landing, [3, 4, 5, 6])
    return landing, warehouse


def rerun_and_check(spark, landing: Path, warehouse: Path) -> None:
    result = engine.mirror_landing_zone(spark, str(landing), str(warehouse), engine.MirrorOptions())
    assert not result.failed, result.tables
    expected = models(6)
    for name, (folder, wh, _keys) in TABLES.items():
        assert_table(warehouse, name, expected[name], "after the rerun")
        last = files_for(name, [6])[0].name
        assert landing_data_files(str(landing / folder)) == [last]
        moved = set(processed_files(str(landing / folder)))
        assert {f.name for f in files_for(name, range(1, 6))} <= moved
        schema = "ops" if name == "B" else None
        assert txn_version(warehouse / wh, mirror_id(schema, name)) == 6


@pytest.mark.extra
def test_crash_before_commit(spark, zone, tmp_path):
    landing, warehouse = zone
    code = finish(start(landing, warehouse, "before_commit", tmp_path / "run.log"))
    assert code == -signal.SIGKILL, (tmp_path / "run.log").read_text(errors="replace")
    # nothing of files 3–6 reached table A; all of them are still waiting in the landing zone
    assert_table(warehouse, "A", models(2)["A"], "after a crash before its commit")
    assert txn_version(warehouse / "dbo/A", mirror_id(None, "A")) == 2
    assert landing_data_files(str(landing / "A")) == [sequence_name(n) for n in (2, 3, 4, 5, 6)]
    rerun_and_check(spark, landing, warehouse)


def test_crash_after_commit(spark, zone, tmp_path):
    landing, warehouse = zone
    code = finish(start(landing, warehouse, "after_commit", tmp_path / "run.log"))
    assert code == -signal.SIGKILL, (tmp_path / "run.log").read_text(errors="replace")
    # committed with its progress, files not yet moved: the rerun must not apply them again
    assert_table(warehouse, "A", models(6)["A"], "after a crash after its commit")
    assert txn_version(warehouse / "dbo/A", mirror_id(None, "A")) == 6
    assert {sequence_name(n) for n in (3, 4, 5, 6)} <= set(landing_data_files(str(landing / "A")))
    rerun_and_check(spark, landing, warehouse)


def test_crash_during_moves(spark, zone, tmp_path):
    landing, warehouse = zone
    code = finish(start(landing, warehouse, "during_moves", tmp_path / "run.log"))
    assert code == -signal.SIGKILL, (tmp_path / "run.log").read_text(errors="replace")
    assert_table(warehouse, "A", models(6)["A"], "after a crash during the moves")
    left = landing_data_files(str(landing / "A"))
    assert sequence_name(6) in left and len(left) >= 2, left  # some moved, not all
    rerun_and_check(spark, landing, warehouse)


@pytest.mark.extra
def test_kill_from_outside_at_a_random_moment(spark, zone, tmp_path):
    """SIGKILL the whole process group (driver and JVM) once it has begun writing Delta files."""
    landing, warehouse = zone
    rng = random.Random(20261122)
    before = set(glob.glob(str(warehouse / "**" / "*"), recursive=True))
    process = start(landing, warehouse, None, tmp_path / "run.log")
    try:
        while process.poll() is None:
            now = set(glob.glob(str(warehouse / "**" / "*"), recursive=True))
            if now - before:
                time.sleep(rng.uniform(0.0, 2.0))  # somewhere in writing, committing or moving
                os.killpg(process.pid, signal.SIGKILL)
                break
            time.sleep(0.05)
    finally:
        finish(process)
    rerun_and_check(spark, landing, warehouse)

