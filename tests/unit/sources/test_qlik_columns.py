"""The column-wise Qlik path (pyarrow.json and Arrow kernels) against the row parser, which
defines it.

Every chunk the column-wise path takes must give exactly the row parser's rows (the same rows,
`_order` included; the order within a chunk may differ); every chunk it can't prove (odd JSON,
values Arrow would read differently, errors) must be left to the row parser, so errors keep
their file:line.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mirrorspec.artifacts.plan import ColumnSpec, SourceSpec, TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.sources import qlik
from mirrorspec.sources import qlik_messages
from mirrorspec.sources.arrow_columns import as_lists

pa = pytest.importorskip("pyarrow")

COLUMNS = [("ID", "Int64"), ("S", "String"), ("I", "Int32"), ("D", "Double"), ("F", "Single"),
           ("B", "Boolean"), ("T", "DateTime"), ("DY", "IDate"), ("BY", "ByteArray"),
           ("N", "Int16")]
SINGLES = {"F"}
QLIK_TYPES = {"Int64": "INT8", "String": "STRING", "Int32": "INT4", "Double": "REAL8",
              "Single": "REAL4", "Boolean": "BOOLEAN", "DateTime": "DATETIME", "IDate": "DATE",
              "ByteArray": "BYTES", "Int16": "INT2"}


def table(path, keys=("ID",), columns=COLUMNS, options=None) -> TablePlan:
    return TablePlan(unique_id="dbo.t", name="t", schema=None, warehouse_schema="dbo",
                     landing_path="/unused", delta_path="/unused", metadata={},
                     key_columns=list(keys), columns=[ColumnSpec(n, t) for n, t in columns],
                     source=SourceSpec("qlik_replicate", str(path), dict(options or {})))


def run(tbl, files, columnwise: bool, monkeypatch, state=None):
    """(rows sorted by _order, whether every task came back as Arrow arrays)."""
    monkeypatch.setattr(qlik, "COLUMNWISE", columnwise)
    batch = qlik.QlikReplicateFormat().plan_tasks(tbl, [str(f) for f in files], state or {})
    rows, arrow = [], True
    for task in batch.tasks:
        out = qlik.parse_task(task)
        arrow = arrow and not isinstance(out["_op"], list)
        lists = as_lists(out)
        assert len({len(v) for v in lists.values()}) == 1, "columns of unequal length"
        rows += [{k: v[i] for k, v in lists.items()} for i in range(len(lists["_op"]))]
    return sorted(rows, key=lambda r: (r["_order"], r["_op"])), arrow


def both(tbl, files, monkeypatch, state=None):
    python, _ = run(tbl, files, False, monkeypatch, state)
    columnwise, arrow = run(tbl, files, True, monkeypatch, state)
    return python, columnwise, arrow


def normal(rows):
    """Rows as Spark gets them (a Single is the row parser's double until `map_tasks` makes it
    a float), NaN equal to NaN, floats compared bit for bit (-0.0 is not 0.0)."""
    def norm(name, value):
        if name in SINGLES and isinstance(value, float):
            value = pa.array([value], pa.float32())[0].as_py()
        if isinstance(value, float):
            return "NaN" if math.isnan(value) else (value, math.copysign(1, value))
        return value
    return [{k: norm(k, v) for k, v in r.items()} for r in rows]


def same(a, b) -> bool:
    return normal(a) == normal(b)


def md(columns=COLUMNS, keys=("ID",), version=1, extra=()):
    spec = {name: {"ordinal": i + 1, "type": QLIK_TYPES[t],
                   "primaryKeyPosition": keys.index(name) + 1 if name in keys else 0}
            for i, (name, t) in enumerate(list(columns) + list(extra))}
    return {"magic": "atMSG", "type": "MD", "headers": None, "messageSchemaId": None,
            "messageSchema": None,
            "message": {"lineage": {"schema": "dbo", "table": "T", "tableVersion": version},
                        "tableStructure": {"tableColumns": spec}}}


def msg(op, data, before=None, seq="", txn="", last=None, mask=None, envelope=True, **headers):
    head = {"operation": op, "changeSequence": seq, "transactionId": txn,
            "transactionLastEvent": last, "columnMask": mask, **headers}
    message = {"data": data, "beforeData": before, "headers": head}
    if not envelope:
        return message
    return {"magic": "atMSG", "type": "DT", "headers": None, "messageSchemaId": None,
            "messageSchema": None, "message": message}


def write(path, docs, newline="\n", bom=False, last_newline=True):
    lines = [d if isinstance(d, str) else json.dumps(d) for d in docs]
    text = newline.join(lines) + (newline if last_newline else "")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass"))
    return path


ROW = {"ID": 1, "S": "a", "I": 7, "D": 1.5, "F": 0.1, "B": True, "T": "2024-05-02 10:00:00.123456",
       "DY": "2024-05-02", "BY": "0aff", "N": -3}


# --- generated chunks --------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
# per column type: the usual JSON values of each kind a feed may use for it
USUAL = {
    "Int64": {"number": st.integers(-2**63, 2**63 - 1),
              "string": st.integers(-10**18 + 1, 10**18 - 1).map(str)},
    "Int32": {"number": st.integers(-2**31, 2**31 - 1),
              "string": st.integers(-2**31, 2**31 - 1).map(str)},
    "Int16": {"number": st.integers(-2**15, 2**15 - 1)},
    "Double": {"number": st.one_of(st.floats(allow_nan=False, allow_infinity=False)
                                   .filter(lambda f: f != 0 or math.copysign(1, f) > 0),
                                   st.integers(-2**70, 2**70)),
               "string": st.one_of(st.decimals(places=3, allow_nan=False,
                                               allow_infinity=False).map(str),
                                   st.floats(allow_nan=False, allow_infinity=False).map(repr))},
    "Single": {"number": st.floats(-1e30, 1e30, allow_nan=False)
               .filter(lambda f: f != 0 or math.copysign(1, f) > 0)},
    "String": {"string": TEXT, "number": st.integers(-10**6, 10**6)},
    "Boolean": {"boolean": st.booleans(), "string": st.sampled_from(["true", "false", "1", "n"]),
                "number": st.sampled_from([0, 1])},
    "DateTime": {"string": st.datetimes().map(lambda d: d.isoformat(sep=" "))},
    "IDate": {"string": st.dates().map(str)},
    "ByteArray": {"string": st.binary(max_size=4).map(bytes.hex)},
}
# values the proof must see through: other kinds, forms Arrow reads differently, errors
ODD = st.sampled_from([
    None, "1", " 5", "+7", "1.0", "1e3", "x1", 1.0, 1.5, -0.0, 0, 2**64, 10**20, True, "nan",
    "inf", "2024-02-30", "2024-05-02T10:00:00.1234567", "2024-05-02 10:00:00+02:00",
    "2024-05-02", "0x0A", "zz", "ß", "é\u2028", {"a": 1}, [1], float("nan"),
])


@st.composite
def chunks(draw, plain=False):
    """(YAML keys, the file's documents, its layout, ASCII-only JSON): data messages with random
    operations, NULLs, kinds, key changes, masks, transactions, metadata messages and blank
    lines. `plain`: what a feed usually holds (envelopes, masks, one kind per column, no key
    change, no error)."""
    keys = draw(st.sampled_from([("ID",), ("ID", "S"), ()]))
    kinds = {name: draw(st.sampled_from(sorted(USUAL[t]))) for name, t in COLUMNS}
    # how often something odd happens (one in `chaos`; 0: never): odd values, other operations
    chaos = 0 if plain else draw(st.sampled_from([0, 0, 0, 40, 8]))
    envelope_rate = 1.0 if plain else draw(st.sampled_from([1.0, 1.0, 0.0, 0.7]))

    def rare(*choices):
        return bool(chaos) and draw(st.integers(0, chaos)) == 0 and draw(st.sampled_from(choices))

    def value(name, t):
        if plain and name in keys:
            return draw(USUAL[t][kinds[name]])
        odd = rare(True)
        if odd:
            return draw(ODD)
        if draw(st.integers(0, 6)) == 0:
            return None
        return draw(USUAL[t][kinds[name]])

    def row():
        return {name: value(name, t) for name, t in COLUMNS}

    docs: list = [md(keys=keys)] if draw(st.booleans()) or plain else []
    hard = not plain and draw(st.booleans())  # key changes, absent keys, no masks
    for i in range(draw(st.integers(1, 25))):
        op = rare("insert", "MERGE", None) or draw(
            st.sampled_from(["INSERT", "UPDATE", "UPDATE", "DELETE", "REFRESH"]))
        data = row()
        if hard and draw(st.integers(0, 3)) == 0:  # some columns absent
            data = {k: v for k, v in data.items() if draw(st.booleans())}
        before = None
        if str(op).upper() in ("UPDATE", "DELETE") and draw(st.booleans()):
            before = dict(data) if not hard or draw(st.booleans()) else row()
            if hard and draw(st.integers(0, 4)) == 0:
                before = {k: v for k, v in before.items() if draw(st.booleans())}
        if plain and op == "DELETE":
            data = {k: (v if k in keys else None) for k, v in data.items()}
        mask = rare("XZ", "1FFF", " ", "") or draw(
            st.sampled_from(["3FF", "3FF", "0B", "2A1", "13"] + ([None] if hard else [])))
        seq = rare(i, 0) or draw(st.sampled_from([f"{i:05d}", f"{i:05d}", ""]))
        last = rare("true", "1", 1, "x") or draw(st.sampled_from([True, False, None]))
        txn = draw(st.sampled_from(["T1", "T2", "", None]))
        envelope = envelope_rate == 1.0 or draw(st.floats(0, 1)) < envelope_rate
        docs.append(msg(op, data, before, seq=seq, txn=txn, last=last, mask=mask,
                        envelope=envelope))
        if not plain and draw(st.integers(0, 12)) == 0:
            docs.append(md(keys=keys, version=2,
                           extra=[("X", "String")] if draw(st.booleans()) else ()))
        if not plain and draw(st.integers(0, 10)) == 0:
            docs.append(draw(st.sampled_from(["", "  ", "\t"])))
    layout = {"newline": draw(st.sampled_from(["\n", "\r\n"])), "bom": draw(st.booleans()),
              "last_newline": draw(st.booleans())}
    return keys, docs, layout, draw(st.booleans())


def dumps(doc, ascii_only: bool) -> str:
    return doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=ascii_only)


def outcome(tbl, path, columnwise, monkeypatch):
    try:
        return normal(run(tbl, [path], columnwise, monkeypatch)[0])
    except SourceError as exc:  # the plan (metadata against the YAML): the same either way
        return ("plan error", exc.message)
    except TypeError as exc:  # the row parser's crash on a blank columnMask: kept as it is
        return ("crash", str(exc))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(chunk=chunks())
def test_generated_chunks_equal_the_row_parser(tmp_path, monkeypatch, chunk):
    keys, docs, layout, ascii_only = chunk
    path = write(tmp_path / "f.json", [dumps(d, ascii_only) for d in docs], **layout)
    tbl = table(tmp_path, keys=keys)
    assert outcome(tbl, path, False, monkeypatch) == outcome(tbl, path, True, monkeypatch)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(chunk=chunks(plain=True))
def test_plain_generated_chunks_take_the_columnwise_path(tmp_path, monkeypatch, chunk):
    keys, docs, layout, ascii_only = chunk
    path = write(tmp_path / "f.json", [dumps(d, ascii_only) for d in docs], **layout)
    tbl = table(tmp_path, keys=keys)
    python, columnwise, arrow = both(tbl, [path], monkeypatch)
    assert not any(r["_error"] for r in python)
    assert arrow and same(python, columnwise)


# --- chunks the path takes ---------------------------------------------------------------------

def test_plain_messages_take_the_columnwise_path(tmp_path, monkeypatch):
    before = dict(ROW, S="old")
    path = write(tmp_path / "f.json", [
        md(), msg("REFRESH", ROW, mask="3FF"),
        msg("UPDATE", dict(ROW, S="new", D=2.25), before=before, seq="00002", txn="T1",
            last=False, mask="3FF"),
        msg("UPDATE", {"ID": 1, "S": "x"}, before=before, seq="00003", txn="T1", last=True,
            mask="03"),
        msg("DELETE", dict.fromkeys(ROW), before=before, seq="00004", txn="T2", last=True)])
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert arrow and same(python, columnwise)
    assert [(r["_op"], r["S"], r["_present"], r["_source_line"]) for r in columnwise] == [
        (0, "a", None, 2), (1, "new", None, 3), (1, "x", ["ID", "S"], 4), (2, "old", None, 5)]
    assert [r["_txn"] for r in columnwise] == [None, "T1", "T1", "T2"]
    assert [r["_txn_last"] for r in columnwise] == [None, False, True, True]
    assert columnwise[0]["_order"] == ("", str(path), 2, 0)
    out = qlik.parse_task(qlik.QlikReplicateFormat().plan_tasks(table(tmp_path), [str(path)],
                                                                {}).tasks[0])
    assert isinstance(out["T"], pa.TimestampArray) and isinstance(out["_order"], pa.StructArray)


def test_messages_it_cannot_settle_go_to_the_row_parser_line_by_line(tmp_path, monkeypatch):
    # a key change, a message without a mask whose data has nulls (absent or NULL?), a DELETE
    # whose beforeData is all nulls, an UPDATE whose beforeData lacks the key: the row parser
    # reads those lines alone; the rest stays column-wise
    path = write(tmp_path / "f.json", [
        md(), msg("INSERT", ROW, seq="00001", mask="3FF"),
        msg("UPDATE", dict(ROW, ID=2), before=ROW, seq="00002", mask="3FF"),
        msg("INSERT", {"ID": 3, "S": None}, seq="00003"),
        msg("DELETE", {"ID": 4}, before={"ID": None}, seq="00004"),
        msg("UPDATE", {"ID": 5, "S": "s"}, before={"S": "t"}, seq="00005", mask="03"),
        msg("INSERT", dict(ROW, ID=6), seq="00006", mask="3FF")])
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert arrow and same(python, columnwise)
    assert [(r["_op"], r["ID"]) for r in columnwise] == [
        (0, 1), (2, 1), (0, 2), (0, 3), (2, None), (1, 5), (0, 6)]
    assert columnwise[1]["_pair"] == columnwise[2]["_pair"] == f"{path}:3"


@pytest.mark.parametrize("unsettled, arrow", [(2, True), (9, False)])
def test_chunks_mostly_for_the_row_parser_go_to_it_at_once(tmp_path, monkeypatch, unsettled,
                                                             arrow):
    # a full load without columnMask whose data has nulls: absent or NULL, Arrow can't say.
    # When most of the chunk's first messages are like that, the row parser reads the chunk
    # without Arrow reading it first
    docs = [md()] + [msg("REFRESH", dict(ROW, ID=i, S=None if i < unsettled else "s"))
                     for i in range(12)]
    path = write(tmp_path / "f.json", docs)
    python, columnwise, took = both(table(tmp_path), [path], monkeypatch)
    assert took is arrow and same(python, columnwise)
    assert [r["_present"] for r in columnwise] == [None] * 12  # every key is in data


def test_metadata_messages_mid_chunk_change_what_masks_mean(tmp_path, monkeypatch):
    extra = [("X", "String")]
    path = write(tmp_path / "f.json", [
        md(), msg("INSERT", ROW, seq="1", mask="3FF"),
        msg("UPDATE", dict(ROW, X="x"), seq="2", mask="401"),  # ordinal 11: version 2's
        md(version=2, extra=extra),
        msg("UPDATE", dict(ROW, X="y"), seq="3", mask="7FF"),
        msg("UPDATE", dict(ROW, X="z"), seq="4", mask="3FF")])
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert arrow and same(python, columnwise)
    assert [r["_present"] for r in columnwise] == [
        [c for c, _ in sorted(COLUMNS)], ["ID", "X"], None, [c for c, _ in sorted(COLUMNS)]]


def test_blank_lines_crlf_a_byte_order_mark_and_no_last_newline(tmp_path, monkeypatch):
    docs = [md(), "", msg("INSERT", ROW, seq="1", mask="3FF"), " \t",
            msg("INSERT", dict(ROW, ID=2), seq="2", mask="3FF")]
    path = write(tmp_path / "f.json", docs, newline="\r\n", bom=True, last_newline=False)
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert arrow and same(python, columnwise)
    assert [r["_source_line"] for r in columnwise] == [3, 5]


def test_bare_messages_and_the_table_filter(tmp_path, monkeypatch):
    other = dict(msg("INSERT", dict(ROW, ID=9), seq="3", mask="3FF"))
    other["message"] = dict(other["message"], table="OTHER")
    path = write(tmp_path / "f.json", [
        md(), msg("INSERT", ROW, seq="1", mask="3FF", envelope=False),
        msg("INSERT", dict(ROW, ID=2), seq="2", mask="3FF"), other,
        dict(msg("INSERT", dict(ROW, ID=4), seq="4", mask="3FF", envelope=False), table="T")])
    python, columnwise, arrow = both(table(tmp_path, options={"table": "T"}), [path], monkeypatch)
    assert arrow and same(python, columnwise)
    assert [r["ID"] for r in columnwise] == [1, 2, 4]


def test_values_in_every_form_convert_as_the_row_parser_converts_them(tmp_path, monkeypatch):
    rows = [dict(ROW, ID=i, **values) for i, values in enumerate([
        {"I": "12", "D": "1e5", "F": "0.1", "S": 5, "B": "yes", "T": "2024-05-02T10:00:00"},
        {"I": "+12", "D": "+2.5", "F": "nan", "S": True, "B": 1, "T": "2024-05-02 10:00:00.1234567"},
        {"I": 2**31 - 1, "D": 2**64, "F": 3, "S": "ß", "B": False, "T": "2024-05-02 10:00:00Z"},
        {"I": "007", "D": 1e-300, "F": -1.5, "S": "", "B": "F", "DY": "2024-05-02 10:00:00"},
    ], start=1)]
    docs = [md()] + [msg("INSERT", r, seq=str(i), mask="3FF") for i, r in enumerate(rows)]
    path = write(tmp_path / "f.json", docs)
    python, columnwise, _ = both(table(tmp_path), [path], monkeypatch)
    assert same(python, columnwise) and not any(r["_error"] for r in python)
    # one kind per column, in forms only Python converts: the column-wise path takes it
    forms = {"I": ["12", "+12", "007", "2147483647"], "D": ["1e5", "+2.5", "1e-300", "3."],
             "F": ["0.1", "nan", "3", "-1.5"], "S": [5, -6, 0, 8], "B": ["yes", "1", "F", "n"],
             "T": ["2024-05-02T10:00:00", "2024-05-02 10:00:00.1234567",
                   "2024-05-02 10:00:00Z", "2024-05-02 10:00:00.5+02:00"],
             "DY": ["2024-05-02 10:00:00", "2024-05-02", "20240502", "2024-05-02T01:02:03"]}
    docs = [md()] + [msg("INSERT", dict(ROW, ID=i, **{k: v[i] for k, v in forms.items()}),
                         seq=str(i), mask="3FF") for i in range(4)]
    path = write(tmp_path / "f.json", docs)
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert arrow and same(python, columnwise) and not any(r["_error"] for r in python)
    assert [r["S"] for r in columnwise] == ["5", "-6", "0", "8"]


@pytest.mark.parametrize("column,text", [("I", " 7 "), ("I", "1_000"), ("I", "\u0661\u0662"),
                                         ("I", "1e3"), ("D", "1_0"), ("D", " 2.5")])
def test_values_no_reader_takes_stop_both_paths_alike(tmp_path, monkeypatch, column, text):
    """Text Python's int()/float() would take but an integer or number column doesn't (see
    sources.base): the column-wise path reports the row parser's error, at the same line."""
    path = write(tmp_path / "f.json", [md(), msg("INSERT", ROW, seq="1", mask="3FF"),
                                       msg("INSERT", dict(ROW, ID=2, **{column: text}), seq="2",
                                           mask="3FF")])
    python, columnwise, _ = both(table(tmp_path), [path], monkeypatch)
    errors = [(r["_error"].split("\n")[0], r["_source_line"]) for r in python if r["_error"]]
    assert errors and f"{text!r}" in errors[0][0] and errors[0][1] == 3
    assert [(r["_error"].split("\n")[0], r["_source_line"])
            for r in columnwise if r["_error"]] == errors


def test_numeric_change_sequences_and_header_kinds(tmp_path, monkeypatch):
    path = write(tmp_path / "f.json", [
        md(), msg("INSERT", ROW, seq=0, mask="3FF", last="1"),
        msg("INSERT", dict(ROW, ID=2), seq=10, mask="3FF", last="no"),
        msg("INSERT", dict(ROW, ID=3), seq=None, mask="3FF", last=" F")])
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert arrow and same(python, columnwise)
    assert [r["_order"][0] for r in columnwise] == ["", "", "10"]
    assert [r["_txn_last"] for r in columnwise] == [True, False, None]


def test_held_back_files_skip_what_was_published(tmp_path, monkeypatch):
    path = write(tmp_path / "f.json", [
        md(), *[msg("INSERT", dict(ROW, ID=i), seq=f"{i:05d}", mask="3FF", txn=f"T{i}",
                    last=i % 2 == 0) for i in range(1, 9)]])
    state = {"reader": {"cutoff": ["00004", str(path), 5, 0]}, "held_back": [str(path)]}
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch, state)
    assert arrow and same(python, columnwise)
    assert [r["ID"] for r in columnwise] == [4, 5, 6, 7, 8]


def test_refresh_is_an_upsert_once_the_table_was_published(tmp_path, monkeypatch):
    path = write(tmp_path / "f.json", [md(), msg("REFRESH", ROW, mask="3FF")])
    state = {"batches": [{"sequence": 1}]}
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch, state)
    assert arrow and same(python, columnwise) and columnwise[0]["_op"] == 4


# --- chunks it must refuse -------------------------------------------------------------------------

GOOD = json.dumps(msg("INSERT", ROW, seq="1", mask="3FF", streamPosition=None))
REFUSED = [
    (GOOD + "\n{\"magic\": \"atMSG\", oops\n", "malformed JSON"),
    (GOOD + " " + GOOD + "\n", "two objects on one line"),
    (GOOD.replace(", ", ",\n", 1) + "\n", "an object over two lines"),
    (GOOD + " " + GOOD + "\n" + GOOD.replace(", ", ",\n", 1) + "\n",
     "two objects on a line and one over two lines: as many objects as lines"),
    (GOOD + "\r" + GOOD + "\n", "a CR inside a line: one line for Python"),
    (json.dumps(msg("MERGE", ROW, seq="2")) + "\n", "an unknown operation"),
    (json.dumps(msg("INSERT", dict(ROW, I="x1"), seq="2")) + "\n", "a value that fails"),
    (json.dumps(msg("INSERT", dict(ROW, I=2**31), seq="2")) + "\n", "an Int32 out of range"),
    (json.dumps(msg("INSERT", ROW, seq="2", mask="XYZ")) + "\n", "a mask that isn't hex"),
    (GOOD.replace('"ID": 1', '"ID": 1, "ID": 2') + "\n", "a key given twice"),
    (json.dumps(msg("INSERT", dict(ROW, ID=2**64), seq="2")) + "\n", "an integer beyond 64 bits"),
    (json.dumps(msg("INSERT", dict(ROW, S=2**64), seq="2")) + "\n", "a String column's big int"),
    (GOOD.replace('"D": 1.5', '"D": Inf') + "\n", "Inf: a number to Arrow, an error to Python"),
    (GOOD.replace('"D": 1.5', '"D": -NaN') + "\n", "-NaN"),
    (GOOD.replace('"streamPosition": null', '"streamPosition": -Inf') + "\n",
     "-Inf in a field the schema leaves out"),
    (json.dumps(msg("INSERT", dict(ROW, D=-0), seq="2")).replace('"D": 0', '"D": -0') + "\n",
     "-0: an int to orjson"),
    ('[' + GOOD + ', ' + GOOD + ']\n', "an array of messages"),
    (GOOD + "\n\ufeff" + GOOD + "\n", "a byte-order mark on a later line"),
    (GOOD + "\n\x0b\n", "a vertical tab (blank to Python, not JSON)"),
    (json.dumps(msg("INSERT", dict(ROW, T="0000-01-01 00:00:00"), seq="2")) + "\n",
     "year 0: a date-time to Arrow's cast, an error to Python"),
    (json.dumps(msg("INSERT", dict(ROW, DY="0000-01-01"), seq="2")) + "\n", "year 0 dates too"),
    (json.dumps(msg("INSERT", dict(ROW, S={"a": 1}), seq="2")) + "\n", "an object value"),
    (json.dumps(msg("INSERT", dict(ROW, I="7"), seq="2")) + "\n", "two kinds in one column"),
    (json.dumps(msg("INSERT", 5, seq="2")) + "\n", "data not an object"),
    (json.dumps(dict(msg("INSERT", ROW), type="XX")) + "\n", "an unknown message type"),
    (json.dumps(dict(msg("INSERT", ROW), message="T2JqAQ==")) + "\n", "an Avro message"),
    ('{"x": 1}\n', "not a Qlik message"),
    (GOOD.replace('"a"', '"\\ud800"') + "\n", "a lone surrogate"),
    (GOOD.replace('"a"', '"\xff"') + "\n", "invalid UTF-8"),
    (GOOD.replace('"a"', '"a\x0cb"') + "\n", "a control character in a string"),
    (GOOD.replace('"streamPosition": null', '"streamPosition": ' + "[" * 600 + "]" * 600) + "\n",
     "nesting deep enough for Python's json to raise RecursionError"),
]


@pytest.mark.parametrize("tail, reason", REFUSED, ids=[r for _, r in REFUSED])
def test_chunks_it_cannot_prove_go_to_the_row_parser(tmp_path, monkeypatch, tail, reason):
    path = tmp_path / "f.json"
    head = json.dumps(md()) + "\n" + GOOD + "\n"
    path.write_bytes((head + tail).encode("utf-8", "surrogatepass").replace(b"\xc3\xbf", b"\xff"))
    tbl = table(tmp_path)
    python, _ = run(tbl, [path], False, monkeypatch)
    monkeypatch.setattr(qlik, "COLUMNWISE", True)
    batch = qlik.QlikReplicateFormat().plan_tasks(tbl, [str(path)], {})
    out = qlik.parse_task(batch.tasks[0])
    assert isinstance(out["_op"], list), reason  # the row parser ran
    columnwise, _ = run(tbl, [path], True, monkeypatch)
    assert same(python, columnwise)
    errors = [(r["_error"].split("\n")[0], r["_source_line"]) for r in columnwise if r["_error"]]
    assert errors == [(e.split("\n")[0], line) for e, line in
                      ((r["_error"], r["_source_line"]) for r in python if r["_error"])]


def test_a_blank_mask_is_read_as_no_mask_by_both_paths(tmp_path, monkeypatch):
    # a columnMask of spaces says nothing: the data's keys tell which columns the row holds
    path = write(tmp_path / "f.json", [md(), msg("INSERT", ROW, seq="1", mask=" "),
                                       msg("INSERT", dict(ROW, ID=2), seq="2", mask="")])
    python, columnwise, _ = both(table(tmp_path), [path], monkeypatch)
    assert same(python, columnwise)
    assert [(r["ID"], r["_present"], r["_error"]) for r in python] == [(1, None, None),
                                                                      (2, None, None)]


def test_non_finite_literals_python_reads_are_read_alike(tmp_path, monkeypatch):
    path = write(tmp_path / "f.json", [md()] + [
        json.dumps(msg("INSERT", dict(ROW, ID=i, S="Inf, NaN"), seq=str(i), mask="3FF"))
        .replace('"D": 1.5', f'"D": {literal}').replace('"F": 0.1', f'"F": {literal}')
        for i, literal in enumerate(["NaN", "Infinity", "-Infinity", "1.5"])])
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert arrow and same(python, columnwise)
    assert [str(r["D"]) for r in columnwise] == ["nan", "inf", "-inf", "1.5"]


def test_a_chunk_starting_mid_file_on_a_byte_order_mark_is_left_to_the_row_parser(
        tmp_path, monkeypatch):
    # only the file's first chunk drops a mark; on a later chunk's first line it is an error
    lines = [json.dumps(md()), GOOD]
    path = tmp_path / "f.json"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b"\xef\xbb\xbf\n" + GOOD.encode() + b"\n")
    monkeypatch.setattr(qlik_messages, "CHUNK_BYTES", len(lines[0]) + 1 + len(lines[1]))
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert not arrow and same(python, columnwise)
    assert [(r["_source_line"], r["_error"][:14]) for r in columnwise if r["_error"]] == \
        [(3, "malformed JSON")]


def test_documents_mode_is_left_to_the_row_parser(tmp_path, monkeypatch):
    path = tmp_path / "f.json"
    path.write_text(json.dumps([md(), msg("INSERT", ROW, seq="1", mask="3FF")], indent=2))
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert not arrow and same(python, columnwise) and len(columnwise) == 1


def test_an_error_on_a_line_left_to_the_row_parser_falls_back_whole(tmp_path, monkeypatch):
    # the key-changing UPDATE is read by the row parser alone, and fails: the whole chunk
    # goes to the row parser, which names the line
    path = write(tmp_path / "f.json", [
        md(), msg("INSERT", dict(ROW, I="7"), seq="1", mask="3FF"),
        msg("UPDATE", dict(ROW, ID=2, I="x"), before=dict(ROW, I="7"), seq="2", mask="3FF")])
    python, columnwise, arrow = both(table(tmp_path), [path], monkeypatch)
    assert not arrow and same(python, columnwise)
    assert [(r["_source_line"], r["_error"].split("\n")[0]) for r in columnwise if r["_error"]] \
        == [(3, "column 'I': 'x' is not an integer")]


# --- what the proof relies on ------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@example("0000-01-01 00:00:00")  # Arrow's cast takes year 0; Python refuses it
@example("2023-02-29 00:00:00")
@example("2024-02-29T23:59:59.5")
@example("2024-05-02 24:00:00")
@example("2024-05-02 23:59:60")
@example("2024-13-01 00:00:00")
@example("2024-00-10 00:00:00")
@example("2024-05-00 00:00:00")
@given(st.one_of(st.tuples(st.datetimes(), st.sampled_from(" T")).map(
                     lambda pair: pair[0].isoformat(sep=pair[1])),
                 st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}"
                               r"(\.[0-9]{1,6})?", fullmatch=True)))
def test_arrow_reads_every_proved_date_time_as_python_does(text):
    import re

    import pyarrow.compute as pc

    from mirrorspec.sources import qlik_columns
    from mirrorspec.sources.base import value_converter

    if not re.fullmatch(qlik_columns._DATETIME, text):
        return
    try:
        expected = value_converter("DateTime")(text)
    except ValueError:
        expected = None
    try:
        got = pc.cast(pa.array([text]), pa.timestamp("us"))[0].as_py()
    except pa.ArrowInvalid:
        got = None  # Arrow refuses: Python converts (or reports) it
    assert got is None or got == expected
    day = text[:10]
    try:
        expected_day = value_converter("IDate")(day)
    except ValueError:
        expected_day = None
    try:
        got_day = pc.cast(pa.array([day]), pa.date32())[0].as_py()
    except pa.ArrowInvalid:
        got_day = None
    assert got_day is None or got_day == expected_day


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                 st.integers(-2**80, 2**80).map(str),
                 st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?",
                               fullmatch=True)))
def test_arrow_reads_json_numbers_as_orjson_does(text):
    import pyarrow.json as pj

    line = ('{"d": %s}' % text).encode()
    try:
        expected = qlik_messages.loads_line(line)["d"]
    except ValueError:
        return
    schema = pa.schema([("d", pa.float64())])
    try:
        got = pj.read_json(pa.py_buffer(line), parse_options=pj.ParseOptions(
            explicit_schema=schema)).column("d")[0].as_py()
    except pa.ArrowInvalid:
        return  # refused: the row parser reads it
    assert got == float(expected)
    if got == 0:  # the sign of zero: `-0` is refused by the path
        assert math.copysign(1, got) == math.copysign(1, float(expected)) or text.startswith("-0")
