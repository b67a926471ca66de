"""Stage compile: `_metadata.json` (golden), `_partnerEvents.json`, plan.json, determinism."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from mirrorspec.openmirroring import mirroring
from mirrorspec.compile import compile_project, validate_project
from mirrorspec.artifacts.plan import read_plan, resolve_secrets, secret_placeholder
from mirrorspec.base.errors import MirrorspecError, ProjectError
from tests.support.project_files import write

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def make(tmp_path: Path, tables: list, project: dict | None = None, profiles: dict | None = None) -> Path:
    files = {"mirrorspec_project.yml": {"name": "p", **(project or {})},
             "tables/t.yml": {"tables": tables}}
    if profiles is not None:
        files["profiles.yml"] = profiles
    return write(tmp_path / "proj", files)


def metadata_of(root: Path, folder: str) -> dict:
    return json.loads((root / "target" / "landing_zone" / folder / "_metadata.json").read_text())


def copy_example(name: str, tmp_path: Path) -> Path:
    destination = tmp_path / name
    shutil.copytree(REPO / "projects" / name, destination,
                    ignore=shutil.ignore_patterns("target", "landing_zone", "warehouse"))
    return destination


# --- _metadata.json ------------------------------------------------------------------------------

def test_golden_tsv_example_of_the_seed(tmp_path):
    root = copy_example("tsv_seed", tmp_path)
    compile_project(root)
    written = (root / "target" / "landing_zone" / "people" / "_metadata.json").read_text()
    assert written == (root / "expected_metadata.json").read_text()
    doc = json.loads(written)  # valid JSON, unlike the seed's printed example
    assert doc["FileFormatTypeProperties"]["EscapeCharacter"] == "\\"
    assert "IsNullable" not in doc["SchemaDefinition"]["Columns"][0]
    parsed = mirroring.parse_metadata(doc, "x")  # and the engine's reader accepts it
    assert parsed.key_columns == ("id",) and parsed.file_extension == "tsv"


def test_golden_parquet_orders(tmp_path):
    root = copy_example("parquet_orders", tmp_path)
    compile_project(root)
    assert metadata_of(root, "sales.schema/orders") == {"keyColumns": ["order_id", "line_no"]}
    assert metadata_of(root, "sales.schema/customers") == {"keyColumns": ["customer_id"]}
    assert metadata_of(root, "inventory.schema/products") == {"keyColumns": ["sku"],
                                                              "isUpsertDefaultRowMarker": True}
    assert metadata_of(root, "inventory.schema/stock") == {"keyColumns": ["warehouse_id", "sku"]}
    partner = json.loads((root / "target/landing_zone/_partnerEvents.json").read_text())
    assert partner == {"partnerName": "mirrorspec", "sourceInfo": {
        "sourceType": "SQL", "sourceVersion": "2019",
        "additionalInformation": {"project": "parquet_orders"}}}


def test_metadata_holds_only_what_was_set(tmp_path):
    root = make(tmp_path, [
        {"name": "plain"},
        {"name": "keyed", "key_columns": ["a", "b"], "file_detection": "sequential"},
        {"name": "lut", "key_columns": ["id"], "file_detection": "last_update_time",
         "upsert_default": False},
        {"name": "csv_t", "format": "csv", "columns": [{"name": "id", "type": "Int64"}],
         "delimited": {"null_value": "NULL"}},
        {"name": "ext", "format": "csv", "delimited": {"extension": ".txt"}},
        {"name": "dt", "format": "delimited_text",
         "delimited": {"extension": "psv", "column_separator": "|"}},
        {"name": "pq", "columns": [{"name": "id", "type": "Int64"}]},
    ])
    compile_project(root)
    assert metadata_of(root, "plain") == {}
    assert metadata_of(root, "keyed") == {"keyColumns": ["a", "b"]}
    assert metadata_of(root, "lut") == {"keyColumns": ["id"],
                                        "fileDetectionStrategy": "LastUpdateTimeFileDetection",
                                        "isUpsertDefaultRowMarker": False}
    assert metadata_of(root, "csv_t") == {
        "SchemaDefinition": {"Columns": [{"Name": "id", "DataType": "Int64"}]},
        "FileFormatTypeProperties": {"NullValue": "NULL"}}
    assert metadata_of(root, "ext") == {"FileExtension": "txt"}
    assert metadata_of(root, "dt") == {"FileFormat": "DelimitedText", "FileExtension": "psv",
                                       "FileFormatTypeProperties": {"ColumnSeparator": "|"}}
    assert metadata_of(root, "pq") == {}  # parquet files carry their own types


def test_every_generated_metadata_is_accepted_by_the_engine_reader(tmp_path):
    root = make(tmp_path, [
        {"name": "t1", "key_columns": ["id"], "upsert_default": True,
         "file_detection": "last_update_time", "format": "delimited_text",
         "delimited": {"extension": "tsv", "first_row_as_header": True, "row_separator": "\n",
                       "column_separator": "\t", "quote_character": "", "escape_character": "",
                       "null_value": "", "encoding": "windows-1252"},
         "columns": [{"name": "id", "type": "Int64", "nullable": False},
                     {"name": "b", "type": "ByteArray"}]},
    ])
    result = compile_project(root)
    text = (root / "target/landing_zone/t1/_metadata.json").read_text()
    meta = mirroring.parse_metadata_text(text, "t1")
    assert meta.upsert_default and meta.last_update_time_detection
    assert meta.delimited.column_separator == "\t" and meta.delimited.encoding == "windows-1252"
    assert meta.columns == (mirroring.ColumnDefinition("id", "Int64", False),
                            mirroring.ColumnDefinition("b", "ByteArray", True))
    assert result.plan.tables[0].metadata == json.loads(text)


def test_no_partner_events_without_partner(tmp_path):
    root = make(tmp_path, [{"name": "a"}])
    result = compile_project(root)
    assert result.plan.partner_events is None
    assert not (root / "target/landing_zone/_partnerEvents.json").exists()


# --- plan.json -----------------------------------------------------------------------------------

def test_plan_with_default_locations(tmp_path):
    root = make(tmp_path, [{"name": "orders", "schema": "sales", "key_columns": ["id"],
                            "columns": [{"name": "id", "type": "Int64", "nullable": False,
                                         "description": "k"}, {"name": "v"}],
                            "tags": ["x"], "description": "d", "recreate": True}])
    result = compile_project(root)
    plan = read_plan(root / "target" / "plan.json")
    base = str(root.resolve())
    assert plan.plan_version == 1 and plan.project_name == "p"
    assert (plan.profile, plan.target) == ("p", "default")
    assert plan.landing_zone == base + "/landing_zone"
    assert plan.warehouse == base + "/warehouse"
    assert plan.state_path == base + "/warehouse/_mirrorspec"
    assert (plan.spark.master, plan.spark.remote, plan.spark.conf) == ("local[*]", None, {})
    table = plan.tables[0]
    assert table.unique_id == "sales.orders" and table.warehouse_schema == "sales"
    assert table.landing_path == base + "/landing_zone/sales.schema/orders"
    assert table.delta_path == base + "/warehouse/sales/orders"
    assert table.metadata == {"keyColumns": ["id"]}
    assert [(c.name, c.type, c.nullable, c.description) for c in table.columns] == [
        ("id", "Int64", False, "k"), ("v", None, True, None)]
    assert (table.file_format, table.source.type, table.source.path) == ("parquet", "landing_zone", None)
    assert [s.step for s in table.steps] == ["MirrorTable"]
    assert (table.tags, table.description, table.recreate, table.yaml_file) == (
        ["x"], "d", True, "tables/t.yml")
    assert result.plan == plan


def test_plan_locations_from_profile_paths_and_uris(tmp_path):
    root = make(tmp_path, [{"name": "t"}, {"name": "f", "schema": "s", "format": "csv",
                                          "source": {"type": "csv", "path": "feeds/f",
                                                     "options": {"header": True}}}],
                profiles={"p": {"outputs": {"default": {
                    "landing_zone": "abfss://ws@onelake.dfs.fabric.microsoft.com/db/Files/LandingZone/",
                    "warehouse": "../wh",
                    "spark": {"remote": "sc://localhost:15002", "conf": {"a.b": 1, "c": False}}}}}})
    plan = compile_project(root).plan
    assert plan.landing_zone == "abfss://ws@onelake.dfs.fabric.microsoft.com/db/Files/LandingZone"
    assert plan.warehouse == str(tmp_path.resolve() / "wh")
    assert plan.spark.remote == "sc://localhost:15002" and plan.spark.conf == {"a.b": "1", "c": "false"}
    feed = plan.table("s.f")
    assert feed.landing_path == plan.landing_zone + "/s.schema/f"
    assert feed.source.path == str(root.resolve() / "feeds" / "f")
    assert feed.source.options == {"header": True}
    assert [s.step for s in feed.steps] == ["PublishFeed", "MirrorTable"]
    assert plan.table("dbo.t").landing_path == plan.landing_zone + "/t"
    assert [t.unique_id for t in plan.tables] == ["dbo.t", "s.f"]


def test_tables_are_sorted_by_unique_id(tmp_path):
    root = make(tmp_path, [{"name": "z"}, {"name": "b", "schema": "a"}, {"name": "a"}])
    assert [t.unique_id for t in compile_project(root).plan.tables] == ["a.b", "dbo.a", "dbo.z"]


def test_compile_writes_the_json_modules_text_byte_for_byte(tmp_path):
    root = copy_example("parquet_orders", tmp_path)
    plan = compile_project(root).plan
    expected = json.dumps(asdict(plan), indent=2, ensure_ascii=False) + "\n"
    assert (root / "target" / "plan.json").read_text(encoding="utf-8") == expected
    written = sorted((root / "target" / "landing_zone").rglob("*.json"))
    assert written  # every table's _metadata.json
    for path in written:
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert path.read_text(encoding="utf-8") == json.dumps(doc, indent=2,
                                                              ensure_ascii=False) + "\n"


def test_compiling_twice_gives_byte_identical_files(tmp_path):
    root = copy_example("parquet_orders", tmp_path)
    first = compile_project(root)
    before = {p: p.read_bytes() for p in (root / "target").rglob("*") if p.is_file()}
    second = compile_project(root)
    after = {p: p.read_bytes() for p in (root / "target").rglob("*") if p.is_file()}
    assert before == after and first.files == second.files
    text = (root / "target" / "plan.json").read_text()
    assert "generated_at" not in text and "timestamp" not in text


def test_removed_tables_leave_no_stale_metadata(tmp_path):
    root = make(tmp_path, [{"name": "a"}, {"name": "b", "schema": "s"}], {"partner": {"name": "x"}})
    compile_project(root)
    assert (root / "target/landing_zone/s.schema/b/_metadata.json").exists()
    write(root, {"tables/t.yml": {"tables": [{"name": "a"}]},
                 "mirrorspec_project.yml": {"name": "p"}})
    (root / "target" / "notes.txt").write_text("mine")
    compile_project(root)
    assert not (root / "target/landing_zone/s.schema").exists()
    assert not (root / "target/landing_zone/_partnerEvents.json").exists()
    assert (root / "target/landing_zone/a/_metadata.json").exists()
    assert (root / "target/notes.txt").read_text() == "mine"


def test_target_path_setting(tmp_path):
    root = make(tmp_path, [{"name": "a"}], {"target-path": "build/out"})
    result = compile_project(root)
    assert result.plan_path == root.resolve() / "build" / "out" / "plan.json"
    assert result.plan_path.exists()


def test_validate_writes_nothing(tmp_path):
    root = make(tmp_path, [{"name": "a"}])
    result = validate_project(root)
    assert not (root / "target").exists()
    assert set(result.files) == {"landing_zone/a/_metadata.json", "plan.json"}


# --- the landing zone already holds keys ------------------------------------------------------

def test_keys_cannot_change_once_in_the_landing_zone(tmp_path):
    root = make(tmp_path, [{"name": "orders", "schema": "s", "key_columns": ["id", "line"]}])
    folder = root / "landing_zone" / "s.schema" / "orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    with pytest.raises(ProjectError) as info:
        compile_project(root)
    text = info.value.render()
    # the error points at key_columns (what to change), not at the table name
    assert text.startswith("proj/tables/t.yml:4:3: tables[0].key_columns: s.orders: key_columns "
                           "['id', 'line'] differ from keyColumns ['id']")
    assert "set `recreate: true` on the table, delete its landing folder" in text
    assert str(folder) in text
    assert not (root / "target").exists()
    # the same keys (or none there yet) compile
    (folder / "_metadata.json").write_text('{"KeyColumns": ["id", "line"]}')
    compile_project(root)
    (folder / "_metadata.json").write_text('{}')
    compile_project(root)
    # keys compare as the engine compares them (mirroring.keys_differ): a set of names, any case
    for same in ('["ID", "Line"]', '["line", "id"]'):
        (folder / "_metadata.json").write_text(f'{{"keyColumns": {same}}}')
        compile_project(root)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id", "v"]}')
    with pytest.raises(ProjectError):
        compile_project(root)


def test_recreate_true_lets_compile_accept_a_key_change_and_the_hints_agree(tmp_path):
    """The hint of a refused key change says to set `recreate: true` — and with it compile
    accepts the change (the landing folder is recreated by `run --full-refresh`), with the
    same procedure in compile's hint, run's KeyColumnsChanged and diff's action."""
    from mirrorspec.landing.deploy import deploy_metadata, recreate_procedure
    from mirrorspec.base.errors import LandingZoneError
    from mirrorspec.project.diff import Change

    feed = {"name": "orders", "schema": "s", "key_columns": ["id", "line"],
            "columns": [{"name": "id", "type": "Int64"}, {"name": "line", "type": "Int32"}],
            "source": {"type": "csv", "path": "feeds"}}
    root = make(tmp_path, [feed])
    (root / "feeds").mkdir()
    folder = root / "landing_zone" / "s.schema" / "orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    with pytest.raises(ProjectError) as info:
        compile_project(root)
    procedure = recreate_procedure("s.orders", publishes=True)
    assert procedure in info.value.render()
    assert "--full-refresh --select s.orders" in procedure and "recreate: true" in procedure
    root = make(tmp_path / "again", [{**feed, "recreate": True}])
    (root / "feeds").mkdir()
    folder = root / "landing_zone" / "s.schema" / "orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    result = compile_project(root)  # acknowledged: no error
    table = result.plan.tables[0]
    with pytest.raises(LandingZoneError) as refused:  # `run` without --full-refresh
        deploy_metadata(table)
    assert refused.value.hint == recreate_procedure("s.orders", True, table.landing_path)
    assert "--full-refresh --select s.orders" in Change("key_columns_changed").action("s.orders")


# --- secrets --------------------------------------------------------------------------------------

def test_secrets_never_land_in_target(tmp_path):
    root = make(tmp_path, [{"name": "a", "source": {"type": "debezium", "path": "feed", "options": {
        "table": "{{ env_var('MIRRORSPEC_SECRET_DB_PASSWORD') }}"}}}],
        profiles={"p": {"outputs": {"default": {"spark": {"conf": {
            "fs.azure.account.key": "{{ env_var('MIRRORSPEC_SECRET_STORAGE_KEY') }}"}}}}}})
    environ = {"MIRRORSPEC_SECRET_DB_PASSWORD": "hunter2", "MIRRORSPEC_SECRET_STORAGE_KEY": "k3y"}
    result = compile_project(root, environ=environ, infer=lambda *a: None)
    for path in (root / "target").rglob("*"):
        if path.is_file():
            assert b"hunter2" not in path.read_bytes() and b"k3y" not in path.read_bytes()
    plan = result.plan
    assert plan.tables[0].source.options["table"] == secret_placeholder("MIRRORSPEC_SECRET_DB_PASSWORD")
    assert resolve_secrets(plan.spark.conf, environ) == {"fs.azure.account.key": "k3y"}


def test_vars_from_project_and_cli(tmp_path):
    root = make(tmp_path, [{"name": "{{ var('table') }}", "schema": "{{ var('schema') }}"}],
                {"vars": {"table": "orders", "schema": "sales"}})
    assert compile_project(root).plan.tables[0].unique_id == "sales.orders"
    assert compile_project(root, vars="{schema: prod}").plan.tables[0].unique_id == "prod.orders"
    assert compile_project(root, vars={"table": "x"}).plan.tables[0].unique_id == "sales.x"


def test_an_unwritable_target_is_a_user_error(tmp_path):
    root = make(tmp_path, [{"name": "a"}])
    (root / "target").write_text("a file where the target folder should be")
    with pytest.raises(MirrorspecError, match="cannot write"):
        compile_project(root)
