"""A delimited file's problems are named by the line an editor shows (the header counted, a
quoted field's line breaks counted, CRLF one line end), with one wording for a cell that isn't
of its column's type: the shared rules (`base/delimited_text.py`), `mirrorspec lint` and the
extract reader's line finders. The engine names the same lines: tests/spark/test_producer_files.py
(`csv_lines_*` tables, compared with lint)."""

from __future__ import annotations

import csv
import json
import os

from click.testing import CliRunner

from mirrorspec.base.delimited_text import (cell_type_problem, data_record_lines,
                                            line_of_data_row, record_lines)
from mirrorspec.cli import cli
from mirrorspec.landing import checks
from mirrorspec.landing.lint import lint_landing_zone
from mirrorspec.landing.lint.output import to_sarif, to_text
from mirrorspec.openmirroring.mirroring import sequence_file_name
from mirrorspec.sources.extract import (csv_key_lines, csv_malformed_line, csv_value_line,
                                        parse_options)

DIALECT = {"delimiter": ",", "quotechar": '"', "quoting": csv.QUOTE_MINIMAL}
# line 1 header; 2-3 a note spanning a CRLF line break; 4 empty; 5 the bad row
CRLF_FILE = ('id,note,quantity,__rowMarker__\r\n1,"two\r\nlines",3,0\r\n\r\n'
             '2,plain,five,0\r\n')


def test_records_start_on_the_line_an_editor_shows():
    assert list(record_lines(CRLF_FILE, DIALECT)) == [
        (1, ["id", "note", "quantity", "__rowMarker__"]), (2, ["1", "two\r\nlines", "3", "0"]),
        (4, []), (5, ["2", "plain", "five", "0"])]
    # data rows: the header apart, empty lines skipped (Spark reads no row from them)
    assert [line for line, _ in data_record_lines(CRLF_FILE, DIALECT)] == [2, 5]
    assert line_of_data_row(CRLF_FILE, DIALECT, 2) == 5
    assert line_of_data_row(CRLF_FILE, DIALECT, 3) is None
    # LF only, a byte-order mark, no header: the first row is line 1
    assert line_of_data_row('\ufeff1,"a\nb"\n2,c\n', DIALECT, 2, header=False) == 3
    # an unclosed quote is named at the line its record starts on
    assert list(record_lines('id,v\n1,"open\n2,x\n', {**DIALECT, "strict": True}))[-1][0] == 2


def test_the_wording_of_a_cell_not_of_its_type_has_one_home():
    before, after = checks.value_type_parts("quantity", 3, "Int32")
    assert before + "five" + after == (
        cell_type_problem("quantity", 3, "Int32", "five") + checks.VALUE_TODO)
    assert cell_type_problem("quantity", 3, "Int32", "five") == \
        "column quantity (field 3): 'five' is not a valid Int32"


def landing_table(root, name: str, data: bytes, columns) -> None:
    folder = os.path.join(root, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "_metadata.json"), "w") as handle:
        json.dump({"keyColumns": ["id"], "SchemaDefinition": {"Columns": [
            {"Name": n, "DataType": t} for n, t in columns]}}, handle)
    with open(os.path.join(folder, sequence_file_name(1, "csv")), "wb") as handle:
        handle.write(data)


def test_lint_names_the_file_line_column_type_and_what_to_do(tmp_path):
    root = str(tmp_path)
    columns = [("id", "Int32"), ("note", "String"), ("quantity", "Int32")]
    landing_table(root, "crlf", CRLF_FILE.encode(), columns)
    landing_table(root, "lf", CRLF_FILE.replace("\r\n", "\n").encode(), columns)
    landing_table(root, "marker", b'id,note,quantity,__rowMarker__\n1,"a\nb\nc",3,7\n', columns)
    result = lint_landing_zone(root)
    stops = {t.table: t.stops_at for t in result.tables}
    for name in ("crlf", "lf"):
        assert (stops[name].line, stops[name].row, stops[name].column) == (5, None, "quantity")
        assert stops[name].message == ("column quantity (field 3): 'five' is not a valid Int32; "
                                       "fix the value and re-write the file under the same name")
    assert (stops["marker"].line, stops["marker"].column) == (2, "__rowMarker__")
    text = to_text(result)
    assert f"{sequence_file_name(1, 'csv')}: line 5, column quantity  [content/row]" in text
    sarif = to_sarif(result, "0")["runs"][0]["results"]
    assert sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in sarif
                  if r["level"] == "error") == [2, 5, 5]
    out = CliRunner().invoke(cli, ["lint", root, "--format", "json"])
    doc = json.loads(out.stdout)
    assert {t["table"]: (t["stops_at"]["line"], t["stops_at"]["row"]) for t in doc["tables"]} \
        == {"crlf": (5, None), "lf": (5, None), "marker": (2, None)}


def test_the_extract_finders_name_lines_with_a_header_without_one_and_with_crlf():
    opts = parse_options({}, "csv")
    data = CRLF_FILE.replace("__rowMarker__", "extra").encode()
    assert csv_value_line(data, "x.csv", opts, 2, "five") == 5
    assert csv_malformed_line(b'id,v\r\n1,"a\r\nb"\r\n2,x,y\r\n', "x.csv", opts, 2) == 4
    assert csv_malformed_line(b"id,v\n1,a\n", "x.csv", opts, 2) is None
    keyed = b'ID,v\r\n1,"a\r\nb"\r\n,c\r\n2,d\r\n1,e\r\n'
    assert csv_key_lines(keyed, "x.csv", opts, ["id"], ["id", "v"]) == (4, (2, 6))
    headless = parse_options({"header": False}, "csv")
    assert csv_key_lines(b"7,a\n8,b\n7,c\n", "x.csv", headless, ["id"], ["id", "v"]) == \
        (None, (1, 3))
    assert csv_value_line(b"7,a\n8,zz\n", "x.csv", headless, 1, "zz") == 2
    assert csv_key_lines(keyed, "x.csv", opts, ["nope"], ["id", "v"]) == (None, None)
