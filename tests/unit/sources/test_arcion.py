"""Arcion Replicant parsing in pure Python (no JVM): the region rows of Arcion's
"S3 File Format" documentation in CSV and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspec.artifacts.plan import ColumnSpec, SourceSpec, TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.sources import get_format, infer_schema
from mirrorspec.sources import arcion
from mirrorspec.sources.arcion import ArcionFormat, header_column
from mirrorspec.sources.arrow_columns import as_lists

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "arcion"
REGION = [("r_regionkey", "Int32"), ("r_name", "String"), ("r_comment", "String")]
ARCION_ORDER = ["r_comment", "r_name", "r_regionkey"]  # how the seed's triplets are laid out


@pytest.fixture(autouse=True, params=[False, True], ids=["python", "columnwise"])
def columnwise(request, monkeypatch):
    """Every case runs through the Python parser and through the column-wise path."""
    monkeypatch.setattr(arcion, "COLUMNWISE", request.param)
    return request.param


def parse_task(task):
    return as_lists(arcion.parse_task(task))


def table(path, columns=REGION, keys=("r_regionkey",), options=None) -> TablePlan:
    return TablePlan(unique_id="tpch.region", name="region", schema="tpch",
                     warehouse_schema="tpch", landing_path="/unused", delta_path="/unused",
                     metadata={}, key_columns=list(keys),
                     columns=[ColumnSpec(n, t) for n, t in columns],
                     source=SourceSpec("arcion", str(path), dict(options or {})))


def parse(tbl, files):
    columns, keys, tasks = ArcionFormat().plan_tasks(tbl, [str(f) for f in files])
    rows = []
    for task in tasks:
        out = parse_task(task)
        for i in range(len(out["_op"])):
            row = {k: v[i] for k, v in out.items()}
            if row["_error"]:
                raise SourceError(row["_error"], file=row["_source_file"], line=row["_source_line"])
            rows.append(row)
    return sorted(rows, key=lambda r: r["_order"]), columns


def ops(rows):
    return [(r["_op"], r["r_regionkey"], r["r_name"], r["r_comment"], r["_present"]) for r in rows]


SEED_OPS = [
    (0, 10, "India", "India", None),                        # insert: every Exists_Val is 1
    (1, 10, None, "USA", ["r_comment", "r_regionkey"]),     # update: r_name absent (Exists 0)
    (2, 10, None, None, None),                              # delete: key from the old value
]


def test_seed_csv_rows_without_header_use_column_order():
    tbl = table(FIXTURES / "region_csv", options={"column_order": ARCION_ORDER})
    rows, _ = parse(tbl, sorted((FIXTURES / "region_csv").iterdir()))
    assert ops(rows) == SEED_OPS
    assert [r["_source_line"] for r in rows] == [1, 2, 1]


def test_seed_csv_rows_with_header_are_mapped_by_name():
    # YAML columns in table order; the header tells the triplet order
    rows, _ = parse(table(FIXTURES / "region_csv_header"),
                    [FIXTURES / "region_csv_header" / "region_1.csv"])
    assert ops(rows) == SEED_OPS[:2]
    assert [r["_source_line"] for r in rows] == [2, 3]


def test_without_header_the_yaml_order_is_used_not_guessed(tmp_path):
    # YAML order r_regionkey, r_name, r_comment differs from the file's: the values land in the
    # wrong columns, which is why column_order exists; r_regionkey gets 'India' → a type error
    with pytest.raises(SourceError, match="'r_regionkey'.*not an integer") as err:
        parse(table(FIXTURES / "region_csv"), [FIXTURES / "region_csv" / "region_1.csv"])
    assert err.value.line == 1


def test_seed_json_records_pretty_printed_ordered_by_cursor_timestamp():
    files = sorted((FIXTURES / "region_json").iterdir())  # a_delete, b_update, c_insert
    rows, _ = parse(table(FIXTURES / "region_json"), files)
    assert ops(rows) == SEED_OPS
    assert rows[0]["_source_file"].endswith("c_insert.json")


def test_snapshot_csv_and_json():
    # snapshot rows follow the table's order (here the seed's r_regionkey, r_comment, r_name);
    # column_order is Arcion's order of realtime triplets and leaves them alone
    files = sorted((FIXTURES / "region_snapshot").iterdir())
    table_order = [("r_regionkey", "Int32"), ("r_comment", "String"), ("r_name", "String")]
    rows, _ = parse(table(FIXTURES / "region_snapshot", columns=table_order,
                          options={"column_order": ARCION_ORDER}), files)
    assert [(r["_op"], r["r_regionkey"], r["r_name"]) for r in rows] == [
        (0, 0, "AFRICA"), (0, 1, "AMERICA"), (0, 2, "ASIA")]
    assert rows[1]["r_comment"] == "AMERICA, north and south"
    assert all(r["_present"] is None for r in rows)


def test_key_change_is_delete_then_insert(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text('x,x,3,n,n,3,11,10,3,U,"{""timestamp"":1}","{}"\n')
    rows, _ = parse(table(tmp_path, options={"column_order": ARCION_ORDER}), [f])
    assert [(r["_op"], r["r_regionkey"]) for r in rows] == [(2, 10), (0, 11)]
    assert rows[1]["r_name"] == "n" and rows[1]["_present"] is None


def test_null_literal_is_null_only_where_present(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text('NULL,NULL,1,NULL,NULL,0,5,5,3,U,"{}","{}"\n')
    rows, _ = parse(table(tmp_path, options={"column_order": ARCION_ORDER}), [f])
    assert rows[0]["r_comment"] is None and rows[0]["_present"] == ["r_comment", "r_regionkey"]


@pytest.mark.parametrize("line, message", [
    ('India,NULL,4,India,NULL,1,10,NULL,1,I,"{}","{}"', "Exists value '4'"),
    ('India,NULL,1,India,NULL,1,10,NULL,1,X,"{}","{}"', "unknown opType 'X'"),
    ('India,NULL,1,India,NULL,1,10,NULL,1,I,"{}"', "row has 11 fields"),
    ('India,NULL,1,India,NULL,1,10,NULL,1,I,"{bad","{}"', "malformed JSON in cursor"),
    # the first bad field in field order, whichever kind it is
    ('India,NULL,1,India,NULL,9,ten,NULL,1,I,"{}","{}"', "Exists value '9'"),
    ('India,NULL,1,India,NULL,1,ten,NULL,1,I,"{}","{}"', "'r_regionkey': 'ten' is not an int"),
])
def test_bad_rows_name_file_and_line(tmp_path, line, message):
    f = tmp_path / "r.csv"
    good = 'a,NULL,1,b,NULL,1,1,NULL,1,I,"{}","{}"'
    f.write_text(good + "\n" + line + "\n")
    with pytest.raises(SourceError, match=message) as err:
        parse(table(tmp_path, options={"column_order": ARCION_ORDER}), [f])
    assert err.value.file == str(f) and err.value.line == 2


def test_malformed_json_record_names_the_line(tmp_path):
    f = tmp_path / "r.json"
    f.write_text('{"opType": "I", "after": {"r_regionkey": "1"}, "exists": {"r_regionkey": "1"}}\n'
                 '{"opType": "I", "after": {\n')
    with pytest.raises(SourceError, match="malformed JSON") as err:
        parse(table(tmp_path), [f])
    assert err.value.line == 2


def test_json_exists_out_of_range(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"opType": "U", "before": {"r_regionkey": "1"},
                             "after": {"r_regionkey": "1"}, "exists": {"r_regionkey": "7"}}))
    with pytest.raises(SourceError, match="Exists value '7'"):
        parse(table(tmp_path), [f])


def test_quoted_newlines_survive_chunking(tmp_path, monkeypatch):
    import mirrorspec.sources.arcion as arcion

    monkeypatch.setattr(arcion, "CHUNK_BYTES", 40)
    f = tmp_path / "r.csv"
    lines = [f'"c{i}\nmore",n{i},NULL,{i}' for i in range(20)]  # snapshot rows, 2 lines each
    f.write_text("r_comment,r_name,extra,r_regionkey\n" + "\n".join(lines) + "\n")
    rows, columns = parse(table(tmp_path), [f])
    assert [r["r_regionkey"] for r in rows] == list(range(20))
    assert rows[3]["r_comment"] == "c3\nmore" and rows[3]["_source_line"] == 8
    assert ("extra", "String") in columns


def test_header_names_with_affixes():
    assert header_column(["R_COMMENT_new", "r_comment_old", "x"], ["r_comment"]) == "r_comment"
    assert header_column(["new_val:price", "old_val:price", "exists_val:price"], []) == "price"


def test_no_inference_from_arcion_feeds():
    assert infer_schema("arcion", str(FIXTURES / "region_csv"), {}) is None
    assert get_format("arcion").type_name == "arcion"


def test_a_snapshot_after_a_published_batch_lands_as_upserts(tmp_path):
    f = tmp_path / "s.csv"
    f.write_text("0,AFRICA,c0\n")
    tbl = table(tmp_path, options={"column_order": ARCION_ORDER})
    first, _, tasks = ArcionFormat().plan_tasks(tbl, [str(f)], {"batches": []})
    assert parse_task(tasks[0])["_op"] == [0]
    _, _, tasks = ArcionFormat().plan_tasks(tbl, [str(f)], {"batches": [{"sequence": 1}]})
    out = parse_task(tasks[0])
    assert out["_op"] == [4] and out["r_name"] == ["AFRICA"] and out["r_comment"] == ["c0"]
    keyless = table(tmp_path, keys=(), options={"column_order": ARCION_ORDER})
    _, _, tasks = ArcionFormat().plan_tasks(keyless, [str(f)], {"batches": [{"sequence": 1}]})
    assert parse_task(tasks[0])["_op"] == [0]


def test_a_partial_key_change_is_paired_with_its_delete(tmp_path):
    f = tmp_path / "r.csv"  # key 1 → 11; r_name in neither image, r_comment only in the new one
    f.write_text('c2,NULL,1,NULL,NULL,0,11,1,3,U,"{""timestamp"":1}","{}"\n')
    rows, _ = parse(table(tmp_path, options={"column_order": ARCION_ORDER}), [f])
    delete, insert = rows
    assert (delete["_op"], delete["r_regionkey"], insert["_op"], insert["r_regionkey"]) == (
        2, 1, 0, 11)
    assert insert["_present"] == ["r_comment", "r_regionkey"] and insert["r_comment"] == "c2"
    assert delete["_pair"] == insert["_pair"] is not None


def test_exists_values_with_spaces_are_read_like_plain_ones(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text('c,NULL, 1,n,NULL,1 ,7,NULL,\t1,I,"{}","{}"\n'
                 'c,NULL,1,n,NULL,1,7,NULL,1,I,"{}","{}"\n')
    rows, _ = parse(table(tmp_path, options={"column_order": ARCION_ORDER}), [f])
    values = [(r["r_comment"], r["r_name"], r["r_regionkey"], r["_op"]) for r in rows]
    assert values == [("c", "n", 7, 0), ("c", "n", 7, 0)]


def test_cr_line_ends_are_read_and_located(tmp_path):
    f = tmp_path / "r.csv"
    f.write_bytes(b'c,NULL,1,n,NULL,1,7,NULL,1,I,"{}","{}"\r'
                  b'c,NULL,1,n,NULL,1,x,NULL,1,I,"{}","{}"\r')
    with pytest.raises(SourceError, match="'x' is not an integer") as err:
        parse(table(tmp_path, options={"column_order": ARCION_ORDER}), [f])
    assert err.value.line == 2
    f.write_bytes(f.read_bytes().replace(b",x,", b",8,"))
    rows, _ = parse(table(tmp_path, options={"column_order": ARCION_ORDER}), [f])
    assert [r["r_regionkey"] for r in rows] == [7, 8]
