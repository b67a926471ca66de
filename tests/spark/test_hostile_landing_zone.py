"""A hostile landing zone through a real `mirrorspec mirror` process: the user sees mirrorspec's
own lines only (the JVM's chatter and Java stack traces go to the log file, named on error),
every ignored file or key is reported once, a dot-folder is reported as ignored, and invalid
bytes in a delimited file fail that file's table naming the row, never another table."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.support.mirror_cli import mirror_command

pytestmark = pytest.mark.slow

CHATTER = ("Using incubator modules", "log4j", "loopback address", "NativeCodeLoader",
           "WARN ", "\tat org.apache", "Exception in task", "SparkException")


def _parquet(path: Path, ids) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({"id": pa.array(ids, pa.int64()),
                      "v": pa.array([f"v{i}" for i in ids], pa.string()),
                      "__rowMarker__": pa.array([0] * len(ids), pa.int32())})
    pq.write_table(table, path, compression="none", use_dictionary=False,
                   write_statistics=False)


def _metadata(folder: Path, doc: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    """One `mirrorspec mirror` over every hostile folder: (exit code, output, tables.json, log dir)."""
    root = tmp_path_factory.mktemp("hostile")
    landing, warehouse, logs = root / "landing", root / "warehouse", root / "logs"
    logs.mkdir()
    # orders: good file 1, names outside the 20-digit sequence, a typo'd key
    _metadata(landing / "orders", {"keyColumns": ["id"], "keyColums": ["id"]})
    _parquet(landing / "orders" / "00000000000000000001.parquet", [1, 2])
    for name in ("2.parquet", "0" * 18 + "3.parquet", "0" * 20 + "4.parquet"):
        _parquet(landing / "orders" / name, [9])
    # latin: a delimited file with bytes that aren't UTF-8 on its third line
    _metadata(landing / "latin", {"keyColumns": ["id"]})
    (landing / "latin" / "00000000000000000001.csv").write_bytes(
        b"id,name,__rowMarker__\n1,ok,0\n2,g\xff\xfe\xc3(,0\n")
    # corrupt: a Parquet file whose first data page header is garbage (footer intact)
    _metadata(landing / "corrupt", {"keyColumns": ["id"]})
    bad = landing / "corrupt" / "00000000000000000001.parquet"
    _parquet(bad, list(range(50)))
    data = bytearray(bad.read_bytes())
    data[4:40] = b"\xff" * 36
    bad.write_bytes(bytes(data))
    # .hidden: a dot-folder holding a table the engine must not mirror, and say so
    _metadata(landing / ".hidden", {"keyColumns": ["id"]})
    _parquet(landing / ".hidden" / "00000000000000000001.parquet", [1])
    env = dict(os.environ, MIRRORSPEC_LOG_DIR=str(logs))
    env.pop("MIRRORSPEC_SPARK_LOG_LEVEL", None)
    env.pop("MIRRORSPEC_SPARK_OUTPUT", None)
    done = subprocess.run(mirror_command(landing, warehouse), capture_output=True, text=True,
                          env=env, timeout=900)
    status = json.loads((warehouse / "tables.json").read_text())
    tables = {t["sourceTableName"]: t for t in status["tables"]}
    return done.returncode, done.stdout + done.stderr, tables, logs, landing


def test_users_see_no_jvm_chatter_and_the_log_is_named(mirrored):
    code, output, _tables, logs, _landing = mirrored
    assert code == 1, output
    for noise in CHATTER:
        assert noise not in output, f"{noise!r} in the output:\n{output}"
    logged = list(logs.glob("mirrorspec-spark-*.log"))
    assert len(logged) == 1
    assert "Using incubator modules" in logged[0].read_text(errors="replace")
    assert f"Spark's own output (JVM log): {logged[0]}" in output


def test_ignored_names_and_unknown_keys_are_reported_once(mirrored):
    code, output, tables, _logs, landing = mirrored
    folder = landing / "orders"
    expected = [f"{folder / name}: not a 20-digit sequence name; ignored"
                for name in ("2.parquet", "0" * 18 + "3.parquet", "0" * 20 + "4.parquet")]
    expected.append("unknown key 'keyColums' ignored (did you mean 'keyColumns'?)")
    orders = tables["orders"]
    assert orders["status"] == "Replicating"
    for text in expected:
        assert output.count(text) == 1, (text, output)
        assert sum(text in w for w in orders.get("warnings", [])) == 1, orders


def test_a_dot_folder_is_reported_as_ignored(mirrored):
    _code, output, tables, _logs, landing = mirrored
    assert ".hidden" not in tables
    assert output.count(f"{landing / '.hidden'}: hidden folder (name starts with '.') "
                        "ignored") == 1, output


def test_invalid_utf8_fails_its_table_naming_the_line(mirrored):
    _code, output, tables, _logs, landing = mirrored
    latin = tables["latin"]
    assert latin["status"] == "Failed"
    assert latin["error"]["errorCode"] == "BadFile"
    assert re.search(r"00000000000000000001\.csv: line 3: bytes b'\\xff\\xfe\\xc3\(' are not "
                     r"valid UTF-8", latin["error"]["message"]), latin
    assert "not valid UTF-8" in output
    assert tables["orders"]["status"] == "Replicating"  # never another table


def test_a_corrupt_page_is_one_clean_error(mirrored):
    _code, output, tables, _logs, _landing = mirrored
    corrupt = tables["corrupt"]
    assert corrupt["status"] == "Failed"
    assert "00000000000000000001.parquet" in corrupt["error"]["message"]
    assert any("dbo.corrupt" in line and "unreadable file" in line
               for line in output.splitlines()), output
    assert not any(line.lstrip().startswith(("at ", "Caused by", "... "))
                   for line in output.splitlines()), output


def test_encoding_check_streams_through_hadoop(spark, tmp_path, monkeypatch):
    """Remote (Hadoop) files are checked in chunks too, never read whole into memory."""
    from mirrorspec.openmirroring import mirroring
    from mirrorspec.base.errors import LandingZoneError
    from mirrorspec.landing import checks
    from mirrorspec.spark.platform.hadoop_fs import HadoopFS
    from mirrorspec.landing.layout import LandingFile

    path = tmp_path / "00000000000000000001.csv"
    path.write_bytes(b"id,name\n" + b"1,ok\n" * 1000 + b"2,\xe9t\xe9\n")
    file = LandingFile(path.name, path.as_uri(), path.stat().st_size, 0.0, "csv", 1)
    monkeypatch.setattr(checks, "_DECODE_CHUNK", 1000)  # many chunks
    with pytest.raises(LandingZoneError) as caught:
        checks.check_encoding(HadoopFS(spark), file, mirroring.DelimitedOptions())
    latin = mirroring.DelimitedOptions(encoding="windows-1252")
    checks.check_encoding(HadoopFS(spark), file, latin)  # the same bytes are valid here
    assert caught.value.row == 1002 and "not valid UTF-8" in caught.value.message
