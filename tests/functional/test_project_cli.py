"""The CLI on projects written from dicts: in-process (CliRunner) and as a subprocess."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.support.project_files import write as write_project

from mirrorspec import __version__
from mirrorspec.cli import cli
from tests.support.no_jvm import run_without_jvm, skip_unless

REPO = Path(__file__).resolve().parents[2]
MIRRORSPEC = REPO / ".venv" / "bin" / "mirrorspec"


GOOD = {
    "mirrorspec_project.yml": {"name": "shop", "vars": {"schema": "sales"},
                               "partner": {"name": "acme", "source_type": "SQL"}},
    "tables/orders.yml": {"tables": [
        {"name": "orders", "schema": "{{ var('schema') }}", "key_columns": ["order_id", "line"]},
        {"name": "events", "format": "delimited_text", "key_columns": ["id"],
         "delimited": {"extension": "tsv", "column_separator": "\t"},
         "columns": [{"name": "id", "type": "Int64"}, {"name": "payload", "type": "String"}]},
    ]},
}


def run(args, env=None):
    runner = CliRunner()
    return runner.invoke(cli, args, env=env, catch_exceptions=False)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIRRORSPEC_PROFILES_DIR", raising=False)
    return tmp_path


def test_compile_in_process(in_tmp):
    root = write_project(in_tmp / "shop", GOOD)
    result = run(["compile", "--project-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert "Compiled 2 table(s)" in result.output
    plan = json.loads((root / "target" / "plan.json").read_text())
    assert [t["unique_id"] for t in plan["tables"]] == ["dbo.events", "sales.orders"]
    events = json.loads((root / "target/landing_zone/events/_metadata.json").read_text())
    assert events["FileFormatTypeProperties"] == {"ColumnSeparator": "\t"}


def test_vars_option_overrides_project_vars(in_tmp):
    root = write_project(in_tmp / "shop", GOOD)
    result = run(["compile", "--project-dir", str(root), "--vars", "{schema: prod}"])
    assert result.exit_code == 0, result.output
    assert (root / "target/landing_zone/prod.schema/orders/_metadata.json").exists()
    bad = run(["compile", "--project-dir", str(root), "--vars", "[1, 2]"])
    assert bad.exit_code == 1 and "--vars must be a mapping" in bad.output


def test_validate_reports_every_error_with_file_line_and_exit_1(in_tmp):
    files = dict(GOOD)
    files["tables/orders.yml"] = (
        "tables:\n"
        "  - name: orders\n"
        "    key_colums: [id]\n"          # unknown key
        "    upsert_default: yes please\n"  # wrong type
        "  - name: items\n"
        "    key_columns: [id]\n"
        "    columns: [{name: sku}]\n"    # key not declared
        "  - name: items\n")              # duplicate table
    files["tables/broken.yml"] = "tables:\n  - name: x\n    bad: [\n"
    root = write_project(in_tmp / "shop", files)
    result = run(["validate", "--project-dir", "shop"])
    assert result.exit_code == 1
    out = result.output
    assert "shop/tables/broken.yml:4:1: invalid YAML" in out
    assert "shop/tables/orders.yml:3:5: tables[0].key_colums: unknown key 'key_colums' (did you mean 'key_columns'?)" in out
    assert 'shop/tables/orders.yml:4:21: tables[0].upsert_default: expected true or false, got a string "yes please"' in out
    assert "shop/tables/orders.yml:6:19: tables[1].key_columns[0]: key column 'id' is not a declared column" in out
    assert "shop/tables/orders.yml:8:5: tables[2].name: duplicate table dbo.items" in out
    assert "5 error(s) found." in out
    assert not (root / "target").exists()


def test_validate_ok(in_tmp):
    write_project(in_tmp / "shop", GOOD)
    result = run(["validate", "--project-dir", "shop"])
    assert result.exit_code == 0 and "OK: project shop, 2 table(s)" in result.output


def test_target_and_profiles_dir(in_tmp):
    root = write_project(in_tmp / "shop", GOOD)
    write_project(in_tmp / "conf", {"profiles.yml": {"shop": {"target": "dev", "outputs": {
        "dev": {"landing_zone": "lz_dev"}, "prod": {"landing_zone": "s3a://bucket/lz"}}}}})
    result = run(["compile", "--project-dir", "shop", "--profiles-dir", "conf", "--target", "prod"])
    assert result.exit_code == 0, result.output
    plan = json.loads((root / "target" / "plan.json").read_text())
    assert plan["target"] == "prod" and plan["landing_zone"] == "s3a://bucket/lz"
    result = run(["compile", "--project-dir", "shop", "--profiles-dir", "conf"])
    plan = json.loads((root / "target" / "plan.json").read_text())
    assert plan["landing_zone"] == str((root / "lz_dev").resolve())
    result = run(["compile", "--project-dir", "shop", "--profiles-dir", "conf", "-t", "qa"])
    assert result.exit_code == 1 and "target 'qa' is not an output of profile 'shop'" in result.output


def test_init_then_compile(in_tmp):
    result = run(["init", "newproj"])
    assert result.exit_code == 0, result.output
    assert "yaml-language-server" in result.output
    result = run(["compile", "--project-dir", "newproj"])
    assert result.exit_code == 0, result.output
    again = run(["init", "newproj"])
    assert again.exit_code == 1 and "already exists" in again.output


def test_missing_project_is_exit_1_with_a_hint(in_tmp):
    result = run(["compile"])
    assert result.exit_code == 1
    assert "no mirrorspec_project.yml" in result.output and "mirrorspec init" in result.output


def test_json_log_format_reports_errors_as_json(in_tmp):
    write_project(in_tmp / "shop", {"mirrorspec_project.yml": {"name": "shop", "nme": 1}})
    result = run(["--log-format", "json", "validate", "--project-dir", "shop"])
    assert result.exit_code == 1
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["event"] == "error" and "unknown key 'nme'" in record["message"]


# --- as a subprocess ------------------------------------------------------------------------------

def test_subprocess_compile_and_version(tmp_path):
    skip_unless(MIRRORSPEC.exists(), "needs the .venv console script")
    root = write_project(tmp_path / "shop", GOOD)
    version = subprocess.run([str(MIRRORSPEC), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and __version__ in version.stdout
    # the package and what it runs with, read from the installed metadata (no JVM started)
    assert re.search(r"Spark \d+\.\d+\.\d+, Delta Lake \d+\.\d+\.\d+, Python 3\.", version.stdout), \
        version.stdout
    done = subprocess.run([str(MIRRORSPEC), "compile", "--project-dir", str(root)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (root / "target" / "plan.json").exists()
    (root / "tables" / "orders.yml").write_text("tables:\n  - name: a\n    formt: csv\n")
    failed = subprocess.run([str(MIRRORSPEC), "validate", "--project-dir", "shop"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert failed.returncode == 1
    assert "shop/tables/orders.yml:3:5: tables[0].formt: unknown key 'formt' (did you mean 'format'?)" in failed.stderr




@pytest.mark.parametrize("command", [["validate"], ["compile"]])
def test_compile_and_validate_work_where_pyspark_cannot_be_imported(tmp_path, command):
    root = write_project(tmp_path / "shop", GOOD)
    done = run_without_jvm(*command, "--project-dir", str(root), cwd=tmp_path, log_format="text")
    assert done.returncode == 0, done.stdout + done.stderr
    if command == ["compile"]:
        assert (root / "target" / "plan.json").exists()


def test_the_blocker_refuses_pyspark(tmp_path, monkeypatch):
    """The subprocess of the tests above really can't import pyspark: `run` needs it."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the crash log goes
    assert run_without_jvm("init", "p1", cwd=tmp_path, log_format="text").returncode == 0
    done = run_without_jvm("run", "--project-dir", "p1", cwd=tmp_path, log_format="text")
    assert done.returncode == 2 and "pyspark is blocked in this test" in done.stderr


def test_init_works_where_pyspark_cannot_be_imported(tmp_path):
    done = run_without_jvm("init", "p1", cwd=tmp_path, log_format="text")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "p1" / "mirrorspec_project.yml").exists()


def test_compile_prints_what_it_inferred_from_a_feed(in_tmp, monkeypatch):
    from mirrorspec import sources
    from mirrorspec.sources.base import InferredColumn, InferredSchema

    def fake_infer(source_type, path, options):
        assert source_type == "debezium" and path.endswith("feeds/customers")
        return InferredSchema((InferredColumn("id", "Int64", False), InferredColumn("name", "String")),
                              ("id",), "feeds/customers/schema.json:1")

    monkeypatch.setattr(sources, "infer_schema", fake_infer)
    write_project(in_tmp / "shop", {
        "mirrorspec_project.yml": {"name": "shop"},
        "tables/c.yml": {"tables": [{"name": "customers", "source": {"type": "debezium",
                                                                      "path": "feeds/customers"}}]}})
    result = run(["compile", "--project-dir", "shop"])
    assert result.exit_code == 0, result.output
    assert ("dbo.customers: inferred key_columns id from the feed "
            "(feeds/customers/schema.json:1)") in result.output
    assert "dbo.customers: inferred columns id, name from the feed" in result.output
    plan = json.loads((in_tmp / "shop/target/plan.json").read_text())
    assert plan["tables"][0]["key_columns"] == ["id"]
    assert plan["tables"][0]["metadata"] == {"keyColumns": ["id"]}


def test_a_failing_reader_is_a_located_error_not_a_crash(in_tmp, monkeypatch):
    from mirrorspec import sources

    def broken(source_type, path, options):
        raise ValueError("bad header")

    monkeypatch.setattr(sources, "infer_schema", broken)
    write_project(in_tmp / "shop", {
        "mirrorspec_project.yml": {"name": "shop"},
        "tables/c.yml": {"tables": [{"name": "c", "source": {"type": "arcion", "path": "f"}}]}})
    result = run(["compile", "--project-dir", "shop"])
    assert result.exit_code == 1
    assert "shop/tables/c.yml:4:5: tables[0].source: the arcion reader failed" in result.output
