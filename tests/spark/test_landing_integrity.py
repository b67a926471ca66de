"""Landing-file integrity in process: a landing file is applied whole or not at all, files the
engine never applies as placed are reported (output, tables.json, lint), the settle time, and
keyColumns that change under a mirrored table. One landing zone, a few passes, several tables."""

from __future__ import annotations

import json
import os
import time
from collections import Counter

import pytest

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.console import Console
from mirrorspec.landing.lint import lint_landing_zone
from mirrorspec.openmirroring.mirroring import sequence_file_name
from mirrorspec.spark.mirror import batch as reader
from mirrorspec.spark.mirror import engine
from mirrorspec.artifacts.status import read_status

from tests.spark.test_engine import M, by_name, delta_rows, parquet, table_dir, text

KEYED = {"keyColumns": ["id"]}
ZERO = "0" * 20 + ".parquet"


def csv_lines(first: int, last: int) -> str:
    return "".join(f"{i},v{i},0\n" for i in range(first, last + 1))


class Recorder(Console):
    """A console that keeps the warnings it shows."""

    def __init__(self):
        super().__init__(log_format="json", quiet=True)
        self.warnings: list[str] = []

    def warning(self, message, **fields):
        self.warnings.append(message)


@pytest.fixture(scope="module")
def passes(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("integrity")
    landing, warehouse = str(root / "l"), str(root / "w")
    tables = {name: table_dir(landing, name, metadata=KEYED)
              for name in ("inplace", "zero", "rewritten", "keys", "settle")}
    # inplace: 1,000 of 2,000 lines on disk when listed; the producer writes the rest while the
    # pass reads it (after Spark listed the file's length)
    inplace = text(tables["inplace"], sequence_file_name(1, "csv"),
                   "id,v,__rowMarker__\n" + csv_lines(1, 1000))
    real_read = reader.read_changes
    appended = []

    def producer_still_writing(session, schemas, *args, **kwargs):
        frame = real_read(session, schemas, *args, **kwargs)
        if not appended and any(s.file.path == inplace for s in schemas):
            appended.append(True)
            with open(inplace, "a") as handle:
                handle.write(csv_lines(1001, 2000))
        return frame

    parquet(tables["zero"], ZERO, {"id": [0], "v": ["zero"], M: [0]})
    parquet(tables["zero"], 1, {"id": [1], "v": ["one"], M: [0]})
    for n in (1, 2):
        parquet(tables["rewritten"], n, {"id": [n], "v": [f"r{n}"], M: [0]})
    parquet(tables["keys"], 1, {"id": [1, 2], "v": ["a", "b"], M: [0, 0]})

    first_console = Recorder()
    reader.read_changes = producer_still_writing
    try:
        first = engine.mirror_landing_zone(spark, landing, warehouse, console=first_console)
    finally:
        reader.read_changes = real_read
    first_status = read_status(warehouse)

    # between passes: file 2 of `rewritten` (the kept last one) rewritten in place with more
    # rows, and its file 1 landed again; `keys` re-keyed by another producer, plus an update
    # that would replace the row id=1 under the new key
    parquet(tables["rewritten"], 2, {"id": [2, 3], "v": ["r2", "lost"], M: [0, 0]})
    os.utime(os.path.join(tables["rewritten"], sequence_file_name(2)), (1, 1))
    parquet(tables["rewritten"], 1, {"id": [1], "v": ["again"], M: [0]})
    with open(os.path.join(tables["keys"], "_metadata.json"), "w") as handle:
        json.dump({"keyColumns": ["v"]}, handle)
    parquet(tables["keys"], 2, {"id": [99], "v": ["a"], M: [1]})
    second_console = Recorder()
    second = engine.mirror_landing_zone(spark, landing, warehouse, console=second_console)
    status = read_status(warehouse)
    # settle: a new file younger than the settle time waits, then is applied once old enough
    settled = parquet(tables["settle"], 1, {"id": [1], "v": ["s"], M: [0]})
    options = engine.MirrorOptions(settle_seconds=3600)
    young = engine.mirror_landing_zone(spark, landing, warehouse, options, Recorder())
    hours_ago = time.time() - 7200
    os.utime(settled, (hours_ago, hours_ago))
    old = engine.mirror_landing_zone(spark, landing, warehouse, options, Recorder())
    return {"landing": landing, "warehouse": warehouse, "tables": tables, "appended": appended,
            "first": by_name(first), "second": by_name(second), "young": by_name(young),
            "old": by_name(old), "first_console": first_console,
            "second_console": second_console, "first_status": first_status, "status": status}


def rows_of(spark, passes, name):
    return delta_rows(spark, os.path.join(passes["warehouse"], "dbo", name), ["id", "v"])


def test_a_file_written_while_read_waits_and_is_then_applied_whole(spark, passes):
    assert passes["appended"]
    first = passes["first"]["dbo.inplace"]
    assert first.status != "Failed" and first.files_applied == [], first
    warning = next(w for w in first.warnings if "changed while this pass read it" in w)
    assert sequence_file_name(1, "csv") in warning and "rename it into place" in warning
    assert passes["first_console"].warnings.count(warning) == 1
    entry = {e["sourceTableName"]: e for e in passes["first_status"]["tables"]}["inplace"]
    assert warning in entry["warnings"]
    second = passes["second"]["dbo.inplace"]
    assert second.files_applied == [sequence_file_name(1, "csv")]
    rows = rows_of(spark, passes, "inplace")
    assert sum(rows.values()) == 2000 and rows[("2000", "v2000")] == 1  # CSV columns are strings


def test_sequence_zero_is_reported_and_left_in_place(spark, passes):
    outcome = passes["first"]["dbo.zero"]
    assert outcome.files_applied == [sequence_file_name(1)]
    warning = f"{ZERO}: sequence 0 is never applied"
    assert any(warning in w for w in outcome.warnings), outcome.warnings
    assert any(warning in w for w in passes["second"]["dbo.zero"].warnings)  # every pass
    assert rows_of(spark, passes, "zero") == Counter({(1, "one"): 1})
    assert os.path.exists(os.path.join(passes["tables"]["zero"], ZERO))


def test_files_placed_again_or_rewritten_after_they_were_applied_are_reported(spark, passes):
    folder = passes["tables"]["rewritten"]
    outcome = passes["second"]["dbo.rewritten"]
    assert outcome.status == "Replicating" and outcome.files_applied == []
    text_of = "\n".join(outcome.warnings)
    assert f"{sequence_file_name(2)}: changed after it was applied" in text_of, text_of
    assert f"{sequence_file_name(1)}: changed after it was applied" in text_of, text_of
    assert rows_of(spark, passes, "rewritten") == Counter({(1, "r1"): 1, (2, "r2"): 1})
    # the late copy stays where the producer put it; the processed file 1 is untouched
    assert os.path.exists(os.path.join(folder, sequence_file_name(1)))
    processed = os.path.join(folder, mirroring.PROCESSED_FOLDER, sequence_file_name(1))
    assert delta_rows_of_file(processed) == [(1, "r1")]
    entry = {e["sourceTableName"]: e for e in passes["status"]["tables"]}["rewritten"]
    assert any("changed after it was applied" in w for w in entry["warnings"])
    findings = {(f.rule, f.file.rsplit("/", 1)[-1]) for f in lint_landing_zone(
        passes["landing"], warehouse=passes["warehouse"]).all_findings()}
    assert ("files/changed-after-applied", sequence_file_name(2)) in findings
    assert ("files/changed-after-applied", sequence_file_name(1)) in findings


def delta_rows_of_file(path):
    import pyarrow.parquet as pq

    data = pq.read_table(path)
    return list(zip(data.column("id").to_pylist(), data.column("v").to_pylist()))


def test_changed_key_columns_stop_the_table_before_anything_is_applied(spark, passes):
    outcome = passes["second"]["dbo.keys"]
    assert outcome.status == "Failed", outcome
    assert outcome.error["errorCode"] == "KeyColumnsChanged"
    expected = mirroring.key_change(["id"], ("v",))
    assert expected in outcome.error["message"]
    assert outcome.error["file"].endswith("_metadata.json")
    assert rows_of(spark, passes, "keys") == Counter({(1, "a"): 1, (2, "b"): 1})
    lint = lint_landing_zone(passes["landing"], warehouse=passes["warehouse"])
    assert any(f.rule == "metadata/key-changed" and f.message == expected
               for f in lint.all_findings())


def test_settle_time_holds_young_files(spark, passes):
    assert passes["young"]["dbo.settle"].files_applied == []
    assert passes["young"]["dbo.settle"].status != "Failed"
    assert passes["old"]["dbo.settle"].files_applied == [sequence_file_name(1)]
    assert rows_of(spark, passes, "settle") == Counter({(1, "s"): 1})
