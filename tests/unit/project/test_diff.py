"""diff_plans: every kind of change, classified by what open mirroring does with it."""

from __future__ import annotations

import json

import pytest

from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from mirrorspec.project.diff import (
    ADDED, BREAKING, CAUTION, DIFF_VERSION, MARKDOWN_MARKER, MODIFIED, REMOVED, RULES, SAFE,
    UNCHANGED, diff_plans, diff_tables, iter_lines, report_json, report_markdown)
from mirrorspec.openmirroring.mirroring import ColumnDefinition, render_metadata

COLUMNS = [("id", "Int32", False), ("name", "String", True), ("amount", "Double", True)]


def table(name="orders", schema="sales", keys=("id",), columns=COLUMNS, file_format="parquet",
          metadata=None, **fields) -> TablePlan:
    specs = [ColumnSpec(n, t, nl) for n, t, nl in columns]
    if metadata is None:
        metadata = render_metadata(key_columns=list(keys))
    paths = {"landing_path": f"/lz/{schema}.schema/{name}", "delta_path": f"/wh/{schema}/{name}"}
    paths.update(fields)
    return TablePlan(unique_id=f"{schema or 'dbo'}.{name}", name=name, schema=schema,
                     warehouse_schema=schema or "dbo", metadata=metadata,
                     key_columns=list(keys), columns=specs, file_format=file_format, **paths)


def delimited(props=None, extension="tsv", file_format="DelimitedText", columns=COLUMNS,
              keys=("id",), **fields) -> TablePlan:
    metadata = render_metadata(
        key_columns=list(keys),
        columns=[ColumnDefinition(n, t, nl) for n, t, nl in columns],
        file_format=file_format, file_extension=extension, delimited=props or {})
    kind = "delimited_text" if file_format == "DelimitedText" else "csv"
    return table(keys=keys, columns=columns, file_format=kind, metadata=metadata, **fields)


def plan(*tables: TablePlan, root="/p") -> Plan:
    return Plan(plan_version=1, project_name="shop", project_version="1", profile="shop",
                target="dev", landing_zone=f"{root}/lz", warehouse=f"{root}/wh",
                state_path=f"{root}/wh/_mirrorspec", spark=SparkSpec(), partner_events=None,
                tables=list(tables))


def kinds(before: TablePlan, after: TablePlan) -> list[str]:
    return [c.kind for c in diff_tables(before, after)]


def only(before: TablePlan, after: TablePlan):
    changes = diff_tables(before, after)
    assert len(changes) == 1, changes
    return changes[0]


# --- tables -------------------------------------------------------------------------------

def test_identical_plans_have_no_changes_even_in_another_directory():
    diff = diff_plans(plan(table(), root="/a"), plan(table(), root="/b"))
    assert [t.status for t in diff.tables] == [UNCHANGED]
    assert not diff.changed and not diff.blocking
    assert diff.summary()["tables_unchanged"] == 1


def test_landing_and_delta_paths_are_not_compared():
    moved = table(landing_path="/elsewhere/x", delta_path="/other/y")
    assert diff_tables(table(), moved) == []


def test_table_added_and_removed():
    diff = diff_plans(plan(table("a")), plan(table("b")))
    status = {t.unique_id: t.status for t in diff.tables}
    assert status == {"sales.a": REMOVED, "sales.b": ADDED}
    assert not diff.blocking
    assert diff.modified_ids() == {"sales.b"}
    assert diff.by_status(ADDED)[0].changes[0].severity == SAFE
    assert diff.by_status(REMOVED)[0].changes[0].severity == CAUTION


def test_table_moved_to_another_schema_looks_like_a_rename():
    diff = diff_plans(plan(table(schema="sales")), plan(table(schema="crm")))
    added = diff.by_status(ADDED)[0]
    assert [c.kind for c in added.changes] == ["table_added", "table_renamed"]
    change = added.changes[1]
    assert change.message == "table renamed?: sales.orders → crm.orders"
    assert change.severity == CAUTION and not diff.blocking


def test_table_with_same_columns_and_keys_looks_like_a_rename():
    diff = diff_plans(plan(table("orders")), plan(table("order_lines")))
    assert [c.kind for c in diff.by_status(ADDED)[0].changes] == ["table_added", "table_renamed"]


def test_unrelated_tables_are_not_renames():
    diff = diff_plans(plan(table("orders")), plan(table("other", columns=COLUMNS[:1])))
    assert [c.kind for c in diff.by_status(ADDED)[0].changes] == ["table_added"]


def test_no_base_plan_means_every_table_is_added():
    diff = diff_plans(None, plan(table("a"), table("b")))
    assert [t.status for t in diff.tables] == [ADDED, ADDED]


def test_table_in_another_schema_is_another_table():
    diff = diff_plans(plan(table(schema="sales")), plan(table(schema="crm")))
    assert {t.unique_id: t.status for t in diff.tables} == {"crm.orders": ADDED,
                                                            "sales.orders": REMOVED}


def test_table_landing_folder_is_named_like_the_landing_zone():
    diff = diff_plans(None, plan(table(schema="sales"), table("root", schema=None)))
    assert [t.landing_folder for t in diff.tables] == ["root", "sales.schema/orders"]


# --- keys -----------------------------------------------------------------------------------

def test_key_columns_changed_is_breaking():
    change = only(table(keys=("id",)), table(keys=("name",)))
    assert change.kind == "key_columns_changed" and change.breaking
    assert (change.before, change.after) == (["id"], ["name"])
    assert change.message == "key columns changed: [id] → [name]"
    assert "keyColumns can't be changed" in change.rule.rule


def test_key_column_added_to_a_compound_key_is_breaking():
    assert kinds(table(keys=("id",)), table(keys=("id", "name"))) == ["key_columns_changed"]


def test_key_columns_dropped_is_breaking():
    assert kinds(table(keys=("id",)), table(keys=())) == ["key_columns_changed"]


def test_keys_declared_on_a_keyless_table_is_breaking():
    # mirrorspec always lands a _metadata.json; once there, its keyColumns can't change
    change = only(table(keys=()), table(keys=("id",)))
    assert change.kind == "key_columns_added" and change.breaking


def test_key_columns_reordered_is_safe():
    change = only(table(keys=("id", "name")), table(keys=("name", "id")))
    assert change.kind == "key_columns_reordered" and not change.breaking


def test_key_columns_in_another_case_are_the_same_key_as_the_engine_says():
    change = only(table(keys=("id", "name")), table(keys=("ID", "Name")))
    assert change.kind == "key_columns_reordered" and not change.breaking


# --- columns --------------------------------------------------------------------------------

def test_column_added_is_safe():
    change = only(table(), table(columns=COLUMNS + [("note", "String", True)]))
    assert (change.kind, change.subject, change.after) == ("column_added", "note", "String")
    assert change.message == "column added: note (String)"
    assert change.severity == SAFE


def test_a_column_added_to_an_extract_table_says_what_the_next_snapshot_needs():
    """An extract's every snapshot must carry every column: "Nothing to do" would let the next
    run fail on a snapshot without it. The markdown report says what to do instead."""
    extract = SourceSpec("csv", "/p/feeds/orders")
    before, after = table(source=extract), table(columns=COLUMNS + [("region", "String", True)],
                                                 source=extract)
    change = only(before, after)
    assert (change.kind, change.subject, change.after) == ("extract_column_added", "region",
                                                           "String")
    assert change.severity == CAUTION and change.message == \
        "column added to an extract: region (String)"
    assert "next extract has the column" in change.action("sales.orders")
    report = report_markdown(diff_plans(plan(before), plan(after)))
    assert "Nothing to do" not in report and "next extract has the column" in report


def test_column_removed_is_breaking():
    change = only(table(), table(columns=COLUMNS[:2]))
    assert (change.kind, change.subject, change.before) == ("column_removed", "amount", "Double")
    assert change.breaking
    assert "NULL" in change.rule.fabric


def test_column_type_changed_is_breaking():
    after = [("id", "Int32", False), ("name", "String", True), ("amount", "Int64", True)]
    change = only(table(), table(columns=after))
    assert (change.kind, change.subject, change.before, change.after) == \
        ("column_type_changed", "amount", "Double", "Int64")
    assert change.breaking
    assert "replication" in change.rule.fabric


def test_type_names_compare_case_insensitively():
    after = [("id", "int32", False), ("name", "STRING", True), ("amount", "double", True)]
    assert diff_tables(table(), table(columns=after)) == []


def test_type_declared_where_unknown_is_not_breaking():
    before = [("id", None, False), ("name", "String", True), ("amount", "Double", True)]
    change = only(table(columns=before), table())
    assert change.kind == "column_type_declared" and not change.breaking


def test_same_type_same_position_pair_is_a_rename():
    after = [("id", "Int32", False), ("full_name", "String", True), ("amount", "Double", True)]
    change = only(table(), table(columns=after))
    assert (change.kind, change.before, change.after) == ("column_renamed", "name", "full_name")
    assert change.breaking
    assert change.message == "column renamed?: name → full_name"


def test_pair_of_other_type_is_remove_plus_add():
    after = [("id", "Int32", False), ("full_name", "Int64", True), ("amount", "Double", True)]
    assert kinds(table(), table(columns=after)) == ["column_removed", "column_added"]


def test_pair_at_other_positions_is_remove_plus_add():
    after = [("id", "Int32", False), ("amount", "Double", True), ("full_name", "String", True)]
    assert kinds(table(), table(columns=after)) == ["column_removed", "column_added"]


def test_reordering_columns_is_not_a_change():
    after = [COLUMNS[2], COLUMNS[0], COLUMNS[1]]
    assert diff_tables(table(), table(columns=after)) == []


def test_nullability_change_is_caution():
    after = [("id", "Int32", False), ("name", "String", False), ("amount", "Double", True)]
    change = only(table(), table(columns=after))
    assert (change.kind, change.before, change.after) == \
        ("column_nullability_changed", "nullable", "not null")
    assert change.severity == CAUTION


def test_columns_no_longer_declared_is_not_a_mass_removal():
    change = only(table(), table(columns=[]))
    assert change.kind == "columns_undeclared" and not change.breaking


def test_columns_from_schema_definition_when_plan_lists_none():
    before = delimited()
    after_md = dict(before.metadata)
    after_md["SchemaDefinition"] = {"Columns": [{"Name": "id", "DataType": "Int64"}]}
    after = table(keys=("id",), columns=[], file_format="delimited_text", metadata=after_md)
    before = table(keys=("id",), columns=[], file_format="delimited_text",
                   metadata=before.metadata)
    got = kinds(before, after)
    assert got.count("column_removed") == 2 and "column_type_changed" in got


# --- dialect and detection -------------------------------------------------------------------

def test_delimited_property_changed_is_breaking():
    change = only(delimited({"ColumnSeparator": "\t"}), delimited({"ColumnSeparator": "|"}))
    assert (change.kind, change.subject) == \
        ("dialect_changed", "FileFormatTypeProperties.ColumnSeparator")
    assert (change.before, change.after) == ("\t", "|")
    assert change.breaking


def test_default_written_out_is_not_a_change():
    assert diff_tables(delimited({}), delimited({"ColumnSeparator": ",", "Encoding": "UTF-8"})) \
        == []


def test_csv_extension_written_out_is_not_a_change():
    assert diff_tables(delimited(file_format="CSV", extension=None),
                       delimited(file_format="CSV", extension="csv")) == []


def test_file_extension_changed_is_breaking():
    change = only(delimited(extension="tsv"), delimited(extension="psv"))
    assert (change.kind, change.subject) == ("dialect_changed", "FileExtension")


def test_parquet_to_csv_is_breaking():
    got = diff_tables(table(), delimited(file_format="CSV", extension=None))
    assert [(c.kind, c.subject, c.before, c.after) for c in got] == \
        [("dialect_changed", "file_format", "parquet", "csv")]
    assert got[0].breaking


def test_file_detection_strategy_changed_is_breaking():
    lut = table(metadata=render_metadata(key_columns=["id"], last_update_time_detection=True))
    change = only(table(), lut)
    assert change.kind == "file_detection_changed" and change.breaking
    assert change.after == "LastUpdateTimeFileDetection"


def test_upsert_default_changed_is_caution():
    up = table(metadata=render_metadata(key_columns=["id"], upsert_default=True))
    change = only(table(), up)
    assert change.kind == "upsert_default_changed" and change.severity == CAUTION
    # false written out equals absent
    assert diff_tables(table(), table(metadata=render_metadata(["id"], upsert_default=False))) \
        == []


def test_metadata_keys_compare_case_insensitively():
    before = table(metadata={"keyColumns": ["id"], "fileDetectionStrategy":
                             "LastUpdateTimeFileDetection"})
    after = table(metadata={"KeyColumns": ["id"], "FileDetectionStrategy":
                            "lastupdatetimefiledetection"})
    assert diff_tables(before, after) == []


def test_unknown_metadata_property_is_modified_not_breaking():
    md = render_metadata(key_columns=["id"])
    change = only(table(metadata=md), table(metadata={**md, "description": "Orders"}))
    assert change.kind == "metadata_changed" and change.subject == "description"
    diff = diff_plans(plan(table(metadata=md)), plan(table(metadata={**md, "description": "x"})))
    assert diff.tables[0].status == MODIFIED and not diff.blocking


# --- table properties -----------------------------------------------------------------------

@pytest.mark.parametrize("field, value, kind", [
    ("description", "Customer orders", "description_changed"),
    ("tags", ["finance"], "tags_changed"),
    ("tests", [{"type": "unique", "severity": "error"}], "tests_changed"),
    ("source", SourceSpec("qlik_replicate", "/feeds/orders"), "source_changed"),
])
def test_table_properties_are_reported_not_breaking(field, value, kind):
    change = only(table(), table(**{field: value}))
    assert change.kind == kind and not change.breaking


def test_column_description_change_is_reported():
    before = table(columns=[])
    before = TablePlan(**{**before.__dict__, "columns": [ColumnSpec("id", "Int32", False)]})
    after = TablePlan(**{**before.__dict__,
                         "columns": [ColumnSpec("id", "Int32", False, "Order number")]})
    change = only(before, after)
    assert change.kind == "description_changed" and change.subject == "id"
    assert change.message == "description changed: id" and not change.breaking


def test_source_path_alone_is_not_a_change():
    before = table(source=SourceSpec("qlik_replicate", "/a/feeds"))
    after = table(source=SourceSpec("qlik_replicate", "/b/feeds"))
    assert diff_tables(before, after) == []


# --- blocking ---------------------------------------------------------------------------------

def test_breaking_change_blocks():
    diff = diff_plans(plan(table()), plan(table(keys=("name",))))
    assert diff.blocking and [t.unique_id for t in diff.blocking_tables] == ["sales.orders"]
    assert diff.summary()["blocking_changes"] == 1


def test_recreate_true_acknowledges_breaking_changes():
    diff = diff_plans(plan(table()), plan(table(keys=("name",), recreate=True)))
    assert diff.breaking_changes and not diff.blocking
    kinds_ = [c.kind for c in diff.tables[0].changes]
    assert kinds_[0] == "key_columns_changed" and "recreate_changed" in kinds_


def test_recreate_only_covers_its_own_table():
    base = plan(table("a"), table("b"))
    head = plan(table("a", keys=("name",), recreate=True), table("b", columns=COLUMNS[:1]))
    diff = diff_plans(base, head)
    assert [t.unique_id for t in diff.blocking_tables] == ["sales.b"]


def test_allow_breaking_unblocks():
    diff = diff_plans(plan(table()), plan(table(keys=("name",))), allow_breaking=True)
    assert diff.breaking_changes and not diff.blocking and diff.blocking_tables == []
    doc = json.loads(report_json(diff))
    assert doc["tables"][0]["breaking"] is True and doc["tables"][0]["blocking"] is False
    assert doc["breaking_changes"][0]["blocking"] is False


def test_breaking_changes_are_listed_first():
    after = table(columns=COLUMNS[:2] + [("note", "String", True)], description="x")
    got = kinds(table(), after)
    assert got[0] == "column_renamed" or got[0] == "column_removed"
    severities = [c.severity for c in diff_tables(table(), after)]
    assert severities == sorted(severities, key=[BREAKING, CAUTION, SAFE].index)


def test_every_rule_has_text():
    for kind, rule in RULES.items():
        assert rule.title and rule.fabric and rule.action and rule.rule, kind
        assert rule.severity in (BREAKING, CAUTION, SAFE)


# --- reports ----------------------------------------------------------------------------------

def sample_diff(**kwargs):
    base = plan(table("orders"), table("gone"), table("same"))
    head = plan(table("orders", columns=COLUMNS[:2] + [("amount", "Int64", True)]),
                table("same"), table("new"))
    return diff_plans(base, head, "origin/main", "working tree", **kwargs)


def test_json_report_schema():
    doc = json.loads(report_json(sample_diff()))
    assert doc["diff_version"] == DIFF_VERSION
    assert (doc["base"], doc["head"]) == ("origin/main", "working tree")
    assert doc["breaking"] is True and doc["blocking"] is True
    assert doc["summary"] == {"tables_added": 1, "tables_removed": 1, "tables_modified": 1,
                              "tables_unchanged": 1, "changes": 4, "breaking_changes": 1,
                              "blocking_changes": 1}
    assert doc["unchanged"] == ["sales.same"]
    assert (doc["added"], doc["removed"], doc["modified"]) == \
        (["sales.new"], ["sales.gone"], ["sales.orders"])
    assert [(b["table"], b["kind"], b["blocking"]) for b in doc["breaking_changes"]] == \
        [("sales.orders", "column_type_changed", True)]
    assert [t["unique_id"] for t in doc["tables"]] == ["sales.gone", "sales.new", "sales.orders"]
    orders = doc["tables"][2]
    assert orders["landing_folder"] == "sales.schema/orders"
    assert orders["blocking"] is True and orders["recreate"] is False
    change = orders["changes"][0]
    assert set(change) == {"kind", "severity", "breaking", "subject", "before", "after",
                           "message", "fabric", "action", "rule"}
    assert (change["kind"], change["subject"], change["before"], change["after"]) == \
        ("column_type_changed", "amount", "Double", "Int64")


def test_json_report_is_deterministic():
    assert report_json(sample_diff()) == report_json(sample_diff())


def test_markdown_report():
    text = report_markdown(sample_diff())
    assert text.startswith(MARKDOWN_MARKER)
    assert "❌ breaking changes" in text.splitlines()[1]
    assert "| `sales.orders` | modified | 1 | ❌ yes |" in text
    assert "**column type changed: amount Double → Int64**" in text
    assert "Fabric: Providing a new column type" in text
    assert "Rule: Fabric open mirroring landing zone requirements" in text


def test_markdown_report_stays_under_the_comment_limit():
    many = [table(f"t{i:03d}") for i in range(450)]
    changed = [table(f"t{i:03d}", keys=("name",)) for i in range(450)]
    text = report_markdown(diff_plans(plan(*many), plan(*changed)))
    assert len(text) < 65_536
    assert "more table(s): the comment would be too long" in text
    assert text.count("| modified |") == 400 and "| … 50 more | | | |" in text


def test_markdown_report_allowed():
    text = report_markdown(sample_diff(allow_breaking=True))
    assert "acknowledged" in text.splitlines()[1]
    assert "⚠️ yes (allowed)" in text


def test_markdown_report_without_changes():
    text = report_markdown(diff_plans(plan(table()), plan(table())))
    assert "✅ no breaking changes" in text and "No mirrored table changes." in text


def test_markdown_escapes_pipes_in_values():
    change_md = report_markdown(diff_plans(plan(delimited({"ColumnSeparator": "|"})),
                                           plan(delimited({"ColumnSeparator": ","}))))
    assert "\\| → ," in change_md


def test_human_lines_show_fabric_meaning_of_breaking_changes():
    lines = list(iter_lines(sample_diff()))
    text = "\n".join(t for _, t in lines)
    assert "sales.orders  modified  BREAKING" in text
    assert "✗ column type changed: amount Double → Int64" in text
    assert "Fabric: Providing a new column type" in text
    assert "rule: Fabric open mirroring landing zone requirements › Table columns and column " \
        "operations › Change column type" in text
    assert "--full-refresh --select sales.orders" in text
    assert lines[-1][0] == "breaking"


def test_changed_data_tests_are_named_with_what_changed():
    from mirrorspec.project.diff.table_changes import _test_changes

    old = [{"type": "unique", "severity": "error", "columns": ["id"]},
           {"type": "accepted_values", "severity": "error", "column": "status",
            "values": ["a", "b"]},
           {"type": "relationships", "severity": "error", "column": "cid",
            "to": "sales.customers", "field": "id"}]
    new = [{"type": "unique", "severity": "warn", "columns": ["id"]},
           {"type": "accepted_values", "severity": "error", "column": "status",
            "values": ["a", "b", "c"]},
           {"type": "not_null", "severity": "error", "columns": ["cid"]}]
    messages = [c.message for c in _test_changes(old, new)]
    assert messages == [
        "data tests changed: unique(id) severity: error → severity: warn",
        "data tests changed: accepted_values(status) values: [a, b] → values: [a, b, c]",
        "data tests changed: relationships(cid) to sales.customers.id removed",
        "data tests changed: not_null(cid) added (severity: error; columns: [cid])",
    ]
    assert _test_changes(old, list(old)) == []


@pytest.mark.parametrize("before, after", [
    ({"isUpsertDefaultRowMarker": 1}, {"isUpsertDefaultRowMarker": True}),
    ({"isUpsertDefaultRowMarker": "yes"}, {"isUpsertDefaultRowMarker": False}),
    ({"isUpsertDefaultRowMarker": " TRUE "}, {"isUpsertDefaultRowMarker": True}),
    ({"fileDetectionStrategy": "lastupdatetimefiledetection"},
     {"fileDetectionStrategy": "LastUpdateTimeFileDetection"}),
])
def test_diff_reads_metadata_as_the_engine_does(before, after):
    """diff's view of upsert and detection is mirroring.parse_metadata's (it once had its own:
    `1` read as true where the engine refuses it)."""
    from mirrorspec.base.errors import LandingZoneError
    from mirrorspec.openmirroring.mirroring import TableMetadata, parse_metadata

    def engine(raw):
        try:
            return parse_metadata({"keyColumns": ["id"], **raw}, "x")
        except LandingZoneError:
            return TableMetadata()

    old, new = engine(before), engine(after)
    found = kinds(table(metadata={"keyColumns": ["id"], **before}),
                  table(metadata={"keyColumns": ["id"], **after}))
    assert ("upsert_default_changed" in found) == (old.upsert_default != new.upsert_default)
    assert ("file_detection_changed" in found) == \
        (old.last_update_time_detection != new.last_update_time_detection)


def test_an_int_upsert_marker_is_not_read_as_true():
    change = only(table(metadata={"keyColumns": ["id"], "isUpsertDefaultRowMarker": 1}),
                  table(metadata={"keyColumns": ["id"], "isUpsertDefaultRowMarker": True}))
    assert change.kind == "upsert_default_changed" and (change.before, change.after) == (False, True)
