"""Qlik Replicate parsing in pure Python (no JVM): messages, masks, types, key changes, errors."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from mirrorspec.artifacts.plan import ColumnSpec, SourceSpec, TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.sources import get_format, infer_schema, qlik, qlik_messages
from mirrorspec.sources.qlik import QlikReplicateFormat
from mirrorspec.sources.qlik_messages import classify, data_type_for, mask_ordinals
from mirrorspec.sources.arrow_columns import as_lists

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "qlik"


@pytest.fixture(autouse=True, params=[False, True], ids=["python", "columnwise"])
def columnwise(request, monkeypatch):
    """Every case runs through the row parser and through the column-wise path."""
    monkeypatch.setattr(qlik, "COLUMNWISE", request.param)
    return request.param


def parse_task(task):
    return as_lists(qlik.parse_task(task))


def table(path, columns=(), keys=(), options=None) -> TablePlan:
    return TablePlan(unique_id="dbo.customers", name="customers", schema=None,
                     warehouse_schema="dbo", landing_path="/unused", delta_path="/unused",
                     metadata={}, key_columns=list(keys),
                     columns=[ColumnSpec(n, t) for n, t in columns],
                     source=SourceSpec("qlik_replicate", str(path), dict(options or {})))


def parse(tbl, files, state=None):
    """Rows (dicts) of every task, in the canonical order; raises the first task error."""
    batch = QlikReplicateFormat().plan_tasks(tbl, [str(f) for f in files], state or {})
    rows = []
    for task in batch.tasks:
        out = parse_task(task)
        n = len(out["_op"])
        for i in range(n):
            row = {k: v[i] for k, v in out.items()}
            if row["_error"]:
                raise SourceError(row["_error"], file=row["_source_file"], line=row["_source_line"])
            rows.append(row)
    return sorted(rows, key=lambda r: r["_order"]), batch


def msg(op, data, before=None, seq="", txn="", last=None, mask=None, envelope=True):
    message = {"data": data, "beforeData": before,
               "headers": {"operation": op, "changeSequence": seq, "transactionId": txn,
                           "transactionLastEvent": last, "columnMask": mask}}
    if not envelope:
        return message
    return {"magic": "atMSG", "type": "DT", "headers": None, "messageSchemaId": None,
            "messageSchema": None, "message": message}


def md(columns, version=1, table_name="T"):
    return {"magic": "atMSG", "type": "MD", "headers": None, "messageSchemaId": None,
            "messageSchema": None,
            "message": {"lineage": {"schema": "dbo", "table": table_name, "tableVersion": version},
                        "tableStructure": {"tableColumns": columns}}}


COLS = {"ID": {"ordinal": 1, "type": "INT4", "primaryKeyPosition": 1},
        "A": {"ordinal": 2, "type": "STRING", "primaryKeyPosition": 0},
        "B": {"ordinal": 3, "type": "STRING", "primaryKeyPosition": 0},
        "C": {"ordinal": 4, "type": "STRING", "primaryKeyPosition": 0}}


def write_lines(path: Path, docs) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def test_seed_mask_example_0B_means_ordinals_1_2_4():
    assert mask_ordinals("0B") == {1, 2, 4}
    assert mask_ordinals("00FFFF") == set(range(1, 17))
    assert mask_ordinals("008080") == {8, 16}
    assert mask_ordinals("") is None and mask_ordinals(None) is None
    with pytest.raises(ValueError):
        mask_ordinals("XYZ")


def test_type_mapping():
    assert data_type_for("INT1") == "Int16" and data_type_for("INT8") == "Int64"
    assert data_type_for("UINT4") == "Int64" and data_type_for("REAL4") == "Single"
    assert data_type_for("NUMERIC", 10, 2) == "Double"
    assert data_type_for("NUMERIC", 9, 0) == "Int32"
    assert data_type_for("NUMERIC", 18, 0) == "Int64"
    assert data_type_for("NUMERIC", 38, 0) == "Double"
    assert data_type_for("NUMERIC(12,3)", decimal="string") == "String"
    assert data_type_for("WSTRING") == "String" and data_type_for("NCLOB") == "String"
    assert data_type_for("BLOB") == "ByteArray" and data_type_for("BYTES") == "ByteArray"
    assert data_type_for("DATE") == "IDate" and data_type_for("DATETIME") == "DateTime"
    assert data_type_for("BOOLEAN") == "Boolean"


def test_envelope_and_bare_messages_are_classified():
    assert classify(md(COLS))[0] == "MD"
    assert classify(msg("INSERT", {"ID": 1}))[0] == "DT"
    assert classify(msg("INSERT", {"ID": 1}, envelope=False))[0] == "DT"
    with pytest.raises(ValueError, match="Avro"):
        classify({"magic": "atMSG", "type": "DT", "message": "T2JqAQ=="})


def test_fixture_feed_full_load_then_out_of_order_cdc():
    files = sorted((FIXTURES / "customers").iterdir())
    rows, batch = parse(table(FIXTURES / "customers"), files)
    assert batch.keys == ["ID"]
    assert [c for c, _ in batch.columns] == ["ID", "NAME", "CITY", "BALANCE", "UPDATED", "PHOTO"]
    got = [(r["_op"], r["ID"]) for r in rows]
    # REFRESH first (empty changeSequence), then by changeSequence across files
    assert got == [(0, 1), (0, 2), (0, 3), (0, 4), (2, 3), (1, 1), (2, 2), (0, 22)]
    first = rows[0]
    assert first["BALANCE"] == 100.5 and first["PHOTO"] == b"\x0a\x0b"
    assert first["UPDATED"] == dt.datetime(2024, 5, 1, 9, 0)
    update = rows[5]
    # columnMask 0B: ID, NAME, BALANCE present; CITY/UPDATED/PHOTO absent, not NULL
    assert update["_present"] == ["BALANCE", "ID", "NAME"]
    assert update["NAME"] == "Ann B" and update["BALANCE"] == 99.0
    delete_old_key, insert_new_key = rows[6], rows[7]
    assert delete_old_key["_order"] < insert_new_key["_order"]
    assert insert_new_key["_present"] is None and insert_new_key["NAME"] == "Bob"


def test_infer_schema_reads_metadata_without_spark():
    inferred = infer_schema("qlik_replicate", str(FIXTURES / "customers"), {})
    assert inferred.key_columns == ("ID",)
    assert [(c.name, c.data_type) for c in inferred.columns] == [
        ("ID", "Int32"), ("NAME", "String"), ("CITY", "String"), ("BALANCE", "Double"),
        ("UPDATED", "DateTime"), ("PHOTO", "ByteArray")]
    assert inferred.columns[0].nullable is False
    assert "LOAD00000001.json:1" in inferred.origin


def test_new_table_version_adds_a_column(tmp_path):
    v2 = dict(COLS, D={"ordinal": 5, "type": "INT8", "primaryKeyPosition": 0})
    f = write_lines(tmp_path / "f.json", [
        md(COLS), msg("INSERT", {"ID": 1, "A": "a", "B": "b", "C": "c"}, seq="1"),
        md(v2, version=2), msg("INSERT", {"ID": 2, "A": "a", "B": "b", "C": "c", "D": "7"},
                                seq="2", mask="1F")])
    rows, batch = parse(table(tmp_path), [f])
    assert [c for c, _ in batch.columns] == ["ID", "A", "B", "C", "D"]
    assert rows[0]["_present"] == ["A", "B", "C", "ID"]  # D did not exist yet: absent
    assert rows[1]["D"] == 7 and rows[1]["_present"] is None


def test_update_without_mask_and_bare_format_and_array_file(tmp_path):
    f = tmp_path / "batch.json"
    f.write_text(json.dumps([md(COLS)["message"],
                             msg("UPDATE", {"ID": 1, "A": None}, before={"ID": 1, "A": "x"},
                                 seq="5", envelope=False)], indent=2))
    rows, _ = parse(table(tmp_path), [f])
    assert len(rows) == 1
    row = rows[0]
    assert row["_op"] == 1 and row["A"] is None and row["_present"] == ["A", "ID"]
    assert row["_source_line"] > 1


def test_delete_takes_key_from_before_data(tmp_path):
    f = write_lines(tmp_path / "f.json", [
        md(COLS), msg("DELETE", {"ID": None}, before={"ID": 9, "A": "gone"}, seq="1")])
    rows, _ = parse(table(tmp_path), [f])
    assert rows[0]["_op"] == 2 and rows[0]["ID"] == 9


def test_yaml_columns_without_metadata_use_yaml_ordinals(tmp_path):
    f = write_lines(tmp_path / "f.json", [msg("UPDATE", {"ID": 1, "A": "x", "B": "y"},
                                              seq="1", mask="05")])
    rows, batch = parse(table(tmp_path, [("ID", "Int64"), ("A", "String"), ("B", "String")],
                              ["ID"]), [f])
    assert batch.keys == ["ID"]
    assert rows[0]["_present"] == ["B", "ID"] and rows[0]["A"] is None


def test_no_metadata_and_no_yaml_columns_is_an_error(tmp_path):
    f = write_lines(tmp_path / "f.json", [msg("INSERT", {"ID": 1}, seq="1")])
    with pytest.raises(SourceError, match="no metadata message and no YAML columns") as err:
        parse(table(tmp_path), [f])
    assert err.value.file == str(f) and err.value.line == 1


def test_malformed_json_line_names_file_and_line(tmp_path):
    f = tmp_path / "f.json"
    f.write_text(json.dumps(md(COLS)) + "\n" + json.dumps(msg("INSERT", {"ID": 1}, seq="1"))
                 + "\n{\"magic\": \"atMSG\", oops\n")
    with pytest.raises(SourceError, match="malformed JSON") as err:
        parse(table(tmp_path), [f])
    assert err.value.line == 3


def test_unknown_operation_and_bad_value_name_the_line(tmp_path):
    f = write_lines(tmp_path / "f.json", [md(COLS), msg("MERGE", {"ID": 1}, seq="1")])
    with pytest.raises(SourceError, match="unknown operation 'MERGE'") as err:
        parse(table(tmp_path), [f])
    assert err.value.line == 2
    g = write_lines(tmp_path / "g.json", [md(COLS), msg("INSERT", {"ID": "x1"}, seq="1")])
    with pytest.raises(SourceError, match="'ID'.*not an integer"):
        parse(table(tmp_path), [g])


def test_yaml_type_conflicting_with_metadata_is_an_error(tmp_path):
    f = write_lines(tmp_path / "f.json", [md(COLS)])
    with pytest.raises(SourceError, match="'ID' is Boolean in the YAML"):
        parse(table(tmp_path, [("ID", "Boolean")]), [f])
    # a wider or textual representation is not a conflict
    parse(table(tmp_path, [("ID", "Int64"), ("A", "String")]), [f])


def test_yaml_keys_conflicting_with_primary_key_is_an_error(tmp_path):
    f = write_lines(tmp_path / "f.json", [md(COLS)])
    with pytest.raises(SourceError, match="differ from the feed's primary key"):
        parse(table(tmp_path, keys=["A"]), [f])


def test_avro_file_is_rejected_with_a_clear_message(tmp_path):
    f = tmp_path / "f.avro"
    f.write_bytes(b"Obj\x01\x04\x14avro.codec")
    with pytest.raises(SourceError, match="Avro-encoded .* not supported"):
        parse(table(tmp_path), [f])


def test_metadata_for_several_tables_needs_the_table_option(tmp_path):
    f = write_lines(tmp_path / "f.json", [md(COLS, table_name="T"), md(COLS, table_name="U")])
    with pytest.raises(SourceError, match="several tables"):
        parse(table(tmp_path), [f])
    _, batch = parse(table(tmp_path, options={"table": "U"}), [f])
    assert [s.table for s in batch.structures] == ["U"]


def test_refresh_becomes_upsert_once_earlier_batches_were_published(tmp_path):
    f = write_lines(tmp_path / "f.json", [md(COLS), msg("REFRESH", {"ID": 1, "A": "a", "B": "b",
                                                                    "C": "c"})])
    rows, _ = parse(table(tmp_path), [f])
    assert rows[0]["_op"] == 0
    rows, _ = parse(table(tmp_path), [f], {"batches": [{"sequence": 1}]})
    assert rows[0]["_op"] == 4


def test_big_files_are_split_into_chunks_with_correct_lines(tmp_path, monkeypatch):

    monkeypatch.setattr(qlik_messages, "CHUNK_BYTES", 300)
    docs = [md(COLS)] + [msg("INSERT", {"ID": i, "A": "a", "B": "b", "C": "c"}, seq=f"{i:05d}")
                         for i in range(1, 40)]
    f = write_lines(tmp_path / "f.json", docs)
    rows, batch = parse(table(tmp_path), [f])
    assert len(batch.tasks) > 3
    assert [r["ID"] for r in rows] == list(range(1, 40))
    assert all(r["_source_line"] == r["ID"] + 1 for r in rows)


def test_registry_has_the_reader():
    assert get_format("qlik_replicate").type_name == "qlik_replicate"


def test_a_partial_key_change_leaves_masked_columns_to_the_old_key(tmp_path):
    # columns A and C are outside the mask: their nulls in data and beforeData are placeholders
    f = write_lines(tmp_path / "f.json", [md(COLS), msg(
        "UPDATE", {"ID": 22, "A": None, "B": "b2", "C": None},
        before={"ID": 2, "A": None, "B": "b", "C": None}, seq="1", mask="05")])
    rows, _ = parse(table(tmp_path), [f])
    delete, insert = rows
    assert (delete["_op"], delete["ID"]) == (2, 2) and (insert["_op"], insert["ID"]) == (0, 22)
    assert insert["_present"] == ["B", "ID"] and insert["B"] == "b2"
    assert delete["_pair"] == insert["_pair"] is not None


def test_a_key_change_without_a_mask_takes_unchanged_columns_from_before_data(tmp_path):
    f = write_lines(tmp_path / "f.json", [md(COLS), msg(
        "UPDATE", {"ID": 55, "B": "new"}, before={"ID": 5, "A": "old-a"}, seq="1")])
    delete, insert = parse(table(tmp_path), [f])[0]
    assert insert["A"] == "old-a" and insert["B"] == "new"
    assert insert["_present"] == ["A", "B", "ID"] and insert["_pair"] == delete["_pair"]


def test_a_mask_of_a_newer_table_version_read_earlier_uses_that_version(tmp_path):
    # file names sort 2_cdc before 3_ddl, but 2_cdc's change already carries version 2's column
    v2 = dict(COLS, D={"ordinal": 5, "type": "STRING", "primaryKeyPosition": 0})
    write_lines(tmp_path / "1_load.json", [md(COLS), msg("REFRESH", {"ID": 1, "A": "a"}, seq="1")])
    write_lines(tmp_path / "3_ddl.json", [md(v2, version=2), msg(
        "UPDATE", {"ID": 1, "A": "b", "B": None, "C": None, "D": "d5"}, seq="10", mask="13")])
    write_lines(tmp_path / "2_cdc.json", [msg(
        "UPDATE", {"ID": 1, "A": "c", "B": None, "C": None, "D": "d9"}, seq="20", mask="13")])
    rows, _ = parse(table(tmp_path), sorted(tmp_path.iterdir()))
    last = rows[-1]
    assert last["_order"][0] == "20" and last["D"] == "d9"
    assert last["_present"] == ["A", "D", "ID"]


@pytest.mark.parametrize("prefix", [b"", b"\n\n  \r\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n \t\n"])
def test_leading_blank_lines_and_a_byte_order_mark_keep_line_numbers(tmp_path, prefix):
    f = tmp_path / "f.json"
    body = "".join(json.dumps(d) + "\n" for d in [md(COLS), msg("INSERT", {"ID": 1}, seq="1")])
    f.write_bytes(prefix + body.encode())
    rows, batch = parse(table(tmp_path), [f])
    assert [r["ID"] for r in rows] == [1]
    assert rows[0]["_source_line"] == 2 + prefix.count(b"\n")
    assert batch.structures[0].line == 1 + prefix.count(b"\n")


def test_whitespace_only_file_has_no_changes_and_a_bad_start_names_its_line(tmp_path):
    blank = tmp_path / "blank.json"
    blank.write_bytes(b"\n \r\n\t\n")
    assert QlikReplicateFormat().plan_tasks(table(tmp_path, [("ID", "Int64")], ["ID"]),
                                            [str(blank)], {}).tasks == []
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\n\n\xef\xbb\xbfnot json\n")
    with pytest.raises(SourceError, match="does not start with a JSON object") as err:
        parse(table(tmp_path), [bad])
    assert err.value.line == 3
