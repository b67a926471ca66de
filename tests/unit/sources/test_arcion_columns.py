"""The column-wise Arcion CSV path (Arrow kernels) against the Python parser, which defines it.

Every chunk the column-wise path takes must give exactly the Python parser's rows; every chunk
it can't prove (malformed quoting, blank lines, line breaks in values, odd values) must be left
to the Python parser, so errors keep their file:line.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorspec.artifacts.plan import ColumnSpec, SourceSpec, TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.sources import arcion
from mirrorspec.sources.arrow_columns import as_lists

pa = pytest.importorskip("pyarrow")

COLUMNS = [("id", "Int64"), ("name", "String"), ("price", "Double"), ("qty", "Int32"),
           ("at", "DateTime"), ("flag", "Boolean")]
ORDER = ["name", "id", "price", "qty", "at", "flag"]  # Arcion's triplet order, not the table's


def table(path, keys=("id",), columns=COLUMNS, options=None) -> TablePlan:
    return TablePlan(unique_id="s.items", name="items", schema="s", warehouse_schema="s",
                     landing_path="/unused", delta_path="/unused", metadata={},
                     key_columns=list(keys), columns=[ColumnSpec(n, t) for n, t in columns],
                     source=SourceSpec("arcion", str(path),
                                       dict(options or {"header": False, "column_order": ORDER})))


def run(tbl, path, columnwise: bool, monkeypatch):
    """(rows sorted by _order, whether every task came back as Arrow arrays)."""
    monkeypatch.setattr(arcion, "COLUMNWISE", columnwise)
    _, _, tasks = arcion.ArcionFormat().plan_tasks(tbl, [str(path)])
    rows, arrow = [], True
    for task in tasks:
        out = arcion.parse_task(task)
        arrow = arrow and not isinstance(out["_op"], list)
        lists = as_lists(out)
        rows += [{k: v[i] for k, v in lists.items()} for i in range(len(lists["_op"]))]
    return sorted(rows, key=lambda r: (r["_order"], r["_op"])), arrow


def both(tbl, path, monkeypatch):
    python, _ = run(tbl, path, False, monkeypatch)
    columnwise, arrow = run(tbl, path, True, monkeypatch)
    return python, columnwise, arrow


def same(a, b) -> bool:
    """Rows equal, NaN equal to NaN."""
    def norm(value):
        return "NaN" if isinstance(value, float) and math.isnan(value) else value
    return [{k: norm(v) for k, v in r.items()} for r in a] == \
        [{k: norm(v) for k, v in r.items()} for r in b]


def write_rows(path, rows):
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def cursor(i):
    """A cursor with the position fields of seed 002's (timestamp, dscId, mutId)."""
    return json.dumps({"extractorId": 0, "timestamp": 1620787841959 + i,
                       "dscId": 1620787053904, "mutId": i})


# --- generated realtime files -----------------------------------------------------------------

VALUES = {
    "id": st.one_of(st.integers(-5, 5), st.integers(-2**63, 2**63 - 1)).map(str),
    "name": st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r\n"),
                    max_size=8),
    "price": st.one_of(st.floats(allow_nan=False, width=64).map(repr),
                       st.decimals(places=3, allow_nan=False, allow_infinity=False).map(str),
                       st.sampled_from(["1e5", "-0", "0.10", "3.", ".5", "+2.5", "-Infinity"])),
    "qty": st.one_of(st.integers(-2**31, 2**31 - 1).map(str), st.sampled_from(["+7", "-0", "007"])),
    "at": st.sampled_from(["2024-05-02 10:00:00", "2024-05-02T10:00:00.1234567",
                           "2024-05-02 10:00:00+02:00"]),
    "flag": st.sampled_from(["true", "0", "Y", "no"]),
}


def value(name):
    return st.one_of(VALUES[name], st.just("NULL"))


@st.composite
def realtime_row(draw):
    op = draw(st.sampled_from("IUD"))
    fields = []
    for name in ORDER:
        exists = draw(st.sampled_from("0123"))
        fields += [draw(value(name)), draw(value(name)), exists]
    return fields + [op]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(realtime_row(), min_size=1, max_size=30),
       keys=st.sampled_from([("id",), ("id", "qty"), ()]))
def test_generated_realtime_chunks_equal_the_python_parser(tmp_path, monkeypatch, rows, keys):
    path = tmp_path / "items.csv"
    write_rows(path, [r + [cursor(i), "{}"] for i, r in enumerate(rows)])
    tbl = table(tmp_path, keys=keys)
    try:
        python, _ = run(tbl, path, False, monkeypatch)
    except SourceError:
        python = None
    monkeypatch.setattr(arcion, "COLUMNWISE", True)
    _, _, tasks = arcion.ArcionFormat().plan_tasks(tbl, [str(path)])
    out = as_lists(arcion.parse_task(tasks[0]))
    if python is None:  # a bad value: the Python parser's error, whichever path ran
        assert any(out["_error"])
        return
    columnwise, arrow = run(tbl, path, True, monkeypatch)
    assert arrow and same(python, columnwise)


def triplets(op, i, **columns):
    """A realtime row: columns given as (new, old, exists); the others absent."""
    fields = []
    for name in ORDER:
        fields += list(columns.get(name, ("NULL", "NULL", "0")))
    return fields + [op, cursor(i), "{}"]


def test_plain_realtime_rows_take_the_columnwise_path(tmp_path, monkeypatch):
    path = tmp_path / "items.csv"
    write_rows(path, [
        triplets("I", 0, name=("n1", "NULL", "1"), id=("1", "NULL", "1"),
                 price=("1.5", "NULL", "1"), qty=("3", "NULL", "1"),
                 at=("2024-05-02 10:00:00", "NULL", "1"), flag=("true", "NULL", "1")),
        triplets("U", 1, name=("n2", "NULL", "1"), id=("NULL", "1", "2")),
        triplets("U", 2, id=("2", "1", "3")),  # key change 1 → 2
        triplets("D", 3, id=("NULL", "2", "2")),
    ])
    python, columnwise, arrow = both(table(tmp_path), path, monkeypatch)
    assert arrow and same(python, columnwise)
    assert [(r["_op"], r["id"], r["_present"]) for r in columnwise] == [
        (0, 1, None), (1, 1, ["id", "name"]), (2, 1, None), (0, 2, ["id"]), (2, 2, None)]
    assert columnwise[2]["_pair"] == columnwise[3]["_pair"] == f"{path}:3"
    assert [r["_source_line"] for r in columnwise] == [1, 2, 3, 3, 4]


def test_snapshot_rows_with_a_header_take_the_columnwise_path(tmp_path, monkeypatch):
    path = tmp_path / "snap.csv"
    write_rows(path, [["id", "name", "price", "extra"], ["1", "a,b", "2.5", "x"],
                      ["2", 'say "hi"', "NULL", "y"]])
    python, columnwise, arrow = both(table(tmp_path, options={"header": True}), path,
                                     monkeypatch)
    assert arrow and same(python, columnwise)
    assert [(r["id"], r["name"], r["price"], r["extra"], r["_source_line"]) for r in columnwise] \
        == [(1, "a,b", 2.5, "x", 2), (2, 'say "hi"', None, "y", 3)]
    assert columnwise[0]["_present"] == ["extra", "id", "name", "price"]


@pytest.mark.parametrize("text, reason", [
    ('"n1"x,1,NULL,1,I,"{}","{}"\n', "text after a closing quote: Python's csv rejects it"),
    ('"n1,"x,1,NULL,1,I,"{}","{}"\n', "a closing quote after a delimiter in the value"),
    ('n1,NULL,1,1,NULL,1,I,"{}","{}"\n\nn2,NULL,1,2,NULL,1,I,"{}","{}"\n', "a blank line"),
    ('"n\n1",NULL,1,1,NULL,1,I,"{}","{}"\n', "a line break inside a value"),
    ('n1,NULL,1,1,NULL,1,I,"{}","{}"\rn2,NULL,1,2,NULL,1,I,"{}","{}"\r', "CR line ends"),
    ('n1,NULL, 1,1,NULL,1,I,"{}","{}"\n', "an Exists value with a space"),
    ('n1,NULL,1,1,NULL,1,i,"{}","{}"\n', "a lower-case opType"),
    ('n1,NULL,1,1,NULL,1,I,"{bad","{}"\n', "a malformed cursor"),
    ('n1,NULL,1,99999999999,NULL,1,I,"{}","{}"\n', "an Int32 out of range"),
    ('n1,NULL,1, 1,NULL,1,I,"{}","{}"\n', "an Int32 with a blank: not an integer"),
    ('n1,NULL,1,1_000,NULL,1,I,"{}","{}"\n', "an Int32 with a separator: not an integer"),
    ('n1,NULL,1,\u0661,NULL,1,I,"{}","{}"\n', "an Int32 in Arabic-Indic digits"),
    ('n1,NULL,1,1,NULL,1,I,"{}","{}"\nn2,NULL,1\n', "a short row"),
])
def test_chunks_it_cannot_prove_go_to_the_python_parser(tmp_path, monkeypatch, text, reason):
    path = tmp_path / "items.csv"
    path.write_text(text, encoding="utf-8")
    tbl = table(tmp_path, columns=[("name", "String"), ("id", "Int32")],
                options={"header": False, "column_order": ["name", "id"]})
    try:
        python = ("rows", run(tbl, path, False, monkeypatch)[0])
    except SourceError as exc:
        python = ("error", (exc.message, exc.line))
    monkeypatch.setattr(arcion, "COLUMNWISE", True)
    _, _, tasks = arcion.ArcionFormat().plan_tasks(tbl, [str(path)])
    out = arcion.parse_task(tasks[0])
    assert isinstance(out["_op"], list), reason  # the Python parser ran
    if python[0] == "error":
        assert (out["_error"][-1].split("\n")[0], out["_source_line"][-1]) == python[1]


def test_values_arrow_cannot_prove_convert_in_python(tmp_path, monkeypatch):
    path = tmp_path / "items.csv"
    write_rows(path, [["n", "NULL", "1", "+7", "NULL", "1", ".5", "NULL", "1", "+8", "NULL", "1",
                       "2024-05-02T10:00:00.1234567", "NULL", "1", "Y", "NULL", "1", "I",
                       cursor(0), "{}"]])
    python, columnwise, arrow = both(table(tmp_path), path, monkeypatch)
    assert arrow and same(python, columnwise)
    row = columnwise[0]
    assert (row["id"], row["price"], row["qty"], row["flag"]) == (7, 0.5, 8, True)


def test_key_values_that_are_nan_or_null_compare_as_python_does(tmp_path, monkeypatch):
    path = tmp_path / "items.csv"
    keyed = [("id", "Int64"), ("price", "Double")]
    rows = [["NULL", "NULL", "3", "nan", "nan", "3", "U", cursor(0), "{}"],
            ["1", "1", "3", "NULL", "NULL", "3", "U", cursor(1), "{}"],
            ["1", "1", "3", "NULL", "2", "3", "U", cursor(2), "{}"]]
    write_rows(path, rows)
    tbl = table(tmp_path, keys=("id", "price"), columns=keyed,
                options={"header": False, "column_order": ["id", "price"]})
    python, columnwise, arrow = both(tbl, path, monkeypatch)
    assert arrow and same(python, columnwise)
    assert [r["_op"] for r in columnwise] == [2, 0, 1, 2, 0]  # NaN != NaN; NULL == NULL


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='ab,"\n\r ', max_size=40), st.booleans())
def test_what_the_proof_accepts_arrow_splits_as_python_does(text, header):
    from mirrorspec.sources import arcion_columns

    fields = arcion_columns._read(text.encode(), ",", header, 60)
    if fields is None:
        return
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True)
            if r and not (len(r) == 1 and not r[0].strip())]
    assert [list(r) for r in zip(*(f.to_pylist() for f in fields))] == rows[1 if header else 0:]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                 st.from_regex(r"-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,2})?",
                               fullmatch=True)))
def test_arrow_reads_every_proved_decimal_as_python_does(text):
    import re

    import pyarrow.compute as pc

    from mirrorspec.sources import arrow_columns

    if not re.fullmatch(arrow_columns.DECIMAL, text):
        return
    parsed = pc.cast(pa.array([text]), pa.float64())[0].as_py()
    assert parsed == float(text) and math.copysign(1, parsed) == math.copysign(1, float(text))
    single = pc.cast(pa.array([parsed], pa.float64()), pa.float32(), safe=False)[0].as_py()
    assert single == pa.array([float(text)], pa.float32())[0].as_py()
