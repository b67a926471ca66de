"""Stage model: defaults, cross-checks (each located), data tests, feed inference."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mirrorspec.compile import load_project
from mirrorspec.base.errors import ProjectError
from mirrorspec.sources.base import InferredColumn, InferredSchema
from tests.support.project_files import write


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Messages name files relative to the working directory: work inside the project."""
    monkeypatch.chdir(tmp_path)


def project(tmp_path: Path, tables: list | str, project_extra: dict | None = None, **kwargs):
    files = {"mirrorspec_project.yml": {"name": "p", **(project_extra or {})},
             "tables/t.yml": tables if isinstance(tables, str) else {"tables": tables}}
    write(tmp_path, files)
    return load_project(tmp_path, environ={}, **kwargs)


def errors(tmp_path: Path, tables, **kwargs) -> list[str]:
    with pytest.raises(ProjectError) as info:
        project(tmp_path, tables, **kwargs)
    return [p.render() for p in info.value.problems]


def test_a_minimal_table_gets_the_defaults(tmp_path):
    proj = project(tmp_path, [{"name": "orders"}])
    table = proj.tables[0]
    assert (table.unique_id, table.schema, table.format, table.file_detection) == (
        "dbo.orders", None, "parquet", "sequential")
    assert table.source.type == "landing_zone" and table.upsert_default is None
    assert table.yaml_file == "tables/t.yml"
    assert proj.output.landing_zone == "landing_zone" and proj.output.spark_master == "local[*]"


def test_defaults_are_inherited_and_merge(tmp_path):
    proj = project(tmp_path, [
        {"name": "a"},
        {"name": "b", "schema": "other", "tags": ["b"], "format": "csv",
         "source": {"type": "csv", "path": "feeds/b"}},
    ], {"defaults": {"schema": "sales", "tags": ["all"], "format": "parquet",
                     "source": {"options": {"delimiter": ";"}}}},
        infer=lambda *a: None)
    a, b = sorted(proj.tables, key=lambda t: t.name)
    assert (a.unique_id, a.tags, a.format) == ("sales.a", ("all",), "parquet")
    assert (b.unique_id, b.tags, b.format) == ("other.b", ("all", "b"), "csv")
    assert b.source.options == {"delimiter": ";"} and b.source.path == "feeds/b"


def test_problem_in_an_inherited_value_points_at_the_project_defaults(tmp_path):
    problems = errors(tmp_path, [{"name": "a"}],
                      project_extra={"defaults": {"upsert_default": True}})
    assert len(problems) == 1
    assert problems[0].startswith("mirrorspec_project.yml:3:19: defaults.upsert_default: "
                                  "upsert_default needs key_columns")


def test_key_columns_must_be_declared_columns(tmp_path):
    text = ("tables:\n  - name: a\n    key_columns: [id, ID2]\n    columns:\n"
            "      - {name: id}\n      - {name: id2}\n")
    problems = errors(tmp_path, text)
    assert problems == ["tables/t.yml:3:23: tables[0].key_columns[1]: key column 'ID2' is not a "
                        "declared column (did you mean 'id2'?)"]


def test_duplicate_tables_across_files(tmp_path):
    write(tmp_path, {"tables/more.yml": {"tables": [{"name": "Orders", "schema": "dbo"}]}})
    problems = errors(tmp_path, [{"name": "orders"}])
    assert len(problems) == 1
    assert problems[0] == ("tables/t.yml:2:3: tables[0].name: duplicate table dbo.orders "
                           "(also defined at tables/more.yml:2:9: tables[0].name)")


def test_duplicate_columns_are_case_insensitive(tmp_path):
    problems = errors(tmp_path, [{"name": "a", "columns": [{"name": "Id"}, {"name": "id"}]}])
    assert len(problems) == 1 and "duplicate column 'id'" in problems[0]
    assert "tables[0].columns[1].name" in problems[0]


@pytest.mark.parametrize("name,reason", [
    ("a/b", "path separator"), ("a\\b", "path separator"), ("..", "'..'"), ("x..y", "'..'"),
    ("_hidden", "starts with '_'"), ("a\x01", "control character"), ("__rowMarker__", "reserved"),
    ("t.schema", "reserved for schema folders"),
])
def test_unsafe_table_names(tmp_path, name, reason):
    problems = errors(tmp_path, [{"name": name}])
    assert len(problems) == 1 and reason in problems[0] and "tables[0].name" in problems[0]


def test_unsafe_schema_and_column_names(tmp_path):
    problems = errors(tmp_path, [{"name": "a", "schema": "s/x",
                                  "columns": [{"name": "__rowMarker__"}, {"name": "__c"},
                                              {"name": "_Op"}]}])
    assert len(problems) == 4
    assert "schema name 's/x'" in problems[0]
    assert "'__rowMarker__' is reserved" in problems[1]
    assert "column '__c' starts with '__'" in problems[2]
    assert "column '_Op' is reserved for mirrorspec's change columns" in problems[3]


def test_mongodb_id_is_a_column_and_a_key(tmp_path):
    table = project(tmp_path, [{"name": "a", "key_columns": ["_id"],
                               "columns": [{"name": "_id"}, {"name": "_class"}]}]).tables[0]
    assert table.key_columns == ("_id",) and [c.name for c in table.columns] == ["_id", "_class"]
    problems = errors(tmp_path, [{"name": "_a"}])
    assert len(problems) == 1 and "starts with '_'" in problems[0]


def test_reserved_columns_are_the_change_columns():
    from mirrorspec.openmirroring import mirroring
    from mirrorspec.sources import base

    names = {*base.CHANGE_COLUMNS, base.PAIR_COLUMN, base.ERROR_COLUMN}
    assert names <= mirroring.RESERVED_COLUMNS


def test_upsert_default_without_keys(tmp_path):
    problems = errors(tmp_path, [{"name": "a", "upsert_default": True}])
    assert len(problems) == 1 and "upsert_default needs key_columns" in problems[0]
    # false without keys is fine: it only states the default
    assert project(tmp_path, [{"name": "a", "upsert_default": False}]).tables[0].upsert_default is False


def test_delimited_rules(tmp_path):
    problems = errors(tmp_path, [
        {"name": "a", "format": "delimited_text"},
        {"name": "b", "format": "delimited_text", "delimited": {"null_value": ""}},
        {"name": "c", "delimited": {"extension": "csv"}},
        {"name": "d", "format": "csv", "delimited": {"encoding": "no-such-codec"}},
        {"name": "e", "format": "csv", "columns": [{"name": "x"}]},
        {"name": "f", "format": "delimited_text", "delimited": {"extension": "a/b"}},
    ])
    assert len(problems) == 6
    assert "tables[0].format: a delimited_text table needs delimited.extension" in problems[0]
    assert "tables[1].delimited: delimited_text needs delimited.extension" in problems[1]
    assert "tables[2].delimited: delimited applies to csv and delimited_text tables, not parquet" in problems[2]
    assert "unknown encoding 'no-such-codec'" in problems[3]
    assert "column 'x' needs a type" in problems[4]
    assert "extension 'a/b' is not a file extension" in problems[5]


def test_source_rules(tmp_path):
    problems = errors(tmp_path, [{"name": "a", "source": {"type": "debezium"}},
                                 {"name": "b", "source": {"path": "x"}}])
    assert "source type debezium needs a path" in problems[0]
    assert "a landing_zone source has no path" in problems[1]


def test_data_tests_are_normalised(tmp_path):
    proj = project(tmp_path, [
        {"name": "customers", "schema": "sales", "key_columns": ["id"],
         "columns": [{"name": "id"}, {"name": "status"}]},
        {"name": "orders", "key_columns": ["order_id", "line"],
         "tests": ["unique", "not_null", "row_count",
                   {"unique": {"columns": ["order_id"], "severity": "warn"}},
                   {"accepted_values": {"column": "status", "values": ["a", "b"]}},
                   {"relationships": {"column": "customer_id", "to": "customers", "field": "id"}},
                   {"relationships": {"column": "id", "to": "sales.customers"}},
                   {"freshness": {"max_age_seconds": 3600, "severity": "warn"}},
                   {"row_count": {}}]},
    ])
    orders = next(t for t in proj.tables if t.name == "orders")
    assert list(orders.tests) == [
        {"type": "unique", "severity": "error", "columns": ["order_id", "line"]},
        {"type": "not_null", "severity": "error", "columns": ["order_id", "line"]},
        {"type": "row_count", "severity": "error"},
        {"type": "unique", "severity": "warn", "columns": ["order_id"]},
        {"type": "accepted_values", "severity": "error", "column": "status", "values": ["a", "b"]},
        {"type": "relationships", "severity": "error", "column": "customer_id",
         "to": "sales.customers", "field": "id"},
        {"type": "relationships", "severity": "error", "column": "id", "to": "sales.customers",
         "field": "id"},
        {"type": "freshness", "severity": "warn", "max_age_seconds": 3600},
        {"type": "row_count", "severity": "error"},
    ]


def test_data_test_references_are_checked(tmp_path):
    problems = errors(tmp_path, [
        {"name": "a", "columns": [{"name": "id"}],
         "tests": ["unique", {"not_null": {"columns": ["idd"]}},
                   {"relationships": {"column": "id", "to": "nope"}},
                   {"relationships": {"column": "id", "to": "b", "field": "zz"}}]},
        {"name": "b", "columns": [{"name": "id"}]},
    ])
    assert len(problems) == 4
    assert "unique needs columns: the table has no key_columns" in problems[0]
    assert "not_null: 'idd' is not a declared column (did you mean 'id'?)" in problems[1]
    assert "relationships: no table 'nope' in the project" in problems[2]
    assert "'zz' is not a declared column" in problems[3]


def _feed(columns, keys, origin="feed/x.json:1"):
    schema = InferredSchema(tuple(InferredColumn(n, t, True) for n, t in columns), tuple(keys), origin)
    calls = []

    def infer(source_type, path, options):
        calls.append((source_type, path, options))
        return schema
    return infer, calls


def test_feed_inference_fills_missing_columns_and_keys(tmp_path):
    infer, calls = _feed([("id", "Int64"), ("name", "String")], ["id"])
    proj = project(tmp_path, [{"name": "a", "source": {"type": "qlik_replicate", "path": "feed",
                                                       "options": {"decimal": "string"}}}], infer=infer)
    table = proj.tables[0]
    assert table.key_columns == ("id",)
    assert [(c.name, c.type) for c in table.columns] == [("id", "Int64"), ("name", "String")]
    assert calls == [("qlik_replicate", str(tmp_path.resolve() / "feed"), {"decimal": "string"})]
    assert table.inferred == ("columns id, name from the feed (feed/x.json:1)",
                              "key_columns id from the feed (feed/x.json:1)")


def test_feed_inference_is_not_asked_when_yaml_says_everything(tmp_path):
    infer, calls = _feed([("id", "Int64")], ["id"])
    project(tmp_path, [{"name": "a", "key_columns": ["id"], "columns": [{"name": "id"}],
                        "source": {"type": "debezium", "path": "feed"}}], infer=infer)
    assert calls == []


def test_feed_returning_none_changes_nothing(tmp_path):
    proj = project(tmp_path, [{"name": "a", "source": {"type": "arcion", "path": "feed"}}],
                   infer=lambda *a: None)
    assert proj.tables[0].columns == () and proj.tables[0].key_columns == ()


def test_conflicts_between_yaml_and_feed_are_errors(tmp_path):
    infer, _ = _feed([("id", "Int64"), ("name", "String")], ["id"])
    problems = errors(tmp_path, [
        {"name": "a", "key_columns": ["name"], "source": {"type": "debezium", "path": "f"}},
        {"name": "b", "columns": [{"name": "id", "type": "String"}, {"name": "extra"}],
         "source": {"type": "debezium", "path": "f"}},
    ], infer=infer)
    assert len(problems) == 3
    assert "key_columns ['name'] differ from the feed's key ['id'] (feed/x.json:1)" in problems[0]
    assert "column 'id' is String here but Int64 in the feed" in problems[1]
    assert "column 'extra' is not in the feed" in problems[2]


def test_profiles_select_output_and_target(tmp_path):
    write(tmp_path, {"profiles.yml": {"p": {"target": "dev", "outputs": {
        "dev": {"landing_zone": "lz", "spark": {"conf": {"n": 2, "b": True}}},
        "prod": {"landing_zone": "abfss://x@y/Files/LandingZone", "warehouse": "s3a://b/w",
                 "spark": {"master": "spark://h:7077"}}}}}})
    dev = project(tmp_path, [{"name": "a"}]).output
    assert (dev.target, dev.landing_zone, dev.spark_conf) == ("dev", "lz", {"n": "2", "b": "true"})
    prod = load_project(tmp_path, target="prod", environ={}).output
    assert (prod.landing_zone, prod.warehouse, prod.spark_master) == (
        "abfss://x@y/Files/LandingZone", "s3a://b/w", "spark://h:7077")
    with pytest.raises(ProjectError) as info:
        load_project(tmp_path, target="prd", environ={})
    assert "target 'prd' is not an output of profile 'p' (did you mean 'prod'?)" in info.value.render()


def test_profile_missing_from_project_profiles_is_an_error(tmp_path):
    write(tmp_path, {"profiles.yml": {"other": {"outputs": {"dev": {}}}}})
    problems = errors(tmp_path, [{"name": "a"}])
    assert len(problems) == 1 and problems[0].startswith("profiles.yml:1:1: profile 'p' is not defined")


def test_profiles_dir_option_and_missing_file(tmp_path):
    elsewhere = tmp_path / "conf"
    write(elsewhere, {"profiles.yml": {"p": {"outputs": {"ci": {"warehouse": "/w"}}}}})
    proj = project(tmp_path / "proj", [{"name": "a"}], profiles_dir=elsewhere)
    assert (proj.output.target, proj.output.warehouse) == ("ci", "/w")
    with pytest.raises(ProjectError) as info:
        load_project(tmp_path / "proj", profiles_dir=tmp_path / "nowhere", environ={})
    assert "no profiles.yml" in info.value.render()


def test_target_without_profiles_is_an_error(tmp_path):
    with pytest.raises(ProjectError) as info:
        project(tmp_path, [{"name": "a"}], target="prod")
    assert "no profiles.yml defining profile 'p'" in info.value.render()


def test_schema_errors_and_cross_check_errors_come_together(tmp_path):
    problems = errors(tmp_path, [{"name": "a", "formt": "csv"},
                                 {"name": "b", "upsert_default": True}])
    assert len(problems) == 2
    assert "unknown key 'formt'" in problems[0] and "upsert_default needs key_columns" in problems[1]


def test_missing_project_file_says_what_to_do(tmp_path):
    with pytest.raises(ProjectError) as info:
        load_project(tmp_path)
    assert "no mirrorspec_project.yml" in info.value.render() and "mirrorspec init" in info.value.render()


def test_table_paths_must_exist_when_configured(tmp_path):
    problems = errors(tmp_path, [{"name": "a"}], project_extra={"table-paths": ["tables", "nope"]})
    assert problems == ["mirrorspec_project.yml:4:3: table-paths[1]: table path 'nope' is not a "
                        "folder of the project"]


def test_a_feed_type_that_is_not_a_data_type_is_an_error(tmp_path):
    infer, _ = _feed([("id", "Int64"), ("blob", "Decimal(10,2)")], ["id"])
    problems = errors(tmp_path, [{"name": "a", "source": {"type": "debezium", "path": "f"}}],
                      infer=infer)
    assert len(problems) == 1
    assert "gives column 'blob' the type 'Decimal(10,2)', which is not a DataType" in problems[0]


def test_source_options_are_checked_when_type_and_options_come_from_two_files(tmp_path):
    """Each file is valid alone; the merged source (type from defaults) has an unknown option."""
    problems = errors(tmp_path, [{"name": "a", "columns": [{"name": "id", "type": "Int32"}],
                                  "key_columns": ["id"],
                                  "source": {"path": "feed", "options": {"time_unit": "s"}}}],
                      project_extra={"defaults": {"source": {"type": "debezium"}}})
    assert len(problems) == 1, problems
    assert problems[0].startswith("tables/t.yml:")
    assert "source.options.time_unit: \"s\" is not one of" in problems[0], problems


@pytest.mark.parametrize("output", [
    {"landing_zone": "data", "warehouse": "data/warehouse"},
    {"landing_zone": "data/lz", "warehouse": "./data"},
    {"landing_zone": "same", "warehouse": "same/"},
])
def test_a_warehouse_overlapping_the_landing_zone_is_a_located_error(tmp_path, output):
    write(tmp_path, {"profiles.yml": {"p": {"outputs": {"dev": output}}}})
    problems = errors(tmp_path, [{"name": "a"}])
    assert len(problems) == 1, problems
    assert re.match(r"profiles\.yml:\d+:\d+: p\.outputs\.dev\.\w+: the landing zone .* and the "
                    r"warehouse .* overlap", problems[0]), problems


def test_a_symlink_into_the_landing_zone_is_an_overlap_too(tmp_path):
    (tmp_path / "lz").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "lz")
    write(tmp_path, {"profiles.yml": {"p": {"outputs": {"dev": {"landing_zone": "lz",
                                                                "warehouse": "link/wh"}}}}})
    assert "overlap" in errors(tmp_path, [{"name": "a"}])[0]
