"""`mirrorspec lint`: one test per rule family, the output formats, exit codes, and that it never
imports pyspark."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from mirrorspec.cli import cli
from mirrorspec.landing.lint import lint_landing_zone, to_sarif

M = "__rowMarker__"


def table(root, folder, metadata=None, files=()):
    path = os.path.join(root, folder)
    os.makedirs(path, exist_ok=True)
    if metadata is not None:
        with open(os.path.join(path, "_metadata.json"), "w") as handle:
            handle.write(metadata if isinstance(metadata, str) else json.dumps(metadata))
    for name, data in files:
        target = os.path.join(path, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if isinstance(data, pa.Table):
            pq.write_table(data, target)
        else:
            with open(target, "wb") as handle:
                handle.write(data)
    return path


def seq(n, ext="parquet"):
    return f"{n:020d}.{ext}"


def rows(ids, markers=None, **extra):
    columns = {"id": pa.array(ids, pa.int64()), **extra}
    if markers is not None:
        columns[M] = pa.array(markers, pa.int32())
    return pa.table(columns)


def rules(result, level=None):
    return {f.rule for f in result.all_findings() if level is None or f.level == level}


def test_layout_rules(tmp_path):
    root = str(tmp_path)
    table(root, "sales.schema/orders", {"keyColumns": ["id"]}, [(seq(1), rows([1], [0]))])
    table(root, "sales/customers", {"keyColumns": ["id"]}, [(seq(1), rows([1], [0]))])
    table(root, "empty")
    table(root, "orders2", {"keyColumns": ["id"]},
          [(seq(1), rows([1], [0])), ("old/" + seq(1), rows([1], [0]))])
    with open(os.path.join(root, "stray.csv"), "w") as handle:
        handle.write("id\n1\n")
    with open(os.path.join(root, "_partnerEvents.json"), "w") as handle:
        handle.write("{not json")
    result = lint_landing_zone(root)
    assert [t.unique_id for t in result.tables] == ["dbo.orders2", "sales.orders"]
    found = {(f.rule, f.file or f.table) for f in result.all_findings()}
    assert ("layout/nested-without-schema", "sales/customers") in found
    assert ("layout/empty-folder", "empty") in found
    assert ("layout/nested-folder", "orders2/old") in found
    assert ("layout/file-outside-table", "stray.csv") in found
    assert ("layout/partner-events", "_partnerEvents.json") in found
    assert not any(f.table == "sales.schema/orders" for f in result.all_findings())


def test_metadata_rules(tmp_path):
    root = str(tmp_path)
    table(root, "typo", {"keyColums": ["id"], "comment": "x"}, [(seq(1), rows([1], [0]))])
    table(root, "none", None, [(seq(1), rows([1], [0]))])
    table(root, "semicolons", {"keyColumns": ["id"]}, [(seq(1, "csv"), b"id;v\r\n1;a\r\n")])
    table(root, "tsv", {"keyColumns": ["id"], "FileFormat": "DelimitedText",
                        "FileExtension": "tsv"}, [(seq(1, "csv"), b"id,v\r\n1,a\r\n")])
    table(root, "lf", {"keyColumns": ["id"]}, [(seq(1, "csv"), b"id,v\n1,a\n")])
    result = lint_landing_zone(root)
    by_table = {t.table: t for t in result.tables}
    typo = [f for f in by_table["typo"].findings if f.rule == "metadata/unknown-key"]
    assert [(f.level, "did you mean 'keyColumns'" in f.message) for f in typo] == [
        ("error", True), ("warning", False)]
    assert [f.rule for f in by_table["none"].findings] == ["metadata/missing"]
    semicolons = by_table["semicolons"].findings
    assert any(f.rule == "metadata/dialect" and f.level == "error" and '";"' in f.message
               for f in semicolons)
    assert any(f.rule == "metadata/extension" for f in by_table["tsv"].findings)
    assert any(f.rule == "metadata/dialect" and f.level == "warning" and "RowSeparator" in
               f.message for f in by_table["lf"].findings)


def test_key_change_against_the_warehouse(tmp_path):
    landing, warehouse = str(tmp_path / "lz"), str(tmp_path / "wh")
    table(landing, "t", {"keyColumns": ["id", "v"]}, [(seq(2), rows([1], [0], v=pa.array(["a"])))])
    log = os.path.join(warehouse, "dbo", "t", "_delta_log")
    os.makedirs(log)
    with open(os.path.join(log, seq(0, "json")), "w") as handle:
        state = {"mirrorspec": {"sequence": 1, "keys": ["id"], "files": [seq(1)]}}
        handle.write(json.dumps({"commitInfo": {"userMetadata": json.dumps(state)}}) + "\n")
    result = lint_landing_zone(landing, warehouse=warehouse)
    assert "metadata/key-changed" in rules(result, "error")
    assert "files/gap" not in rules(result)  # file 2 follows the applied file 1


def test_file_name_rules(tmp_path):
    root = str(tmp_path)
    table(root, "names", {"keyColumns": ["id"]},
          [(seq(1), rows([1], [0])), ("data.parquet", rows([2], [0])),
           ("_tmp.parquet", rows([3], [0])), (seq(3), rows([3], [0])),
           ("_mirrorspec_processed", b"00000000000000000001.parquet\n")])
    table(root, "dups", {"keyColumns": ["id"]},
          [(seq(1), rows([1], [0])), (seq(1, "csv"), b"id\r\n1\r\n")])
    table(root, "processed", {"keyColumns": ["id"]},
          [("_ProcessedFiles/" + seq(5), rows([1], [0])), (seq(3), rows([1], [0])),
           (seq(6), rows([1], [0]))])
    lut = table(root, "lut", {"keyColumns": ["id"],
                              "fileDetectionStrategy": "LastUpdateTimeFileDetection"},
                [("a.parquet", rows([1], [0])), ("b.parquet", rows([2], [0]))])
    for name in ("a.parquet", "b.parquet"):
        os.utime(os.path.join(lut, name), (1_700_000_000, 1_700_000_000))
    result = {t.table: t for t in lint_landing_zone(root).tables}
    names = {f.rule for f in result["names"].findings}
    assert {"files/not-sequence-name", "files/underscore", "files/gap"} <= names
    # the engine's own ledger of moved files is no stray file
    assert not [f for f in result["names"].findings if "_mirrorspec_processed" in (f.file or "")]
    assert result["names"].stops_at is None
    assert result["dups"].stops_at.rule == "files/duplicate-sequence"
    processed = {(f.rule, f.file) for f in result["processed"].findings}
    assert ("files/before-processed", "processed/" + seq(3)) in processed
    assert result["processed"].files == 1  # only file 6 is pending
    assert [f.rule for f in result["lut"].findings] == ["files/same-time"]


def test_content_rules(tmp_path):
    root = str(tmp_path)
    table(root, "latin", {"keyColumns": ["id"]},
          [(seq(1, "csv"), "id,v\r\n1,caf\u00e9\r\n".encode("cp1252"))])
    table(root, "utf16", {"keyColumns": ["id"]},
          [(seq(1, "csv"), "id,v\r\n1,a\r\n".encode("utf-16"))])
    marker_first = pa.table({M: pa.array([0], pa.int32()), "id": pa.array([1], pa.int64())})
    table(root, "first", {"keyColumns": ["id"]}, [(seq(1), marker_first)])
    table(root, "zero", {"keyColumns": ["id"]}, [(seq(1), b"")])
    table(root, "ok", {"keyColumns": ["id"]}, [(seq(1), rows([1, None], [0, 0]))])
    result = {t.table: t for t in lint_landing_zone(root).tables}
    latin = result["latin"].findings
    assert [(f.rule, f.line, f.stops) for f in latin] == [("content/encoding", 2, True)]
    assert any(f.rule == "metadata/dialect" for f in result["utf16"].findings)
    assert [(f.rule, f.level) for f in result["first"].findings] == [
        ("content/marker-position", "warning")]
    assert result["zero"].stops_at.rule == "content/zero-byte"
    assert result["ok"].findings == []  # a NULL key in an insert is allowed
    strict = {t.table: t for t in lint_landing_zone(root, strict=True).tables}
    assert strict["first"].stops_at.rule == "content/marker-position"


def test_formats_and_exit_codes(tmp_path):
    root = str(tmp_path)
    table(root, "good", {"keyColumns": ["id"]}, [(seq(1), rows([1], [0]))])
    runner = CliRunner()
    clean = runner.invoke(cli, ["lint", root])
    assert clean.exit_code == 0 and "dbo.good" in clean.output and "clean" in clean.output
    table(root, "warned", {"keyColumns": ["id"]}, [(seq(2), rows([1], [0]))])  # a gap
    assert runner.invoke(cli, ["lint", root]).exit_code == 0
    assert runner.invoke(cli, ["lint", root, "--strict"]).exit_code == 1
    table(root, "bad", {"keyColumns": ["id"]}, [(seq(1), rows([None], [1]))])
    out = runner.invoke(cli, ["lint", root, "--format", "json"])
    assert out.exit_code == 1
    doc = json.loads(out.stdout)
    assert doc["summary"] == {"tables": 3, "errors": 1, "warnings": 1}
    bad = next(t for t in doc["tables"] if t["unique_id"] == "dbo.bad")
    assert bad["stops_at"]["file"] == "bad/" + seq(1) and bad["stops_at"]["row"] == 1
    only = json.loads(runner.invoke(cli, ["lint", root, "good", "--format", "json"]).stdout)
    assert [t["unique_id"] for t in only["tables"]] == ["dbo.good"]
    sarif = json.loads(runner.invoke(cli, ["lint", root, "--format", "sarif"]).stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert {r["ruleId"] for r in run["results"]} == set(ids) == {"content/row", "files/gap"}
    error = next(r for r in run["results"] if r["level"] == "error")
    assert error["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "bad/" + seq(1), "uriBaseId": "LANDINGZONE"}
    assert run["originalUriBaseIds"]["LANDINGZONE"]["uri"].startswith("file:///")
    text = runner.invoke(cli, ["lint", root]).output
    assert max(len(line) for line in text.splitlines()) <= 80


def test_sarif_of_a_clean_zone_has_no_results(tmp_path):
    table(str(tmp_path), "good", {"keyColumns": ["id"]}, [(seq(1), rows([1], [0]))])
    doc = to_sarif(lint_landing_zone(str(tmp_path)), "0")
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["tool"]["driver"]["rules"] == []


def test_lint_never_imports_pyspark(tmp_path):
    table(str(tmp_path), "bad", {"keyColumns": ["id"]}, [(seq(1), rows([None], [1]))])
    program = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pyspark', 'py4j', 'delta'):\n"
        "            raise ImportError('lint imported ' + name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from mirrorspec.cli import main\n"
        f"sys.argv = ['mirrorspec', 'lint', {str(tmp_path)!r}, '--format', 'json']\n"
        "main()\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["tables"][0]["stops_at"]["rule"] == "content/row"
    assert "imported" not in done.stderr


def test_a_null_typed_parquet_column_stops_the_table_as_fabric_does(tmp_path):
    """pandas writes an all-null column (a delete file's non-key columns) as INT32 with the
    Null logical type; the service stops the table at that file (docs/semantics.md)."""
    import pandas as pd

    root = str(tmp_path)
    path = table(root, "orders", {"keyColumns": ["id"]},
                 [(seq(1), rows([1, 2], [0, 0], name=pa.array(["a", "b"])))])
    pd.DataFrame({"id": [1], "name": [None], M: [2]}).to_parquet(
        os.path.join(path, seq(2)), index=False)
    assert pq.read_schema(os.path.join(path, seq(2))).field("name").type == pa.null()
    result = {t.table: t for t in lint_landing_zone(root).tables}
    stop = result["orders"].stops_at
    assert (stop.rule, stop.file, stop.stops) == ("content/null-type", "orders/" + seq(2), True)
    assert "'name' has the Parquet Null logical type" in stop.message
    assert "SchemaMergeFailure" in stop.message and "cast it" in stop.message


def test_an_underscore_id_key_is_an_ordinary_column(tmp_path):
    root = str(tmp_path)
    data = pa.table({"_id": pa.array(["a", "b"]), "n": pa.array([1, 2], pa.int64()),
                     M: pa.array([0, 2], pa.int32())})
    table(root, "customers", {"keyColumns": ["_id"]}, [(seq(1), data)])
    result = {t.table: t for t in lint_landing_zone(root).tables}
    assert result["customers"].findings == []


def test_files_never_applied_as_placed(tmp_path):
    """Sequence 0, a file landed again under an applied number, and the kept last file
    rewritten in place after it was applied (its recorded size differs) are reported with what
    the producer must do; the engine warns about the same files (`landing.not_applied_as_placed`)."""
    landing, warehouse = str(tmp_path / "lz"), str(tmp_path / "wh")
    path = table(landing, "t", {"keyColumns": ["id"]},
                 [(seq(0), rows([0], [0])), (seq(1), rows([1], [0])), (seq(2), rows([2, 3], [0, 0]))])
    without_warehouse = lint_landing_zone(landing)
    assert "files/before-processed" in rules(without_warehouse)  # sequence 0
    log = os.path.join(warehouse, "dbo", "t", "_delta_log")
    os.makedirs(log)
    size = os.path.getsize(os.path.join(path, seq(2)))
    with open(os.path.join(log, seq(0, "json")), "w") as handle:
        state = {"mirrorspec": {"sequence": 2, "keys": ["id"], "files": [seq(2)],
                                "stats": {seq(2): [size + 1, 0]}}}
        handle.write(json.dumps({"commitInfo": {"userMetadata": json.dumps(state)}}) + "\n")
    findings = {(f.rule, f.file.rsplit("/", 1)[-1]): f.message
                for f in lint_landing_zone(landing, warehouse=warehouse).all_findings()}
    assert "sequence 0 is never applied" in findings[("files/before-processed", seq(0))]
    assert "sequence 1 was already applied" in findings[("files/before-processed", seq(1))]
    assert "rename it into place" in findings[("files/before-processed", seq(1))]
    assert "changed after it was applied" in findings[("files/changed-after-applied", seq(2))]
