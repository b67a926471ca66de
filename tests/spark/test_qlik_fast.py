"""The Qlik reader's JVM path (`spark/publish/feeds/qlik_fast.py`) against the Python parser.

Generated feeds (updates with masks, deletes with and without beforeData, absent and NULL
columns, unicode, every DataType the fast path takes, envelopes and bare messages, an unfinished
transaction tail) are read twice by `QlikReplicateReader.read`: JVM path on, and off (every file
through `sources/qlik.py`). Rows, files, held-back files and reader state must be equal; files
with a line the fast path can't prove must go to the Python parser, and bad input must fail
with the Python parser's exact message, file and line.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.spark.publish.feeds import qlik_fast
from mirrorspec.spark.publish.feeds.qlik import QlikReplicateReader

COLUMNS = [("ID", "Int64"), ("V", "String"), ("N", "Int32"), ("S", "Int16"), ("D", "Double"),
           ("F", "Single"), ("B", "Boolean"), ("T", "DateTime"), ("DAY", "IDate")]
QLIK_TYPES = {"Int64": "INT8", "String": "WSTRING", "Int32": "INT4", "Int16": "INT2",
              "Double": "REAL8", "Single": "REAL4", "Boolean": "BOOLEAN", "DateTime": "DATETIME",
              "IDate": "DATE"}
MD = {"magic": "atMSG", "type": "MD", "message": {
    "lineage": {"schema": "dbo", "table": "T", "tableVersion": 1},
    "tableStructure": {"tableColumns": {
        name: {"ordinal": i + 1, "type": QLIK_TYPES[kind], "primaryKeyPosition": int(i == 0)}
        for i, (name, kind) in enumerate(COLUMNS)}}}}
TEXTS = ["a", "é", "中文", "🙂 emoji", "007", "12.5", "", "-3", "with \"quote\"", "x]{y",
         "back\\slash", "true", "{not json}"]


def _value(rng: random.Random, name: str):
    if rng.random() < 0.15:
        return None
    return {
        "V": lambda: rng.choice(TEXTS),
        "N": lambda: rng.choice([0, -1, 2**31 - 1, -2**31, rng.randint(-1000, 1000)]),
        "S": lambda: rng.choice([0, 32767, -32768, rng.randint(-100, 100)]),
        "D": lambda: rng.choice([0.1, 1e300, -0.0, 3, 2.5e-8, 123456.789]),
        "F": lambda: rng.choice([0.1, 3.4e38, 1, -2.5, 16777217]),
        "B": lambda: rng.choice([True, False]),
        "T": lambda: rng.choice(["2024-05-02 10:00:00", "2024-05-02T10:00:00.5",
                                 "1999-12-31 23:59:59.123456", "2024-02-29T00:00:00.000001"]),
        "DAY": lambda: rng.choice(["2024-05-02", "1970-01-01", "2000-02-29"]),
    }[name]()


def _row(rng: random.Random, key: int, absent: float = 0.1) -> dict:
    row = {"ID": key}
    for name, _ in COLUMNS[1:]:
        if rng.random() >= absent:
            row[name] = _value(rng, name)
    return row


def _mask(rng: random.Random) -> str | None:
    if rng.random() < 0.5:
        return None
    bits = rng.getrandbits(len(COLUMNS)) | (1 if rng.random() < 0.7 else 0)
    text = format(bits or 1, "X" if rng.random() < 0.5 else "x")
    return text.zfill(rng.choice([0, 4, 6]))


def _message(rng, op: str, key: int, seq: int, txn: str, last: bool, before=None,
             whole: bool = False):
    """A data message; `whole`: every column present (a new key's insert: no place could
    complete what it lacks), drawn from `rng` as any other message so the stream stays put."""
    data = _row(rng, key) if op != "DELETE" or rng.random() < 0.3 else None
    headers = {"operation": op if rng.random() < 0.8 else op.lower(),
               "changeSequence": f"{20240502000000000 + seq:035d}", "transactionId": txn,
               "transactionLastEvent": last, "timestamp": "2024-05-02T10:00:00.000"}
    mask = _mask(rng)
    if whole:
        filler = random.Random(key)
        data = {**{n: _value(filler, n) for n, _ in COLUMNS[1:]}, **(data or {"ID": key})}
        mask = None
    if mask is not None:
        headers["columnMask"] = mask
    body = {"data": data, "beforeData": before, "headers": headers}
    if rng.random() < 0.6:
        return {"magic": "atMSG", "type": "DT", "headers": None, "message": body}
    return body


def _clean_file(rng: random.Random, path: Path, first_seq: int, count: int, live: list[int],
                tail: bool = False) -> None:
    """`count` messages in transactions of 3; an unfinished transaction at the end with `tail`."""
    lines = []
    for i in range(count):
        seq = first_seq + i
        txn, counter = divmod(seq, 3)
        last = counter == 2 and not (tail and i >= count - 3)
        op = rng.choice(["INSERT", "INSERT", "UPDATE", "DELETE", "REFRESH"]) if live else "INSERT"
        if op in ("INSERT", "REFRESH"):
            key = max(live, default=0) + 1
            live.append(key)
            msg = _message(rng, op, key, seq, f"{txn:08X}", last, whole=True)
        elif op == "UPDATE":
            key = rng.choice(live)
            before = _row(rng, key, absent=0.0) if rng.random() < 0.7 else None
            msg = _message(rng, op, key, seq, f"{txn:08X}", last, before)
        else:
            key = rng.choice(live)
            live.remove(key)
            msg = _message(rng, op, key, seq, f"{txn:08X}", last,
                           _row(rng, key) if rng.random() < 0.7 else None)
            if msg.get("message", msg)["data"] is None and msg.get("message", msg)["beforeData"] is None:
                msg.get("message", msg)["data"] = {"ID": key}
        text = json.dumps(msg, ensure_ascii=rng.random() < 0.2)
        lines.append(text)
        if rng.random() < 0.05:
            lines.append("  ")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _table(feed: Path, with_columns: bool):
    columns = [SimpleNamespace(name=n, type=t) for n, t in COLUMNS] if with_columns else []
    return SimpleNamespace(source=SimpleNamespace(options={}, path=str(feed)), columns=columns,
                           key_columns=["ID"])


def _read(spark, table, files, state, fast: bool, monkeypatch):
    monkeypatch.setattr(qlik_fast, "ENABLED", fast)
    result = QlikReplicateReader().read(spark, table, files, state)
    try:
        frame = result.changes
        rows = sorted((tuple(r) for r in frame.collect()), key=lambda r: tuple(r[frame.columns.index("_order")]))
        return rows, result
    finally:
        for cached in result.info["cached"]:
            cached.unpersist()


def _both(spark, table, files, monkeypatch, state=None):
    state = state or {}
    fast_rows, fast = _read(spark, table, files, state, True, monkeypatch)
    slow_rows, slow = _read(spark, table, files, state, False, monkeypatch)
    assert slow.info["jvm_parsed"] == []
    assert fast.changes.schema == slow.changes.schema  # names, types and nullability
    assert fast_rows == slow_rows
    assert (fast.files, fast.held_back, fast.info["state"]) == \
        (slow.files, slow.held_back, slow.info["state"])
    return fast, fast_rows


@pytest.mark.parametrize("seed,metadata", [(1, True), (2, False)])
def test_jvm_path_lands_the_rows_of_the_python_parser(spark, tmp_path, monkeypatch, seed, metadata):
    rng = random.Random(seed)
    feed = tmp_path / "feed"
    feed.mkdir()
    live: list[int] = []
    _clean_file(rng, feed / "CDC00000001.json", 0, 120, live)
    if metadata:  # the metadata message first, as Replicate writes it
        path = feed / "CDC00000001.json"
        path.write_text(json.dumps(MD) + "\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    _clean_file(rng, feed / "CDC00000002.json", 120, 120, live)
    _clean_file(rng, feed / "CDC00000004.json", 360, 31, live, tail=True)
    # a file with one line the fast path must not take: a key change (delete + insert pair)
    _clean_file(rng, feed / "CDC00000003.json", 240, 120, live)
    key_change = {"data": {"ID": 10_000, "V": "moved"}, "beforeData": {"ID": live[0], "V": "x"},
                  "headers": {"operation": "UPDATE", "changeSequence": f"{20240502000000000 + 359:035d}",
                              "transactionId": "K", "transactionLastEvent": True}}
    with open(feed / "CDC00000003.json", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(key_change) + "\n")
    files = sorted(str(p) for p in feed.iterdir())
    table = _table(feed, with_columns=not metadata)
    result, rows = _both(spark, table, files, monkeypatch)
    assert result.info["jvm_parsed"] == [files[0], files[1], files[3]]
    assert result.held_back == (files[3],)  # the unfinished transaction waits
    present = result.changes.columns.index("_present")
    assert len(rows) > 300 and any(r[present] is not None for r in rows)  # some partial rows

    # the next run: the held-back file again, after the cutoff in the reader's state
    with open(feed / "CDC00000004.json", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(_message(rng, "INSERT", 99_999, 500, "END", True)) + "\n")
    state = {"reader": result.info["state"], "held_back": list(result.held_back),
             "batches": [{"sequence": 1}]}
    again, rows = _both(spark, table, [files[3]], monkeypatch, state)
    assert again.info["jvm_parsed"] == []  # a file cut by the cutoff takes the Python path
    assert rows and again.held_back == ()


BAD_LINES = {
    "two messages on a line": '{"data": {"ID": 1}, "headers": {"operation": "INSERT"}}'
                              '{"data": {"ID": 2}, "headers": {"operation": "INSERT"}}',
    "closing bracket inside": '{"data": {"ID": 1}, "headers": {"operation": "INSERT"}}]{"a": 1}',
    "out of Int16": '{"data": {"ID": 1, "S": 40000}, "headers": {"operation": "INSERT"}}',
    "bad date-time": '{"data": {"ID": 1, "T": "2024-02-30 10:00:00"}, "headers": {"operation": "INSERT"}}',
    "unknown operation": '{"data": {"ID": 1}, "headers": {"operation": "MERGE"}}',
    "mask not hex": '{"data": {"ID": 1}, "headers": {"operation": "INSERT", "columnMask": "1G"}}',
    "float key": '{"data": {"ID": 1.5}, "headers": {"operation": "INSERT"}}',
    "null magic": '{"magic": null, "data": {"ID": 1}, "headers": {"operation": "INSERT"}}',
}


def test_bad_lines_are_never_taken_by_the_jvm_path(spark, tmp_path):
    """Every line the Python parser rejects is a row the fast path does not vouch for."""
    from mirrorspec.spark.publish.feeds.qlik import _schema

    good = '{"data": {"ID": 1, "V": "a"}, "headers": {"operation": "INSERT"}}'
    files = []
    for index, bad in enumerate(BAD_LINES.values()):
        path = tmp_path / f"B{index}.json"
        path.write_text(f"{good}\n\n{bad}\n{good}\n", encoding="utf-8")
        files.append(str(path))
    batch = QlikReplicateReader().plan_tasks(_table(tmp_path, True), files, {})
    assert qlik_fast.fast_files(batch.tasks) == sorted(files)
    frame = qlik_fast.parse_lines(spark, files, batch.tasks[0]["ctx"], _schema(batch.columns))
    sure = {(r["_source_file"], r["_source_line"]): r["_sure"]
            for r in frame.select("_source_file", "_source_line", "_sure").collect()}
    assert sure == {(f, line): line != 3 for f in files for line in (1, 3, 4)}


def test_a_bad_line_fails_with_the_python_parsers_error(spark, tmp_path, monkeypatch):
    good = json.dumps({"data": {"ID": 1, "V": "a"}, "headers": {"operation": "INSERT"}})
    (tmp_path / "A.json").write_text(good + "\n", encoding="utf-8")
    (tmp_path / "B.json").write_text(f"{good}\n\n{BAD_LINES['two messages on a line']}\n",
                                     encoding="utf-8")
    files = sorted(str(p) for p in tmp_path.glob("*.json"))
    errors = []
    for fast in (True, False):
        monkeypatch.setattr(qlik_fast, "ENABLED", fast)
        with pytest.raises(SourceError) as caught:
            QlikReplicateReader().read(spark, _table(tmp_path, True), files, {})
        errors.append((caught.value.message, caught.value.hint, caught.value.file,
                       caught.value.line))
    assert errors[0] == errors[1]
    assert errors[0][2:] == (files[1], 3) and "malformed JSON" in errors[0][0]


def test_values_the_converters_treat_differently_take_the_python_path(spark, tmp_path, monkeypatch):
    """Valid JSON whose Spark reading could differ from the Python parser's: not the JVM path."""
    lines = [
        {"data": {"ID": 1, "V": 1.5}, "headers": {"operation": "INSERT"}},  # repr(1.5) in a string
        {"data": {"ID": 2, "V": {"a": [1, 2]}}, "headers": {"operation": "INSERT"}},
        {"data": {"ID": 3}, "headers": {"operation": "INSERT", "changeSequence": 1.0}},
        {"data": {"ID": 4, "V": "0012"}, "headers": {"operation": "INSERT",  # strings: JVM
                                                     "transactionId": "0012"}},
    ]
    feed = tmp_path / "feed"
    feed.mkdir()
    for index, line in enumerate(lines):
        (feed / f"F{index}.json").write_text(json.dumps(line) + "\n", encoding="utf-8")
    files = sorted(str(p) for p in feed.iterdir())
    result, rows = _both(spark, _table(feed, with_columns=True), files, monkeypatch)
    assert result.info["jvm_parsed"] == [files[3]]
    assert [r[1] for r in rows] == ["1.5", '{"a":[1,2]}', "0012", None]  # by changeSequence


def test_landing_files_are_the_same_bytes(spark, tmp_path, monkeypatch):
    """`publish_table` with the JVM path writes the very landing file the Python parser does."""
    from dataclasses import replace

    from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
    from mirrorspec.spark.publish.publisher import publish_table

    rng = random.Random(3)
    feed = tmp_path / "feed"
    feed.mkdir()
    live: list[int] = []
    _clean_file(rng, feed / "CDC00000001.json", 0, 150, live)
    _clean_file(rng, feed / "CDC00000002.json", 150, 150, live)
    table = TablePlan(unique_id="dbo.t", name="t", schema=None, warehouse_schema="dbo",
                      landing_path="", delta_path=str(tmp_path / "wh" / "t"),
                      metadata={"keyColumns": ["ID"]}, key_columns=["ID"],
                      columns=[ColumnSpec(n, t) for n, t in COLUMNS],
                      source=SourceSpec("qlik_replicate", str(feed), {}))
    from mirrorspec.spark.publish.feeds import qlik as qlik_reader

    taken: list[str] = []
    parse = qlik_reader._parse

    def spy(spark, tasks, schema, cached, jvm_parsed):
        frame = parse(spark, tasks, schema, cached, jvm_parsed)
        taken.extend(jvm_parsed)
        return frame

    monkeypatch.setattr(qlik_reader, "_parse", spy)
    landed = []
    for fast in (True, False):
        monkeypatch.setattr(qlik_fast, "ENABLED", fast)
        lz = tmp_path / f"lz_{fast}"
        plan = Plan(1, "p", "1", "p", "dev", str(lz), str(tmp_path / "wh"),
                    str(tmp_path / f"state_{fast}"), SparkSpec(), None, [table])
        result = publish_table(spark, replace(table, landing_path=str(lz / "t")), plan)
        assert result.status == "Published", result.error
        landed.append([Path(f).read_bytes() for f in result.files_written])
    assert len(taken) == 2  # both files went through the JVM path
    assert len(landed[0]) == 1 and landed[0] == landed[1]
